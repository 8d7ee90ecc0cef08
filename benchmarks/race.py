#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The race harness (issue 4): does the guarded dispatch path ever run one item twice? (D4, D15)

On 3 test-bed hosts x 2 masters, each trial puts fresh items on a ledger board and starts several
dispatchers AT ONCE for them, all through the production playbooks in apply mode:

* ``sweep``    -- playbooks/sweep.yml on controller 1 (every candidate of the board);
* ``hand-N``   -- playbooks/dispatch.yml -e issue=N on controller 1, for two of the items;
* ``sweep-c2`` -- playbooks/sweep.yml from "controller 2": its own state directory, SSH control
  sockets and inventory (workers listed in reverse order), its own lease owner.

Every dispatcher uses the same PostgreSQL lease store (``dispatch_lease_backend=postgres``): the
store that covers dispatchers on several machines. (Two dispatchers on two different stores hold
no common lock -- a fleet must give all of its dispatchers one store.)

The launched command is ``fleet-race-run`` (tests/integration/dispatch_fleet.py): it writes a
start and a stop record. An item counts as a duplicate when two of its runs were live at the same
moment (overlapping start..stop intervals on different masters) -- so a duplicate the repair step
stopped a second later is still counted. After each trial every unit is stopped.

``--no-lease`` runs the same dispatchers with ``dispatch_lease_enabled=false``: the production path
minus the lease (D15's corollary: the flag runs the production function itself). Duplicates must
appear there, or the harness cannot see what it counts.

    python benchmarks/race.py --trials 200            # boots 3 hosts in 10.88.220.x, prints figures
    python benchmarks/race.py --trials 10 --no-lease

Prints one line per trial and a summary; asserts nothing.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = pathlib.Path(__file__).resolve().parents[1]
ITEMS_PER_TRIAL = 3


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _setup_imports():
    """The collection import path (tests/conftest.py) and the test-bed helpers, without pytest running."""
    # tests/ first: tests/conftest.py imports its neighbours (collection_path) by their bare names
    if str(REPO / 'tests') not in sys.path:
        sys.path.insert(0, str(REPO / 'tests'))
    if 'fleet_topconf' not in sys.modules:
        sys.modules['fleet_topconf'] = _load('fleet_topconf', REPO / 'tests' / 'conftest.py')
    sys.path.insert(0, str(REPO / 'tests' / 'integration'))
    if 'fleet_itconf' not in sys.modules:
        sys.modules['fleet_itconf'] = _load('fleet_itconf', REPO / 'tests' / 'integration' / 'conftest.py')
    import dispatch_fleet
    return sys.modules['fleet_itconf'], dispatch_fleet


def reversed_inventory(fleet, path):
    """Controller 2's inventory: the same workers listed in reverse order (another view of the fleet)."""
    text = pathlib.Path(fleet.inventory).read_text().splitlines()
    start = text.index('[testbed]') + 1
    end = start
    while end < len(text) and text[end].strip():
        end += 1
    text[start:end] = list(reversed(text[start:end]))
    pathlib.Path(path).write_text('\n'.join(text) + '\n')
    return str(path)


def _start(fleet, book, extra_vars, env, inventory, log_path):
    argv = [str(pathlib.Path(sys.executable).parent / 'ansible-playbook'), '-i', inventory, str(REPO / 'playbooks' / book),
            '-e', json.dumps(extra_vars)]
    handle = open(str(log_path), 'w')
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, env=env), handle


