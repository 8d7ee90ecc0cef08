# -*- coding: utf-8 -*-
"""The reaper's decision (D5, D14, D20): _core/dispatch/reaper.py on board_info-shaped items and real survey output."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import survey
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.reaper import DEFAULT_FLOOR_S, decide, due, threshold

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
MASTERS = [{'worker': 'w1', 'master': 'a'}, {'worker': 'w2', 'master': 'a'}]


def iso(seconds_ago):
    return (NOW - dt.timedelta(seconds=seconds_ago)).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def item(number, kind='start', age=4000, reason=None, durations=()):
    return {'number': number, 'repo': '', 'reason': reason or ('running' if kind == 'start' else 'eligible'),
            'last_marker': {'kind': kind, 'at': iso(age), 'fields': {}}, 'run_durations': list(durations)}


def probe(worker, master, units=(), status='ok'):
    return {'target': {'worker': worker, 'master': master}, 'status': status, 'msg': 'boom' if status != 'ok' else '',
            'units': [{'name': u} for u in units]}


def test_the_threshold_is_twice_the_longest_run_on_the_board_and_says_so():
    limit = threshold([item(1, durations=[100, 1200]), item(2, durations=[900])], floor=60)
    assert limit['seconds'] == 2400 and limit['runs'] == 3 and limit['longest_s'] == 1200
    assert '2x the longest of 3 runs on this board (1200s)' in limit['source']


@pytest.mark.parametrize('durations, why', [([], 'no finished run on this board yet'), ([10], 'is only 20s')])
def test_a_young_board_gets_the_floor(durations, why):
    limit = threshold([item(1, durations=durations)], floor=DEFAULT_FLOOR_S)
    assert limit['seconds'] == DEFAULT_FLOOR_S and 'dispatch_reap_floor=1800s' in limit['source'] and why in limit['source']


def test_only_starts_older_than_the_threshold_are_due():
    limit = threshold([], floor=600)
    items = [item(1, age=601), item(2, age=599), item(3, kind='failure', age=9000), item(4, age=9000, reason='closed')]
    assert [d['number'] for d in due(items, now=NOW, limit=limit)] == [1]
    assert due(items, now=NOW, limit=limit)[0]['unit'] == 'task-1'


def _decide(probes, leases=None, masters=None):
    masters = MASTERS if masters is None else masters
    limit = threshold([], floor=600)
    return decide(due([item(7, age=4000)], now=NOW, limit=limit), survey(probes), masters, now=NOW, limit=limit,
                  leases=leases if leases is not None else [{'name': 'task-7', 'acquired': True}])


def test_no_live_unit_on_every_answering_master_reaps_and_names_why():
    out = _decide([probe('w1', 'a'), probe('w2', 'a', ['task-8'])])
    assert [r['number'] for r in out['reap']] == [7] and out['held'] == []
    text, fields = out['reap'][0]['text'], out['reap'][0]['fields']
    assert 'no live task-7 on any of the 2 masters probed' in text and 'started at ' + iso(4000) in text
    assert 'threshold 600s, from the floor dispatch_reap_floor=600s' in text
    assert fields['threshold_s'] == 600 and fields['masters_probed'] == 2 and fields['reason'] == 'orphaned'


@pytest.mark.parametrize('probes', [
    [probe('w1', 'a'), probe('w2', 'a', status='unreachable')],     # a blind master: unknown never reaps
    [probe('w1', 'a'), probe('w2', 'a', status='failed')],
    [probe('w1', 'a')],                                               # a master that was not asked at all
])
def test_a_blind_or_missing_master_holds_the_reset(probes):
    out = _decide(probes)
    assert out['reap'] == [] and 'blind is not dead' in out['held'][0]['why'] and 'w2/a' in out['held'][0]['why']
    assert out['held'][0]['blind'] == ['w2/a']   # the announcer's input: who did not answer (announce.yml)


def test_a_live_unit_anywhere_holds_the_reset():
    out = _decide([probe('w1', 'a'), probe('w2', 'a', ['task-7'])])
    assert out['reap'] == [] and 'a live unit runs this item' in out['held'][0]['why']


def test_a_spooled_close_out_holds_the_reset():
    """D12: the run ended and its runner could not post the outcome; it waits in w2/a's spool. A reset would
    replace the true outcome with a 🧹 one."""
    waiting = probe('w2', 'a')
    waiting['spooled'] = [{'unit': 'task-7', 'item': 7, 'repo': '', 'run': 'r1', 'kind': 'noop', 'spooled_at': iso(60)}]
    out = _decide([probe('w1', 'a'), waiting])
    assert out['reap'] == [] and "close-out (noop) is spooled on w2/a" in out['held'][0]['why'], out


def test_a_lease_another_dispatcher_holds_holds_the_reset():
    out = _decide([probe('w1', 'a'), probe('w2', 'a')], leases=[{'name': 'task-7', 'acquired': False, 'owner': 'other'}])
    assert out['reap'] == [] and 'held by other' in out['held'][0]['why']


def test_no_master_is_no_evidence():
    out = _decide([], masters=[])
    assert out['reap'] == [] and 'no master' in out['held'][0]['why']


def test_a_reset_item_is_eligible_again_and_the_reaped_run_keeps_its_attempt():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
    comments = [{'body': format_marker('start', {'unit': 'task-7'}), 'at': iso(4000)},
                {'body': format_marker('reset', {'unit': 'task-7'}), 'at': iso(10)}]
    verdict = evaluate({'number': 7, 'state': 'open', 'status': 'Ready', 'comments': comments}, now=NOW)
    assert verdict.eligible and verdict.reason == 'eligible' and verdict.attempts == 1


def test_a_reaped_run_is_not_a_run_length_so_resets_never_raise_the_threshold():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import run_durations
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import Marker

    def at(seconds):
        return NOW - dt.timedelta(seconds=seconds)
    markers = [Marker('start', at(5000)), Marker('stopped', at(4900)), Marker('start', at(4000)), Marker('reset', at(100))]
    assert run_durations(markers) == [100.0, 3900.0]
    assert run_durations(markers, exclude=('reset',)) == [100.0]
