# -*- coding: utf-8 -*-
"""fleet.dispatch.launch: main() driven with a scripted runner that asserts the exact argv."""
from __future__ import annotations

import os

import pytest

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SHOW_OPTS, UNIT_PROPS
from ansible_collections.fleet.dispatch.plugins.modules import launch as mod

PROPS = '--property=' + ','.join(UNIT_PROPS)
PATH = '/home/m/.local/bin:/usr/bin:/bin'


def show_step(unit, out):
    return {'argv': ['systemctl', '--user', 'show', unit, PROPS] + list(SHOW_OPTS), 'out': out}


def state(unit, active, inv='', mono=0, load='loaded'):
    return ('Id=%s.service\nLoadState=%s\nActiveState=%s\nSubState=x\nInvocationID=%s\n'
            'ExecMainStartTimestampMonotonic=%d\nActiveEnterTimestampMonotonic=0\n' % (unit, load, active, inv, mono))


def absent(unit):
    return state(unit, 'inactive', load='not-found')


def run_argv(unit, command, workdir, env_file=None, setenv=None, notifier=True, success='12 13 15'):
    argv = ['systemd-run', '--user', '--unit=%s' % unit, '--collect', '-p', 'Type=exec', '--setenv=PATH=' + PATH]
    for key in sorted(setenv or {}):
        argv.append('--setenv=%s=%s' % (key, setenv[key]))
    if env_file:
        argv += ['-p', 'EnvironmentFile=' + env_file]
    if notifier:
        argv += ['-p', 'OnFailure=fleet-notify@%s.service' % unit]
    if success:
        argv += ['-p', 'SuccessExitStatus=' + success]
    return argv + ['--working-directory=' + workdir, '--'] + command


COLLISION = 'Failed to start transient service unit: Unit task-2.service was already loaded or has a fragment file.'


@pytest.fixture
def env_file(tmp_path):
    path = tmp_path / 'credentials.env'
    path.write_text('GITHUB_TOKEN=ghp_never_in_argv\n')
    os.chmod(str(path), 0o600)
    return str(path)


def items(*numbers):
    return [{'number': n, 'command': ['fleet-runner', '--item', str(n)], 'workdir': '/w/task-%d' % n} for n in numbers]


def test_one_call_launches_free_and_refuses_live_and_unloading(run_module, env_file):
    """D4/D20: item 1 free, item 2 live before we touch it, item 3 collides while unloading."""
    r = ScriptedRunner([
        show_step('task-1', absent('task-1')),
        {'argv': run_argv('task-1', ['fleet-runner', '--item', '1'], '/w/task-1', env_file), 'env': {'PATH': PATH}},
        show_step('task-1', state('task-1', 'active', inv='inv1', mono=1000)),
        show_step('task-2', state('task-2', 'active', inv='other', mono=5)),
        show_step('task-3', absent('task-3')),
        {'argv': run_argv('task-3', ['fleet-runner', '--item', '3'], '/w/task-3', env_file), 'rc': 1, 'err': COLLISION},
        show_step('task-3', state('task-3', 'deactivating')),
    ])
    kind, res, warnings = run_module(mod, {'items': items(1, 2, 3), 'path': PATH, 'environment_file': env_file}, runner=r)
    assert kind == 'exit' and r.remaining() == []
    assert res['changed'] is True
    assert res['launched'] == ['task-1'] and res['refused'] == ['task-2', 'task-3'] and res['failed_to_launch'] == []
    by = dict((x['unit'], x) for x in res['results'])
    assert by['task-1']['invocation_id'] == 'inv1' and by['task-1']['start_us'] == 1000
    assert by['task-2']['reason'] == 'live' and by['task-2']['invocation_id'] == 'other'
    assert by['task-3']['reason'] == 'unloading'
    # the secret never reached an argv
    assert not any('ghp_never_in_argv' in ' '.join(c['argv']) for c in r.calls)


def test_failed_to_launch_is_reported_and_warned(run_module, env_file):
    err = 'Failed to find executable fleet-runner: No such file or directory'
    r = ScriptedRunner([
        show_step('task-4', absent('task-4')),
        {'argv': run_argv('task-4', ['fleet-runner', '--item', '4'], '/w/task-4', env_file), 'rc': 1, 'err': err},
        show_step('task-4', absent('task-4')),
    ])
    kind, res, warnings = run_module(mod, {'items': items(4), 'path': PATH, 'environment_file': env_file}, runner=r)
    assert kind == 'exit' and res['changed'] is False
    assert res['failed_to_launch'] == ['task-4'] and res['results'][0]['reason'] == 'failed-to-launch'
    assert 'No such file' in res['results'][0]['stderr'] and any('task-4' in w for w in warnings)


def test_check_mode_launches_nothing(run_module, env_file):
    r = ScriptedRunner([show_step('task-1', absent('task-1')), show_step('task-2', state('task-2', 'active'))])
    kind, res, _w = run_module(mod, {'items': items(1, 2, 1), 'path': PATH, 'environment_file': env_file}, runner=r, check=True)
    assert kind == 'exit' and r.remaining() == []
    assert all(c['argv'][0] == 'systemctl' for c in r.calls)
    assert res['changed'] is True and res['launched'] == ['task-1'] and res['refused'] == ['task-2', 'task-1']
    assert [x['reason'] for x in res['results']] == ['would-launch', 'live', 'live']


