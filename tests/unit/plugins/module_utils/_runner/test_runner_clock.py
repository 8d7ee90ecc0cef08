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


# -- the count: old merges never credited, new merges never missed, on both boards ---------------
# A merge at each of these minutes before the run's real start is *after* the start by the clock of
# a worker 10 min behind: a runner dating its start by its own clock credits every one of them.
OLD_MERGES_MIN = (9, 6, 3, 1)


def _ledger_trial(tmp_path, number, skew, merged_before=None):
    """One run of the real runner on a SQLite ledger whose writer is on the real clock; the kinds of
    the item's markers after it. ``merged_before``: a change closing the item merged that long
    before the run, then the item reopened (the agent only claims); else the agent merges."""
    tmp_path.mkdir()
    path = str(tmp_path / 'ledger.sqlite3')
    with LedgerBoard(path=path, create=True) as b:
        b.upsert_item(number=number, title='Spin %d' % number, body='Make it spin', status='Ready')
        if merged_before is not None:
            at = _now() - merged_before
            b.add_artifact('pr-%d' % number, created_at=at - _dt.timedelta(minutes=1), merged=True, merged_at=at,
                           closes=[number])
            b.upsert_item(number=number, state='reopened')
    environ = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE='claim' if merged_before else 'merge',
                   FAKE_AGENT_BOARD=json.dumps({'kind': 'ledger', 'path': path}), FAKE_AGENT_LOG=str(tmp_path / 'agent.log'))
    config = _runner.RunConfig(number=number, state_dir=str(tmp_path / 'state'),
                               agent_command=[sys.executable, str(FAKE_AGENT)], workdir=str(tmp_path), host='w1', master='m1')
    _runner.Run(config, LedgerBoard(path=path), clock=lambda: _now() + skew, reraise=lambda s: None, log=lambda line: None,
                install_signals=False, environ=environ).run()
    with LedgerBoard(path=path) as fresh:
        return [m.kind for m in markers_of(fresh.get(number))]


class _ForgeMerges(_runner.PopenSpawner):
    """The real fake agent; the fake GitHub then merges a change closing the item, dated by the forge."""

    def __init__(self, gh, number):
        self.gh, self.number = gh, number

    def spawn(self, argv, **kw):
        proc = super(_ForgeMerges, self).spawn(argv, **kw)
        when = _now() + _dt.timedelta(seconds=1)
        self.gh.store.add_pr('acme/app', 'Spin it', closes=[self.number], created_at=when, merged_at=when)
        return proc


def _github_trial(gh, tmp_path, skew, merged_before=None):
    """The same trial on the fake GitHub: the start marker's ``createdAt`` and the merge are the forge's."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
    tmp_path.mkdir()
    number = gh.store.add_issue('acme/app', 'Spin it', body='Make it spin', project=('acme', 1), status='Ready')['number']
    spawner = None
    if merged_before is not None:
        at = _now() - merged_before
        gh.store.add_pr('acme/app', 'earlier fix', closes=[number], created_at=at - _dt.timedelta(minutes=1), merged_at=at)
        gh.store.set_state(gh.store.issue('acme/app', number), 'open')
    else:
        spawner = _ForgeMerges(gh, number)
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': 'ghp_clock_test', 'api_url': gh.url}
    config = _runner.RunConfig(number=number, state_dir=str(tmp_path / 'state'),
                               agent_command=[sys.executable, str(FAKE_AGENT)], workdir=str(tmp_path), host='w1', master='m1')
    environ = dict(os.environ, FAKE_AGENT_MODE='claim', FAKE_AGENT_LOG=str(tmp_path / 'agent.log'))
    _runner.Run(config, open_board(dict(spec, status_field='Status', ready='Ready')), spawner=spawner,
                clock=lambda: _now() + skew, reraise=lambda s: None, log=lambda line: None, install_signals=False,
                environ=environ).run()
    with open_board(spec) as fresh:
        return [m.kind for m in markers_of(fresh.get(number))]


def test_a_worker_10_min_behind_credits_no_old_merge_on_either_board(tmp_path, fake_github):
    """Every merge of OLD_MERGES_MIN is after the start by the lagging worker's clock and before it by the
    board's: none is credited (a ✅ here is a false success, D16), on the ledger and on GitHub."""
    gh = fake_github('ghp_clock_test')
    closes = []
    for i, minutes in enumerate(OLD_MERGES_MIN):
        closes.append(('ledger', minutes, _ledger_trial(tmp_path / ('l%d' % i), 20 + i, -SKEW,
                                                        merged_before=_dt.timedelta(minutes=minutes))[-1]))
        closes.append(('github', minutes, _github_trial(gh, tmp_path / ('g%d' % i), -SKEW,
                                                        merged_before=_dt.timedelta(minutes=minutes))[-1]))
    false_credits = [c for c in closes if c[2] == 'success']
    assert len(closes) == 2 * len(OLD_MERGES_MIN)
    assert false_credits == [], closes
    assert set(c[2] for c in closes) == {'noop'}, closes


