# -*- coding: utf-8 -*-
"""The fault matrix of unattended operation (issue 11, D14), as one suite on real systemd hosts.

Two test-bed workers with one master each, provisioned by ``playbooks/provision.yml`` (the worker role
installs the real runner from this checkout's HEAD, with the fake agent CLI, tests/fakes/agent, in
``hang`` mode). The board is a ledger on the host's PostgreSQL: the controller's sweeps reach it on
loopback, the runners through a forwarder on the podman bridge (tests/integration/test_runner_units.py).
Every dispatch is ``playbooks/sweep.yml`` or ``playbooks/dispatch.yml`` in apply mode (D15).

One module, hosts booted once and shared by every row; each row uses its own items and closes them
when it is done, so a later sweep never picks them up. The reaper's floor (``dispatch_reap_floor``) is a
parameter per sweep: a day to show the clock holding a reset, 1 s to let it through. The threshold is
then 2x the longest run earlier rows left on the board (seconds: their runs are stopped soon after
they start), which the reaping rows compute from the markers and wait past - never minutes.

Rows of the issue's table left to the announcer's suite: a tombstone; a rate limit on one account
shared by two masters; "after N cycles one announcement".
"""
from __future__ import annotations

import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import dispatch_fleet as df  # noqa: E402
from test_runner_units import BRIDGE, FAKE_AGENT, PIN, VERSION, Forwarder, _bare_repo_tarball  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of  # noqa: E402

pytestmark = pytest.mark.testbed
REPO = pathlib.Path(__file__).resolve().parents[2]
MASTER = 'fm'
HOME = '/home/' + MASTER
# Polling bound only (a loaded 2-core CI machine), never a speed claim.
WAIT = 120
ROUNDS = int(os.environ.get('FLEET_FAULT_ROUNDS', '20'))
# A reap threshold far in the future, and one already passed: the slow threshold is a parameter.
NEVER, AT_ONCE = 86400, 1


def _json_or_none(path):
    return json.loads(path.read_text()) if path.exists() else None


def _xdg(cmd):
    return 'XDG_RUNTIME_DIR=/run/user/$(id -u) ' + cmd


