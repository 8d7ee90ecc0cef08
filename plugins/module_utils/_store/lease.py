# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease store: one named lock held across the probe AND the launch.

Why a store and not a held file descriptor: seed 000 D4 measured two dispatchers that both passed
a "no live unit" pre-flight 26-27 s before they launched, and both launched. The fix is one lock
held from the probe through the launch, so the loser's probe sees the winner's unit. In Ansible
that span covers many tasks, and the lookup that takes the lock runs in a worker process that
exits after its task: a ``flock`` held by that process would be released the moment it exits.
So the lease is *data* in a store: an owner, a fencing token and an expiry.

The rules in full, with their reasons: ``docs/internals.md``, section ``_store/lease.py``.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import math
import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple

from .._core.model import UTC, format_time, parse_time
from .sql import redact_dsn, scrub  # one DSN redaction for the ledger and the lease store

try:
    import fcntl
    HAS_FCNTL = True
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None
    HAS_FCNTL = False

try:
    import psycopg
    HAS_PSYCOPG = True
    PSYCOPG_IMPORT_ERROR = None
except ImportError as _exc:  # pragma: no cover - environment dependent
    psycopg = None
    HAS_PSYCOPG = False
    PSYCOPG_IMPORT_ERROR = str(_exc)


DEFAULT_LEASE_DIR = '/var/lib/fleet-dispatch/leases'
"""Default directory of the file backend.

A system path, not ``~``: on one controller the sweeper's timer and an operator's hand dispatch
usually run as *different* users, and a per-user default would give each its own lease
directory -- two locks that each look held, i.e. no lock at all, silently. ``/tmp`` is no
better: a systemd service with ``PrivateTmp=`` sees its own ``/tmp``. When this directory is
missing and cannot be created, every lease comes back degraded with a warning naming the fix.
"""

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

FILE_FORMAT = 1

_SAFE_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,99}$')
_UNSAFE_CHARS = re.compile(r'[^A-Za-z0-9_.@+-]+')


class LeaseError(ValueError):
    """A caller error (empty name, empty owner, non-positive ttl). Never raised for a store
    failure: those fail open and come back as a degraded ``Lease``."""


@dataclass
class Lease:
    """The answer of every store operation.

    ``acquired``: the caller holds the lease now (or the store failed and ``degraded`` is true:
    proceed, and say so). ``owner``: the caller's owner token. ``holder``: who holds the lease now
    (the caller when acquired; the other owner when refused; ``''`` when free). ``token``: the
    fencing token of the lease the caller holds or just released (``None`` when refused or
    degraded). ``expires_at``: ISO-8601 UTC expiry of the holder's lease (``None`` when free).
    ``released``: a release removed the caller's lease. ``why``: one sentence for a human.
    """

    name: str
    acquired: bool
    owner: str
    holder: str
    token: Optional[int]
    expires_at: Optional[str]
    backend: str
    degraded: bool
    why: str
    released: bool = False
    store: str = ''

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


class LeaseStore(object):
    """The protocol both backends implement.

    ``acquire(name, owner, ttl, now=None) -> Lease``; ``release(name, owner, now=None) -> Lease``;
    ``get(name, now=None) -> Lease`` (``acquired`` is always false there; ``holder`` tells who has
    it). ``now`` is an aware datetime for the file backend; the PostgreSQL backend ignores it and
    reads the database clock. ``close()`` frees connections; stores are context managers.
    """

    backend = ''

    def acquire(self, name: str, owner: str, ttl: float, now: Optional[_dt.datetime] = None) -> Lease:
        raise NotImplementedError

    def release(self, name: str, owner: str, now: Optional[_dt.datetime] = None) -> Lease:
        raise NotImplementedError

    def get(self, name: str, now: Optional[_dt.datetime] = None) -> Lease:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# --------------------------------------------------------------------------------------------
# pure helpers


def check_request(name: Any, owner: Any = 'x', ttl: Any = 1) -> None:
    """Reject caller errors loudly (they are bugs in the playbook, not store failures)."""
    if not isinstance(name, str) or not name.strip():
        raise LeaseError('a lease name must be a non-empty string, got %r' % (name,))
    if not isinstance(owner, str) or not owner.strip():
        raise LeaseError('an owner token must be a non-empty string, got %r' % (owner,))
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise LeaseError('ttl must be a positive number of seconds, got %r' % (ttl,))


