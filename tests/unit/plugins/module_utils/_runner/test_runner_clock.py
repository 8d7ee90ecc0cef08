# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A worker clock that differs from the board's: the run is dated by the board (D16).

The runner's own clock is injected 10 minutes behind or ahead of the real one; the board is the
real ledger, on SQLite (the writer's clock is the real one) and on PostgreSQL (the database's clock
stamps every write, whatever the writer's clock says). The agent is the real fake agent CLI.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board import ledger as _ledger
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner

REPO = pathlib.Path(__file__).resolve().parents[5]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_runner.__file__)).parents[6]
UTC = _dt.timezone.utc
SKEW = _dt.timedelta(minutes=10)


def _now():
    return _dt.datetime.now(UTC)


@pytest.fixture
def board(tmp_path):
    b = LedgerBoard(path=str(tmp_path / 'ledger.sqlite3'), create=True)
    b.upsert_item(number=7, title='Spin', body='Make it spin', status='Ready')
    yield b
    b.close()


def _run(tmp_path, board, mode, skew, logs):
    environ = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE=mode,
                   FAKE_AGENT_BOARD=json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}),
                   FAKE_AGENT_LOG=str(tmp_path / 'agent.log'))
    config = _runner.RunConfig(number=7, state_dir=str(tmp_path / 'state'), agent_command=[sys.executable, str(FAKE_AGENT)],
                               workdir=str(tmp_path), host='w1', master='m1')
    run = _runner.Run(config, board, clock=lambda: _now() + skew, reraise=lambda s: None, log=logs.append,
                      install_signals=False, environ=environ)
    code = run.run()      # the run closes the board it was given: read the item back afresh
    with LedgerBoard(path=str(tmp_path / 'ledger.sqlite3')) as fresh:
        item = fresh.get(7)
    return code, run, item


def test_a_lagging_worker_clock_never_credits_a_merge_from_before_the_start(tmp_path, board):
    """The worker is 10 min behind; a change closing #7 merged 5 min before the run (then #7 was
    reopened). By the worker's clock the run started before that merge: it must not be credited."""
    before = _now() - _dt.timedelta(minutes=5)
    board.add_artifact('pr-old', created_at=before - _dt.timedelta(minutes=1), merged=True, merged_at=before, closes=[7])
    board.upsert_item(number=7, state='reopened')
    logs = []
    code, run, item = _run(tmp_path, board, 'claim', -SKEW, logs)
    kinds = [m.kind for m in markers_of(item)]
    assert kinds[-1] == 'noop', (kinds, logs)
    assert item.state == 'open'
    assert run.board_started_at is not None and abs((run.board_started_at - _now()).total_seconds()) < 60
    assert any("this worker's clock is 600 s behind the board's" in line for line in logs), logs


def test_a_leading_worker_clock_still_credits_the_merge_the_run_made(tmp_path, board):
    """The worker is 10 min ahead; the agent merges during the run (the forge dates it): credited."""
    logs = []
    code, run, item = _run(tmp_path, board, 'merge', SKEW, logs)
    kinds = [m.kind for m in markers_of(item)]
    assert code == 0 and kinds == ['start', 'success'], (kinds, logs)
    assert any("clock is 600 s ahead of the board's" in line for line in logs), logs
    # the close-out names the start on the board's clock: the status page's duration is seconds, not minutes
    (closeout,) = [m for m in markers_of(item) if m.kind == 'success']
    started = _runner.parse_time(closeout.fields['started_at'])
    assert 0 <= (closeout.at - started).total_seconds() < 60, (closeout.at, started)


def test_an_in_sync_worker_logs_no_clock_warning(tmp_path, board):
    logs = []
    code, _run_, _item = _run(tmp_path, board, 'merge', _dt.timedelta(0), logs)
    assert code == 0
    assert not any("'s clock is" in line for line in logs), logs


def test_a_postgresql_ledger_dates_writes_by_the_database_clock(pg_dsn, monkeypatch):
    """Every writer on one clock: a writer whose clock is 10 min behind still stamps the database's time."""
    monkeypatch.setattr(_ledger, '_utcnow', lambda: _now() - SKEW)
    b = LedgerBoard(dsn=pg_dsn)
    try:
        b.upsert_item(number=1, title='t', status='Ready')
        posted = b.comment(1, 'hello')
        assert abs((posted.created_at - _now()).total_seconds()) < 60, posted.created_at
        assert abs((b.get(1).created_at - _now()).total_seconds()) < 60
        result = b.add_artifact('pr-1', merged=True, closes=[1])
        assert result['closed'] == [1]
        (artifact,) = [a for a in b.get(1).artifacts if a.ref == 'pr-1']
        assert abs((artifact.merged_at - _now()).total_seconds()) < 60, artifact.merged_at
    finally:
        b.close()


def test_an_injected_clock_still_wins_on_postgresql(pg_dsn):
    fixed = _dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    b = LedgerBoard(dsn=pg_dsn, clock=lambda: fixed)
    try:
        b.upsert_item(number=2, title='t', status='Ready')
        assert b.comment(2, 'hello').created_at == fixed
    finally:
        b.close()