@pytest.fixture(scope='module')
def matrix(bed_factory, tmp_path_factory, fresh_database):
    bed = bed_factory(2, ready=True)      # psycopg on the workers: the ready host
    work = tmp_path_factory.mktemp('fault-matrix')
    local_dsn, drop = fresh_database()
    from psycopg.conninfo import conninfo_to_dict
    params = conninfo_to_dict(local_dsn)
    forwarder = Forwarder((params.get('host', '127.0.0.1'), int(params.get('port', 5432))))
    board = LedgerBoard(dsn=local_dsn)      # migrates the fresh database
    worker_dsn = 'postgresql://%s:%s@%s:%d/%s' % (params['user'], params['password'], BRIDGE, forwarder.port, params['dbname'])
    tarball, _head = _bare_repo_tarball()
    for host in bed.hosts:
        bed.ssh(host, 'sudo sh -s', input=df.ORIGIN)
        bed.ssh(host, 'id %s >/dev/null 2>&1 || sudo useradd --create-home --shell /bin/bash %s' % (MASTER, MASTER))
        bed.ssh(host, 'sudo -u %s mkdir -p %s/src && base64 -d | sudo -u %s tar -C %s/src -xzf -' % (MASTER, HOME, MASTER, HOME),
                input=tarball)
        bed.ssh(host, 'sudo tee /usr/local/lib/fake_agent.py >/dev/null && sudo chmod 0644 /usr/local/lib/fake_agent.py',
                input=FAKE_AGENT.read_text())
    inventory = work / 'workers.ini'
    base = pathlib.Path(bed.inventory).read_text()
    inventory.write_text(base + '\n[workers:children]\ntestbed\n\n[workers:vars]\nworker_masters=[{"name": "%s"}]\n' % MASTER)
    secrets = work / 'provision.json'
    secrets.write_text(json.dumps({
        'worker_packages_install': False, 'worker_clones': [{'name': 'main', 'repo': '/srv/fleet-origin.git'}],
        'worker_runner_install': True, 'worker_runner_source': HOME + '/src/fleet-dispatch.git', 'worker_runner_pin': PIN,
        'worker_runner_version': VERSION, 'worker_runner_agent_command': ['/usr/bin/python3', '/usr/local/lib/fake_agent.py'],
        'worker_credentials': {'FLEET_BOARD_DSN': worker_dsn}, 'worker_runner_board': {'kind': 'ledger'}}))
    os.chmod(str(secrets), 0o600)
    env = dict(bed.env, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    proc = subprocess.run([df._tool('ansible-playbook'), '-i', str(inventory), str(REPO / 'playbooks' / 'provision.yml'),
                           '-e', '@' + str(secrets)], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    m = Matrix(bed, work, inventory, env, board, local_dsn)
    m.forwarder = forwarder      # the runners' only way to the ledger: pause() is the database down, as they see it
    try:
        yield m
    finally:
        m.stop_all()
        board.close()
        forwarder.close()
        drop()


class Matrix(object):
    """The bed, the board and the production playbooks, with the counting helpers the rows share."""

    def __init__(self, bed, work, inventory, env, board, dsn):
        self.bed, self.work, self.inventory, self.env, self.board, self.dsn = bed, work, inventory, env, board, dsn
        self.state = work / 'state'
        self.leases = work / 'leases'
        self.created = set()

    # -- the board --------------------------------------------------------------------------
    def create(self, *numbers):
        for n in numbers:
            self.created.add(n)
            self.board.upsert_item(number=n, title='fault item %d' % n, body='Make item %d work' % n, status='Ready')

    def retire(self, *numbers):
        """Close the row's items so no later sweep takes them (and stop their units)."""
        for n in numbers:
            self.board.upsert_item(number=n, state='closed')
        self.stop_all()

    def read(self, n):
        item = self.board.get(n)
        verdict = evaluate(item, now=datetime.datetime.now(datetime.timezone.utc))
        markers = markers_of(item)
        return {'kinds': [mk.kind for mk in markers], 'fields': [mk.fields for mk in markers], 'state': item.state,
                'reason': verdict.reason, 'attempts': verdict.attempts}

    def expected_threshold(self, floor):
        """The reap threshold the rule gives for this board now, computed here from the markers: 2x the longest
        start-to-ending run (an ending that is a reset is no run length), or ``floor`` if that is more."""
        longest = 0.0
        for n in self.created:
            markers = markers_of(self.board.get(n))
            for first, second in zip(markers, markers[1:]):
                if first.kind == 'start' and second.kind not in ('start', 'reset') and first.at and second.at:
                    longest = max(longest, (second.at - first.at).total_seconds())
        return max(float(floor), 2 * longest)

    def wait_older(self, n, seconds):
        """Wait until item ``n``'s last start is older than ``seconds`` (a polling bound, no assertion on time)."""
        start = [mk for mk in markers_of(self.board.get(n)) if mk.kind == 'start'][-1]
        while (datetime.datetime.now(datetime.timezone.utc) - start.at).total_seconds() <= seconds + 1:
            time.sleep(1)

    def wait_kinds(self, n, kinds):
        deadline = time.monotonic() + WAIT
        while True:
            data = self.read(n)
            if data['kinds'] == kinds:
                return data
            if time.monotonic() > deadline:
                raise AssertionError('#%d: markers %s, expected %s' % (n, data['kinds'], kinds))
            time.sleep(0.5)

    # -- the playbooks ----------------------------------------------------------------------
    def dispatch(self, issue=None, mode='apply', board=None, inventory=None, state=None, **extra):
        """One dispatcher run; returns (CompletedProcess, plan.json or None, last_cycle.json or None)."""
        argv, state, secret = self._dispatch_argv(issue, mode, board, inventory, state, extra)
        try:
            res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=self.env, timeout=900,
                                 check=False)
        finally:
            os.unlink(secret)
        return res, _json_or_none(state / 'plan.json'), _json_or_none(state / 'last_cycle.json')

    def start_dispatch(self, issue=None, mode='apply', board=None, inventory=None, state=None, **extra):
        """One dispatcher run left running, in its own process group, its output line by line (unbuffered):
        (Popen, the state directory, the extra-vars file to delete when it ends)."""
        argv, state, secret = self._dispatch_argv(issue, mode, board, inventory, state, extra)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(self.env, PYTHONUNBUFFERED='1'), start_new_session=True)
        return proc, state, secret

    def _dispatch_argv(self, issue, mode, board, inventory, state, extra):
        state = pathlib.Path(state or self.state)
        for name in ('plan.json', 'last_cycle.json'):
            if (state / name).exists():
                (state / name).unlink()
        extra_vars = dict({'dispatch_board': board or {'kind': 'ledger', 'dsn': self.dsn}, 'dispatch_mode': mode,
                           'dispatch_state_dir': str(state), 'dispatch_plan_json': str(state / 'plan.json'),
                           'dispatch_cycle_json': str(state / 'last_cycle.json'),
                           'dispatch_lease_path': str(self.leases), 'dispatch_reap_floor': NEVER,
                           'dispatch_run_setenv': {'FAKE_AGENT_MODE': 'hang', 'FAKE_AGENT_PIDFILE': HOME + '/agent.pid'}},
                          **extra)
        if issue is not None:
            extra_vars['issue'] = issue
        with tempfile.NamedTemporaryFile('w', suffix='.json', dir=str(self.work), delete=False) as handle:
            json.dump(extra_vars, handle)      # the DSN is a credential: a file, never the command line
        os.chmod(handle.name, 0o600)
        book = REPO / 'playbooks' / ('dispatch.yml' if issue is not None else 'sweep.yml')
        return ([df._tool('ansible-playbook'), '-i', str(inventory or self.inventory), str(book), '-e', '@' + handle.name],
                state, handle.name)

    def sweep(self, **kw):
        res, plan, cycle = self.dispatch(**kw)
        assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-3000:]
        return plan, cycle

    # -- the hosts --------------------------------------------------------------------------
    def ssh(self, host, cmd, user=MASTER, check=True):
        return self.bed.ssh(host, _xdg(cmd) if user == MASTER else cmd, user=user, check=check)

    def live(self):
        """{unit: [hosts]} of live task-* units on every master, asked of systemd."""
        out = {}
        for host in self.bed.hosts:
            text = self.ssh(host, "systemctl --user list-units --state=active,activating,deactivating --plain --no-legend "
                                  "'task-*' | awk '{print $1}'").stdout
            for line in text.split():
                out.setdefault(line.replace('.service', ''), []).append(host)
        return out

    def launch_one(self, n):
        """Put item ``n`` on the board, sweep, and wait until its run is live with its agent started:
        ``(host, agent pids)``."""
        self.create(n)
        plan, _cycle = self.sweep()
        assert launched(plan) == ['task-%d' % n], plan
        host = self.where('task-%d' % n)[0]
        self.wait_kinds(n, ['start'])
        return host, self.wait_agent(host)

    def where(self, unit):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            hosts = self.live().get(unit)
            if hosts:
                return hosts
            time.sleep(0.5)
        raise AssertionError('%s never became live' % unit)

    def agent_pids(self, host):
        text = self.ssh(host, "pgrep -u %s -f '^/usr/bin/python3 /usr/local/lib/fake_agent.py' || true" % MASTER).stdout
        return [int(p) for p in text.split()]

    def wait_agent(self, host):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            pids = self.agent_pids(host)
            if pids:
                return pids
            time.sleep(0.5)
        raise AssertionError('the fake agent never started on %s' % host)

    def unit_gone(self, host, unit):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            state = self.ssh(host, 'systemctl --user is-active %s || true' % unit).stdout.strip()
            if state in ('inactive', 'failed', 'unknown'):
                return state
            time.sleep(0.5)
        raise AssertionError('%s still live on %s' % (unit, host))

    def stop_all(self):
        for host in self.bed.hosts:
            self.ssh(host, "systemctl --user stop 'task-*' 2>/dev/null; true", check=False)

    def podman(self, *argv):
        return subprocess.run(stdin=subprocess.DEVNULL, args=['podman'] + list(argv), capture_output=True, text=True, env=self.bed.env, timeout=300,
                              check=True)

    def wait_ssh(self, host):
        deadline = time.monotonic() + WAIT * 2
        while time.monotonic() < deadline:
            if self.bed.ssh(host, 'systemctl is-system-running --wait >/dev/null 2>&1; true', check=False,
                            timeout=60).returncode == 0:
                return
            time.sleep(1)
        raise AssertionError('%s did not come back' % host)

    def only_inventory(self, host):
        """The same fleet with ``host`` its only worker (the other hosts' lines left out)."""
        path = self.work / ('only-%s.ini' % host)
        others = [h for h in self.bed.hosts if h != host]
        lines = [line for line in self.inventory.read_text().splitlines() if line.split(' ')[0] not in others]
        path.write_text('\n'.join(lines) + '\n')
        assert all(h not in path.read_text().split() for h in others) and host in path.read_text()
        return path

    def unreachable_inventory(self, host):
        """The same fleet with ``host`` unreachable from this controller (its SSH port closed to us)."""
        path = self.work / ('unreachable-%s.ini' % host)
        text = self.inventory.read_text().replace('ansible_host=%s\n' % self.bed.ip[host],
                                                  'ansible_host=%s ansible_port=1\n' % self.bed.ip[host])
        assert text != self.inventory.read_text(), 'the bed inventory names hosts by ansible_host'
        path.write_text(text)
        return path


