# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The any- successor's claim (``_handoff``), on SQLite and a real PostgreSQL (``ledger_url``).

* the pure parts: the claim id (zero entropy, D4), the dispatch tag, the winner's workspace name;
* two hosts, the second gets ``won: false, holder: <first>``; the same host
  re-claims idempotently; ``peek`` (check mode) writes nothing;
* fail CLOSED: an unreachable ledger raises ``ClaimUnproven`` and no row is written anywhere;
* a race that COUNTS: PROCS processes x SUCCESSORS successors, all released at once per successor
  by a barrier; exactly one winner each, every loser names it. A negative control (the same
  harness over a claim that takes over on conflict) must see duplicates, or the zeros mean nothing.
"""
from __future__ import annotations

import datetime as dt
import os
import sqlite3
import statistics
import time

import pytest

from racing import free_port, run_contenders

from ansible_collections.fleet.dispatch.plugins.module_utils._store import handoff as _handoff
from ansible_collections.fleet.dispatch.plugins.module_utils._store.handoff import (
    ClaimUnproven, HandoffError, HandoffStore, check_successor, claim_id, split_claim_id,
)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import claimed_name, dispatch_topic, is_dispatch_name
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import SqlStore

T0 = dt.datetime(2026, 11, 29, 9, 27, 0, tzinfo=dt.timezone.utc)
PROCS = 8
SUCCESSORS = 20
BARRIER_TIMEOUT = 120  # seconds; only bounds a hung child so the test fails instead of hanging


def open_store(ledger_url, **kw):
    """The ledger as a runner opens it; a SQLite test ledger is created first (the module never creates one)."""
    if 'path' in ledger_url and not os.path.exists(ledger_url['path']):
        kw.setdefault('create', True)
    return HandoffStore(**dict(ledger_url, **kw))


def rows(ledger_url):
    store = SqlStore(**ledger_url)
    try:
        return store.transaction(lambda tx: tx.all('SELECT id, holder, workspace, claimed_at FROM handoffs ORDER BY id'))
    finally:
        store.close()


# ------------------------------------------------------------------------------------------
# pure parts


def test_claim_id_is_deterministic_and_invertible():
    assert claim_id('s-1842', 'any-docs') == 's-1842/any-docs'
    assert claim_id('s-1842', 'any-docs') == claim_id('s-1842', 'any-docs'), 'zero entropy (D4)'
    assert claim_id('s-1842', 'any-docs') != claim_id('s-1843', 'any-docs') != claim_id('s-1842', 'any-doc')
    assert split_claim_id('a/b/any-x') == ('a/b', 'any-x'), 'a parent may hold a "/": the last one splits'
    with pytest.raises(HandoffError):
        split_claim_id('nothing-to-split')


@pytest.mark.parametrize('parent, successor', [
    ('', 'any-docs'), ('  ', 'any-docs'), (' s-1', 'any-docs'), ('s-1\n', 'any-docs'), (None, 'any-docs'),
    ('x' * 201, 'any-docs'), ('s-1', 'docs'), ('s-1', 'any-'), ('s-1', 'ANY-docs'), ('s-1', 'any-a/b'),
    ('s-1', 'any--x'), ('s-1', 'any-' + 'x' * 101), ('s-1', 'any-docs '), ('s-1', None),
])
def test_claim_id_refuses(parent, successor):
    with pytest.raises(HandoffError):
        claim_id(parent, successor)


def test_dispatch_names():
    assert is_dispatch_name('any-foo') and is_dispatch_name('any-Release_2.1')
    assert not is_dispatch_name('foo') and not is_dispatch_name('desk1-foo') and not is_dispatch_name('any-')
    assert not is_dispatch_name(None) and not is_dispatch_name('Any-foo')
    assert dispatch_topic('any-docs') == 'docs'
    with pytest.raises(HandoffError, match='not a dispatched handoff'):
        check_successor('desk1-docs')


def test_winner_name_drops_the_tag_and_takes_the_host():
    assert claimed_name('any-docs', 'desk-2') == 'desk-2-docs'
    assert claimed_name('any-docs', 'Desk 2.lan') == 'desk_2.lan-docs', "worktree_name's host rule"
    assert claimed_name('any-docs', 'desk-2') == claimed_name('any-docs', 'desk-2'), 'zero entropy (D4)'
    with pytest.raises(ValueError):
        claimed_name('docs', 'desk-2')
    with pytest.raises(ValueError):
        claimed_name('any-docs', '')


# ------------------------------------------------------------------------------------------
# the store, both backends


def test_seed_story_first_runner_takes_it(ledger_url):
    """Two desk machines see the brief; the first claims it, the other logs "already claimed by"."""
    with open_store(ledger_url) as first, open_store(ledger_url) as second:
        won = first.claim('s-1842', 'any-docs', 'desk-1', now=T0)
        lost = second.claim('s-1842', 'any-docs', 'desk-2', now=T0 + dt.timedelta(seconds=20))
    assert won == dict(won=True, holder='desk-1', id='s-1842/any-docs', claimed_at='2026-11-29T09:27:00.000000Z',
                       workspace='desk-1-docs-fe87daf4', inserted=True, why=won['why'])
    assert lost['won'] is False and lost['inserted'] is False
    assert lost['holder'] == 'desk-1' and lost['claimed_at'] == won['claimed_at'] and lost['workspace'] == 'desk-1-docs-fe87daf4'
    assert lost['why'].startswith('already claimed by desk-1')
    assert rows(ledger_url) == [('s-1842/any-docs', 'desk-1', 'desk-1-docs-fe87daf4', '2026-11-29T09:27:00.000000Z')]


def test_same_host_reclaim_is_idempotent(ledger_url):
    with open_store(ledger_url) as store:
        first = store.claim('s-7', 'any-docs', 'desk-1', now=T0)
        again = store.claim('s-7', 'any-docs', 'desk-1', now=T0 + dt.timedelta(hours=1))
        other = store.claim('s-7', 'any-tests', 'desk-2', now=T0)
    assert first['inserted'] and again['won'] and not again['inserted']
    assert again['claimed_at'] == first['claimed_at'], 'the original claim stands; nothing rewritten'
    assert 'already claimed by this host' in again['why']
    assert other['won'], 'another successor of the same parent is another claim'
    assert len(rows(ledger_url)) == 2


def test_peek_writes_nothing(ledger_url):
    """Check mode: a store opened without migrating reads a ledger that has no handoffs table yet."""
    if 'path' in ledger_url:
        SqlStore(path=ledger_url['path'], create=True).close()
    with HandoffStore(migrate=False, **ledger_url) as store:
        free = store.peek('s-1', 'any-docs', 'desk-1', now=T0)
        assert free['won'] and free['inserted'] and free['holder'] == 'desk-1' and 'would claim' in free['why']
        assert SqlStore(**ledger_url).schema_versions('handoff') == [], 'check mode created no table'
    with open_store(ledger_url) as store:
        store.claim('s-1', 'any-docs', 'desk-1', now=T0)
        assert store.peek('s-1', 'any-docs', 'desk-2')['won'] is False
        assert store.peek('s-1', 'any-docs', 'desk-1')['won'] is True
        assert store.get('s-1', 'any-docs')['holder'] == 'desk-1' and store.get('s-1', 'any-other') is None
    assert len(rows(ledger_url)) == 1


def test_own_schema_component(ledger_url):
    """The claim table is its own component: the board's schema version does not move."""
    with open_store(ledger_url) as store:
        assert store.migrated == [1]
    with open_store(ledger_url) as store:
        assert store.migrated == []
    sql = SqlStore(**ledger_url)
    try:
        assert sql.schema_versions('handoff') == [1] and sql.schema_versions('board') == []
    finally:
        sql.close()


