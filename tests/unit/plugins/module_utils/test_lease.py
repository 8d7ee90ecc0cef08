# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease store (D4's third layer, D5's fail-open), on both backends.

Every behaviour test runs on the file backend (``tmp_path``) and on the PostgreSQL backend (the
real server behind ``pg_dsn``). Time passes differently on each: the file store is handed
``now``; the PostgreSQL store reads the database clock, so the test moves the *leases* back in
time instead (``UPDATE ... expires_at - interval``), which is the same thing seen from ``now()``.
"""
from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._store import lease as _lease
from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import (
    FileLeaseStore, LeaseError, PostgresLeaseStore, decide_acquire, decide_release, open_store, redact_dsn,
    safe_name, scrub,
)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.model import format_time, parse_time

T0 = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)


class FileBed(object):
    backend = 'file'

    def __init__(self, tmp_path):
        self.dir = str(tmp_path / 'leases')
        self.store = FileLeaseStore(self.dir)
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

    def close(self):
        self.store.close()


class PgBed(object):
    backend = 'postgres'

    def __init__(self, dsn):
        import psycopg
        self.store = PostgresLeaseStore(dsn)
        self.admin = psycopg.connect(dsn, autocommit=True)
        # A store creates its table on first use; make one exist, then start each test empty.
        self.store.get('warm-up')
        self.admin.execute('TRUNCATE fleet_leases')

    def acquire(self, name, owner, ttl=60):
        return self.store.acquire(name, owner, ttl)

    def release(self, name, owner):
        return self.store.release(name, owner)

    def get(self, name):
        return self.store.get(name)

    def advance(self, seconds):
        """Time passes: every lease's expiry moves ``seconds`` closer to the database's now()."""
        self.admin.execute('UPDATE fleet_leases SET expires_at = expires_at - make_interval(secs => %s)', (float(seconds),))

    def expires(self, lease):
        db_now = self.admin.execute('SELECT now()').fetchone()[0]
        return parse_time(lease.expires_at) - db_now

    def close(self):
        self.store.close()
        self.admin.close()


@pytest.fixture(params=['file', 'postgres'])
def bed(request, tmp_path):
    if request.param == 'file':
        b = FileBed(tmp_path)
    else:
        b = PgBed(request.getfixturevalue('pg_dsn'))
    yield b
    b.close()


# ------------------------------------------------------------------------------------------
# behaviour, both backends


def test_acquire_new_lease(bed):
    lease = bed.acquire('task-42', 'sweep-a', ttl=60)
    assert lease.acquired is True
    assert lease.degraded is False
    assert lease.holder == 'sweep-a' and lease.owner == 'sweep-a'
    assert isinstance(lease.token, int) and lease.token >= 1
    assert lease.backend == bed.backend
    left = bed.expires(lease).total_seconds()
    assert 50 < left <= 60
    assert bed.get('task-42').holder == 'sweep-a'


def test_same_owner_reacquire_is_idempotent_and_extends(bed):
    first = bed.acquire('task-42', 'sweep-a', ttl=60)
    bed.advance(40)
    again = bed.acquire('task-42', 'sweep-a', ttl=60)
    assert again.acquired is True
    assert again.token == first.token, 'a renewal keeps the token'
    assert 'already held by this owner' in again.why
    assert bed.expires(again).total_seconds() > 50, 'the expiry moved to now + ttl'
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
    # the refusal changed nothing
    assert bed.get('task-42').token == first.token


def test_expired_lease_taken_over_with_larger_token(bed):
    first = bed.acquire('task-42', 'sweep-a', ttl=30)
    bed.advance(31)
    taken = bed.acquire('task-42', 'hand-b', ttl=30)
    assert taken.acquired is True
    assert taken.holder == 'hand-b'
    assert taken.token > first.token
    assert 'took over the expired lease of sweep-a' in taken.why
    # and the previous owner, back from the dead, is now refused
    late = bed.acquire('task-42', 'sweep-a', ttl=30)
    assert late.acquired is False and late.holder == 'hand-b'


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


def test_release_twice_second_is_noop(bed):
    bed.acquire('task-42', 'sweep-a')
    assert bed.release('task-42', 'sweep-a').released is True
    second = bed.release('task-42', 'sweep-a')
    assert second.released is False and 'holds no lease' in second.why


def test_tokens_strictly_increase_across_takeovers_and_releases(bed):
    tokens = []
    owners = ['a', 'b', 'c', 'a', 'b']
    for i, owner in enumerate(owners):
        lease = bed.acquire('task-9', owner, ttl=10)
        assert lease.acquired is True
        tokens.append(lease.token)
        if i % 2:
            bed.release('task-9', owner)
        else:
            bed.advance(11)
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), tokens


def test_names_are_independent(bed):
    a = bed.acquire('task-1', 'sweep-a')
    b = bed.acquire('task-2', 'hand-b')
    assert a.acquired and b.acquired


def test_seed_story_lock_held_across_probe_and_launch(bed):
    """D4's duplicate: two dispatchers both passed a 'no live unit' probe, then both launched.

    With the probe inside the lease, the loser either is refused or, once the winner released,
    probes again and sees the winner's unit. Exactly one launch.
    """
    live_units = set()
    launches = []

    def dispatch(owner):
        lease = bed.acquire('task-42', owner, ttl=60)
        if not lease.acquired:
            return 'refused'
        try:
            if 'task-42' in live_units:          # the probe, inside the lock
                return 'already running'
            live_units.add('task-42')            # the launch, still inside the lock
            launches.append(owner)
            return 'launched'
        finally:
            bed.release('task-42', owner)

    # Interleave by hand: B arrives while A holds the lease between its probe and its launch.
    lease_a = bed.acquire('task-42', 'sweep-a', ttl=60)
    assert lease_a.acquired
    assert 'task-42' not in live_units              # A's probe: nothing live
    assert dispatch('hand-b') == 'refused'           # B cannot even probe
    live_units.add('task-42')
    launches.append('sweep-a')                       # A's launch
    bed.release('task-42', 'sweep-a')
    assert dispatch('hand-b') == 'already running'   # B's probe now sees A's unit
    assert launches == ['sweep-a']


def test_ttl_and_names_are_caller_errors(bed):
    for name, owner, ttl in [('', 'a', 10), ('  ', 'a', 10), (None, 'a', 10), ('task-1', '', 10),
                             ('task-1', None, 10), ('task-1', 'a', 0), ('task-1', 'a', -5), ('task-1', 'a', 'ten'),
                             ('task-1', 'a', True), ('task-1', 'a', float('nan')), ('task-1', 'a', float('inf'))]:
        with pytest.raises(LeaseError):
            bed.acquire(name, owner, ttl)


# ------------------------------------------------------------------------------------------
# file backend


def test_file_layout_one_json_per_name(tmp_path):
    bed = FileBed(tmp_path)
    bed.acquire('task-42', 'sweep-a', ttl=60)
    with open(os.path.join(bed.dir, 'task-42.json')) as handle:
        record = json.load(handle)
    assert record['owner'] == 'sweep-a'
    assert record['token'] == 1
    assert record['expires_at'] == format_time(T0 + dt.timedelta(seconds=60))
    # no temporary file is left behind by the atomic write
    assert not [f for f in os.listdir(bed.dir) if f.endswith('.tmp')]


@pytest.mark.parametrize('name, expected', [
    ('task-42', 'task-42'),
    ('task-owner@repo', 'task-owner@repo'),
])
def test_safe_name_keeps_plain_names(name, expected):
    assert safe_name(name) == expected


@pytest.mark.parametrize('name', ['../../etc/passwd', 'a/b', '.', '..', '.hidden', 'task 42', 'x' * 300, 'tâche-1'])
def test_safe_name_never_leaves_the_directory(name):
    safe = safe_name(name)
    assert '/' not in safe and safe not in ('.', '..') and not safe.startswith('.')
    assert len(safe) <= 100


def test_sanitised_names_do_not_collide(tmp_path):
    bed = FileBed(tmp_path)
    assert bed.acquire('a/b', 'one').acquired
    assert bed.acquire('a_b', 'two').acquired, 'a/b and a_b are two leases'
    assert bed.acquire('../escape', 'three').acquired
    assert sorted(os.listdir(str(tmp_path))) == ['leases'], 'nothing written outside the lease directory'


def test_file_unwritable_directory_fails_open(tmp_path):
    blocker = tmp_path / 'not-a-dir'
    blocker.write_text('a file where the lease directory should be')
    store = FileLeaseStore(str(blocker / 'leases'))
    lease = store.acquire('task-42', 'sweep-a', 60, now=T0)
    assert lease.acquired is True, 'fail OPEN (D5)'
    assert lease.degraded is True
    assert lease.token is None
    assert 'WITHOUT the lock' in lease.why
    assert str(blocker / 'leases') in lease.why, 'the why names the path'
    assert 'FLEET_DISPATCH_LEASE_DIR' in lease.why, 'and the fix'
    rel = store.release('task-42', 'sweep-a', now=T0)
    assert rel.released is False


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes through mode bits; the not-a-directory case covers it')
def test_file_read_only_directory_fails_open(tmp_path):
    d = tmp_path / 'leases'
    d.mkdir()
    d.chmod(0o555)
    try:
        lease = FileLeaseStore(str(d)).acquire('task-42', 'sweep-a', 60, now=T0)
    finally:
        d.chmod(0o755)
    assert lease.acquired is True and lease.degraded is True
    assert 'PermissionError' in lease.why


@pytest.mark.parametrize('content', [
    '{"owner": "sweep-a", "tok',                                  # torn/garbage
    '["not", "a", "lease"]',                                      # JSON of the wrong type (D5's type check)
    '{"message": "Not Found", "token": "abc"}',                   # an error body where a lease should be
    '{"owner": "sweep-a", "token": 3, "expires_at": "soon"}',      # an expiry that is not a time
    '{"owner": ["x"], "token": 3, "expires_at": null}',            # an owner that is not a string
])
def test_file_corrupt_lease_is_replaced_not_a_blocker(tmp_path, content):
    bed = FileBed(tmp_path)
    os.makedirs(bed.dir)
    with open(os.path.join(bed.dir, 'task-42.json'), 'w') as handle:
        handle.write(content)
    lease = bed.acquire('task-42', 'sweep-a')
    assert lease.acquired is True
    assert lease.degraded is True, 'the previous holder is unknown: say so'
    assert 'unreadable' in lease.why
    # ... and it healed itself: the next caller sees a normal live lease
    other = bed.acquire('task-42', 'hand-b')
    assert other.acquired is False and other.degraded is False and other.holder == 'sweep-a'


def test_file_lock_file_holds_no_data_and_never_blocks_after_a_crash(tmp_path):
    """A crashed holder leaves a lock file behind; it must not need a human (STYLE.md anti-pattern)."""
    bed = FileBed(tmp_path)
    bed.acquire('task-42', 'crashed')
    lock = os.path.join(bed.dir, '.task-42.lock')
    assert os.path.exists(lock) and os.path.getsize(lock) == 0
    bed.advance(61)
    assert bed.acquire('task-42', 'next').acquired is True


_AS_OTHER_USER = '''
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import FileLeaseStore
store = FileLeaseStore(sys.argv[2])
print(json.dumps(store.acquire('task-42', sys.argv[3], 60).as_dict()))
'''


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists('/usr/bin/python3'),
                    reason='needs root to act as a second unix user, and a system python that user can run')
def test_file_two_unix_users_share_one_directory():
    """The sweeper's user and an operator share the controller's lease directory (why the default is
    a system path). A lock file created by one user under umask 022 must still lock for the other --
    not degrade, which would silently let both dispatch (D20)."""
    import shutil
    import subprocess
    import sys
    import tempfile

    root = [p for p in sys.path if p.startswith(os.environ.get('FLEET_COLLECTIONS_ROOT', '/tmp/fleet-dispatch-collections'))]
    if not root:
        pytest.skip('the collection root is not on sys.path')
    shared = tempfile.mkdtemp(prefix='fleet-lease-users-')
    os.chmod(shared, 0o777)  # production: group-writable, set by the sweeper role

    def as_nobody(owner):
        def drop():
            os.setgid(65534)
            os.setuid(65534)
        out = subprocess.run(['/usr/bin/python3', '-c', _AS_OTHER_USER, root[0], shared, owner], cwd='/', preexec_fn=drop,
                             env={'PATH': '/usr/bin:/bin'}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                             check=False)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    old_umask = os.umask(0o022)
    try:
        store = FileLeaseStore(shared)
        assert store.acquire('task-42', 'sweep-root', 60).acquired
        refused = as_nobody('hand-nobody')
        assert refused['degraded'] is False, refused['why']
        assert refused['acquired'] is False and refused['holder'] == 'sweep-root'
        assert store.release('task-42', 'sweep-root').released
        won = as_nobody('hand-nobody')
        assert won['acquired'] is True and won['degraded'] is False, won['why']
        back = store.acquire('task-42', 'sweep-root', 60)
        assert back.acquired is False and back.holder == 'hand-nobody'
    finally:
        os.umask(old_umask)
        shutil.rmtree(shared, ignore_errors=True)


def test_file_store_is_the_flock_not_the_lock_file_existence(tmp_path):
    """An exclusive flock held by someone else blocks the critical section; without it, no wait."""
    import fcntl
    import threading
    bed = FileBed(tmp_path)
    bed.acquire('task-42', 'a')
    fd = os.open(os.path.join(bed.dir, '.task-42.lock'), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault('lease', bed.store.release('task-42', 'a', now=T0)))
    worker.start()
    worker.join(0.3)
    blocked = worker.is_alive()
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    worker.join(5)
    assert blocked, 'the release waited for the critical section'
    assert result['lease'].released is True


# ------------------------------------------------------------------------------------------
# PostgreSQL backend


def test_pg_expiry_is_judged_by_the_database_clock(pg_dsn):
    """Controllers with skewed clocks must agree: the store ignores the caller's ``now``."""
    bed = PgBed(pg_dsn)
    try:
        bed.acquire('task-42', 'sweep-a', ttl=60)
        far_future = dt.datetime(2099, 1, 1, tzinfo=dt.timezone.utc)
        skewed = bed.store.acquire('task-42', 'hand-b', 60, now=far_future)
        assert skewed.acquired is False and skewed.holder == 'sweep-a'
    finally:
        bed.close()


