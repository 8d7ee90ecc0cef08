# -*- coding: utf-8 -*-
"""fleet.dispatch.capacity_info: the state file read through _capacity (D5, D8, D20) and the measured headroom."""
from __future__ import annotations


import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import dump_state, make_state
from ansible_collections.fleet.dispatch.plugins.module_utils._host import files, headroom
from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SHOW_OPTS, UNIT_PROPS
from ansible_collections.fleet.dispatch.plugins.modules import capacity_info as mod

ARGV = ['systemctl', '--user', 'show', 'task-*.service', '--property=' + ','.join(UNIT_PROPS)] + list(SHOW_OPTS)
NOW = '2026-11-30T12:00:00Z'
LIVE = ('Id=task-1.service\nLoadState=loaded\nActiveState=active\nSubState=running\nInvocationID=a\n'
        'ExecMainStartTimestampMonotonic=5\n\nId=task-2.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\n')


def units_ok():
    return ScriptedRunner([{'argv': ARGV, 'out': LIVE}])


RATE_FUTURE = dump_state(make_state('rate_limit', written_at='2026-11-30T11:00:00Z', reset_at='2026-11-30T17:00:00Z',
                                    message='Claude usage limit reached', unit='task-4'))
RATE_PAST = dump_state(make_state('rate_limit', written_at='2026-11-30T08:00:00Z', reset_at='2026-11-30T09:00:00Z'))
RATE_UNKNOWN = dump_state(make_state('rate_limit', written_at='2026-11-30T11:50:00Z', reset_at=None))
REVOKED = dump_state(make_state('revoked', written_at='2026-11-29T11:00:00Z', message='subscription has been cancelled'))
UPDATE_FAILED = dump_state(make_state('update_failed', written_at='2026-11-30T11:50:00Z', message='git fetch failed'))


@pytest.mark.parametrize('content, dark, source, reset_at, why, warned', [
    (None, False, None, None, 'no capacity state file', False),                       # D5: missing → not dark
    ('', False, None, None, 'empty', True),
    ('{not json', False, None, None, 'not JSON', True),
    ('["revoked"]', False, None, None, 'not an object', True),                        # D5 🔴: check the JSON type
    ('{"source": "weather"}', False, None, None, 'unknown source', True),
    (RATE_FUTURE, True, 'rate_limit', '2026-11-30T17:00:00.000000Z', 'rate limited until', False),
    (RATE_PAST, False, 'rate_limit', '2026-11-30T09:00:00.000000Z', 'reset passed', False),
    (RATE_UNKNOWN, True, 'rate_limit', None, 'reset unknown', False),                 # D8: never fabricate a reset time
    (REVOKED, True, 'revoked', None, 'a human must act', False),                      # D20: opposite remedy
    (UPDATE_FAILED, True, 'update_failed', None, 'fleet.dispatch.worker', False),     # D11: no stale code draws work
])
def test_state_file(run_module, tmp_path, content, dark, source, reset_at, why, warned):
    path = tmp_path / 'capacity.json'
    if content is not None:
        path.write_text(content)
    kind, res, warnings = run_module(mod, {'path': str(path), 'now': NOW}, runner=units_ok())
    assert kind == 'exit' and res['changed'] is False
    assert (res['dark'], res['source'], res['reset_at']) == (dark, source, reset_at)
    assert why in res['why'] and res['state_file'] == str(path)
    assert bool([w for w in warnings if 'capacity state' in w]) is warned
    if content is None:
        assert 'fail open' in res['why']


def test_check_mode_and_headroom(run_module, tmp_path):
    kind, res, warnings = run_module(mod, {'path': str(tmp_path / 'none.json'), 'now': NOW}, runner=units_ok(), check=True)
    head = res['headroom']
    assert kind == 'exit' and head['live_runs'] == 1           # task-2 failed: not a live run
    assert isinstance(head['load1'], float) and head['load15'] >= 0
    assert head['mem_available_kb'] > 0 and head['mem_total_kb'] >= head['mem_available_kb'] and head['cpus'] >= 1


def test_unreadable_user_manager_leaves_live_runs_null_and_warns(run_module, tmp_path):
    r = ScriptedRunner([{'argv': ARGV, 'rc': 1, 'err': 'Failed to connect to bus: No medium found'}])
    kind, res, warnings = run_module(mod, {'path': str(tmp_path / 'none.json'), 'now': NOW}, runner=r)
    assert kind == 'exit' and res['dark'] is False and res['headroom']['live_runs'] is None
    assert any('No medium found' in w for w in warnings)


def test_units_false_runs_nothing(run_module, tmp_path):
    r = ScriptedRunner()
    kind, res, _w = run_module(mod, {'path': str(tmp_path / 'none.json'), 'now': NOW, 'units': False}, runner=r)
    assert kind == 'exit' and r.calls == [] and res['headroom']['live_runs'] is None


@pytest.mark.parametrize('text, expected', [
    ('0.52 0.58 0.59 1/389 12345\n', (0.52, 0.58, 0.59)),
    ('2.29 1.00 0.50 3/100 1\n', (2.29, 1.0, 0.5)),
])
def test_parse_loadavg(text, expected):
    assert headroom.parse_loadavg(text) == expected


def test_parse_loadavg_rejects_garbage():
    with pytest.raises(ValueError):
        headroom.parse_loadavg('')


def test_parse_meminfo():
    mem = headroom.parse_meminfo('MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   26000000 kB\nHugePages_Total:       0\n')
    assert mem['MemAvailable'] == 26000000 and mem['MemTotal'] == 24576000 and mem['HugePages_Total'] == 0


def test_default_state_path():
    assert files.default_state_path({'XDG_STATE_HOME': '/x/state'}) == '/x/state/fleet-dispatch/capacity.json'
    assert files.default_state_path({}).endswith('/.local/state/fleet-dispatch/capacity.json')


def test_bad_now_fails(run_module):
    kind, res, _w = run_module(mod, {'now': 'yesterday'}, runner=ScriptedRunner())
    assert kind == 'fail' and 'now' in res['msg']