def test_sqlite_fallback_without_returning(tmp_path):
    """SQLite < 3.35 has no RETURNING: the same insert, then changes() in the same transaction."""
    print('\nsqlite %s: RETURNING %s' % (sqlite3.sqlite_version, 'available' if _handoff.SQLITE_HAS_RETURNING else 'ABSENT'))
    url = {'path': str(tmp_path / 'old.sqlite3')}
    with open_store(url) as store:
        store.returning = False
        assert store.claim('s-1', 'any-docs', 'desk-1', now=T0)['inserted']
        lost = store.claim('s-1', 'any-docs', 'desk-2', now=T0)
        again = store.claim('s-1', 'any-docs', 'desk-1', now=T0)
    assert (lost['won'], lost['holder'], again['won'], again['inserted']) == (False, 'desk-1', True, False)


def test_newer_schema_is_refused_even_in_check_mode(ledger_url):
    with open_store(ledger_url):
        pass
    sql = SqlStore(**ledger_url)
    sql.transaction(lambda tx: tx.run("INSERT INTO schema_version (component, version, name, applied_at) "
                                      "VALUES ('handoff', 99, 'future', 'x')"), write=True)
    sql.close()
    with pytest.raises(ClaimUnproven, match='upgrade'):
        open_store(ledger_url)
    with HandoffStore(migrate=False, **ledger_url) as store:
        with pytest.raises(ClaimUnproven, match='upgrade'):
            store.peek('s-1', 'any-docs', 'desk-1')


# ------------------------------------------------------------------------------------------
# fail closed


