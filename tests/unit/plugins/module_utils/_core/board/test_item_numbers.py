# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Item numbers are ASCII digits within the SQL INTEGER range, refused before any statement (issue 14)."""

from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github.nodes import split_ref
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import MAX_ITEM, item_number, unit_name


@pytest.mark.parametrize('value, expect', [(5, 5), ('5', 5), ('#5', 5), (' 42 ', 42), (MAX_ITEM, MAX_ITEM),
                                           (str(MAX_ITEM), MAX_ITEM)])
def test_ascii_digits_in_range_are_item_numbers(value, expect):
    assert item_number(value) == expect


@pytest.mark.parametrize('value, says', [
    (u'\u0665', 'ASCII digits'),            # Arabic-Indic five: int() reads it as 5
    (u'\uff15', 'ASCII digits'),            # fullwidth five
    ('99999999999999999999', '2147483647'),
    (99999999999999999999, '2147483647'),
    (MAX_ITEM + 1, '2147483647'),
    (0, '1 to'), (-3, '1 to'), ('-3', 'ASCII'), (True, 'positive'), ('4 2', 'ASCII'), ('', 'ASCII'),
])
def test_everything_else_is_refused_with_the_limit_named(value, says):
    with pytest.raises(ValueError, match=says):
        item_number(value)


def test_unit_names_and_github_refs_apply_the_same_rule():
    with pytest.raises(ValueError):
        unit_name(u'\u0665')
    with pytest.raises(BoardError, match='ASCII'):
        split_ref(u'acme/app#\u0665')
    with pytest.raises(BoardError, match='2147483647'):
        split_ref(10 ** 20)


def test_the_ledger_refuses_before_sqlite_overflows(tmp_path):
    with open_board({'kind': 'ledger', 'path': str(tmp_path / 'l.sqlite3'), 'create': True}) as board:
        board.upsert_item(number=5, title='five')
        for bad in (99999999999999999999, u'\u0665'):
            with pytest.raises(BoardError, match='2147483647|ASCII'):
                board.get(bad)
            with pytest.raises(BoardError, match='2147483647|ASCII'):
                board.upsert_item(number=bad, title='x')
        assert [i.number for i in board.read().items] == [5]
