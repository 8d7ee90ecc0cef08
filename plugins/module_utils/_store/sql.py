# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One SQL code path over SQLite (stdlib ``sqlite3``) and PostgreSQL (psycopg 3).

The ledger is the embedded default (a SQLite file on the controller) and PostgreSQL when several
dispatchers share a fleet. Both run the *same* statements; the dialect shim here is deliberately
tiny.

The rules in full, with their reasons: ``docs/internals.md``, section ``_store/sql.py``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
import traceback
import zlib
from urllib.parse import unquote

try:
    import psycopg
    HAS_PSYCOPG = True
    PSYCOPG_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - depends on the host
    psycopg = None
    HAS_PSYCOPG = False
    PSYCOPG_IMPORT_ERROR = traceback.format_exc()

DEFAULT_TIMEOUT = 30.0
"""Seconds a transaction may wait for locks (SQLite ``busy_timeout`` and the retry deadline) and a
connection may take to open. Reading behind it: tests/unit/plugins/module_utils/
test_ledger_concurrency.py (4 processes x 60 write transactions on one store, 2 cores, load
average ~20 from other jobs) printed per-write max waits of 0.64-1.46 s on SQLite and
0.05-0.62 s on PostgreSQL (p50 3-7 ms / 10-22 ms). 30 s is ~20x the worst reading: a wait that
long means a stuck writer, not contention, and the error then names it. Re-run that test with
``-s`` on a real controller to re-measure."""

MIGRATION_LOCK_KEY = 0x666C656574
"""PostgreSQL advisory-lock key held while migrations run ("fleet" in ASCII). Any fixed 64-bit
value works; it only has to be the same for every process that migrates this database."""

_RETRY_SQLSTATES = ('40001', '40P01')
"""PostgreSQL serialization failure and deadlock detected: the transaction is retried."""

REDACTED = '********'
"""What a password becomes in any text shown to a person (a DSN, an error message). A fixed width,
so the mask says nothing about the password's length."""

# A password is found by PARSING the two spellings libpq accepts, never by a wider pattern: a pattern
# either stops short (``password=abc&def``, ``abc\ def``, a newline) or runs on into the next DSN.
_SCHEME = re.compile(r'[a-z][a-z0-9+.-]*://', re.I)
_KV_KEY = re.compile(r'(?<![\w.-])(?:ssl)?password\s*=\s*', re.I)   # passfile= names a file, not a secret
_QUERY_KEYS = ('password', 'sslpassword')
_URI_END = '"\'<>`'   # characters RFC 3986 never allows in a URI: a URI quoted in a message ends there


def _uri_spans(text, whole):
    """``(password spans, URI extents)`` of every ``scheme://`` URI in ``text`` (RFC 3986).

    The authority runs from ``//`` to the first ``/``, ``?`` or ``#`` (section 3.2); its userinfo is
    everything before its LAST ``@`` and the password what follows the userinfo's first ``:``
    (3.2.1). libpq quotes unencoded ``@``, spaces and newlines in a password as they were given, so
    the authority is not cut at those: when in doubt more is masked, never less, and a second DSN in
    the same text starts its own authority after its own ``//``. The query (3.4) is split on ``&``;
    a ``password`` or ``sslpassword`` parameter's value is a password. Outside ``whole`` (the text is
    one DSN) the path and query end at whitespace or a character no URI holds (a quote).
    """
    spans, extents = [], []
    for match in _SCHEME.finditer(text):
        begin = match.end()
        end = begin
        while end < len(text) and text[end] not in '/?#':
            end += 1
        authority = text[begin:end]
        at = authority.rfind('@')
        colon = authority.find(':', 0, at) if at > 0 else -1
        if colon >= 0 and colon + 1 < at:
            spans.append((begin + colon + 1, begin + at))
        stop = end
        while stop < len(text) and (whole or not (text[stop].isspace() or text[stop] in _URI_END)):
            stop += 1
        rest = text[end:stop]
        if '?' in rest:
            offset = end + rest.index('?') + 1
            query = rest[rest.index('?') + 1:].split('#', 1)[0]
            for part in query.split('&'):
                key, sep, value = part.partition('=')
                if sep and unquote(key).strip().lower() in _QUERY_KEYS and value:
                    spans.append((offset + len(key) + 1, offset + len(part)))
                offset += len(part) + 1
        extents.append((match.start(), stop))
    return spans, extents


