# -*- coding: utf-8 -*-
"""fleet.dispatch.units_info: main() over a scripted runner, output captured on a test-bed host."""
from __future__ import annotations


import pytest

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SHOW_OPTS, UNIT_PROPS
from ansible_collections.fleet.dispatch.plugins.modules import units_info as mod

PROPS = '--property=' + ','.join(UNIT_PROPS)
ARGV = ['systemctl', '--user', 'show', 'task-*.service', PROPS] + list(SHOW_OPTS)


def block(name, active, mono, inv, sub='running'):
    return ('MainPID=7\nExecMainStartTimestamp=Mon 2026-11-30 01:01:48.705688 UTC\nExecMainStartTimestampMonotonic=%d\n'
            'Id=%s.service\nLoadState=loaded\nActiveState=%s\nSubState=%s\nActiveEnterTimestamp=\n'
            'ActiveEnterTimestampMonotonic=%d\nInvocationID=%s\n' % (mono, name, active, sub, mono + 300, inv))


@pytest.mark.parametrize('check', [False, True])
def test_live_units_in_one_call(run_module, check):
    out = '\n'.join([block('task-12', 'active', 900, 'b'), block('task-3', 'active', 100, 'a'),
                     block('task-5', 'deactivating', 50, 'c', sub='stop-sigterm'),
                     block('task-42-1700000000-ab12', 'active', 70, 'd')])
    r = ScriptedRunner([{'argv': ARGV, 'out': out}])
    kind, res, warnings = run_module(mod, {}, runner=r, check=check)
    assert kind == 'exit' and res['changed'] is False and r.remaining() == [] and len(r.calls) == 1
    assert [u['name'] for u in res['units']] == ['task-42-1700000000-ab12', 'task-3', 'task-12']   # oldest first
    assert res['live_runs'] == 3 and res['live_items'] == [3, 12] and 'items' not in res
    assert [u['name'] for u in res['unloading']] == ['task-5']
    three = [u for u in res['units'] if u['name'] == 'task-3'][0]
    assert three == {'name': 'task-3', 'item': {'number': 3, 'repo': ''}, 'active_state': 'active', 'sub_state': 'running',
                     'invocation_id': 'a', 'start_us': 100, 'start_wall_us': 1796000508705688,
                     'started_at': '2026-11-30T01:01:48.705688Z', 'main_pid': 7}
    # D20: the entropy-carrying name is not silently dropped
    assert any('task-42-1700000000-ab12' in w for w in warnings)


def test_no_units(run_module):
    kind, res, warnings = run_module(mod, {}, runner=ScriptedRunner([{'argv': ARGV, 'out': ''}]))
    assert kind == 'exit' and res['units'] == [] and res['live_runs'] == 0 and warnings == []


def test_unreachable_user_manager_fails_loudly(run_module):
    r = ScriptedRunner([{'argv': ARGV, 'rc': 1, 'err': 'Failed to connect to bus: No medium found'}])
    kind, res, _w = run_module(mod, {}, runner=r)
    assert kind == 'fail' and 'No medium found' in res['msg']