def resets(data):
    return [f for k, f in zip(data['kinds'], data['fields']) if k == 'reset']


def launched(plan):
    return [u['unit'] for u in (plan or {}).get('launched', [])]


def _sigkill_orphan(matrix, number):
    """Launch item ``number`` by a sweep and SIGKILL its unit: the start marker stays the last word."""
    host, _pids = matrix.launch_one(number)
    matrix.ssh(host, 'systemctl --user kill -s KILL task-%d' % number)
    matrix.unit_gone(host, 'task-%d' % number)
    return host


def _reaped_then_dispatched_again(matrix, number):
    """The shared tail of the SIGKILL and restart rows: held by the clock, then one reset, then a new run."""
    plan, cycle = matrix.sweep()       # the threshold (NEVER) is not passed: the clock holds it
    assert cycle['result'] == 'ok' and cycle['reaped'] == [] and launched(plan) == []
    assert matrix.read(number)['kinds'] == ['start']
    # the threshold is 2x the longest run the board has seen (earlier rows' runs), or the floor: wait past it
    limit = matrix.expected_threshold(AT_ONCE)
    matrix.wait_older(number, limit)
    plan, cycle = matrix.sweep(dispatch_reap_floor=AT_ONCE)
    assert cycle['reaped'] == [number] and launched(plan) == [], cycle
    data = matrix.read(number)
    assert data['kinds'] == ['start', 'reset'] and data['reason'] == 'eligible' and data['attempts'] == 1
    why = resets(data)[0]
    assert why['masters_probed'] == 2 and why['threshold_s'] == int(limit), (why, limit)
    assert ('dispatch_reap_floor' if limit == AT_ONCE else 'the longest of') in why['threshold_source'], why
    plan, cycle = matrix.sweep(dispatch_reap_floor=AT_ONCE)
    assert launched(plan) == ['task-%d' % number] and cycle['reaped'] == [], (plan, cycle)
    data = matrix.wait_kinds(number, ['start', 'reset', 'start'])
    assert len(resets(data)) == 1 and data['attempts'] == 2 and data['reason'] == 'running'


