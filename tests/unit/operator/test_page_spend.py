# -*- coding: utf-8 -*-
"""Spend on the operator's views: per item (since its last reopen, against its item budget) and per master,
on the status text, the page and the metrics -- summed from the close-out markers, never estimated."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.filter.dispatch import status_table
from ansible_collections.fleet.dispatch.plugins.filter.operator import status_spend_table
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.cost import fleet_spend, spend_by_master
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import Budget
from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import master_spend, render_metrics, render_page, spend_cell

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
NOW = T0 + dt.timedelta(hours=5)


def item(number, *runs):
    """Each run: (host, master, tokens, cost_usd or None)."""
    comments = []
    for i, (host, master, tokens, cost) in enumerate(runs):
        fields = {'unit': 'task-%d' % number, 'host': host, 'master': master, 'tokens': tokens}
        if cost is not None:
            fields['cost_usd'] = cost
        comments.append(Comment(id='s%d' % i, body=format_marker('start', {'host': host, 'master': master}),
                                created_at=T0 + dt.timedelta(minutes=10 * i)))
        comments.append(Comment(id='e%d' % i, body=format_marker('failure', fields), created_at=T0 + dt.timedelta(minutes=10 * i + 5)))
    return Item(number=number, title='item %d' % number, state='open', status='Ready', comments=comments)


def board(cap=None):
    return assess([item(1, ('w1', 'agent1', 1000, 0.25), ('w2', 'agent1', 2000, None)),
                   item(2, ('w1', 'agent1', 500, 0.5)),
                   item(3)], now=NOW, item_budget=cap)


def test_spend_by_master_and_the_fleet_sum_never_fill_a_gap():
    rows = spend_by_master(markers_of(item(1, ('w1', 'agent1', 1000, 0.25), ('w2', 'agent1', 2000, None))))
    assert rows == [{'host': 'w1', 'master': 'agent1', 'runs': 1, 'priced_runs': 1, 'tokens': 1000, 'cost_usd': 0.25},
                    {'host': 'w2', 'master': 'agent1', 'runs': 1, 'priced_runs': 0, 'tokens': 2000, 'cost_usd': None}]
    folded = fleet_spend(rows + [{'host': 'w1', 'master': 'agent1', 'runs': 1, 'priced_runs': 1, 'tokens': 500, 'cost_usd': 0.5}])
    assert folded[0] == {'host': 'w1', 'master': 'agent1', 'runs': 2, 'priced_runs': 2, 'tokens': 1500, 'cost_usd': 0.75}
    assert folded[1]['cost_usd'] is None     # no run there stated a cost: not $0


def test_per_item_cell_against_the_item_budget():
    items = board(Budget(tokens=4000, usd=1.0))
    assert spend_cell(items[0]) == '3000 tok, $0.25+ / 4000 tok, $1'    # + : one of its runs stated no cost
    assert spend_cell(items[2]) == '- / 4000 tok, $1'
    assert spend_cell(board()[1]) == '500 tok, $0.5'
    table = status_table(items).splitlines()
    assert table[0].split()[-6:] == ['spend', 'held', 'by', 'cost', 'pull', 'request']
    assert '3000 tok, $0.25+ / 4000 tok, $1' in table[2]


def test_per_master_on_the_status_text_the_page_and_the_metrics():
    items = board(Budget(tokens=4000))
    assert master_spend(items)[0]['tokens'] == 1500
    text = status_spend_table({'items': items}).splitlines()
    assert text[2].split() == ['w1/agent1', '2', '2', '1500', 'tok', '$0.75']
    assert text[3].split() == ['w2/agent1', '1', '0', '2000', 'tok', '-']
    page = render_page({'items': items, 'now': '2026-12-01T13:00:00Z', 'board': 'b'})
    assert '<h2>Spend</h2>' in page and 'data-spend-master="w1/agent1"' in page and '1500 tok' in page
    assert '3000 tok, $0.25+ / 4000 tok' in page
    metrics = render_metrics({'items': items, 'now': '2026-12-01T13:00:00Z'})
    assert 'fleet_dispatch_item_spend_tokens{number="1",repo=""} 3000' in metrics
    assert 'fleet_dispatch_item_spend_usd{number="1",repo=""} 0.25' in metrics
    assert 'fleet_dispatch_item_spend_tokens{number="3"' not in metrics    # nothing stated, nothing invented
    assert 'fleet_dispatch_item_budget_tokens 4000' in metrics and '\nfleet_dispatch_item_budget_usd ' not in metrics
    assert 'fleet_dispatch_master_spend_tokens{host="w1",master="agent1"} 1500' in metrics
    assert 'fleet_dispatch_master_spend_usd{host="w1",master="agent1"} 0.75' in metrics
    assert 'fleet_dispatch_master_spend_usd{host="w2"' not in metrics


def account_board():
    """acct-a stated 3000 tokens ($0.25 on one of two runs) today and 9000 yesterday; acct-b 500 today."""
    def run(i, account, at, tokens, cost):
        fields = {'unit': 'task-9', 'account': account, 'tokens': tokens}
        if cost is not None:
            fields['cost_usd'] = cost
        return [Comment(id='s%d' % i, body=format_marker('start', {}), created_at=at - dt.timedelta(minutes=5)),
                Comment(id='e%d' % i, body=format_marker('failure', fields), created_at=at)]
    comments = (run(0, 'acct-a', NOW - dt.timedelta(hours=1), 1000, 0.25) + run(1, 'acct-a', NOW - dt.timedelta(hours=2), 2000, None)
                + run(2, 'acct-a', NOW - dt.timedelta(days=1), 9000, None) + run(3, 'acct-b<x>', NOW - dt.timedelta(hours=3), 500, 0.05))
    return assess([Item(number=9, title='t', state='open', status='Ready', comments=comments)], now=NOW)


def test_per_account_and_day_on_the_status_text_the_page_and_the_metrics():
    from ansible_collections.fleet.dispatch.plugins.filter.operator import status_account_table
    view = {'items': account_board(), 'now': '2026-12-01T13:00:00Z', 'board': 'b', 'account_budget': {'tokens': 2500, 'usd': 0.0}}
    text = status_account_table(view).splitlines()
    assert text[0].split()[:3] == ['account', 'day', '(UTC)']
    assert text[2].split() == ['acct-a', '2026-12-01', '2', '1', '3000', 'tok', '$0.25+', '2500', 'tok',
                               'spent', '(tokens):', 'dark', 'until', '2026-12-02T00:00:00.000000Z']
    assert text[3].split() == ['acct-b<x>', '2026-12-01', '1', '1', '500', 'tok', '$0.05', '2500', 'tok', 'within']
    assert text[4].split()[:2] == ['acct-a', '2026-11-30'] and text[4].split()[-2:] == ['spent', '(tokens)']
    unbudgeted = status_account_table(dict(view, account_budget={'tokens': 0, 'usd': 0})).splitlines()
    assert unbudgeted[2].split()[-4:] == ['-', 'no', 'daily', 'budget']
    page = render_page(view)
    assert '<h2>Spend per account and day</h2>' in page and 'acct-b&lt;x&gt;' in page and 'acct-b<x>' not in page
    assert 'class="account dark" data-account="acct-a" data-day="2026-12-01"' in page
    metrics = render_metrics(view)
    assert 'fleet_dispatch_account_spend_tokens{account="acct-a"} 3000' in metrics   # today only: not yesterday's 9000
    assert 'fleet_dispatch_account_spend_usd{account="acct-a"} 0.25' in metrics
    assert 'fleet_dispatch_account_budget_tokens 2500' in metrics and '\nfleet_dispatch_account_budget_usd ' not in metrics


def test_the_dispatchers_item_budget_metric_is_not_an_items_own():
    items = board(Budget(tokens=4000))
    own = dict(items[0], budget_field='50k', item_budget={'tokens': 50000})
    metrics = render_metrics({'items': [own] + items[1:], 'now': '2026-12-01T13:00:00Z'})
    assert 'fleet_dispatch_item_budget_tokens 4000' in metrics and 'fleet_dispatch_item_budget_tokens 50000' not in metrics
