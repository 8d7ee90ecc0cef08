#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a sweep costs: its fixed cost beside a one-task playbook, and its growth with the board.

First, the fixed cost (goal: an apply sweep of a small board within 4x a one-task playbook on the same inventory):
on a 100-item ledger board (5 Ready) it runs the one-task playbook (ansible.builtin.ping on every host), one apply
sweep to warm the state (the announcer's record, as the timer's every cycle but the first has it), then the apply
and the plan sweep, and prints each one's wall and CPU seconds (the playbook and every process it waited for), its
ratio to the one-task playbook and its TASK headers (every task, a skipped one too, is a forked task run; the
shape test tests/unit/playbooks/test_sweep_tasks.py keeps the count). ``--fixed`` prints only this part.

Then the growth (goal: 20,000 items within 2x the 100-item sweep, 150 MB):

For each size it builds a ledger board (SQLite; PostgreSQL too when FLEET_TEST_PG_DSN names a server) and
runs the shipped ``playbooks/sweep.yml`` on a localhost worker (``inventory.example``, as
tests/unit/playbooks/test_playbooks.py runs it: no bed), in plan mode, and with ``--apply`` in apply mode
too (the masters of inventory.example do not exist here, so apply takes every candidate's lease, finds the
masters blind and launches nothing). Printed per sweep: the wall time and its ratio to the 100-item sweep
(the smallest size) of the same mode and backend, the peak RSS of the largest module process (polled
VmHWM) and of any process of the run (ansible-playbook and its forks included, from wait4), and the
floor: the board read, decision and JSON of board_info's answer in this process. Beside them, once per
backend, the one-task playbook (ansible.builtin.ping on every host) on the same inventory.

The board of N items: 5 % Ready (candidates), 10 % Backlog, 5 % blocked by an open Backlog item, 2 %
running (a recent start), 1 % orphaned starts older than the reap floor (the reaper's held or due
items), the rest done (start, success, closed). Asserts nothing; the issue's goal (20,000 items within
2x the 100-item sweep, 150 MB) is printed beside each row.

    python benchmarks/sweep_cost.py --fixed --repeat 5           # the fixed cost only (about a minute)
    python benchmarks/sweep_cost.py                              # and 100, 1,000, 5,000, 20,000 items, plan
    python benchmarks/sweep_cost.py --sizes 100 20000 --apply --repeat 3 --profile 10
    FLEET_TEST_PG_DSN=$(tests/services/postgres.sh | tail -1) python benchmarks/sweep_cost.py --backends postgres

By hand only: the default run takes minutes (building the 20,000-item board alone takes one to two on 2
cores), over tests/run's 90 s for a CI benchmark, so its benchmarks phase runs only its --help.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tests'))
BIN = pathlib.Path(sys.executable).parent
GOAL_RATIO, GOAL_MB = 2.0, 150
GOAL_PING = 4.0
"""The fixed-cost goal: an apply sweep of a small board within this many one-task playbooks on the same inventory."""
UTC = _dt.timezone.utc


