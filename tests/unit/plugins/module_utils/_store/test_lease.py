# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease store (D4's third layer, D5's fail-open) on the SQL store: real SQLite and real PostgreSQL.

Every behaviour test runs on both dialects (``ledger_url``: a new SQLite file or a new PostgreSQL
database per test) with ``now`` handed in, so time passes the same way on both. Without ``now``
the PostgreSQL store reads the database clock (``test_pg_expiry_uses_the_database_clock``).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3

import pytest

from racing import free_port

from ansible_collections.fleet.dispatch.plugins.module_utils._store import lease as _lease
from ansible_collections.fleet.dispatch.plugins.module_utils._store import sql as _sql
from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import (
    COMPONENT, LEASE_FILE, LeaseError, SqlLeaseStore, decide_acquire, decide_release, open_store, redact_dsn, scrub,
    sqlite_path, store_info,
)
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import SqlStore
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import format_time, parse_time

T0 = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
SECRET = 's3cret-pw'


class Bed(object):
    """One store on ``ledger_url`` and a clock the test moves."""

    def __init__(self, ledger_url):
        self.url = ledger_url
        self.store = SqlLeaseStore(**ledger_url)
        self.backend = 'sqlite' if 'path' in ledger_url else 'postgres'
        self.now = T0

    def acquire(self, name, owner, ttl=60):
        return self.store.acquire(name, owner, ttl, now=self.now)

    def release(self, name, owner):
        return self.store.release(name, owner, now=self.now)

    def get(self, name):
        return self.store.get(name, now=self.now)

    def advance(self, seconds):
        self.now += dt.timedelta(seconds=seconds)

    def expires(self, lease):
        return parse_time(lease.expires_at) - self.now

    def rows(self):
        sql = SqlStore(**self.url)
        try:
            return sql.transaction(lambda tx: tx.all('SELECT name, owner, token, expires_at FROM leases ORDER BY name'))
        finally:
            sql.close()

    def close(self):
        self.store.close()


@pytest.fixture
def bed(ledger_url):
    b = Bed(ledger_url)
    yield b
    b.close()


# ------------------------------------------------------------------------------------------
# behaviour, both dialects


def test_acquire_new_lease(bed):
    lease = bed.acquire('task-42', 'sweep-a', ttl=60)
    assert lease.acquired is True
    assert lease.degraded is False
    assert lease.holder == 'sweep-a' and lease.owner == 'sweep-a'
    assert lease.token == 1
    assert lease.backend == bed.backend
    assert bed.expires(lease).total_seconds() == 60
    assert bed.get('task-42').holder == 'sweep-a'
    assert bed.rows() == [('task-42', 'sweep-a', 1, format_time(T0 + dt.timedelta(seconds=60)))]


def test_same_owner_reacquire_is_idempotent_and_extends(bed):
    first = bed.acquire('task-42', 'sweep-a', ttl=60)
    bed.advance(40)
    again = bed.acquire('task-42', 'sweep-a', ttl=60)
    assert again.acquired is True
    assert again.token == first.token, 'a renewal keeps the token'
    assert 'already held by this owner' in again.why
    assert bed.expires(again).total_seconds() == 60, 'the expiry moved to now + ttl'
    # The extension is real: 40 s later the first lease would have expired, the renewed one has not.
    bed.advance(40)
    assert bed.acquire('task-42', 'hand-b').acquired is False


def test_second_owner_refused_with_holder(bed):
    first = bed.acquire('task-42', 'sweep-a', ttl=60)
    other = bed.acquire('task-42', 'hand-b', ttl=60)
    assert other.acquired is False
    assert other.degraded is False, 'a held lease is an answer, not a failure'
    assert other.holder == 'sweep-a'
    assert other.owner == 'hand-b'
    assert other.token is None
    assert other.expires_at == first.expires_at
    assert 'held by sweep-a' in other.why
    assert bed.get('task-42').token == first.token, 'the refusal changed nothing'