def test_systemctl_stop_mid_run_posts_one_stopped_marker_and_leaves_nothing_running(matrix):
    n = 301
    host, _pids = matrix.launch_one(n)
    matrix.ssh(host, 'systemctl --user stop task-%d' % n)
    data = matrix.wait_kinds(n, ['start', 'stopped'])
    assert data['state'] == 'open' and data['reason'] == 'eligible' and 'failure' not in data['kinds']
    assert matrix.agent_pids(host) == [] and 'task-%d' % n not in matrix.live()
    matrix.retire(n)


def test_sigkill_leaves_the_start_then_notifies_then_one_reset_then_a_new_run(matrix):
    n = 302
    host = _sigkill_orphan(matrix, n)
    # the OnFailure= notifier ran for this unit (its record in failures.log) and exited 0 (the user manager's journal)
    notifier = 'fleet-notify@task-%d.service' % n
    deadline = time.monotonic() + WAIT
    while True:
        log = matrix.ssh(host, 'cat ~/.local/state/fleet-dispatch/failures.log 2>/dev/null || true').stdout
        journal = matrix.ssh(host, 'sudo journalctl --no-pager -o cat USER_UNIT=%s' % notifier, user='tester').stdout
        if 'unit=task-%d.service' % n in log and ('Deactivated successfully' in journal or 'Finished' in journal):
            break
        assert time.monotonic() < deadline, 'the notifier did not run to its end: %r %r' % (log, journal)
        time.sleep(0.5)
    assert 'status=' not in journal and 'Failed' not in journal, journal
    _reaped_then_dispatched_again(matrix, n)
    matrix.retire(n)