def safe_name(name: str) -> str:
    """A file name for a lease name: the name itself when it is plain (``task-42``), otherwise a
    sanitised prefix plus a hash of the full name, so two different names never share a file
    (``a/b`` and ``a_b`` stay two leases) and no name can climb out of the directory."""
    if _SAFE_NAME.match(name) and name not in ('.', '..'):
        return name
    prefix = _UNSAFE_CHARS.sub('_', name).strip('._')[:60] or 'lease'
    digest = hashlib.sha256(name.encode('utf-8')).hexdigest()[:16]
    return '%s~%s' % (prefix, digest)


def _as_time(now: Optional[_dt.datetime]) -> _dt.datetime:
    if now is None:
        return _dt.datetime.now(UTC)
    parsed = parse_time(now)
    if parsed is None:
        return _dt.datetime.now(UTC)
    return parsed


def _live(record: Optional[Dict[str, Any]], now: _dt.datetime) -> bool:
    """A record is a live lease when it has an owner and its expiry is still in the future."""
    if not record or not record.get('owner'):
        return False
    expires = parse_time(record.get('expires_at'))
    return expires is not None and expires > now


def decide_acquire(record: Optional[Dict[str, Any]], name: str, owner: str, ttl: float,
                   now: _dt.datetime, backend: str = 'file') -> Tuple[Optional[Dict[str, Any]], Lease]:
    """The acquisition rule, pure: ``record`` is the stored lease (or ``None``).

    Returns ``(new_record, lease)``; ``new_record`` is ``None`` when nothing must be written
    (a refusal). Same owner and live -> same token, expiry extended. Free, released or expired
    -> token + 1 (per name, so strictly larger than the lease taken over). Live and held by
    someone else -> refused with the holder.
    """
    expires = now + _dt.timedelta(seconds=ttl)
    prev_token = 0
    if record and isinstance(record.get('token'), int) and not isinstance(record.get('token'), bool):
        prev_token = record['token']
    if _live(record, now):
        holder = record['owner']
        if holder == owner:
            new = dict(record, expires_at=format_time(expires))
            return new, Lease(name, True, owner, owner, prev_token, new['expires_at'], backend, False,
                              'already held by this owner (token %d); expiry extended to %s' % (prev_token, new['expires_at']))
        return None, Lease(name, False, owner, holder, None, record.get('expires_at'), backend, False,
                           'held by %s (token %s) until %s' % (holder, record.get('token'), record.get('expires_at')))
    token = prev_token + 1
    new = {'format': FILE_FORMAT, 'name': name, 'owner': owner, 'token': token,
           'acquired_at': format_time(now), 'expires_at': format_time(expires)}
    if not record:
        why = 'acquired a new lease (token %d)' % token
    elif not record.get('owner'):
        why = 'acquired after release (token %d)' % token
    else:
        why = 'took over the expired lease of %s (token %s, expired %s); new token %d' % (
            record.get('owner'), record.get('token'), record.get('expires_at'), token)
    return new, Lease(name, True, owner, owner, token, new['expires_at'], backend, False, why)


def decide_release(record: Optional[Dict[str, Any]], name: str, owner: str,
                   now: _dt.datetime, backend: str = 'file') -> Tuple[Optional[Dict[str, Any]], Lease]:
    """The release rule, pure. Only the owner releases; the record keeps its token (so the next
    acquisition of this name still gets a larger one) and loses its owner. Anyone else's release
    is a no-op that names the holder -- it must never free a lease it does not hold."""
    if record and record.get('owner') == owner:
        new = dict(record, owner='', expires_at=None, released_at=format_time(now))
        was_live = _live(record, now)
        why = 'released (token %s)' % record.get('token') if was_live else \
            'released; it had already expired at %s (token %s)' % (record.get('expires_at'), record.get('token'))
        return new, Lease(name, False, owner, '', record.get('token'), None, backend, False, why, released=True)
    if _live(record, now):
        return None, Lease(name, False, owner, record['owner'], None, record.get('expires_at'), backend, False,
                           'not released: held by %s (token %s) until %s; a release by a non-owner is a no-op'
                           % (record['owner'], record.get('token'), record.get('expires_at')))
    return None, Lease(name, False, owner, '', None, None, backend, False,
                       'not released: this owner holds no lease on %s (it is free); nothing to do' % name)


