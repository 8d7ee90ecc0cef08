# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet.dispatch.launch refuses a stale runner, naming both versions (D11).

The runner program is a real wrapper script around the real runner (``--version``); every other
command launch would run (systemctl, systemd-run) is refused by the test, so a refusal is proven
to happen before any unit is touched.
"""
from __future__ import annotations

import os
import pathlib
import stat
import sys
from unittest import mock

import pytest

from ansible.module_utils import basic

# the module's own test harness is ansible-core 2.19's; the oldest-Python run (tests/run) has 2.15
patch_module_args = pytest.importorskip('ansible.module_utils.testing', reason='ansible-core < 2.19').patch_module_args

from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import update as _update
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.boot import BOOTSTRAP
from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import SubprocessRunner
from ansible_collections.fleet.dispatch.plugins.modules import launch as mod

COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_runner.__file__)).parents[6]
INSTALLED = _runner.installed_version(str(pathlib.Path(__file__).resolve().parents[5]))


class Done(Exception):
    pass


class Touched(Exception):
    """launch ran a command other than the version probe."""


@pytest.fixture
def wrapper(tmp_path):
    """A fleet-runner wrapper like the worker role's, in a bin directory given to launch as PATH."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    script = bindir / 'fleet-runner'
    script.write_text("#!/bin/sh\nworkdir=$PWD\ncd / || exit 70\nexec %s -I -B -c '%s' %s %s --workdir \"$workdir\" \"$@\"\n"
                      % (sys.executable, BOOTSTRAP, COLLECTIONS_ROOT, _update.MODULE))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    liar = bindir / 'not-a-runner'
    liar.write_text('#!/bin/sh\necho \'{"message": "Not Found"}\'\n')   # D5: a JSON body that is not an answer
    liar.chmod(liar.stat().st_mode | stat.S_IXUSR)
    return bindir


def _exit(self, **kw):
    raise Done('exit', kw)


def _fail(self, **kw):
    raise Done('fail', kw)


def _launch(args):
    ran = []

    def run_command(self, argv, **kw):
        ran.append(list(argv))
        if argv[-1] == '--version':
            return SubprocessRunner().run(list(argv), env=kw.get('environ_update'))
        raise Touched(argv)

    with patch_module_args(args), \
            mock.patch.object(basic.AnsibleModule, 'exit_json', _exit), \
            mock.patch.object(basic.AnsibleModule, 'fail_json', _fail), \
            mock.patch.object(basic.AnsibleModule, 'run_command', run_command), \
            mock.patch.object(basic.AnsibleModule, 'get_bin_path', lambda self, name, required=False, opt_dirs=None: name):
        try:
            mod.main()
        except Done as exc:
            return exc.args[0], exc.args[1], ran
        except Touched as exc:
            return 'touched', exc.args[0], ran
    raise AssertionError('main() neither exited nor failed')


def _args(bindir, tmp_path, version, program='fleet-runner'):
    return {'path': '%s:/usr/bin:/bin' % bindir, 'runner_version': version,
            'items': [{'number': 7, 'command': [program, '--item', '7'], 'workdir': str(tmp_path)},
                      {'number': 8, 'command': [program, '--item', '8'], 'workdir': str(tmp_path)}]}


@pytest.mark.parametrize('check', [False, True], ids=['apply', 'check'])
def test_a_stale_runner_is_refused_naming_both_versions(wrapper, tmp_path, check):
    args = _args(wrapper, tmp_path, '9.9.9')
    if check:
        args['_ansible_check_mode'] = True
    kind, result, ran = _launch(args)
    assert kind == 'fail'
    assert 'stale runner refused' in result['msg']
    assert 'reports version %s' % INSTALLED in result['msg'] and 'expects 9.9.9' in result['msg']
    assert ran == [['fleet-runner', '--version']]            # asked once per program, nothing else touched


def test_the_expected_version_goes_on_to_launch(wrapper, tmp_path):
    kind, argv, ran = _launch(_args(wrapper, tmp_path, INSTALLED))
    assert kind == 'touched' and argv[0] == 'systemctl'      # past the check: on to reading the units
    assert ran[0] == ['fleet-runner', '--version']


def test_a_runner_whose_version_cannot_be_read_is_refused(wrapper, tmp_path):
    kind, result, _ran = _launch(_args(wrapper, tmp_path, INSTALLED, program='not-a-runner'))
    assert kind == 'fail' and 'cannot read the runner version' in result['msg']


def test_without_runner_version_nothing_is_asked(wrapper, tmp_path):
    args = _args(wrapper, tmp_path, None)
    kind, argv, ran = _launch(args)
    assert kind == 'touched' and argv[0] == 'systemctl' and ['fleet-runner', '--version'] not in ran
