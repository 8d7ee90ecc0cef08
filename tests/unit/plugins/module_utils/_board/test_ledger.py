# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger board on SQLite AND real PostgreSQL: one test body, both backends (``ledger_url``)."""
from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._store import sql as _sql
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError, BoardRead, BoardUnreadable, ItemNotFound
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import MIGRATIONS
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Blocker, format_time, parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import redact_dsn
from ledger_fixtures import T0, Clock

UTC = dt.timezone.utc


def t(seconds):
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def board(ledger_url, clock):
    b = LedgerBoard(create=True, clock=clock, **ledger_url)
    yield b
    b.close()


def rows(board, sql):
    return board._store.transaction(lambda tx: tx.all(sql))


# -- items -----------------------------------------------------------------------------------

def test_empty_store_reads_as_empty_not_as_error(board):
    assert board.read() == BoardRead(items=[], cost=None)


def test_create_update_and_noop_with_diffable_before_after(board):
    made = board.upsert_item(title='first', body='do it', status='Ready')
    assert made['number'] == 1 and made['created'] and made['changed']
    assert made['before'] is None
    assert made['after'] == {'number': 1, 'title': 'first', 'body': 'do it', 'status': 'Ready',
                             'state': 'open', 'repo': '', 'blocked_by': [],
                             'agent': '', 'model': '', 'effort': '', 'priority': '', 'budget': ''}
    assert board.upsert_item(title='second')['number'] == 2

    changed = board.upsert_item(number=1, title='first, renamed')
    assert changed['changed'] and not changed['created']
    assert changed['before']['title'] == 'first' and changed['after']['title'] == 'first, renamed'
    assert changed['after']['body'] == 'do it'  # None leaves a field as it is

    same = board.upsert_item(number=1, title='first, renamed', status='Ready')
    assert not same['changed'] and same['before'] == same['after']

    item = board.get(1)
    assert (item.number, item.title, item.body, item.status, item.state, item.id) == (
        1, 'first, renamed', 'do it', 'Ready', 'open', '1')
    assert item.created_at < item.updated_at


def test_explicit_number_then_next_free_number(board):
    assert board.upsert_item(number=40, title='forty')['number'] == 40
    assert board.upsert_item(title='next')['number'] == 41
    assert [i.number for i in board.read().items] == [40, 41]


@pytest.mark.parametrize('number', [0, -1, 'x', '4x', 2.5, True, None])
def test_bad_numbers_are_refused(tmp_path, number):
    """Validation happens before any SQL, so one backend covers it."""
    calls = {
        'get': lambda b, n: b.get(n),
        'comment': lambda b, n: b.comment(n, 'x'),
        'set_state': lambda b, n: b.set_state(n, 'open'),
        'add_blocker': lambda b, n: b.add_blocker(1, n),
        'upsert_item': lambda b, n: b.upsert_item(number=n, title='t'),
    }
    if number is None:
        del calls['upsert_item']  # number=None asks for a new item: by design
    with LedgerBoard(path=str(tmp_path / 'l.sqlite3'), create=True) as board:
        for name, call in calls.items():
            with pytest.raises(BoardError) as err:
                call(board, number)
            assert 'positive integer' in str(err.value), name
        assert board.read().items == []


@pytest.mark.parametrize('number, expected', [(7, 7), ('7', 7), ('#7', 7), (' 7 ', 7)])
def test_numbers_may_be_given_as_text(tmp_path, number, expected):
    with LedgerBoard(path=str(tmp_path / 'l.sqlite3'), create=True) as board:
        assert board.upsert_item(number=number, title='t')['number'] == expected
        assert board.get(number).number == expected


def test_dry_run_reports_the_change_and_writes_nothing(board):
    plan = board.upsert_item(title='planned', dry_run=True)
    assert plan['created'] and plan['number'] == 1
    assert board.read().items == []
    board.upsert_item(title='real', status='Backlog')
    plan = board.upsert_item(number=1, status='Ready', state='closed', dry_run=True)
    assert plan['changed'] and plan['after']['status'] == 'Ready' and plan['after']['state'] == 'closed'
    item = board.get(1)
    assert (item.status, item.state, item.events) == ('Backlog', 'open', [])