def describe(record: Optional[Dict[str, Any]], name: str, now: _dt.datetime, backend: str = 'file') -> Lease:
    """The current state of a lease as a ``Lease`` with ``acquired: false``."""
    if _live(record, now):
        return Lease(name, False, '', record['owner'], record.get('token'), record.get('expires_at'), backend, False,
                     'held by %s (token %s) until %s' % (record['owner'], record.get('token'), record.get('expires_at')))
    return Lease(name, False, '', '', None, None, backend, False, 'free')


def degraded(name: str, owner: str, backend: str, failure: str, fix: str, store: str = '',
             acquire: bool = True) -> Lease:
    """Fail OPEN (D4's table, D5): the store could not be used, so the caller proceeds *without*
    the lock -- and the ``why`` says which failure and which fix, for the stderr warning."""
    if acquire:
        why = ('lease store unusable (%s): proceeding WITHOUT the lock on %s, so a second dispatcher is '
               'not excluded (fail open); fix: %s' % (failure, name, fix))
    else:
        why = 'lease store unusable (%s): could not release %s; it expires by itself; fix: %s' % (failure, name, fix)
    return Lease(name, acquire, owner, owner if acquire else '', None, None, backend, True, why, store=store)


# --------------------------------------------------------------------------------------------
# file backend


class _Corrupt(Exception):
    pass