def build_board(spec, size):
    """The board of ``size`` items described in the docstring; returns the seconds it took."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
    t0 = time.perf_counter()
    now = _dt.datetime.now(UTC)
    old = (now - _dt.timedelta(days=3)).strftime('%Y-%m-%dT%H:%M:%SZ')
    done = (now - _dt.timedelta(days=4)).strftime('%Y-%m-%dT%H:%M:%SZ')
    with open_board(dict(spec, create=True)) as board:
        backlog = None
        for n in range(1, size + 1):
            slot = n % 100
            if slot < 5:
                board.upsert_item(number=n, title='ready %d' % n, status='Ready')
            elif slot < 15:
                board.upsert_item(number=n, title='backlog %d' % n, status='Backlog')
                backlog = n
            elif slot < 20 and backlog is not None:
                board.upsert_item(number=n, title='blocked %d' % n, status='Ready', blocked_by=[backlog])
            elif slot < 22:
                board.upsert_item(number=n, title='running %d' % n, status='Ready')
                board.post_marker(n, format_marker('start', {'unit': 'task-%d' % n, 'host': 'localhost', 'master': 'agent1'}))
            elif slot < 23:
                board.upsert_item(number=n, title='orphan %d' % n, status='Ready')
                board.post_marker(n, format_marker('start', {'unit': 'task-%d' % n, 'host': 'localhost', 'master': 'agent1'}),
                                  at=old)
            else:
                board.upsert_item(number=n, title='done %d' % n, status='Ready')
                board.post_marker(n, format_marker('start', {'unit': 'task-%d' % n}), at=done)
                board.post_marker(n, format_marker('success', {'unit': 'task-%d' % n}), close=True, at=done)
    return time.perf_counter() - t0


def floor_seconds(spec):
    """The board read, the decision and the JSON of board_info's answer, in this process (no Ansible)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess, candidates
    t0 = time.perf_counter()
    now = _dt.datetime.now(UTC)
    with open_board(spec) as board:
        read = board.read(now=now)
    assessed = assess(read.items, now=now, ready='Ready', max_attempts=3, agents=['custom'])
    json.dumps({'board_items': assessed, 'candidates': candidates(assessed)})
    return time.perf_counter() - t0


class Peak(threading.Thread):
    """Polls the process tree under ``pid`` and keeps each exec'd module process's VmHWM (kB), by module name."""

    def __init__(self, pid, interval=0.01):
        super().__init__(daemon=True)
        self.pid, self.interval, self.stop, self.peaks = pid, interval, threading.Event(), {}

    def _children(self, pid):
        out = []
        try:
            for task in os.listdir('/proc/%d/task' % pid):
                with open('/proc/%d/task/%s/children' % (pid, task)) as fh:
                    out.extend(int(c) for c in fh.read().split())
        except OSError:
            pass
        return out

    def run(self):
        while not self.stop.is_set():
            todo = self._children(self.pid)
            while todo:
                pid = todo.pop()
                todo.extend(self._children(pid))
                try:
                    with open('/proc/%d/cmdline' % pid, 'rb') as fh:
                        cmd = fh.read().replace(b'\0', b' ').decode('utf-8', 'replace')
                    if 'ansible-playbook' in cmd:
                        continue       # the controller and its forks: counted by wait4
                    with open('/proc/%d/status' % pid) as fh:
                        hwm = re.search(r'VmHWM:\s+(\d+)', fh.read())
                except OSError:
                    continue
                found = re.search(r'AnsiballZ_(\w+)', cmd)
                if hwm and found:
                    name = found.group(1)
                    self.peaks[name] = max(self.peaks.get(name, 0), int(hwm.group(1)))
            time.sleep(self.interval)


