# -*- coding: utf-8 -*-
"""Who may write what on a PostgreSQL ledger (_board/ledger_roles.py), on a real server.

The agent's forge credential is a role of its own: with it, recording a merged artifact works (it
closes the item, as a forge's merge does, D2), while a marker, an item change, a reopen and every raw
statement around them are refused by the server. A comment's writer is the role that wrote it, so a
role outside the fleet that may comment still cannot write a marker under the fleet's name (D6).
SQLite has no roles: it records no writer and reads authors as before.
"""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LEDGER_AUTHOR, LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import MIGRATIONS
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_roles import ROLES_VERSION
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import human_markers, markers_of

START = '🚀 run started'


@pytest.fixture
def ledger(fresh_database, pg_role):
    """``(fleet_dsn, make_role)``: a fresh database the fleet's role owns, and a factory of other
    login roles (``make_role(*grants) -> dsn``)."""
    pytest.importorskip('psycopg')
    dsn, drop = fresh_database()
    LedgerBoard(dsn=dsn).close()   # the fleet's role migrates: it owns the tables
    try:
        yield dsn, lambda *grants: pg_role(dsn, *grants)
    finally:
        drop()


def _raw(dsn, statement, params=()):
    """One statement through psycopg as that role, committed; the server's refusal is raised."""
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(statement, params).rowcount


def _user(dsn):
    from psycopg.conninfo import conninfo_to_dict
    return conninfo_to_dict(dsn)['user']


def _item(dsn, number):
    board = LedgerBoard(dsn=dsn)
    try:
        return board.get(number)
    finally:
        board.close()


def test_the_forge_records_a_merged_artifact_and_it_closes_the_item(ledger):
    fleet_dsn, make_role = ledger
    fleet = LedgerBoard(dsn=fleet_dsn)
    fleet.upsert_item(number=7, title='item 7', status='Ready')
    forge = LedgerBoard(dsn=make_role())
    try:
        assert forge.add_artifact('pr-7', merged=True, closes=[7], title='Fix 7', head_ref='fix-7')['closed'] == [7]
        forge.add_artifact('pr-8', closes=[7])              # an open one too, and it closes nothing
    finally:
        forge.close()
    item = fleet.get(7)
    fleet.close()
    assert item.state == 'closed'
    assert [(a.ref, a.merged, a.head_ref) for a in item.artifacts] == [('pr-7', True, 'fix-7'), ('pr-8', False, '')]
    assert [e.kind for e in item.events] == ['closed']


def test_the_forge_cannot_write_a_marker_or_change_an_item(ledger):
    fleet_dsn, make_role = ledger
    fleet = LedgerBoard(dsn=fleet_dsn)
    fleet.upsert_item(number=7, title='item 7', status='Ready')
    fleet.upsert_item(number=8, title='item 8', status='Ready')
    fleet.set_state(8, 'closed')
    fleet.close()
    forge = LedgerBoard(dsn=make_role())
    refused = []
    attempts = [
        ('marker', lambda: forge.post_marker(7, START)),
        ('comment', lambda: forge.comment(7, 'hello', author=LEDGER_AUTHOR)),
        ('status', lambda: forge.upsert_item(number=7, status='Done')),
        ('title', lambda: forge.upsert_item(number=7, title='rewritten')),
        ('new item', lambda: forge.upsert_item(title='more work', status='Ready')),
        ('reopen', lambda: forge.set_state(8, 'reopened')),
        ('close', lambda: forge.set_state(7, 'closed')),
        ('blocker', lambda: forge.add_blocker(7, 8)),
        ('review', lambda: forge.add_review('pr-x', 'LGTM', association='OWNER')),
        ('read', forge.read),
    ]
    try:
        for name, attempt in attempts:
            try:
                attempt()
            except BoardError:
                refused.append(name)
    finally:
        forge.close()
    assert refused == [name for name, _a in attempts]
    seven, eight = _item(fleet_dsn, 7), _item(fleet_dsn, 8)
    assert (seven.title, seven.status, seven.state, seven.comments, seven.blockers) == ('item 7', 'Ready', 'open', [], [])
    assert (eight.state, [e.kind for e in eight.events]) == ('closed', ['closed'])


def test_raw_statements_with_the_forges_role_are_refused_by_the_server(ledger):
    import psycopg
    fleet_dsn, make_role = ledger
    fleet = LedgerBoard(dsn=fleet_dsn)
    fleet.upsert_item(number=7, title='item 7', status='Ready')
    fleet.upsert_item(number=8, title='item 8', status='Ready')
    fleet.set_state(8, 'closed')
    fleet.post_marker(7, START)
    fleet.add_artifact('pr-open', closes=[7])               # recorded, not merged
    fleet.close()
    forge = make_role()
    statements = [
        "INSERT INTO comments (item, author, body, created_at) VALUES (7, 'fleet.dispatch', '✅ done', '2026-01-01T00:00:00Z')",
        "UPDATE comments SET body = '✅ done'",
        "DELETE FROM comments",
        "UPDATE items SET state = 'open' WHERE number = 8",                  # a reopen
        "INSERT INTO events (item, kind, at) VALUES (8, 'reopened', '2026-01-01T00:00:00Z')",
        "UPDATE items SET state = 'closed' WHERE number = 7",                # no merged artifact closes 7
        "UPDATE items SET status = 'Done' WHERE number = 7",
        "UPDATE items SET updated_at = '2030-01-01T00:00:00Z', state = 'open' WHERE number = 8",
        "SELECT title, body FROM items",
        "INSERT INTO items (number, title, created_at, updated_at) VALUES (9, 'x', 'now', 'now')",
        "DELETE FROM items WHERE number = 7",
        "INSERT INTO dependencies (item, blocker) VALUES (7, 8)",
        "DELETE FROM artifact_closes",
        "INSERT INTO artifact_reviews (artifact, kind, body, created_at) VALUES (1, 'review', 'ok', 'now')",
        "UPDATE schema_version SET version = 99",
        "DROP POLICY forge_close ON items",
        "ALTER TABLE items DISABLE ROW LEVEL SECURITY",
        "DROP TRIGGER comments_writer ON comments",
        "CREATE TABLE sneaky (x int)",
    ]
    allowed = []
    for statement in statements:
        try:
            _raw(forge, statement)
        except psycopg.Error:
            continue
        allowed.append(statement)
    assert allowed == []
    seven, eight = _item(fleet_dsn, 7), _item(fleet_dsn, 8)
    assert (seven.state, seven.status, [c.body for c in seven.comments]) == ('open', 'Ready', [START])
    assert (eight.state, [e.kind for e in eight.events]) == ('closed', ['closed'])