def test_expired_lease_taken_over_with_larger_token(bed):
    first = bed.acquire('task-42', 'sweep-a', ttl=30)
    bed.advance(31)
    taken = bed.acquire('task-42', 'hand-b', ttl=30)
    assert taken.acquired is True
    assert taken.holder == 'hand-b'
    assert taken.token > first.token
    assert 'took over the expired lease of sweep-a' in taken.why
    late = bed.acquire('task-42', 'sweep-a', ttl=30)
    assert late.acquired is False and late.holder == 'hand-b', 'the previous owner, back from the dead, is refused'


def test_the_fencing_check_passes_only_the_live_holder_under_its_own_token(bed):
    """D4: just before a launch the dispatcher checks that its lease is still its own under its token. A holder that
    stalled past its lease is fenced out whether the lease was taken over (a larger token), taken and released
    again, or only expired; the live holder passes."""
    first = bed.acquire('task-42', 'sweep-a', ttl=30)
    assert bed.store.fence('task-42', 'sweep-a', first.token, now=bed.now) == ('', '')
    assert 'expired or was released' in bed.store.fence('task-42', 'hand-b', first.token, now=bed.now)[0], 'not its owner'
    bed.advance(31)
    assert 'expired or was released' in bed.store.fence('task-42', 'sweep-a', first.token, now=bed.now)[0]
    taken = bed.acquire('task-42', 'hand-b', ttl=30)
    why, failure = bed.store.fence('task-42', 'sweep-a', first.token, now=bed.now)
    assert failure == '' and 'taken over' in why and 'token %d' % taken.token in why and 'hand-b' in why, why
    bed.release('task-42', 'hand-b')
    why, _failure = bed.store.fence('task-42', 'sweep-a', first.token, now=bed.now)
    assert 'taken over' in why and 'released' in why, 'taken, used and released: still not the stalled holder\'s'


def test_the_fencing_check_of_an_unreadable_store_fences_nothing_and_says_why(tmp_path):
    (tmp_path / 'a-file').write_text('not a directory')
    store = SqlLeaseStore(path=str(tmp_path / 'a-file' / 'leases.sqlite3'))
    why, failure = store.fence('task-42', 'sweep-a', 3)
    assert why == '' and 'lease store unusable' in failure
    # a store that holds no record of the lease has no evidence against it either
    empty = SqlLeaseStore(path=str(tmp_path / 'leases.sqlite3'))
    assert empty.fence('task-42', 'sweep-a', 3) == ('', '')
    empty.close()


def test_a_renewal_keeps_the_holders_lease_one_heartbeat_at_a_time_up_to_its_cap(bed):
    first = bed.acquire('task-42', 'sweep-a', ttl=30)
    until = format_time(T0 + dt.timedelta(seconds=100))
    for dummy in range(3):
        bed.advance(20)
        kept = bed.store.renew('task-42', 'sweep-a', first.token, 30, until, now=bed.now)
        assert kept.acquired and kept.token == first.token and bed.expires(kept).total_seconds() == 30, kept.why
    bed.advance(20)   # t=80: the cap (t=100) is nearer than a heartbeat
    capped = bed.store.renew('task-42', 'sweep-a', first.token, 30, until, now=bed.now)
    assert capped.acquired and capped.expires_at == until
    bed.advance(20)   # t=100: the cap
    last = bed.store.renew('task-42', 'sweep-a', first.token, 30, until, now=bed.now)
    assert not last.acquired and 'expired' in last.why, last.why
    assert bed.acquire('task-42', 'hand-b').acquired, 'the cap holds: the lease expired at its ttl'


def test_a_renewal_never_takes_a_lease_back(bed):
    """Released, or taken over under a larger token: the renewal writes nothing and says so."""
    first = bed.acquire('task-42', 'sweep-a', ttl=30)
    until = format_time(T0 + dt.timedelta(seconds=600))
    bed.release('task-42', 'sweep-a')
    gone = bed.store.renew('task-42', 'sweep-a', first.token, 30, until, now=bed.now)
    assert not gone.acquired and not gone.degraded and 'released or expired' in gone.why
    assert bed.get('task-42').holder == ''
    again = bed.acquire('task-42', 'sweep-a', ttl=30)        # the same owner, a new hold: a new token
    bed.advance(31)
    taken = bed.acquire('task-42', 'hand-b', ttl=30)
    late = bed.store.renew('task-42', 'sweep-a', again.token, 30, until, now=bed.now)
    assert not late.acquired and late.holder == 'hand-b' and 'held by hand-b' in late.why
    assert bed.get('task-42').token == taken.token and bed.get('task-42').holder == 'hand-b'


