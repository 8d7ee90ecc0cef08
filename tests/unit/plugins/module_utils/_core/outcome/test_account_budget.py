# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An agent account's daily budget: its runs' stated spend today (UTC), and the capacity source ``budget`` that
darkens every master of the account until the next day (D8: no marker, no attempt)."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.cost import spend_by_account_day
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess, batches, gate_place
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.account_budget import (
    ACCOUNT_ENV, account_days, account_spend, darken, next_day)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import Budget

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 12, 6, 15, 0, tzinfo=UTC)


def item(number, *runs, status='Ready'):
    """Each run: (account or None, hours before NOW it closed, tokens, cost_usd or None)."""
    comments = []
    for i, (account, hours_ago, tokens, cost) in enumerate(runs):
        fields = {'unit': 'task-%d' % number, 'tokens': tokens}
        if account:
            fields['account'] = account
        if cost is not None:
            fields['cost_usd'] = cost
        at = NOW - dt.timedelta(hours=hours_ago)
        comments.append(Comment(id='s%d' % i, body=format_marker('start', {}), created_at=at - dt.timedelta(minutes=5)))
        comments.append(Comment(id='e%d' % i, body=format_marker('noop', fields), created_at=at))
    return Item(number=number, title='t%d' % number, state='open', status=status, comments=comments)


def board():
    # acct-a: 3000 today ($0.30 on one of two runs), 9000 yesterday (16 h before 15:00 is 23:00 the day before)
    return assess([item(1, ('acct-a', 1, 1000, 0.3), ('acct-a', 16, 9000, None)),
                   item(2, ('acct-a', 2, 2000, None), ('acct-b', 3, 500, 0.05), (None, 1, 99999, None)),
                   item(3)], now=NOW)


def masters():
    head = {'live_runs': 0, 'load1': 0.0, 'cpus': 2, 'mem_available_kb': 1000}
    return [{'worker': 'w1', 'master': 'a1', 'account': 'acct-a', 'dark': False, 'headroom': dict(head)},
            {'worker': 'w2', 'master': 'a2', 'account': 'acct-a', 'dark': False, 'headroom': dict(head)},
            {'worker': 'w2', 'master': 'b1', 'account': 'acct-b', 'dark': False, 'headroom': dict(head, live_runs=3)}]


def test_spend_by_account_and_utc_day_from_the_close_outs():
    rows = spend_by_account_day(markers_of(item(1, ('acct-a', 1, 1000, 0.3), ('acct-a', 16, 9000, None), (None, 1, 5, None))))
    assert rows == [{'account': 'acct-a', 'day': '2026-12-05', 'runs': 1, 'priced_runs': 0, 'tokens': 9000, 'cost_usd': None},
                    {'account': 'acct-a', 'day': '2026-12-06', 'runs': 1, 'priced_runs': 1, 'tokens': 1000, 'cost_usd': 0.3}]


def test_account_spend_today_sums_every_item_and_never_invents_a_cost():
    spend = account_spend(board(), NOW)
    assert spend == {'acct-a': {'runs': 2, 'priced_runs': 1, 'tokens': 3000, 'cost_usd': 0.3},
                     'acct-b': {'runs': 1, 'priced_runs': 1, 'tokens': 500, 'cost_usd': 0.05}}


def test_an_account_over_its_daily_budget_is_dark_on_every_master_until_the_next_day():
    out = darken(masters(), board(), Budget(tokens=3000), NOW)
    dark = dict(('%s/%s' % (m['worker'], m['master']), m) for m in out if m.get('dark'))
    assert sorted(dark) == ['w1/a1', 'w2/a2']
    assert dark['w1/a1']['source'] == 'budget' and dark['w1/a1']['reset_at'].startswith('2026-12-07T00:00:00')
    assert 'account acct-a spent 3000 tokens today over 2 run(s) of its daily budget 3000 tokens' in dark['w1/a1']['budget_why']
    assert darken(masters(), board(), Budget(tokens=3001), NOW) == masters()
    assert darken(masters(), board(), Budget(), NOW) == masters()
    # a USD limit counts only the runs that stated a cost
    assert [m['master'] for m in darken(masters(), board(), Budget(usd=0.3), NOW) if m.get('dark')] == ['a1', 'a2']
    assert not any(m.get('dark') for m in darken(masters(), board(), Budget(usd=0.31), NOW))


def test_a_master_already_dark_keeps_its_own_source_and_reset():
    ms = masters()
    ms[0].update(dark=True, source='revoked', reset_at=None)
    out = darken(ms, board(), Budget(tokens=3000), NOW)
    assert (out[0]['source'], out[1]['source']) == ('revoked', 'budget')


def test_next_day_is_the_utc_day_boundary():
    assert next_day(dt.datetime(2026, 12, 31, 23, 59, tzinfo=UTC)) == dt.datetime(2027, 1, 1, tzinfo=UTC)
    assert next_day(dt.datetime(2026, 12, 6, 0, 0, tzinfo=UTC)) == dt.datetime(2026, 12, 7, tzinfo=UTC)


def test_placement_skips_the_spent_account_and_the_launch_names_the_account():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import name_candidates, candidates
    items = board()
    cands = name_candidates(candidates(items))['admitted']
    capacity = [{'target': {'worker': m['worker'], 'master': m['master']}, 'status': 'ok', 'msg': '', 'dark': False,
                 'headroom': m['headroom']} for m in masters()]
    out = gate_place(cands, masters(), capacity, items=items, now=NOW, account_budget=Budget(tokens=3000))
    assert {(c['worker'], c['master'], c['account']) for c in out['admitted']} == {('w2', 'b1', 'acct-b')}
    assert [(d['master'], d['source']) for d in out['plan']['dark']] == [('a1', 'budget'), ('a2', 'budget')]
    assert any('daily budget' in w and 'until 2026-12-07T00:00:00' in w for w in out['warnings'])
    env = batches(out['admitted'])['batches'][0]['launch'][0]['setenv']
    assert env[ACCOUNT_ENV] == 'acct-b'
    # without the budget the emptiest master of acct-a takes work
    out = gate_place(cands, masters(), capacity, items=items, now=NOW)
    assert {c['account'] for c in out['admitted']} == {'acct-a'}


def test_account_days_newest_first_with_the_limit_each_day_reached():
    rows = account_days(board(), NOW, Budget(tokens=2500))
    assert [(r['day'], r['account'], r['tokens'], r['cost_usd'], r['limit'], r['today'], r['reset_at']) for r in rows] == [
        ('2026-12-06', 'acct-a', 3000, 0.3, 'tokens', True, '2026-12-07T00:00:00.000000Z'),
        ('2026-12-06', 'acct-b', 500, 0.05, None, True, None),
        ('2026-12-05', 'acct-a', 9000, None, 'tokens', False, None)]   # a past day over its budget darkens nothing now
    assert rows[0]['runs'] == 2 and rows[0]['priced_runs'] == 1
    # a USD budget counts only what was stated: acct-a's unpriced 9000-token day reaches no dollar limit
    assert [r['limit'] for r in account_days(board(), NOW, Budget(usd=0.05))] == ['usd', 'usd', None]
    assert [r['limit'] for r in account_days(board(), NOW)] == [None, None, None]
    assert [r['day'] for r in account_days(board(), NOW, days=1)] == ['2026-12-06', '2026-12-06']
