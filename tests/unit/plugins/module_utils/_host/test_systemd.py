# -*- coding: utf-8 -*-
"""The systemd user-manager adapter: exact argv (scripted runner), parsing of output captured
from a test-bed host (systemd 252), the D20 live/unloading classification and the launch flow."""
from __future__ import annotations

import pytest

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import (
    SHOW_OPTS, UNIT_PROPS, SystemdError, SystemdUser, classify, launch, notifier_unit, parse_show,
    parse_wall_us, runtime_env)

PROPS = '--property=' + ','.join(UNIT_PROPS)
XDG = {'XDG_RUNTIME_DIR': '/run/user/1001'}

# Captured on a test-bed host: task-1 running, task-2 being stopped (ignores SIGTERM),
# task-foo a unit whose name is not one unit_name would produce.
SHOW_THREE = """MainPID=72
ExecMainStartTimestamp=Mon 2026-11-30 01:01:48.705688 UTC
ExecMainStartTimestampMonotonic=497392595
Id=task-1.service
LoadState=loaded
ActiveState=active
SubState=running
ActiveEnterTimestamp=Mon 2026-11-30 01:01:48.706125 UTC
ActiveEnterTimestampMonotonic=497393032
InvocationID=713759e73f6c4d0ab439fdd8057264e7

MainPID=119
ExecMainStartTimestamp=Mon 2026-11-30 01:02:18.621602 UTC
ExecMainStartTimestampMonotonic=527308509
Id=task-2.service
LoadState=loaded
ActiveState=deactivating
SubState=stop-sigterm
ActiveEnterTimestamp=Mon 2026-11-30 01:02:18.621880 UTC
ActiveEnterTimestampMonotonic=527308787
InvocationID=4ee6969f283946ec8c8bf8cb184ddb84

MainPID=122
ExecMainStartTimestamp=Mon 2026-11-30 01:02:18.633879 UTC
ExecMainStartTimestampMonotonic=527320786
Id=task-foo.service
LoadState=loaded
ActiveState=active
SubState=running
ActiveEnterTimestamp=Mon 2026-11-30 01:02:18.634112 UTC
ActiveEnterTimestampMonotonic=527321019
InvocationID=ef05daad508e4cfeac4a09a29a4e54c7
"""

SHOW_MISSING = """MainPID=0
ExecMainStartTimestamp=
ExecMainStartTimestampMonotonic=0
Id=task-77.service
LoadState=not-found
ActiveState=inactive
SubState=dead
ActiveEnterTimestamp=
ActiveEnterTimestampMonotonic=0
InvocationID=
"""


def _show(unit, active, sub='running', load='loaded', inv='0123', mono=100):
    return ('Id=%s.service\nLoadState=%s\nActiveState=%s\nSubState=%s\nInvocationID=%s\nMainPID=7\n'
            'ExecMainStartTimestampMonotonic=%d\nActiveEnterTimestampMonotonic=%d\n'
            'ExecMainStartTimestamp=Mon 2026-11-30 01:01:48.705688 UTC\nActiveEnterTimestamp=\n'
            % (unit, load, active, sub, inv, mono, mono + 1))


def _sd(runner, **kw):
    return SystemdUser(runner, uid=1001, environ={}, **kw)


# -- environment ----------------------------------------------------------------------------

@pytest.mark.parametrize('environ, expected', [
    ({}, {'XDG_RUNTIME_DIR': '/run/user/1001'}),                        # become_user: pam_systemd did not run
    ({'XDG_RUNTIME_DIR': '/run/user/1001'}, {}),                        # a real login session
    ({'XDG_RUNTIME_DIR': '/run/user/0'}, {'XDG_RUNTIME_DIR': '/run/user/1001'}),  # inherited from root
    ({'XDG_RUNTIME_DIR': '/srv/rt'}, {}),                               # a deliberate custom dir is kept
])
def test_runtime_env(environ, expected):
    assert runtime_env(1001, environ) == expected


# -- parsing --------------------------------------------------------------------------------