def test_pg_table_creation_is_idempotent(pg_dsn):
    stores = [PostgresLeaseStore(pg_dsn) for dummy in range(3)]
    try:
        for i, store in enumerate(stores):
            lease = store.acquire('ddl-%d' % i, 'o', 30)
            assert lease.acquired and not lease.degraded
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize('dsn', [
    'postgresql://fleet:s3cret-pw@127.0.0.1:1/fleet',
    "host=127.0.0.1 port=1 user=fleet password=s3cret-pw dbname=fleet",
    "host=127.0.0.1 port=1 user=fleet password='s3cret-pw' dbname=fleet",
])
def test_pg_unreachable_fails_open_without_echoing_the_password(dsn):
    pytest.importorskip('psycopg')
    store = PostgresLeaseStore(dsn)
    lease = store.acquire('task-42', 'sweep-a', 60)
    assert lease.acquired is True and lease.degraded is True
    assert 'WITHOUT the lock' in lease.why
    assert 's3cret-pw' not in json.dumps(lease.as_dict())
    assert '127.0.0.1' in lease.store, 'the store is still named, without its password'
    rel = store.release('task-42', 'sweep-a')
    assert rel.degraded is True and rel.released is False
    assert 's3cret-pw' not in json.dumps(rel.as_dict())
    got = store.get('task-42')
    assert got.degraded is True and 's3cret-pw' not in json.dumps(got.as_dict())


