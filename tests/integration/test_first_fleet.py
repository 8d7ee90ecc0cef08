# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guide "Your first fleet" (docs/first-fleet.md, linked from the README's first screen), run as
written on three test-bed hosts: a PostgreSQL ledger and two workers.

The files and commands are parsed from the guide's section between ``<!-- first-fleet:begin -->`` and
``<!-- first-fleet:end -->`` (``<!-- first-fleet:file NAME -->`` before a fenced block writes NAME,
``<!-- first-fleet:run -->`` before a ``bash`` block runs each line), in an empty directory, verbatim but for
the values the guide's own table (``<!-- first-fleet:vars -->``) tells the reader to set: its addresses become
the bed's, its ``admin`` login the bed's ``tester``, ``~/src/fleet-dispatch`` this checkout. The bed's SSH key
and options come from the environment (``ANSIBLE_PRIVATE_KEY_FILE``, ``ANSIBLE_SSH_COMMON_ARGS``), as a
reader's own SSH configuration would. The controller is this test's Python environment.

Then the board is read back through the collection's own ledger code: the three items closed, each with
the fake agent's merge as the close-out (a success marker, one attempt). A second test proves that a
misconfigured board is refused at provision time, with the fix, by each master's runner.
"""
from __future__ import annotations

import datetime as _dt
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.testbed

REPO = pathlib.Path(__file__).resolve().parents[2]
README = REPO / 'docs' / 'first-fleet.md'     # the guide the README points a newcomer to
# A bound only, never a speed claim: it covers a loaded CI machine.
STEP_TIMEOUT = 1500


def readme_vars(text):
    """The values the guide tells the reader to set (its table between the vars markers), in order."""
    begin, end = text.index('<!-- first-fleet:vars -->'), text.index('<!-- first-fleet:vars-end -->')
    return re.findall(r'^\| `([^`]+)` \|', text[begin:end], re.M)


def readme_steps(text):
    """The section's steps in order: ('file', name, content) and ('run', command line)."""
    begin, end = text.index('<!-- first-fleet:begin -->'), text.index('<!-- first-fleet:end -->')
    section = text[begin:end]
    steps = []
    for match in re.finditer(r'<!-- first-fleet:(file (\S+)|run) -->\s*```[a-z]*\n(.*?)```', section, re.S):
        if match.group(2):
            steps.append(('file', match.group(2), match.group(3)))
        else:
            steps += [('run', line) for line in match.group(3).splitlines() if line.strip() and not line.startswith('#')]
    return steps


def test_the_readme_section_has_files_and_commands():
    steps = readme_steps(README.read_text())
    names = [s[1] for s in steps if s[0] == 'file']
    runs = [s[1] for s in steps if s[0] == 'run']
    assert {'ansible.cfg', 'inventory.ini', 'group_vars/all.yml'} <= set(names)
    assert any('fleet.dispatch.provision' in r for r in runs) and any('dispatch_mode=apply' in r for r in runs)