def test_same_owner_after_expiry_gets_a_new_token(bed):
    first = bed.acquire('task-42', 'sweep-a', ttl=30)
    bed.advance(31)
    again = bed.acquire('task-42', 'sweep-a', ttl=30)
    assert again.acquired is True
    assert again.token > first.token, 'the lease lapsed; it was not held meanwhile'


def test_release_by_owner_frees_it(bed):
    first = bed.acquire('task-42', 'sweep-a')
    rel = bed.release('task-42', 'sweep-a')
    assert rel.released is True and rel.acquired is False
    assert rel.token == first.token
    assert rel.holder == ''
    assert bed.get('task-42').holder == ''
    assert bed.rows()[0][1] is None, 'a released row has no owner; it keeps its token'
    nxt = bed.acquire('task-42', 'hand-b')
    assert nxt.acquired is True and nxt.token > first.token
    assert 'after release' in nxt.why


def test_release_by_non_owner_is_a_noop_that_says_so(bed):
    first = bed.acquire('task-42', 'sweep-a')
    rel = bed.release('task-42', 'hand-b')
    assert rel.released is False
    assert rel.degraded is False
    assert rel.holder == 'sweep-a'
    assert 'non-owner is a no-op' in rel.why
    still = bed.get('task-42')
    assert still.holder == 'sweep-a' and still.token == first.token


def test_release_of_free_lease_is_a_noop(bed):
    rel = bed.release('task-7', 'sweep-a')
    assert rel.released is False and rel.degraded is False
    assert 'holds no lease' in rel.why
    assert bed.rows() == [], 'a release writes no row for a name nobody took'


def test_release_twice_second_is_noop(bed):
    bed.acquire('task-42', 'sweep-a')
    assert bed.release('task-42', 'sweep-a').released is True
    second = bed.release('task-42', 'sweep-a')
    assert second.released is False and 'holds no lease' in second.why


def test_tokens_strictly_increase_across_takeovers_and_releases(bed):
    tokens = []
    for i, owner in enumerate(['a', 'b', 'c', 'a', 'b', 'c', 'a']):
        lease = bed.acquire('task-9', owner, ttl=10)
        assert lease.acquired is True
        tokens.append(lease.token)
        if i % 2:
            bed.release('task-9', owner)
        else:
            bed.advance(11)
    assert tokens == list(range(1, 8)), tokens


def test_names_are_independent(bed):
    a = bed.acquire('task-1', 'sweep-a')
    b = bed.acquire('task-2', 'hand-b')
    c = bed.acquire('task-42@pg-fleet-1a2b3c4d', 'hand-c')
    assert a.acquired and b.acquired and c.acquired
    assert (a.token, b.token, c.token) == (1, 1, 1), 'tokens count per name'


def test_names_are_data_never_sql(bed):
    """A lease name comes from board text (the unit name); it is a bound parameter, never SQL."""
    evil = "task-1'; DROP TABLE leases; --"
    assert bed.acquire(evil, 'a').acquired
    assert bed.get(evil).holder == 'a'
    assert [r[0] for r in bed.rows()] == [evil]