def _conninfo_value_end(text, start):
    """Where a libpq conninfo value that starts at ``start`` ends: a single-quoted value runs to its
    closing quote (a backslash escapes any character, a newline too), an unquoted one to whitespace
    (a backslash escapes that too: ``abc\\ def`` is one value). A double quote is taken as a quote
    as well (libpq has none, but masking it whole is the safe reading). An unterminated quote runs to
    the end of the text."""
    index = start
    if index < len(text) and text[index] in '\'"':
        quote = text[index]
        index += 1
        while index < len(text):
            if text[index] == '\\':
                index += 2
                continue
            if text[index] == quote:
                return index + 1
            index += 1
        return len(text)
    while index < len(text) and not text[index].isspace():
        index += 2 if text[index] == '\\' else 1
    return min(index, len(text))


def _password_spans(text, whole=False):
    """Every ``(start, end)`` of a password in ``text``: URI userinfo and query parameters
    (``_uri_spans``), then libpq's ``key = value`` form outside any URI."""
    spans, extents = _uri_spans(text, whole)
    for match in _KV_KEY.finditer(text):
        if any(a <= match.start() < b for a, b in extents):
            continue
        end = _conninfo_value_end(text, match.end())
        if end > match.end():
            spans.append((match.end(), end))
    merged = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((begin, end))
    return merged


def redact_dsn(dsn):
    """The DSN (or any text quoting one, or several) with every password replaced by ``REDACTED``:
    URL userinfo, ``?password=`` and ``key=value`` forms (``_password_spans``). Never echo a
    credential (D18's spirit)."""
    text = str(dsn or '')
    for begin, end in reversed(_password_spans(text)):
        text = text[:begin] + REDACTED + text[end:]
    return text


def dsn_passwords(dsn):
    """Every password literal in a DSN, as written and URL-decoded (and without its quotes, its
    backslash escapes undone), longest first, so ``scrub`` can remove it from text that quotes it in
    any of those spellings."""
    text = str(dsn or '')
    found = []
    for begin, end in _password_spans(text, whole=True):
        value = text[begin:end]
        found.append(value)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in '\'"':
            value = value[1:-1]
            found.append(value)
        found.append(re.sub(r'\\(.)', r'\1', value, flags=re.S))   # libpq's backslash escapes undone
    found.extend([unquote(p) for p in list(found)])
    # libpq and psycopg quote the part of a URL after an unencoded "@" or space ('found in "ss word@host"'):
    # every tail after such a split point is a spelling too (4+ characters, so messages stay readable).
    for value in list(found):
        for index, char in enumerate(value):
            if char in '@ \t\n' and len(value) - index - 1 >= 4:
                found.append(value[index + 1:])
    return sorted(set(p for p in found if p), key=len, reverse=True)


def scrub(text, dsn):
    """``text`` (an exception message may quote the DSN, or only its password) with the DSN's
    password removed in every spelling, and any DSN-shaped password redacted."""
    text = str(text)
    for secret in dsn_passwords(dsn):
        text = text.replace(secret, REDACTED)
    return redact_dsn(text)


class Undecodable(str):
    """A TEXT value that is not UTF-8 (a foreign writer's bytes), read as its escaped text.

    sqlite3's default text factory raises for such a value and so fails the WHOLE query: one bad
    row made the whole ledger unreadable. This reads it, marked, so the reader names the item it
    belongs to and reads every other one. PostgreSQL validates encodings on write.
    """


def _decode_text(raw):
    try:
        return raw.decode('utf-8')
    except UnicodeDecodeError:
        return Undecodable(raw.decode('utf-8', 'backslashreplace'))


class SqlError(Exception):
    """A statement or transaction failed. ``sqlstate`` carries PostgreSQL's code, when any."""

    def __init__(self, message, sqlstate=None, integrity=False):
        super(SqlError, self).__init__(message)
        self.sqlstate = sqlstate
        self.integrity = integrity


class SqlUnavailable(SqlError):
    """The store cannot be opened or read at all (unreachable, missing, corrupt, too new)."""


