# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger's item budget column (board version 7) on SQLite AND PostgreSQL (``ledger_url``): written, read
back, refused when it is not a budget, migrated onto an older store, refused by a collection that does not know it."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import BUDGET_VERSION, MIGRATIONS
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError, BoardUnreadable
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import Budget
import ledger_fixtures
from ledger_fixtures import T0, Clock

board = ledger_fixtures.board   # the ledger tests' board fixture (pytest finds it by this name)


def test_the_budget_is_written_read_back_and_cleared(board):
    made = board.upsert_item(title='capped', status='Ready', budget=' 50k tokens, $2 ')
    assert made['after']['budget'] == '50k tokens, $2'
    plain = board.upsert_item(title='plain', status='Ready')
    assert plain['after']['budget'] == ''
    for got in (board.read().items[0], board.get(made['number'])):
        assert got.budget == '50k tokens, $2'
    assert board.get(plain['number']).budget is None
    res = board.upsert_item(number=made['number'], budget='')
    assert res['changed'] and res['before']['budget'] == '50k tokens, $2' and board.get(made['number']).budget is None
    assert board.upsert_item(number=made['number'], budget='')['changed'] is False


def test_a_budget_that_is_not_one_is_refused_and_nothing_is_written(board):
    num = board.upsert_item(title='x', budget='$1')['number']
    with pytest.raises(BoardError) as err:
        board.upsert_item(number=num, budget='plenty')
    assert "'plenty' is not a budget" in str(err.value)
    assert board.get(num).budget == '$1'


def test_the_ledger_budget_raises_a_held_items_budget(board):
    num = board.upsert_item(title='spent', status='Ready')['number']
    for body in (format_marker('start', {'host': 'w1'}), format_marker('budget', {'tokens': 9000, 'exit_code': 15})):
        board.post_marker(num, body)
    now = T0 + dt.timedelta(hours=1)
    assert assess(board.read().items, now=now, item_budget=Budget(tokens=8000))[0]['reason'] == 'budget_spent'
    board.upsert_item(number=num, budget='20000')
    entry = assess(board.read().items, now=now, item_budget=Budget(tokens=8000))[0]
    assert entry['reason'] == 'eligible' and entry['budget_left'] == {'tokens': 11000}


def test_a_version_6_store_migrates_to_budgets_and_an_older_collection_refuses_it(ledger_url):
    before = [m for m in MIGRATIONS if m[0] < BUDGET_VERSION]
    old = LedgerBoard(create=True, clock=Clock(), migrations=before, **ledger_url)
    old.upsert_item(title='from v6', status='Ready', agent='claude')
    with pytest.raises(BoardError):
        old.upsert_item(number=1, budget='$1')   # no budget column yet: refused, not ignored
    old.close()
    new = LedgerBoard(clock=Clock(), migrations=[m for m in MIGRATIONS if m[0] <= BUDGET_VERSION], **ledger_url)
    assert new.migrated == [BUDGET_VERSION] and new.schema_version() == BUDGET_VERSION
    item = new.get(1)
    assert (item.title, item.agent, item.budget) == ('from v6', 'claude', None)
    new.upsert_item(number=1, budget='$1')
    assert new.read().items[0].budget == '$1'
    new.close()
    with pytest.raises(BoardUnreadable) as err:
        LedgerBoard(clock=Clock(), migrations=before, **ledger_url)
    assert 'version %d' % BUDGET_VERSION in str(err.value)