def test_a_worker_restarted_mid_run_comes_back_by_linger_and_is_reaped_once(matrix):
    n = 303
    host, _pids = matrix.launch_one(n)
    matrix.podman('kill', host)        # a hard crash: nothing on the worker gets to write an ending
    matrix.podman('start', host)
    matrix.wait_ssh(host)
    # linger brings the master's manager back with no login of the master (asked as root, D3)
    deadline = time.monotonic() + WAIT
    while matrix.ssh(host, 'systemctl is-active user@$(id -u %s).service || true' % MASTER, user='tester').stdout.strip() != 'active':
        assert time.monotonic() < deadline, "the master's user manager did not come back after the restart"
        time.sleep(0.5)
    assert 'task-%d' % n not in matrix.live()
    assert matrix.read(n)['kinds'] == ['start']
    _reaped_then_dispatched_again(matrix, n)
    matrix.retire(n)


def test_an_unreachable_worker_is_blind_and_its_items_are_not_reaped(matrix):
    n = 304
    host = _sigkill_orphan(matrix, n)
    matrix.wait_older(n, matrix.expected_threshold(AT_ONCE))     # past the clock: only blindness holds it
    blind = matrix.unreachable_inventory(host)
    for _blind_cycle in range(2):
        plan, cycle = matrix.sweep(inventory=blind, dispatch_reap_floor=AT_ONCE)
        assert cycle['reaped'] == [] and [h['number'] for h in cycle['reap_held']] == [n], cycle
        assert 'blind is not dead' in cycle['reap_held'][0]['why'] and host in cycle['reap_held'][0]['why']
        assert matrix.read(n)['kinds'] == ['start']
    # seen again, the same orphan is reset once
    plan, cycle = matrix.sweep(dispatch_reap_floor=AT_ONCE)
    assert cycle['reaped'] == [n] and matrix.read(n)['kinds'] == ['start', 'reset']
    matrix.retire(n)


def test_an_unwritable_lease_store_dispatches_with_one_warning_naming_the_fix(matrix):
    n = 305
    matrix.create(n)
    blocker = matrix.work / 'not-a-directory'
    blocker.write_text('a file where the lease directory should be\n')
    # the SQLite store named by path (a PostgreSQL ledger board's default store is its own database)
    res, plan, cycle = matrix.dispatch(dispatch_lease_backend='sqlite', dispatch_lease_path=str(blocker / 'leases'))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert launched(plan) == ['task-%d' % n] and cycle['result'] == 'ok'
    said = ' '.join(res.stderr.split())      # a warning may be wrapped over lines
    assert said.count('lease store unusable') == 1, res.stderr[-3000:]
    warning = said.split('lease store unusable', 1)[1].split('[WARNING]')[0]
    assert 'fail open' in warning and '; fix: ' in warning, warning
    assert all(le['degraded'] for le in plan['leases'])
    matrix.wait_kinds(n, ['start'])
    matrix.retire(n)


@pytest.mark.parametrize('broken', ['ledger-moved', 'postgres-stopped'])
def test_an_unreadable_board_fails_the_apply_launches_nothing_and_the_cycle_record_says_why(matrix, broken):
    n = 306 if broken == 'ledger-moved' else 307
    matrix.create(n)
    if broken == 'ledger-moved':
        board = {'kind': 'ledger', 'path': str(matrix.work / 'moved-away' / 'ledger.sqlite3')}
    else:
        # the client's view of a stopped server: nothing listens on its port (the shared test server keeps running)
        import socket
        probe = socket.socket()
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
        probe.close()
        board = {'kind': 'ledger', 'dsn': 'postgresql://fleet@127.0.0.1:%d/fleet?connect_timeout=3' % port}
    before = matrix.live()
    res, plan, cycle = matrix.dispatch(board=board)
    assert res.returncode != 0
    assert cycle['result'] == 'failed' and cycle['mode'] == 'apply' and cycle['reason'], cycle
    assert cycle['failed_task'].startswith('Read the board') and cycle['launched'] == []
    # plan.json is this cycle's: the failure, nothing placed (never the previous cycle's plan)
    assert plan is not None and plan['failed'] is True and plan['assignments'] == [] and plan['launched'] == [], plan
    assert matrix.live() == before and matrix.read(n)['kinds'] == []
    res, plan, cycle = matrix.dispatch(board=board, mode='plan')
    assert res.returncode == 0, res.stdout[-3000:]
    assert cycle['result'] == 'ok' and cycle['readable'] is False and plan['readable'] is False
    matrix.retire(n)