def test_new_item_needs_a_title_and_missing_items_are_not_found(board):
    with pytest.raises(BoardError):
        board.upsert_item(body='no title')
    with pytest.raises(ItemNotFound):
        board.get(9)
    with pytest.raises(ItemNotFound):
        board.comment(9, 'hello')
    with pytest.raises(ItemNotFound):
        board.set_state(9, 'closed')
    with pytest.raises(ItemNotFound):
        board.set_status(9, 'Ready')


def test_set_status_reports_change(board):
    board.upsert_item(title='a')
    assert board.set_status(1, 'Ready') is True
    assert board.set_status(1, 'Ready') is False
    assert board.get(1).status == 'Ready'


# -- comments and times ----------------------------------------------------------------------

def test_comments_come_back_in_time_order_as_aware_utc(board):
    board.upsert_item(title='a')
    late = board.comment(1, 'late', author='human', at='2026-03-01T08:30:00.000001Z')
    early = board.comment(1, 'early', at=dt.datetime(2026, 3, 1, 11, 0, tzinfo=dt.timezone(dt.timedelta(hours=3))))
    now = board.comment(1, 'clocked')
    item = board.get(1)
    assert [c.body for c in item.comments] == ['early', 'late', 'clocked']
    assert [c.id for c in item.comments] == [early.id, late.id, now.id]
    assert item.comments[0].created_at == dt.datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    assert item.comments[1].created_at == dt.datetime(2026, 3, 1, 8, 30, 0, 1, tzinfo=UTC)
    assert item.comments[1].author == 'human'
    for c in item.comments:
        assert c.created_at.tzinfo is not None and c.created_at.utcoffset() == dt.timedelta(0)


def test_times_are_stored_as_sortable_text(board):
    board.upsert_item(title='a')
    board.comment(1, 'x', at='2026-03-01T09:00:05Z')
    stored = rows(board, 'SELECT created_at FROM comments')[0][0]
    assert stored == '2026-03-01T09:00:05.000000Z'
    assert parse_time(stored) == t(5)


def test_the_clock_is_read_once_per_write_transaction(board, clock):
    board.upsert_item(title='a')
    before = clock.reads
    board.comment(1, 'one')
    assert clock.reads == before + 1
    board.post_marker(1, 'marker', close=True)  # two transactions: the comment, then the close (D12)
    assert clock.reads == before + 3
    item = board.get(1)
    assert item.comments[-1].created_at < item.events[-1].at
    board.post_marker(1, 'again', close=True, at=t(50))  # a time passed in is used as is, by both
    assert clock.reads == before + 3


@pytest.mark.parametrize('at', ['yesterday', 42, '2026-13-01T00:00:00Z'])
def test_a_bad_time_is_refused_before_writing(board, at):
    board.upsert_item(title='a')
    with pytest.raises(BoardError) as err:
        board.comment(1, 'x', at=at)
    assert 'ISO-8601' in str(err.value)
    assert board.get(1).comments == []


def test_empty_comment_is_refused(board):
    board.upsert_item(title='a')
    with pytest.raises(BoardError):
        board.comment(1, '')


# -- state and events (D6) -------------------------------------------------------------------

def test_state_changes_are_events_in_time_order(board):
    board.upsert_item(title='a')
    assert board.set_state(1, 'closed', at=t(100), actor='pr') is True
    assert board.set_state(1, 'closed', at=t(110)) is False  # no change, no event
    assert board.set_state(1, 'reopened', at=t(200), actor='human') is True
    assert board.set_state(1, 'open', at=t(210)) is False
    assert board.set_state(1, 'closed', at=t(300)) is True
    item = board.get(1)
    assert [(e.kind, e.at, e.actor) for e in item.events] == [
        ('closed', t(100), 'pr'), ('reopened', t(200), 'human'), ('closed', t(300), '')]
    assert item.state == 'closed'