def test_a_markers_author_is_the_role_that_wrote_it(ledger):
    fleet_dsn, make_role = ledger
    fleet = LedgerBoard(dsn=fleet_dsn)
    fleet.upsert_item(number=7, title='item 7', status='Ready')
    fleet.post_marker(7, START)
    # an operator gives a human's role the right to comment: its comments are its own, whatever they name
    human = make_role('GRANT SELECT, INSERT, UPDATE ON comments TO %s', 'GRANT SELECT, UPDATE ON items TO %s')
    who = _user(human)
    _raw(human, "INSERT INTO comments (item, author, writer, body, created_at) "
                "VALUES (7, 'fleet.dispatch', 'fleet', '✅ merged', '2099-01-01T00:00:00Z')")
    item = fleet.get(7)
    assert [(c.body, c.author) for c in item.comments] == [(START, LEDGER_AUTHOR), ('✅ merged', who)]
    assert [m.kind for m in markers_of(item)] == ['start'], 'the human role wrote no marker'
    assert [h['author'] for h in human_markers(item)] == [who]
    writers = fleet._store.transaction(lambda tx: tx.all('SELECT writer FROM comments ORDER BY id'))
    assert [w for (w,) in writers] == ['fleet', who], 'the server records the writing role, not the client'
    # an edit by that role takes the fleet's marker away from the fleet: it is the editor's text now
    _raw(human, "UPDATE comments SET body = '✅ done' WHERE body = %s", (START,))
    item = fleet.get(7)
    fleet.close()
    assert markers_of(item) == []
    assert sorted(h['author'] for h in human_markers(item)) == [who, who]


def test_a_writer_the_fleet_names_keeps_its_comments_author(ledger):
    """The fleet's own role (the owner here) and a role named in ``marker_authors`` are the fleet."""
    fleet_dsn, make_role = ledger
    runner = make_role('GRANT SELECT, INSERT, UPDATE ON comments TO %s', 'GRANT SELECT, UPDATE ON items TO %s')
    name = _user(runner)
    fleet = LedgerBoard(dsn=fleet_dsn, marker_authors=[name])
    fleet.upsert_item(number=7, title='item 7', status='Ready')
    fleet.comment(7, 'an operator note', author='operator')
    _raw(runner, "INSERT INTO comments (item, author, body, created_at) "
                 "VALUES (7, 'fleet.dispatch', %s, '2099-01-01T00:00:00Z')", (START,))
    item = fleet.get(7)
    fleet.close()
    assert [(c.body, c.author) for c in item.comments] == [('an operator note', 'operator'), (START, LEDGER_AUTHOR)]
    assert [m.kind for m in markers_of(item)] == ['start']


def test_a_version_5_store_migrates_and_its_markers_stay_markers(ledger_url):
    old = LedgerBoard(create=True, migrations=[m for m in MIGRATIONS if m[0] < ROLES_VERSION], **ledger_url)
    old.upsert_item(number=7, title='item 7', status='Ready')
    old.post_marker(7, START)
    old.close()
    new = LedgerBoard(migrations=[m for m in MIGRATIONS if m[0] <= ROLES_VERSION], **ledger_url)
    assert new.migrated == [ROLES_VERSION] and new.schema_version() == ROLES_VERSION
    item = new.get(7)
    new.post_marker(7, '✅ done')
    kinds = [m.kind for m in markers_of(new.get(7))]
    writers = new._store.transaction(lambda tx: tx.all('SELECT writer FROM comments ORDER BY id'))
    new.close()
    assert [(c.body, c.author) for c in item.comments] == [(START, LEDGER_AUTHOR)]
    assert kinds == ['start', 'success']
    # SQLite records no writer (one trust); PostgreSQL the role of each write since version 6
    assert [w for (w,) in writers] == (['', ''] if 'path' in ledger_url else ['', 'fleet'])


def test_a_member_of_the_owner_role_is_the_fleet(ledger):
    """A fleet that logs its runners in as roles of their own, members of the owner, keeps every write (PostgreSQL
    lets a member of a table's owner pass its row policies, and the reader counts it among the fleet's roles)."""
    fleet_dsn, make_role = ledger
    member_dsn = make_role('GRANT %s TO %%s' % _user(fleet_dsn))
    member = LedgerBoard(dsn=member_dsn)
    try:
        member.upsert_item(number=7, title='item 7', status='Ready')
        member.post_marker(7, START, close=True)
        member.upsert_item(number=7, state='reopened', status='Ready')
    finally:
        member.close()
    item = _item(fleet_dsn, 7)
    assert (item.state, [e.kind for e in item.events]) == ('open', ['closed', 'reopened'])
    assert [(c.body, c.author) for c in item.comments] == [(START, LEDGER_AUTHOR)]
    assert [m.kind for m in markers_of(item)] == ['start']