def test_pg_stuck_row_lock_degrades_instead_of_hanging(pg_dsn):
    """A transaction that sits on the lease row must not hang the dispatcher (D5: fail open)."""
    import psycopg
    store = PostgresLeaseStore(pg_dsn, statement_timeout_ms=300)
    try:
        assert store.acquire('task-60', 'a', 60).acquired
        with psycopg.connect(pg_dsn) as stuck:   # not autocommit: the lock is held until rollback
            stuck.execute("SELECT 1 FROM fleet_leases WHERE name = 'task-60' FOR UPDATE")
            lease = store.acquire('task-60', 'b', 60)
            stuck.rollback()
        assert lease.acquired is True and lease.degraded is True
        assert 'statement timeout' in lease.why or 'QueryCanceled' in lease.why, lease.why
        # once the lock is gone the store answers normally again: 'a' still holds it
        assert store.acquire('task-60', 'b', 60).acquired is False
    finally:
        store.close()


def test_pg_without_psycopg_fails_open(monkeypatch):
    monkeypatch.setattr(_lease, 'HAS_PSYCOPG', False)
    lease = PostgresLeaseStore('postgresql://fleet:pw@127.0.0.1/x').acquire('task-42', 'a', 60)
    assert lease.acquired is True and lease.degraded is True
    assert 'psycopg' in lease.why and 'pip install' in lease.why


