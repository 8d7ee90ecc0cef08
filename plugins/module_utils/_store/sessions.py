# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The session chains' work ledger: one row per session, with its handoff, in the SQL store.

Its own schema component (``session``) in the same store as the board and the claims, one code
path over SQLite and PostgreSQL (``_store.sql``). A session's close and its handoff are one
write transaction (``close``), so no runner ever sees a closed session whose handoff is still to
come. The successor's row is inserted by the runner that starts it, ``ON CONFLICT DO NOTHING`` on
an id that is a pure function of parent and successor (``_core.chains.chain.successor_session_id``):
the row is the proof that one master took it. Claims of ``any-`` successors stay in
``_store.handoff`` (the race-tested insert); a claim row lives in its own table and carries no
handoff, so no runner can mistake it for work.

The rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import datetime as _dt
import json

from .._core.board.model import UTC, format_time, parse_time
from . import handoff as _handoff
from .sql import DEFAULT_TIMEOUT, SqlError, SqlStore, SqlUnavailable

COMPONENT = 'session'

MIGRATIONS = [
    (1, 'sessions: one row per session, its handoff in the same row', [
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, parent TEXT, name TEXT NOT NULL, host TEXT NOT NULL, "
        "master TEXT NOT NULL, item INTEGER, state TEXT NOT NULL, depth INTEGER NOT NULL, started_at TEXT NOT NULL, "
        "closed_at TEXT, handoff TEXT, brief TEXT, reason TEXT, unit TEXT, workspace TEXT)",
        "CREATE INDEX sessions_parent ON sessions (parent)",
        "CREATE INDEX sessions_waiting ON sessions (state, handoff)",
    ]),
]
"""``state``: ``open`` (running), ``closed``, ``refused`` (never started: the reason says why),
``failed`` (its start failed: the reason says why). ``handoff`` is the successor's name and
``brief`` its five fields as JSON, both set only by ``close``. ``name`` is the name the session
was started under (the parent's handoff name, or what a human called it); ``depth`` counts hops
from the chain's first session (0)."""

COLUMNS = ('id', 'parent', 'name', 'host', 'master', 'item', 'state', 'depth', 'started_at', 'closed_at', 'handoff',
           'brief', 'reason', 'unit', 'workspace')
_SELECT = 'SELECT %s FROM sessions' % ', '.join(COLUMNS)


class LedgerUnreachable(Exception):
    """The ledger could not be opened, read or written: a chain runner launches nothing."""


class SessionError(ValueError):
    """A caller error: no such session, a session already closed."""


def _row(row):
    if row is None:
        return None
    out = dict(zip(COLUMNS, row))
    out['brief'] = json.loads(out['brief']) if out['brief'] else None
    return out


def _stamp(now):
    when = parse_time(now) if now is not None else _dt.datetime.now(UTC)
    return format_time(when)


def _stamp_in(tx, now, db_clock):
    """The time of a write: ``now`` when the caller fixes one; else the database's clock inside ``tx`` on
    PostgreSQL, so a session row is dated on the board's clock whatever its writer's clock says (D16); else
    (SQLite, one machine's file) that machine's clock."""
    if now is None and db_clock:
        told = tx.one('SELECT clock_timestamp()')[0]
        if isinstance(told, _dt.datetime) and told.tzinfo is not None:
            return format_time(told.astimezone(UTC))
    return _stamp(now)


