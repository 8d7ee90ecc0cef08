# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
""""Why not?" (_core/dispatch/explain.py): every hold, markers with authors, which starts counted, placement."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Blocker, Comment, Event, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
NOW = T0 + dt.timedelta(hours=10)


def at(minutes):
    return T0 + dt.timedelta(minutes=minutes)


def item(*steps, status='Ready', state='open', blockers=(), events=()):
    comments = [Comment(id='c%d' % i, body=format_marker(kind, fields) if kind != 'human' else fields,
                        created_at=at(minute), author=author)
                for i, (kind, minute, author, fields) in enumerate(steps)]
    return Item(number=7, title='t', state=state, status=status, comments=comments, events=list(events),
                blockers=[Blocker(number=n, state=s) for n, s in blockers])


def test_every_hold_is_reported_not_only_the_first():
    it = item(('start', 1, 'bot', {'unit': 'task-7'}), ('failure', 2, 'bot', {}),
              ('start', 3, 'bot', {}), ('failure', 4, 'bot', {}),
              ('start', 5, 'bot', {}), ('failure', 6, 'bot', {}),
              status='Backlog', blockers=[(3, 'open'), (4, 'closed')])
    ex = explain(it, now=NOW, max_attempts=3)
    assert [h['reason'] for h in ex['holds']] == ['parked', 'blocked', 'not_ready']
    assert ex['reason'] == 'parked' and not ex['eligible']
    assert '#3' in ex['holds'][1]['why'] and '#4' not in ex['holds'][1]['why']
    assert ex['blockers'] == [{'number': 3, 'repo': '', 'state': 'open', 'blocks': True},
                              {'number': 4, 'repo': '', 'state': 'closed', 'blocks': False}]
    assert ex['placement']['placed'] is False and 'parked' in ex['placement']['why']
    # board_info returns the same holds
    assessed = assess([it], now=NOW, max_attempts=3)[0]
    assert assessed['holds'] == ['parked', 'blocked', 'not_ready'] and assessed['reopened'] is False


def test_markers_in_order_with_authors_and_skipped_starts():
    it = item(('human', 0, 'alice', 'please look'),
              ('start', 1, 'fleet-bot', {'unit': 'task-7', 'host': 'w1', 'master': 'agent1'}),
              ('capacity', 2, 'fleet-bot', {'source': 'rate_limit'}),
              ('start', 3, 'fleet-bot', {}), ('retry', 4, 'fleet-bot', {'not_before': '2026-11-30T12:30:00Z'}),
              ('start', 40, 'other-bot', {}), ('noop', 41, 'other-bot', {'unit': 'task-7', 'host': 'w2', 'master': 'a2'}))
    ex = explain(it, now=NOW, max_attempts=3)
    assert [(m['kind'], m['author']) for m in ex['markers']] == [
        ('start', 'fleet-bot'), ('capacity', 'fleet-bot'), ('start', 'fleet-bot'), ('retry', 'fleet-bot'),
        ('start', 'other-bot'), ('noop', 'other-bot')]
    assert [(s['counted'], s['ending']) for s in ex['starts']] == [(False, 'capacity'), (False, 'retry'), (True, 'noop')]
    assert ex['attempts'] == 1 == evaluate(it, now=NOW).attempts
    assert ex['last_run']['kind'] == 'noop' and 'w2 as a2' in ex['last_run']['classify']
    assert 'runs/task-7/capture.log' in ex['last_run']['classify']
    text = '\n'.join(explain_lines(ex))
    assert 'skipped' in text and 'capacity marker' in text


def test_a_reopen_restarts_the_count_and_is_said():
    it = item(('start', 1, 'bot', {}), ('failure', 2, 'bot', {}), ('start', 3, 'bot', {}), ('success', 4, 'bot', {}),
              events=[Event(kind='closed', at=at(4)), Event(kind='reopened', at=at(10))])
    ex = explain(it, now=NOW)
    assert ex['reopened'] is True and ex['eligible'] and ex['holds'] == []
    assert all(not s['counted'] and 'reopen' in s['why'] for s in ex['starts'])
    assert ex['attempts'] == 0


def test_placement_names_the_master_with_most_headroom_and_leaves_dark_out():
    it = item()
    masters = [{'worker': 'w1', 'master': 'a', 'dark': False, 'headroom': {'live_runs': 3}},
               {'worker': 'w1', 'master': 'b', 'dark': False, 'headroom': {'live_runs': 1}},
               {'worker': 'w2', 'master': 'c', 'dark': True, 'source': 'revoked'}]
    ex = explain(it, now=NOW, masters=masters)
    assert ex['placement']['placed'] and (ex['placement']['worker'], ex['placement']['master']) == ('w1', 'b')
    assert [d['master'] for d in ex['placement']['dark']] == ['c']
    none = explain(it, now=NOW, masters=[dict(masters[2])])
    assert none['placement']['placed'] is False and 'no usable master' in none['placement']['why']
    unknown = explain(it, now=NOW)
    assert unknown['placement']['placed'] is False and 'no masters' in unknown['placement']['why']
