# -*- coding: utf-8 -*-
"""Operator actions on the real ledger (SQLite and PostgreSQL): one dependency edge at a time, a
plain human comment; each with check mode."""
from __future__ import annotations

import threading

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.modules import board_item


@pytest.fixture
def board(ledger_url):
    spec = dict(kind='ledger', **ledger_url)
    with open_board(dict(spec, create=True)) as b:
        for n in range(1, 6):
            b.upsert_item(number=n, title='item %d' % n, status='Ready')
        b.upsert_item(number=5, blocked_by=[1])
    return spec


def edges(spec, number):
    with open_board(spec) as b:
        return sorted(x.number for x in b.get(number).blockers)


def item(run_module, board, check=False, **kw):
    return run_module(board_item, dict(board=board, **kw), check=check, diff=True)


def test_add_and_remove_one_edge_leave_the_others_alone_check_real_check_real(run_module, board):
    kind, res, _w = item(run_module, board, check=True, number=5, add_blocked_by=[2])
    assert kind == 'exit' and res['changed'] and res['diff']['after']['blocked_by'] == [1, 2]
    assert edges(board, 5) == [1], 'check mode wrote'
    kind, res, _w = item(run_module, board, number=5, add_blocked_by=[2])
    assert kind == 'exit' and res['changed'] and edges(board, 5) == [1, 2]
    kind, res, _w = item(run_module, board, check=True, number=5, add_blocked_by=[2])
    assert not res['changed']
    kind, res, _w = item(run_module, board, number=5, add_blocked_by=[2])
    assert not res['changed'] and edges(board, 5) == [1, 2]
    kind, res, _w = item(run_module, board, number=5, remove_blocked_by=[1])
    assert res['changed'] and edges(board, 5) == [2]
    kind, res, _w = item(run_module, board, number=5, remove_blocked_by=[1])
    assert not res['changed'] and edges(board, 5) == [2]


def test_edge_mistakes_are_refused(run_module, board):
    kind, res, _w = item(run_module, board, number=5, add_blocked_by=[2], remove_blocked_by=[2])
    assert kind == 'fail' and 'name each edge once' in res['msg']
    kind, res, _w = item(run_module, board, number=5, add_blocked_by=[2], blocked_by=[3])
    assert kind == 'fail' and 'mutually exclusive' in res['msg']
    kind, res, _w = item(run_module, board, number=5, add_blocked_by=[99])
    assert kind == 'fail' and edges(board, 5) == [1]


def test_concurrent_single_edge_adds_all_survive(board):
    """The race blocked_by has (read, then replace): N writers adding N different edges keep all N."""
    with open_board(board) as b:
        for n in range(10, 22):
            b.upsert_item(number=n, title='blocker %d' % n, status='Ready')
    errors = []

    def add(n):
        try:
            with open_board(board) as b:
                b.add_blocker(4, n)
        except Exception as exc:  # noqa: BLE001 - counted below
            errors.append(exc)
    threads = [threading.Thread(target=add, args=(n,)) for n in range(10, 22)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and edges(board, 4) == list(range(10, 22))


def test_a_plain_comment_is_posted_and_never_a_marker(run_module, board):
    kind, res, _w = item(run_module, board, check=True, number=3, comment='held: waiting on the schema change')
    assert kind == 'exit' and res['changed'] and res['comment'] is None
    with open_board(board) as b:
        assert b.get(3).comments == []
    kind, res, _w = item(run_module, board, number=3, comment='held: waiting on the schema change', comment_author='alice')
    assert kind == 'exit' and res['changed'] and res['comment']['id']
    with open_board(board) as b:
        got = b.get(3)
    assert [(c.body, c.author) for c in got.comments] == [('held: waiting on the schema change', 'alice')]
    assert markers_of(got) == []
    forged = format_marker('success', {'unit': 'task-3'})
    kind, res, _w = item(run_module, board, number=3, comment=forged)
    assert kind == 'fail' and 'marker' in res['msg']
    kind, res, _w = item(run_module, board, number=3, comment='   ')
    assert kind == 'fail' and 'empty' in res['msg']
    with open_board(board) as b:
        assert len(b.get(3).comments) == 1


# -- capacity_clear: the human act that lifts a revoked master (D8) --------------------------------

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import dump_state, make_state  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.modules import capacity_clear, capacity_info  # noqa: E402

REVOKED = dump_state(make_state('revoked', written_at='2026-11-29T11:00:00Z', message='invalid x-api-key'))
RATE = dump_state(make_state('rate_limit', written_at='2026-11-30T11:00:00Z', reset_at='2026-11-30T17:00:00Z'))


def _dark(run_module, path):
    kind, res, _w = run_module(capacity_info, dict(path=str(path), now='2026-11-30T12:00:00Z', units=False))
    assert kind == 'exit', res
    return res['dark'], res['source']


def test_clearing_a_revoked_master_check_real_check_real(run_module, tmp_path):
    path = tmp_path / 'capacity.json'
    path.write_text(REVOKED)
    assert _dark(run_module, path) == (True, 'revoked')
    kind, res, _w = run_module(capacity_clear, dict(path=str(path)), check=True)
    assert kind == 'exit' and res['changed'] and res['before']['source'] == 'revoked'
    assert _dark(run_module, path) == (True, 'revoked'), 'check mode cleared it'
    kind, res, _w = run_module(capacity_clear, dict(path=str(path)))
    assert res['changed'] and res['moved_to'] == str(path) + '.cleared'
    assert _dark(run_module, path) == (False, None)
    assert 'invalid x-api-key' in (tmp_path / 'capacity.json.cleared').read_text()
    for check in (True, False):
        kind, res, _w = run_module(capacity_clear, dict(path=str(path)), check=check)
        assert kind == 'exit' and not res['changed'] and 'nothing to clear' in res['msg']


def test_a_rate_limit_is_not_cleared_by_a_revoked_clear(run_module, tmp_path):
    path = tmp_path / 'capacity.json'
    path.write_text(RATE)
    kind, res, _w = run_module(capacity_clear, dict(path=str(path)))
    assert kind == 'exit' and not res['changed'] and 'rate_limit, not revoked' in res['msg']
    assert _dark(run_module, path) == (True, 'rate_limit')
    kind, res, _w = run_module(capacity_clear, dict(path=str(path), source='any'))
    assert res['changed'] and _dark(run_module, path) == (False, None)