def test_seed_story_lock_held_across_probe_and_launch(bed):
    """D4's duplicate: two dispatchers both passed a 'no live unit' probe, then both launched.
    With the probe inside the lease, the loser is refused or, once the winner released, probes
    again and sees the winner's unit. Exactly one launch."""
    live_units = set()
    launches = []

    def dispatch(owner):
        lease = bed.acquire('task-42', owner, ttl=60)
        if not lease.acquired:
            return 'refused'
        try:
            if 'task-42' in live_units:
                return 'already running'
            live_units.add('task-42')
            launches.append(owner)
            return 'launched'
        finally:
            bed.release('task-42', owner)

    assert bed.acquire('task-42', 'sweep-a', ttl=60).acquired
    assert dispatch('hand-b') == 'refused'
    live_units.add('task-42')
    launches.append('sweep-a')
    bed.release('task-42', 'sweep-a')
    assert dispatch('hand-b') == 'already running'
    assert launches == ['sweep-a']


def test_ttl_and_names_are_caller_errors(bed):
    for name, owner, ttl in [('', 'a', 10), ('  ', 'a', 10), (None, 'a', 10), ('task-1', '', 10),
                             ('task-1', None, 10), ('task-1', 'a', 0), ('task-1', 'a', -5), ('task-1', 'a', 'ten'),
                             ('task-1', 'a', True), ('task-1', 'a', float('nan')), ('task-1', 'a', float('inf'))]:
        with pytest.raises(LeaseError):
            bed.acquire(name, owner, ttl)


def test_the_lease_has_its_own_migration_component(bed):
    bed.acquire('task-1', 'a')
    sql = SqlStore(**bed.url)
    try:
        assert sql.schema_versions(COMPONENT) == [1]
        assert sql.schema_versions('board') == [], 'a lease store alone is no board'
    finally:
        sql.close()
    # a second store on the same database finds the migration done and works
    with SqlLeaseStore(**bed.url) as again:
        assert again.acquire('task-1', 'b', 60, now=T0).holder == 'a'


