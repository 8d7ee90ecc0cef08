# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eligibility predicate and the attempt count (D1, D6, D8, D9)."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import (
    PRECEDENCE, REASONS, count_attempts, evaluate, live_start, orphaned, run_durations)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Blocker, Comment, Event, Item

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
NOW = T0 + dt.timedelta(hours=10)


def t(minutes):
    return T0 + dt.timedelta(minutes=minutes)


def mk(*steps, state='open', status='Ready', blockers=(), reopen_at=None):
    """Build an item from ('kind', minute[, fields]) marker steps and ('human', minute, text)."""
    comments = []
    for i, step in enumerate(steps):
        kind, minute = step[0], step[1]
        if kind == 'human':
            body = step[2]
        else:
            body = format_marker(kind, step[2] if len(step) > 2 else None)
        comments.append(Comment(id='c%d' % i, body=body, created_at=t(minute)))
    events = []
    for minute in ([reopen_at] if isinstance(reopen_at, (int, float)) else (reopen_at or [])):
        events.append(Event(kind='closed', at=t(minute - 0.5)))
        events.append(Event(kind='reopened', at=t(minute)))
    return Item(number=42, title='x', state=state, status=status, comments=comments, events=events,
                blockers=[Blocker(number=n, state=s) for n, s in blockers])


RETRY_LATER = {'not_before': NOW + dt.timedelta(minutes=5), 'step': 1}
RETRY_PAST = {'not_before': NOW - dt.timedelta(minutes=5), 'step': 1}

CASES = [
    # name, item, expected reason, expected attempts
    ('fresh item', mk(), 'eligible', 0),
    ('not ready', mk(status='Backlog'), 'not_ready', 0),
    ('ready compared case-insensitively', mk(status=' ready '), 'eligible', 0),
    ('closed, never run', mk(state='closed'), 'closed', 0),
    ('done: closed after success', mk(('start', 0), ('success', 30), state='closed'), 'done', 1),
    ('closed after a failure is closed, not done', mk(('start', 0), ('failure', 30), state='closed'), 'closed', 1),
    ('running', mk(('start', 0)), 'running', 1),
    ('D6 tombstone: success on an open item', mk(('start', 0), ('success', 30)), 'tombstone', 1),
    ('D6 reopen outranks success', mk(('start', 0), ('success', 30), reopen_at=60), 'eligible', 0),
    ('marker after the reopen stands', mk(('start', 0), ('success', 30), ('start', 90), ('success', 100), reopen_at=60),
     'tombstone', 1),
    ('left_open keeps it dispatchable', mk(('start', 0), ('success', 30), ('left_open', 31)), 'eligible', 1),
    ('D6 story: left_open with no glyph is invisible',
     mk(('start', 0), ('success', 30), ('human', 31, 'finished, deliberately left open; still dispatchable')), 'tombstone', 1),
    ('human comments never displace a marker', mk(('start', 0), ('human', 5, 'how is it going?')), 'running', 1),
    ('retry waiting', mk(('start', 0), ('retry', 1, RETRY_LATER)), 'retry_wait', 0),
    ('retry due', mk(('start', 0), ('retry', 1, RETRY_PAST)), 'eligible', 0),
    ('D5: retry with broken not_before is no evidence of a wait', mk(('start', 0), ('retry', 1, {'not_before': 'soon'})), 'eligible', 0),
    ('D5: retry with no fields', mk(('start', 0), ('retry', 1)), 'eligible', 0),
    ('failure, noop, stopped, reset all redispatchable',
     mk(('start', 0), ('failure', 1), ('start', 2), ('noop', 3)), 'eligible', 2),
    ('stopped is an attempt', mk(('start', 0), ('stopped', 1), ('start', 2), ('reset', 3)), 'eligible', 2),
    ('parked after three attempts', mk(('start', 0), ('failure', 1), ('start', 2), ('failure', 3), ('start', 4), ('noop', 5)),
     'parked', 3),
    ('D8: capacity deaths do not park the work',
     mk(('start', 0), ('capacity', 1), ('start', 2), ('capacity', 3), ('start', 4), ('capacity', 5), ('start', 6), ('failure', 7)),
     'eligible', 1),
    ('a reopen grants a fresh budget',
     mk(('start', 0), ('failure', 1), ('start', 2), ('failure', 3), ('start', 4), ('failure', 5), reopen_at=60), 'eligible', 0),
    ('blocked by an open blocker', mk(blockers=[(7, 'open')]), 'blocked', 0),
    ('D9: a closed blocker does not block', mk(blockers=[(7, 'closed')]), 'eligible', 0),
    ('D5: a blocker of unknown state does not block', mk(blockers=[(7, ''), (8, 'UNKNOWN')]), 'eligible', 0),
    ('blocker state compared case-insensitively', mk(blockers=[(7, 'OPEN')]), 'blocked', 0),
]