def test_parse_show_blocks_and_values_with_equals():
    blocks = parse_show('Id=a.service\nEnvironment=A=1 B=2\n\nId=b.service\n')
    assert blocks == [{'Id': 'a.service', 'Environment': 'A=1 B=2'}, {'Id': 'b.service'}]
    assert parse_show('') == []


def test_parse_wall_us():
    assert parse_wall_us('Mon 2026-11-30 01:01:48.705688 UTC') == 1796000508705688
    assert parse_wall_us('') is None and parse_wall_us('n/a') is None and parse_wall_us('garbage') is None


@pytest.mark.parametrize('load, active, expected', [
    ('loaded', 'active', 'live'),
    ('loaded', 'activating', 'live'),
    ('loaded', 'reloading', 'live'),
    ('loaded', 'deactivating', 'unloading'),
    ('loaded', 'failed', 'unloading'),       # failed and not yet collected
    ('loaded', 'inactive', 'unloading'),     # stopped and not yet collected
    ('not-found', 'inactive', 'absent'),     # the name is free
    ('', '', 'absent'),
    ('loaded', 'maintenance', 'unloading'),  # unknown state: not live without evidence (D5), not free
])
def test_classify(load, active, expected):
    assert classify({'LoadState': load, 'ActiveState': active}) == expected


# -- reading (exact argv) -------------------------------------------------------------------

def test_list_task_units_is_one_call_and_keeps_unparsed_names():
    r = ScriptedRunner().add(['systemctl', '--user', 'show', 'task-*.service', PROPS] + list(SHOW_OPTS), out=SHOW_THREE, env=XDG)
    units = _sd(r).list_task_units()
    assert r.remaining() == [] and len(r.calls) == 1
    by = dict((u['name'], u) for u in units)
    assert set(by) == {'task-1', 'task-2', 'task-foo'}
    one = by['task-1']
    assert one['item'] == {'number': 1, 'repo': ''}
    assert one['state'] == 'live' and one['active_state'] == 'active' and one['sub_state'] == 'running'
    assert one['invocation_id'] == '713759e73f6c4d0ab439fdd8057264e7'
    assert one['start_us'] == 497392595            # ExecMainStartTimestampMonotonic, not ActiveEnter
    assert one['start_wall_us'] == 1796000508705688 and one['started_at'] == '2026-11-30T01:01:48.705688Z'
    assert by['task-2']['state'] == 'unloading'
    # D20: a name the parser does not accept is reported, never silently dropped
    assert by['task-foo']['item'] is None and by['task-foo']['state'] == 'live'
    assert [u['name'] for u in units] == ['task-1', 'task-2', 'task-foo']   # oldest first


def test_list_task_units_empty_and_live_subset():
    r = ScriptedRunner().add(['systemctl', '--user', 'show', 'task-*.service', PROPS] + list(SHOW_OPTS), out='')
    assert _sd(r).list_task_units() == []
    r = ScriptedRunner().add(['systemctl', '--user', 'show', 'task-*.service', PROPS] + list(SHOW_OPTS), out=SHOW_THREE)
    assert [u['name'] for u in _sd(r).live_units()] == ['task-1', 'task-foo']


def test_list_failure_raises_with_systemd_reason():
    r = ScriptedRunner().add(['systemctl', '--user', 'show', 'task-*.service', PROPS] + list(SHOW_OPTS),
                             rc=1, err='Failed to connect to bus: No medium found\n')
    with pytest.raises(SystemdError, match='No medium found'):
        _sd(r).list_task_units()


def test_state_of_a_missing_unit_is_absent():
    r = ScriptedRunner().add(['systemctl', '--user', 'show', 'task-77', PROPS] + list(SHOW_OPTS), out=SHOW_MISSING)
    rec = _sd(r).state('task-77')
    assert rec['state'] == 'absent' and rec['start_us'] is None and rec['invocation_id'] is None


# -- acting ---------------------------------------------------------------------------------