def test_migration_into_an_existing_ledger(ledger_url, tmp_path):
    """The default on a ledger board: the lease lives in the ledger. Opening it there adds the
    ``lease`` component beside the board's, and the board reads exactly as before."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import COMPONENT as BOARD
    with LedgerBoard(create=True, clock=lambda: T0, **ledger_url) as board:
        item = board.upsert_item(title='first item', body='its body', status='Ready')['number']
        before = board.read(now=T0).items
    sql = SqlStore(**ledger_url)
    try:
        board_versions = sql.schema_versions(BOARD)
    finally:
        sql.close()
    with SqlLeaseStore(**ledger_url) as store:
        lease = store.acquire('task-%s' % item, 'sweep-a', 60, now=T0)
        assert lease.acquired and not lease.degraded and lease.token == 1
        assert lease.store == (ledger_url.get('path') or redact_dsn(ledger_url['dsn']))
    sql = SqlStore(**ledger_url)
    try:
        assert sql.schema_versions(BOARD) == board_versions, "the board's schema version did not move"
        assert sql.schema_versions(COMPONENT) == [1]
    finally:
        sql.close()
    with LedgerBoard(clock=lambda: T0, **ledger_url) as board:
        after = board.read(now=T0).items
    assert [(i.number, i.title, i.status) for i in after] == [(i.number, i.title, i.status) for i in before]


def test_a_newer_lease_schema_fails_open_naming_the_upgrade(ledger_url):
    with SqlLeaseStore(**ledger_url) as store:
        store.acquire('task-1', 'a', 60, now=T0)
    sql = SqlStore(**ledger_url)
    try:
        sql.transaction(lambda tx: tx.run("INSERT INTO schema_version (component, version, name, applied_at) "
                                          "VALUES ('lease', 99, 'from the future', 'x')"), write=True)
    finally:
        sql.close()
    with SqlLeaseStore(**ledger_url) as store:
        lease = store.acquire('task-1', 'b', 60, now=T0)
    assert lease.acquired is True and lease.degraded is True
    assert 'upgrade the collection' in lease.why


def test_an_unreadable_lease_file_is_named_the_lease_store_not_the_ledger(tmp_path):
    """The warning names what the operator must fix: a lease file is no ledger."""
    path = tmp_path / 'leases.sqlite3'
    path.write_bytes(b'this is not a database' * 100)
    with SqlLeaseStore(path=str(path)) as store:
        lease = store.acquire('task-1', 'a', 60, now=T0)
    assert lease.acquired is True and lease.degraded is True
    assert 'the lease store at %s' % path in lease.why and 'ledger' not in lease.why, lease.why


def test_a_postgresql_lease_store_without_psycopg_is_named_the_lease_store(monkeypatch):
    """The same on PostgreSQL: a controller without psycopg is told its lease store needs it, not a ledger."""
    monkeypatch.setattr(_sql, 'HAS_PSYCOPG', False)
    with SqlLeaseStore(dsn='postgresql://fleet:s3cret@db.example/fleet') as store:
        lease = store.acquire('task-1', 'a', 60, now=T0)
    assert lease.acquired is True and lease.degraded is True
    assert 'the lease store on PostgreSQL' in lease.why and 'PostgreSQL ledger' not in lease.why and 's3cret' not in lease.why, lease.why


# ------------------------------------------------------------------------------------------
# SQLite


def test_sqlite_default_store_and_its_directory_are_created(tmp_path, monkeypatch):
    """The default cannot be missing: a fresh user (no state dir yet) gets the file and its directory."""
    monkeypatch.setenv('XDG_STATE_HOME', str(tmp_path / 'state'))
    store = open_store('sqlite')
    assert store.path == str(tmp_path / 'state' / 'fleet-dispatch' / LEASE_FILE)
    lease = store.acquire('task-42', 'sweep-a', 60, now=T0)
    store.close()
    assert lease.acquired and not lease.degraded, lease.why
    assert os.path.isfile(store.path)
    assert oct(os.stat(os.path.dirname(store.path)).st_mode & 0o777) == '0o700'


def test_sqlite_path_naming_a_directory_means_the_file_in_it(tmp_path):
    """A path naming a directory: its leases.sqlite3."""
    old = tmp_path / 'leases'
    old.mkdir()
    assert sqlite_path(str(old)) == str(old / LEASE_FILE)
    assert sqlite_path(str(tmp_path / 'l.sqlite3')) == str(tmp_path / 'l.sqlite3')
    with open_store('sqlite', path=str(old)) as store:
        assert store.acquire('task-1', 'a', 60, now=T0).acquired
    assert sorted(os.listdir(str(old)))[0] == LEASE_FILE


def test_sqlite_unwritable_directory_fails_open_naming_the_fix(tmp_path):
    blocker = tmp_path / 'not-a-dir'
    blocker.write_text('a file where the lease directory should be')
    store = SqlLeaseStore(path=str(blocker / 'leases.sqlite3'))
    lease = store.acquire('task-42', 'sweep-a', 60, now=T0)
    assert lease.acquired is True, 'fail OPEN (D5)'
    assert lease.degraded is True
    assert lease.token is None
    assert 'WITHOUT the lock' in lease.why
    assert str(blocker) in lease.why, 'the why names the place'
    assert 'dispatch_lease_path' in lease.why and 'FLEET_DISPATCH_LEASE_PATH' in lease.why, 'and the fix'
    rel = store.release('task-42', 'sweep-a', now=T0)
    assert rel.released is False and rel.degraded is True
    assert 'expires by itself' in rel.why
    assert store.get('task-42').degraded is True


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes through mode bits; the not-a-directory case covers it')
def test_sqlite_read_only_directory_fails_open(tmp_path):
    d = tmp_path / 'ro'
    d.mkdir()
    d.chmod(0o555)
    try:
        lease = SqlLeaseStore(path=str(d / 'leases.sqlite3')).acquire('task-42', 'sweep-a', 60, now=T0)
    finally:
        d.chmod(0o755)
    assert lease.acquired is True and lease.degraded is True
    assert str(d) in lease.why and 'dispatch_lease_path' in lease.why


def test_sqlite_not_a_database_fails_open(tmp_path):
    junk = tmp_path / 'leases.sqlite3'
    junk.write_bytes(b'this is not a SQLite database, it is garbage' * 100)
    lease = SqlLeaseStore(path=str(junk)).acquire('task-42', 'sweep-a', 60, now=T0)
    assert lease.acquired is True and lease.degraded is True
    assert 'not a readable SQLite database' in lease.why
    assert junk.read_bytes().startswith(b'this is not'), 'the file was not overwritten'


def test_sqlite_locked_store_degrades_instead_of_hanging(tmp_path):
    """A writer that sits on the SQLite write lock bounds the wait (timeout), then fails open."""
    path = str(tmp_path / 'leases.sqlite3')
    with SqlLeaseStore(path=path) as store:
        assert store.acquire('task-1', 'a', 60, now=T0).acquired
    stuck = sqlite3.connect(path, isolation_level=None)
    stuck.execute('BEGIN IMMEDIATE')
    try:
        lease = SqlLeaseStore(path=path, timeout=0.3).acquire('task-1', 'b', 60, now=T0)
    finally:
        stuck.execute('ROLLBACK')
        stuck.close()
    assert lease.acquired is True and lease.degraded is True
    assert 'locked' in lease.why
    with SqlLeaseStore(path=path) as store:
        assert store.acquire('task-1', 'b', 60, now=T0).holder == 'a', 'once unlocked, a still holds it'


# ------------------------------------------------------------------------------------------
# PostgreSQL


def test_pg_expiry_uses_the_database_clock(pg_dsn, monkeypatch, tmp_path):
    """Controllers with skewed clocks must agree: without ``now`` the PostgreSQL store reads the
    database's clock, so a controller whose clock runs 70 years ahead still sees a live lease."""
    import psycopg
    with SqlLeaseStore(dsn=pg_dsn) as store:
        held = store.acquire('task-42', 'sweep-a', 60)
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        db_now = admin.execute('SELECT now()').fetchone()[0]
    assert abs((parse_time(held.expires_at) - db_now).total_seconds() - 60) < 30

    monkeypatch.setattr(_lease, '_clock', lambda: dt.datetime(2099, 1, 1, tzinfo=dt.timezone.utc))
    path_store = SqlLeaseStore(path=str(tmp_path / 'l.sqlite3'))
    path_store.acquire('task-42', 'sweep-a', 60)
    assert path_store.get('task-42', now=dt.datetime(2098, 12, 31, 23, 59, 30, tzinfo=dt.timezone.utc)).holder == 'sweep-a', \
        'the control: SQLite (one controller) reads the clock the test skewed'
    path_store.close()
    with SqlLeaseStore(dsn=pg_dsn) as store:
        skewed = store.acquire('task-42', 'hand-b', 60)
    assert skewed.acquired is False and skewed.holder == 'sweep-a'


