# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""board_info says the board's clock and this controller's offset from it (D16: runs are dated by the
board), and warns when the controller is off by more than a minute; a board whose clock cannot be read
still reads its queue (a guard read fails open, D5)."""

from __future__ import annotations

import datetime as _dt
import re

import pytest

from fakes.github import FakeGitHub
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time
from ansible_collections.fleet.dispatch.plugins.modules import board_info

TOKEN = 'ghp_board_info_clock'
UTC = _dt.timezone.utc


def _now():
    return _dt.datetime.now(UTC)


@pytest.fixture
def gh_behind(shared_dir):
    """A GitHub whose clock is 10 min behind this controller's."""
    path = shared_dir / 'github-schema' / 'schema.graphql'
    if not path.is_file():
        pytest.skip('%s is absent: the fake GitHub executes that schema' % path)

    def behind():
        return _now() - _dt.timedelta(minutes=10)
    with FakeGitHub(token=TOKEN, schema_path=str(path), clock=behind, date_clock=behind) as fake:
        fake.store.add_project('acme', 1)
        yield fake


def test_a_controller_ahead_of_github_is_told_and_warned(run_module, gh_behind):
    gh_behind.store.add_issue('acme/app', 'one', project=('acme', 1), status='Ready')
    board = dict(kind='github', owner='acme', owner_type='organization', project=1, token=TOKEN, api_url=gh_behind.url)
    kind, res, warns = run_module(board_info, dict(board=board))
    assert kind == 'exit' and len(res['candidates']) == 1
    assert 598 <= res['clock_offset_s'] <= 602, res['clock_offset_s']
    assert abs((parse_time(res['board_time']) - (_now() - _dt.timedelta(minutes=10))).total_seconds()) < 5
    (warned,) = [w for w in warns if 'clock' in w]
    assert re.fullmatch(r"this controller's clock is 60[01] s ahead of the board's: runs are dated by the board, "
                        r"but fix its time sync \(timedatectl, chrony\)", warned), warned
    assert '/rate_limit' not in [e['path'] for e in gh_behind.log], 'the read dated itself: no extra call'


def test_a_sqlite_ledger_in_step_says_so_without_a_warning(run_module, tmp_path):
    path = str(tmp_path / 'l.sqlite3')
    with LedgerBoard(path=path, create=True) as b:
        b.upsert_item(number=1, title='t', status='Ready')
    kind, res, warns = run_module(board_info, dict(board=dict(kind='ledger', path=path)))
    assert kind == 'exit' and abs(res['clock_offset_s']) < 5 and res['board_time']
    assert not [w for w in warns if 'clock' in w], warns


def test_a_board_clock_that_cannot_be_read_leaves_the_read_standing(run_module, tmp_path, monkeypatch):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardUnreadable

    def down(self):
        raise BoardUnreadable('no clock today')
    monkeypatch.setattr(LedgerBoard, 'board_time', down)
    path = str(tmp_path / 'l.sqlite3')
    with LedgerBoard(path=path, create=True) as b:
        b.upsert_item(number=1, title='t', status='Ready')
    kind, res, warns = run_module(board_info, dict(board=dict(kind='ledger', path=path), mode='apply'))
    assert kind == 'exit' and [c['number'] for c in res['candidates']] == [1]
    assert res['clock_offset_s'] is None and res['board_time'] is None
    assert [w for w in warns if 'clock' in w] == [
        "the board's clock could not be read: worker clocks and ages are measured against this controller's (no clock today)"]


def test_ages_and_the_reaper_count_on_the_boards_clock(run_module, gh_behind):
    """A start the board dated 25 min ago, read by a controller 10 min ahead of the board: the item's age is 25 min, not
    35, and the reaper's clock half (floor 30 min) does not find it due -- on the controller's clock it did (D14, D16)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.reaper import reaping
    issue = gh_behind.store.add_issue('acme/app', 'one', project=('acme', 1), status='Ready')
    started = _now() - _dt.timedelta(minutes=10) - _dt.timedelta(minutes=25)
    gh_behind.store.add_comment('acme/app', issue['number'], format_marker('start', {'run': 'r1', 'unit': 'task-1'}),
                                created_at=started)
    board = dict(kind='github', owner='acme', owner_type='organization', project=1, token=TOKEN, api_url=gh_behind.url)
    kind, res, _warns = run_module(board_info, dict(board=board))
    assert kind == 'exit'
    (item,) = res['board_items']
    assert item['reason'] == 'running'
    assert 1490 <= item['last_marker']['age_s'] <= 1510, item['last_marker']
    assert res['now'] == res['board_time']
    assert 598 <= (parse_time(res['controller_now']) - parse_time(res['now'])).total_seconds() <= 602
    assert reaping(res['board_items'], now=res['now'], floor=1800)['due'] == []
    # the controller's clock would have reaped a run the board dates 25 min old
    assert [d['number'] for d in reaping(res['board_items'], now=res['controller_now'], floor=1800)['due']] == [1]


def test_an_explicit_now_still_wins(run_module, gh_behind):
    gh_behind.store.add_issue('acme/app', 'one', project=('acme', 1), status='Ready')
    board = dict(kind='github', owner='acme', owner_type='organization', project=1, token=TOKEN, api_url=gh_behind.url)
    kind, res, _warns = run_module(board_info, dict(board=board, now='2026-11-30T01:00:00Z'))
    assert kind == 'exit' and res['now'] == '2026-11-30T01:00:00.000000Z' and res['board_time'] != res['now']
