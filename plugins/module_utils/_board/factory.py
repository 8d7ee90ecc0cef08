# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``open_board``: the one place a board spec becomes a board (the adapters never import it)."""

from __future__ import annotations

from typing import Any, Dict

from .protocol import Board, BoardError

KINDS = ('ledger', 'github')
"""The board kinds ``open_board`` knows, in the order the error message lists them."""


def open_board(spec: Dict[str, Any]) -> Board:
    """Open the board a spec names.

    ``{'kind': 'ledger', 'path': FILE}`` -- the embedded SQLite ledger (the default board);
    ``{'kind': 'ledger', 'dsn': 'postgresql://...'}`` -- the ledger on PostgreSQL;
    ``{'kind': 'github', ...}`` -- GitHub Projects v2 (``_board.github.GitHubBoard(spec)``, imported
    lazily so the ledger works without ``requests``).

    A ledger spec may also carry ``create`` (default false: a SQLite file that does not exist is
    ``BoardUnreadable``, not a new empty queue -- D20, a typo'd path must not read as "no work";
    writers such as ``board_item`` pass ``create: true``), ``clock`` (a callable returning an
    aware UTC datetime, for tests) and ``timeout`` (seconds to wait for a lock or a
    connection). Raises ``BoardError`` for an unknown kind or an incomplete spec, and ``BoardUnreadable``
    when the store cannot be opened.
    """
    if not isinstance(spec, dict):
        raise BoardError('a board spec must be a dict with a "kind" key (one of: %s), got %r'
                         % (', '.join(KINDS), type(spec).__name__))
    kind = spec.get('kind')
    if kind == 'ledger':
        from .ledger import LedgerBoard
        return LedgerBoard.from_spec(spec)
    if kind == 'github':
        from .github import GitHubBoard
        return GitHubBoard(spec)
    raise BoardError('unknown board kind %r: valid kinds are %s' % (kind, ', '.join(KINDS)))
