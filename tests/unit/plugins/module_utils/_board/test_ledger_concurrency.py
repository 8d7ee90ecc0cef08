# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several processes writing one ledger at once, on SQLite and PostgreSQL.

Real processes (multiprocessing, spawn: nothing inherited but the arguments), real stores.
After the storm the rows are counted: no lost write, no duplicate number, no corruption, and
no "database is locked" escaping to a caller. The per-write waits are printed (run with
``-s`` to see them): they are the reading behind ``_sql.DEFAULT_TIMEOUT``. Nothing here
asserts a wall-clock figure.
"""
from __future__ import annotations

import multiprocessing
import time
import traceback

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import MIGRATIONS

PROCESSES = 4   # twice the cores of the CI machine (2), so writers really contend
WRITES = 60     # per process; each write is one transaction
SHARED_COMMENTS, SHARED_TOGGLE = 1, 2
POOL_SIZE = PROCESSES + 2


def storm(url, proc, writes, start):
    """One writer process: comments on a shared item, new items, state toggles (own and shared)."""
    out = {'proc': proc, 'errors': [], 'waits': [], 'created': [], 'shared_changes': 0, 'own_toggles': 0}
    try:
        board = LedgerBoard(timeout=60, **url)
        own = board.upsert_item(title='own %d' % proc)['number']
    except Exception:
        out['errors'].append(traceback.format_exc())
        return out
    out['own'] = own
    start.wait()
    for i in range(writes):
        began = time.monotonic()
        try:
            step = i % 4
            if step == 0:
                board.comment(SHARED_COMMENTS, 'p%d-%d' % (proc, i), author='proc-%d' % proc)
            elif step == 1:
                out['created'].append(board.upsert_item(title='p%d-%d' % (proc, i), blocked_by=[SHARED_COMMENTS])['number'])
            elif step == 2:
                state = 'closed' if (i // 4 + proc) % 2 == 0 else 'open'
                out['shared_changes'] += int(board.set_state(SHARED_TOGGLE, state, actor='proc-%d' % proc))
            else:
                state = 'closed' if (i // 4) % 2 == 0 else 'open'
                if board.set_state(own, state):
                    out['own_toggles'] += 1
                board.post_marker(SHARED_COMMENTS, 'marker p%d-%d' % (proc, i))
        except Exception:
            out['errors'].append(traceback.format_exc())
        out['waits'].append(time.monotonic() - began)
    board.close()
    return out


def first_open(url, start):
    start.wait()
    try:
        board = LedgerBoard(create=True, timeout=60, **url)
        migrated = board.migrated
        board.close()
        return ('ok', migrated)
    except Exception:
        return ('error', traceback.format_exc())


def _task(job):
    """Runs in a pool process: wait at the barrier with the others, then do the job."""
    name, args, start = job
    if name == 'storm':
        return storm(*args, start=start)
    return first_open(*args, start=start)


@pytest.fixture(scope='module')
def pool():
    """One spawn pool for the module: processes start once (spawn costs ~1 s each here), and each
    task is one writer. ``POOL_SIZE`` >= the tasks of any test, so every task of a round gets
    its own process and the barrier can be met."""
    ctx = multiprocessing.get_context('spawn')
    manager = ctx.Manager()
    workers = ctx.Pool(POOL_SIZE)
    try:
        yield manager, workers
    finally:
        workers.close()
        workers.join()
        manager.shutdown()


def _run(pool, name, args, count):
    manager, workers = pool
    start = manager.Barrier(count, timeout=120)
    return workers.map(_task, [(name, args(n), start) for n in range(count)], chunksize=1)


def _figures(label, waits, seconds):
    waits = sorted(waits)

    def pick(q):
        return waits[min(len(waits) - 1, int(q * len(waits)))] * 1000
    print('\n[ledger concurrency %s] %d writes by %d processes in %.2f s; per-write ms p50 %.1f p90 %.1f p99 %.1f max %.1f'
          % (label, len(waits), PROCESSES, seconds, pick(0.5), pick(0.9), pick(0.99), waits[-1] * 1000))


def test_concurrent_writers_lose_nothing(pool, ledger_url):
    setup = LedgerBoard(create=True, **ledger_url)
    setup.upsert_item(title='shared comments')
    setup.upsert_item(title='shared toggle')
    setup.close()

    began = time.monotonic()
    outs = _run(pool, 'storm', lambda n: (ledger_url, n, WRITES), PROCESSES)
    seconds = time.monotonic() - began
    errors = [e for o in outs for e in o['errors']]
    assert errors == []  # no "database is locked", no deadlock, nothing escaped

    board = LedgerBoard(**ledger_url)
    items = {i.number: i for i in board.read().items}
    per = WRITES // 4
    # Every comment and marker landed, once.
    bodies = sorted(c.body for c in items[SHARED_COMMENTS].comments)
    expected = sorted(['p%d-%d' % (p, i) for p in range(PROCESSES) for i in range(0, WRITES, 4)]
                      + ['marker p%d-%d' % (p, i) for p in range(PROCESSES) for i in range(3, WRITES, 4)])
    assert bodies == expected
    assert len(set(c.id for c in items[SHARED_COMMENTS].comments)) == len(expected)
    # Every new item got its own number, and nothing else appeared.
    created = [n for o in outs for n in o['created']]
    assert len(created) == PROCESSES * per == len(set(created))
    owns = [o['own'] for o in outs]
    assert sorted(items) == sorted([SHARED_COMMENTS, SHARED_TOGGLE] + owns + created)
    assert all(items[n].blockers[0].number == SHARED_COMMENTS for n in created)
    # Each state change that reported "changed" left exactly one event, and the shared item's
    # events alternate: two writers never both "closed" it.
    toggle_events = items[SHARED_TOGGLE].events
    assert len(toggle_events) == sum(o['shared_changes'] for o in outs)
    kinds = [e.kind for e in toggle_events]
    assert all(a != b for a, b in zip(kinds, kinds[1:]))
    for o in outs:
        assert len(items[o['own']].events) == o['own_toggles'] == per
    if 'path' in ledger_url:
        check = board._store.transaction(lambda tx: tx.one('PRAGMA integrity_check'))[0]
        assert check == 'ok'
    board.close()
    _figures('sqlite' if 'path' in ledger_url else 'postgres', [w for o in outs for w in o['waits']], seconds)


def test_concurrent_first_open_migrates_exactly_once(pool, ledger_url):
    """Every process opens a store nobody initialised, at once (SQLite: the file does not even
    exist yet, so they also race to create it and switch it to WAL). Three rounds."""
    count = POOL_SIZE
    for r in range(3):
        url = dict(ledger_url)
        if 'path' in url:
            url['path'] = '%s.%d' % (url['path'], r)
        elif r:
            with LedgerBoard(**url) as board:  # empty the database again
                board._store.transaction(lambda tx: [tx.run('DROP TABLE %s CASCADE' % t) for t in (
                    'reports', 'artifact_checks', 'artifact_reviews',
                    'artifact_closes', 'artifacts', 'dependencies', 'events', 'comments', 'items', 'schema_version')],
                    write=True)
        outs = _run(pool, 'first_open', lambda n: (url,), count)
        assert [o for o in outs if o[0] != 'ok'] == []
        migrated = sorted((o[1] for o in outs), key=len)
        assert migrated == [[]] * (count - 1) + [[m[0] for m in MIGRATIONS]]
        with LedgerBoard(**url) as board:
            recorded = board._store.transaction(lambda tx: tx.all("SELECT version FROM schema_version WHERE component = 'board' ORDER BY version"))
            assert [row[0] for row in recorded] == [m[0] for m in MIGRATIONS]
            assert board.read().items == []
