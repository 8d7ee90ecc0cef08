# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger's route and priority columns (board version 4) on SQLite AND PostgreSQL (``ledger_url``):
written, read back on both reads, migrated onto an older store, refused by a collection that does not know them."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import MIGRATIONS, ROUTE_VERSION
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError, BoardUnreadable
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess, candidates, place
import ledger_fixtures
from ledger_fixtures import T0, Clock

board = ledger_fixtures.board   # the ledger tests' board fixture (pytest finds it by this name)


def test_route_and_priority_are_written_and_read_back_by_read_and_get(board):
    made = board.upsert_item(title='routed', status='Ready', agent='Codex ', model='gpt-5-codex', effort='high', priority='P1')
    assert made['after']['agent'] == 'Codex' and made['after']['priority'] == 'P1'
    plain = board.upsert_item(title='plain', status='Ready')
    assert plain['after']['agent'] == '' and plain['after']['priority'] == ''
    for got in (board.read().items[0], board.get(made['number'])):
        assert (got.agent, got.model, got.effort, got.priority) == ('Codex', 'gpt-5-codex', 'high', 'P1')
    other = board.get(plain['number'])
    assert (other.agent, other.model, other.effort, other.priority) == ('', '', '', None)


def test_none_leaves_a_route_field_and_empty_clears_it(board):
    num = board.upsert_item(title='x', agent='claude', model='m1', priority='2')['number']
    res = board.upsert_item(number=num, model='m2')
    assert res['changed'] and res['before']['model'] == 'm1' and res['after']['model'] == 'm2'
    assert res['after']['agent'] == 'claude'
    board.upsert_item(number=num, agent='', priority='')
    got = board.get(num)
    assert (got.agent, got.model, got.priority) == ('', 'm2', None)
    assert board.upsert_item(number=num, model='m2')['changed'] is False


def test_the_ledger_read_feeds_routing_and_priority_end_to_end(board):
    board.upsert_item(title='old, no priority', status='Ready')
    board.upsert_item(title='newer, P0, wants gemini', status='Ready', priority='P0', agent='gemini', model='gemini-2.5-pro')
    board.upsert_item(title='wants codex, which nobody offers', status='Ready', agent='codex')
    assessed = assess(board.read().items, now=T0 + dt.timedelta(hours=1), agents=['claude', 'gemini'])
    assert [(a['number'], a['reason']) for a in assessed] == [(1, 'eligible'), (2, 'eligible'), (3, 'unroutable')]
    plan = place(candidates(assessed), [
        {'worker': 'w1', 'master': 'a', 'dark': False, 'agents': ['claude'], 'headroom': {}},
        {'worker': 'w2', 'master': 'b', 'dark': False, 'agents': ['gemini'], 'headroom': {'live_runs': 9}}])
    assert [(a['number'], a['worker'], a['route']['model']) for a in plan['assignments']] == [
        (2, 'w2', 'gemini-2.5-pro'), (1, 'w1', '')]


def test_a_version_3_store_migrates_to_routes_and_keeps_its_items(ledger_url):
    old = LedgerBoard(create=True, clock=Clock(), migrations=[m for m in MIGRATIONS if m[0] < ROUTE_VERSION], **ledger_url)
    assert old.schema_version() == ROUTE_VERSION - 1
    old.upsert_item(title='from v3', status='Ready')
    with pytest.raises(BoardError):
        old.upsert_item(number=1, agent='claude')   # no route columns yet: refused, not ignored
    assert old.get(1).agent == ''
    old.close()
    new = LedgerBoard(clock=Clock(), migrations=[m for m in MIGRATIONS if m[0] <= ROUTE_VERSION], **ledger_url)
    assert new.migrated == [ROUTE_VERSION] and new.schema_version() == ROUTE_VERSION
    item = new.get(1)
    assert (item.title, item.agent, item.priority) == ('from v3', '', None)
    new.upsert_item(number=1, agent='claude', priority='high')
    assert (new.read().items[0].agent, new.read().items[0].priority) == ('claude', 'high')
    new.close()
    # a collection that knows only version 3 refuses the routed store: it would launch routed items anywhere
    with pytest.raises(BoardUnreadable) as err:
        LedgerBoard(clock=Clock(), migrations=[m for m in MIGRATIONS if m[0] < ROUTE_VERSION], **ledger_url)
    assert 'version %d' % ROUTE_VERSION in str(err.value)