PATH = '/home/m/.local/bin:/usr/local/bin:/usr/bin:/bin'


def test_transient_argv_is_exact():
    argv = _sd(ScriptedRunner()).transient_argv(
        'task-42', ['runner', '--item', '42', '$(rm -rf ~)'], PATH, environment_file='/home/m/.config/fleet-dispatch/credentials.env',
        on_failure='fleet-notify@task-42.service', workdir='/home/m/fleet/workspaces/task-42@w1', setenv={'B': '2', 'A': '1'},
        success_exit_status=[13, 12, 13])
    assert argv == [
        'systemd-run', '--user', '--unit=task-42', '--collect', '-p', 'Type=exec', '--setenv=PATH=' + PATH,
        '--setenv=A=1', '--setenv=B=2',
        '-p', 'EnvironmentFile=/home/m/.config/fleet-dispatch/credentials.env',
        '-p', 'OnFailure=fleet-notify@task-42.service',
        '-p', 'SuccessExitStatus=13 12',
        '--working-directory=/home/m/fleet/workspaces/task-42@w1',
        '--', 'runner', '--item', '42', '$(rm -rf ~)']


@pytest.mark.parametrize('kwargs, message', [
    (dict(path=''), 'explicit PATH'),                                   # D3 🔴: jq: command not found, exit 127
    (dict(environment_file='credentials.env'), 'absolute'),
    (dict(workdir='fleet/ws'), 'absolute'),
    (dict(argv=[]), 'command'),
    (dict(success_exit_status=[0]), 'from 1 to 255'),
    (dict(success_exit_status=['13']), 'from 1 to 255'),
    (dict(success_exit_status=[True]), 'from 1 to 255'),
])
def test_transient_argv_refuses(kwargs, message):
    args = dict(unit='task-1', argv=['true'], path=PATH)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        _sd(ScriptedRunner()).transient_argv(**args)


@pytest.mark.parametrize('template, expected', [
    ('fleet-notify@', 'fleet-notify@task-5.service'),
    ('fleet-notify@.service', 'fleet-notify@task-5.service'),
    ('', None),
])
def test_notifier_unit_is_literal(template, expected):
    assert notifier_unit(template, 'task-5') == expected


def test_notifier_must_be_a_template():
    with pytest.raises(ValueError, match='template'):
        notifier_unit('fleet-notify', 'task-5')


def test_run_transient_passes_path_to_systemd_run_itself():
    """systemd-run resolves argv[0] with the caller's PATH: give it the run's PATH."""
    sd = _sd(ScriptedRunner())
    full = sd.transient_argv('task-1', ['jq', '.'], PATH)
    r = ScriptedRunner().add(full, env={'PATH': PATH, 'XDG_RUNTIME_DIR': '/run/user/1001'})
    assert _sd(r).run_transient('task-1', ['jq', '.'], PATH) == (0, '')


def test_stop_argv_and_failure():
    r = ScriptedRunner().add(['systemctl', '--user', 'stop', 'task-3'])
    assert _sd(r).stop('task-3') is True
    r = ScriptedRunner().add(['systemctl', '--user', 'stop', 'task-3'], rc=5, err='Failed to stop task-3.service: Unit task-3.service not loaded.\n')
    with pytest.raises(SystemdError, match='not loaded'):
        _sd(r).stop('task-3')


COLLISION = 'Failed to start transient service unit: Unit task-9.service was already loaded or has a fragment file.\n'


def _launch_script(before, rc, after, err=''):
    sd = _sd(ScriptedRunner())
    r = ScriptedRunner()
    r.add(['systemctl', '--user', 'show', 'task-9', PROPS] + list(SHOW_OPTS), out=before)
    if rc is not None:
        r.add(sd.transient_argv('task-9', ['runner'], PATH), rc=rc, err=err)
        r.add(['systemctl', '--user', 'show', 'task-9', PROPS] + list(SHOW_OPTS), out=after)
    return r


