# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launched is not started (D20, issue 18), on a real test-bed worker with the real runner.

The worker role installs the runner on one master (as tests/integration/test_runner_units.py does);
the dispatcher's board is a PostgreSQL ledger on this machine, which the worker reaches through a TCP
forwarder on the podman bridge. First the runner's board is the newcomer's mistake -- a SQLite ledger
path that exists only on the controller -- so every launch dies before its start marker: the sweep, its
plan.json and status must say ``failed to start: <the runner's reason>``, the master must go dark
(``board_unreachable``) and the next sweep must not relaunch there. Then the runner's board is fixed
(the DSN through the credentials file): a clean start clears the dark state and a sweep reports
``started``. Every sweep is the production playbook (D15).
"""
from __future__ import annotations

import json
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import dispatch_fleet as df  # noqa: E402
from test_runner_units import BRIDGE, FAKE_AGENT, PIN, VERSION, Forwarder, _bare_repo_tarball  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of  # noqa: E402

pytestmark = pytest.mark.testbed
REPO = pathlib.Path(__file__).resolve().parents[2]
MASTER = 'fstart'
HOME = '/home/' + MASTER
# Polling bound only, not a speed claim (a loaded 2-core CI machine).
WAIT = 120


@pytest.fixture(scope='module')
def world(bed_factory, fresh_database, tmp_path_factory):
    bed = bed_factory(1, ready=True)      # psycopg: the ready host
    host = bed.hosts[0]
    tmp = tmp_path_factory.mktemp('start-confirm')
    local_dsn, drop = fresh_database()
    from psycopg.conninfo import conninfo_to_dict
    params = conninfo_to_dict(local_dsn)
    forwarder = Forwarder((params.get('host', '127.0.0.1'), int(params.get('port', 5432))))
    worker_dsn = 'postgresql://%s:%s@%s:%d/%s' % (params['user'], params['password'], BRIDGE, forwarder.port, params['dbname'])
    board = LedgerBoard(dsn=local_dsn)
    for number, status in ((1, 'Ready'), (2, 'Ready'), (3, 'Backlog')):
        board.upsert_item(number=number, title='item %d' % number, body='Make item %d work' % number, status=status)
    bed.ssh(host, 'id %s >/dev/null 2>&1 || sudo useradd --create-home --shell /bin/bash %s' % (MASTER, MASTER))
    tarball, _head = _bare_repo_tarball()
    bed.ssh(host, 'sudo -u %s mkdir -p %s/src && base64 -d | sudo -u %s tar -C %s/src -xzf -' % (MASTER, HOME, MASTER, HOME),
            input=tarball)
    bed.ssh(host, 'sudo tee /usr/local/lib/fake_agent.py >/dev/null && sudo chmod 0644 /usr/local/lib/fake_agent.py',
            input=FAKE_AGENT.read_text())
    bed.ssh(host, 'sudo sh -s', input=df.ORIGIN)
    inventory = tmp / 'workers.ini'
    inventory.write_text(pathlib.Path(bed.inventory).read_text()
                         + '\n[workers:children]\ntestbed\n\n[workers:vars]\nworker_masters=%s\n' % json.dumps([{'name': MASTER}]))

    class World(object):
        pass

    w = World()
    w.bed, w.host, w.board, w.tmp, w.inventory = bed, host, board, tmp, str(inventory)
    w.dispatcher_board = {'kind': 'ledger', 'dsn': local_dsn}

    def playbook(name, extra_vars):
        argv = [df._tool('ansible-playbook'), '-i', w.inventory, str(REPO / 'playbooks' / name), '-e', json.dumps(extra_vars)]
        env = dict(bed.env, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
        import subprocess
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, env=env, timeout=1200)

    def provision(runner_board, credentials=None):
        role_vars = {'worker_packages_install': False, 'worker_clones': [{'name': 'main', 'repo': '/srv/fleet-origin.git'}],
                     'worker_runner_install': True, 'worker_runner_source': HOME + '/src/fleet-dispatch.git', 'worker_runner_pin': PIN,
                     'worker_runner_version': VERSION, 'worker_runner_board': runner_board,
                     'worker_runner_agent_command': ['/usr/bin/python3', '/usr/local/lib/fake_agent.py'],
                     # the provision-time board check (issue 18 item 2) would refuse the broken runner this
                     # test provisions on purpose: what it tests is the dispatch path's own confirmation
                     'worker_runner_check_board': False}
        if credentials:
            role_vars['worker_credentials'] = credentials
        res = playbook('provision.yml', role_vars)
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
        assert worker_dsn not in res.stdout and ':%s@' % params['password'] not in res.stdout, 'the DSN is never logged'

    def sweep(name):
        state = tmp / name
        res = playbook('sweep.yml', {
            'dispatch_board': w.dispatcher_board, 'dispatch_mode': 'apply', 'dispatch_state_dir': str(state),
            'dispatch_plan_json': str(state / 'plan.json'), 'dispatch_status_json': str(state / 'status.json'),
            'dispatch_lease_path': str(tmp / 'leases'),
            'dispatch_run_setenv': {'FAKE_AGENT_MODE': 'claim', 'FAKE_AGENT_LOG': HOME + '/agent.log'}})
        record = json.loads((state / 'plan.json').read_text()) if (state / 'plan.json').exists() else None
        return res, record, state

    def status(state):
        res = playbook('status.yml', {'dispatch_board': w.dispatcher_board, 'dispatch_state_dir': str(state),
                                      'dispatch_plan_json': str(state / 'plan.json'),
                                      'dispatch_status_json': str(state / 'status.json')})
        return res, json.loads((state / 'status.json').read_text())

    def capacity():
        out = bed.ssh(host, 'cat %s/.local/state/fleet-dispatch/capacity.json 2>/dev/null || echo MISSING' % HOME,
                      user=MASTER).stdout.strip()
        return None if out == 'MISSING' else json.loads(out)

    def kinds(number):
        return [m.kind for m in markers_of(board.get(number))]

    w.provision, w.sweep, w.status, w.capacity, w.kinds, w.worker_dsn = provision, sweep, status, capacity, kinds, worker_dsn
    try:
        yield w
    finally:
        for step in (board.close, forwarder.close, drop):
            try:
                step()
            except Exception:  # noqa: BLE001 - best effort teardown
                pass


def _lines(stdout, needle):
    return [line for line in stdout.splitlines() if needle in line]


def test_a_runner_that_cannot_open_the_board_fails_to_start_darkens_and_a_clean_start_clears_it(world):
    # 1. the newcomer's mistake: the runner's board is a SQLite file that exists only on the controller
    world.provision({'kind': 'ledger', 'path': HOME + '/ledger.sqlite3'})
    res, rec, state = world.sweep('first')
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    assert sorted(u['unit'] for u in rec['launched']) == ['task-1', 'task-2']
    failed = sorted(rec['failed_to_start'], key=lambda r: r['number'])
    assert [r['unit'] for r in failed] == ['task-1', 'task-2'], json.dumps(rec['launched'], indent=1)
    assert rec['started'] == [] and rec['unconfirmed'] == []
    for row in failed:
        assert row['start_cause'] == 'board_unreachable'
        assert 'is not on this machine' in row['start_reason'] and 'do not create one here' in row['start_reason']
        assert row['start_text'].startswith('failed to start: the runner on ')
    for unit in ('task-1', 'task-2'):
        assert _lines(res.stdout, '%s on %s/%s: failed to start: the runner on' % (unit, world.host, MASTER)), res.stdout[-4000:]
    assert world.kinds(1) == [] and world.kinds(2) == [], 'nothing reached the board: no attempt spent'
    dark = world.capacity()
    assert dark is not None and dark['source'] == 'board_unreachable' and dark['reset_at'], dark

    # status says it too: the board alone cannot (nothing was written there)
    sres, sjson = world.status(state)
    assert sres.returncode == 0, sres.stdout[-4000:]
    assert _lines(sres.stdout, 'task-1 on %s/%s: failed to start: the runner on' % (world.host, MASTER)), sres.stdout[-4000:]
    assert sorted(r['start'] for r in sjson['last_dispatch']['launched']) == ['failed', 'failed']

    # 2. the next sweep does not relaunch into the same failure: the master is dark
    res, rec, _state = world.sweep('second')
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
    assert rec['launched'] == [] and rec['batches'] == []
    assert [(d['master'], d['source']) for d in rec['dark']] == [(MASTER, 'board_unreachable')]
    assert world.kinds(1) == [] and world.kinds(2) == []

    # 3. the fix: the runner's board is the dispatcher's PostgreSQL ledger, its DSN in the credentials file.
    # The master stays dark (until its retry time) until a run starts cleanly there: one launched by hand.
    world.provision({'kind': 'ledger'}, {'FLEET_BOARD_DSN': world.worker_dsn})
    assert world.capacity()['source'] == 'board_unreachable'
    path = world.bed.ssh(world.host, 'cat %s/.config/fleet-dispatch/path' % HOME, user=MASTER).stdout.strip()
    launched = world.bed.ansible(world.host, 'fleet.dispatch.launch', {
        'items': [{'number': 3, 'command': ['fleet-runner', '--item', '3'], 'workdir': HOME,
                   'setenv': {'FAKE_AGENT_MODE': 'claim', 'FAKE_AGENT_LOG': HOME + '/agent.log'}}],
        'path': path, 'environment_file': HOME + '/.config/fleet-dispatch/credentials.env'}, become_user=MASTER)[world.host]
    assert launched.get('launched') == ['task-3'], launched
    deadline = time.monotonic() + WAIT
    while world.capacity() is not None and time.monotonic() < deadline:
        time.sleep(1)
    assert world.capacity() is None, 'a clean start clears board_unreachable'
    assert world.kinds(3)[:1] == ['start']

    # 4. a normal launch reports started, and its run's markers are on the dispatcher's board
    res, rec, state = world.sweep('third')
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    started = sorted(rec['started'], key=lambda r: r['number'])
    assert [r['unit'] for r in started] == ['task-1', 'task-2'], json.dumps(rec['launched'], indent=1)
    assert rec['failed_to_start'] == [] and all(r['start_text'] == 'started' for r in rec['launched'])
    for row in started:
        assert row['run'] in [m.fields.get('run') for m in markers_of(world.board.get(row['number']))]
    for unit in ('task-1', 'task-2'):
        assert _lines(res.stdout, '%s on %s/%s: started' % (unit, world.host, MASTER)), res.stdout[-4000:]
    sres, sjson = world.status(state)
    assert sorted(r['start'] for r in sjson['last_dispatch']['launched']) == ['started', 'started']
