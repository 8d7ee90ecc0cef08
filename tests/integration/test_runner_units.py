# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner inside real ``task-<item>`` units on a test-bed worker (D2, D7, D8, D11, D12, D16).

The worker role installs the runner for a master from a git repository of this checkout's HEAD
(placed on the worker); ``fleet.dispatch.launch`` starts real ``systemd-run --user`` units whose
program is the installed ``fleet-runner``, driving the fake agent CLI; the board is a SQLite
ledger on the worker, read back there with the installed (shipped) decision core.

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
import subprocess
import tarfile
import tempfile
import time

import pytest

pytestmark = pytest.mark.testbed

REPO = pathlib.Path(__file__).resolve().parents[2]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
MASTER = 'frun1'
HOME = '/home/' + MASTER
SOURCE = HOME + '/src/fleet-dispatch.git'
ROOT = HOME + '/.local/share/fleet-dispatch/runner'
CODE = ROOT + '/ansible_collections/fleet/dispatch'
STATE = HOME + '/.local/state/fleet-dispatch'
LEDGER = HOME + '/ledger.sqlite3'
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
from ansible_collections.fleet.dispatch.plugins.module_utils._ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._markers import markers_of
board = LedgerBoard(path=%(ledger)r)
out = {}
now = datetime.datetime.now(datetime.timezone.utc)
for number in %(numbers)r:
    item = board.get(number)
    verdict = evaluate(item, now=now)
    markers = markers_of(item)
    out[str(number)] = {'kinds': [m.kind for m in markers], 'state': item.state, 'reason': verdict.reason,
                        'attempts': verdict.attempts, 'fields': [m.fields for m in markers]}
print(json.dumps(out))
'''

CREATE = r'''
from ansible_collections.fleet.dispatch.plugins.module_utils._ledger import LedgerBoard
board = LedgerBoard(path=%(ledger)r, create=True)
for number in %(numbers)r:
    board.upsert_item(number=number, title='item %%d' %% number, body='Make item %%d work' %% number, status='Ready')
