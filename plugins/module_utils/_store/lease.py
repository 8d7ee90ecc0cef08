# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease store: one named lock held across the probe AND the launch, in the SQL store.

Why a store and not a held file descriptor: seed 000 D4 measured two dispatchers that both passed
a "no live unit" pre-flight 26-27 s before they launched, and both launched. The lookup that
takes the lock runs in a worker process that exits after its task, so the lease is *data*: a row
of the table ``leases`` (its own migration component, ``lease``) in a ``_store.sql.SqlStore`` --
SQLite on one controller (the ledger file, or a state-dir file), PostgreSQL for several. One
statement set for both dialects; the rule is ``_core.dispatch.lease`` (pure). A store that breaks fails
open (D5). The rules in full, with their reasons: ``docs/internals.md``, section ``_store/lease.py``.
"""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any, Dict, Optional

from .._core.dispatch.lease import (  # noqa: F401 - re-exported: the lookup and the tests import them from here
    Lease, LeaseError, check_request, decide_acquire, decide_release, decide_renew, describe, degraded, fence)
from .._core.board.model import UTC, format_time, parse_time
from .sql import DEFAULT_TIMEOUT, SqlError, SqlStore, redact_dsn, scrub  # one DSN redaction for the ledger and the lease

DEFAULT_TTL = 600
"""Default lease lifetime in seconds. UNMEASURED GUESS.

The lease is released in ``always:``, so the TTL only matters after a crash (the controller
rebooted, ``ansible-playbook`` was killed): then the item waits up to one TTL before another
dispatcher may take it. Too short is the dangerous side: a lease that expires while its holder is
still between probe and launch reopens D4's window. Seed 000 measured 26-27 s guard-to-launch on
its fleet; ours includes a ``git fetch`` for the worktree, which is unmeasured. 600 s is 20x the
seed's figure. Experiment that settles it: log ``acquired_at`` and the release time of every
dispatch for a week (both are in the lease) and set the TTL to 2x the longest hold observed --
the seed's own rule for the reaper threshold.
"""

PG_CONNECT_TIMEOUT = 5
"""Seconds to wait for the PostgreSQL lease store to answer before failing open. UNMEASURED GUESS
for a real network. Reading on the CI box (2 cores, load ~15, loopback, 20 connects each): a
refused port fails in 0.45 ms median / 3 ms max; a successful connect takes 30 ms median /
114 ms max. So this only bounds a host that drops packets. Experiment that settles it: time
``psycopg.connect`` from each controller to the ledger host for a week and use 3x the p99.
"""

PG_STATEMENT_TIMEOUT_MS = 10000
"""Per-statement ceiling (ms) in the PostgreSQL store, so a stuck lock on the table degrades the
lease instead of hanging the dispatcher. Reading: the race test
(``tests/unit/plugins/lookup/test_mutex_processes.py``, 8 processes x 20 rounds on one name, CI
box at load ~20) printed acquisition latency median 5.5 ms, p90 33 ms, max 380 ms; 10 s is ~26x
that max. UNMEASURED on a production ledger: rerun that test against it and keep >= 20x the max.
"""

LEASE_FILE = 'leases.sqlite3'
"""The SQLite file's name when the lease ``path`` names a directory (and under the state dir)."""

BACKENDS = ('sqlite', 'postgres', 'postgresql')
"""Accepted ``backend`` values. ``postgresql`` is a spelling of ``postgres``."""

COMPONENT = 'lease'
"""The ``schema_version.component`` of the lease table (the board's schema version does not move)."""

MIGRATIONS = [
    (1, 'leases: one row per lease name (D4 third layer)', [
        'CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT, token BIGINT NOT NULL, '
        'acquired_at TEXT, expires_at TEXT, released_at TEXT)',
    ]),
]
"""``owner`` NULL: free (released, or the placeholder row ``_SEED`` makes, token 0). The row is
never deleted, so the next acquisition of a name always gets a larger token. Times are
``format_time`` text (fixed-width UTC: text order is time order on both dialects)."""

# The same statements on both dialects. _SEED makes the row exist, so that _READ's row lock
# (PostgreSQL FOR NO KEY UPDATE; SQLite: BEGIN IMMEDIATE already serialises writers) covers a
# name nobody has taken yet: two first acquirers of one name queue on that row instead of both
# reading "no row" and both inserting.
_SEED = 'INSERT INTO leases (name, owner, token) VALUES (?, NULL, 0) ON CONFLICT (name) DO NOTHING'
_READ = 'SELECT owner, token, acquired_at, expires_at, released_at FROM leases WHERE name = ?'
_WRITE = 'UPDATE leases SET owner = ?, token = ?, acquired_at = ?, expires_at = ?, released_at = ? WHERE name = ?'
_NOW = 'SELECT CURRENT_TIMESTAMP'


def _clock() -> _dt.datetime:
    """The controller's clock (one place: the tests replace it to skew a controller)."""
    return _dt.datetime.now(UTC)


