# -*- coding: utf-8 -*-
"""Placement by headroom with no concurrency cap (D13), dark masters skipped (D8)."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._plan import place


def cand(*numbers):
    return [{'number': n, 'title': 't%d' % n} for n in numbers]


def master(worker, name, live=0, load=0.0, cpus=2, mem=1000, dark=False, **kw):
    return dict(worker=worker, master=name, dark=dark,
                headroom={'live_runs': live, 'load1': load, 'cpus': cpus, 'mem_available_kb': mem}, **kw)


def where(plan):
    return [(a['number'], a['worker'], a['master']) for a in plan['assignments']]


CASES = [
    ('fewest live runs first', cand(1), [master('w1', 'a', live=2), master('w2', 'b', live=1)], [(1, 'w2', 'b')]),
    ('then lowest load per cpu', cand(1), [master('w1', 'a', load=4.0, cpus=8), master('w2', 'b', load=1.0, cpus=1)],
     [(1, 'w1', 'a')]),
    ('then most memory', cand(1), [master('w1', 'a', mem=10), master('w2', 'b', mem=20)], [(1, 'w2', 'b')]),
    ('a batch spreads: each placement is one more live run', cand(1, 2, 3),
     [master('w1', 'a'), master('w2', 'b')], [(1, 'w1', 'a'), (2, 'w2', 'b'), (3, 'w1', 'a')]),
    # D13: the seed's caps held 30 of 32 dispatchable items with three workers idle
    ('no cap: a busy master still takes work', cand(1, 2), [master('w1', 'a', live=40)],
     [(1, 'w1', 'a'), (2, 'w1', 'a')]),
    ('unknown headroom counts as idle (D5)', cand(1), [dict(worker='w1', master='a'), master('w2', 'b', live=1)],
     [(1, 'w1', 'a')]),
]


@pytest.mark.parametrize('name,cands,masters,expected', CASES, ids=[c[0] for c in CASES])
def test_place(name, cands, masters, expected):
    assert where(place(cands, masters)) == expected


def test_dark_masters_get_nothing_and_say_until_when():
    plan = place(cand(1, 2), [
        master('w1', 'a', dark=True, source='rate_limit', reset_at='2026-11-30T17:00:00Z'),
        master('w1', 'b', dark=True, source='revoked', reset_at=None),
        master('w2', 'c', live=5),
    ])
    assert where(plan) == [(1, 'w2', 'c'), (2, 'w2', 'c')]
    assert [(d['master'], d['source'], d['reset_at']) for d in plan['dark']] == [
        ('a', 'rate_limit', '2026-11-30T17:00:00Z'), ('b', 'revoked', 'unknown')]


def test_every_master_dark_holds_every_candidate():
    plan = place(cand(1), [master('w1', 'a', dark=True, source='revoked')])
    assert plan['assignments'] == [] and plan['unplaced'][0]['number'] == 1
    assert 'dark' in plan['unplaced'][0]['why']


def test_input_is_not_mutated():
    masters = [master('w1', 'a')]
    place(cand(1, 2), masters)
    assert masters[0]['headroom']['live_runs'] == 0
