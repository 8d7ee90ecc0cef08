#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Guard-to-launch: how long the lease is held before the run is live (D4, issue 13).

For repeated hand dispatches (playbooks/dispatch.yml in apply mode, the production path) of a fresh
item on 3 test-bed hosts x 2 masters, it prints per phase (plan.json ``timings``, stamped by the
controller: lease, probe, place, workspace_launch, release, and guard_to_launch = lease acquired ->
launch answered) the median and p95, and the older end-to-end figure: lease acquired (the lease's
``expires_at`` minus its ttl) -> the run's first instruction (the ``start`` record fleet-race-run
writes; bed hosts share the controller's kernel clock). Then a sweep of one item per worker on 6
workers vs a sweep of one item on 1 worker (the fan-out's ratio; goal <= 1.3x).

    python benchmarks/guard_to_launch.py --repeat 20            # 3 hosts (10.88.230.x), then 6
    python benchmarks/guard_to_launch.py --repeat 20 --no-sweep # the 3 x 2 figures only
    python benchmarks/guard_to_launch.py --repeat 10 --no-sweep --compare-module   # runner code vs modules, alternated

Prints every figure, the goals beside them, and the load average; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import race  # noqa: E402  (the same import setup and fleet helpers)

PHASES = ('lease', 'probe', 'place', 'workspace_launch', 'release', 'guard_to_launch')


def load():
    return ' '.join(open('/proc/loadavg').read().split()[:3])


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def summary(name, values, log):
    if values:
        log('%-18s median %6.2f s  p95 %6.2f s  (min %.2f, max %.2f, n=%d)' % (
            name, statistics.median(values), p95(values), min(values), max(values), len(values)))
    else:
        log('%-18s no reading' % name)


VARIANTS = {
    'runner': {},                                   # the default: the calls from the worker's runner code
    'module': {'dispatch_worker_runner_dir': ''},   # the modules through Ansible's module wrapper
}


def measure(fleet, dispatch_fleet, repeat, workdir, log=print, paths=('runner',)):
    """``repeat`` hand dispatches per call path in ``paths`` (alternated dispatch by dispatch, so each sees
    the same load); returns {path: {phase: [seconds]}} with ``lease_to_start`` (and logs each)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    figures = dict((path, dict((p, []) for p in PHASES + ('lease_to_start',))) for path in paths)
    fleet.stop_all(clear_log=True)
    for i in range(repeat * len(paths)):
        path = paths[i % len(paths)]
        number = 200000 + i + int(time.time()) % 1000 * 100
        board = dispatch_fleet.ledger_board(workdir / ('g%d.sqlite3' % i), {number: 'guard-to-launch %d' % i})
        extra = dict(VARIANTS[path], dispatch_lease_path=str(workdir / 'leases'), dispatch_start_wait=0)
        res, record = fleet.dispatch(board, issue=number, state_dir=str(workdir / ('s%d' % i)), **extra)
        if res.returncode != 0 or not record or not record.get('launched'):
            log('dispatch %d (%s): nothing launched (rc=%s); skipped\n%s' % (i, path, res.returncode, res.stderr[-2000:]))
            continue
        ran = sorted(set(v.get(k) for v in (record.get('call_paths') or {}).values() for k in ('probe', 'launch')) - {None})
        if ran != [path]:
            log('dispatch %d: meant the %s path, the calls ran %s (%s): not a reading of it; skipped' % (
                i, path, ran, record.get('call_paths')))
            fleet.stop_all()
            continue
        timings = record.get('timings') or {}
        for phase in PHASES:
            if timings.get(phase) is not None:
                figures[path][phase].append(float(timings[phase]))
        lease = [le for le in record['leases'] if le.get('acquired')][0]
        ttl = float(os.environ.get('FLEET_DISPATCH_LEASE_TTL', '600'))
        # with its keeper (the mutex's heartbeat, default 30 s) the store holds a lease one heartbeat at a time,
        # so the answer's expiry is its acquisition plus the heartbeat, not the ttl
        heartbeat = float(os.environ.get('FLEET_DISPATCH_LEASE_HEARTBEAT', '30'))
        acquired = parse_time(lease['expires_at']).timestamp() - (heartbeat if 0 < heartbeat < ttl else ttl)
        starts = [r['at'] for r in fleet.records() if r['kind'] == 'start' and r['item'] == number]
        if starts:
            figures[path]['lease_to_start'].append(min(starts) - acquired)
        log('dispatch %2d (%s) item %d: %s; lease->start %s (load %s)' % (
            i, path, number, ' '.join('%s=%s' % (p, timings.get(p)) for p in PHASES),
            '%.2f s' % (min(starts) - acquired) if starts else 'no start record', load()))
        fleet.stop_all()
    for path in paths:
        log('--- 3 hosts x 2 masters, %d hand dispatches, the calls from the %s (goal: guard_to_launch <= 1 s median, <= 2 s p95)' % (
            repeat, 'worker\'s runner code' if path == 'runner' else 'modules (module wrapper)'))
        for phase in PHASES + ('lease_to_start',):
            summary(phase, figures[path][phase], log)
    if len(paths) > 1 and all(figures[p]['guard_to_launch'] for p in paths):
        base = statistics.median(figures['module']['guard_to_launch'])
        for path in paths:
            log('guard_to_launch median, %s path: %.2f s (%.2fx the module path)' % (
                path, statistics.median(figures[path]['guard_to_launch']), statistics.median(figures[path]['guard_to_launch']) / base))
    return figures


def one_inventory(fleet, host, path):
    """The fleet's inventory with only ``host`` in the workers group (a 1-worker fleet)."""
    text = pathlib.Path(fleet.inventory).read_text().splitlines()
    start = text.index('[testbed]') + 1
    out, i = text[:start], start
    while i < len(text) and text[i].strip():
        if text[i].split()[0] == host:
            out.append(text[i])
        i += 1
    out += text[i:]
    pathlib.Path(path).write_text('\n'.join(out) + '\n')
    return str(path)


def sweeps(fleet, dispatch_fleet, repeat, workdir, log=print):
    """Sweeps of one item per worker on every worker vs one item on one worker: ({n: [wall s]}, {n: [g2l s]})."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    n_all = len(fleet.bed.hosts)
    inventories = {1: one_inventory(fleet, fleet.bed.hosts[0], workdir / 'one.ini'), n_all: fleet.inventory}
    wall, g2l = {1: [], n_all: []}, {1: [], n_all: []}
    env = fleet.env(ANSIBLE_FORKS=str(max(10, n_all + 2)))
    for i in range(repeat):
        for n in (1, n_all):
            base = 300000 + int(time.time()) % 1000 * 100 + i * 10
            board = dispatch_fleet.ledger_board(workdir / ('w%d-%d.sqlite3' % (n, i)),
                                                dict((base + k, 'sweep %d/%d' % (k, n)) for k in range(n)))
            began = time.time()
            res, record = fleet.dispatch(board, state_dir=str(workdir / ('sw%d-%d' % (n, i))), inventory=inventories[n],
                                         env=env, dispatch_lease_path=str(workdir / 'leases'), dispatch_start_wait=0,
                                         dispatch_announce=False)
            took = time.time() - began
            launched = len((record or {}).get('launched') or [])
            if res.returncode != 0 or launched != n:
                log('sweep %d on %d workers: launched %d of %d (rc=%s); skipped\n%s' % (
                    i, n, launched, n, res.returncode, res.stderr[-1500:]))
                fleet.stop_all()
                continue
            wall[n].append(took)
            if (record.get('timings') or {}).get('guard_to_launch') is not None:
                g2l[n].append(record['timings']['guard_to_launch'])
            log('sweep %2d on %d worker(s): %.2f s wall, guard_to_launch %s (load %s)' % (
                i, n, took, record.get('timings', {}).get('guard_to_launch'), load()))
            fleet.stop_all()
    log('--- sweeps, one item per worker (goal: %d workers <= 1.3 x 1 worker)' % n_all)
    for n in (1, n_all):
        summary('%d worker(s) wall' % n, wall[n], log)
        summary('%d worker(s) g2l' % n, g2l[n], log)
    if wall[1] and wall[n_all]:
        log('ratio %d vs 1 worker: wall %.2fx, guard_to_launch %s' % (
            n_all, statistics.median(wall[n_all]) / statistics.median(wall[1]),
            '%.2fx' % (statistics.median(g2l[n_all]) / statistics.median(g2l[1])) if g2l[1] and g2l[n_all] else 'n/a'))
    return wall, g2l


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    p.add_argument('--repeat', type=int, default=10)
    p.add_argument('--sweeps', type=int, default=5, help='sweeps per fleet size')
    p.add_argument('--no-sweep', action='store_true', help='only the 3 x 2 hand dispatches')
    p.add_argument('--block', default='10.88.230', help='test-bed IP block (README: ad hoc use)')
    p.add_argument('--compare-module', action='store_true',
                   help='alternate each dispatch with one whose calls run the modules (dispatch_worker_runner_dir: "")')
    args = p.parse_args(argv)
    itconf, dispatch_fleet = race._setup_imports()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='fleet-g2l-'))
    print('machine: %d CPUs, load %s' % (os.cpu_count(), load()), flush=True)
    bed = itconf._boot(3, args.block)
    try:
        fleet = dispatch_fleet.Fleet(bed, workdir / 'fleet')
        fleet.provision()
        measure(fleet, dispatch_fleet, args.repeat, workdir / 'runs', log=lambda s: print(s, flush=True),
                paths=('runner', 'module') if args.compare_module else ('runner',))
    finally:
        bed.down()
    if args.no_sweep:
        return 0
    bed = itconf._boot(6, args.block)
    try:
        fleet = dispatch_fleet.Fleet(bed, workdir / 'fleet6')
        fleet.provision()
        sweeps(fleet, dispatch_fleet, args.sweeps, workdir / 'sweeps', log=lambda s: print(s, flush=True))
    finally:
        bed.down()
    return 0


if __name__ == '__main__':
    sys.exit(main())