def test_a_worker_10_min_ahead_misses_no_merge_its_run_made_on_either_board(tmp_path, fake_github):
    """The mirror case: by the leading worker's clock the run's own merge is before its start; by the
    board's it is after. Every one is credited."""
    gh = fake_github('ghp_clock_test')
    closes = []
    for i in range(2):
        closes.append(('ledger', _ledger_trial(tmp_path / ('l%d' % i), 30 + i, SKEW)))
        closes.append(('github', _github_trial(gh, tmp_path / ('g%d' % i), SKEW)))
    missed = [c for c in closes if c[1][-1] != 'success']
    assert len(closes) == 4
    assert missed == [], closes


class _StartUnread(object):
    """The real ledger, but the start marker's board time never comes back to the runner: the post answers
    nothing and every read hides the start marker (a board that lost it, or dropped the answer)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def post_marker(self, ref, body, **kw):
        self._inner.post_marker(ref, body, **kw)
        return None

    def get(self, ref):
        item = self._inner.get(ref)
        item.comments = [c for c in item.comments if markers_of_comment(c) != 'start']
        return item


def markers_of_comment(comment):
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import parse_marker
    marker = parse_marker(comment.body, at=comment.created_at)
    return marker.kind if marker is not None else None


def test_a_start_not_read_back_credits_no_merge_on_the_workers_clock(tmp_path, board):
    """The worker is 10 min behind and the start's board time cannot be read back; a change closing #7
    merged 5 min before the run. The worker's clock would credit it (a false success): the run ends
    left open, naming the merge, and #7 stays open for a human (a visible gap beats a false close)."""
    before = _now() - _dt.timedelta(minutes=5)
    board.add_artifact('pr-old', created_at=before - _dt.timedelta(minutes=1), merged=True, merged_at=before, closes=[7])
    board.upsert_item(number=7, state='reopened')
    logs = []
    code, run, item = _run(tmp_path, _StartUnread(board), 'claim', -SKEW, logs)
    markers = markers_of(item)
    assert [m.kind for m in markers] == ['start', 'left_open'], (markers, logs)
    assert markers[-1].fields['cause'] == 'start_unread' and markers[-1].fields['artifacts'] == ['pr-old']
    assert item.state == 'open' and code == 16 and run.board_started_at is None
    assert any('could not be read back' in line for line in logs), logs


def test_a_start_not_read_back_with_nothing_merged_is_an_ordinary_noop(tmp_path, board):
    logs = []
    code, run, item = _run(tmp_path, _StartUnread(board), 'claim', -SKEW, logs)
    assert [m.kind for m in markers_of(item)] == ['start', 'noop'], logs
    assert code == 10


class _PostAnswersNothing(_StartUnread):
    def get(self, ref):
        return self._inner.get(ref)


def test_a_start_the_post_did_not_date_is_read_back_from_the_item_at_close_out(tmp_path, board):
    """The post answered nothing, but the item shows the start marker: the close-out dates the run by it, so
    the old merge is not credited and nothing is left open."""
    before = _now() - _dt.timedelta(minutes=5)
    board.add_artifact('pr-old', created_at=before - _dt.timedelta(minutes=1), merged=True, merged_at=before, closes=[7])
    board.upsert_item(number=7, state='reopened')
    logs = []
    code, run, item = _run(tmp_path, _PostAnswersNothing(board), 'claim', -SKEW, logs)
    assert [m.kind for m in markers_of(item)] == ['start', 'noop'], logs
    assert run.board_started_at is not None and abs((run.board_started_at - _now()).total_seconds()) < 60