@pytest.mark.parametrize('name, item, reason, attempts', CASES, ids=[c[0] for c in CASES])
def test_evaluate(name, item, reason, attempts):
    verdict = evaluate(item, now=NOW)
    assert verdict.reason == reason
    assert verdict.eligible == (reason == 'eligible')
    assert verdict.attempts == attempts
    assert verdict.reason in REASONS


PRECEDENCE_CASES = [
    # several reasons hold; the first in PRECEDENCE is reported
    ('done beats everything', mk(('start', 0), ('success', 1), state='closed', status='Backlog', blockers=[(1, 'open')]), 'done'),
    ('closed beats running', mk(('start', 0), state='closed'), 'closed'),
    ('running beats parked', mk(('start', 0), ('failure', 1), ('start', 2), ('failure', 3), ('start', 4)), 'running'),
    ('running beats blocked and not_ready', mk(('start', 0), status='Backlog', blockers=[(1, 'open')]), 'running'),
    ('tombstone beats parked', mk(('start', 0), ('failure', 1), ('start', 2), ('failure', 3), ('start', 4), ('success', 5)),
     'tombstone'),
    ('tombstone beats blocked', mk(('start', 0), ('success', 1), blockers=[(1, 'open')]), 'tombstone'),
    ('retry_wait beats parked', mk(('start', 0), ('failure', 1), ('start', 2), ('failure', 3), ('start', 4), ('failure', 5),
                                   ('start', 6), ('retry', 7, RETRY_LATER)), 'retry_wait'),
    ('retry_wait beats blocked', mk(('start', 0), ('retry', 1, RETRY_LATER), blockers=[(1, 'open')]), 'retry_wait'),
    ('parked beats blocked', mk(('start', 0), ('noop', 1), ('start', 2), ('noop', 3), ('start', 4), ('noop', 5),
                                blockers=[(1, 'open')]), 'parked'),
    ('blocked beats not_ready', mk(status='Backlog', blockers=[(1, 'open')]), 'blocked'),
]


@pytest.mark.parametrize('name, item, reason', PRECEDENCE_CASES, ids=[c[0] for c in PRECEDENCE_CASES])
def test_precedence(name, item, reason):
    verdict = evaluate(item, now=NOW)
    assert verdict.reason == reason
    assert len(verdict.holds) >= 2
    assert verdict.holds == sorted(verdict.holds, key=PRECEDENCE.index)
    assert verdict.holds[0] == reason


def test_precedence_lists_every_reason_but_eligible():
    assert set(PRECEDENCE) == set(REASONS) - {'eligible'}


def test_verdict_fields():
    item = mk(('start', 0), ('retry', 1, RETRY_LATER), blockers=[(7, 'open'), (8, 'closed'), (9, 'open')])
    verdict = evaluate(item, now=NOW)
    assert verdict.open_blockers == [7, 9]
    assert verdict.not_before == RETRY_LATER['not_before']
    assert verdict.last_marker.kind == 'retry'
    assert not verdict.reopened