board.close()
'''


def _py(bed, host, code):
    """Run Python on the worker as the master, with the installed collection on the path."""
    cmd = "PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF" % (ROOT, code)
    return bed.ssh(host, cmd, user=MASTER).stdout


def _bare_repo_tarball():
    """A bare clone of this checkout's HEAD as a base64 tar.gz (the runner's 'origin')."""
    with tempfile.TemporaryDirectory() as tmp:
        bare = pathlib.Path(tmp) / 'fleet-dispatch.git'
        subprocess.run(['git', 'clone', '-q', '--bare', '--no-local', str(REPO), str(bare)], check=True)
        subprocess.run(['git', '-C', str(bare), 'branch', '-f', 'main', 'HEAD'], check=False)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w:gz') as tar:
            tar.add(str(bare), arcname='fleet-dispatch.git')
        return base64.b64encode(buf.getvalue()).decode()


@pytest.fixture(scope='module')
def worker(bed, tmp_path_factory):
    host = bed.hosts[0]
    # the master exists before the role runs, so the runner's origin can be owned by it (git refuses
    # a repository owned by another user: "dubious ownership"); production sources are URLs
    bed.ssh(host, 'id %s >/dev/null 2>&1 || sudo useradd --create-home --shell /bin/bash %s' % (MASTER, MASTER))
    bed.ssh(host, 'sudo -u %s mkdir -p %s/src && base64 -d | sudo -u %s tar -C %s/src -xzf -' % (MASTER, HOME, MASTER, HOME),
            input=_bare_repo_tarball())
    bed.ssh(host, 'sudo tee /usr/local/bin/fake-agent >/dev/null && sudo chmod 0755 /usr/local/bin/fake-agent',
            input=FAKE_AGENT.read_text())
    tmp = tmp_path_factory.mktemp('runner-units')
    playbook = tmp / 'install-runner.yml'
    playbook.write_text(PLAYBOOK)
    proc = bed.playbook(playbook, limit=host, extra_vars={
        'worker_masters': [{'name': MASTER}],
        'worker_packages_install': False,
        'worker_runner_install': True,
        'worker_runner_source': SOURCE,
        'worker_runner_version': VERSION,
        'worker_runner_agent_command': ['/usr/local/bin/fake-agent'],
        'worker_runner_board': {'kind': 'ledger', 'path': LEDGER},
    })
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    path = bed.ssh(host, 'cat %s/.config/fleet-dispatch/path' % HOME, user=MASTER).stdout.strip()

    class Worker(object):
        pass

    w = Worker()
    w.bed, w.host, w.path = bed, host, path

    def create(numbers):
        _py(bed, host, CREATE % {'ledger': LEDGER, 'numbers': list(numbers)})

    def read(numbers):
        return json.loads(_py(bed, host, READ_BACK % {'ledger': LEDGER, 'numbers': list(numbers)}))

    def launch(runs, runner_version=VERSION):
        """``runs``: list of (number, mode, extra setenv). One launch call for all of them."""
        items = []
        for number, mode, extra in runs:
            setenv = dict({'FAKE_AGENT_MODE': mode, 'FAKE_AGENT_PIDFILE': '%s/agent-%d.pid' % (HOME, number),
                           'FAKE_AGENT_LOG': '%s/agent.log' % HOME}, **extra)
            items.append({'number': number, 'command': ['fleet-runner', '--item', str(number)], 'workdir': HOME,
                          'setenv': setenv})
        res = bed.ansible(host, 'fleet.dispatch.launch', {
            'items': items, 'path': path, 'environment_file': HOME + '/.config/fleet-dispatch/credentials.env',
            'runner_version': runner_version}, become_user=MASTER)
        return res[host]

    def wait_terminal(numbers):
        deadline = time.monotonic() + WAIT
        while True:
            data = read(numbers)
            if all(d['kinds'] and d['kinds'][-1] != 'start' for d in data.values()):
                return data
            if time.monotonic() > deadline:
                raise AssertionError('no close-out within %ss: %s' % (WAIT, data))
            time.sleep(0.5)

    def wait_agent(number):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            out = bed.ssh(host, 'cat %s/agent-%d.pid 2>/dev/null || true' % (HOME, number), user=MASTER).stdout.strip()
            if out:
                return int(out)
            time.sleep(0.3)
        raise AssertionError('the agent of item %d never started' % number)

    def capacity():
        out = bed.ssh(host, 'cat %s/capacity.json 2>/dev/null || echo MISSING' % STATE, user=MASTER).stdout.strip()
        return None if out == 'MISSING' else json.loads(out)

    def unit_gone(number):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            state = bed.ssh(host, 'systemctl --user is-active task-%d || true' % number, user=MASTER).stdout.strip()
            if state in ('inactive', 'failed', 'unknown'):
                return state
            time.sleep(0.3)
        raise AssertionError('task-%d still %s' % (number, state))

    def ssh(cmd, user=MASTER, check=True):
        return bed.ssh(host, cmd, user=user, check=check)

    w.create, w.read, w.launch, w.wait_terminal, w.wait_agent = create, read, launch, wait_terminal, wait_agent
    w.capacity, w.unit_gone, w.ssh = capacity, unit_gone, ssh
    return w


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
    out = worker.ssh('%s/.local/bin/fleet-runner --version && git -C %s rev-parse HEAD' % (HOME, CODE)).stdout.splitlines()
    assert json.loads(out[0])['version'] == VERSION
    assert out[1].strip() == subprocess.run(['git', '-C', str(REPO), 'rev-parse', 'HEAD'], capture_output=True, text=True,
                                            check=True).stdout.strip()


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
        assert got['fields'][0]['unit'] == 'task-%d' % number and got['fields'][0]['master'] == MASTER
        assert got['fields'][-1]['runner_version'] == VERSION
    assert data['15']['fields'][-1]['delay_s'] == 30 and data['15']['fields'][-1]['step'] == 1
    assert worker.capacity() is None
    # the dispatcher's expected version reached the run (and the agent)
    log = [json.loads(line) for line in worker.ssh('cat %s/agent.log' % HOME).stdout.splitlines()]
    assert {e['env'].get('FLEET_RUNNER_EXPECTED_VERSION') for e in log} == {VERSION}


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
    _py(worker.bed, worker.host, 'from ansible_collections.fleet.dispatch.plugins.module_utils._ledger import LedgerBoard\n'
        'b = LedgerBoard(path=%r)\nb.upsert_item(number=41, state="reopened")\nb.close()' % LEDGER)
    assert not worker.launch([(41, 'claim', {})]).get('failed')
    deadline = time.monotonic() + WAIT
    while True:
        data = worker.read([41])['41']
        if len(data['kinds']) == 4 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert data['kinds'] == ['start', 'success', 'start', 'noop'] and data['state'] == 'open'


def test_launch_refuses_a_stale_runner_naming_both_versions(worker):
    res = worker.launch([(51, 'claim', {})], runner_version='0.0.0-expected')
    assert res.get('failed') and 'reports version %s' % VERSION in res['msg'] and 'expects 0.0.0-expected' in res['msg']
    assert worker.ssh('systemctl --user is-active task-51 || true').stdout.strip() in ('inactive', 'unknown')


def test_a_new_commit_on_origin_is_pulled_verified_and_re_executed_in_the_unit(worker):
    """D11 inside a real unit: the runner fetches its origin, moves, verifies, execs once."""
    new = worker.ssh(
        'set -e; rm -rf /tmp/side; git clone -q %s /tmp/side; cd /tmp/side; echo doctrine > NEWS-runner-test.txt; '
        'git add .; git -c user.name=t -c user.email=t@example.invalid commit -qm "new doctrine"; '
        'git push -q origin HEAD:main; git rev-parse HEAD' % SOURCE).stdout.strip().splitlines()[-1]
    worker.create([61])
    assert not worker.launch([(61, 'claim', {})]).get('failed')
    assert worker.wait_terminal([61])['61']['kinds'] == ['start', 'noop']
    assert worker.ssh('git -C %s rev-parse HEAD' % CODE).stdout.strip() == new
    journal = worker.ssh('sudo journalctl --no-pager -o cat _SYSTEMD_USER_UNIT=task-61.service', user='tester').stdout
    assert journal.count('re-executing once') == 1, journal