def run_playbook(argv, env):
    """Wall seconds, the largest module process (name, MB), the largest process of the run (MB), returncode, output,
    CPU seconds (user and system, of the playbook and every process it waited for)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = Peak(proc.pid)
    peak.start()
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    peak.stop.set()
    peak.join()
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    top = max(peak.peaks.items(), key=lambda kv: kv[1]) if peak.peaks else ('-', 0)
    return (wall, (top[0], top[1] / 1024.0), usage.ru_maxrss / 1024.0, proc.returncode, out[0].decode('utf-8', 'replace'),
            usage.ru_utime + usage.ru_stime)


def sweep(workdir, spec, mode, profile=0):
    env = dict(os.environ, XDG_STATE_HOME=str(workdir / ('state-' + mode)), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    for var in ('ANSIBLE_CALLBACK_RESULT_FORMAT', 'ANSIBLE_STDOUT_CALLBACK', 'ANSIBLE_CONFIG'):
        env.pop(var, None)
    if profile:
        # ansible.posix comes with the ``ansible`` package, on the interpreter's path
        env.update(ANSIBLE_CALLBACKS_ENABLED='ansible.posix.profile_tasks', PROFILE_TASKS_TASK_OUTPUT_LIMIT=str(profile),
                   ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='true')
    argv = [str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventory.example'), str(REPO / 'playbooks' / 'sweep.yml'),
            '-e', json.dumps({'dispatch_board': spec, 'dispatch_mode': mode,
                              'dispatch_lease_path': str(workdir / 'leases')})]
    return run_playbook(argv, env)


def one_task(workdir):
    playbook = workdir / 'one_task.yml'
    playbook.write_text('- name: One task\n  hosts: all\n  gather_facts: false\n  tasks:\n'
                        '    - name: Ping\n      ansible.builtin.ping:\n')
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false')
    return run_playbook([str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventory.example'), str(playbook)], env)


def task_count(output):
    """The TASK headers a playbook printed: every task it ran or skipped."""
    return sum(1 for line in output.splitlines() if line.startswith('TASK ['))


def fixed_cost(args):
    """The sweep's fixed cost on a 100-item SQLite board beside the one-task playbook, medians of ``--repeat``."""
    rounds = max(args.repeat, 1)
    with tempfile.TemporaryDirectory(prefix='sweep-fixed-') as tmp:
        tmp = pathlib.Path(tmp)
        spec = {'kind': 'ledger', 'path': str(tmp / 'ledger.sqlite3')}
        build_board(spec, 100)
        pings = [one_task(tmp) for _round in range(rounds)]
        ping_wall = statistics.median(r[0] for r in pings)
        print('\nfixed cost: 100-item SQLite board (5 Ready), medians of %d; goal: the apply sweep within %.0fx the one-task '
              'playbook' % (rounds, GOAL_PING))
        print('%-22s %7s %7s %7s %6s %6s' % ('playbook', 'wall s', 'CPU s', 'x ping', 'tasks', 'load1'))
        print('%-22s %7.2f %7.2f %6.1fx %6d %6.2f' % ('one task (ping)', ping_wall, statistics.median(r[5] for r in pings), 1.0,
                                                      task_count(pings[0][4]), os.getloadavg()[0]))
        # each round from a warm state of its own: one apply sweep first (the announcer's record, as every cycle but the
        # first has it); more rounds on one state would count the masters' blindness up to a report (they do not exist)
        runs = {'apply': [], 'plan': []}
        for number in range(rounds):
            work = tmp / ('round-%d' % number)
            for mode in ('warm', 'apply', 'plan'):
                run = sweep(work, spec, 'apply' if mode == 'warm' else mode)
                if run[3] != 0:
                    print(run[4][-3000:])
                    raise SystemExit('the %s sweep failed (exit %d)' % (mode, run[3]))
                runs.setdefault(mode, []).append(run)
        for mode in ('apply', 'plan'):
            wall = statistics.median(r[0] for r in runs[mode])
            ratio = wall / ping_wall
            goal = '  goal %s (%.1fx <= %.0fx)' % ('met' if ratio <= GOAL_PING else 'missed', ratio, GOAL_PING) if mode == 'apply' else ''
            print('%-22s %7.2f %7.2f %6.1fx %6d %6.2f%s' % ('sweep, ' + mode, wall, statistics.median(r[5] for r in runs[mode]), ratio,
                                                            task_count(runs[mode][-1][4]), os.getloadavg()[0], goal))
        sys.stdout.flush()