def trial(fleet, dispatch_fleet, k, workdir, lease=True, dsn='', run_id='r', per_trial=ITEMS_PER_TRIAL):
    """One trial: fresh items, four dispatchers at once; returns its figures."""
    base = 100000 + (per_trial + 7) * k
    items = dict((base + i, 'race %s trial %d item %d' % (run_id, k, i)) for i in range(1, per_trial + 1))
    tdir = pathlib.Path(workdir) / ('t%04d' % k)
    tdir.mkdir(parents=True, exist_ok=True)
    board = dispatch_fleet.ledger_board(tdir / 'board.sqlite3', items)
    common = {'dispatch_board': board, 'dispatch_mode': 'apply', 'dispatch_run_command': ['fleet-race-run', '{number}'],
              'dispatch_lease_enabled': lease, 'dispatch_lease_backend': 'postgres'}
    env1 = fleet.env(FLEET_DISPATCH_LEASE_DSN=dsn)
    env2 = fleet.env(FLEET_DISPATCH_LEASE_DSN=dsn, ANSIBLE_SSH_CONTROL_PATH_DIR=str(pathlib.Path(workdir) / 'cp2'))
    inv2 = str(pathlib.Path(workdir) / 'controller2.ini')
    numbers = sorted(items)
    who = [
        ('sweep', 'sweep.yml', {}, env1, fleet.inventory),
        ('hand-%d' % numbers[1], 'dispatch.yml', {'issue': numbers[1]}, env1, fleet.inventory),
        ('hand-%d' % numbers[2], 'dispatch.yml', {'issue': numbers[2]}, env1, fleet.inventory),
        ('sweep-c2', 'sweep.yml', {}, env2, inv2),
    ]
    started = time.time()
    procs = []
    for name, book, extra, env, inv in who:
        state = tdir / name
        state.mkdir(exist_ok=True)
        extra_vars = dict(common, dispatch_state_dir=str(state), dispatch_plan_json=str(state / 'plan.json'), **extra)
        procs.append((name,) + _start(fleet, book, extra_vars, env, inv, tdir / (name + '.log')))
    rcs = {}
    for name, proc, handle in procs:
        rcs[name] = proc.wait(timeout=900)
        handle.close()
        # a hand dispatch that lost the race fails with its refusal (its documented exit status): a refusal,
        # not a broken playbook
        if name.startswith('hand-') and rcs[name] != 0 and re.search(
                r'"msg": "#%s refused' % name.split('-', 1)[1], (tdir / (name + '.log')).read_text(errors='replace')):
            rcs[name] = '%s(refused)' % rcs[name]
    wall = time.time() - started
    rows = fleet.records()
    dups = dispatch_fleet.duplicates(rows, items=set(items))
    starts = [r for r in rows if r['kind'] == 'start' and r['item'] in items]
    launched = {}
    for name, _proc, _log in procs:
        plan = tdir / name / 'plan.json'
        if plan.exists():
            launched[name] = [u['number'] for u in json.loads(plan.read_text()).get('launched', [])]
        else:
            launched[name] = None
    fleet.stop_all()
    return {'trial': k, 'items': numbers, 'duplicates': sorted(dups), 'runs_started': len(starts), 'wall_s': round(wall, 1),
            'rc': rcs, 'launched': launched}


def race(fleet, dispatch_fleet, trials, lease=True, dsn='', workdir=None, log=print, per_trial=ITEMS_PER_TRIAL):
    """K trials; returns the summary dict (and logs one line per trial)."""
    workdir = pathlib.Path(workdir or tempfile.mkdtemp(prefix='race-'))
    workdir.mkdir(parents=True, exist_ok=True)
    reversed_inventory(fleet, workdir / 'controller2.ini')
    run_id = uuid.uuid4().hex[:6]
    fleet.stop_all(clear_log=True)
    results = []
    for k in range(trials):
        try:
            res = trial(fleet, dispatch_fleet, k, workdir, lease=lease, dsn=dsn, run_id=run_id, per_trial=per_trial)
        except KeyboardInterrupt:
            log('interrupted after %d trials; the summary covers those' % len(results))
            trials = len(results)
            break
        results.append(res)
        log('trial %3d lease=%s items=%s started=%d duplicates=%s wall=%.1fs rc=%s launched=%s' % (
            k, 'on' if lease else 'OFF', res['items'], res['runs_started'], res['duplicates'] or 0, res['wall_s'],
            ','.join('%s:%s' % kv for kv in sorted(res['rc'].items())), json.dumps(res['launched'], sort_keys=True)))
    dup_items = sum(len(r['duplicates']) for r in results)
    walls = [r['wall_s'] for r in results]
    summary = {
        'lease': lease, 'trials': trials, 'items': trials * per_trial, 'dispatchers_per_trial': 4,
        'duplicate_items': dup_items, 'trials_with_duplicates': sum(1 for r in results if r['duplicates']),
        'runs_started': sum(r['runs_started'] for r in results),
        'failed_playbooks': sum(1 for r in results for rc in r['rc'].values() if rc != 0 and not str(rc).endswith('(refused)')),
        'refused_hand_dispatches': sum(1 for r in results for rc in r['rc'].values() if str(rc).endswith('(refused)')),
        'trial_wall_median_s': statistics.median(walls) if walls else None,
        'trial_wall_max_s': max(walls) if walls else None,
        'workdir': str(workdir),
    }
    log('SUMMARY ' + json.dumps(summary, sort_keys=True))
    return summary