@pytest.fixture(scope='module')
def first_fleet(bed_factory, tmp_path_factory):
    bed = bed_factory(3, ready=True)      # PostgreSQL and psycopg: the ready host
    ledger, w1, w2 = bed.hosts
    mine = {'192.0.2.0/24': '10.88.0.0/16', '192.0.2.10': bed.ip[ledger], '192.0.2.11': bed.ip[w1],
            '192.0.2.12': bed.ip[w2], 'admin': 'tester', '~/src/fleet-dispatch': str(REPO)}
    # only what the guide tells its reader to set is replaced, and all of it
    assert sorted(readme_vars(README.read_text())) == sorted(mine)
    subs = sorted(mine.items(), key=lambda kv: -len(kv[0]))     # 192.0.2.0/24 before 192.0.2.1x
    subs = [('ansible_user=admin', 'ansible_user=tester') if old == 'admin' else (old, new) for old, new in subs]

    def substitute(text):
        for old, new in subs:
            text = text.replace(old, new)
        return text

    work = tmp_path_factory.mktemp('first-fleet')
    home = work / 'home'
    home.mkdir()
    env = dict(bed.env)
    for name in ('ANSIBLE_COLLECTIONS_PATH', 'ANSIBLE_COLLECTIONS_SCAN_SYS_PATH', 'ANSIBLE_CONFIG', 'ANSIBLE_INVENTORY',
                 'ANSIBLE_ROLES_PATH'):
        env.pop(name, None)
    env.update({'HOME': str(home), 'PATH': str(pathlib.Path(sys.executable).parent) + os.pathsep + env.get('PATH', ''),
                'ANSIBLE_LOCALHOST_WARNING': 'false',
                # the reader's own SSH setup: the bed's key and options
                'ANSIBLE_PRIVATE_KEY_FILE': bed.key,
                'ANSIBLE_SSH_COMMON_ARGS': '-o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null '
                                           '-o LogLevel=ERROR'})
    log = []
    for step in readme_steps(README.read_text()):
        if step[0] == 'file':
            path = work / step[1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(substitute(step[2]))
            continue
        command = substitute(step[1])
        proc = subprocess.run(stdin=subprocess.DEVNULL, args=['bash', '-euo', 'pipefail', '-c', command], cwd=str(work), env=env, capture_output=True,
                              text=True, timeout=STEP_TIMEOUT, check=False)
        log.append((command, proc))
        assert proc.returncode == 0, '%s\nexited %d\n--- stdout\n%s\n--- stderr\n%s' % (
            command, proc.returncode, proc.stdout[-8000:], proc.stderr[-4000:])
    dsn = 'postgresql://fleet:%s@%s:5432/fleet' % (
        re.search(r'^ledger_password: (\S+)', (work / 'group_vars' / 'all.yml').read_text(), re.M).group(1), bed.ip[ledger])
    return {'bed': bed, 'work': work, 'env': env, 'log': log, 'dsn': dsn}


def _output(fleet, needle):
    for command, proc in fleet['log']:
        if needle in command:
            return proc.stdout
    raise AssertionError('no README command with %r' % needle)


def test_the_readme_fleet_closes_its_items_with_the_fake_agents_merge(first_fleet):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
    board = LedgerBoard(dsn=first_fleet['dsn'])
    try:
        now = _dt.datetime.now(_dt.timezone.utc)
        for number in (1, 2, 3):
            item = board.get(number)
            kinds = [m.kind for m in markers_of(item)]
            verdict = evaluate(item, now=now)
            assert kinds == ['start', 'success'], (number, kinds)
            assert item.state == 'closed' and verdict.reason == 'done' and verdict.attempts == 1, (number, item.state, verdict)
            assert any(a.merged for a in item.artifacts), (number, item.artifacts)   # the fake agent's merged change
    finally:
        board.close()
    sweep = _output(first_fleet, 'fleet.dispatch.sweep')
    assert 'task-1' in sweep and 'task-2' in sweep
    # the sweep placed one run per worker (headroom, D13) and `logs` found each on its own master
    for number in (1, 2):
        logs = _output(first_fleet, 'fleet.dispatch.logs -e issue=%d' % number)
        assert 'task-%d ran on' % number in logs or 'task-%d runs on' % number in logs, logs[-3000:]
        assert 'capture of task-%d' % number in logs and 'journal of task-%d' % number in logs, logs[-3000:]
    waited = _output(first_fleet, 'fleet.dispatch.dispatch -e issue=3 -e wait=true')
    assert 'item 3 closed out: success' in waited, waited[-3000:]
    status = _output(first_fleet, 'fleet.dispatch.status')
    assert status.count('done') >= 3 and '\u2705 success' in status, status[-3000:]
    said = [line for line in status.splitlines() if '"msg"' in line]
    assert said and 'status page: ' in said[-1], status[-1000:]   # the last thing status says
    for command, proc in first_fleet['log']:
        # no host shares its group's name; a launched item is not reported as refused afterwards
        assert 'Found both group and host with same name' not in proc.stderr, (command, proc.stderr[-2000:])
        assert not re.search(r'WARNING\]: #\d+ refused', proc.stderr), (command, proc.stderr[-2000:])


def test_provision_refuses_a_board_a_master_cannot_open_and_names_the_fix(first_fleet):
    w1 = 'w1'    # the README inventory's name of the first worker
    argv = [str(pathlib.Path(sys.executable).parent / 'ansible-playbook'), 'fleet.dispatch.provision', '--limit', w1]
    cases = [
        # the controller's SQLite file: no worker has it (issue 18's silent burn loop)
        ('{"dispatch_board": {"kind": "ledger", "path": "/root/.local/share/fleet-dispatch/ledger.sqlite3"}}',
         'a SQLite ledger serves only localhost workers: use PostgreSQL (roles/ledger) for remote workers'),
        # a wrong password: the server answers and refuses
        ('{"dispatch_board": {"kind": "ledger", "dsn": "%s"}}' % first_fleet['dsn'].replace(':change-me-first@', ':wrong-pw@'),
         'check the DSN'),
    ]
    for extra, fix in cases:
        proc = subprocess.run(stdin=subprocess.DEVNULL, args=argv + ['-e', extra], cwd=str(first_fleet['work']), env=first_fleet['env'], capture_output=True,
                              text=True, timeout=STEP_TIMEOUT, check=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out[-6000:]
        assert 'the runner of fleet1 on %s cannot open the board' % w1 in out and fix in out, out[-6000:]
        assert 'Nothing was launched' in out
        assert 'wrong-pw' not in out   # the DSN is redacted in the message
    # a repository the worker cannot clone (nothing listens there) fails provision naming the line to change
    proc = subprocess.run(stdin=subprocess.DEVNULL, args=argv + ['-e', '{"worker_clones": [{"name": "other", "repo": "https://127.0.0.1:9/widgets.git"}]}'],
                          cwd=str(first_fleet['work']), env=first_fleet['env'], capture_output=True, text=True,
                          timeout=STEP_TIMEOUT, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-6000:]
    assert 'fleet1 on %s could not clone https://127.0.0.1:9/widgets.git (worker_clones entry other)' % w1 in out, out[-6000:]
    assert "set that entry's repo to one this worker can clone" in out, out[-6000:]
    # the configuration of the README is accepted again (and the runner's board is put back)
    proc = subprocess.run(stdin=subprocess.DEVNULL, args=argv, cwd=str(first_fleet['work']), env=first_fleet['env'], capture_output=True, text=True,
                          timeout=STEP_TIMEOUT, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


def _ledger_item(fleet, number):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
    board = LedgerBoard(dsn=fleet['dsn'])
    try:
        item = board.get(number)
        return item.status, [(m.kind, dict(m.fields)) for m in markers_of(item)], len(item.comments)
    finally:
        board.close()


def _playbook(fleet, *args):
    proc = subprocess.run(stdin=subprocess.DEVNULL, args=[str(pathlib.Path(sys.executable).parent / 'ansible-playbook')] + list(args),
                          cwd=str(fleet['work']), env=fleet['env'], capture_output=True, text=True, timeout=STEP_TIMEOUT,
                          check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_stop_finds_the_run_by_the_inventory_name_and_refuses_unreached_without_a_board_change(first_fleet):
    """The README inventory calls the workers w1 and w2; their runners write the hosts' own names in the start
    marker. stop finds the run through the probe; asked to stop with no worker it can reach, it changes nothing."""
    bed = first_fleet['bed']
    workers = bed.hosts[1:]
    # item 4's agent hangs until stopped (the fake agent's per-item mode; put back by the next provision)
    hang = ("import json, pwd; p=pwd.getpwnam('fleet1').pw_dir + '/.config/fleet-dispatch/runner.json'; c=json.load(open(p)); "
            "c['agent_command'] += ['--modes', '4=hang']; json.dump(c, open(p, 'w'))")
    for host in workers:
        bed.ssh(host, 'sudo python3 -c "%s"' % hang)
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
    board = LedgerBoard(dsn=first_fleet['dsn'])
    try:
        board.upsert_item(number=4, title='Wait to be stopped', status='Ready')
    finally:
        board.close()
    rc, out = _playbook(first_fleet, 'fleet.dispatch.dispatch', '-e', 'issue=4')
    assert rc == 0, out[-6000:]
    status, markers, _n = _ledger_item(first_fleet, 4)
    assert [k for k, _f in markers] == ['start'], markers
    started_on = markers[0][1]['host']
    assert started_on not in ('w1', 'w2') and started_on in bed.hosts, started_on   # the host's own name
    # no worker of the named group: the run cannot be reached, and the board is as it was
    before = _ledger_item(first_fleet, 4)
    rc, out = _playbook(first_fleet, 'fleet.dispatch.stop', '-e', 'issue=4', '-e', 'dispatch_workers_group=nowhere')
    assert rc != 0 and 'cannot reach the run of #4' in out and 'Nothing was changed' in out, out[-6000:]
    assert _ledger_item(first_fleet, 4) == before
    rc, out = _playbook(first_fleet, 'fleet.dispatch.stop', '-e', 'issue=4', '-e', '{"why": "a test of the stop"}')
    assert rc == 0, out[-6000:]
    assert 'noted and stopped task-4' in out and 'is now Backlog' in out, out[-6000:]
    deadline = _dt.datetime.now() + _dt.timedelta(seconds=120)
    while True:
        status, markers, _n = _ledger_item(first_fleet, 4)
        if [k for k, _f in markers] == ['start', 'stopped'] or _dt.datetime.now() > deadline:
            break
        time.sleep(2)
    assert status == 'Backlog' and [k for k, _f in markers] == ['start', 'stopped'], (status, markers)
    assert 'a test of the stop' in str(markers[1][1]), markers[1]
    for host in workers:
        live = bed.ssh(host, "sudo -u fleet1 env XDG_RUNTIME_DIR=/run/user/$(id -u fleet1) systemctl --user is-active task-4",
                       check=False)
        assert live.stdout.strip() != 'active', (host, live.stdout)