def test_pg_reconnects_after_a_dropped_connection(pg_dsn):
    """A store whose connection died degrades once, then works again on the next call."""
    import psycopg
    store = PostgresLeaseStore(pg_dsn)
    try:
        assert store.acquire('task-50', 'a', 60).acquired
        pid = store._conn.info.backend_pid
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute('SELECT pg_terminate_backend(%s)', (pid,))
        dropped = store.acquire('task-50', 'a', 60)
        assert dropped.acquired is True and dropped.degraded is True
        back = store.acquire('task-50', 'a', 60)
        assert back.acquired is True and back.degraded is False
    finally:
        store.close()


# ------------------------------------------------------------------------------------------
# pure rule and helpers


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


@pytest.mark.parametrize('backend, kwargs, kind', [
    ('file', {'path': '/x'}, FileLeaseStore),
    ('postgres', {'dsn': 'postgresql://h/d'}, PostgresLeaseStore),
])
def test_open_store(backend, kwargs, kind):
    assert isinstance(open_store(backend, **kwargs), kind)


@pytest.mark.parametrize('backend, kwargs', [('postgres', {}), ('redis', {})])
def test_open_store_rejects(backend, kwargs):
    with pytest.raises(LeaseError):
        open_store(backend, **kwargs)


def test_default_constants_are_documented_in_the_lookup():
    """The lookup's documented defaults are the store's constants (one source, two readers)."""
    from ansible_collections.fleet.dispatch.plugins.lookup import mutex
    import yaml
    doc = yaml.safe_load(mutex.DOCUMENTATION)
    assert doc['options']['path']['default'] == _lease.DEFAULT_LEASE_DIR
    assert doc['options']['ttl']['default'] == _lease.DEFAULT_TTL
