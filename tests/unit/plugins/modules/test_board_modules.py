# -*- coding: utf-8 -*-
"""board_info, board_item and board_marker on the real ledger (SQLite and PostgreSQL)."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of, parse_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import closing_refs
from ansible_collections.fleet.dispatch.plugins.modules import board_info, board_item, board_marker

NOW = '2026-11-30T12:00:00Z'


@pytest.fixture
def board(ledger_url):
    return dict(kind='ledger', **ledger_url)


def make(run_module, board, **kw):
    kind, res, warns = run_module(board_item, dict(board=board, **kw))
    assert kind == 'exit', res
    return res


def mark(run_module, board, number, kind, **kw):
    out, res, warns = run_module(board_marker, dict(board=board, number=number, kind=kind, **kw))
    assert out == 'exit', res
    return res


def info(run_module, board, **kw):
    return run_module(board_info, dict(board=board, **kw))


def by_number(res):
    return dict((i['number'], i) for i in res['board_items'])


def test_missing_sqlite_board_is_unreadable_not_empty(run_module, tmp_path):
    """D5/D20: a plan reports an unreadable queue; apply fails; neither reads it as 'no work'."""
    spec = dict(kind='ledger', path=str(tmp_path / 'typo.sqlite3'))
    kind, res, warns = info(run_module, spec)
    assert kind == 'exit'
    assert res['readable'] is False and res['candidates'] == [] and res['error']
    assert any('cannot be read' in w for w in warns)
    kind, res, warns = info(run_module, spec, mode='apply')
    assert kind == 'fail' and 'cannot be read' in res['msg']
    assert not (tmp_path / 'typo.sqlite3').exists(), 'a reader must not create the board'


def test_reasons_candidates_and_hand_dispatch_refusals(run_module, board):
    make(run_module, board, number=1, title='free', status='Ready')
    make(run_module, board, number=2, title='backlog', status='Backlog')
    make(run_module, board, number=3, title='blocked', status='Ready', blocked_by=[1])
    make(run_module, board, number=4, title='running', status='Ready')
    mark(run_module, board, 4, 'start', fields={'unit': 'task-4'})
    make(run_module, board, number=5, title='tombstone', status='Ready')
    mark(run_module, board, 5, 'start')
    mark(run_module, board, 5, 'success')
    kind, res, warns = info(run_module, board)
    assert kind == 'exit' and res['readable'] is True
    items = by_number(res)
    assert {n: items[n]['reason'] for n in items} == {
        1: 'eligible', 2: 'not_ready', 3: 'blocked', 4: 'running', 5: 'tombstone'}
    assert [c['number'] for c in res['candidates']] == [1]
    assert items[3]['open_blockers'] == [1]
    assert items[4]['last_marker']['kind'] == 'start' and items[4]['attempts'] == 1
    assert warns == []
    # a hand dispatch of blocked, running and tombstoned items: refused, with reasons, on stderr only
    kind, res, warns = info(run_module, board, numbers=[3, 4, 5, 99])
    assert [i['number'] for i in res['board_items']] == [3, 4, 5]
    assert res['candidates'] == []
    assert sorted(warns) == sorted(['#3 refused: blocked by #1', '#4 refused: running',
                                    '#5 refused: tombstone', '#99 refused: it is not on the board'])
    # a read-back of launched items (confirm, wait, stop): running and done are no refusals to say
    kind, res, warns = info(run_module, board, numbers=[4, 5], warn_refusals=False)
    assert [i['reason'] for i in res['board_items']] == ['running', 'tombstone'] and warns == []


def test_table_carries_the_board_across_once_as_candidates_and_counts(run_module, board, tmp_path):
    """A sweep's read writes every item to its table and returns the candidates and the counts - not the board
    twice; the table holds exactly what board_items would have held, and the board_table filter reads it back."""
    from ansible_collections.fleet.dispatch.plugins.filter.board_table import board_table
    make(run_module, board, number=1, title='free', status='Ready')
    make(run_module, board, number=2, title='backlog', status='Backlog')
    make(run_module, board, number=3, title='blocked', status='Ready', blocked_by=[2])
    kind, full, warns = info(run_module, board, now=NOW)
    path = str(tmp_path / '{board_id}' / 'board_table.json')
    kind, res, warns = info(run_module, board, now=NOW, table=path)
    assert kind == 'exit' and res['readable'] is True
    assert res['table'] == path.replace('{board_id}', res['board_id'])
    assert res['board_items'] == [], 'the board is in the file, not in the answer'
    assert [c['number'] for c in res['candidates']] == [1] and res['candidates'] == full['candidates']
    assert res['counts'] == {'eligible': 1, 'not_ready': 1, 'blocked': 1} == full['counts']
    assert board_table(res) == full['board_items'] and board_table(full) == full['board_items']
    assert oct((tmp_path / res['board_id'] / 'board_table.json').stat().st_mode & 0o777) == '0o600'
    # a hand dispatch with a table still answers for the items it names
    kind, res, warns = info(run_module, board, now=NOW, table=path, numbers=[3])
    assert [i['number'] for i in res['board_items']] == [3] and res['candidates'] == []
    assert [i['number'] for i in board_table(dict(res, board_items=[]))] == [1, 2, 3], 'the file holds the whole board'


def test_an_unreadable_board_empties_its_table(run_module, tmp_path):
    """The previous read's table never stands for a read that failed."""
    from ansible_collections.fleet.dispatch.plugins.filter.board_table import board_table
    table = tmp_path / 'board_table.json'
    table.write_text('{"now": "x", "items": [{"number": 1}]}')
    kind, res, warns = info(run_module, dict(kind='ledger', path=str(tmp_path / 'typo.sqlite3')), table=str(table))
    assert kind == 'exit' and res['readable'] is False and board_table(res) == []


