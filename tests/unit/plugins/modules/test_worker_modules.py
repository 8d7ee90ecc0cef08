# -*- coding: utf-8 -*-
"""fleet.dispatch.worker_probe and worker_launch: main() over a scripted runner, as the master itself.

The identity switch to other masters is tests/unit/plugins/module_utils/_host/test_identity.py (as root) and the
bed (tests/integration/test_dispatch_path.py runs the path through these modules)."""
from __future__ import annotations

import os
import pwd

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SHOW_OPTS, UNIT_PROPS
from ansible_collections.fleet.dispatch.plugins.module_utils._host import worker_calls
from ansible_collections.fleet.dispatch.plugins.modules import worker_launch, worker_probe

ME = pwd.getpwuid(os.getuid()).pw_name
PROPS = '--property=' + ','.join(UNIT_PROPS)
SHOW_ALL = ['systemctl', '--user', 'show', 'task-*.service', PROPS] + list(SHOW_OPTS)


def block(name, active, mono, inv):
    return ('Id=%s.service\nLoadState=loaded\nActiveState=%s\nSubState=running\nInvocationID=%s\nMainPID=7\n'
            'ExecMainStartTimestampMonotonic=%d\nActiveEnterTimestampMonotonic=0\n' % (name, active, inv, mono))


def test_probe_reads_units_and_capacity_of_the_master_in_one_call(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_STATE_HOME', str(tmp_path))
    state = tmp_path / 'fleet-dispatch' / 'capacity.json'
    state.parent.mkdir()
    state.write_text('{"source": "revoked", "message": "key revoked"}')
    r = ScriptedRunner([{'argv': SHOW_ALL, 'out': block('task-3', 'active', 100, 'a') + '\n' + block('task-5', 'deactivating', 9, 'b')}])
    kind, res, warnings = run_module(worker_probe, {'masters': [ME, 'no-such-user-fleet'], 'now': '2026-12-01T00:00:00Z'},
                                     runner=r, check=True)
    assert kind == 'exit' and res['changed'] is False and r.remaining() == []
    mine, lost = res['masters']
    assert mine['master'] == ME and mine['failed'] is False
    assert [u['name'] for u in mine['units']] == ['task-3'] and [u['name'] for u in mine['unloading']] == ['task-5']
    assert mine['dark'] is True and mine['source'] == 'revoked' and mine['state_file'] == str(state)
    assert mine['headroom']['live_runs'] == 1 and res['headroom']['live_runs'] is None
    assert lost['failed'] is True and 'no such user' in lost['msg'] and 'units' not in lost


def test_probe_reports_the_spool_and_its_clock_against_the_controllers(run_module, tmp_path, monkeypatch):
    """A close-out waiting in the master's spool is reported (the reaper holds its item); the worker's clock is
    compared with the controller's as sent, so a worker 10 minutes behind says about -600 s."""
    import datetime
    from ansible_collections.fleet.dispatch.plugins.module_utils._host import spool
    monkeypatch.setenv('XDG_STATE_HOME', str(tmp_path))
    spool.write(str(tmp_path / 'fleet-dispatch'), {'run': 'r1', 'unit': 'task-9', 'item': 9, 'repo': '', 'kind': 'noop',
                                                   'body': 'b', 'close': False, 'spooled_at': '2026-12-05T00:00:00Z'})
    ahead = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=10)
    r = ScriptedRunner([{'argv': SHOW_ALL, 'out': ''}])
    kind, res, _w = run_module(worker_probe, {'masters': [ME], 'controller_time': ahead.strftime('%Y-%m-%dT%H:%M:%SZ')},
                               runner=r)
    assert kind == 'exit' and [row['unit'] for row in res['masters'][0]['spooled']] == ['task-9']
    assert -605 < res['clock_skew_s'] < -595, res['clock_skew_s']
    kind, res, _w = run_module(worker_probe, {'masters': [ME]}, runner=ScriptedRunner([{'argv': SHOW_ALL, 'out': ''}]))
    assert res['clock_skew_s'] is None and res['clock'].endswith('Z')


