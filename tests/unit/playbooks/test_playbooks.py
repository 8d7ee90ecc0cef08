# -*- coding: utf-8 -*-
"""The playbooks as an operator runs them: `make demo`, status, sweep and hand dispatch.

Plan mode, and the parts of apply mode that decide before anything reaches a worker (an unreadable
queue, a lease another dispatcher holds). Launching on real hosts is in
tests/integration/test_dispatch_path.py.

These run the real ``ansible-playbook`` against the working tree (tests/conftest.py exposes it
as the collection), so they exercise the shipped role and playbooks, not a copy (D15).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import board_identity, open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import board_id, lease_name
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker

REPO = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent


def playbook(name, tmp_path, board, *extra, inventory=None):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / 'state'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    for var in ('ANSIBLE_CALLBACK_RESULT_FORMAT', 'ANSIBLE_STDOUT_CALLBACK', 'ANSIBLE_CONFIG'):
        env.pop(var, None)     # the default callback, as a new user has it
    argv = [str(BIN / 'ansible-playbook'), '-i', str(inventory or REPO / 'inventory.example'), str(REPO / 'playbooks' / name),
            '-e', json.dumps({'dispatch_board': board})] + list(extra)
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=300)


def state_file(state, name):
    """The one board's ``name`` under ``state``: the dispatch role keeps one subdirectory per board (its id)."""
    found = list((state / 'fleet-dispatch').glob('*/' + name))
    assert len(found) == 1, found
    return found[0]


@pytest.fixture
def board(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='free', status='Ready')
        b.upsert_item(number=2, title='blocked', status='Ready', blocked_by=[1])
        b.upsert_item(number=3, title='running', status='Ready')
        b.post_marker(3, format_marker('start', {'unit': 'task-3', 'host': 'w1', 'master': 'agent1'}))
        b.upsert_item(number=4, title='tombstone; rm -rf / $(reboot) `id`', status='Ready')
        b.post_marker(4, format_marker('start', {'unit': 'task-4'}))
        b.post_marker(4, format_marker('success', {'unit': 'task-4'}))
    return spec


def test_sweep_plans_every_candidate_and_explains_the_rest(tmp_path, board):
    res = playbook('sweep.yml', tmp_path, board)
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert [(a['number'], a['worker'], a['master']) for a in plan['assignments']] == [(1, 'localhost', 'agent1')]
    assert sorted(plan['skipped']) == [2, 3, 4]
    # the board crossed the module boundary once: every item is in the read's table, plan.json names it and counts
    assert 'items' not in plan and plan['counts'] == {'eligible': 1, 'blocked': 1, 'running': 1, 'tombstone': 1}
    table = json.loads(pathlib.Path(plan['table']).read_text())
    assert pathlib.Path(plan['table']).parent == state_file(tmp_path / 'state', 'plan.json').parent
    assert sorted((i['number'], i['reason']) for i in table['items']) == [
        (1, 'eligible'), (2, 'blocked'), (3, 'running'), (4, 'tombstone')]
    assert 'blocked by #1' in res.stdout and 'tombstone' in res.stdout
    # a plan sweep reaches no apply-only step: no task error, not even an ignored one
    assert '[ERROR]' not in res.stdout + res.stderr and 'ignored=0' in res.stdout


@pytest.mark.parametrize('number,reason,detail', [
    (2, 'blocked by #1', 'blocked by #1'),
    (3, 'running', 'running: task-3 on w1/agent1 since '),
    (4, 'tombstone', 'tombstone'),
    (99, 'it is not on the board', 'it is not on the board'),
])
def test_hand_dispatch_of_an_ineligible_item_is_refused_and_fails(tmp_path, board, number, reason, detail):
    """D15: the hand path runs the sweeper's own tasks, so it meets the same guards; D6: nothing is written.
    The play fails with the reason, so a script can tell a refusal from a launch."""
    with open_board(board) as b:
        before = [len(b.get(n).comments) for n in (1, 2, 3, 4)]
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=%d' % number)
    assert res.returncode != 0, res.stdout + res.stderr
    assert '#%d refused: %s' % (number, reason) in res.stderr
    assert '"msg": "#%d refused: %s' % (number, detail) in res.stdout
    assert 'probe failed' not in res.stderr, 'masters skipped on purpose are not blind'
    assert 'launched' not in res.stdout.split('PLAY RECAP')[1]
    plan = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert plan['assignments'] == []
    with open_board(board) as b:
        assert [len(b.get(n).comments) for n in (1, 2, 3, 4)] == before