def test_bad_state_is_refused(board):
    board.upsert_item(title='a')
    with pytest.raises(BoardError):
        board.set_state(1, 'done')


def test_reopen_after_success_marker_is_an_event_after_it(board):
    """D6 story: a success marker on an item a human then reopens -- the reopen must be visible as later."""
    board.upsert_item(title='a')
    marker = board.post_marker(1, '✅ success', close=True, at=t(10))
    board.set_state(1, 'reopened', at=t(20), actor='human')
    item = board.get(1)
    assert item.state == 'open'
    assert item.events[-1].kind == 'reopened' and item.events[-1].at > marker['comment'].created_at


def test_upsert_state_records_events(board):
    board.upsert_item(title='a', state='closed', at=t(1))
    board.upsert_item(number=1, state='reopened', at=t(2))
    assert [(e.kind, e.at) for e in board.get(1).events] == [('closed', t(1)), ('reopened', t(2))]


# -- post_marker (D12) -----------------------------------------------------------------------

def test_post_marker_on_an_item_the_merge_already_closed_keeps_the_comment(board):
    """🔴 D12: the merged PR's Closes had already closed the issue; the close-out comment was dropped."""
    board.upsert_item(title='a')
    board.add_artifact('pr-7', created_at=t(5), merged=True, merged_at=t(10), closes=[1])
    assert board.get(1).state == 'closed'
    result = board.post_marker(1, '✅ success', close=True, at=t(20))
    assert result['closed'] is False and result['state'] == 'closed'
    item = board.get(1)
    assert [c.body for c in item.comments] == ['✅ success']
    assert [e.kind for e in item.events] == ['closed']  # the forge's close only


@pytest.mark.parametrize('close, state, events', [(False, 'open', []), (True, 'closed', ['closed'])])
def test_post_marker_on_an_open_item(board, close, state, events):
    board.upsert_item(title='a')
    result = board.post_marker(1, '▶ start', close=close)
    assert result['closed'] is close
    item = board.get(1)
    assert item.state == state and [e.kind for e in item.events] == events
    assert item.comments[0].id == result['comment'].id


# -- blockers (D9) ---------------------------------------------------------------------------

def test_blockers_carry_the_blockers_current_state(board):
    board.upsert_item(title='blocker')
    board.upsert_item(title='blocked', blocked_by=[1])
    assert board.get(2).blockers == [Blocker(number=1, state='open')]
    board.set_state(1, 'closed')
    assert board.get(2).blockers == [Blocker(number=1, state='closed')]
    assert board.read().items[1].blockers == [Blocker(number=1, state='closed')]


def test_blocker_edges_add_remove_replace(board):
    for title in 'abcd':
        board.upsert_item(title=title)
    assert board.add_blocker(4, 1) is True
    assert board.add_blocker(4, 1) is False
    assert board.add_blocker(4, 2) is True
    assert [b.number for b in board.get(4).blockers] == [1, 2]
    res = board.upsert_item(number=4, blocked_by=[3, 2])
    assert res['before']['blocked_by'] == [1, 2] and res['after']['blocked_by'] == [2, 3]
    assert [b.number for b in board.get(4).blockers] == [2, 3]
    assert board.upsert_item(number=4, blocked_by=[2, 3])['changed'] is False
    assert board.remove_blocker(4, 2) is True and board.remove_blocker(4, 2) is False
    board.upsert_item(number=4, blocked_by=[])
    assert board.get(4).blockers == []


BAD_EDGES = [
    ('self-block', lambda b: b.add_blocker(1, 1), BoardError),
    ('missing blocker', lambda b: b.add_blocker(1, 99), ItemNotFound),
    ('missing item', lambda b: b.add_blocker(99, 1), ItemNotFound),
    ('self-block by upsert', lambda b: b.upsert_item(number=1, blocked_by=[1]), BoardError),
    ('missing blocker by upsert', lambda b: b.upsert_item(number=1, blocked_by=[99]), ItemNotFound),
    ('missing blocker on create', lambda b: b.upsert_item(title='new', blocked_by=[99]), ItemNotFound),
]


