# -*- coding: utf-8 -*-
"""Placement by headroom with no concurrency cap (D13), dark masters skipped (D8)."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import place


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


# -- the guarded dispatch path (D4, D5, D6, D8, D13) -------------------------------------------

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import (  # noqa: E402
    batches, dark_why, gate_leases, gate_place, gate_probe, name_candidates, repairs, survey,
)


def named(*numbers):
    return name_candidates(cand(*numbers))['admitted']


def probe(worker, master, *units, **kw):
    """An answer record of a per-master call (the action plugin builds these from registered results)."""
    status = 'unreachable' if kw.pop('unreachable', False) else 'failed' if kw.pop('failed', False) else 'ok'
    res = {'target': {'worker': worker, 'master': master}, 'status': status, 'msg': kw.pop('msg', ''), 'units': list(units)}
    res.update(kw)
    return res


def unit(number, start_us, wall_us, inv):
    return {'name': 'task-%d' % number, 'item': {'number': number, 'repo': ''}, 'start_us': start_us,
            'start_wall_us': wall_us, 'invocation_id': inv, 'started_at': 'T%d' % wall_us}


def test_names_are_the_unit_names_and_a_bad_identity_is_refused():
    out = name_candidates([{'number': 42}, {'number': 7, 'repo': 'Acme/Widgets'}, {'number': 0}, {'number': 9, 'repo': 'noslash'}])
    assert [c['unit'] for c in out['admitted']] == ['task-42', 'task-acme-widgets-7']
    assert [c['lease_name'] for c in out['admitted']] == ['task-42', 'task-acme-widgets-7']
    named_b = name_candidates([{'number': 42}], board_id='pg-fleet-1a2b3c4d')['admitted']
    assert named_b[0]['unit'] == 'task-42' and named_b[0]['lease_name'] == 'task-42@pg-fleet-1a2b3c4d'
    # the lease gate matches the lease name, not the bare unit name
    held = gate_leases(named_b, [{'name': 'task-42', 'acquired': False, 'holder': 'other board'},
                                 {'name': 'task-42@pg-fleet-1a2b3c4d', 'acquired': True, 'token': 1}])
    assert [c['number'] for c in held['admitted']] == [42] and held['refused'] == []
    assert [(r['number'], r['stage']) for r in out['refused']] == [(0, 'name'), (9, 'name')]


LEASE_CASES = [
    # (name, leases, admitted, refused stage, warned)
    ('acquired', [{'name': 'task-1', 'acquired': True, 'degraded': False, 'token': 3}], [1], [], False),
    # D4: a second dispatcher holding the item is a refusal, not an error
    ('held by another', [{'name': 'task-1', 'acquired': False, 'holder': 'sweep-b', 'why': 'held by sweep-b'}], [], ['lease'], False),
    # D5: an unwritable store fails open; the mutex lookup says so, the guard does not say it again
    ('degraded store', [{'name': 'task-1', 'acquired': True, 'degraded': True, 'why': 'EACCES'}], [1], [], False),
    ('no answer at all', [], [1], [], True),
]


@pytest.mark.parametrize('name,leases,admitted,refused,warned', LEASE_CASES, ids=[c[0] for c in LEASE_CASES])
def test_gate_leases(name, leases, admitted, refused, warned):
    out = gate_leases(named(1), leases)
    assert [c['number'] for c in out['admitted']] == admitted
    assert [r['stage'] for r in out['refused']] == refused
    assert bool(out['warnings']) is warned


def test_lease_disabled_admits_everything_and_says_so():
    """D15: the flag runs the production path minus the lease; never silently."""
    out = gate_leases(named(1, 2), [{'name': 'task-1', 'acquired': False}], enabled=False)
    assert [c['number'] for c in out['admitted']] == [1, 2] and out['refused'] == []
    assert 'disabled' in out['warnings'][0]


def test_probe_refuses_an_item_live_anywhere_and_admits_the_rest():
    """D4: the probe inside the lock sees the winner's unit on any worker and any master."""
    s = survey([probe('w1', 'a', unit(1, 5, 100, 'i1')), probe('w2', 'b')])
    out = gate_probe(named(1, 2), s)
    assert [c['number'] for c in out['admitted']] == [2]
    assert out['refused'][0]['stage'] == 'probe' and 'running elsewhere' in out['refused'][0]['why']
    assert 'w1/a' in out['refused'][0]['why']


def test_a_failed_probe_is_a_blind_spot_not_a_refusal():
    """D5: a refusal needs positive evidence; the blind master is warned about and gets no work."""
    s = survey([probe('w1', 'a', failed=True, msg='Failed to connect to bus'), probe('w2', 'b', unreachable=True)])
    out = gate_probe(named(1), s)
    assert [c['number'] for c in out['admitted']] == [1] and out['refused'] == []
    assert len(out['warnings']) == 2 and 'bus' in out['warnings'][0]
    placed = gate_place(out['admitted'], [{'worker': 'w1', 'master': 'a'}, {'worker': 'w2', 'master': 'b'}],
                        [probe('w1', 'a', headroom={}), probe('w2', 'b', headroom={})], s)
    assert placed['admitted'] == [] and placed['refused'][0]['stage'] == 'place'


