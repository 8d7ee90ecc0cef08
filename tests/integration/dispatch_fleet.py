# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A dispatch fleet on the test bed, shared by tests/integration/test_dispatch_path.py and the
benchmarks (benchmarks/race.py, benchmarks/guard_to_launch.py).

``provision(bed)`` makes every bed host a worker with two masters (``d1``, ``d2``) through the
real ``fleet.dispatch.worker`` role, which gives each master a clone of a local origin repository (the
workspace module needs one, D10) and installs ``fleet-race-run``: the harmless long-running run
command the tests launch instead of the runner. It records ``start``/``stop`` lines with the
item, host, master, invocation and wall-clock time in ``~/race.log``, so a harness can count items
that had more than one live unit at any moment even after a repair stopped one.

``Fleet.dispatch(...)`` runs ``playbooks/dispatch.yml`` or ``playbooks/sweep.yml`` in apply mode
(the production playbooks, D15) against an inventory whose ``workers`` are the bed hosts.
"""
from __future__ import annotations

import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import uuid

REPO = pathlib.Path(__file__).resolve().parents[2]
MASTERS = ('d1', 'd2')

RUN_SCRIPT = r'''#!/usr/bin/python3
# fleet-race-run ITEM: a stand-in run. Records its start, and its end when a stop's SIGTERM (or SIGINT)
# arrives, from the signal handler itself: no process is forked while the stop's signals fly (a shell
# version, whose stop record needed a fork of date(1), lost that record twice on a loaded machine).
import os
import pwd
import signal
import socket
import sys
import time

ITEM = sys.argv[1]
LOG = os.path.join(os.environ.get('HOME') or pwd.getpwuid(os.getuid()).pw_dir, 'race.log')
WHO = '%s %s %s %s' % (ITEM, socket.gethostname(), pwd.getpwuid(os.getuid()).pw_name, os.environ.get('INVOCATION_ID') or 'none')


def record(kind):
    with open(LOG, 'a') as handle:
        handle.write('%s %s %.9f\n' % (kind, WHO, time.time()))


def stop(signum, frame):
    record('stop')
    os._exit(128 + signum)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
record('start')
while True:
    time.sleep(3600)
'''

SETUP = r'''
set -eu
cat > /usr/local/bin/fleet-race-run <<'EOF_RUN'
%(script)s
EOF_RUN
chmod 0755 /usr/local/bin/fleet-race-run
'''

# the origin the masters' clones come from (roles/worker's worker_clones makes the clones)
ORIGIN = r'''
set -eu
if [ ! -d /srv/fleet-origin.git ]; then
  tmp=$(mktemp -d)
  git -C "$tmp" init -q -b main
  echo demo > "$tmp/README"
  git -C "$tmp" add README
  git -C "$tmp" -c user.name=t -c user.email=t@t commit -q -m init
  git clone -q --bare "$tmp" /srv/fleet-origin.git
  chmod -R a+rX /srv/fleet-origin.git
  rm -rf "$tmp"
fi
'''


def _tool(name):
    sibling = pathlib.Path(sys.executable).parent / name
    return str(sibling)


class Fleet(object):
    """The bed hosts as workers, and how to run the dispatch playbooks against them."""

    def __init__(self, bed, workdir=None):
        self.bed = bed
        self.workdir = pathlib.Path(workdir or tempfile.mkdtemp(prefix='fleet-dispatch-'))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.inventory = str(self.workdir / 'workers.ini')
        base = pathlib.Path(bed.inventory).read_text()
        masters = json.dumps([{'name': m} for m in MASTERS])
        with open(self.inventory, 'w') as handle:
            handle.write(base)
            handle.write('\n[workers:children]\ntestbed\n\n[workers:vars]\nworker_masters=%s\n' % masters)

    def env(self, **extra):
        env = dict(self.bed.env)
        env.update({'ANSIBLE_LOCALHOST_WARNING': 'false', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false'})
        env.update(extra)
        return env

    def playbook(self, path, extra_vars=None, check=False, env=None, inventory=None, timeout=900):
        argv = [_tool('ansible-playbook'), '-i', inventory or self.inventory, str(path)]
        if extra_vars:
            argv += ['-e', json.dumps(extra_vars)]
        if check:
            argv.append('--check')
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, env=env or self.env(), timeout=timeout)

    # the runs are fleet-race-run, not the runner; the runner's code is installed as in production (the
    # per-worker calls run from it, issue 13), with no runner board, so no board to check at provision time
    PROVISION_VARS = {'worker_packages_install': False, 'worker_runner_install': True, 'worker_runner_board': {},
                      'worker_clones': [{'name': 'main', 'repo': '/srv/fleet-origin.git'}]}

    def provision_check(self):
        """``provision.yml --check --diff`` on hosts that were never provisioned; returns the CompletedProcess."""
        for host in self.bed.hosts:
            self.bed.ssh(host, 'sudo sh -s', input=ORIGIN)
        argv = [_tool('ansible-playbook'), '-i', self.inventory, str(REPO / 'playbooks' / 'provision.yml'),
                '-e', json.dumps(self.PROVISION_VARS), '--check', '--diff']
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False, env=self.env(), timeout=900)

    def provision(self):
        for host in self.bed.hosts:
            self.bed.ssh(host, 'sudo sh -s', input=ORIGIN)
        # the production playbook (D15): fleet.dispatch.worker on the `workers` group
        res = self.playbook(REPO / 'playbooks' / 'provision.yml', self.PROVISION_VARS)
        if res.returncode != 0:
            raise RuntimeError('provisioning failed:\n%s\n%s' % (res.stdout[-6000:], res.stderr[-3000:]))
        script = SETUP % {'script': RUN_SCRIPT.strip()}
        for host in self.bed.hosts:
            self.bed.ssh(host, 'sudo sh -s', input=script)

    def dispatch(self, board, issue=None, state_dir=None, check=False, env=None, inventory=None, mode='apply', **extra):
        """Run the hand dispatch (``issue``) or the sweep in apply mode; returns (CompletedProcess, record).

        ``mode=None`` leaves ``dispatch_mode`` to the playbook (the hand dispatch applies by default)."""
        state = pathlib.Path(state_dir or tempfile.mkdtemp(prefix='state-', dir=str(self.workdir)))
        extra_vars = {'dispatch_board': board, 'dispatch_run_command': ['fleet-race-run', '{number}'],
                      'dispatch_plan_json': str(state / 'plan.json'), 'dispatch_state_dir': str(state),
                      # each dispatcher run here has a state directory of its own: its files flat in it
                      # (the per-board subdirectory is tested by tests/unit/playbooks)
                      'dispatch_board_dir': str(state),
                      'dispatch_lease_path': str(self.workdir / 'leases')}
        if mode:
            extra_vars['dispatch_mode'] = mode
        extra_vars.update(extra)
        if issue is not None:
            extra_vars['issue'] = issue
        book = REPO / 'playbooks' / ('dispatch.yml' if issue is not None else 'sweep.yml')
        res = self.playbook(book, extra_vars, check=check, env=env, inventory=inventory)
        record = None
        if (state / 'plan.json').exists():
            record = json.loads((state / 'plan.json').read_text())
        return res, record

    # -- reading the hosts ------------------------------------------------------------------
    def live_units(self):
        """{(host, master): [unit names]} of live task-* units, read over SSH as each master."""
        out = {}
        for host in self.bed.hosts:
            cmd = '; '.join("echo '#%s'; sudo -u %s XDG_RUNTIME_DIR=/run/user/$(id -u %s) systemctl --user list-units "
                            "--state=active,activating --plain --no-legend 'task-*' | awk '{print $1}'" % (m, m, m)
                            for m in MASTERS)
            text = self.bed.ssh(host, 'sudo sh -c %s' % shlex.quote(cmd)).stdout
            master = None
            for line in text.splitlines():
                if line.startswith('#'):
                    master = line[1:]
                    out[(host, master)] = []
                elif line.strip():
                    out[(host, master)].append(line.strip().replace('.service', ''))
        return out

    def records(self):
        """Every start/stop line the run command wrote, on every master: dicts with kind, item, host, master, inv, at."""
        rows = []
        for host in self.bed.hosts:
            text = self.bed.ssh(host, 'sudo sh -c %s' % shlex.quote(
                'for m in %s; do cat /home/$m/race.log 2>/dev/null; done; true' % ' '.join(MASTERS))).stdout
            for line in text.splitlines():
                parts = line.split()
                if len(parts) == 6:
                    rows.append({'kind': parts[0], 'item': int(parts[1]), 'host': parts[2], 'master': parts[3],
                                 'inv': parts[4], 'at': float(parts[5])})
        return rows

    def stop_all(self, clear_log=False):
        """Stop every task-* unit of every master (and optionally clear the run records), in parallel."""
        cmd = '; '.join("sudo -u %s XDG_RUNTIME_DIR=/run/user/$(id -u %s) systemctl --user stop 'task-*' 2>/dev/null%s"
                        % (m, m, ('; rm -f /home/%s/race.log' % m) if clear_log else '') for m in MASTERS)
        procs = [subprocess.Popen(self._ssh_argv(h, 'sudo sh -c %s' % shlex.quote(cmd + '; true')), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for h in self.bed.hosts]
        for proc in procs:
            proc.wait(timeout=120)

    def _ssh_argv(self, host, cmd, user='tester'):
        return ['ssh', '-i', self.bed.key, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no',
                '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=5',
                '%s@%s' % (user, self.bed.ip[host]), cmd]


def duplicates(rows, items=None):
    """Items that had more than one live unit at any moment, from the start/stop records.

    A unit is live from its ``start`` to its ``stop`` (or forever when no stop was recorded);
    two intervals of one item on different (host, master, invocation) that overlap are a duplicate.
    """
    runs = {}
    for row in rows:
        if items is not None and row['item'] not in items:
            continue
        key = (row['item'], row['host'], row['master'], row['inv'])
        span = runs.setdefault(key, [None, None])
        if row['kind'] == 'start':
            span[0] = row['at']
        elif row['kind'] == 'stop':
            span[1] = row['at']
    by_item = {}
    for (item, host, master, inv), (start, stop) in runs.items():
        if start is None:
            continue
        by_item.setdefault(item, []).append((start, stop if stop is not None else float('inf'), host, master))
    dup = {}
    for item, spans in by_item.items():
        spans.sort()
        for i in range(len(spans)):
            for j in range(i + 1, len(spans)):
                if spans[j][0] < spans[i][1]:
                    dup.setdefault(item, []).append((spans[i][2:], spans[j][2:]))
    return dup


def ledger_board(path, items):
    """A fresh ledger board file with ``items`` (number -> title), all Ready."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
    spec = {'kind': 'ledger', 'path': str(path)}
    if os.path.exists(str(path)):
        os.unlink(str(path))
    with open_board(dict(spec, create=True)) as board:
        for number, title in items.items():
            board.upsert_item(number=number, title=title, status='Ready')
    return spec


def new_owner(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])