@pytest.mark.parametrize('before, rc, after, err, reason, launched', [
    # the free name: launched, identity read back
    (SHOW_MISSING.replace('77', '9'), 0, _show('task-9', 'active', inv='abc', mono=555), '', 'launched', True),
    # D4 pre-flight: a live unit is refused without touching it (no systemd-run at all)
    (_show('task-9', 'active', inv='old'), None, None, '', 'live', False),
    # D20 🔴: the same error text, three different states, three different names
    (SHOW_MISSING.replace('77', '9'), 1, _show('task-9', 'activating', inv='won'), COLLISION, 'live', False),
    (SHOW_MISSING.replace('77', '9'), 1, _show('task-9', 'deactivating', sub='stop-sigterm'), COLLISION, 'unloading', False),
    (_show('task-9', 'failed', sub='failed'), 1, _show('task-9', 'failed', sub='failed'), COLLISION, 'unloading', False),
    # a launch that failed for another reason keeps systemd-run's words
    (SHOW_MISSING.replace('77', '9'), 1, SHOW_MISSING.replace('77', '9'), 'Failed to find executable runner: No such file or directory\n',
     'failed-to-launch', False),
])
def test_launch_names_each_outcome_from_state(before, rc, after, err, reason, launched):
    r = _launch_script(before, rc, after, err)
    res = launch(_sd(r), 'task-9', ['runner'], PATH)
    assert r.remaining() == []
    assert res['reason'] == reason and res['launched'] is launched
    if reason == 'launched':
        assert res['invocation_id'] == 'abc' and res['start_us'] == 555
    if reason == 'failed-to-launch':
        assert 'No such file' in res['stderr']
    if rc is None:
        assert len(r.calls) == 1   # refused on the read, nothing started


def test_launch_check_mode_starts_nothing():
    r = _launch_script(SHOW_MISSING.replace('77', '9'), None, None)
    res = launch(_sd(r), 'task-9', ['runner'], PATH, check=True)
    assert res['reason'] == 'would-launch' and res['launched'] is False
    assert res['argv'][:3] == ['systemd-run', '--user', '--unit=task-9']
    assert [c['argv'][0] for c in r.calls] == ['systemctl']


# -- the runner seam underneath (_cmd) ------------------------------------------------------

def test_subprocess_runner_is_argv_only_and_c_locale():
    from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import SubprocessRunner
    r = SubprocessRunner()
    rc, out, _err = r.run(['sh', '-c', 'echo "$LC_ALL/$LANGUAGE/$EXTRA" "$1"', 'sh', '$(echo injected); $HOME'], env={'EXTRA': 'x'})
    assert rc == 0 and out == 'C/C/x $(echo injected); $HOME\n'   # board text arrives verbatim, never re-parsed
    with pytest.raises(TypeError):
        r.run('systemctl --user show task-1')
    rc, _out, err = r.run(['/nonexistent/fleet-tool'])
    assert rc == 127 and 'fleet-tool' in err


def test_module_runner_does_not_expand_user_or_vars():
    """AnsibleModule.run_command expands ~ and $VAR in every argument by default: board text must not be rewritten."""
    from ansible.module_utils.basic import AnsibleModule
    patch_module_args = pytest.importorskip('ansible.module_utils.testing', reason='ansible-core < 2.19 (the oldest-Python run)').patch_module_args
    from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
    with patch_module_args({}):
        module = AnsibleModule(argument_spec={})
    rc, out, _err = ModuleRunner(module).run(['printf', '%s|', '$HOME', '~', '$(id)'])
    assert rc == 0 and out == '$HOME|~|$(id)|'
    rc, out, _err = ModuleRunner(module).run(['sh', '-c', 'echo "$LC_ALL"; cat'], data='stdin text')
    assert out == 'C\nstdin text'


def test_scripted_runner_refuses_unexpected_commands():
    r = ScriptedRunner().add(['systemctl', '--user', 'stop', 'task-1'])
    with pytest.raises(AssertionError, match='unexpected command'):
        r.run(['systemctl', '--user', 'stop', 'task-2'])