def default_path(environ: Optional[Dict[str, str]] = None) -> str:
    """Where the SQLite lease store lives when nothing names it: the dispatcher's state dir
    (``$XDG_STATE_HOME/fleet-dispatch``, else ``~/.local/state/fleet-dispatch``), the directory
    ``roles/dispatch`` (tasks/read.yml) and ``roles/sweeper`` create for the user who dispatches."""
    env = os.environ if environ is None else environ
    base = env.get('XDG_STATE_HOME') or os.path.join(os.path.expanduser('~'), '.local', 'state')
    return os.path.join(base, 'fleet-dispatch', LEASE_FILE)


def sqlite_path(path: str = '') -> str:
    """The SQLite file of a ``path`` option: the file itself, or ``leases.sqlite3`` inside it when it
    names an existing directory (what the retired file backend's ``path`` was); empty: ``default_path``."""
    where = os.path.abspath(os.path.expanduser(path)) if path else default_path()
    if os.path.isdir(where):
        where = os.path.join(where, LEASE_FILE)
    return where


def _record(row) -> Optional[Dict[str, Any]]:
    """A stored row as ``_core.dispatch.lease``'s record; the never-taken placeholder is no record."""
    if row is None or (row[0] is None and not row[1] and row[2] is None and row[4] is None):
        return None
    return {'owner': row[0] or '', 'token': int(row[1]), 'acquired_at': row[2], 'expires_at': row[3],
            'released_at': row[4]}


class LeaseStore(object):
    """The protocol: ``acquire(name, owner, ttl, now=None) -> Lease``; ``release(name, owner,
    now=None) -> Lease``; ``renew(name, owner, token, heartbeat, until, now=None) -> Lease`` (the
    keeper's heartbeat); ``get(name, now=None) -> Lease`` (``acquired`` always false; ``holder``
    tells who has it). ``now`` (an aware datetime or ISO text) replaces the clock -- tests only;
    without it SQLite reads the controller's clock and PostgreSQL the database's, so controllers
    with skewed clocks agree. ``close()`` frees the connection; stores are context managers."""

    backend = ''

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class SqlLeaseStore(LeaseStore):
    """Leases in the SQL store: SQLite ``path`` (one controller) or PostgreSQL ``dsn`` (several).

    Every operation is one write transaction: make the row exist, read it under its row lock,
    decide with ``_core.dispatch.lease``, write the decision. A store that cannot be opened, migrated or
    written fails OPEN (``degraded``) with the failure and the fix; caller errors raise
    ``LeaseError``. A missing SQLite file is created, and its directory too (mode 0700): the
    default store cannot be missing.
    """

    def __init__(self, path: str = '', dsn: str = '', timeout: Optional[float] = None,
                 statement_timeout_ms: int = PG_STATEMENT_TIMEOUT_MS):
        self.dsn = dsn or ''
        self.path = '' if self.dsn else sqlite_path(path)
        self.backend = 'postgres' if self.dsn else 'sqlite'
        self.store = redact_dsn(self.dsn) if self.dsn else self.path
        self.timeout = float(timeout if timeout is not None else (PG_CONNECT_TIMEOUT if self.dsn else DEFAULT_TIMEOUT))
        self.statement_timeout_ms = int(statement_timeout_ms)
        self._sql = None

    def close(self):
        if self._sql is not None:
            try:
                self._sql.close()
            finally:
                self._sql = None

    # -- plumbing ---------------------------------------------------------------------------
    def _open(self, when):
        if self._sql is None:
            if self.path:
                os.makedirs(os.path.dirname(self.path) or '.', mode=0o700, exist_ok=True)
                sql = SqlStore(path=self.path, timeout=self.timeout, create=True, what='the lease store')
            else:
                sql = SqlStore(dsn=self.dsn, timeout=self.timeout, what='the lease store')
            try:
                sql.migrate(COMPONENT, MIGRATIONS, format_time(when or _clock()))
            except BaseException:
                sql.close()
                raise
            self._sql = sql
        return self._sql

    def _fix(self) -> str:
        if self.path:
            return ('the lease store is the SQLite file %s: make %s a directory this user can write (the dispatch role\'s '
                    'tasks/read.yml and the sweeper role create it), or point the lease elsewhere: dispatch_lease_path, the '
                    'lookup\'s path=, FLEET_DISPATCH_LEASE_PATH' % (self.path, os.path.dirname(self.path)))
        return ('check that PostgreSQL answers at %s and that this role may create and write the tables leases and '
                'schema_version (grant CREATE on its schema, or run the ledger role first)' % self.store)

    def _failure(self, exc: BaseException) -> str:
        return scrub('%s: %s' % (type(exc).__name__, ' '.join(str(exc).split())), self.dsn)

    def _run(self, now, body, write=True):
        """``body(tx, when)`` in one transaction; ``when`` is ``now``, else the clock (see ``LeaseStore``)."""
        given = parse_time(now) if now is not None else None
        sql = self._open(given)

        def wrapped(tx):
            if tx.dialect.name != 'sqlite':
                tx.run('SET LOCAL statement_timeout = %d' % self.statement_timeout_ms)
            when = given
            if when is None:
                when = parse_time(tx.one(_NOW)[0]) if tx.dialect.name != 'sqlite' else _clock()
            return body(tx, when)
        return sql.transaction(wrapped, write=write)

    def _guarded(self, name, owner, now, body, acquire):
        try:
            lease = self._run(now, body)
        except (SqlError, OSError) as exc:
            self.close()
            return degraded(name, owner, self.backend, self._failure(exc), self._fix(), store=self.store, acquire=acquire)
        lease.store = self.store
        return lease

    # -- the protocol -----------------------------------------------------------------------
    def acquire(self, name, owner, ttl, now=None):
        check_request(name, owner, ttl)

        def body(tx, when):
            tx.run(_SEED, (name,))
            record = self._read(tx, name)
            new, lease = decide_acquire(record, name, owner, ttl, when, self.backend)
            if new is not None:
                self._write(tx, name, new)
            return lease
        return self._guarded(name, owner, now, body, acquire=True)

    def release(self, name, owner, now=None):
        check_request(name, owner)

        def body(tx, when):
            record = self._read(tx, name)
            new, lease = decide_release(record, name, owner, when, self.backend)
            if new is not None:
                self._write(tx, name, new)
            return lease
        return self._guarded(name, owner, now, body, acquire=False)

    def renew(self, name, owner, token, heartbeat, until, now=None):
        """Keep a lease this owner holds with ``token`` for ``heartbeat`` more seconds, never past
        ``until`` (``_core.dispatch.lease.decide_renew``); a renewal never takes a free lease."""
        check_request(name, owner, heartbeat)

        def body(tx, when):
            record = self._read(tx, name)
            new, lease = decide_renew(record, name, owner, token, heartbeat, until, when, self.backend)
            if new is not None:
                self._write(tx, name, new)
            return lease
        return self._guarded(name, owner, now, body, acquire=False)

    def get(self, name, now=None):
        check_request(name)
        try:
            lease = self._run(now, lambda tx, when: describe(self._read(tx, name, lock=False), name, when, self.backend),
                              write=False)
        except (SqlError, OSError) as exc:
            self.close()
            return Lease(name, False, '', '', None, None, self.backend, True,
                         'lease store unusable (%s); fix: %s' % (self._failure(exc), self._fix()), store=self.store)
        lease.store = self.store
        return lease

    def fence(self, name, owner, token, now=None):
        """``(why, failure)``: the fencing check of ``_core.dispatch.lease.fence`` on the stored record ('' when the
        lease is still this owner's under ``token``), or ``('', failure)`` when the store cannot be read (fail open)."""
        check_request(name)
        try:
            return self._run(now, lambda tx, when: (fence(self._read(tx, name, lock=False), name, owner, token, when), ''),
                             write=False)
        except (SqlError, OSError) as exc:
            self.close()
            return '', 'lease store unusable (%s); fix: %s' % (self._failure(exc), self._fix())

    def _read(self, tx, name, lock=True):
        """The stored record of ``name`` (under its row lock when ``lock``); a hook the race tests slow down."""
        return _record(tx.one(_READ + (tx.dialect.for_update if lock else ''), (name,)))

    @staticmethod
    def _write(tx, name, new):
        tx.run(_WRITE, (new.get('owner') or None, int(new['token']), new.get('acquired_at'), new.get('expires_at'),
                        new.get('released_at'), name))