def test_hand_dispatch_of_an_eligible_item_is_planned(tmp_path, board):
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_mode=plan')
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert [a['number'] for a in plan['assignments']] == [1]
    assert 'refused' not in res.stderr
    assert '"msg": "#1 would launch as task-1 on localhost/agent1"' in res.stdout


def test_tables_print_one_line_per_row_in_the_default_callback(tmp_path, board):
    """A new user has no callback settings: the status table must still read as a table."""
    res = playbook('status.yml', tmp_path, board)
    assert res.returncode == 0, res.stdout + res.stderr
    shown = res.stdout.split('Show the board')[1].split('TASK [')[0]
    rows = [line.strip() for line in shown.splitlines() if line.strip().startswith('"#')]
    assert [r.split()[0] for r in rows] == ['"#1', '"#2', '"#3', '"#4']
    assert '\\n' not in shown
    planned = playbook('sweep.yml', tmp_path, board)
    shown = planned.stdout.split('Show the plan')[1].split('TASK [')[0]
    rows = [line.strip() for line in shown.splitlines() if line.strip().startswith('"#')]
    assert rows[0].split()[:3] == ['"#1', 'launch', 'localhost/agent1'] and '\\n' not in shown


@pytest.mark.parametrize('issue', ['', 'abc', '0', '1;id'])
def test_hand_dispatch_needs_a_number(tmp_path, board, issue):
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=%s' % issue)
    assert res.returncode != 0
    assert 'name the item to dispatch' in res.stdout


