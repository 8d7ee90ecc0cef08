# -*- coding: utf-8 -*-
"""The reaper's filters as the dispatch tasks call them: registered units_info loop results in (D14)."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader

NOW = '2026-12-01T12:00:00.000000Z'


def filt(name):
    plugin = filter_loader.get('fleet.dispatch.%s' % name)
    return getattr(plugin, 'j2_function', plugin)


ITEMS = [
    {'number': 5, 'repo': '', 'reason': 'running', 'last_marker': {'kind': 'start', 'at': '2026-12-01T11:00:00.000000Z'},
     'run_durations': [600.0]},
    {'number': 6, 'repo': '', 'reason': 'running', 'last_marker': {'kind': 'start', 'at': '2026-12-01T11:59:00.000000Z'},
     'run_durations': []},
]
MASTERS = [{'worker': 'w1', 'master': 'a'}, {'worker': 'w2', 'master': 'a'}]


def registered(worker, units=(), **status):
    """One loop result of the probe task, as Ansible registers it (loop_var _dispatch_m)."""
    res = {'_dispatch_m': {'worker': worker, 'master': 'a'}, 'ansible_loop_var': '_dispatch_m', 'changed': False,
           'units': [{'name': u} for u in units]}
    res.update(status)
    return res


def test_due_then_decide_from_registered_probe_results():
    reaping = filt('reap_due')(ITEMS, NOW, 60)
    assert reaping['threshold']['seconds'] == 1200 and [d['number'] for d in reaping['due']] == [5]
    leases = [{'name': 'task-5', 'acquired': True}]
    out = filt('reap_decide')(reaping, [registered('w1'), registered('w2', ['task-9'])], MASTERS, NOW, leases)
    assert [r['number'] for r in out['reap']] == [5] and 'threshold 1200s, from 2x the longest of 1 runs' in out['reap'][0]['text']
    blind = filt('reap_decide')(reaping, [registered('w1'), registered('w2', unreachable=True, msg='ssh: refused')],
                                MASTERS, NOW, leases)
    assert blind['reap'] == [] and 'w2/a' in blind['held'][0]['why']


def test_the_filters_refuse_what_is_not_theirs():
    with pytest.raises(AnsibleFilterError):
        filt('reap_due')({'items': []}, NOW)
    with pytest.raises(AnsibleFilterError):
        filt('reap_decide')([], [], MASTERS, NOW)


def test_status_shows_a_reaped_item_distinctly():
    table = filt('status_table')([{'number': 5, 'title': 't', 'state': 'open', 'status': 'Ready', 'reason': 'eligible',
                                   'attempts': 1, 'max_attempts': 3, 'last_marker': {'kind': 'reset', 'age_s': 5}}])
    assert 'reset (reaped)' in table.splitlines()[2]


def test_the_reaper_says_its_cycle_in_one_message():
    """One message a cycle (reap.yml): each held item with why, then what would be reset - or nothing of the resets
    when the cycle posts their markers."""
    reaped = {'held': [{'number': 6, 'unit': 'task-6', 'started_at': 'T6', 'why': 'not reaped: w2/a is blind'}],
              'reap': [{'number': 5, 'unit': 'task-5', 'text': 'no live unit anywhere'}]}
    assert filt('reap_said')(reaped, 'would be reset') == ['#6 (task-6, started T6): not reaped: w2/a is blind',
                                                           '#5: would be reset - no live unit anywhere']
    assert filt('reap_said')(reaped) == ['#6 (task-6, started T6): not reaped: w2/a is blind']
    assert filt('reap_said')({'held': [], 'reap': []}, 'would be reset') == []
    with pytest.raises(AnsibleFilterError):
        filt('reap_said')([], 'x')