def test_bad_blocker_edges_are_refused_and_write_nothing(board):
    board.upsert_item(title='a')
    for name, call, error in BAD_EDGES:
        with pytest.raises(error):
            call(board)
        assert board.get(1).blockers == [], name
        assert len(board.read().items) == 1, name


# -- artifacts (D2, D16) ---------------------------------------------------------------------

def test_an_open_artifact_closes_nothing_and_its_merge_closes_like_a_forge(board):
    """D2 corollary: an OPEN pull request is not finished. The merge closes the item, at merge time."""
    board.upsert_item(title='a')
    board.upsert_item(title='b')
    opened = board.add_artifact('pr-1', created_at=t(10), closes=[1, 2], title='fix', url='https://x/pr/1')
    assert opened['created'] and opened['closed'] == []
    assert [i.state for i in board.read().items] == ['open', 'open']
    art = board.get(1).artifacts[0]
    assert (art.ref, art.merged, art.merged_at, art.closes, art.created_at) == ('pr-1', False, None, [1, 2], t(10))

    board.set_state(2, 'closed', at=t(15))
    merged = board.add_artifact('pr-1', created_at=t(99), merged=True, merged_at=t(20), closes=[1, 2],
                                title='fix', url='https://x/pr/1')
    assert not merged['created'] and merged['closed'] == [1]  # 2 was already closed: no second event
    item = board.get(1)
    assert item.state == 'closed'
    assert [(e.kind, e.at, e.actor) for e in item.events] == [('closed', t(20), 'pr-1')]
    art = item.artifacts[0]
    assert art.merged and art.merged_at == t(20)
    assert art.created_at == t(10)  # the first time it existed stays (D16 attributes by it)
    assert [e.kind for e in board.get(2).events] == ['closed']


def test_artifacts_attach_to_every_item_they_close_and_only_those(board):
    for title in 'abc':
        board.upsert_item(title=title)
    board.add_artifact('pr-1', created_at=t(1), closes=[1])
    board.add_artifact('pr-2', created_at=t(2), closes=[1, 3])
    items = {i.number: i for i in board.read().items}
    assert [a.ref for a in items[1].artifacts] == ['pr-1', 'pr-2']
    assert items[2].artifacts == []
    assert [a.ref for a in items[3].artifacts] == ['pr-2']
    assert [a.ref for a in board.get(3).artifacts] == ['pr-2']


def test_artifact_closing_a_missing_item_writes_nothing(board):
    board.upsert_item(title='a')
    with pytest.raises(ItemNotFound):
        board.add_artifact('pr-1', merged=True, closes=[1, 5])
    assert rows(board, 'SELECT COUNT(*) FROM artifacts')[0][0] == 0
    assert board.get(1).state == 'open'


# -- one query per table (D1) ----------------------------------------------------------------

def test_read_costs_the_same_queries_for_one_item_or_thirty(board, monkeypatch):
    counted = []
    real_all, real_one = _sql.Tx.all, _sql.Tx.one
    monkeypatch.setattr(_sql.Tx, 'all', lambda self, sql, params=(): counted.append(sql) or real_all(self, sql, params))
    monkeypatch.setattr(_sql.Tx, 'one', lambda self, sql, params=(): counted.append(sql) or real_one(self, sql, params))

    def cost():
        del counted[:]
        read = board.read()
        return len(counted), read

    board.upsert_item(title='first')
    board.comment(1, 'c')
    one = cost()[0]
    for n in range(29):
        num = board.upsert_item(title='more %d' % n, blocked_by=[1])['number']
        board.comment(num, 'c')
        board.set_state(num, 'closed')
        board.add_artifact('pr-%d' % n, closes=[num])
    many, read = cost()
    assert len(read.items) == 30
    assert one == many
    assert all(len(i.comments) == 1 for i in read.items)


# -- migrations ------------------------------------------------------------------------------