@pytest.mark.main_core
def test_make_demo_shows_every_reason_code(tmp_path):
    """The README's first command: a demo board with every reason code, its status table and plan, page and
    metrics. `make test` runs `make demo`'s plan case only here (the bed case: tests/integration/test_demo.py)."""
    # the plan case (the test-bed case, what root with podman gets, is tests/integration/test_demo.py)
    env = dict(os.environ, FLEET_DEMO_DIR=str(tmp_path / 'demo'), FLEET_VENV=str(BIN.parent), FLEET_DEMO_CASE='plan')
    res = subprocess.run([str(REPO / 'demo.sh')], env=env, capture_output=True, text=True, check=False, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    status = json.loads(state_file(tmp_path / 'demo' / 'state', 'status.json').read_text())
    reasons = set(i['reason'] for i in status['items'])
    assert reasons == {'eligible', 'not_ready', 'closed', 'blocked', 'running', 'retry_wait', 'done', 'tombstone', 'parked'}
    items = dict((i['number'], i) for i in status['items'])
    assert items[10]['reason'] == 'eligible', 'a reopen outranks the success before it'
    assert items[12]['attempts'] == 1, 'capacity deaths spend no attempt'
    assert items[13]['reason'] == 'eligible', 'left open stays dispatchable'
    assert items[5]['reason'] == 'eligible', 'a closed blocker does not block'
    plan = json.loads(state_file(tmp_path / 'demo' / 'state', 'plan.json').read_text())
    assert plan['readable'] is True and sorted(a['number'] for a in plan['assignments']) == [1, 5, 10, 12, 13]
    for name in ('status.html', 'fleet-dispatch.prom'):   # the status page and the metrics (docs/operator.md)
        assert state_file(tmp_path / 'demo' / 'state', name).stat().st_size > 0, name
    assert 'launch' in res.stdout and 'parked after 3 attempts' in res.stdout


def test_apply_mode_fails_on_an_unreadable_queue(tmp_path):
    """D5: the one guard that fails closed -- an unreadable queue cannot produce a decision, in apply mode."""
    broken = tmp_path / 'not-a-ledger.sqlite3'
    broken.write_bytes(b'this is not an SQLite database' * 100)
    spec = {'kind': 'ledger', 'path': str(broken)}
    res = playbook('dispatch.yml', tmp_path, spec, '-e', 'issue=1')
    assert res.returncode != 0
    planned = playbook('dispatch.yml', tmp_path, spec, '-e', 'issue=1', '-e', 'dispatch_mode=plan')
    assert planned.returncode == 0, 'plan mode reports an unreadable queue; it cannot double-dispatch'
    assert '#1 refused: the board could not be read' in planned.stdout


def test_apply_refuses_an_item_whose_lease_another_dispatcher_holds(tmp_path, board):
    """D4: the lease is held from the probe to the launch; a second dispatcher is refused before it probes,
    says so on stderr, writes nothing (D6), and leaves the holder's lease alone."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore
    store = SqlLeaseStore(path=str(tmp_path / 'leases'))
    name = lease_name('task-1', board_id(*board_identity(board)))     # the unit name in the board's namespace
    held = store.acquire(name, 'sweep-on-the-timer', 600)
    assert held.acquired
    before = [len(open_board(board).get(n).comments) for n in (1, 2, 3, 4)]
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_lease_path=%s' % (tmp_path / 'leases'))
    assert res.returncode != 0, res.stdout + res.stderr
    assert '#1 refused (lease): another dispatcher holds its lease' in res.stderr and 'sweep-on-the-timer' in res.stderr
    assert '"msg": "#1 refused (lease): another dispatcher holds its lease' in res.stdout
    record = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert record['launched'] == [] and record['batches'] == [] and record['duplicates'] == []
    # the refused dispatcher probes nothing: the worker's probe call (imported, issue 13) is skipped on every host
    assert record['probe_calls'] == 0 and record['launch_calls'] == 0
    probe_task = res.stdout.split('Probe every master of this worker in one call', 1)[1].split('TASK [', 1)[0]
    assert 'skipping: [' in probe_task and 'ok: [' not in probe_task and 'changed: [' not in probe_task
    after = store.get(name)
    assert after.holder == 'sweep-on-the-timer' and after.token == held.token
    with open_board(board) as b:
        assert [len(b.get(n).comments) for n in (1, 2, 3, 4)] == before


@pytest.mark.parametrize('name', sorted(p.name for p in (REPO / 'playbooks').glob('*.yml')))
def test_every_playbook_passes_syntax_check(name):
    """Every shipped playbook parses and resolves its roles and modules by FQCN (provision.yml, whose
    real run is the integration suite's worker provisioning, included)."""
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false')
    proc = subprocess.run([str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventory.example'), '--syntax-check',
                           str(REPO / 'playbooks' / name)], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_sqlite_ledger_with_a_remote_worker_is_refused_before_anything_is_launched(tmp_path, board):
    """The runner on another machine cannot open the controller's SQLite file: every launch would fail
    to start, silently, cycle after cycle. Refused before the lease, with the fix; nothing written."""
    inventory = tmp_path / 'inventory.yml'
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    workers = {'localhost': local, 'w2': {'ansible_host': '192.0.2.10'}}
    inventory.write_text(json.dumps({'workers': {'hosts': workers, 'vars': {'worker_masters': [{'name': 'agent1'}]}}}))
    before = [len(open_board(board).get(n).comments) for n in (1, 2, 3, 4)]
    leases = tmp_path / 'leases'
    res = playbook('sweep.yml', tmp_path, board, '-e', 'dispatch_mode=apply', '-e', 'dispatch_lease_path=%s' % leases,
                   inventory=inventory)
    assert res.returncode != 0
    assert 'a SQLite ledger serves only localhost workers: use PostgreSQL (roles/ledger) for remote workers' in res.stdout
    assert 'the runner on w2 could not open it' in res.stdout and 'localhost,' not in res.stdout
    assert not leases.exists(), 'refused before any lease'
    assert '192.0.2.10' not in res.stdout.split('Refuse a SQLite ledger')[1], 'no worker was contacted'
    with open_board(board) as b:
        assert [len(b.get(n).comments) for n in (1, 2, 3, 4)] == before
    # the same inventory with only the controller as a worker is not refused by this rule
    del workers['w2']
    inventory.write_text(json.dumps({'workers': {'hosts': workers, 'vars': {'worker_masters': [{'name': 'agent1'}]}}}))
    res = playbook('sweep.yml', tmp_path, board, '-e', 'dispatch_mode=apply', '-e', 'dispatch_lease_path=%s' % leases,
                   '--check', inventory=inventory)
    assert 'a SQLite ledger serves only localhost workers' not in res.stdout


def test_a_degraded_lease_is_warned_once_per_item(tmp_path, board):
    """One warning per fact: the mutex lookup says the store failed open (with the fix); the guard that
    admits the degraded lease does not say it a second time."""
    blocker = tmp_path / 'not-a-directory'
    blocker.write_text('a file where the lease directory would go')
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_lease_path=%s' % (blocker / 'leases'))
    said = (res.stdout + res.stderr).replace('\n', ' ')
    assert said.count('proceeding WITHOUT the lock on task-1') == 1, res.stdout + res.stderr
    assert 'no lock covers' not in said


def test_two_boards_on_one_controller_share_no_lock_and_no_file(tmp_path, board):
    """A namespace per board: the same item number on two boards has two leases (a holder on one board
    does not refuse the other) and each board writes its own plan.json and status.json."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore
    other = {'kind': 'ledger', 'path': str(tmp_path / 'other.sqlite3')}
    with open_board(dict(other, create=True)) as b:
        b.upsert_item(number=1, title='the other board\'s #1', status='Ready')
    leases = tmp_path / 'leases'
    store = SqlLeaseStore(path=str(leases))
    held = store.acquire(lease_name('task-1', board_id(*board_identity(board))), 'sweep-of-board-a', 600)
    assert held.acquired
    res = playbook('dispatch.yml', tmp_path, other, '-e', 'issue=1', '-e', 'dispatch_lease_path=%s' % leases)
    assert 'another dispatcher holds its lease' not in res.stdout + res.stderr, 'board B is not refused by board A\'s lease'
    for spec in (board, other):
        assert playbook('status.yml', tmp_path, spec).returncode == 0
    state = tmp_path / 'state' / 'fleet-dispatch'
    ids = sorted(board_id(*board_identity(spec)) for spec in (board, other))
    assert sorted(p.parent.name for p in state.glob('*/status.json')) == ids
    assert [p.parent.name for p in state.glob('*/plan.json')] == [board_id(*board_identity(other))]
    id_a, id_b = board_id(*board_identity(board)), board_id(*board_identity(other))
    assert id_a != id_b
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import SqlStore
    sql = SqlStore(path=str(leases))
    try:
        names = [r[0] for r in sql.transaction(lambda tx: tx.all('SELECT name FROM leases ORDER BY name'))]
    finally:
        sql.close()
    assert names == sorted(['task-1@%s' % id_a, 'task-1@%s' % id_b]), 'one lease per board for the same unit name'
    assert store.get('task-1@' + id_a).holder == 'sweep-of-board-a', 'board B left board A\'s lease alone'


def test_the_default_lease_store_of_a_ledger_board_is_the_ledger_file(tmp_path, board):
    """No dispatch_lease_path: the lease lives in the ledger itself (its own migration component), so a
    lease another dispatcher of this ledger holds refuses this one; nothing is written anywhere else."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore
    with SqlLeaseStore(path=board['path']) as store:
        name = lease_name('task-1', board_id(*board_identity(board)))
        assert store.acquire(name, 'sweep-on-the-timer', 600).acquired
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1')
    assert res.returncode != 0, res.stdout + res.stderr
    assert '#1 refused (lease): another dispatcher holds its lease' in res.stderr and 'sweep-on-the-timer' in res.stderr
    assert not list((tmp_path / 'state').rglob('leases.sqlite3')), 'no second lease store beside the ledger'
    status = playbook('status.yml', tmp_path, board)
    assert status.returncode == 0, status.stdout + status.stderr
    record = json.loads(state_file(tmp_path / 'state', 'status.json').read_text())
    assert record['lease_store']['backend'] == 'sqlite' and record['lease_store']['where'] == board['path']
    assert record['lease_store']['shared'] is False
    assert 'lease store: sqlite at %s, single-controller only' % board['path'] in status.stdout
    cycle = json.loads(state_file(tmp_path / 'state', 'last_cycle.json').read_text())
    assert cycle['lease_store']['where'] == board['path'], 'the cycle record names the store that dispatcher used'
    assert "last cycle's lease store: sqlite at %s" % board['path'] in status.stdout
    assert 'NOT the store this dispatcher uses' not in status.stdout
    other = playbook('status.yml', tmp_path, board, '-e', 'dispatch_lease_path=%s' % (tmp_path / 'elsewhere.sqlite3'))
    assert other.returncode == 0, other.stdout + other.stderr
    assert 'NOT the store this dispatcher uses' in other.stdout, 'status says when two dispatchers use two stores'


def test_status_names_a_postgresql_lease_store_as_shared_without_its_password(tmp_path, board):
    """Issue 16: status says which lease store the dispatcher uses and whether it is shared; a DSN is shown redacted."""
    dsn = 'postgresql://fleet:Pw-7status@db.example:5432/ledger'
    res = playbook('status.yml', tmp_path, board, '-e', 'dispatch_lease_backend=postgres', '-e', 'dispatch_lease_dsn=%s' % dsn)
    assert res.returncode == 0, res.stdout + res.stderr
    record = json.loads(state_file(tmp_path / 'state', 'status.json').read_text())
    assert record['lease_store'] == dict(record['lease_store'], backend='postgres', shared=True,
                                         where='postgresql://fleet:********@db.example:5432/ledger')
    assert 'lease store: postgres at postgresql://fleet:********@db.example:5432/ledger, shared' in res.stdout
    assert 'Pw-7status' not in res.stdout + res.stderr + json.dumps(record)
    assert [s['what'] for s in record['single_controller']] == ['board'], 'the lease is no longer single-controller state'


def test_a_postgresql_ledger_board_takes_its_leases_in_its_own_database(tmp_path, pg_dsn):
    """A PostgreSQL ledger board's default lease store is that database: a lease another controller's
    dispatcher holds there refuses this one's hand dispatch with no lease setting on either (D4), and
    status names the store shared."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore
    spec = {'kind': 'ledger', 'dsn': pg_dsn}
    with open_board(spec) as b:
        b.upsert_item(number=1, title='free', status='Ready')
    ident = board_id(*board_identity(spec))
    with SqlLeaseStore(dsn=pg_dsn) as store:            # what the other controller's timer holds
        assert store.acquire(lease_name('task-1', ident), 'sweep-on-another-controller', 600).acquired
    try:
        res = playbook('dispatch.yml', tmp_path, spec, '-e', 'issue=1')
        assert res.returncode != 0, res.stdout + res.stderr
        assert '#1 refused (lease): another dispatcher holds its lease' in res.stderr
        assert 'sweep-on-another-controller' in res.stderr
    finally:
        with SqlLeaseStore(dsn=pg_dsn) as store:
            store.release(lease_name('task-1', ident), 'sweep-on-another-controller')
    status = playbook('status.yml', tmp_path, spec)
    assert status.returncode == 0, status.stdout + status.stderr
    record = json.loads((tmp_path / 'state' / 'fleet-dispatch' / ident / 'status.json').read_text())
    assert record['lease_store'] == dict(record['lease_store'], backend='postgres', shared=True)
    assert [s['what'] for s in record['single_controller']] == []


def test_an_explicit_sqlite_lease_store_off_a_sqlite_ledger_is_in_the_board_state_dir(tmp_path, pg_dsn):
    """dispatch_lease_backend=sqlite on a board that is not a SQLite ledger (here a PostgreSQL ledger)
    keeps the lease in leases.sqlite3 of the board's state directory, which the role creates (a fresh
    non-root sweeper has nothing there yet); status names it single-controller only."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore
    spec = {'kind': 'ledger', 'dsn': pg_dsn}
    with open_board(spec) as b:
        b.upsert_item(number=1, title='free', status='Ready')
    ident = board_id(*board_identity(spec))
    where = tmp_path / 'state' / 'fleet-dispatch' / ident / 'leases.sqlite3'
    with SqlLeaseStore(path=str(where)) as store:      # what the timer's dispatcher of this controller holds
        assert store.acquire(lease_name('task-1', ident), 'sweep-on-the-timer', 600).acquired
    res = playbook('dispatch.yml', tmp_path, spec, '-e', 'issue=1', '-e', 'dispatch_lease_backend=sqlite')
    assert res.returncode != 0, res.stdout + res.stderr
    assert '#1 refused (lease): another dispatcher holds its lease' in res.stderr and 'sweep-on-the-timer' in res.stderr
    status = playbook('status.yml', tmp_path, spec, '-e', 'dispatch_lease_backend=sqlite')
    assert status.returncode == 0, status.stdout + status.stderr
    record = json.loads((where.parent / 'status.json').read_text())
    assert record['lease_store'] == dict(record['lease_store'], backend='sqlite', where=str(where), shared=False)
    assert [s['what'] for s in record['single_controller']] == ['lease']


def test_a_webhook_delivery_dispatches_once_and_its_replay_is_refused(tmp_path, board):
    """A signed event sent again (its signature covers only the body) finds its delivery's mark and dispatches
    nothing: the board is not read again and no plan is written; another delivery of the same item goes on."""
    first = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_mode=plan', '-e', 'delivery=72d3162e-cc78')
    assert first.returncode == 0, first.stdout + first.stderr
    plan = state_file(tmp_path / 'state', 'plan.json')
    plan.unlink()
    replay = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_mode=plan', '-e', 'delivery=72d3162e-cc78')
    assert replay.returncode != 0 and 'webhook delivery 72d3162e-cc78 was dispatched before' in replay.stdout
    assert not plan.exists() and 'Read the board once' not in replay.stdout
    other = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_mode=plan', '-e', 'delivery=72d3162e-cc79')
    assert other.returncode == 0 and plan.exists()
    hostile = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_mode=plan', '-e', 'delivery=../../x;id')
    assert hostile.returncode != 0 and 'delivery must be a webhook delivery id' in hostile.stdout
    assert sorted(p.name for p in (tmp_path / 'state' / 'fleet-dispatch' / 'deliveries').iterdir()) == ['72d3162e-cc78', '72d3162e-cc79']


def test_a_plan_sweep_routes_by_profile_orders_by_priority_and_holds_what_nobody_serves(tmp_path):
    """The inventory's worker_runner_agent is each master's profile: a routed item goes only there, with
    its model; an item asking for a profile no worker has is held (unroutable); priority orders the plan."""
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='plain, oldest', status='Ready')
        b.upsert_item(number=2, title='codex, P2', status='Ready', agent='codex', model='gpt-5-codex', priority='P2')
        b.upsert_item(number=3, title='gemini: nobody', status='Ready', agent='gemini')
        b.upsert_item(number=4, title='claude, P0', status='Ready', agent='claude', effort='high', priority='P0')
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'workers': {'hosts': {
        'localhost': dict(local, worker_runner_agent='claude', worker_masters=[{'name': 'agent1'}]),
        'w2': {'ansible_host': '192.0.2.10', 'worker_runner_agent': 'codex', 'worker_masters': [{'name': 'agent2'}]}}}}))
    res = playbook('sweep.yml', tmp_path, spec, inventory=inventory)
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert [(a['number'], a['worker'], a['agent']) for a in plan['assignments']] == [
        (4, 'localhost', 'claude'), (2, 'w2', 'codex'), (1, 'localhost', 'claude')]
    assert plan['skipped'] == [3]
    assert 'unroutable' in res.stdout and "agent profile 'gemini'" in res.stdout
    assert 'model=gpt-5-codex' in res.stdout


