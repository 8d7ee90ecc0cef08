# -*- coding: utf-8 -*-
"""fleet.dispatch.launch: the run units' sandbox, from the master's sandbox.json or the sandbox option (issue 14)."""
from __future__ import annotations

import json
import os

import pytest

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.sandbox import (
    DEFAULTS, RUNNER_OWN, manager_paths, protected_paths)
from ansible_collections.fleet.dispatch.plugins.module_utils._host import launcher
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import home_dir
from ansible_collections.fleet.dispatch.plugins.modules import launch as mod
from test_launch import PATH, absent, run_argv, show_step, state  # noqa: F401 - the argv helpers of test_launch


@pytest.fixture
def sandbox_file(tmp_path, monkeypatch):
    path = tmp_path / 'sandbox.json'
    monkeypatch.setattr(launcher, 'default_sandbox_path', lambda: str(path))
    return path


def _with(props, argv):
    """run_argv with ``-p`` properties before --working-directory (where transient_argv puts them)."""
    at = [i for i, a in enumerate(argv) if a.startswith('--working-directory=')][0]
    extra = []
    for prop in props:
        extra += ['-p', prop]
    return argv[:at] + extra + argv[at:]


def _one(sandbox_props, **args):
    cmd = ['fleet-runner', '--item', '1']
    return ScriptedRunner([
        show_step('task-1', absent('task-1')),
        {'argv': _with(sandbox_props, run_argv('task-1', cmd, '/w/task-1'))},
        show_step('task-1', state('task-1', 'active', inv='i', mono=3)),
    ]), dict({'items': [{'number': 1, 'command': cmd, 'workdir': '/w/task-1'}], 'path': PATH}, **args)


def test_the_masters_file_hardens_every_run_and_adds_its_workdir(run_module, sandbox_file):
    sandbox_file.write_text(json.dumps({'NoNewPrivileges': True, 'PrivateUsers': True, 'ProtectHome': 'read-only',
                                        'ReadWritePaths': ['/home/m/.local/state/fleet-dispatch']}))
    r, args = _one(['NoNewPrivileges=yes', 'PrivateUsers=yes', 'ProtectHome=read-only',
                    'ReadWritePaths=/home/m/.local/state/fleet-dispatch', 'ReadWritePaths=/w/task-1']
                   + ['ReadOnlyPaths=%s' % p for p in protected_paths(home_dir())]
                   + ['InaccessiblePaths=%s' % p for p in manager_paths(os.getuid())])
    kind, res, _w = run_module(mod, args, runner=r)
    assert kind == 'exit' and res['launched'] == ['task-1'] and r.remaining() == []


def test_the_runners_own_files_are_read_only_in_the_default_profile_too(run_module, sandbox_file):
    """The default profile leaves the home writable; the wrapper, runner.json, sandbox.json, board.json,
    the user units, .gitconfig and .ssh are read-only to the run all the same."""
    sandbox_file.write_text(json.dumps(dict(DEFAULTS)))
    home = home_dir()
    r, args = _one(['NoNewPrivileges=yes', 'PrivateUsers=yes', 'ProtectSystem=full', 'ReadWritePaths=/w/task-1',
                    'BindPaths=-%s/.local' % home, 'BindPaths=-%s/.config' % home,
                    'BindPaths=-%s/.local/share' % home]
                   + ['ReadOnlyPaths=-%s/%s' % (home, p) for p in RUNNER_OWN]
                   + ['InaccessiblePaths=%s' % p for p in manager_paths(os.getuid())])
    kind, res, _w = run_module(mod, args, runner=r)
    assert kind == 'exit' and res['launched'] == ['task-1'] and r.remaining() == []
    props = ['ReadOnlyPaths=-%s/%s' % (home, p) for p in ('.local/bin', '.config/fleet-dispatch', '.config/systemd', '.ssh')]
    assert set(props) <= set(r.calls[1]['argv'])


def test_a_writable_path_naming_the_runners_files_launches_nothing(run_module, sandbox_file):
    sandbox_file.write_text(json.dumps(dict(DEFAULTS, ReadWritePaths=['-%s/.config/fleet-dispatch' % home_dir()])))
    r = ScriptedRunner([])
    kind, res, _w = run_module(mod, {'items': [{'number': 1, 'command': ['x'], 'workdir': '/w'}], 'path': PATH}, runner=r)
    assert kind == 'fail' and 'read-only to every run' in res['msg'] and r.calls == []


def test_a_sandbox_file_others_can_write_launches_nothing(run_module, sandbox_file):
    sandbox_file.write_text('{}')
    sandbox_file.chmod(0o666)
    r = ScriptedRunner([])
    kind, res, _w = run_module(mod, {'items': [{'number': 1, 'command': ['x'], 'workdir': '/w'}], 'path': PATH}, runner=r)
    assert kind == 'fail' and 'lets the group or others write it' in res['msg'] and r.calls == []


def test_the_option_overrides_the_file_and_empty_turns_it_off(run_module, sandbox_file):
    sandbox_file.write_text(json.dumps({'NoNewPrivileges': True}))
    r, args = _one(['TasksMax=64'], sandbox={'TasksMax': 64})
    kind, res, _w = run_module(mod, args, runner=r)
    assert kind == 'exit' and r.remaining() == []
    r, args = _one([], sandbox={})
    kind, res, _w = run_module(mod, args, runner=r)
    assert kind == 'exit' and r.remaining() == []


def test_no_file_no_hardening(run_module, sandbox_file):
    r, args = _one([])
    kind, res, _w = run_module(mod, args, runner=r)
    assert kind == 'exit' and r.remaining() == []


@pytest.mark.parametrize('text, words', [
    ('{"ProtectHome": "read-only"}', 'needs PrivateUsers=yes'),
    ('{"ExecStartPre": "/bin/sh"}', 'unknown sandbox setting'),
    ('not json', 'is not JSON'),
])
def test_a_bad_sandbox_launches_nothing(run_module, sandbox_file, text, words):
    sandbox_file.write_text(text)
    r = ScriptedRunner([])
    kind, res, _w = run_module(mod, {'items': [{'number': 1, 'command': ['x'], 'workdir': '/w'}], 'path': PATH}, runner=r)
    assert kind == 'fail' and words in res['msg'] and 'nothing was launched' in res['msg'] and r.calls == []


def test_non_secret_setenv_names_are_passed_on_for_the_agents_allow_list(run_module, sandbox_file):
    cmd = ['fleet-runner']
    setenv = {'FAKE_AGENT_MODE': 'claim', 'EDITOR': 'true', 'FLEET_ITEM': '1', 'PGPASSWORD': 'pw-secret-1'}
    passed = dict(setenv, FLEET_AGENT_SETENV='EDITOR,FAKE_AGENT_MODE')
    r = ScriptedRunner([
        show_step('task-1', absent('task-1')),
        {'argv': run_argv('task-1', cmd, '/w', None, passed)},
        show_step('task-1', state('task-1', 'active', inv='i', mono=3)),
    ])
    kind, res, warnings = run_module(mod, {'items': [{'number': 1, 'command': cmd, 'workdir': '/w', 'setenv': setenv}],
                                           'path': PATH}, runner=r)
    assert kind == 'exit' and r.remaining() == [] and res['launched'] == ['task-1']
    assert any('PGPASSWORD' in w for w in warnings) and not any('pw-secret-1' in w for w in warnings)