class SessionStore(object):
    """Sessions in the ledger (SQLite ``path`` or PostgreSQL ``dsn``). Every ledger failure is
    ``LedgerUnreachable``. Opening migrates this component and the claims' (``_store.handoff``)."""

    def __init__(self, path=None, dsn=None, timeout=DEFAULT_TIMEOUT, create=False, now=None, migrate=True):
        try:
            self._store = SqlStore(path=path, dsn=dsn, timeout=timeout, create=create)
        except SqlError as exc:
            raise LedgerUnreachable(str(exc))
        self.location = self._store.location
        self.backend = self._store.dialect.name
        self._db_clock = self.backend == 'postgres'
        self.readonly = not migrate
        if not migrate:   # check mode / *_info: write nothing; a ledger without the tables has no sessions yet
            return
        try:
            self._store.migrate(COMPONENT, MIGRATIONS, _stamp(now))
            self._store.migrate(_handoff.COMPONENT, _handoff.MIGRATIONS, _stamp(now))
        except SqlError as exc:
            self._store.close()
            raise LedgerUnreachable('cannot prepare the sessions table: %s' % exc)

    def close_store(self):
        self._store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close_store()
        return False

    def _run(self, body, write=False):
        try:
            return self._store.transaction(body, write=write)
        except SqlUnavailable as exc:
            raise LedgerUnreachable(str(exc))
        except SqlError as exc:
            raise LedgerUnreachable(str(exc))

    # -- reading -------------------------------------------------------------------------------
    def has(self, component=COMPONENT):
        """Whether the ledger has ``component``'s tables (always, once opened with ``migrate``)."""
        if not self.readonly:
            return True
        try:
            return bool(self._store.schema_versions(component))
        except SqlError as exc:
            raise LedgerUnreachable(str(exc))

    def get(self, ident):
        return self._run(lambda tx: _row(tx.one(_SELECT + ' WHERE id = ?', (ident,))))

    def all(self):
        if not self.has():
            return []
        return self._run(lambda tx: [_row(r) for r in tx.all(_SELECT + ' ORDER BY started_at, id')])

    def waiting(self):
        """Closed sessions whose handoff has no successor row yet, oldest close first (ONE read)."""
        return self._run(lambda tx: [_row(r) for r in tx.all(
            _SELECT + " p WHERE p.state = 'closed' AND p.handoff IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.parent = p.id) ORDER BY p.closed_at, p.id")])

    def claims(self):
        """Every claim row: ``{parent, successor, holder, workspace, claimed_at}``."""
        if not self.has(_handoff.COMPONENT):
            return []
        return self._run(lambda tx: [dict(zip(('parent', 'successor', 'holder', 'workspace', 'claimed_at'), r)) for r in tx.all(
            'SELECT parent, successor, holder, workspace, claimed_at FROM handoffs ORDER BY claimed_at, id')])

    # -- writing -------------------------------------------------------------------------------
    # Every write below takes ``now=None`` to mean "the ledger's clock" (``_stamp_in``): a runner passes none.
    def open(self, ident, name, host, master, item=None, now=None):
        """Record a chain's first session (depth 0) as open; an existing row is left alone. True when inserted."""
        return self._run(lambda tx: tx.run(
            'INSERT INTO sessions (id, parent, name, host, master, item, state, depth, started_at) '
            "VALUES (?, NULL, ?, ?, ?, ?, 'open', 0, ?) ON CONFLICT (id) DO NOTHING",
            (ident, name, host, master, item, _stamp_in(tx, now, self._db_clock))) == 1, write=True)

    def start_successor(self, parent, ident, host, master, unit, workspace, now=None, state='open', reason=None):
        """Insert the successor row of ``parent`` (a row dict); ``(inserted, row)``.

        ``ON CONFLICT DO NOTHING`` on the successor's id: exactly one master inserts it; every
        other gets the holder's row back. ``state='refused'`` records a chain stopped at its
        depth limit the same way (so nobody asks again)."""
        def body(tx):
            params = (ident, parent['id'], parent['handoff'], host, master, parent.get('item'), state,
                      int(parent.get('depth') or 0) + 1, _stamp_in(tx, now, self._db_clock), None, reason, unit, workspace)
            inserted = tx.run('INSERT INTO sessions (id, parent, name, host, master, item, state, depth, started_at, brief, reason, '
                              'unit, workspace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
                              params) == 1
            return inserted, _row(tx.one(_SELECT + ' WHERE id = ?', (ident,)))
        return self._run(body, write=True)

    def set_state(self, ident, state, reason, now=None):
        """Mark a session ``failed``/``closed`` with a reason (a start that failed after the claim)."""
        self._run(lambda tx: tx.run('UPDATE sessions SET state = ?, reason = ?, closed_at = ? WHERE id = ?',
                                    (state, reason, _stamp_in(tx, now, self._db_clock), ident)), write=True)

    def close(self, ident, handoff=None, reason=None, now=None, create=None):
        """Close session ``ident`` and record its handoff, in ONE write transaction.

        ``handoff``: ``parse_handoff``'s dict, or None (nothing chained). ``create``: a dict
        ``{name, host, master, item}`` that records the session first when the ledger has no row for
        it (the laptop's ``fleet-runner handoff`` from a session no runner started). A closed
        session is never closed again: ``SessionError``.
        """
        def body(tx):
            row = _row(tx.one(_SELECT + ' WHERE id = ?' + self._store.dialect.for_update, (ident,)))
            stamp = _stamp_in(tx, now, self._db_clock)   # after the row lock: the close follows what it waited for
            if row is None:
                if not create:
                    raise SessionError('no session %s in the ledger at %s' % (ident, self.location))
                tx.run('INSERT INTO sessions (id, parent, name, host, master, item, state, depth, started_at) '
                       "VALUES (?, NULL, ?, ?, ?, ?, 'open', 0, ?)",
                       (ident, create.get('name') or ident, create['host'], create['master'], create.get('item'), stamp))
            elif row['state'] != 'open':
                raise SessionError('session %s is already %s; it is not closed again' % (ident, row['state']))
            tx.run("UPDATE sessions SET state = 'closed', closed_at = ?, handoff = ?, brief = ?, reason = ? WHERE id = ?",
                   (stamp, handoff['successor'] if handoff else None, json.dumps(handoff['brief']) if handoff else None,
                    reason, ident))
            return _row(tx.one(_SELECT + ' WHERE id = ?', (ident,)))
        return self._run(body, write=True)