@pytest.mark.parametrize('form', ['url', 'kv', 'kv-quoted'])
def test_pg_unreachable_fails_open_without_echoing_the_password(form):
    pytest.importorskip('psycopg')
    port = free_port()
    dsn = {'url': 'postgresql://fleet:%s@127.0.0.1:%d/fleet' % (SECRET, port),
           'kv': 'host=127.0.0.1 port=%d user=fleet password=%s dbname=fleet' % (port, SECRET),
           'kv-quoted': "host=127.0.0.1 port=%d user=fleet password='%s' dbname=fleet" % (port, SECRET)}[form]
    store = SqlLeaseStore(dsn=dsn)
    lease = store.acquire('task-42', 'sweep-a', 60)
    assert lease.acquired is True and lease.degraded is True
    assert 'WITHOUT the lock' in lease.why
    assert 'check that PostgreSQL answers' in lease.why, 'the fix'
    assert SECRET not in json.dumps(lease.as_dict())
    assert '127.0.0.1' in lease.store and '********' in lease.store, 'the store is named, its password masked'
    rel = store.release('task-42', 'sweep-a')
    assert rel.degraded is True and rel.released is False
    assert SECRET not in json.dumps(rel.as_dict())
    got = store.get('task-42')
    assert got.degraded is True and SECRET not in json.dumps(got.as_dict())


