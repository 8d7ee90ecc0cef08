# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The round cap as the dispatcher sets it (dispatch_max_rounds -> board_info and board_explain ``max_rounds``)."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.pr_loop import round_fields
from ansible_collections.fleet.dispatch.plugins.modules import board_explain, board_info

NOW = '2026-11-30T12:00:00Z'
T0 = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def board(ledger_url):
    """#7: a run left o/r#7 open, then two rounds moved its head (a -> b -> c); a third run pushed nothing."""
    spec = dict(kind='ledger', **ledger_url)
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=7, title='reviewed', status='Ready')
        b.comment(7, format_marker('start'), at=T0)
        b.add_artifact('o/r#7', closes=[7], created_at=T0 + dt.timedelta(minutes=5), head_ref='fleet/7',
                       head_sha='a' * 40, state='OPEN')
        b.comment(7, format_marker('noop'), at=T0 + dt.timedelta(minutes=10))
        for n, (before, after) in enumerate((('a', 'b'), ('b', 'c'), ('c', 'c'))):
            at = T0 + dt.timedelta(minutes=20 + 20 * n)
            b.comment(7, format_marker('start'), at=at)
            fields = round_fields({'ref': 'o/r#7', 'head_sha': before * 40}, after * 40)
            b.comment(7, format_marker('noop', fields), at=at + dt.timedelta(minutes=10))
    return spec


@pytest.mark.parametrize('cap, reason, shown', [
    (None, 'eligible', 4),       # the default: 2 rounds of 4 (the run that pushed nothing spent no round)
    (3, 'eligible', 3),
    (2, 'rounds_spent', 2),
    (0, 'eligible', None),       # no cap
])
def test_board_info_holds_at_the_round_cap_it_is_given(run_module, board, cap, reason, shown):
    args = dict(board=board, now=NOW, max_attempts=10)
    if cap is not None:
        args['max_rounds'] = cap
    kind, res, _warns = run_module(board_info, args)
    assert kind == 'exit', res
    (row,) = res['board_items']
    assert (row['reason'], row['pull']['rounds'], row['pull']['max_rounds']) == (reason, 2, shown)
    assert [c['number'] for c in res['candidates']] == ([] if reason == 'rounds_spent' else [7])


def test_board_explain_says_the_cap_it_is_given(run_module, board):
    kind, res, _warns = run_module(board_explain, dict(board=board, number=7, now=NOW, max_attempts=10, max_rounds=2))
    assert kind == 'exit', res
    assert res['explanation']['reason'] == 'rounds_spent'
    assert any('cap is 2' in line or 'cap 2' in line or 'of 2' in line for line in res['lines']), res['lines']


@pytest.mark.parametrize('module, extra', [(board_info, {}), (board_explain, {'number': 7})])
def test_a_negative_round_cap_is_refused(run_module, board, module, extra):
    kind, res, _warns = run_module(module, dict(board=board, now=NOW, max_rounds=-1, **extra))
    assert kind == 'fail' and 'max_rounds' in res['msg'], res