def _spool_files(matrix, host):
    return matrix.ssh(host, 'ls %s/.local/state/fleet-dispatch/spool 2>/dev/null || true' % HOME).stdout.split()


def test_the_ledger_down_across_a_runs_end_yields_one_true_close_out_once_it_returns(matrix):
    """D12 with the database down as the run ends: the runners' way to the ledger is cut (the sweeps' is not), the
    agent is stopped from outside, and the close-out it earned (stopped) is spooled on the worker, not lost. Once the
    ledger is back the runner's own retry posts it: exactly one terminal marker, the true one, and an empty spool."""
    n = 308
    host, (pid, *_more) = matrix.launch_one(n)
    matrix.forwarder.pause()
    try:
        matrix.ssh(host, 'kill -TERM %d' % pid)       # the agent alone: the runner closes out with stopped
        deadline = time.monotonic() + WAIT
        while not _spool_files(matrix, host):
            assert time.monotonic() < deadline, 'the close-out was not spooled on %s' % host
            time.sleep(0.5)
        assert matrix.read(n)['kinds'] == ['start'], 'the ledger is down for the runner: nothing can have landed'
        assert 'task-%d' % n in matrix.live(), 'the runner stays live while it retries its close-out'
    finally:
        matrix.forwarder.resume()
    # polling bound only: the runner's next retry is at most its ladder's next step away (CLOSEOUT_RETRY_DELAYS)
    deadline = time.monotonic() + WAIT + 300
    while matrix.read(n)['kinds'] == ['start']:
        assert time.monotonic() < deadline, 'the spooled close-out never reached the ledger'
        time.sleep(1)
    data = matrix.read(n)
    assert data['kinds'] == ['start', 'stopped'] and data['reason'] == 'eligible', data
    matrix.unit_gone(host, 'task-%d' % n)
    assert _spool_files(matrix, host) == [], 'delivered, so no longer spooled'
    # the next cycle neither doubles nor resets it
    plan, cycle = matrix.sweep(dispatch_reap_floor=AT_ONCE)
    assert cycle['reaped'] == [] and matrix.read(n)['kinds'][:2] == ['start', 'stopped'], cycle
    matrix.retire(n)


def test_a_dispatcher_stopped_inside_its_lease_and_taken_over_admits_no_second_unit(matrix):
    """D4 with a revived lease holder: dispatcher A (worker 1 only) takes the item's lease with a 20 s ttl, probes, and
    is stopped (SIGSTOP: a suspended VM) before it decides. Its lease expires; dispatcher B (worker 2 only) takes it
    over and launches the item there. A is resumed and decides on its stale probe: the fencing check just before
    the launch finds its lease taken over under a larger token, so A launches nothing. One live unit, one start
    marker."""
    import signal
    n = 309
    first, second = matrix.bed.hosts[0], matrix.bed.hosts[1]
    matrix.create(n)
    started = time.monotonic()
    proc, state, secret = matrix.start_dispatch(issue=n, inventory=matrix.only_inventory(first), state=matrix.work / 'revived-a',
                                                dispatch_lease_ttl=20)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if 'PLAY [Dispatch cycle - guard, place and batch inside the leases]' in line:
                os.killpg(proc.pid, signal.SIGSTOP)
                break
        else:
            raise AssertionError('dispatcher A ended before its decide play:\n' + ''.join(seen[-60:]))
        assert 'task-%d' % n not in matrix.live(), 'A has launched nothing yet'
        # A's lease lives at most its ttl; then B takes it over (a refusal before that is the lease working)
        while time.monotonic() < started + 22:
            time.sleep(1)
        deadline = time.monotonic() + WAIT
        while True:
            res, plan, _cycle = matrix.dispatch(issue=n, inventory=matrix.only_inventory(second), state=matrix.work / 'revived-b')
            if launched(plan) == ['task-%d' % n]:
                break
            assert time.monotonic() < deadline, 'B never took the lease over: ' + res.stderr[-2000:]
            time.sleep(2)
        matrix.wait_kinds(n, ['start'])
        assert matrix.where('task-%d' % n) == [second]
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
    rest = proc.stdout.read()
    proc.wait(timeout=900)
    os.unlink(secret)
    out = ''.join(seen) + rest
    # A's lease was fenced out just before its launch: nothing launched on its stale probe
    plan_a = _json_or_none(state / 'plan.json')
    assert plan_a is not None and launched(plan_a) == [], out[-4000:]
    assert [(r['unit'], r['stage']) for r in plan_a['refused']] == [('task-%d' % n, 'lease')], plan_a['refused']
    assert 'taken over' in plan_a['refused'][0]['why'], plan_a['refused']
    matrix.unit_gone(first, 'task-%d' % n)
    assert matrix.live().get('task-%d' % n) == [second]
    assert matrix.read(n)['kinds'] == ['start'], 'one start marker: B\'s'
    matrix.retire(n)