def backends(args):
    where = pathlib.Path(args.boards) if args.boards else None
    if 'sqlite' in args.backends:
        yield 'sqlite', lambda size, tmp: {'kind': 'ledger', 'path': str((where or tmp) / ('ledger-%d.sqlite3' % size))}, None
    if 'postgres' in args.backends and not os.environ.get('FLEET_TEST_PG_DSN'):
        print('\n[postgres] skipped: FLEET_TEST_PG_DSN is not set (tests/services/postgres.sh prints one)')
    if 'postgres' in args.backends and os.environ.get('FLEET_TEST_PG_DSN'):
        import conftest
        drops = []

        def pg(size, tmp):
            dsn, drop = conftest._fresh_database()  # pylint: disable=protected-access
            drops.append(drop)
            return {'kind': 'ledger', 'dsn': dsn}
        yield 'postgres', pg, drops


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', type=int, nargs='+', default=[100, 1000, 5000, 20000])
    parser.add_argument('--repeat', type=int, default=1, help='sweeps per size and mode (the median is printed)')
    parser.add_argument('--apply', action='store_true', help='also an apply sweep per size')
    parser.add_argument('--profile', type=int, default=0, metavar='N',
                        help="also print the N dearest tasks of the largest board's sweep (ansible.posix.profile_tasks)")
    parser.add_argument('--boards', metavar='DIR',
                        help='keep the SQLite boards in DIR and reuse them on the next run (for repeated readings)')
    parser.add_argument('--fixed', action='store_true', help='only the fixed cost (the sweeps of a small board beside ping)')
    parser.add_argument('--backends', nargs='+', choices=['sqlite', 'postgres'], default=['sqlite', 'postgres'],
                        help='the ledger backends (postgres only with FLEET_TEST_PG_DSN set)')
    args = parser.parse_args()
    import conftest  # noqa: F401  pylint: disable=unused-import
    modes = ['plan', 'apply'] if args.apply else ['plan']
    sizes = sorted(args.sizes)
    print('sweep cost: playbooks/sweep.yml on a localhost worker (inventory.example), commit %s, %d CPUs' % (
        subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, check=False).stdout.strip(),
        os.cpu_count()))
    fixed_cost(args)
    if args.fixed:
        return
    print('\ngrowth goal: the largest board within %.0fx the %d-item sweep, %d MB' % (GOAL_RATIO, sizes[0], GOAL_MB))
    for backend, make_spec, drops in backends(args):
        with tempfile.TemporaryDirectory(prefix='sweep-cost-') as tmp:
            tmp = pathlib.Path(tmp)
            walls = [one_task(tmp)[0] for _round in range(max(args.repeat, 1))]
            print('\n[%s] one-task playbook (ping) on the same inventory: %.2f s (load1 %.2f)' % (
                backend, statistics.median(walls), os.getloadavg()[0]))
            print('%-7s %6s %7s %8s %7s %7s %-22s %8s %6s %s' % (
                'items', 'mode', 'wall s', 'x small', 'x ping', 'floor s', 'largest module (MB)', 'any MB', 'load1', 'build s'))
            base = {}
            try:
                for size in sizes:
                    spec = make_spec(size, tmp)
                    built = 0.0
                    if not (spec.get('path') and args.boards and os.path.exists(spec['path'])):
                        built = build_board(spec, size)
                    floor = floor_seconds(spec)
                    for mode in modes:
                        runs = []
                        for _round in range(args.repeat):
                            profile = args.profile if size == sizes[-1] else 0
                            runs.append(sweep(tmp / ('%s-%d' % (mode, size)), spec, mode, profile))
                            if runs[-1][3] != 0:
                                print(runs[-1][4][-3000:])
                                print('the %s sweep of %d items failed (exit %d)' % (mode, size, runs[-1][3]))
                        wall = statistics.median(r[0] for r in runs)
                        module = max((r[1] for r in runs), key=lambda m: m[1])
                        anymb = max(r[2] for r in runs)
                        base.setdefault(mode, wall)
                        ratio = wall / base[mode]
                        goal = ''
                        if size == sizes[-1] and len(sizes) > 1:
                            goal = '  goal %s (%.1fx <= %.0fx, %d MB <= %d MB)' % (
                                'met' if ratio <= GOAL_RATIO and module[1] <= GOAL_MB else 'missed', ratio, GOAL_RATIO,
                                module[1], GOAL_MB)
                        print('%-7d %6s %7.2f %7.2fx %6.1fx %7.2f %-22s %8.0f %6.2f %.0f%s' % (
                            size, mode, wall, ratio, wall / statistics.median(walls), floor,
                            '%s %.0f' % module, anymb, os.getloadavg()[0], built, goal))
                        if args.profile and size == sizes[-1]:
                            tail = runs[-1][4].split('PLAY RECAP')[-1].splitlines()
                            print('\n'.join('    ' + line for line in tail if re.search(r'-{3,} +[0-9.]+s$', line)))
                        sys.stdout.flush()
            finally:
                for drop in drops or ():
                    drop()


if __name__ == '__main__':
    main()
