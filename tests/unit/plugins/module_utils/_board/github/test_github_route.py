# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board's route and priority project fields, against the fake GitHub (graphql-core over the
public schema): single select, text and number fields read on the page (no extra cost) and by ``get``."""

from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess, candidates, place
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import Budget

UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
REPO = 'acme/app'
PROJECT = ('acme', 1)
TOKEN = 'ghp_test_secret_token_value'


@pytest.fixture
def gh(fake_github):
    gh = fake_github(TOKEN)
    gh.store.add_project('acme', 1)
    gh.store.add_field(PROJECT, 'Agent', 'SINGLE_SELECT', ('claude', 'codex', 'gemini'))
    gh.store.add_field(PROJECT, 'Model', 'TEXT')
    gh.store.add_field(PROJECT, 'Effort', 'SINGLE_SELECT', ('low', 'medium', 'high'))
    gh.store.add_field(PROJECT, 'Priority', 'SINGLE_SELECT', ('P0', 'P1', 'P2', 'P3'))
    gh.store.add_field(PROJECT, 'Rank', 'NUMBER')
    gh.store.add_field(PROJECT, 'Budget', 'TEXT')
    gh.store.add_field(PROJECT, 'Tokens', 'NUMBER')
    return gh


def board_for(gh, **extra):
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url, 'owner_type': 'organization',
            'status_field': 'Status', 'ready': 'Ready', 'sleep': lambda s: None, 'clock': lambda: T0}
    spec.update(extra)
    return open_board(spec)


def issue(gh, title, created, **fields):
    made = gh.store.add_issue(REPO, title, project=PROJECT, status='Ready', created_at=created)
    item = made['project_items'][0]
    for name, value in fields.items():
        gh.store.set_item_field(item, name, value)
    return made


def test_route_and_priority_fields_are_read_on_the_page_and_by_get_at_no_extra_cost(gh):
    a = issue(gh, 'routed', T0 - _dt.timedelta(days=1), Agent='codex', Model='gpt-5-codex', Effort='high', Priority='P1')
    b = issue(gh, 'plain', T0 - _dt.timedelta(days=2))
    with board_for(gh) as board:
        read = board.read()
        got = board.get(a['number'])
    items = dict((i.number, i) for i in read.items)
    assert (items[a['number']].agent, items[a['number']].model, items[a['number']].effort,
            items[a['number']].priority) == ('codex', 'gpt-5-codex', 'high', 'P1')
    assert (items[b['number']].agent, items[b['number']].model, items[b['number']].priority) == ('', '', None)
    assert (got.agent, got.model, got.effort, got.priority) == ('codex', 'gpt-5-codex', 'high', 'P1')
    # a field value by name is not a connection: the page is still one call, one point
    assert len(gh.graphql_calls('BoardPage')) == 1 and read.cost['by_document']['BoardPage'] == 1


def test_a_number_priority_field_and_a_project_without_route_fields(gh):
    issue(gh, 'rank 3', T0 - _dt.timedelta(days=3), Rank=3)
    issue(gh, 'rank 1', T0 - _dt.timedelta(days=1), Rank=1)
    issue(gh, 'no rank', T0 - _dt.timedelta(days=9))
    with board_for(gh, priority_field='Rank') as board:
        read = board.read()
    assert [i.priority for i in read.items] == [3, 1, None]
    assert [c['title'] for c in candidates(assess(read.items, now=T0))] == ['rank 1', 'rank 3', 'no rank']
    with board_for(gh, agent_field='No such field', priority_field='Nor this') as board:
        assert [(i.agent, i.priority) for i in board.read().items] == [('', None)] * 3


def test_the_github_read_feeds_routing_and_holds_what_nobody_serves(gh):
    issue(gh, 'wants gemini', T0 - _dt.timedelta(days=1), Agent='gemini', Priority='P0')
    issue(gh, 'wants claude', T0 - _dt.timedelta(days=5), Agent='claude', Model='claude-sonnet-4-5', Priority='P2')
    with board_for(gh) as board:
        assessed = assess(board.read().items, now=T0, agents=['claude'])
    assert [(a['title'], a['reason']) for a in assessed] == [('wants gemini', 'unroutable'), ('wants claude', 'eligible')]
    plan = place(candidates(assessed), [{'worker': 'w1', 'master': 'a', 'dark': False, 'agents': ['claude'], 'headroom': {}}])
    assert [(a['title'], a['agent'], a['route']['model']) for a in plan['assignments']] == [
        ('wants claude', 'claude', 'claude-sonnet-4-5')]


def test_the_budget_field_is_read_on_the_page_and_raises_the_items_budget(gh):
    a = issue(gh, 'raised', T0 - _dt.timedelta(days=1), Budget='50k tokens, $2')
    b = issue(gh, 'junk', T0 - _dt.timedelta(days=2), Budget='plenty')
    issue(gh, 'plain', T0 - _dt.timedelta(days=3))
    with board_for(gh) as board:
        read = board.read()
        got = board.get(a['number'])
    assert [i.budget for i in read.items] == ['50k tokens, $2', 'plenty', None] and got.budget == '50k tokens, $2'
    assert len(gh.graphql_calls('BoardPage')) == 1 and read.cost['by_document']['BoardPage'] == 1
    assessed = dict((e['number'], e) for e in assess(read.items, now=T0, item_budget=Budget(tokens=8000)))
    assert assessed[a['number']]['item_budget'] == {'tokens': 50000, 'usd': 2.0}
    assert assessed[b['number']]['item_budget'] == {'tokens': 8000} and 'is not a budget' in assessed[b['number']]['budget_note']
    with board_for(gh, budget_field='Tokens') as board:
        issue(gh, 'number field', T0, Tokens=20000)
        assert [i.budget for i in board.read().items] == [None, None, None, 20000]