def test_unreachable_postgres_fails_closed():
    dsn = 'postgresql://fleet:s3cret-pw@127.0.0.1:%d/ledger' % free_port()
    with pytest.raises(ClaimUnproven) as info:
        HandoffStore(dsn=dsn, timeout=2)
    assert 's3cret-pw' not in str(info.value) and '********' in str(info.value)


@pytest.mark.parametrize('where', ['missing-dir/ledger.sqlite3', 'ledger.sqlite3'])
def test_missing_sqlite_ledger_fails_closed_and_creates_nothing(tmp_path, where):
    """A missing directory, or a missing file (a typo'd path): never a fresh private ledger (D20)."""
    with pytest.raises(ClaimUnproven, match='does not exist'):
        HandoffStore(path=str(tmp_path / where))
    assert list(tmp_path.iterdir()) == [], 'nothing written anywhere'


def test_unwritable_ledger_fails_closed(ledger_url):
    """A ledger that opens but refuses the write (the table is gone): ClaimUnproven, not a guess."""
    with open_store(ledger_url) as store:
        store._store.transaction(lambda tx: tx.run('DROP TABLE handoffs'), write=True)
        with pytest.raises(ClaimUnproven):
            store.claim('s-1', 'any-docs', 'desk-1', now=T0)


# ------------------------------------------------------------------------------------------
# the race


class TakeoverStore(HandoffStore):
    """Negative control: ON CONFLICT DO UPDATE -- every claimer gets a row back, so all "win"."""

    def _insert(self, tx, params):
        return tx.one(_handoff._INSERT.replace('DO NOTHING', 'DO UPDATE SET holder = excluded.holder') + ' RETURNING id',
                      params) is not None


def _contender(url, idx, successors, barrier, results, control):
    """One runner process (spawned interpreter): claims every successor at the barrier's signal."""
    host = 'desk-%d' % idx
    store = (TakeoverStore if control else HandoffStore)(**url)
    try:
        for num in range(successors):
            barrier.wait(BARRIER_TIMEOUT)
            start = time.perf_counter()
            try:
                got = store.claim('s-race', 'any-t%d' % num, host, now=T0)
                results.put((num, host, got['won'], got['inserted'], got['holder'], time.perf_counter() - start, ''))
            except Exception as exc:  # reported, so the parent fails with the reason
                results.put((num, host, False, False, '', time.perf_counter() - start, repr(exc)))
    finally:
        store.close()


def _race(url, procs=PROCS, successors=SUCCESSORS, control=False):
    with open_store(url):
        pass  # the ledger and its table exist before the runners start (as in a fleet)
    got, codes = run_contenders(_contender, lambda i, barrier, results: (url, i, successors, barrier, results, control),
                                procs, procs * successors, BARRIER_TIMEOUT * 2)
    assert len(got) == procs * successors, 'every claim reported (%d of %d); exit codes %s' % (
        len(got), procs * successors, codes)
    assert not [g for g in got if g[6]], [g[6] for g in got if g[6]][:3]
    return got


def _winners(got, successors=SUCCESSORS):
    winners = dict((n, []) for n in range(successors))
    for num, host, won, inserted, holder, took, err in got:
        if won:
            winners[num].append(host)
    return winners


def test_race_exactly_one_winner_per_successor(ledger_url):
    got = _race(ledger_url)
    winners = _winners(got)
    took = sorted(g[5] * 1000 for g in got)
    print('\n%s race: %d processes x %d successors = %d claims; winners per successor %s; claim latency ms: '
          'median %.2f, p90 %.2f, max %.2f' % (
              'sqlite' if 'path' in ledger_url else 'postgres', PROCS, SUCCESSORS, len(got),
              sorted(set(len(w) for w in winners.values())), statistics.median(took), took[int(len(took) * 0.9) - 1], took[-1]))
    assert all(len(w) == 1 for w in winners.values()), winners
    assert sum(1 for g in got if g[3]) == SUCCESSORS, 'exactly one insert per successor'
    for num, host, won, inserted, holder, took_s, err in got:
        assert holder == winners[num][0], 'every claimer, winner or loser, names the one holder'
    stored = rows(ledger_url)
    assert len(stored) == SUCCESSORS
    assert all(row[1] == winners[int(row[0].rsplit('-t', 1)[1])][0] for row in stored), 'the ledger agrees'


def test_race_negative_control_takeover_duplicates(tmp_path):
    """The same harness over a claim that takes over on conflict MUST count duplicate winners."""
    got = _race({'path': str(tmp_path / 'ctl.sqlite3')}, procs=4, successors=5, control=True)
    duplicates = sum(len(w) - 1 for w in _winners(got, 5).values())
    print('\ntakeover control: %d duplicate winners over 5 successors' % duplicates)
    assert duplicates > 0