def test_board_item_check_mode_idempotence_and_diff(run_module, board):
    make(run_module, board, number=2, title='first', status='Ready')
    make(run_module, board, number=3, title='second', status='Ready')
    args = dict(board=board, number=7, title='Write it', status='Ready', blocked_by=[3, 2])
    kind, res, dummy = run_module(board_item, args, check=True, diff=True)
    assert kind == 'exit' and res['changed'] and res['created']
    assert res['diff']['after']['blocked_by'] == [2, 3]
    with open_board(board) as b:
        assert [i.number for i in b.read().items] == [2, 3], 'check mode wrote to the board'
    kind, res, dummy = run_module(board_item, args)
    assert res['changed'] and res['created'] and res['number'] == 7
    kind, res, dummy = run_module(board_item, args)
    assert not res['changed'], res
    kind, res, dummy = run_module(board_item, dict(board=board, number=7, status='Backlog'), check=True)
    assert res['changed'] and res['before']['status'] == 'Ready' and res['after']['status'] == 'Backlog'
    with open_board(board) as b:
        assert b.get(7).status == 'Ready'


def test_board_item_needs_a_title_to_create(run_module, board):
    kind, res, dummy = run_module(board_item, dict(board=board, number=8, status='Ready'))
    assert kind == 'fail' and 'give a title' in res['msg']


def test_reopen_outranks_the_success_before_it(run_module, board):
    """D6: a reopen is an explicit 'not finished' written after the marker that said it was."""
    make(run_module, board, number=1, title='t', status='Ready')
    mark(run_module, board, 1, 'start')
    mark(run_module, board, 1, 'success', close=True)
    assert by_number(info(run_module, board, now=None)[1])[1]['reason'] == 'done'
    res = make(run_module, board, number=1, state='reopened')
    assert res['changed']
    assert not make(run_module, board, number=1, state='reopened')['changed'], 'reopen of an open item changes nothing'
    assert by_number(info(run_module, board)[1])[1]['reason'] == 'eligible'


def test_merged_artifact_closes_the_item_and_counts_as_done(run_module, board):
    """D2: the forge closes the item when the change that references it merges."""
    make(run_module, board, number=4, title='t', status='Ready')
    mark(run_module, board, 4, 'start')
    res = make(run_module, board, number=4, artifact=dict(ref='PR-9', merged=True))
    assert res['changed'] and res['after']['state'] == 'closed' and res['after']['artifacts'] == ['PR-9']
    assert not make(run_module, board, number=4, artifact=dict(ref='PR-9', merged=True))['changed']
    item = by_number(info(run_module, board)[1])[4]
    assert item['state'] == 'closed' and item['artifacts'][0]['ref'] == 'PR-9'


def test_marker_check_mode_posts_nothing(run_module, board):
    make(run_module, board, number=2, title='t', status='Ready')
    kind, res, dummy = run_module(board_marker, dict(board=board, number=2, kind='start'), check=True)
    assert kind == 'exit' and res['changed'] and not res['posted']
    assert parse_marker(res['body']).kind == 'start'
    with open_board(board) as b:
        assert b.get(2).comments == []


