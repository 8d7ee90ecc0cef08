# -*- coding: utf-8 -*-
"""board_report on the real ledger (SQLite and PostgreSQL): check mode, real, check again, real again."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import closing_refs
from ansible_collections.fleet.dispatch.plugins.modules import board_report

NOW = '2026-11-30T12:00:00Z'
STALL = {'kind': 'tombstone', 'subject': '#5', 'title': '[fleet] tombstone: #5',
         'body': 'Remedy: Close #5 if it is finished.'}   # a live keyword a careless caller might pass


@pytest.fixture
def board(ledger_url):
    spec = dict(kind='ledger', **ledger_url)
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=5, title='work', status='Ready')
    return spec


def test_check_real_check_real(run_module, board):
    kind, res, _w = run_module(board_report, dict(board=board, stalls=[STALL], now=NOW), check=True)
    assert kind == 'exit' and res['changed'] is True and len(res['file']) == 1 and res['filed'] == []
    with open_board(board) as b:
        assert b.reports() == []
    kind, res, _w = run_module(board_report, dict(board=board, stalls=[STALL], now=NOW))
    assert kind == 'exit' and res['changed'] is True and [f['title'] for f in res['filed']] == [STALL['title']]
    number = res['filed'][0]['number']
    with open_board(board) as b:
        assert closing_refs(b.get(number).body) == [], 'the body is defanged on the way in'
    for check in (True, False):
        kind, res, _w = run_module(board_report, dict(board=board, stalls=[STALL], now=NOW), check=check)
        assert kind == 'exit' and res['changed'] is False and [k['number'] for k in res['keep']] == [number]
    kind, res, _w = run_module(board_report, dict(board=board, reconcile=False))
    assert kind == 'exit' and [(r['number'], r['state']) for r in res['reports']] == [(number, 'open')]
    # the stall cleared; but while its evidence is unknown the report stays
    kind, res, _w = run_module(board_report, dict(board=board, stalls=[], unsure=[STALL['title']], now=NOW))
    assert kind == 'exit' and res['changed'] is False and res['close'] == []
    kind, res, _w = run_module(board_report, dict(board=board, stalls=[], now=NOW))
    assert kind == 'exit' and res['changed'] is True and [c['number'] for c in res['closed']] == [number]


def test_a_stall_without_a_title_is_refused(run_module, board):
    kind, res, _w = run_module(board_report, dict(board=board, stalls=[{'kind': 'tombstone'}]))
    assert kind == 'fail' and 'needs a kind and a title' in res['msg']