def test_pg_stuck_row_lock_degrades_instead_of_hanging(pg_dsn):
    """A transaction that sits on the lease row must not hang the dispatcher (D5: fail open)."""
    import psycopg
    store = SqlLeaseStore(dsn=pg_dsn, statement_timeout_ms=300)
    try:
        assert store.acquire('task-60', 'a', 60, now=T0).acquired
        with psycopg.connect(pg_dsn) as stuck:   # not autocommit: the lock is held until rollback
            stuck.execute("SELECT 1 FROM leases WHERE name = 'task-60' FOR UPDATE")
            lease = store.acquire('task-60', 'b', 60, now=T0)
            stuck.rollback()
        assert lease.acquired is True and lease.degraded is True
        assert 'statement timeout' in lease.why or 'QueryCanceled' in lease.why, lease.why
        assert store.acquire('task-60', 'b', 60, now=T0).acquired is False, "once unlocked: 'a' still holds it"
    finally:
        store.close()


def test_pg_without_psycopg_fails_open(monkeypatch):
    monkeypatch.setattr(_sql, 'HAS_PSYCOPG', False)
    lease = SqlLeaseStore(dsn='postgresql://fleet:%s@127.0.0.1/x' % SECRET).acquire('task-42', 'a', 60)
    assert lease.acquired is True and lease.degraded is True
    assert 'psycopg' in lease.why and 'pip install' in lease.why
    assert SECRET not in lease.why


def test_pg_reconnects_after_a_dropped_connection(pg_dsn):
    """A store whose connection died degrades once, then works again on the next call."""
    import psycopg
    store = SqlLeaseStore(dsn=pg_dsn)
    try:
        assert store.acquire('task-50', 'a', 60, now=T0).acquired
        pid = store._sql._conn.info.backend_pid
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute('SELECT pg_terminate_backend(%s)', (pid,))
        dropped = store.acquire('task-50', 'a', 60, now=T0)
        assert dropped.acquired is True and dropped.degraded is True
        back = store.acquire('task-50', 'a', 60, now=T0)
        assert back.acquired is True and back.degraded is False and back.token == 1
    finally:
        store.close()


# ------------------------------------------------------------------------------------------
# the pure rule, the factory, what status says


def _rec(owner, token, expires):
    return {'name': 'n', 'owner': owner, 'token': token, 'expires_at': format_time(expires)}


@pytest.mark.parametrize('record, owner, acquired, token, holder, why', [
    (None, 'a', True, 1, 'a', 'new lease'),
    (_rec('a', 4, T0 + dt.timedelta(seconds=5)), 'a', True, 4, 'a', 'already held'),
    (_rec('a', 4, T0 + dt.timedelta(seconds=5)), 'b', False, None, 'a', 'held by a'),
    (_rec('a', 4, T0), 'b', True, 5, 'b', 'took over'),                          # expiry == now is expired
    (_rec('a', 4, T0 - dt.timedelta(seconds=1)), 'a', True, 5, 'a', 'took over'),
    (_rec('', 7, T0 + dt.timedelta(seconds=99)), 'b', True, 8, 'b', 'after release'),
    ({'name': 'n', 'owner': 'a', 'token': 3, 'expires_at': None}, 'b', True, 4, 'b', 'took over'),
])
def test_decide_acquire_table(record, owner, acquired, token, holder, why):
    new, lease = decide_acquire(record, 'n', owner, 60, T0)
    assert (lease.acquired, lease.token, lease.holder) == (acquired, token, holder)
    assert why in lease.why
    assert (new is None) == (not acquired)
    if new is not None:
        assert new['owner'] == owner and new['token'] == token
        assert new['expires_at'] == format_time(T0 + dt.timedelta(seconds=60))


@pytest.mark.parametrize('record, owner, released, holder, why', [
    (_rec('a', 4, T0 + dt.timedelta(seconds=5)), 'a', True, '', 'released (token 4)'),
    (_rec('a', 4, T0 - dt.timedelta(seconds=5)), 'a', True, '', 'already expired'),
    (_rec('a', 4, T0 + dt.timedelta(seconds=5)), 'b', False, 'a', 'non-owner'),
    (_rec('a', 4, T0 - dt.timedelta(seconds=5)), 'b', False, '', 'holds no lease'),
    (None, 'b', False, '', 'holds no lease'),
])
def test_decide_release_table(record, owner, released, holder, why):
    new, lease = decide_release(record, 'n', owner, T0)
    assert (lease.released, lease.holder) == (released, holder)
    assert why in lease.why
    if released:
        assert new['owner'] == '' and new['token'] == record['token'], 'the token survives a release'
    else:
        assert new is None