def test_reopen_reported_and_last_marker_kept():
    verdict = evaluate(mk(('start', 0), ('success', 30), reopen_at=60), now=NOW)
    assert verdict.reopened and verdict.last_marker.kind == 'success'


def test_reopen_tie_does_not_outrank():
    """On an exact tie the marker stands (a false 'done' stays visible; a false 'eligible' launches)."""
    verdict = evaluate(mk(('start', 0), ('success', 30), reopen_at=30), now=NOW)
    assert verdict.reason == 'tombstone'


def test_reopen_tie_start_is_running_and_counted():
    verdict = evaluate(mk(('start', 0), ('failure', 1), ('start', 10), reopen_at=10), now=NOW)
    assert verdict.reason == 'running' and verdict.attempts == 1


def test_reopen_outranks_a_start():
    assert evaluate(mk(('start', 0), reopen_at=10), now=NOW).reason == 'eligible'


def test_retry_wait_clears_by_the_clock():
    item = mk(('start', 0), ('retry', 1, RETRY_LATER))
    assert evaluate(item, now=NOW).reason == 'retry_wait'
    assert evaluate(item, now=RETRY_LATER['not_before']).reason == 'eligible'


@pytest.mark.parametrize('max_attempts, reason', [(None, 'eligible'), (1, 'parked'), (2, 'parked'), (3, 'eligible')])
def test_max_attempts(max_attempts, reason):
    item = mk(('start', 0), ('failure', 1), ('start', 2), ('failure', 3))
    assert evaluate(item, now=NOW, max_attempts=max_attempts).reason == reason


@pytest.mark.parametrize('bad', [0, -1, True, 'three'])
def test_max_attempts_validated(bad):
    with pytest.raises(ValueError):
        evaluate(mk(), now=NOW, max_attempts=bad)


def test_now_required():
    with pytest.raises(ValueError):
        evaluate(mk(), now=None)


@pytest.mark.parametrize('ready, status, reason', [(None, 'Anything', 'eligible'), ('', '', 'eligible'),
                                                   ('Todo', 'Todo', 'eligible'), ('Todo', 'Ready', 'not_ready')])
def test_ready_value(ready, status, reason):
    assert evaluate(mk(status=status), now=NOW, ready=ready).reason == reason


@pytest.mark.parametrize('kinds, expected', [
    ([], 0),
    (['start'], 1),
    (['start', 'failure'], 1),
    (['start', 'capacity'], 0),
    (['start', 'retry'], 0),
    (['start', 'stopped', 'start', 'reset', 'start', 'noop'], 3),
    (['start', 'start', 'capacity'], 1),            # duplicate launch: first start's run did not end in capacity
    (['capacity', 'start', 'failure'], 1),          # a capacity marker BEFORE a start excuses nothing
    (['start', 'capacity', 'start', 'capacity', 'start'], 1),
    (['start', 'left_open', 'start', 'success'], 2),
])
def test_count_attempts(kinds, expected):
    item = mk(*[(k, i) for i, k in enumerate(kinds)])
    assert count_attempts(markers_of(item)) == expected


def test_count_attempts_seed_rule_only():
    item = mk(('start', 0), ('retry', 1), ('start', 2), ('capacity', 3))
    assert count_attempts(markers_of(item), uncounted=('capacity',)) == 1


def test_d8_story_fleet_wide_outage_does_not_park():
    """D8: twenty runs died inside 34 seconds on one dark worker; two more workers went dark on the
    same work. Without the exclusion a fleet-wide outage burns three attempts per item in minutes."""
    steps = []
    for i in range(20):
        steps += [('start', i * 0.02), ('capacity', i * 0.02 + 0.01)]
    verdict = evaluate(mk(*steps), now=NOW)
    assert verdict.attempts == 0 and verdict.reason == 'eligible'


