# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``board_time()``: each board's own clock, the one its comments and merges are dated by (D16).

The reader's clock is set 10 minutes off the board's: the board's time must follow the board.
"""
from __future__ import annotations

import datetime as _dt

from ansible_collections.fleet.dispatch.plugins.module_utils._board import ledger as _ledger
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard

UTC = _dt.timezone.utc
SKEW = _dt.timedelta(minutes=10)
TOKEN = 'ghp_board_time'


def _now():
    return _dt.datetime.now(UTC)


def _near(a, b, slack=5.0):
    return abs((a - b).total_seconds()) <= slack


def test_a_sqlite_ledger_is_on_its_writer_s_clock(tmp_path):
    fixed = _dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with LedgerBoard(path=str(tmp_path / 'l.sqlite3'), create=True, clock=lambda: fixed) as b:
        assert b.board_time() == fixed
        b.upsert_item(number=1, title='t', status='Ready')
        assert b.comment(1, 'hello').created_at == b.board_time()


def test_a_postgresql_ledger_is_on_the_database_clock(pg_dsn, monkeypatch):
    monkeypatch.setattr(_ledger, '_utcnow', lambda: _now() - SKEW)    # this writer lags 10 min
    with LedgerBoard(dsn=pg_dsn) as b:
        assert _near(b.board_time(), _now()), b.board_time()


def _spec(gh, **kw):
    return dict({'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url}, **kw)


def test_github_time_is_its_date_header_not_the_reader_s_clock(fake_github):
    """GitHub 10 min behind this machine: the board's time says so, from one free /rate_limit call."""
    gh = fake_github(TOKEN, clock=lambda: _now() - SKEW, date_clock=lambda: _now() - SKEW)
    with open_board(_spec(gh)) as board:
        got = board.board_time()
        assert _near(got, _now() - SKEW), got
        again = board.board_time()           # carried forward: no second call
    assert [e['path'] for e in gh.log] == ['/rate_limit'], gh.log
    assert again >= got


def test_github_time_after_a_read_costs_no_call(fake_github):
    gh = fake_github(TOKEN, clock=lambda: _now() + SKEW, date_clock=lambda: _now() + SKEW)
    gh.store.add_issue('acme/app', 'Spin it', project=('acme', 1), status='Ready')
    with open_board(_spec(gh)) as board:
        board.read()
        calls = len(gh.log)
        got = board.board_time()
    assert len(gh.log) == calls and '/rate_limit' not in [e['path'] for e in gh.log]
    assert _near(got, _now() + SKEW), got


def test_github_down_is_an_unreadable_board_time():
    import pytest
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardUnreadable
    with open_board({'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN,
                     'api_url': 'http://127.0.0.1:9'}) as board:
        with pytest.raises(BoardUnreadable):
            board.board_time()


def test_github_refusing_the_token_still_dates_its_answer(fake_github):
    gh = fake_github(TOKEN, clock=lambda: _now() - SKEW, date_clock=lambda: _now() - SKEW)
    with open_board(_spec(gh, token='ghp_wrong')) as board:
        assert _near(board.board_time(), _now() - SKEW)
