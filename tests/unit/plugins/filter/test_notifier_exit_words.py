# -*- coding: utf-8 -*-
"""The notifier names the runner's exit (D3, D20): the worker role's fleet-notify template, rendered by Ansible
with the one exit-code table, run by sh as the OnFailure= unit runs it."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import exits

REPO = pathlib.Path(__file__).resolve().parents[4]
BIN = pathlib.Path(sys.executable).parent


@pytest.fixture(scope='module')
def notifier(tmp_path_factory):
    where = tmp_path_factory.mktemp('notify')
    script = where / 'fleet-notify'
    args = {'src': str(REPO / 'roles' / 'worker' / 'templates' / 'fleet-notify.sh.j2'), 'dest': str(script), 'mode': '0755'}
    extra = {'worker_state_subdir': '.local/state/fleet-dispatch', 'worker_config_subdir': '.config/fleet-dispatch',
             'worker_notifier_hook_timeout': 5}
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    res = subprocess.run([str(BIN / 'ansible'), 'localhost', '-c', 'local', '-m', 'ansible.builtin.template',
                          '-a', json.dumps(args), '-e', json.dumps(extra)],
                         env=env, capture_output=True, text=True, check=False, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return script


@pytest.mark.parametrize('status, word', [(str(exits.EXIT_CLOSEOUT_LOST), 'closeout_lost'),
                                          (str(exits.EXIT_START_LOST), 'start_lost'),
                                          (str(exits.EXIT_UPDATE_FAILED), 'update_failed'),
                                          (str(exits.EXIT_FAILURE), 'failure'),
                                          ('4', '-'), ('1', '-'), ('TERM', '-')])
def test_the_notifier_line_names_the_runner_exit(notifier, tmp_path, status, word):
    env = {'PATH': '/usr/bin:/bin', 'HOME': str(tmp_path), 'MONITOR_UNIT': 'task-7.service', 'MONITOR_SERVICE_RESULT': 'exit-code',
           'MONITOR_EXIT_CODE': 'exited', 'MONITOR_EXIT_STATUS': status, 'MONITOR_INVOCATION_ID': 'i1'}
    res = subprocess.run(['/bin/sh', str(notifier), 'task-7'], env=env, capture_output=True, text=True, check=False, timeout=60)
    assert res.returncode == 0, res.stderr
    line = (tmp_path / '.local' / 'state' / 'fleet-dispatch' / 'failures.log').read_text()
    assert 'exit_status=%s runner_exit=%s invocation=i1' % (status, word) in line, line