def test_a_plan_sweep_probes_read_only_and_shows_a_dark_master(matrix):
    """Plan mode probes (in check mode) and its table shows a dark master with its reset; nothing on the workers
    changes - not even a dead runner's claimed spool file, which an apply probe would give back."""
    import datetime as _dt
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import dump_state, make_state
    n = 310
    dark_host = matrix.bed.hosts[0]
    now = _dt.datetime.now(_dt.timezone.utc)
    reset = now + _dt.timedelta(hours=2)
    state_dir = HOME + '/.local/state/fleet-dispatch'
    matrix.bed.ssh(dark_host, 'mkdir -p %s/spool && cat > %s/capacity.json' % (state_dir, state_dir), user=MASTER,
                   input=dump_state(make_state('rate_limit', written_at=now, reset_at=reset, message='fault matrix')))
    gone = matrix.ssh(dark_host, "sh -c 'echo $$'").stdout.strip()     # a pid whose process is gone
    entry = {'run': 'deadrun', 'unit': 'task-%d' % n, 'item': n, 'repo': '', 'kind': 'noop', 'body': 'x', 'close': False,
             'spooled_at': now.strftime('%Y-%m-%dT%H:%M:%SZ')}
    claimed = '%s/spool/deadrun.json.claimed.%s' % (state_dir, gone)
    matrix.bed.ssh(dark_host, 'cat > %s' % claimed, user=MASTER, input=json.dumps(entry))
    try:
        matrix.create(n)
        res, plan, cycle = matrix.dispatch(mode='plan')
        assert res.returncode == 0, res.stdout[-4000:]
        assert [(d['worker'], d['master'], d['source']) for d in plan['dark']] == [(dark_host, MASTER, 'rate_limit')], plan
        assert plan['unprobed'] == [] and [(a['number'], a['probed']) for a in plan['assignments']] == [(n, True)]
        assert plan['assignments'][0]['worker'] != dark_host
        shown = res.stdout.split('Show the plan', 1)[1].split('TASK [', 1)[0]
        assert 'dark' in shown and '%s/%s' % (dark_host, MASTER) in shown and 'rate_limit' in shown, shown
        assert matrix.live().get('task-%d' % n) is None and matrix.read(n)['kinds'] == [], 'plan mode launches nothing'
        assert matrix.ssh(dark_host, 'ls %s/spool' % state_dir).stdout.split() == ['deadrun.json.claimed.%s' % gone], \
            'a plan-mode probe renames nothing'
    finally:
        matrix.ssh(dark_host, 'rm -rf %s/spool/deadrun.json* %s/capacity.json' % (state_dir, state_dir))
        matrix.retire(n)


def test_two_sweeps_and_a_hand_dispatch_of_one_item_never_leave_two_live_units(matrix):
    bad, launches = [], {}
    for r in range(ROUNDS):
        n = 400 + r
        matrix.create(n)
        argv = [dict(), dict(), dict(issue=n)]
        procs = []
        for i, kw in enumerate(argv):
            state = matrix.work / ('race-%d-%d' % (r, i))
            procs.append((state, kw))
        import concurrent.futures as cf
        with cf.ThreadPoolExecutor(3) as pool:
            results = list(pool.map(lambda sk: matrix.dispatch(state=sk[0], **sk[1]), procs))
        total = sum(launched(plan).count('task-%d' % n) for _res, plan, _cycle in results)
        launches[n] = total
        live = matrix.live().get('task-%d' % n, [])
        data = matrix.read(n)
        if total > 1 or len(live) > 1 or data['kinds'].count('start') > 1:
            bad.append((n, total, live, data['kinds']))
        matrix.retire(n)
    assert bad == [], bad
    assert sum(1 for t in launches.values() if t == 1) == ROUNDS, launches
