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
    ``{'kind': 'github', ...}`` -- GitHub Projects v2 (``_board.github.board.GitHubBoard(spec)``, imported
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
        from .github.board import GitHubBoard
        return GitHubBoard(spec)
    raise BoardError('unknown board kind %r: valid kinds are %s' % (kind, ', '.join(KINDS)))


def board_identity(spec: Dict[str, Any]):
    """``(kind, label, identity)`` of a board spec, without secrets, for ``_core.board.naming.board_id``.

    SQLite: the file's real path (``~`` expanded). PostgreSQL: ``host:port/dbname`` (the port
    defaults to 5432; user and password are not part of a board's identity). GitHub: the API host,
    the owner (case-insensitive, as GitHub treats it) and the project number. Every dispatcher of
    one board must spell its host the same way (or set the same ``dispatch_board_id``).
    """
    import os
    kind = (spec or {}).get('kind') or 'ledger'
    if kind == 'github':
        from urllib.parse import urlsplit
        api = urlsplit(str(spec.get('api_url') or 'https://api.github.com')).netloc.lower() or 'api.github.com'
        owner = str(spec.get('owner') or '').lower()
        project = str(spec.get('project') or '')
        return 'github', '%s-%s' % (owner, project), 'github:%s/%s/%s' % (api, owner, project)
    dsn = str(spec.get('dsn') or '')
    if dsn:
        host, port, dbname = _dsn_address(dsn)
        return 'pg', dbname, 'postgresql:%s:%s/%s' % (host.lower(), port, dbname)
    path = os.path.realpath(os.path.expanduser(str(spec.get('path') or '')))
    return 'sqlite', os.path.splitext(os.path.basename(path))[0], 'sqlite:%s' % path


def _dsn_address(dsn: str):
    """``(host, port, dbname)`` of a PostgreSQL URL or key=value DSN (never its credentials)."""
    import re
    from urllib.parse import parse_qs, unquote, urlsplit
    if '://' in dsn:
        url = urlsplit(dsn)
        query = parse_qs(url.query)
        host = url.hostname or (query.get('host') or [''])[0] or 'localhost'
        try:
            port = url.port or int((query.get('port') or ['5432'])[0])
        except ValueError:
            port = 5432
        dbname = unquote(url.path.lstrip('/')) or (query.get('dbname') or [''])[0]
        return host, port, dbname
    pairs = dict((m.group(1), m.group(2) or m.group(3) or '')
                 for m in re.finditer(r"(\w+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|(\S*))", dsn))
    try:
        port = int(pairs.get('port') or 5432)
    except ValueError:
        port = 5432
    return pairs.get('host') or pairs.get('hostaddr') or 'localhost', port, pairs.get('dbname') or ''
