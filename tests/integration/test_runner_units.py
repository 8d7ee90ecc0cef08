# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner inside real ``task-<item>`` units on a test-bed worker (D2, D7, D8, D11, D12, D16).

The worker role installs the runner for a master from a git repository of this checkout's HEAD
(placed on the worker); ``fleet.dispatch.launch`` starts real ``systemd-run --user`` units whose
program is the installed ``fleet-runner``, driving the fake agent CLI. The board is the ledger on
the host's PostgreSQL -- what a fleet runs: the worker reaches it through a TCP forwarder on the
podman bridge (10.88.0.1 -> 127.0.0.1, so the server's configuration is not touched) with the
DSN only in the master's credentials file -- and, as a second case, a SQLite ledger on the
worker itself, read back there with the installed (shipped) decision core.

Each fake-agent behaviour must end with exactly the right terminal marker, attempt count and
capacity state; ``systemctl --user stop`` mid-run posts ``stopped``; SIGKILL leaves the start
marker as the last word; a stale runner is refused by launch; a new commit on the runner's origin
is pulled, verified and re-executed inside the unit.
"""
from __future__ import annotations

import base64
import io
import json
import pathlib
import socket
import subprocess
import tarfile
import tempfile
import threading
import time

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import batches

pytestmark = pytest.mark.testbed

REPO = pathlib.Path(__file__).resolve().parents[2]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
BRIDGE = '10.88.0.1'   # the podman bridge: the host as the test-bed hosts see it (tests/testbed/README.md)
# Polling bound only, not a speed claim: a run here takes about a second (fake agent); the
# bound covers a loaded CI machine (load 10+ on 2 cores was seen while writing this).
WAIT = 90


def _version():
    import re
    return re.search(r'^version:\s*(\S+)', (REPO / 'galaxy.yml').read_text(), re.M).group(1)


VERSION = _version()

PLAYBOOK = '''
- name: Install the runner on the test-bed worker
  hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: Provision the worker with the runner
      ansible.builtin.include_role:
        name: fleet.dispatch.worker
'''

READ_BACK = r'''
import datetime, json, sys
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
board = LedgerBoard(path=%(ledger)r)
print(json.dumps(dict((str(n), %(summary)s) for n in %(numbers)r)))
'''


def summary(board, number, now):
    '''One item read back through the shipped decision core: markers, state, reason, attempts.'''
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
    item = board.get(number)
    verdict = evaluate(item, now=now)
    markers = markers_of(item)
    return {'kinds': [m.kind for m in markers], 'state': item.state, 'reason': verdict.reason,
            'attempts': verdict.attempts, 'fields': [m.fields for m in markers]}


# the same summary, as text for the worker's python (the SQLite case reads the ledger there)
SUMMARY_EXPR = ("(lambda item, markers, verdict: {'kinds': [m.kind for m in markers], 'state': item.state, "
                "'reason': verdict.reason, 'attempts': verdict.attempts, 'fields': [m.fields for m in markers]})"
                "(board.get(n), markers_of(board.get(n)), evaluate(board.get(n), now=datetime.datetime.now(datetime.timezone.utc)))")

# the item as the dispatcher assesses it (the shipped decision core), with an item budget in tokens; an item
# budget field set first when one is given (the SQLite case runs this on the worker)
ASSESS = r'''
import datetime, json
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.item_budget import item_budget
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess
board = LedgerBoard(path=%(ledger)r)
if %(field)r is not None:
    board.upsert_item(number=%(number)d, budget=%(field)r)
print(json.dumps(assess([board.get(%(number)d)], now=datetime.datetime.now(datetime.timezone.utc),
                        item_budget=item_budget(%(tokens)d, 0))[0]))
board.close()
'''

CREATE = r'''
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
board = LedgerBoard(path=%(ledger)r, create=True)
for number in %(numbers)r:
    board.upsert_item(number=number, title='item %%d' %% number, body='Make item %%d work' %% number, status='Ready')
board.close()
'''


PIN = 'fleet-runner-stable'
"""The tag the test beds' runners follow (worker_runner_pin): a self-update never follows a branch head."""


def _bare_repo_tarball():
    '''A bare clone of this checkout's HEAD as a base64 tar.gz (the runner's 'origin', HEAD tagged PIN), and that sha.'''
    with tempfile.TemporaryDirectory() as tmp:
        bare = pathlib.Path(tmp) / 'fleet-dispatch.git'
        subprocess.run(['git', 'clone', '-q', '--bare', '--no-local', str(REPO), str(bare)], stdin=subprocess.DEVNULL, check=True)
        subprocess.run(['git', '-C', str(bare), 'branch', '-f', 'main', 'HEAD'], stdin=subprocess.DEVNULL, check=False)
        # the pin the runner follows (worker_runner_pin): a tag, never the branch head
        subprocess.run(['git', '-C', str(bare), 'tag', '-f', PIN, 'main'], stdin=subprocess.DEVNULL, capture_output=True, check=True)
        sha = subprocess.run(['git', '-C', str(bare), 'rev-parse', 'main'], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout.strip()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w:gz') as tar:
            tar.add(str(bare), arcname='fleet-dispatch.git')
        return base64.b64encode(buf.getvalue()).decode(), sha


class Forwarder(object):
    '''A TCP forwarder from the podman bridge to the host's loopback PostgreSQL.

    The server keeps listening on loopback only and its pg_hba is untouched: the test-bed hosts
    connect to BRIDGE:port, and the server sees a loopback client.
    '''

    def __init__(self, target):
        self.target = target
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind((BRIDGE, 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        self.closed = False
        self.paused = False
        self.open = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def pause(self):
        '''The database down, as the workers see it: every open connection is cut and new ones are refused.'''
        self.paused = True
        for sock in list(self.open):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def resume(self):
        self.paused = False

    def _accept(self):
        while not self.closed:
            try:
                client, _addr = self.srv.accept()
            except OSError:
                return
            if self.paused:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            self.open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b, self.open), daemon=True).start()

    @staticmethod
    def _pump(src, dst, live=None):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                (live if live is not None else set()).discard(sock)
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.srv.close()


@pytest.fixture(scope='module', params=['postgres', 'sqlite'])
def worker(request, bed, tmp_path_factory, fresh_database):
    backend = request.param
    host = bed.hosts[0]
    master = 'frun' + ('pg' if backend == 'postgres' else 'sq')
    home = '/home/' + master
    root = home + '/.local/share/fleet-dispatch/runner'
    cleanup = []
    extra = {}
    if backend == 'postgres':
        local_dsn, drop = fresh_database()
        from psycopg.conninfo import conninfo_to_dict
        params = conninfo_to_dict(local_dsn)
        cleanup.append(drop)
        forwarder = Forwarder((params.get('host', '127.0.0.1'), int(params.get('port', 5432))))
        cleanup.append(forwarder.close)
        worker_dsn = 'postgresql://%s:%s@%s:%d/%s' % (params['user'], params['password'], BRIDGE, forwarder.port, params['dbname'])
        from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
        local_board = LedgerBoard(dsn=local_dsn)     # migrates the fresh database
        cleanup.insert(0, local_board.close)
        # the runner's DSN in its credentials file; the fake agent's forge half (its merge) its own (D18)
        extra = {'worker_credentials': {'FLEET_BOARD_DSN': worker_dsn}, 'worker_runner_board': {'kind': 'ledger'},
                 'worker_agent_credentials': {'FAKE_FORGE_DSN': worker_dsn}}
    else:
        ledger = home + '/ledger.sqlite3'
        # the ledger file is made later, with the installed runner's own code: provision's board check
        # would (rightly) refuse a SQLite file that does not exist yet
        extra = {'worker_runner_board': {'kind': 'ledger', 'path': ledger}, 'worker_runner_check_board': False}
    # the master exists before the role runs, so the runner's origin can be owned by it (git refuses
    # a repository owned by another user: "dubious ownership"); production sources are URLs
    bed.ssh(host, 'id %s >/dev/null 2>&1 || sudo useradd --create-home --shell /bin/bash %s' % (master, master))
    tarball, head = _bare_repo_tarball()
    bed.ssh(host, 'sudo -u %s mkdir -p %s/src && base64 -d | sudo -u %s tar -C %s/src -xzf -' % (master, home, master, home),
            input=tarball)
    bed.ssh(host, 'sudo tee /usr/local/lib/fake_agent.py >/dev/null && sudo chmod 0644 /usr/local/lib/fake_agent.py',
            input=FAKE_AGENT.read_text())
    tmp = tmp_path_factory.mktemp('runner-units')
    playbook = tmp / 'install-runner.yml'
    playbook.write_text(PLAYBOOK)
    role_vars = dict({
        'worker_masters': [{'name': master}],
        'worker_packages_install': False,
        'worker_runner_install': True,
        'worker_runner_source': home + '/src/fleet-dispatch.git', 'worker_runner_pin': PIN,
        'worker_runner_version': VERSION,
        'worker_runner_agent_command': ['/usr/bin/python3', '/usr/local/lib/fake_agent.py'],
    }, **extra)
    proc = bed.playbook(playbook, limit=host, extra_vars=role_vars)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert 'FLEET_BOARD_DSN' not in proc.stdout and 'fleet:fleet@' not in proc.stdout   # never logged
    path = bed.ssh(host, 'cat %s/.config/fleet-dispatch/path' % home, user=master).stdout.strip()

    class Worker(object):
        pass

    w = Worker()
    w.bed, w.host, w.path, w.backend, w.master, w.home = bed, host, path, backend, master, home
    w.board = local_board if backend == 'postgres' else None     # the controller's view of a PostgreSQL ledger
    w.install = lambda: bed.playbook(playbook, limit=host, extra_vars=role_vars)
    w.source = home + '/src/fleet-dispatch.git'
    w.head = head
    w.code = root + '/ansible_collections/fleet/dispatch'
    w.state = home + '/.local/state/fleet-dispatch'

    def py(code):
        '''Python on the worker as the master, with the installed collection on the path.'''
        return bed.ssh(host, "PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF" % (root, code), user=master).stdout

    def create(numbers):
        if backend == 'postgres':
            for number in numbers:
                local_board.upsert_item(number=number, title='item %d' % number, body='Make item %d work' % number, status='Ready')
        else:
            py(CREATE % {'ledger': ledger, 'numbers': list(numbers)})

    def reopen(number):
        if backend == 'postgres':
            local_board.upsert_item(number=number, state='reopened')
        else:
            py('from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard\n'
               'b = LedgerBoard(path=%r)\nb.upsert_item(number=%d, state="reopened")\nb.close()' % (ledger, number))

    def read(numbers):
        if backend == 'postgres':
            import datetime as _dt
            now = _dt.datetime.now(_dt.timezone.utc)
            return json.loads(json.dumps(dict((str(n), summary(local_board, n, now)) for n in numbers)))
        return json.loads(py(READ_BACK % {'ledger': ledger, 'numbers': list(numbers), 'summary': SUMMARY_EXPR}))

    def assess_item(number, item_tokens, field=None):
        '''The item as the dispatcher assesses it, with an item budget of ``item_tokens``; ``field``: set its budget field first.'''
        if backend == 'postgres':
            import datetime as _dt
            from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.item_budget import item_budget
            from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess
            if field is not None:
                local_board.upsert_item(number=number, budget=field)
            got = assess([local_board.get(number)], now=_dt.datetime.now(_dt.timezone.utc), item_budget=item_budget(item_tokens, 0))
            return json.loads(json.dumps(got[0]))
        return json.loads(py(ASSESS % {'ledger': ledger, 'number': number, 'tokens': item_tokens, 'field': field}))

    def launch(runs, runner_version=VERSION, args=()):
        '''``runs``: list of (number, mode, extra setenv). One launch call for all of them; ``args`` after the runner's.'''
        items = []
        for number, mode, more in runs:
            setenv = dict({'FAKE_AGENT_MODE': mode, 'FAKE_AGENT_PIDFILE': '%s/agent-%d.pid' % (home, number),
                           'FAKE_AGENT_LOG': '%s/agent.log' % home}, **more)
            items.append({'number': number, 'command': ['fleet-runner', '--item', str(number)] + list(args), 'workdir': home,
                          'setenv': setenv})
        res = bed.ansible(host, 'fleet.dispatch.launch', {
            'items': items, 'path': path, 'environment_file': home + '/.config/fleet-dispatch/credentials.env',
            'runner_version': runner_version}, become_user=master)
        return res[host]

    def wait_terminal(numbers, count=2):
        deadline = time.monotonic() + WAIT
        while True:
            data = read(numbers)
            if all(len(d['kinds']) >= count and d['kinds'][-1] != 'start' for d in data.values()):
                return data
            if time.monotonic() > deadline:
                raise AssertionError('no close-out within %ss: %s' % (WAIT, data))
            time.sleep(0.5)

    def wait_agent(number):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            out = bed.ssh(host, 'cat %s/agent-%d.pid 2>/dev/null || true' % (home, number), user=master).stdout.strip()
            if out:
                return int(out)
            time.sleep(0.3)
        raise AssertionError('the agent of item %d never started' % number)

    def capacity():
        out = bed.ssh(host, 'cat %s/capacity.json 2>/dev/null || echo MISSING' % w.state, user=master).stdout.strip()
        return None if out == 'MISSING' else json.loads(out)

    def unit_gone(number):
        state = None
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            state = bed.ssh(host, 'systemctl --user is-active task-%d || true' % number, user=master).stdout.strip()
            if state in ('inactive', 'failed', 'unknown'):
                return state
            time.sleep(0.3)
        raise AssertionError('task-%d still %s' % (number, state))

    def notified(units):
        """Wait until the notifier recorded each of ``units``; returns every unit in failures.log."""
        deadline = time.monotonic() + WAIT
        while True:
            text = bed.ssh(host, 'cat %s/failures.log 2>/dev/null || true' % w.state, user=master).stdout
            seen = [word[len('unit='):-len('.service')] for line in text.splitlines() for word in line.split()
                    if word.startswith('unit=task-')]
            if all(u in seen for u in units):
                return seen
            if time.monotonic() > deadline:
                raise AssertionError('the notifier did not record %s within %ss: %r' % (units, WAIT, text))
            time.sleep(0.5)

    def never_notified(unit):
        """The notifier instance for ``unit`` was never started and none is queued (asked of systemd)."""
        out = bed.ssh(host, 'systemctl --user show -p InactiveExitTimestampMonotonic --value fleet-notify@%s.service; '
                            'systemctl --user list-jobs --no-legend' % unit, user=master).stdout
        lines = out.splitlines()
        return lines[0].strip() in ('0', '') and 'fleet-notify@%s' % unit not in out

    def ssh(cmd, user=None, check=True):
        return bed.ssh(host, cmd, user=user or master, check=check)

    w.assess_item = assess_item
    w.create, w.reopen, w.read, w.launch, w.wait_terminal, w.wait_agent = create, reopen, read, launch, wait_terminal, wait_agent
    w.capacity, w.unit_gone, w.ssh, w.notified, w.never_notified = capacity, unit_gone, ssh, notified, never_notified
    try:
        yield w
    finally:
        for step in cleanup:
            try:
                step()
            except Exception:  # noqa: BLE001 - best effort teardown
                pass


# number, mode, terminal marker, item state, eligibility reason, attempts
CONCURRENT = [
    (11, 'merge', 'success', 'closed', 'done', 1),
    (12, 'noisy', 'success', 'closed', 'done', 1),
    (13, 'claim', 'noop', 'open', 'eligible', 1),
    (14, 'fail', 'failure', 'open', 'eligible', 1),
    (15, 'die503', 'retry', 'open', 'retry_wait', 0),
]


def test_the_installed_runner_is_the_collection_checkout(worker):
    # by its full path: a non-interactive ssh's PATH lacks ~/.local/bin (D3); the units get it from launch
    out = worker.ssh('%s/.local/bin/fleet-runner --version && git -C %s rev-parse HEAD' % (worker.home, worker.code)).stdout.splitlines()
    assert json.loads(out[0])['version'] == VERSION
    assert out[1].strip() == worker.head


def test_each_behaviour_in_a_real_unit_ends_with_its_marker(worker):
    numbers = [c[0] for c in CONCURRENT]
    worker.create(numbers)
    res = worker.launch([(n, mode, {}) for n, mode, *_rest in CONCURRENT])
    assert not res.get('failed'), res
    assert sorted(res['launched']) == sorted('task-%d' % n for n in numbers)
    data = worker.wait_terminal(numbers)
    for number, mode, kind, state, reason, attempts in CONCURRENT:
        got = data[str(number)]
        assert got['kinds'] == ['start', kind], (mode, got)
        assert (got['state'], got['reason'], got['attempts']) == (state, reason, attempts), (mode, got)
        assert got['fields'][0]['unit'] == 'task-%d' % number and got['fields'][0]['master'] == worker.master
        assert got['fields'][-1]['runner_version'] == VERSION
    assert data['15']['fields'][-1]['delay_s'] == 30 and data['15']['fields'][-1]['step'] == 1
    assert worker.capacity() is None
    # the dispatcher's expected version reached the run (its close-outs name it, above); no FLEET_* name of
    # the runner's environment reaches the agent, only the run's own facts
    log = [json.loads(line) for line in worker.ssh('cat %s/agent.log' % worker.home).stdout.splitlines()]
    assert log and {e['env'].get('FLEET_RUNNER_EXPECTED_VERSION') for e in log} == {None}
    assert all(e['env'].get('FLEET_ITEM') for e in log), log
    # D14: the notifier (roles/worker's, OnFailure=) fires for the no-op and the failure, never for
    # a success or a scheduled retry (launch's success_exit_status: the mechanism working)
    notified = worker.notified(['task-13', 'task-14'])
    for number in (11, 12, 15):
        worker.unit_gone(number)
        assert worker.never_notified('task-%d' % number), (number, notified)
    assert sorted(notified) == ['task-13', 'task-14'], notified


def test_capacity_in_a_real_unit_then_the_next_clean_run_deletes_it(worker):
    worker.create([21, 22, 23])
    assert not worker.launch([(21, 'ratelimit', {'FAKE_AGENT_RESET': '2099-01-01T00:00:00Z'})]).get('failed')
    data = worker.wait_terminal([21])['21']
    assert data['kinds'] == ['start', 'capacity'] and data['attempts'] == 0 and data['reason'] == 'eligible'
    state = worker.capacity()
    assert state['source'] == 'rate_limit' and state['reset_at'] == '2099-01-01T00:00:00.000000Z' and state['unit'] == 'task-21'

    assert not worker.launch([(22, 'revoked', {})]).get('failed')
    data = worker.wait_terminal([22])['22']
    assert data['kinds'] == ['start', 'capacity'] and data['attempts'] == 0
    state = worker.capacity()
    assert state['source'] == 'revoked' and state['reset_at'] is None

    assert not worker.launch([(23, 'claim', {})]).get('failed')
    assert worker.wait_terminal([23])['23']['kinds'] == ['start', 'noop']
    assert worker.capacity() is None                      # the next clean run deleted it (D8)
    # a provider limit is not announced (D14); the no-op after it is
    assert 'task-23' in worker.notified(['task-23'])
    assert worker.never_notified('task-21') and worker.never_notified('task-22')


def test_systemctl_stop_mid_run_posts_stopped(worker):
    worker.create([31])
    assert not worker.launch([(31, 'hang', {})]).get('failed')
    agent = worker.wait_agent(31)
    assert worker.read([31])['31']['kinds'] == ['start']
    worker.ssh('systemctl --user stop task-31')
    data = worker.read([31])['31']
    assert data['kinds'] == ['start', 'stopped'] and data['fields'][-1]['signal'] == 'SIGTERM'
    assert data['reason'] == 'eligible' and data['attempts'] == 1
    assert worker.ssh('kill -0 %d 2>/dev/null && echo alive || echo gone' % agent).stdout.strip() == 'gone'


def test_sigkill_leaves_the_start_marker_as_the_last_word(worker):
    worker.create([32])
    assert not worker.launch([(32, 'hang', {})]).get('failed')
    worker.wait_agent(32)
    worker.ssh('systemctl --user kill --signal=SIGKILL task-32')
    worker.unit_gone(32)
    data = worker.read([32])['32']
    assert data['kinds'] == ['start'] and data['reason'] == 'running'     # what the reaper looks for (D14)


def test_a_run_that_merged_nothing_is_not_credited_with_an_older_merge(worker):
    worker.create([41])
    assert not worker.launch([(41, 'merge', {})]).get('failed')
    assert worker.wait_terminal([41])['41']['kinds'] == ['start', 'success']
    worker.reopen(41)
    assert not worker.launch([(41, 'claim', {})]).get('failed')
    data = worker.wait_terminal([41], count=4)['41']
    assert data['kinds'] == ['start', 'success', 'start', 'noop'] and data['state'] == 'open'


@pytest.mark.parametrize('offset, mode, kinds, state', [
    ('-600', 'claim', ['start', 'noop'], 'open'),        # behind: a merge 5 min before the run is not its work
    ('+600', 'merge', ['start', 'success'], 'closed'),   # ahead: the run's own merge is still after its start
], ids=['runner-10min-behind', 'runner-10min-ahead'])
def test_a_runner_clock_ten_minutes_off_neither_credits_an_old_merge_nor_misses_its_own(worker, offset, mode, kinds, state):
    """D16 on a drifting worker: the run is dated by the board (the start marker's time as the ledger stamped it, the
    database's clock), never by the worker's. The runner runs under libfaketime 10 minutes off the database's clock.
    Behind, it once credited a change merged 5 minutes before the run ("merged after this run started"); ahead, it
    missed the change its own agent merged."""
    import datetime as _dt
    import re
    if worker.backend != 'postgres':
        pytest.skip("a SQLite ledger on the worker is stamped by the worker's own clock: there is no board clock to differ")
    bed, host = worker.bed, worker.host
    bed.ssh(host, 'dpkg -s libfaketime >/dev/null 2>&1 || (sudo apt-get update -qq && '
                  'sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfaketime >/dev/null)', timeout=600)
    lib = bed.ssh(host, "dpkg -L libfaketime | grep '/libfaketime.so.1$'").stdout.split()[0]
    # the library works here: a date under it is off by the offset
    skewed = bed.ssh(host, 'LD_PRELOAD=%s FAKETIME=%s date +%%s; date +%%s' % (lib, offset)).stdout.split()
    assert abs(int(skewed[0]) - int(skewed[1]) - int(offset)) < 30, skewed
    n = 63 if offset.startswith('-') else 64
    worker.create([n])
    if mode == 'claim':
        # a change merged 5 minutes before the run closes the item; a human reopens it; the run merges nothing
        then = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(minutes=5)
        worker.board.add_artifact('old-pr/%d' % n, created_at=then, merged=True, merged_at=then, closes=[n], title='an older fix')
        worker.reopen(n)
    skew = {'LD_PRELOAD': lib, 'FAKETIME': offset, 'FAKETIME_DONT_FAKE_MONOTONIC': '1'}
    assert not worker.launch([(n, mode, skew)]).get('failed')
    data = worker.wait_terminal([n])[str(n)]
    assert data['kinds'] == kinds and data['state'] == state, data
    # the runner said how far its clock is from the board's
    journal = bed.ssh(host, 'sudo journalctl --no-pager -o cat _SYSTEMD_USER_UNIT=task-%d.service || true' % n).stdout
    said = r"this worker's clock is (\d+) s %s the board's" % ('behind' if offset.startswith('-') else 'ahead of')
    found = re.search(said, journal)
    assert found and abs(int(found.group(1)) - 600) < 60, journal[-2000:]


def test_launch_refuses_a_stale_runner_naming_both_versions(worker):
    res = worker.launch([(51, 'claim', {})], runner_version='0.0.0-expected')
    assert res.get('failed') and 'reports version %s' % VERSION in res['msg'] and 'expects 0.0.0-expected' in res['msg']
    assert worker.ssh('systemctl --user is-active task-51 || true').stdout.strip() in ('inactive', 'unknown')


def test_a_new_commit_on_origin_is_pulled_verified_and_re_executed_in_the_unit(worker):
    """D11 inside a real unit: the maintainers move the pinned tag; the runner fetches it, moves, verifies, execs once."""
    new = worker.ssh(
        'set -e; rm -rf ~/side; git clone -q %s ~/side; cd ~/side; echo doctrine > NEWS-runner-test.txt; '
        'git add .; git -c user.name=t -c user.email=t@example.invalid commit -qm "new doctrine"; '
        'git tag -f %s; git push -q -f origin HEAD:main refs/tags/%s; git rev-parse HEAD'
        % (worker.source, PIN, PIN)).stdout.strip().splitlines()[-1]
    worker.create([61])
    assert not worker.launch([(61, 'claim', {})]).get('failed')
    assert worker.wait_terminal([61])['61']['kinds'] == ['start', 'noop']
    assert worker.ssh('git -C %s rev-parse HEAD' % worker.code).stdout.strip() == new
    uid = worker.ssh('id -u').stdout.strip()
    journal = worker.ssh('sudo journalctl --no-pager -o cat _SYSTEMD_USER_UNIT=task-61.service _UID=%s' % uid, user='tester').stdout
    assert journal.count('re-executing once') == 1, journal


def test_the_role_converges_unchanged_after_the_runner_updated_itself(worker):
    """Idempotence after a self-update (runs after the test above): the checkout is already at the pinned tag."""
    proc = worker.install()
    assert proc.returncode == 0, proc.stdout[-4000:]
    recap = [line for line in proc.stdout.splitlines() if line.startswith(worker.host)]
    assert recap and 'changed=0' in recap[-1], proc.stdout[-4000:]


def test_a_runner_that_cannot_update_darkens_its_master_until_the_role_reinstalls_it(worker):
    """D11 + D8 in a real unit: the fetch fails, so the run refuses to start on stale code (exit 3, no
    marker, the notifier fires) and the master goes dark (update_failed) -- the dispatcher's
    capacity_info says so and names the remedy; the worker role's verified reinstall clears it."""
    moved = worker.source + '.moved'
    worker.ssh('mv %s %s' % (worker.source, moved))
    try:
        worker.create([71])
        assert not worker.launch([(71, 'merge', {})]).get('failed')
        worker.unit_gone(71)
        assert worker.read([71])['71']['kinds'] == []                           # nothing posted (D20)
        state = worker.capacity()
        assert state and state['source'] == 'update_failed' and state['unit'] == 'task-71', state
        assert 'task-71' in worker.notified(['task-71'])                       # exit 3 is announced
        dark = worker.bed.ansible(worker.host, 'fleet.dispatch.capacity_info', {'units': False}, become_user=worker.master)
        info = dark[worker.host]
        assert info['dark'] is True and info['source'] == 'update_failed' and 'fleet.dispatch.worker' in info['why'], info
    finally:
        worker.ssh('mv %s %s' % (moved, worker.source))
    proc = worker.install()
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert 'Clear a self-update failure' in proc.stdout and worker.capacity() is None
    info = worker.bed.ansible(worker.host, 'fleet.dispatch.capacity_info', {'units': False}, become_user=worker.master)[worker.host]
    assert info['dark'] is False, info


# Real outputs from the agent-output corpus (tests/corpus/agent_outputs), replayed by the fake agent in a
# real unit under each agent profile: item, profile, sample, merge first, the agent's exit status,
# the close-out marker, the capacity source it leaves (None: no capacity file).
REPLAYS = [
    (91, 'codex', 'codex-exec-jsonl-success-tail-1', True, 0, 'success', None),
    (92, 'claude', 'claude-oauth-expired-1', False, 1, 'capacity', 'revoked'),
    (93, 'gemini', 'gemini-per-day-billing-wording-1', False, 1, 'capacity', 'rate_limit'),
]


def _corpus_text(sample_id):
    from corpus_samples import corpus_text
    return corpus_text(sample_id)


SET_AGENT = '''
import json, os
path = os.path.expanduser('~/.config/fleet-dispatch/runner.json')
with open(path) as handle:
    conf = json.load(handle)
conf['agent'] = %r
with open(path + '.tmp', 'w') as handle:
    json.dump(conf, handle)
os.replace(path + '.tmp', path)
'''


def test_real_agent_outputs_replayed_in_real_units_end_with_the_right_marker(worker):
    """The runner on a worker reads a codex success, a claude expired OAuth token and a gemini per-day
    quota, as their users pasted them, through the profile the master is configured with."""
    worker.ssh('cp ~/.config/fleet-dispatch/runner.json ~/.config/fleet-dispatch/runner.json.orig')
    # each profile runs its CLI by name from the run's PATH: here that name is the fake agent
    for cli in ('codex', 'claude', 'gemini'):
        worker.ssh("printf '#!/bin/sh\\nexec /usr/bin/python3 /usr/local/lib/fake_agent.py \"$@\"\\n' > ~/.local/bin/%s && "
                   "chmod 0755 ~/.local/bin/%s" % (cli, cli))
    try:
        for number, agent, sample, merge, code, kind, source in REPLAYS:
            worker.ssh('rm -f %s/capacity.json' % worker.state)
            worker.ssh("python3 - <<'PYEOF'\n%s\nPYEOF" % (SET_AGENT % agent))
            worker.ssh("cat > ~/replay-%d.txt <<'FLEETREPLAYEOF'\n%s\nFLEETREPLAYEOF" % (number, _corpus_text(sample).rstrip('\n')))
            worker.create([number])
            res = worker.launch([(number, 'replay', {'FAKE_AGENT_REPLAY': '%s/replay-%d.txt' % (worker.home, number),
                                                     'FAKE_AGENT_REPLAY_MERGE': '1' if merge else '0',
                                                     'FAKE_AGENT_EXIT': str(code)})])
            assert not res.get('failed'), res
            data = worker.wait_terminal([number])[str(number)]
            if data['kinds'] != ['start', kind]:
                why = worker.ssh('cat ~/.config/fleet-dispatch/runner.json; ls -la %s/runs/task-%d/; tail -c 3000 %s/runs/task-%d/capture.log; '
                                 'journalctl --user -u task-%d --no-pager | tail -40' % (worker.state, number, worker.state, number, number),
                                 check=False).stdout
                raise AssertionError('%s: %s\n%s' % (sample, data, why))
            state = worker.capacity()
            assert (state or {}).get('source') == source, (sample, state)
            # the operator's question of the same capture, on the worker, through the installed wrapper
            asked = worker.ssh('~/.local/bin/fleet-runner classify --agent %s %s/runs/task-%d/capture.log' % (agent, worker.state, number),
                               check=False)
            assert asked.returncode == 0, asked.stdout + asked.stderr
            answer = json.loads(asked.stdout)
            assert answer['profile'] == agent and answer['kind'] == (source or 'success'), answer
    finally:
        worker.ssh('mv ~/.config/fleet-dispatch/runner.json.orig ~/.config/fleet-dispatch/runner.json; rm -f %s/capacity.json '
                   '~/.local/bin/codex ~/.local/bin/claude ~/.local/bin/gemini' % worker.state)


def test_a_hand_stop_through_run_stop_is_stopped_by_whom_never_a_failure(worker):
    """fleet.dispatch.run_stop (issue 15): check mode stops nothing; for real it notes the stop as deliberate,
    the runner posts `stopped` with reason operator, by and why, no failure, and the notifier is not started."""
    worker.create([35])
    assert not worker.launch([(35, 'hang', {})]).get('failed')
    worker.wait_agent(35)
    res = worker.bed.ansible(worker.host, 'fleet.dispatch.run_stop', {'unit': 'task-35', 'by': 'alice', 'why': 'wrong brief'},
                             become_user=worker.master, check=True)[worker.host]
    assert res.get('changed') is True and not res.get('failed'), res
    assert worker.ssh('systemctl --user is-active task-35 || true').stdout.strip() == 'active'
    res = worker.bed.ansible(worker.host, 'fleet.dispatch.run_stop', {'unit': 'task-35', 'by': 'alice', 'why': 'wrong brief'},
                             become_user=worker.master)[worker.host]
    assert res.get('changed') is True and res['stopped'] and res['invocation_id'], res
    worker.unit_gone(35)
    data = worker.wait_terminal([35])['35']
    assert data['kinds'] == ['start', 'stopped'], data
    assert data['fields'][-1]['reason'] == 'operator' and data['fields'][-1]['by'] == 'alice'
    assert data['fields'][-1]['why'] == 'wrong brief'
    assert worker.never_notified('task-35')
    res = worker.bed.ansible(worker.host, 'fleet.dispatch.run_stop', {'unit': 'task-35'}, become_user=worker.master)[worker.host]
    assert res.get('changed') is False and 'not live' in res['msg'], res


BUDGET_CONFIG = r'''
import json, os
here = os.path.expanduser('~/.config/fleet-dispatch/')
conf = json.load(open(here + 'runner.json'))
conf['budget'] = {'tokens': 400}
fd = os.open(here + 'runner-budget.json', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, json.dumps(conf).encode())
os.close(fd)
'''


def test_a_run_over_its_budget_is_stopped_in_a_real_unit_that_does_not_fail(worker):
    """The fake agent streams Claude Code stream-json usage (150 tokens a response) and would go on for ever after
    its fifth response: the installed runner, with the role's runner config plus a 400-token budget, stops it at the
    third, posts the budget marker once, and exits 15 -- which launch's success_exit_status keeps from failing the
    unit, so the notifier never fires (D14). The item's next attempt is held to what is left of its item budget, and
    the item is then held (budget_spent) until its budget field raises it."""
    number = 37      # an item number no other test of the module uses
    worker.create([number])
    worker.ssh("python3 - <<'PYEOF'\n%s\nPYEOF" % BUDGET_CONFIG)
    res = worker.launch([(number, 'spend', {'FAKE_AGENT_HANG_AFTER': '5'})],
                        args=['--config', worker.home + '/.config/fleet-dispatch/runner-budget.json'])
    assert not res.get('failed') and res['launched'] == ['task-%d' % number], res
    got = worker.wait_terminal([number])[str(number)]
    assert got['kinds'] == ['start', 'budget'], got
    assert (got['state'], got['reason'], got['attempts']) == ('open', 'eligible', 1), got
    stop = got['fields'][-1]
    assert (stop['limit'], stop['budget'], stop['spend_at_stop'], stop['exit_code']) == ('tokens', {'tokens': 400}, {'tokens': 450}, -15)
    assert got['fields'][0]['budget'] == {'tokens': 400}
    worker.unit_gone(number)
    assert worker.never_notified('task-%d' % number)
    record = json.loads(worker.ssh('cat %s/runs/task-%d/closeout.json' % (worker.state, number)).stdout)
    assert (record['kind'], record['exit_code']) == ('budget', 15)
    # the next attempt, as the dispatcher launches it with an item budget 250 tokens above what the first run stated
    # in its close-out (all the usage its capture holds: the fake agent printed its five responses at once): what is
    # left (250) goes to the run in its launch environment, so the runner holds it to 250, below its own 400 --
    # stopped at its second usage event (300)
    first = got['fields'][-1]['tokens']
    assert first >= 450, got['fields'][-1]
    cap = first + 250
    entry = worker.assess_item(number, cap)
    assert (entry['reason'], entry['spend']['tokens'], entry['budget_left']) == ('eligible', first, {'tokens': 250}), entry
    launch = batches([dict(entry, unit='task-%d' % number, worker=worker.host, master=worker.master)],
                     command=['fleet-runner'])['batches'][0]['launch'][0]['setenv']
    share = dict((k, v) for k, v in launch.items() if k.startswith('FLEET_ITEM_BUDGET_'))
    assert share == {'FLEET_ITEM_BUDGET_TOKENS': '250'}, launch
    res = worker.launch([(number, 'spend', dict(share, FAKE_AGENT_HANG_AFTER='5'))],
                        args=['--config', worker.home + '/.config/fleet-dispatch/runner-budget.json'])
    assert not res.get('failed'), res
    got = worker.wait_terminal([number], count=4)[str(number)]
    assert got['kinds'] == ['start', 'budget', 'start', 'budget'], got
    stop = got['fields'][-1]
    assert (stop['limit'], stop['budget'], stop['spend_at_stop']) == ('tokens', {'tokens': 250}, {'tokens': 300}), stop
    worker.unit_gone(number)
    # its runs stated more than its item budget: held with its own reason (not parked) until a human raises the
    # budget -- here with its budget field
    entry = worker.assess_item(number, cap)
    assert (entry['reason'], entry['attempts'], entry['spend']['tokens']) == ('budget_spent', 2, first + stop['tokens']), entry
    assert 'reached its item budget of %d tokens' % cap in entry['budget_spent']
    entry = worker.assess_item(number, cap, field='%d' % (cap * 10))
    assert (entry['reason'], entry['item_budget']) == ('eligible', {'tokens': cap * 10}), entry
    assert entry['budget_left'] == {'tokens': cap * 10 - first - stop['tokens']}, entry