def test_migrations_are_recorded_and_idempotent(ledger_url, clock):
    first = LedgerBoard(create=True, clock=clock, **ledger_url)
    assert first.migrated == [m[0] for m in MIGRATIONS]
    first.upsert_item(title='kept')
    first.close()
    again = LedgerBoard(clock=clock, **ledger_url)
    assert again.migrated == []
    assert again.schema_version() == MIGRATIONS[-1][0]
    recorded = rows(again, "SELECT component, version, name FROM schema_version WHERE component = 'board' ORDER BY version")
    assert recorded == [('board', m[0], m[1]) for m in MIGRATIONS]
    # the announcer's table is its own component: the board's version does not move for it
    assert rows(again, "SELECT component, version FROM schema_version WHERE component = 'report'") == [('report', 1)]
    assert first.migrated_reports == [1] and again.migrated_reports == []
    assert [i.title for i in again.read().items] == ['kept']
    again.close()


def test_an_older_store_migrates_forward_and_keeps_its_data(ledger_url, clock):
    old = LedgerBoard(create=True, clock=clock, migrations=MIGRATIONS[:1], **ledger_url)
    assert old.schema_version() == 1
    old.upsert_item(title='from v1')
    old.comment(1, 'old comment')
    old.close()

    extra = MIGRATIONS + [(99, 'a later table', [
        # a literal % in DDL must reach the server as is (no placeholder parsing without parameters)
        "CREATE TABLE later_thing (id {id}, note TEXT NOT NULL CHECK (note NOT LIKE '%secret%'))"])]
    new = LedgerBoard(clock=clock, migrations=extra, **ledger_url)
    assert new.migrated == [m[0] for m in MIGRATIONS[1:]] + [99]
    assert new.schema_version() == 99
    item = new.get(1)
    assert item.title == 'from v1' and [c.body for c in item.comments] == ['old comment']
    new.add_artifact('pr-1', merged=True, closes=[1])  # the v2 tables work
    assert new.get(1).state == 'closed'
    new._store.transaction(lambda tx: tx.insert('INSERT INTO later_thing (note) VALUES (?)', ('x',)), write=True)
    with pytest.raises(_sql.SqlError) as err:
        new._store.transaction(lambda tx: tx.insert('INSERT INTO later_thing (note) VALUES (?)', ('a secret',)), write=True)
    assert err.value.integrity
    new.close()

    # This collection, which knows only MIGRATIONS, must refuse a store a newer one wrote.
    with pytest.raises(BoardUnreadable) as err:
        LedgerBoard(clock=clock, **ledger_url)
    assert 'version 99' in str(err.value) and 'upgrade' in str(err.value)


def test_migrations_out_of_order_are_refused(ledger_url, clock):
    with pytest.raises(BoardUnreadable):
        LedgerBoard(create=True, clock=clock, migrations=list(reversed(MIGRATIONS)), **ledger_url)


def test_a_failing_migration_applies_nothing(ledger_url, clock):
    broken = MIGRATIONS[:1] + [(2, 'broken', ["CREATE TABLE artifacts (id {id})", "THIS IS NOT SQL"])]
    with pytest.raises(BoardUnreadable):
        LedgerBoard(create=True, clock=clock, migrations=broken, **ledger_url)
    board = LedgerBoard(create=True, clock=clock, **ledger_url)
    assert board.migrated == [m[0] for m in MIGRATIONS]  # nothing of the failed attempt stuck
    board.close()


# -- unreadable (D5, D20) --------------------------------------------------------------------

def test_a_corrupt_sqlite_file_is_unreadable(tmp_path):
    path = tmp_path / 'ledger.sqlite3'
    path.write_bytes(b'this is not a database, it is a note somebody saved here\n' * 100)
    with pytest.raises(BoardUnreadable) as err:
        open_board({'kind': 'ledger', 'path': str(path)})
    assert str(path) in str(err.value) and 'backup' in str(err.value)


def test_a_store_broken_after_open_reads_as_unreadable_not_empty(board):
    """D20: a store missing a table (a broken hand edit, a half-restored backup) must not read as "no work"."""
    board.upsert_item(title='a')
    board._store.transaction(lambda tx: tx.run('DROP TABLE events'), write=True)
    with pytest.raises(BoardUnreadable) as err:
        board.read()
    assert 'events' in str(err.value)
    with pytest.raises(BoardUnreadable):
        board.get(1)