def test_duplicates_keep_the_oldest_across_workers_by_wall_clock():
    """D4: oldest wins; across workers the monotonic stamps do not compare (each counts from its own boot)."""
    older_wall_but_bigger_monotonic = unit(7, 9000000, 100, 'old')
    younger = unit(7, 10, 200, 'young')
    s = survey([probe('w1', 'a', younger), probe('w2', 'b', older_wall_but_bigger_monotonic), probe('w3', 'c', unit(8, 1, 1, 'x'))])
    [dup] = s['duplicates']
    assert dup['unit'] == 'task-7' and dup['keep']['invocation_id'] == 'old'
    assert [u['invocation_id'] for u in dup['stop']] == ['young']
    [fix] = repairs(s, owner='sweep-1')
    assert (fix['worker'], fix['master'], fix['invocation_id']) == ('w1', 'a', 'young')
    # D12: the note says the stop is deliberate and which run was kept, so no failure is posted about the work
    assert fix['note']['reason'] == 'duplicate' and fix['note']['kept']['invocation_id'] == 'old'
    assert fix['note']['by'] == 'sweep-1'


def test_the_seed_story_two_kills_never_land_on_the_survivor():
    """D4 aftermath: both hand kills landed on the surviving run. Repair stops exactly the others, each once."""
    units = [unit(5, 1, 300, 'c'), unit(5, 1, 100, 'a'), unit(5, 1, 200, 'b')]
    s = survey([probe('w%d' % i, 'm', u) for i, u in enumerate(units)])
    stops = [r['invocation_id'] for r in repairs(s)]
    assert sorted(stops) == ['b', 'c'] and 'a' not in stops


@pytest.mark.parametrize('source,reset_at,words', [
    ('rate_limit', '2026-11-30T17:00:00Z', 'until 2026-11-30T17:00:00Z'),
    ('rate_limit', None, 'until unknown'),
    ('revoked', None, 'until a human clears'),
    ('update_failed', None, 'reinstalls it'),
])
def test_dark_words_name_the_kind_and_never_invent_a_time(source, reset_at, words):
    """D8/D20: a rate limit clears on a clock, a revocation never does; no stated time is 'unknown'."""
    assert words in dark_why(source, reset_at)


@pytest.mark.parametrize('source,reset_at,words', [
    ('rate_limit', '2026-11-30T17:00:00Z', 'until 2026-11-30T17:00:00Z'),
    ('revoked', None, 'until a human clears it'),
    ('rate_limit', None, 'no reset stated'),
    ('agent_missing', 'unknown', 'no reset stated'),
])
def test_dark_until_is_short_and_never_reads_until_unknown(source, reset_at, words):
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import dark_until
    assert words in dark_until(source, reset_at) and 'unknown' not in dark_until(source, reset_at)


def test_place_skips_dark_masters_and_uses_the_probed_counts():
    s = survey([probe('w1', 'a'), probe('w2', 'b', unit(9, 1, 1, 'z')), probe('w3', 'c')])
    capacity = [probe('w1', 'a', dark=True, source='rate_limit', reset_at='2026-11-30T17:00:00Z', headroom={'live_runs': 0}),
                probe('w2', 'b', dark=False, headroom={'live_runs': 0}),
                probe('w3', 'c', dark=True, source='revoked', reset_at=None, headroom={})]
    out = gate_place(named(1, 2), [{'worker': w, 'master': m} for w, m in (('w1', 'a'), ('w2', 'b'), ('w3', 'c'))], capacity, s)
    # D13: no cap -- both go to the only usable master even though it already runs one
    assert [(c['number'], c['worker']) for c in out['admitted']] == [(1, 'w2'), (2, 'w2')]
    assert [(d['master'], d['reset_at']) for d in out['plan']['dark']] == [('a', '2026-11-30T17:00:00Z'), ('c', 'unknown')]
    assert any('revoked' in w for w in out['warnings']) and any('rate-limited' in w for w in out['warnings'])


def test_batches_one_launch_call_per_master_and_a_failed_workspace_launches_nothing():
    placed = [dict(c, worker=w, master=m, lease={'token': 4}) for c, (w, m) in
              zip(named(1, 2, 3), [('w1', 'a'), ('w2', 'b'), ('w1', 'a')])]
    ws = [{'target': c, 'status': 'ok', 'msg': '', 'path': '/ws/%s' % c['unit']} for c in placed[:2]]
    ws.append({'target': placed[2], 'status': 'failed', 'msg': 'not a git repository'})
    out = batches(placed, ws, command=['run', '--item', '{number}', '{unit}'], owner='o1')
    assert [(b['worker'], b['master'], [i['number'] for i in b['launch']]) for b in out['batches']] == [('w1', 'a', [1]), ('w2', 'b', [2])]
    first = out['batches'][0]['launch'][0]
    assert first['command'] == ['run', '--item', '1', 'task-1'] and first['workdir'] == '/ws/task-1'
    assert first['setenv']['FLEET_LEASE_FENCE'] == '4' and first['setenv']['FLEET_DISPATCH_OWNER'] == 'o1'
    assert [(r['number'], r['stage']) for r in out['refused']] == [(3, 'workspace')]