def open_store(backend: str = 'sqlite', path: str = '', dsn: str = '') -> SqlLeaseStore:
    """The factory the lookup uses. ``sqlite`` with ``path``;
    ``postgres``/``postgresql`` with ``dsn``. Raises ``LeaseError`` for a caller error."""
    if backend == 'sqlite':
        return SqlLeaseStore(path=path or '')
    if backend in ('postgres', 'postgresql'):
        if not dsn:
            raise LeaseError('backend %s needs a dsn (option dsn or FLEET_DISPATCH_LEASE_DSN)' % backend)
        return SqlLeaseStore(dsn=dsn)
    raise LeaseError('unknown lease backend %r: use sqlite or postgres' % (backend,))


def store_info(backend: str = 'sqlite', path: str = '', dsn: str = '') -> Dict[str, Any]:
    """What ``status`` says about a dispatcher's lease store: the backend, where (the
    SQLite file, or the DSN with its password redacted), whether several controllers share it,
    and one sentence. Opens nothing."""
    if backend in ('postgres', 'postgresql'):
        where = redact_dsn(dsn) if dsn else '(no dsn: set dispatch_lease_dsn or FLEET_DISPATCH_LEASE_DSN)'
        return {'backend': 'postgres', 'where': where, 'shared': True,
                'note': 'shared: every controller and AWX job that uses this database excludes the others'}
    if backend != 'sqlite':
        raise LeaseError('unknown lease backend %r: use sqlite or postgres' % (backend,))
    return {'backend': 'sqlite', 'where': sqlite_path(path), 'shared': False,
            'note': ('single-controller only: a dispatcher on another controller or in an AWX job (its container is thrown '
                     'away) does not see these leases; use dispatch_lease_backend=postgres for several dispatchers')}