def test_d1_attempts_are_derived_not_stored():
    """The same item evaluated twice gives the same count; adding a marker changes it."""
    item = mk(('start', 0), ('failure', 1))
    assert evaluate(item, now=NOW).attempts == evaluate(item, now=NOW).attempts == 1
    item.comments.append(Comment(id='n', body=format_marker('start'), created_at=t(2)))
    assert evaluate(item, now=NOW).attempts == 2


def test_dict_items_accepted():
    item = {'state': 'open', 'status': 'Ready', 'comments': [], 'events': [], 'blockers': [{'number': 3, 'state': 'open'}]}
    verdict = evaluate(item, now=NOW)
    assert verdict.reason == 'blocked' and verdict.open_blockers == [3]


def test_run_durations():
    item = mk(('start', 0), ('failure', 10), ('start', 20), ('capacity', 21), ('start', 30))
    assert run_durations(markers_of(item)) == [600.0, 60.0]


@pytest.mark.parametrize('steps, live, minutes_later, reap', [
    ([('start', 0)], False, 121, True),
    ([('start', 0)], False, 119, False),          # the clock stops a blinked probe from reaping a live run
    ([('start', 0)], True, 600, False),           # live: never
    ([('start', 0)], None, 600, False),           # probe incomplete: no evidence (D5)
    ([('start', 0), ('failure', 1)], False, 600, False),
    ([], False, 600, False),
])
def test_orphaned(steps, live, minutes_later, reap):
    item = mk(*steps)
    got, why = orphaned(markers_of(item), now=t(minutes_later), live=live, threshold=dt.timedelta(hours=2))
    assert got is reap and why


def test_orphaned_threshold_in_seconds():
    item = mk(('start', 0))
    assert orphaned(markers_of(item), now=t(3), live=False, threshold=120)[0] is True


@pytest.mark.parametrize('item, run', [
    (mk(('start', 0, {'run': 'r1'})), 'r1'),
    (mk(('start', 0, {'run': 'r1'}), ('human', 5, 'how is it going?')), 'r1'),
    (mk(('start', 0, {'run': 'r1'}), ('noop', 3)), None),
    (mk(('start', 0, {'run': 'r1'}), reopen_at=60), None),
    (mk(), None),
], ids=['a start is live', 'a human comment does not end it', 'a close-out ends it', 'a reopen after it outranks it',
        'no marker'])
def test_live_start_is_the_start_that_makes_an_item_running(item, run):
    """What the runner reads before its own start (D4 at the resource): the same start that reads ``running``."""
    found = live_start(item)
    assert (found.fields.get('run') if found is not None else None) == run
    assert (found is not None) == (evaluate(item, now=NOW, ready=None, max_attempts=None).reason == 'running')


def test_a_retry_waits_its_delay_on_the_board_s_clock_whatever_the_runner_s_clock_wrote():
    """The retry marker was posted at NOW - 1 min (the board's time) with a 5 min delay. A runner 10 min behind
    wrote not_before 10 min early, one 10 min ahead 10 min late: both wait until NOW + 4 min by the board."""
    posted = (NOW - t(0)).total_seconds() / 60 - 1
    waits = []
    for runner_skew in (-10, 0, 10):
        wrote = NOW - dt.timedelta(minutes=1) + dt.timedelta(minutes=5 + runner_skew)
        item = mk(('start', posted - 2), ('retry', posted, {'not_before': wrote, 'step': 1, 'delay_s': 300}))
        waits.append((runner_skew, evaluate(item, now=NOW).reason, evaluate(item, now=NOW + dt.timedelta(minutes=4, seconds=1)).reason,
                      evaluate(item, now=NOW).not_before))
    assert waits == [(skew, 'retry_wait', 'eligible', NOW + dt.timedelta(minutes=4)) for skew in (-10, 0, 10)], waits
    # a marker that states no delay is read by its not_before, as before
    item = mk(('start', 0), ('retry', 1, RETRY_LATER))
    assert evaluate(item, now=NOW).not_before == RETRY_LATER['not_before']