def test_a_row_that_does_not_parse_makes_its_item_unreadable_and_the_rest_reads(board):
    """Issue 14: one bad row once made the whole queue unreadable (apply stopped the fleet)."""
    board.upsert_item(title='a')
    board.upsert_item(title='b')
    board._store.transaction(lambda tx: tx.run(
        "INSERT INTO comments (item, author, body, created_at) VALUES (1, '', 'x', 'last tuesday')"), write=True)
    items = dict((i.number, i) for i in board.read().items)
    assert 'last tuesday' in items[1].unreadable and 'comment' in items[1].unreadable
    assert items[2].unreadable == ''


def test_a_lost_postgres_connection_reads_as_unreadable(pg_dsn):
    import psycopg
    board = LedgerBoard(dsn=pg_dsn, create=True)
    board.upsert_item(title='a')
    pid = board._store._conn.info.backend_pid
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute('SELECT pg_terminate_backend(%s)', (pid,))
    with pytest.raises(BoardUnreadable) as err:
        board.read()
    assert 'connection' in str(err.value)
    board.close()


def test_an_unwritable_directory_is_unreadable(tmp_path):
    with pytest.raises(BoardUnreadable) as err:
        LedgerBoard(path=str(tmp_path / 'missing-dir' / 'ledger.sqlite3'), create=True)
    assert 'missing-dir' in str(err.value)


@pytest.mark.parametrize('dsn', [
    'postgresql://fleet:s3cretpw@127.0.0.1:1/fleet',
    'host=127.0.0.1 port=1 dbname=fleet user=fleet password=s3cretpw',
])
def test_an_unreachable_postgres_is_unreadable_and_the_password_stays_secret(dsn):
    with pytest.raises(BoardUnreadable) as err:
        LedgerBoard(dsn=dsn, timeout=2)
    assert 's3cretpw' not in str(err.value)
    assert '127.0.0.1' in str(err.value) and 'server' in str(err.value)


def test_a_missing_postgres_database_is_unreadable(pg_dsn):
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    params = conninfo_to_dict(pg_dsn)
    params['dbname'] = 'fleet_no_such_db_here'
    with pytest.raises(BoardUnreadable) as err:
        LedgerBoard(dsn=make_conninfo(**params), timeout=3)
    assert 'fleet_no_such_db_here' in str(err.value)
    if params.get('password'):
        assert 'password=********' in str(err.value)
        assert 'password=%s ' % params['password'] not in str(err.value)


@pytest.mark.parametrize('dsn, shown', [
    ('postgresql://fleet:pw@db:5432/ledger', 'postgresql://fleet:********@db:5432/ledger'),
    ('postgres://u:p%40ss@h/db?sslmode=require', 'postgres://u:********@h/db?sslmode=require'),
    ('postgresql://fleet@db/ledger', 'postgresql://fleet@db/ledger'),
    ('postgresql://db/ledger?user=u&password=pw&sslmode=require', 'postgresql://db/ledger?user=u&password=********&sslmode=require'),
    ('host=db password=pw dbname=x', 'host=db password=******** dbname=x'),
    ("host=db password='p w' dbname=x", 'host=db password=******** dbname=x'),
    ('connection to postgresql://fleet:pw@db/x failed', 'connection to postgresql://fleet:********@db/x failed'),  # inside an error
])
def test_redact_dsn(dsn, shown):
    assert redact_dsn(dsn) == shown


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    board = LedgerBoard(path=str(tmp_path / 'l.sqlite3'), create=True)
    assert board._store.journal_mode == 'wal'
    board.close()
    conn = sqlite3.connect(str(tmp_path / 'l.sqlite3'))
    assert conn.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
    conn.close()


def test_format_time_roundtrip_is_the_storage_contract():
    when = dt.datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert parse_time(format_time(when)) == when
    assert format_time(t(1)) < format_time(t(2)) < format_time(dt.datetime(2027, 1, 1, tzinfo=UTC))