class Dialect(object):
    """The few places SQLite and PostgreSQL differ (see the module docstring)."""

    def __init__(self, name):
        self.name = name
        self._cache = {}

    def sql(self, text):
        """Rewrite ``?`` placeholders for the driver. Statements never contain a literal ``?`` or ``%``."""
        if self.name == 'sqlite':
            return text
        found = self._cache.get(text)
        if found is None:
            found = self._cache[text] = text.replace('?', '%s')
        return found

    def ddl(self, text):
        """Expand DDL templates: ``{id}`` is an auto-increment integer primary key.

        A statement only one dialect has (PostgreSQL's roles, grants, row policies and triggers) is a
        mapping ``{dialect name: statement}``: ``None`` for a dialect it does not name (nothing to run).
        """
        if isinstance(text, dict):
            text = text.get(self.name)
            if text is None:
                return None
        if self.name == 'sqlite':
            ident = 'INTEGER PRIMARY KEY AUTOINCREMENT'
        else:
            ident = 'BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY'
        return text.replace('{id}', ident)

    @property
    def for_update(self):
        """Row-lock suffix for a SELECT in a write transaction (SQLite's BEGIN IMMEDIATE already serialises).

        ``FOR NO KEY UPDATE``, not ``FOR UPDATE``: the ledger never changes a key, and this lock
        does not conflict with the ``KEY SHARE`` lock a foreign-key check takes, so writers of
        comments/edges that reference a row do not queue behind a writer of that row.
        """
        return '' if self.name == 'sqlite' else ' FOR NO KEY UPDATE'


class Tx(object):
    """The handle a transaction body gets: ``all``/``one``/``run``/``insert`` with ``?`` placeholders."""

    def __init__(self, store, cursor):
        self.store = store
        self.dialect = store.dialect
        self._cur = cursor

    def _execute(self, sql, params):
        params = tuple(params)
        if params or self.dialect.name == 'sqlite':
            self._cur.execute(self.dialect.sql(sql), params)
        else:
            self._cur.execute(sql)  # no parameters: psycopg then leaves any literal % alone
        return self._cur

    def run(self, sql, params=()):
        """Execute; returns the number of rows changed."""
        return self._execute(sql, params).rowcount

    def all(self, sql, params=()):
        return list(self._execute(sql, params).fetchall())

    def one(self, sql, params=()):
        return self._execute(sql, params).fetchone()

    def insert(self, sql, params=()):
        """Run an INSERT into a table with an ``{id}`` column and return the new id."""
        if self.dialect.name == 'sqlite':
            self._cur.execute(sql, tuple(params))
            return self._cur.lastrowid
        self._cur.execute(self.dialect.sql(sql) + ' RETURNING id', tuple(params))
        return self._cur.fetchone()[0]

    def lock(self, name):
        """Serialise, until this transaction ends, every transaction that takes the lock ``name``.

        PostgreSQL: a transaction-scoped advisory lock (``advisory_key(name)``); it blocks only
        other holders of the same lock, never readers or row writers. Used where a value is
        minted from the table's contents (the next item number), so two creators cannot mint
        the same one. SQLite: nothing to do, ``BEGIN IMMEDIATE`` already serialises writers.

        (A ``LOCK TABLE ... SHARE ROW EXCLUSIVE`` was tried first and deadlocked against a
        comment writer: the comment held the item's row lock and waited for the table lock to
        update it, while the creator held the table lock and its foreign-key check waited for
        that row. The concurrency test found it as one-second stalls -- PostgreSQL's
        deadlock_timeout -- and retries.)
        """
        if self.dialect.name != 'sqlite':
            self._cur.execute('SELECT pg_advisory_xact_lock(%s)', (advisory_key(name),))


def advisory_key(name):
    """A stable 63-bit advisory-lock key for a lock name (CRC-32 of ``fleet.dispatch:<name>``, offset
    away from ``MIGRATION_LOCK_KEY``)."""
    return (1 << 40) + zlib.crc32(('fleet.dispatch:%s' % name).encode('utf-8'))