@pytest.mark.parametrize('dsn, shown', [
    ('postgresql://fleet:pw0rd@db.example:5432/ledger', 'postgresql://fleet:********@db.example:5432/ledger'),
    ('postgres://u:p%40ss@h/d?sslmode=require', 'postgres://u:********@h/d?sslmode=require'),
    ('postgresql://fleet@db/ledger', 'postgresql://fleet@db/ledger'),
    ('postgresql://h/d?user=u&password=pw0rd', 'postgresql://h/d?user=u&password=********'),
    ('host=db user=fleet password=pw0rd dbname=ledger', 'host=db user=fleet password=******** dbname=ledger'),
    ("host=db password = 'pw 0rd' dbname=ledger", "host=db password = ******** dbname=ledger"),
    ('', ''),
])
def test_redact_dsn(dsn, shown):
    assert redact_dsn(dsn) == shown


def test_scrub_removes_password_from_any_text():
    dsn = 'postgresql://fleet:p%40ss@h/d'
    assert scrub('failed for postgresql://fleet:p%40ss@h/d and p@ss', dsn) == 'failed for postgresql://fleet:********@h/d and ********'


@pytest.mark.parametrize('backend, kwargs, dialect', [
    ('sqlite', {'path': '/x/l.sqlite3'}, 'sqlite'),
    ('postgres', {'dsn': 'postgresql://h/d'}, 'postgres'),
    ('postgresql', {'dsn': 'postgresql://h/d'}, 'postgres'),
])
def test_open_store(backend, kwargs, dialect):
    store = open_store(backend, **kwargs)
    assert isinstance(store, SqlLeaseStore) and store.backend == dialect


@pytest.mark.parametrize('backend, kwargs', [('postgres', {}), ('postgresql', {}), ('redis', {})])
def test_open_store_rejects(backend, kwargs):
    with pytest.raises(LeaseError):
        open_store(backend, **kwargs)


def test_store_info_says_where_and_whether_shared(tmp_path):
    pg = store_info('postgres', dsn='postgresql://fleet:%s@db.example/ledger' % SECRET)
    assert pg['shared'] is True and pg['backend'] == 'postgres'
    assert pg['where'] == 'postgresql://fleet:********@db.example/ledger'
    assert SECRET not in json.dumps(pg)
    lite = store_info('sqlite', path=str(tmp_path / 'l.sqlite3'))
    assert lite == {'backend': 'sqlite', 'where': str(tmp_path / 'l.sqlite3'), 'shared': False, 'note': lite['note']}
    assert 'single-controller only' in lite['note'] and 'postgres' in lite['note']
    in_dir = store_info('sqlite', path=str(tmp_path))
    assert in_dir['where'] == str(tmp_path / LEASE_FILE)
    assert not os.path.exists(str(tmp_path / LEASE_FILE)), 'store_info opens nothing'
    for unknown in ('redis', 'file'):      # file: the retired flock store's name, not an alias
        with pytest.raises(LeaseError):
            store_info(unknown)


def test_default_constants_are_documented_in_the_lookup():
    """The lookup's documented defaults are the store's (one source, two readers)."""
    from ansible_collections.fleet.dispatch.plugins.lookup import mutex
    import yaml
    doc = yaml.safe_load(mutex.DOCUMENTATION)
    assert doc['options']['ttl']['default'] == _lease.DEFAULT_TTL
    assert doc['options']['backend']['default'] == 'sqlite'
    assert set(doc['options']['backend']['choices']) == set(_lease.BACKENDS)
    assert 'fleet-dispatch' in ' '.join(doc['options']['path']['description']) and LEASE_FILE in ' '.join(
        doc['options']['path']['description'])