def test_marker_comment_first_then_close_even_when_already_closed(run_module, board):
    """🔴 D12: closing an already-closed item must not drop the comment."""
    make(run_module, board, number=3, title='t', status='Ready')
    mark(run_module, board, 3, 'start')
    make(run_module, board, number=3, artifact=dict(ref='PR-1', merged=True))  # the merge closed it
    res = mark(run_module, board, 3, 'success', close=True, fields={'artifact': 'PR-1'})
    assert res['posted'] and res['closed'] is False and res['state'] == 'closed'
    with open_board(board) as b:
        kinds = [m.kind for m in markers_of(b.get(3))]
    assert kinds == ['start', 'success']


def test_marker_text_carries_no_live_closing_keyword(run_module, board):
    """D14: a quoted remedy once closed the issue it protected."""
    make(run_module, board, number=5, title='t', status='Ready')
    res = mark(run_module, board, 5, 'failure', text='> To fix: Closes #5 and fixes owner/repo#6')
    assert closing_refs(res['body']) == []


def test_retry_marker_with_its_time_drives_retry_wait(run_module, board):
    make(run_module, board, number=6, title='t', status='Ready')
    mark(run_module, board, 6, 'start')
    mark(run_module, board, 6, 'retry', fields={'not_before': '2026-11-30T12:30:00Z', 'step': 1})
    assert by_number(info(run_module, board, now=NOW)[1])[6]['reason'] == 'retry_wait'
    later = (dt.datetime(2026, 11, 30, 12, 31, tzinfo=dt.timezone.utc)).isoformat()
    assert by_number(info(run_module, board, now=later)[1])[6]['reason'] == 'eligible'


def test_github_board_requires_owner_and_project(run_module):
    kind, res, dummy = info(run_module, dict(kind='github'))
    assert kind == 'fail' and 'owner' in res['msg']


def test_bad_now_names_the_format(run_module, board):
    make(run_module, board, number=1, title='t', status='Ready')
    kind, res, dummy = info(run_module, board, now='yesterday')
    assert kind == 'fail' and 'ISO-8601' in res['msg']


@pytest.mark.parametrize('number, says', [('99999999999999999999', '2147483647'), (99999999999999999999, '2147483647'),
                                          (u'\u0665', 'ASCII digits')])
def test_board_item_refuses_a_number_outside_ascii_digits_or_the_sql_range(run_module, board, number, says):
    """Issue 14: a raw SQLite overflow, and "٥" aliasing item 5 -- both refused before the board is opened."""
    make(run_module, board, number=5, title='five')
    kind, res, _warns = run_module(board_item, dict(board=board, number=number, title='x', status='Done'))
    assert kind == 'fail' and says in res['msg'] and res['changed'] is False
    _kind, got, _w = info(run_module, board)
    assert [(i['number'], i['status']) for i in got['board_items']] == [(5, '')]


def test_board_info_warnings_and_errors_never_show_the_dsn_password(run_module):
    """Issue 14: a bad DSN's warning printed the DSN whole."""
    dsn = 'postgresql://fleet:p@ss word@127.0.0.1:9/fleet?sslpassword=keypass&connect_timeout=1'
    for mode in ('plan', 'apply'):
        kind, res, warns = run_module(board_info, dict(board=dict(kind='ledger', dsn=dsn), mode=mode))
        text = repr(res) + repr(warns)
        assert 'ss word' not in text and 'keypass' not in text and 'p@ss' not in text, text
        assert '127.0.0.1' in text          # it still says which store


def test_board_item_budget_raises_a_held_item_and_junk_writes_nothing(run_module, board):
    make(run_module, board, number=1, title='spent', status='Ready')
    mark(run_module, board, 1, 'start', fields={'unit': 'task-1'})
    mark(run_module, board, 1, 'budget', fields={'tokens': 9000, 'exit_code': 15})
    kind, res, dummy = info(run_module, board, now=NOW, item_budget_tokens=8000)
    assert by_number(res)[1]['reason'] == 'budget_spent'
    kind, res, dummy = run_module(board_item, dict(board=board, number=1, budget='lots'))
    assert kind == 'fail' and "'lots' is not a budget" in res['msg']
    kind, res, dummy = run_module(board_item, dict(board=board, number=1, budget='20k tokens'), check=True)
    assert res['changed'] and res['after']['budget'] == '20k tokens' and res['before']['budget'] == ''
    with open_board(board) as b:
        assert b.get(1).budget is None, 'check mode wrote to the board'
    res = make(run_module, board, number=1, budget='20k tokens')
    assert res['changed'] and res['after']['budget'] == '20k tokens'
    kind, res, dummy = info(run_module, board, now=NOW, item_budget_tokens=8000)
    got = by_number(res)[1]
    assert got['reason'] == 'eligible' and got['item_budget'] == {'tokens': 20000} and got['budget_left'] == {'tokens': 11000}
    assert got['budget_field'] == '20k tokens'