class SqlStore(object):
    """One connection to a SQLite file or a PostgreSQL database.

    ``path`` or ``dsn``, exactly one. ``create`` lets a SQLite file that does not exist be
    created (otherwise it is ``SqlUnavailable``: a typo'd path must not read as an empty store,
    D20). ``timeout`` bounds lock waits and connecting (``DEFAULT_TIMEOUT``).
    """

    def __init__(self, path=None, dsn=None, timeout=DEFAULT_TIMEOUT, create=False, what='the ledger'):
        # ``what`` names the store in every message (``the lease store``: an operator fixing a lease
        # file must not go looking for a ledger)
        self.what = what
        if bool(path) == bool(dsn):
            raise SqlUnavailable('%s needs exactly one of "path" (a SQLite file) or "dsn" '
                                 '(postgresql://...); got %s' % (what, 'both' if path else 'neither'))
        self.path = str(path) if path else None
        self.dsn = dsn or None
        self.timeout = float(timeout)
        self.dialect = Dialect('sqlite' if self.path else 'postgres')
        self.location = self.path if self.path else redact_dsn(self.dsn)
        self._conn = None
        if self.path:
            self._conn = self._open_sqlite(create)
        else:
            self._conn = self._open_postgres()

    # -- connections ------------------------------------------------------------------------
    def _open_sqlite(self, create):
        if not create and not os.path.exists(self.path):
            raise SqlUnavailable('no ledger at %s: the file does not exist. Check the path, or create the '
                                 'ledger (the ledger role, or board_item, which opens it with create)' % self.path)
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise SqlUnavailable('cannot open %s at %s (%s): check that the directory exists '
                                 'and is writable by this user' % (self.what, self.path, exc))
        conn.text_factory = _decode_text
        try:
            conn.execute('PRAGMA busy_timeout = %d' % int(self.timeout * 1000))
            conn.execute('PRAGMA foreign_keys = ON')
            mode = self._with_retry(lambda: conn.execute('PRAGMA journal_mode = WAL').fetchone())
            self.journal_mode = (mode or ['?'])[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise SqlUnavailable('%s at %s is not a readable SQLite database (%s): move it aside '
                                 'and restore it from a backup, or point the board at the right file'
                                 % (self.what, self.path, exc))
        return conn

    def _open_postgres(self):
        if not HAS_PSYCOPG:
            raise SqlUnavailable('%s on PostgreSQL (%s) needs the Python package psycopg (version 3) on '
                                 'this host: pip install "psycopg[binary]"' % (self.what, self.location))
        try:
            return psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(1, int(self.timeout)))
        except Exception as exc:  # psycopg.Error and DSN parse errors (ProgrammingError) alike
            raise SqlUnavailable('cannot connect to %s at %s (%s): check that the server runs, '
                                 'the database exists and the credentials are right'
                                 % (self.what, self.location, self._scrub(exc)))

    def close(self):
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def _scrub(self, exc):
        return scrub(str(exc).strip(), self.dsn)

    # -- transactions -----------------------------------------------------------------------
    def _retryable(self, exc):
        if self.dialect.name == 'sqlite':
            text = str(exc).lower()
            return isinstance(exc, sqlite3.OperationalError) and ('locked' in text or 'busy' in text)
        return getattr(exc, 'sqlstate', None) in _RETRY_SQLSTATES

    def _with_retry(self, fn):
        """Call ``fn`` until it does not fail on lock contention, for at most ``timeout`` seconds.

        SQLite's busy handler already waits ``busy_timeout``; a few paths bypass it (WAL
        recovery, switching journal mode while another connection opens the file), and
        PostgreSQL reports deadlocks/serialization failures that a retry resolves. Backoff
        starts at 10 ms and doubles to 0.5 s: an unmeasured guess (the busy handler does
        the waiting in the common case; no retry path was needed to pass the concurrency test,
        which is the experiment that would show a better ladder).
        """
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while True:
            try:
                return fn()
            except Exception as exc:
                if not self._retryable(exc) or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _once(self, body, write, dry_run):
        conn = self._conn
        if conn is None:
            raise SqlUnavailable('%s at %s is closed' % (self.what, self.location))
        if self.dialect.name == 'sqlite':
            cur = conn.cursor()
            cur.execute('BEGIN IMMEDIATE' if write else 'BEGIN')
        else:
            cur = conn.cursor()
            cur.execute('BEGIN' if write else 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
        try:
            result = body(Tx(self, cur))
        except BaseException:
            try:
                cur.execute('ROLLBACK')
            except Exception:  # the connection may be gone; the original error matters
                pass
            raise
        cur.execute('ROLLBACK' if dry_run else 'COMMIT')
        return result

    def transaction(self, body, write=False, dry_run=False):
        """Run ``body(tx)`` in one transaction and return its result.

        ``write`` takes the write lock up front (SQLite ``BEGIN IMMEDIATE``: no lock upgrade, so
        no deadlock); reads see one snapshot (SQLite WAL read transaction; PostgreSQL
        REPEATABLE READ READ ONLY). ``dry_run`` runs the body and rolls back: check mode runs
        the same code as the real thing. The whole body is retried on lock contention, so it
        must not have side effects outside the database.
        """
        try:
            return self._with_retry(lambda: self._once(body, write, dry_run))
        except SqlError:
            raise
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.IntegrityError):
                raise SqlError('%s at %s refused the write (%s)' % (self.what, self.location, exc), integrity=True)
            text = str(exc)
            if 'not a database' in text or 'malformed' in text or 'disk I/O' in text:
                raise SqlUnavailable('%s at %s is not a readable SQLite database (%s): move it aside and '
                                     'restore it from a backup' % (self.what, self.location, text))
            if 'locked' in text or 'busy' in text:
                raise SqlError('%s at %s stayed locked for %.0f s (%s): another process holds a write '
                               'transaction open; find it with fuser %s' % (self.what, self.location, self.timeout, text, self.path))
            raise SqlError('%s: a statement failed at %s: %s' % (self.what, self.location, text))
        except Exception as exc:
            if psycopg is not None and isinstance(exc, psycopg.Error):
                state = getattr(exc, 'sqlstate', None)
                if isinstance(exc, psycopg.IntegrityError):
                    raise SqlError('%s at %s refused the write (%s)' % (self.what, self.location, self._scrub(exc)),
                                   sqlstate=state, integrity=True)
                if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) and (
                        self._conn is None or self._conn.closed or self._conn.broken):
                    raise SqlUnavailable('lost the connection to %s at %s (%s): check the server'
                                         % (self.what, self.location, self._scrub(exc)), sqlstate=state)
                raise SqlError('%s: a statement failed at %s: %s' % (self.what, self.location, self._scrub(exc)),
                               sqlstate=state)
            raise

    # -- migrations -------------------------------------------------------------------------
    def schema_versions(self, component):
        """The versions applied for ``component`` (empty when the store is not initialised)."""
        def body(tx):
            if not self._has_table(tx, 'schema_version'):
                return []
            return [row[0] for row in tx.all('SELECT version FROM schema_version WHERE component = ? ORDER BY version',
                                             (component,))]
        return self.transaction(body)

    def _has_table(self, tx, name):
        if self.dialect.name == 'sqlite':
            return tx.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)) is not None
        return tx.one('SELECT to_regclass(?)', (name,))[0] is not None

    def migrate(self, component, migrations, now_text):
        """Apply every migration of ``component`` not yet recorded, in order, in one transaction.

        ``migrations`` is a list of ``(version, name, [statements])`` with increasing versions.
        Idempotent (already-recorded versions are skipped), and safe when several processes
        open a new store at once: SQLite's write lock or PostgreSQL's advisory lock is taken
        before the versions are read, so exactly one process applies each migration and the
        others find it recorded. A store that records a version this code does not know was
        written by a newer collection: ``SqlUnavailable`` (reading it could misread the queue).
        Returns the list of versions applied by this call.
        """
        known = [m[0] for m in migrations]
        if known != sorted(set(known)):
            raise SqlError('migrations of %s are not in strictly increasing order: %r' % (component, known))
        latest = known[-1] if known else 0
        applied = self.schema_versions(component)
        self._refuse_newer(component, applied, latest)
        if set(known) <= set(applied):
            return []

        def body(tx):
            if self.dialect.name != 'sqlite':
                tx.run('SELECT pg_advisory_xact_lock(?)', (MIGRATION_LOCK_KEY,))
            tx.run('CREATE TABLE IF NOT EXISTS schema_version (component TEXT NOT NULL, version INTEGER NOT NULL, '
                   'name TEXT NOT NULL, applied_at TEXT NOT NULL, PRIMARY KEY (component, version))')
            have = set(row[0] for row in tx.all('SELECT version FROM schema_version WHERE component = ?', (component,)))
            self._refuse_newer(component, have, latest)
            done = []
            for version, name, statements in migrations:
                if version in have:
                    continue
                for statement in statements:
                    text = self.dialect.ddl(statement)
                    if text is not None:
                        tx.run(text)
                tx.run('INSERT INTO schema_version (component, version, name, applied_at) VALUES (?, ?, ?, ?)',
                       (component, version, name, now_text))
                done.append(version)
            return done
        return self.transaction(body, write=True)

    def _refuse_newer(self, component, applied, latest):
        newer = [v for v in applied if v > latest]
        if newer:
            raise SqlUnavailable('%s at %s has %s schema version %d but this fleet.dispatch knows only up to %d: '
                                 'upgrade the collection on this host (a newer one wrote this store)'
                                 % (self.what, self.location, component, max(newer), latest))