def _pg_database(admin_dsn):
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    name = 'fleet_race_' + uuid.uuid4().hex[:10]
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute('CREATE DATABASE %s' % name)
    params = conninfo_to_dict(admin_dsn)
    params['dbname'] = name
    return name, make_conninfo(**params)


def _drop_database(admin_dsn, name):
    import psycopg
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)


def summarize(path):
    """Figures from a harness log (one ``trial`` line per trial), e.g. of a run stopped early."""
    out = {}
    for line in open(path):
        match = re.match(r'^trial +(\d+) lease=(on|OFF) .*started=(\d+) duplicates=(\[[^\]]*\]|0) wall=([0-9.]+)s rc=(\S+)', line)
        if not match:
            continue
        key = 'lease' if match.group(2) == 'on' else 'no-lease'
        fig = out.setdefault(key, {'trials': 0, 'items': 0, 'runs_started': 0, 'duplicate_items': 0, 'trials_with_duplicates': 0,
                                   'failed_playbooks': 0, 'walls': []})
        dups = 0 if match.group(4) == '0' else len(json.loads(match.group(4)))
        fig['trials'] += 1
        fig['items'] += ITEMS_PER_TRIAL
        fig['runs_started'] += int(match.group(3))
        fig['duplicate_items'] += dups
        fig['trials_with_duplicates'] += 1 if dups else 0
        fig['failed_playbooks'] += sum(1 for kv in match.group(6).split(',') if not kv.endswith((':0', '(refused)')))
        fig['walls'].append(float(match.group(5)))
    for fig in out.values():
        walls = fig.pop('walls')
        fig['trial_wall_median_s'] = statistics.median(walls) if walls else None
        fig['trial_wall_max_s'] = max(walls) if walls else None
    return out


def _interrupt(signum, frame):
    raise KeyboardInterrupt()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    p.add_argument('--summarize', metavar='LOG', help='print the figures of a harness log and exit (boots nothing)')
    p.add_argument('--trials', type=int, default=200)
    p.add_argument('--no-lease', action='store_true', help='dispatch_lease_enabled=false: the production path minus the lease')
    p.add_argument('--both', action='store_true', help='run --no-lease-trials without the lease first, then --trials with it')
    p.add_argument('--no-lease-trials', type=int, default=10)
    p.add_argument('--items', type=int, default=ITEMS_PER_TRIAL,
                   help='items per trial: both sweeps race every item, the two hand dispatches one each (a round of many '
                        'items counts each item as a trial of "ran once?")')
    p.add_argument('--block', default='10.88.220', help='test-bed IP block (README: the race harness owns 10.88.220.x)')
    p.add_argument('--pg', default=os.environ.get('FLEET_TEST_PG_DSN', 'postgresql://fleet:fleet@127.0.0.1:5432/postgres'),
                   help='admin DSN; a fresh database is made for the leases and dropped after')
    args = p.parse_args(argv)
    if args.summarize:
        print(json.dumps(summarize(args.summarize), indent=1, sort_keys=True))
        return 0
    # a background job ignores SIGINT: let SIGTERM end the run after the current trial's summary
    signal.signal(signal.SIGTERM, _interrupt)
    itconf, dispatch_fleet = _setup_imports()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='fleet-race-'))
    dbname, dsn = _pg_database(args.pg)
    bed = itconf._boot(3, args.block)
    try:
        fleet = dispatch_fleet.Fleet(bed, workdir / 'fleet')
        t0 = time.time()
        fleet.provision()
        print('provisioned 3 workers x 2 masters in %.1fs' % (time.time() - t0), flush=True)
        runs = []
        if args.both:
            runs = [(False, args.no_lease_trials), (True, args.trials)]
        else:
            runs = [(not args.no_lease, args.trials)]
        for lease, n in runs:
            race(fleet, dispatch_fleet, n, lease=lease, dsn=dsn, workdir=workdir / ('lease' if lease else 'nolease'),
                 log=lambda s: print(s, flush=True), per_trial=args.items)
    finally:
        bed.down()
        _drop_database(args.pg, dbname)
    return 0


if __name__ == '__main__':
    sys.exit(main())