def test_a_worker_offering_several_profiles_takes_each_routed_item_with_its_own(tmp_path):
    """worker_runner_agents: w2 offers codex (provisioned) and gemini, so the gemini item is no longer held."""
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=2, title='codex', status='Ready', agent='codex')
        b.upsert_item(number=3, title='gemini', status='Ready', agent='gemini', model='gemini-2.5-pro')
        b.upsert_item(number=5, title='custom: nobody', status='Ready', agent='custom')
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'workers': {'hosts': {
        'localhost': dict(local, worker_runner_agent='claude', worker_masters=[{'name': 'agent1'}]),
        'w2': {'ansible_host': '192.0.2.10', 'worker_runner_agent': 'codex', 'worker_runner_agents': ['Gemini'],
               'worker_masters': [{'name': 'agent2'}]}}}}))
    res = playbook('sweep.yml', tmp_path, spec, inventory=inventory)
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert sorted((a['number'], a['worker'], a['agent']) for a in plan['assignments']) == [(2, 'w2', 'codex'), (3, 'w2', 'gemini')]
    assert plan['skipped'] == [5] and "agent profile 'custom'" in res.stdout


def test_a_plan_sweep_darkens_the_masters_of_an_account_that_spent_its_daily_budget(tmp_path):
    """acct-a's runs closed today stated 5000 tokens, its daily budget: its master gets nothing until 00:00 UTC
    (source budget), the item goes to acct-b's master; without the budget the emptier acct-a master takes it."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='spent', status='Done')
        b.comment(1, format_marker('start', {'account': 'acct-a'}), at='2026-12-06T09:00:00Z')
        b.comment(1, format_marker('noop', {'account': 'acct-a', 'tokens': 5000}), at='2026-12-06T10:00:00Z')
        b.upsert_item(number=2, title='to place', status='Ready')
    local = {'ansible_connection': 'local', 'ansible_python_interpreter': '{{ ansible_playbook_python }}'}
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'workers': {'hosts': {'localhost': dict(local, worker_masters=[
        {'name': 'agent1', 'agent_account': 'acct-a'}, {'name': 'agent2', 'agent_account': 'acct-b'}])}}}))
    res = playbook('sweep.yml', tmp_path, spec, '-e', 'dispatch_now=2026-12-06T12:00:00Z', '-e', 'dispatch_account_budget_tokens=5000',
                   inventory=inventory)
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert [(a['number'], a['master']) for a in plan['assignments']] == [(2, 'agent2')]
    assert [(d['master'], d['source']) for d in plan['dark']] == [('agent1', 'budget')]
    assert 'account acct-a spent 5000 tokens today' in res.stdout + res.stderr
    res = playbook('sweep.yml', tmp_path, spec, '-e', 'dispatch_now=2026-12-06T12:00:00Z', inventory=inventory)
    assert res.returncode == 0 and not json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())['dark']


def _left_open(spec, number, ref, *, head_ref='fleet/%d'):
    """Item ``number``: a run started, left the open pull request ``ref`` that closes it, and ended a no-op; then a
    member asked for changes on it."""
    past = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(hours=2)
    with open_board(spec) as b:
        b.upsert_item(number=number, title='left a pull request open', status='Ready')
        b.comment(number, format_marker('start', {'unit': 'task-%d' % number}), at=past)
        b.add_artifact(ref, closes=[number], created_at=past + _dt.timedelta(minutes=10), head_ref=head_ref % number,
                       head_sha='a' * 40, state='OPEN')
        b.comment(number, format_marker('noop', {'unit': 'task-%d' % number}), at=past + _dt.timedelta(minutes=20))
        # a collaborator asks for changes after it: the next round has something to answer (else awaiting_review)
        b.add_review(ref, 'rename it', kind='review', author='maint', association='COLLABORATOR', state='CHANGES_REQUESTED',
                     at=past + _dt.timedelta(minutes=30))


def test_a_pull_request_names_the_item_that_continues_it_for_the_hand_dispatch(tmp_path, board):
    """What the webhook passes for a review or a finished check: -e pull_request=REF dispatches the item whose
    next run continues that pull request, on the shared path; a pull request no run left open dispatches nothing."""
    _left_open(board, 5, 'pr-5')
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'pull_request=pr-5', '-e', 'dispatch_mode=plan')
    assert res.returncode == 0, res.stdout + res.stderr
    plan = json.loads(state_file(tmp_path / 'state', 'plan.json').read_text())
    assert [(a['number'], a['master']) for a in plan['assignments']] == [(5, 'agent1')]

    plan_file = state_file(tmp_path / 'state', 'plan.json')
    plan_file.unlink()
    for ref in ('pr-6', 'pr-5#1'):
        stray = playbook('dispatch.yml', tmp_path, board, '-e', 'pull_request=%s' % ref, '-e', 'dispatch_mode=plan')
        assert stray.returncode != 0 and '%s: no item continues it' % ref in stray.stdout, stray.stdout
        assert not plan_file.exists() and 'Read the board once (D1)' not in stray.stdout


@pytest.mark.parametrize('extra, said', [
    (['-e', 'pull_request=pr-5', '-e', 'issue=5'], 'not both'),
    (['-e', 'pull_request=pr-5;id'], 'pull_request must name a pull request'),
    (['-e', 'pull_request=../x'], 'pull_request must name a pull request'),
    (['-e', 'pull_request=o/r#'], 'pull_request must name a pull request'),   # a check on a fork's head lists none
])
def test_a_pull_request_dispatch_refuses_a_bad_name(tmp_path, board, extra, said):
    _left_open(board, 5, 'pr-5')
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'dispatch_mode=plan', *extra)
    assert res.returncode != 0 and said in res.stdout, res.stdout + res.stderr
    assert 'Read the board once (D1)' not in res.stdout