def test_multi_repo_unit_name_and_setenv_and_no_notifier(run_module, env_file):
    cmd = ['sh', '-c', 'echo "$FLEET_ITEM" $(id)']
    unit = 'task-acme-widgets-7'
    r = ScriptedRunner([
        show_step(unit, absent(unit)),
        {'argv': run_argv(unit, cmd, '/w/x', None, {'FLEET_ITEM': '7'}, notifier=False, success=None)},
        show_step(unit, state(unit, 'active', inv='i', mono=9)),
    ])
    args = {'items': [{'number': 7, 'repo': 'acme/widgets', 'command': cmd, 'workdir': '/w/x', 'setenv': {'FLEET_ITEM': 7}}],
            'path': PATH, 'notifier': '', 'success_exit_status': []}
    kind, res, _w = run_module(mod, args, runner=r)
    assert kind == 'exit' and res['launched'] == [unit]


def test_the_default_success_exit_status_is_the_runners_capacity_retry_and_budget():
    """D14 🔴: the never-announce list is load-bearing. launch's default must track the runner's own
    codes for the mechanism working (capacity, retry, a stop at the run's budget) -- and none of its failures."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.closeout import EXIT
    default = set(mod.argument_spec()['success_exit_status']['default'])
    assert default == {EXIT['capacity'], EXIT['retry'], EXIT['budget']}
    assert not default & {EXIT['failure'], EXIT['noop']}


def test_success_exit_status_is_passed_as_given(run_module):
    """D14: the codes named here do not fire OnFailure; the default is the runner's capacity and retry."""
    r = ScriptedRunner([
        show_step('task-1', absent('task-1')),
        {'argv': run_argv('task-1', ['fleet-runner', '--item', '1'], '/w/task-1', success='13 7')},
        show_step('task-1', state('task-1', 'active', inv='i', mono=9)),
    ])
    kind, res, _w = run_module(mod, {'items': items(1), 'path': PATH, 'success_exit_status': [13, 7, 13]}, runner=r)
    assert kind == 'exit' and res['launched'] == ['task-1'] and r.remaining() == []


@pytest.mark.parametrize('args, message', [
    ({'path': ''}, 'explicit'),                                                         # D3 🔴
    ({'environment_file': '/nonexistent/credentials.env'}, 'does not exist'),
    ({'items': [{'number': 1, 'command': ['x'], 'workdir': '/w', 'setenv': {'PATH': '/bin'}}]}, 'path option'),
    ({'items': [{'number': 1, 'command': [], 'workdir': '/w'}]}, 'command is empty'),
    ({'items': [{'number': 0, 'command': ['x'], 'workdir': '/w'}]}, 'positive integer'),
    ({'notifier': 'fleet-notify'}, 'template'),
    ({'success_exit_status': [0]}, 'not an exit code'),
    ({'success_exit_status': [256]}, 'not an exit code'),
])
def test_refused_configuration_touches_nothing(run_module, args, message):
    base = {'items': items(1), 'path': PATH}
    base.update(args)
    r = ScriptedRunner()
    kind, res, _w = run_module(mod, base, runner=r)
    assert kind == 'fail' and message in res['msg'] and r.calls == []


def test_group_readable_credentials_warn(run_module, env_file):
    os.chmod(env_file, 0o640)
    r = ScriptedRunner([show_step('task-1', state('task-1', 'active'))])
    kind, res, warnings = run_module(mod, {'items': items(1), 'path': PATH, 'environment_file': env_file}, runner=r)
    assert kind == 'exit' and any('chmod 0600' in w for w in warnings)


def test_probe_failure_fails_the_call(run_module):
    r = ScriptedRunner([dict(show_step('task-1', ''), rc=1, err='Failed to connect to bus: No medium found')])
    kind, res, _w = run_module(mod, {'items': items(1), 'path': PATH}, runner=r)
    assert kind == 'fail' and 'No medium found' in res['msg']


@pytest.mark.parametrize('name', ['GITHUB_TOKEN', 'PGPASSWORD', 'FLEET_LEASE_TOKEN'])
def test_secret_looking_setenv_warns_and_masks_but_does_not_block(run_module, name):
    """D5: a name is not proof; the dispatch role passes FLEET_LEASE_TOKEN (an owner token) this way."""
    value = 'v-%s-123' % name.lower()
    cmd = ['fleet-runner']
    r = ScriptedRunner([
        show_step('task-1', absent('task-1')),
        {'argv': run_argv('task-1', cmd, '/w', None, {name: value})},
        show_step('task-1', state('task-1', 'active', inv='i', mono=3)),
    ])
    kind, res, warnings = run_module(mod, {'items': [{'number': 1, 'command': cmd, 'workdir': '/w', 'setenv': {name: value}}], 'path': PATH}, runner=r)
    assert kind == 'exit' and res['launched'] == ['task-1']
    assert any(name in w and 'environment_file' in w for w in warnings)
    assert not any(value in w for w in warnings)
    assert value in run_module.module.no_log_values        # masked in Ansible's output and logs