class FileLeaseStore(LeaseStore):
    """Leases as JSON files in one directory on the controller (the lock across probe and
    launch; D5: fail open). See the module docstring for the guarantees."""

    backend = 'file'

    def __init__(self, path: str = DEFAULT_LEASE_DIR):
        self.path = os.path.abspath(os.path.expanduser(path or DEFAULT_LEASE_DIR))

    # -- filesystem primitives (subclassed by the tests' negative control) --

    def _files(self, name: str) -> Tuple[str, str]:
        safe = safe_name(name)
        return os.path.join(self.path, safe + '.json'), os.path.join(self.path, '.' + safe + '.lock')

    def _ensure_dir(self) -> None:
        if not os.path.isdir(self.path):
            os.makedirs(self.path, mode=0o775, exist_ok=True)

    @contextmanager
    def _locked(self, lock_path: str):
        """Exclusive ``flock`` for the critical section only. The lock file is never deleted
        (deleting it would let two processes lock two different inodes); it holds no data, so a
        crash leaves nothing behind that a human must clean up. Opened read-only: ``flock`` needs
        no write access, so a lock file another user created (mode reduced by their umask) still
        locks for everyone who can read it."""
        fd = os.open(lock_path, os.O_RDONLY | os.O_CREAT, 0o664)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _read(self, data_path: str) -> Optional[Dict[str, Any]]:
        try:
            with open(data_path, 'r', encoding='utf-8') as handle:
                text = handle.read()
        except (IOError, OSError) as exc:
            if exc.errno == errno.ENOENT:
                return None
            raise
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise _Corrupt('%s is not JSON (%s)' % (data_path, exc))
        # D5's type check: trust the content only when it has the shape of a lease.
        if not isinstance(data, dict) or not isinstance(data.get('token', 0), int) \
                or not isinstance(data.get('owner') or '', str):
            raise _Corrupt('%s does not hold a lease object' % data_path)
        try:
            parse_time(data.get('expires_at'))
        except (TypeError, ValueError):
            raise _Corrupt('%s has an unreadable expiry %r' % (data_path, data.get('expires_at')))
        return data

    def _write(self, data_path: str, record: Dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix='.' + os.path.basename(data_path) + '.', suffix='.tmp')
        try:
            with os.fdopen(fd, 'w', encoding='utf-8') as handle:
                json.dump(record, handle, sort_keys=True)
                handle.write('\n')
                handle.flush()
                os.fsync(handle.fileno())
            # Leases hold no secret; group-readable so the sweeper's user and an operator on the
            # same controller can share the directory (its group is shared by every dispatching user).
            os.chmod(tmp, 0o664)
            os.replace(tmp, data_path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def _fix(self) -> str:
        return ('make %s a directory this user can read and write (group-writable for every user that dispatches), or point '
                'the lookup elsewhere with path= / FLEET_DISPATCH_LEASE_DIR' % self.path)

    # -- the protocol --

    def acquire(self, name, owner, ttl, now=None):
        check_request(name, owner, ttl)
        when = _as_time(now)
        if not HAS_FCNTL:  # pragma: no cover - not POSIX
            return degraded(name, owner, self.backend, 'fcntl is unavailable on this platform', 'run the controller on POSIX',
                            store=self.path)
        data_path, lock_path = self._files(name)
        try:
            self._ensure_dir()
            with self._locked(lock_path):
                repaired = ''
                try:
                    record = self._read(data_path)
                except _Corrupt as exc:
                    # No positive evidence of a holder, and nothing a human must clean up:
                    # overwrite it, and report the lease as degraded because the previous token
                    # and holder are unknown.
                    record, repaired = None, str(exc)
                new, lease = decide_acquire(record, name, owner, ttl, when, self.backend)
                if new is not None:
                    self._write(data_path, new)
        except (IOError, OSError) as exc:
            return degraded(name, owner, self.backend, '%s: %s' % (type(exc).__name__, exc), self._fix(), store=self.path)
        lease.store = self.path
        if repaired:
            lease.degraded = True
            lease.why = ('%s; the lease file was unreadable (%s) and was replaced, so the previous holder and token '
                         'are unknown and the token sequence restarted' % (lease.why, repaired))
        return lease

    def release(self, name, owner, now=None):
        check_request(name, owner)
        when = _as_time(now)
        if not HAS_FCNTL:  # pragma: no cover - not POSIX
            return degraded(name, owner, self.backend, 'fcntl is unavailable', 'run the controller on POSIX', acquire=False)
        data_path, lock_path = self._files(name)
        try:
            if not os.path.isdir(self.path):
                return Lease(name, False, owner, '', None, None, self.backend, False,
                             'not released: this owner holds no lease on %s (there is no lease store at %s yet); nothing to do'
                             % (name, self.path), store=self.path)
            with self._locked(lock_path):
                try:
                    record = self._read(data_path)
                except _Corrupt as exc:
                    return Lease(name, False, owner, '', None, None, self.backend, True,
                                 'not released: %s; the next acquisition replaces it' % exc, store=self.path)
                new, lease = decide_release(record, name, owner, when, self.backend)
                if new is not None:
                    self._write(data_path, new)
        except (IOError, OSError) as exc:
            return degraded(name, owner, self.backend, '%s: %s' % (type(exc).__name__, exc), self._fix(), store=self.path,
                            acquire=False)
        lease.store = self.path
        return lease

    def get(self, name, now=None):
        check_request(name)
        when = _as_time(now)
        data_path = self._files(name)[0]
        try:
            record = self._read(data_path)
        except _Corrupt as exc:
            return Lease(name, False, '', '', None, None, self.backend, True, 'unreadable: %s' % exc, store=self.path)
        except (IOError, OSError) as exc:
            return Lease(name, False, '', '', None, None, self.backend, True,
                         'lease store unusable (%s: %s); fix: %s' % (type(exc).__name__, exc, self._fix()), store=self.path)
        lease = describe(record, name, when, self.backend)
        lease.store = self.path
        return lease


# --------------------------------------------------------------------------------------------
# PostgreSQL backend


_DDL = (
    "SELECT pg_advisory_xact_lock(hashtext('fleet.dispatch fleet_leases ddl'))",
    'CREATE SEQUENCE IF NOT EXISTS fleet_lease_token_seq AS bigint',
    'CREATE TABLE IF NOT EXISTS fleet_leases ('
    ' name text PRIMARY KEY,'
    ' owner text,'
    ' token bigint NOT NULL,'
    ' expires_at timestamptz,'
    ' acquired_at timestamptz,'
    ' released_at timestamptz)',
)

# ONE statement decides. Under READ COMMITTED, a concurrent acquirer of the same name waits
# for the row lock and then re-checks the WHERE clause against the winner's committed row, so
# exactly one of them gets a row back. nextval() inside DO UPDATE runs while the row is locked,
# hence a takeover's token is strictly larger than the token it replaces. A released lease keeps
# its row (owner NULL) so every later acquisition of the name goes through that path.
# ``prev`` is a snapshot only for the human-readable ``why``; it decides nothing.
_ACQUIRE = """
WITH prev AS (SELECT owner, token, expires_at FROM fleet_leases WHERE name = %(name)s)
INSERT INTO fleet_leases AS l (name, owner, token, expires_at, acquired_at, released_at)
VALUES (%(name)s, %(owner)s, nextval('fleet_lease_token_seq'),
        now() + make_interval(secs => %(ttl)s), now(), NULL)
ON CONFLICT (name) DO UPDATE SET
    token = CASE WHEN l.owner = EXCLUDED.owner AND l.expires_at > now()
                 THEN l.token ELSE nextval('fleet_lease_token_seq') END,
    acquired_at = CASE WHEN l.owner = EXCLUDED.owner AND l.expires_at > now()
                       THEN l.acquired_at ELSE now() END,
    owner = EXCLUDED.owner,
    expires_at = EXCLUDED.expires_at,
    released_at = NULL
WHERE l.owner IS NULL OR l.owner = EXCLUDED.owner OR l.expires_at IS NULL OR l.expires_at <= now()
RETURNING l.token, l.expires_at,
          (SELECT owner FROM prev), (SELECT token FROM prev), (SELECT expires_at FROM prev)
"""

_CURRENT = """
SELECT owner, token, expires_at, (owner IS NOT NULL AND expires_at > now()) AS live
FROM fleet_leases WHERE name = %(name)s
"""


class PostgresLeaseStore(LeaseStore):
    """Leases in PostgreSQL for dispatchers on several controllers (one lock across probe and
    launch, judged by the database clock; D5: an unreachable store fails open)."""

    backend = 'postgres'

    def __init__(self, dsn: str, connect_timeout: float = PG_CONNECT_TIMEOUT,
                 statement_timeout_ms: int = PG_STATEMENT_TIMEOUT_MS):
        self.dsn = dsn or ''
        self.store = redact_dsn(self.dsn)
        self.connect_timeout = connect_timeout
        self.statement_timeout_ms = statement_timeout_ms
        self._conn = None

    def close(self):
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def _connect(self):
        if self._conn is not None and not self._conn.closed:
            return self._conn
        conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout)),
                               application_name='fleet.dispatch lease')
        try:
            conn.execute('SET statement_timeout = %d' % int(self.statement_timeout_ms))
            exists = conn.execute("SELECT to_regclass('fleet_leases') IS NOT NULL").fetchone()[0]
            if not exists:
                with conn.transaction():
                    for statement in _DDL:
                        conn.execute(statement)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _failure(self, exc: BaseException) -> str:
        return scrub('%s: %s' % (type(exc).__name__, ' '.join(str(exc).split())), self.dsn)

    def _fix(self) -> str:
        return ('check that PostgreSQL answers at %s and that this role may create and write the table fleet_leases '
                '(grant CREATE on its schema, or create the table first)' % self.store)

    def _missing(self, name, owner, acquire=True):
        return degraded(name, owner, self.backend, 'psycopg is not installed (%s)' % PSYCOPG_IMPORT_ERROR,
                        'install psycopg 3 on the controller (pip install "psycopg[binary]")', store=self.store,
                        acquire=acquire)

    def acquire(self, name, owner, ttl, now=None):
        """``now`` is ignored: expiry is judged by the database clock so skewed controllers agree."""
        check_request(name, owner, ttl)
        if not HAS_PSYCOPG:
            return self._missing(name, owner)
        params = {'name': name, 'owner': owner, 'ttl': float(ttl)}
        try:
            conn = self._connect()
            # A refusal is followed by a read of the holder; if the holder released in between,
            # try again (bounded: each retry needs a release to land inside a few ms).
            for dummy in range(3):
                row = conn.execute(_ACQUIRE, params).fetchone()
                if row is not None:
                    return self._won(name, owner, row)
                cur = conn.execute(_CURRENT, params).fetchone()
                if cur is not None and cur[3]:
                    return Lease(name, False, owner, cur[0], None, format_time(cur[2]), self.backend, False,
                                 'held by %s (token %s) until %s' % (cur[0], cur[1], format_time(cur[2])), store=self.store)
            return Lease(name, False, owner, '', None, None, self.backend, False,
                         'refused three times by a lease that kept changing hands; try again next cycle', store=self.store)
        except psycopg.Error as exc:
            self.close()
            return degraded(name, owner, self.backend, self._failure(exc), self._fix(), store=self.store)

    def _won(self, name, owner, row):
        token, expires_at, prev_owner, prev_token, prev_expires = row
        expires = format_time(expires_at)
        if prev_token is None:
            why = 'acquired a new lease (token %d)' % token
        elif prev_owner == owner and prev_token == token:
            why = 'already held by this owner (token %d); expiry extended to %s' % (token, expires)
        elif not prev_owner:
            why = 'acquired after release (token %d)' % token
        else:
            why = 'took over the expired lease of %s (token %s, expired %s); new token %d' % (
                prev_owner, prev_token, format_time(prev_expires), token)
        return Lease(name, True, owner, owner, int(token), expires, self.backend, False, why, store=self.store)

    def release(self, name, owner, now=None):
        check_request(name, owner)
        if not HAS_PSYCOPG:
            return self._missing(name, owner, acquire=False)
        params = {'name': name, 'owner': owner}
        try:
            conn = self._connect()
            with conn.transaction():
                cur = conn.execute(_CURRENT + ' FOR UPDATE', params).fetchone()
                if cur is not None and cur[0] == owner:
                    conn.execute('UPDATE fleet_leases SET owner = NULL, released_at = now(), expires_at = NULL '
                                 'WHERE name = %(name)s', params)
                    why = 'released (token %s)' % cur[1] if cur[3] else \
                        'released; it had already expired at %s (token %s)' % (format_time(cur[2]), cur[1])
                    return Lease(name, False, owner, '', int(cur[1]), None, self.backend, False, why, released=True,
                                 store=self.store)
            if cur is not None and cur[3]:
                return Lease(name, False, owner, cur[0], None, format_time(cur[2]), self.backend, False,
                             'not released: held by %s (token %s) until %s; a release by a non-owner is a no-op'
                             % (cur[0], cur[1], format_time(cur[2])), store=self.store)
            return Lease(name, False, owner, '', None, None, self.backend, False,
                         'not released: this owner holds no lease on %s (it is free); nothing to do' % name, store=self.store)
        except psycopg.Error as exc:
            self.close()
            return degraded(name, owner, self.backend, self._failure(exc), self._fix(), store=self.store, acquire=False)

    def get(self, name, now=None):
        check_request(name)
        if not HAS_PSYCOPG:
            return Lease(name, False, '', '', None, None, self.backend, True, 'psycopg is not installed', store=self.store)
        try:
            cur = self._connect().execute(_CURRENT, {'name': name}).fetchone()
        except psycopg.Error as exc:
            self.close()
            return Lease(name, False, '', '', None, None, self.backend, True,
                         'lease store unusable (%s); fix: %s' % (self._failure(exc), self._fix()), store=self.store)
        if cur is not None and cur[3]:
            return Lease(name, False, '', cur[0], int(cur[1]), format_time(cur[2]), self.backend, False,
                         'held by %s (token %s) until %s' % (cur[0], cur[1], format_time(cur[2])), store=self.store)
        return Lease(name, False, '', '', None, None, self.backend, False, 'free', store=self.store)


def open_store(backend: str = 'file', path: str = '', dsn: str = '') -> LeaseStore:
    """The factory the lookup (and the runner) use: ``file`` with ``path``, ``postgres`` with ``dsn``."""
    if backend == 'file':
        return FileLeaseStore(path or DEFAULT_LEASE_DIR)
    if backend == 'postgres':
        if not dsn:
            raise LeaseError('backend postgres needs a dsn (option dsn or FLEET_DISPATCH_LEASE_DSN)')
        return PostgresLeaseStore(dsn)
    raise LeaseError('unknown lease backend %r: use file or postgres' % (backend,))
