# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board protocol and factory: kinds, lazy imports, D12 ordering, unreadable vs empty (D5/D20)."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import types

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board import protocol as _board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import KINDS, open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import (
    Board, BoardError, BoardRead, BoardUnreadable, ItemNotFound)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment

UTC = dt.timezone.utc


def test_unreadable_is_a_board_error_but_a_distinct_name():
    assert issubclass(BoardUnreadable, BoardError)
    assert issubclass(ItemNotFound, BoardError)
    assert not issubclass(ItemNotFound, BoardUnreadable)


@pytest.mark.parametrize('spec, fragment', [
    ({'kind': 'jira'}, "unknown board kind 'jira'"),
    ({'kind': ''}, "unknown board kind ''"),
    ({}, 'unknown board kind None'),
    ({'kind': 'LEDGER', 'path': '/x'}, "unknown board kind 'LEDGER'"),
])
def test_unknown_kind_names_the_valid_kinds(spec, fragment):
    with pytest.raises(BoardError) as err:
        open_board(spec)
    assert fragment in str(err.value)
    for kind in KINDS:
        assert kind in str(err.value)


@pytest.mark.parametrize('spec', [None, 'ledger', ['ledger'], 3])
def test_spec_must_be_a_dict(spec):
    with pytest.raises(BoardError) as err:
        open_board(spec)
    assert 'dict' in str(err.value)


def test_github_kind_imports_github_lazily_and_passes_the_spec(monkeypatch):
    seen = {}

    class FakeGitHubBoard(Board):
        kind = 'github'

        def __init__(self, spec):
            seen['spec'] = spec

    fake = types.ModuleType('fake_github')
    fake.GitHubBoard = FakeGitHubBoard
    name = _board.__name__.rsplit('.', 1)[0] + '.github.board'
    monkeypatch.setitem(sys.modules, name, fake)
    spec = {'kind': 'github', 'owner': 'o', 'project': 3}
    board = open_board(spec)
    assert isinstance(board, FakeGitHubBoard)
    assert seen['spec'] == spec


def test_importing_board_pulls_in_neither_adapter():
    """The ledger must work without requests, GitHub without psycopg: _board imports neither adapter."""
    code = ('import sys\n'
            'import ansible_collections.fleet.dispatch.plugins.module_utils._board.factory as b\n'
            'mods = [m for m in sys.modules if m.endswith(("._board.github", "._board.ledger", "._store.sql"))]\n'
            'print(repr(mods))\n')
    env = dict(os.environ, PYTHONPATH=os.environ['ANSIBLE_COLLECTIONS_PATH'])
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == '[]'


@pytest.mark.parametrize('extra', [{}, {'create': False}])
def test_ledger_missing_file_is_unreadable_not_empty(tmp_path, extra):
    """D20: a typo'd ledger path must not read as "no work"; the message names the path and the fix."""
    path = tmp_path / 'nope' / 'ledger.sqlite3'
    spec = dict({'kind': 'ledger', 'path': str(path)}, **extra)
    with pytest.raises(BoardUnreadable) as err:
        open_board(spec)
    assert str(path) in str(err.value)
    assert 'create' in str(err.value)
    assert not path.exists()


def test_ledger_spec_needs_path_or_dsn():
    with pytest.raises(BoardUnreadable) as err:
        open_board({'kind': 'ledger'})
    assert 'path' in str(err.value) and 'dsn' in str(err.value)


def test_ledger_spec_ignores_the_github_defaults_a_module_fills(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'l.sqlite3'), 'create': True,
            'owner_type': 'auto', 'status_field': 'Status', 'ready': 'Ready', 'api_url': 'https://api.github.com'}
    with open_board(spec) as board:
        assert board.kind == 'ledger'
        assert board.read() == BoardRead(items=[], cost=None)


class RecordingBoard(Board):
    """A board that records the order of writes; ``state`` is what the item is before the call."""

    kind = 'recording'

    def __init__(self, state='open', close_fails=False):
        self.calls = []
        self.state = state
        self.close_fails = close_fails
        self.closed_conn = False

    def comment(self, number, body, *, author=''):
        self.calls.append(('comment', number, body))
        return Comment(id='c1', body=body, created_at=dt.datetime(2026, 1, 1, tzinfo=UTC))

    def set_state(self, number, state):
        self.calls.append(('set_state', number, state))
        if self.close_fails:
            raise BoardError('close failed')
        changed = self.state != state
        self.state = state
        return changed

    def close(self):
        self.closed_conn = True


@pytest.mark.parametrize('state, close, calls, closed, final', [
    ('open', False, [('comment', 7, 'm')], False, None),
    ('open', True, [('comment', 7, 'm'), ('set_state', 7, 'closed')], True, 'closed'),
    # 🔴 D12: the forge's merge already closed the item; the comment must still be posted.
    ('closed', True, [('comment', 7, 'm'), ('set_state', 7, 'closed')], False, 'closed'),
])
def test_post_marker_comments_first_then_closes(state, close, calls, closed, final):
    board = RecordingBoard(state=state)
    result = board.post_marker(7, 'm', close=close)
    assert board.calls == calls
    assert result['comment'].body == 'm'
    assert result['closed'] is closed
    assert result['state'] == final


def test_post_marker_keeps_the_comment_when_the_close_fails():
    board = RecordingBoard(close_fails=True)
    with pytest.raises(BoardError):
        board.post_marker(7, 'm', close=True)
    assert board.calls[0] == ('comment', 7, 'm')


def test_board_is_a_context_manager_that_closes():
    with RecordingBoard() as board:
        pass
    assert board.closed_conn


def test_protocol_defaults():
    board = Board()
    assert board.mentions(1) == []
    assert board.mark_read(['x']) is None
    for call, args in ((board.read, ()), (board.get, (1,)), (board.set_status, (1, 'Ready'))):
        with pytest.raises(NotImplementedError):
            call(*args)
