#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Guard-to-launch: how long the lease is held before the run is live (D4).

Seed 000 D4 measured 26-27 s between two dispatchers' "no live unit" pre-flight and their
launches -- the window the lease now covers. This prints our own figure: for repeated hand
dispatches (playbooks/dispatch.yml in apply mode, the production path) of a fresh item on the test
bed, the time from the lease's acquisition (its ``expires_at`` minus its ``ttl``, stamped by the
controller's clock in the SQLite lease store) to the run's first instruction (the ``start`` record
``fleet-race-run`` writes with the worker's clock; test-bed hosts are containers sharing the
controller's kernel clock, so the two clocks are one). With ``Type=exec`` the unit is active when
its program runs, so this is lease-acquired -> unit active.

    python benchmarks/guard_to_launch.py --repeat 10     # boots 2 hosts (10.88.230.x), prints figures

Prints every figure and the median; asserts nothing. The load average is printed with it because
on the 2-core CI machine it dominates.
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


def measure(fleet, dispatch_fleet, repeat, workdir, log=print):
    """``repeat`` hand dispatches; returns the list of guard-to-launch seconds (and logs each)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.model import parse_time
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    figures = []
    fleet.stop_all()
    for i in range(repeat):
        number = 200000 + i + int(time.time()) % 1000 * 100
        board = dispatch_fleet.ledger_board(workdir / ('g%d.sqlite3' % i), {number: 'guard-to-launch %d' % i})
        res, record = fleet.dispatch(board, issue=number, state_dir=str(workdir / ('s%d' % i)),
                                     dispatch_lease_path=str(workdir / 'leases'))
        if res.returncode != 0 or not record or not record.get('launched'):
            log('dispatch %d: nothing launched (rc=%s); skipped\n%s' % (i, res.returncode, res.stderr[-2000:]))
            continue
        lease = [le for le in record['leases'] if le.get('acquired')][0]
        ttl = float(os.environ.get('FLEET_DISPATCH_LEASE_TTL', '600'))
        acquired = parse_time(lease['expires_at']).timestamp() - ttl
        starts = [r['at'] for r in fleet.records() if r['kind'] == 'start' and r['item'] == number]
        if not starts:
            log('dispatch %d: no start record for %d; skipped' % (i, number))
            continue
        figure = min(starts) - acquired
        figures.append(figure)
        log('dispatch %2d item %d: lease acquired -> unit active %.2f s (load %s)' % (
            i, number, figure, ' '.join(open('/proc/loadavg').read().split()[:3])))
        fleet.stop_all()
    if figures:
        log('guard-to-launch median %.2f s over %d dispatches (min %.2f, max %.2f)' % (
            statistics.median(figures), len(figures), min(figures), max(figures)))
    return figures


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    p.add_argument('--repeat', type=int, default=10)
    p.add_argument('--block', default='10.88.230', help='test-bed IP block (README: ad hoc use)')
    args = p.parse_args(argv)
    itconf, dispatch_fleet = race._setup_imports()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='fleet-g2l-'))
    bed = itconf._boot(2, args.block)
    try:
        fleet = dispatch_fleet.Fleet(bed, workdir / 'fleet')
        fleet.provision()
        measure(fleet, dispatch_fleet, args.repeat, workdir / 'runs', log=lambda s: print(s, flush=True))
    finally:
        bed.down()
    return 0


if __name__ == '__main__':
    sys.exit(main())