def test_probe_without_capacity_reads_only_units(run_module):
    r = ScriptedRunner([{'argv': SHOW_ALL, 'out': ''}])
    kind, res, _w = run_module(worker_probe, {'masters': [ME], 'capacity': False}, runner=r)
    assert kind == 'exit' and res['masters'][0]['live_runs'] == 0 and 'dark' not in res['masters'][0]
    # the name the worker's runners write in their start markers, whatever the inventory calls it
    import socket
    assert res['hostname'] == socket.gethostname()


def item(number, **kw):
    out = {'master': ME, 'number': number, 'clone': '/nonexistent/clone', 'command': ['fleet-runner', '--item', str(number)]}
    out.update(kw)
    return out


def test_launch_without_a_recorded_path_launches_nothing_and_says_so(run_module, tmp_path, monkeypatch):
    monkeypatch.setattr(worker_calls, 'home_dir', lambda: str(tmp_path))
    r = ScriptedRunner([])
    kind, res, _w = run_module(worker_launch, {'items': [item(1)]}, runner=r)
    assert kind == 'exit' and res['changed'] is False and r.calls == []
    (m,) = res['masters']
    assert m['results'][0]['reason'] == 'no-path' and 'fleet.dispatch.worker' in m['results'][0]['stderr']
    assert m['failed_to_launch'] == ['task-1'] and m['launched'] == []


def test_launch_answers_a_run_without_workspace_and_touches_no_unit(run_module, tmp_path, monkeypatch):
    """The clone is missing: the run is no-workspace (a refusal at the workspace step), systemd is never asked."""
    monkeypatch.setattr(worker_calls, 'home_dir', lambda: str(tmp_path))
    (tmp_path / '.config' / 'fleet-dispatch').mkdir(parents=True)
    (tmp_path / '.config' / 'fleet-dispatch' / 'path').write_text('/usr/bin:/bin\n')

    class Runner(ScriptedRunner):
        def run(self, argv, env=None, data=None):
            self.calls.append({'argv': list(argv)})
            assert argv[0] == 'git', argv     # only the workspace's git is run
            return 128, '', 'fatal: not a git repository'
    r = Runner([])
    kind, res, _w = run_module(worker_launch, {'items': [item(2)]}, runner=r)
    assert kind == 'exit', res
    (m,) = res['masters']
    assert m['path'] == '/usr/bin:/bin' and m['results'][0]['reason'] == 'no-workspace'
    assert m['failed_to_launch'] == ['task-2'] and res['changed'] is False


class _Answer(object):
    """Answers every command with one (rc, stdout)."""

    def __init__(self, rc, out):
        self.rc, self.out, self.calls = rc, out, []

    def run(self, argv, env=None, data=None):
        self.calls.append(list(argv))
        return self.rc, self.out, ''


def test_an_earlier_tree_is_replaced_only_when_its_unit_is_not_live(tmp_path):
    """D10: the launch makes a fresh tree for the run unless the item's unit may still run in the earlier one."""
    bins = {'systemctl': 'systemctl', 'systemd-run': 'systemd-run'}
    tree = tmp_path / 'tree'
    quiet = _Answer(0, '')
    assert worker_calls._unit_live(quiet, bins, 'task-7', str(tree), False) is False and quiet.calls == []
    tree.mkdir()
    assert worker_calls._unit_live(_Answer(0, block('task-7', 'active', 5, 'abc')), bins, 'task-7', str(tree), False) is True
    assert worker_calls._unit_live(_Answer(0, block('task-7', 'inactive', 0, '')), bins, 'task-7', str(tree), False) is False
    assert worker_calls._unit_live(_Answer(1, ''), bins, 'task-7', str(tree), False) is True, 'unreadable: the tree is kept'
    assert worker_calls._unit_live(_Answer(0, block('task-7', 'active', 5, 'abc')), bins, 'task-7', str(tree), True) is False
