# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The handoff claim: "the first runner with room takes it".

A session that closes may hand off to a successor named ``any-<topic>``: a successor addressed to
no machine. Every runner with room is eligible, so runners race, and the claim has to be atomic
and live where all of them can see it -- the ledger.

The rules in full, with their reasons: ``docs/internals.md``, section ``_store/handoff.py``.
"""

from __future__ import annotations

import datetime as _dt
import re
import sqlite3

from .._core.board.model import UTC, format_time, parse_time
from .._core.board.naming import DISPATCH_TAG, is_dispatch_name
from .._core.chains.chain import successor_workspace
from .sql import DEFAULT_TIMEOUT, SqlError, SqlStore

COMPONENT = 'handoff'
"""The ``schema_version.component`` of the claim table (separate from the board's)."""

MIGRATIONS = [
    (1, 'handoffs: one row per claimed dispatched successor', [
        "CREATE TABLE handoffs (id TEXT PRIMARY KEY, parent TEXT NOT NULL, successor TEXT NOT NULL, "
        "holder TEXT NOT NULL, workspace TEXT NOT NULL, claimed_at TEXT NOT NULL)",
    ]),
]
"""``id`` is ``claim_id(parent, successor)``: its PRIMARY KEY is the lock. ``holder`` is the winning
host; ``workspace`` the successor's worktree name (``_core.chains.chain.successor_workspace``, the
same text as the successor's session row, so a loser's line says where the work runs without
recomputing it under another naming rule); ``claimed_at`` is the winner's ``now``,
``_core.board.model.format_time`` text. ``parent`` and ``successor`` are kept as columns so a human can query
them without parsing ids."""

RETURNING_MIN_SQLITE = (3, 35, 0)
"""SQLite learnt ``INSERT ... RETURNING`` in 3.35.0 (2021-03). Older libraries use the fallback."""

SQLITE_HAS_RETURNING = sqlite3.sqlite_version_info >= RETURNING_MIN_SQLITE

_MAX_PARENT = 200
# Longest parent session id accepted. UNMEASURED GUESS: it only keeps a runaway value out of the
# primary key; the seed's session ids are short. Experiment that settles it: take the longest
# session id in the ledger after a month and keep 4x it.
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')

_INSERT = ('INSERT INTO handoffs (id, parent, successor, holder, workspace, claimed_at) VALUES (?, ?, ?, ?, ?, ?) '
           'ON CONFLICT (id) DO NOTHING')
_HOLDER = 'SELECT holder, workspace, claimed_at FROM handoffs WHERE id = ?'


class HandoffError(ValueError):
    """A caller error: an empty parent, a successor that is not ``any-<topic>``, an empty host."""


class ClaimUnproven(Exception):
    """The ledger could not be reached, read or written: the claim is unproven and NOBODY launches.

    Never caught and turned into a guess (module docstring: fail closed). The message names the
    ledger (password redacted by ``_store.sql``) and the fix."""


# --------------------------------------------------------------------------------------------
# pure parts


def _text(value, what):
    if not isinstance(value, str) or not value.strip():
        raise HandoffError('%s must be a non-empty string, got %r' % (what, value))
    if value != value.strip() or _CONTROL.search(value):
        raise HandoffError('%s must not carry leading/trailing spaces or control characters, got %r' % (what, value))
    return value


def check_successor(successor):
    """The successor name, when it is a dispatched one (``any-<topic>``); else ``HandoffError``."""
    _text(successor, 'successor')
    if not is_dispatch_name(successor):
        raise HandoffError('successor %r is not a dispatched handoff: only an %s<topic> successor (topic of letters, digits, '
                           '".", "_", "-", at most 100) belongs to no machine and is claimed; an untagged successor follows '
                           'its parent and needs no claim' % (successor, DISPATCH_TAG))
    return successor


def claim_id(parent, successor):
    """The claim's unique id: ``<parent>/<successor>``, e.g. ``s-1842/any-docs``.

    Zero entropy: a pure function of the parent session and the successor name, so every
    runner racing for one successor inserts the same key and the unique index lets one through.
    Unambiguous: a successor never contains ``/`` (``any-<topic>``), so the last ``/`` splits the
    id back (``split_claim_id``) even when the parent contains one. Raises ``HandoffError``.
    """
    _text(parent, 'parent')
    if len(parent) > _MAX_PARENT:
        raise HandoffError('parent must be at most %d characters, got %d' % (_MAX_PARENT, len(parent)))
    return '%s/%s' % (parent, check_successor(successor))


def split_claim_id(ident):
    """``(parent, successor)`` of an id ``claim_id`` made; ``HandoffError`` for anything else."""
    parent, sep, successor = str(ident or '').rpartition('/')
    if not sep or claim_id(parent, successor) != ident:
        raise HandoffError('%r is not a claim id' % (ident,))
    return parent, successor


def check_host(host):
    """The claiming host's name, verbatim (it is compared for the same-host re-claim)."""
    return _text(host, 'host')


def _now(now):
    if now is None:
        return _dt.datetime.now(UTC)
    parsed = parse_time(now)
    if parsed is None:
        raise HandoffError('now must be an ISO-8601 time or a datetime, got %r' % (now,))
    return parsed


def outcome(ident, host, holder, workspace, claimed_at, inserted):
    """The answer of every claim: ``{won, holder, id, claimed_at, workspace, inserted, why}``.

    ``won`` is true when ``host`` holds the claim (just inserted, or held already). The ``why`` of a
    loss is the line the seed's loser logs: "already claimed by <host>"."""
    won = holder == host
    if inserted:
        why = 'claimed %s: this host (%s) won; workspace %s' % (ident, host, workspace)
    elif won:
        why = 'already claimed by this host (%s) at %s; still ours, nothing written' % (host, claimed_at)
    else:
        why = 'already claimed by %s at %s (workspace %s); not launching here' % (holder, claimed_at, workspace)
    return dict(won=won, holder=holder, id=ident, claimed_at=claimed_at, workspace=workspace, inserted=bool(inserted), why=why)


# --------------------------------------------------------------------------------------------
# the store


class HandoffStore(object):
    """Claims of dispatched successors in the ledger (SQLite ``path`` or PostgreSQL ``dsn``).

    Opening migrates the ``handoff`` component unless ``migrate=False`` (check mode: nothing is
    written, and a ledger without the table simply has no claims yet). ``create`` lets a missing
    SQLite file be created (tests and provisioning only; the module never does -- see the module
    docstring). Every ledger failure is ``ClaimUnproven``.
    """

    def __init__(self, path=None, dsn=None, timeout=DEFAULT_TIMEOUT, create=False, migrate=True, now=None):
        try:
            self._store = SqlStore(path=path, dsn=dsn, timeout=timeout, create=create)
        except SqlError as exc:
            raise ClaimUnproven(str(exc))
        self.location = self._store.location
        self.backend = self._store.dialect.name
        # INSERT ... RETURNING when the backend has it; else SELECT changes() (SQLite < 3.35).
        self.returning = self.backend != 'sqlite' or SQLITE_HAS_RETURNING
        self.migrated = []
        if migrate:
            try:
                self.migrated = self._store.migrate(COMPONENT, MIGRATIONS, format_time(_now(now)))
            except SqlError as exc:
                self._store.close()
                raise ClaimUnproven('cannot prepare the handoffs table: %s' % exc)

    def close(self):
        self._store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _run(self, body, write):
        try:
            return self._store.transaction(body, write=write)
        except SqlError as exc:
            raise ClaimUnproven(str(exc))

    def _insert(self, tx, params):
        """ONE statement decides. True when this call inserted the row."""
        if self.returning:
            return tx.one(_INSERT + ' RETURNING id', params) is not None
        # SQLite < 3.35: no RETURNING. The insert still decides alone; changes() only reports
        # whether it inserted (0 on a conflict), inside the same BEGIN IMMEDIATE transaction.
        tx.run(_INSERT, params)
        return tx.one('SELECT changes()')[0] == 1

    def claim(self, parent, successor, host, now=None):
        """Claim ``successor`` of ``parent`` for ``host``: ``outcome(...)`` (see ``outcome``).

        One write transaction: the insert, and -- only when it inserted nothing -- the read of the
        holder. On PostgreSQL a concurrent claimer's insert waits for the first one's commit and
        then does nothing; the holder read that follows is a new statement under READ COMMITTED,
        so it sees the winner's committed row. On SQLite ``BEGIN IMMEDIATE`` serialises claimers.
        Raises ``HandoffError`` (caller error) or ``ClaimUnproven`` (fail closed).
        """
        ident = claim_id(parent, successor)
        check_host(host)
        workspace = successor_workspace(parent, successor, host)
        stamp = format_time(_now(now))
        params = (ident, parent, successor, host, workspace, stamp)

        def body(tx):
            if self._insert(tx, params):
                return host, workspace, stamp, True
            row = tx.one(_HOLDER, (ident,))
            if row is None:
                raise ClaimUnproven('the claim %s conflicted but no row holds it in the ledger at %s: the ledger is '
                                    'inconsistent; not launching' % (ident, self.location))
            return row[0], row[1], row[2], False
        holder, held_in, claimed_at, inserted = self._run(body, write=True)
        return outcome(ident, host, holder, held_in, claimed_at, inserted)

    def peek(self, parent, successor, host, now=None):
        """What ``claim`` would answer, writing nothing (check mode). ``inserted`` is true when the
        claim is free (a real claim would insert it for ``host``)."""
        ident = claim_id(parent, successor)
        check_host(host)
        workspace = successor_workspace(parent, successor, host)
        stamp = format_time(_now(now))
        try:
            versions = self._store.schema_versions(COMPONENT)
        except SqlError as exc:
            raise ClaimUnproven(str(exc))
        newer = [v for v in versions if v > MIGRATIONS[-1][0]]
        if newer:
            raise ClaimUnproven('the ledger at %s has handoff schema version %d but this fleet.dispatch knows only up to %d: '
                                'upgrade the collection on this host' % (self.location, max(newer), MIGRATIONS[-1][0]))
        row = self._run(lambda tx: tx.one(_HOLDER, (ident,)), write=False) if versions else None
        if row is None:
            found = outcome(ident, host, host, workspace, stamp, True)
            found['why'] = 'nobody holds %s yet: this host (%s) would claim it; workspace %s' % (ident, host, workspace)
            return found
        return outcome(ident, host, row[0], row[1], row[2], False)

    def since(self, when):
        """The claims made at or after ``when`` (ISO text, as ``claimed_at`` is stored), oldest first:
        ``[{parent, successor, holder, workspace, claimed_at}]`` -- what a runner that was not there
        reads to name the winners it lost to."""
        rows = self._run(lambda tx: tx.all('SELECT parent, successor, holder, workspace, claimed_at FROM handoffs '
                                           'WHERE claimed_at >= ? ORDER BY claimed_at, id', (str(when),)), write=False)
        return [dict(zip(('parent', 'successor', 'holder', 'workspace', 'claimed_at'), row)) for row in rows]

    def get(self, parent, successor):
        """The stored claim as ``{holder, workspace, claimed_at}``, or ``None`` when unclaimed."""
        ident = claim_id(parent, successor)
        row = self._run(lambda tx: tx.one(_HOLDER, (ident,)), write=False)
        return None if row is None else dict(holder=row[0], workspace=row[1], claimed_at=row[2])
