# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``make demo``'s wait: follow the runs a sweep launched, on the board, until each has closed out.

Run by ``demo.sh`` as ``python3 demo/wait.py --since TIME``, with the board spec (JSON, the DSN in
it) in the environment variable ``FLEET_DEMO_BOARD``, never on the command line. Reads the board
every ``--poll`` seconds through the collection's own ledger code and prints each change as it
happens: a run that posted its start marker is live (the runner posts it inside the unit, D3);
a run whose last marker after that start is an outcome has closed out, with that marker. Ends
when every run started since ``--since`` has closed out and, with ``--items``, each of those items
has had one (the sweep launches them one after another: an early read sees only the first runs),
exit 0; or after ``--timeout`` seconds (exit 1, naming the runs still live or not yet started).
Prints a summary line per run at the end.

``--summary DIR`` instead prints, from the last sweep's ``plan.json`` in DIR (no board read), each
item the demo ran with its reason and last marker, each held candidate and why, and each master's
dark state with its source and reset time.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import GLYPHS, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time


def _runs(items, since):
    """{number: (unit, started_at, closing marker or None, item state)} for starts after ``since``."""
    runs = {}
    for item in items:
        markers = markers_of(item)
        starts = [i for i, m in enumerate(markers) if m.kind == 'start' and m.at is not None and m.at >= since]
        if not starts:
            continue
        last = starts[-1]
        closing = next((m for m in markers[last + 1:] if m.kind != 'start'), None)
        runs[item.number] = (markers[last].fields.get('unit') or 'task-%d' % item.number, markers[last].at, closing, item.state)
    return runs


def _describe(number, run):
    unit, _started, closing, state = run
    if closing is None:
        return '%s (item %d) is live' % (unit, number)
    detail = ''
    if closing.kind == 'retry' and closing.fields.get('not_before'):
        detail = ', eligible again at %s' % closing.fields['not_before']
    if closing.kind == 'capacity' and closing.fields.get('source'):
        reset = closing.fields.get('reset_at')
        detail = ', the master is dark (%s%s)' % (closing.fields['source'], ' until %s' % reset if reset else '')
    return '%s (item %d) closed out: %s %s%s; the item is %s' % (unit, number, closing.glyph, closing.kind, detail, state)


def summary(directory):
    """The demo's closing lines, from the last sweep's plan.json."""
    with open(os.path.join(directory, 'plan.json'), encoding='utf-8') as handle:
        plan = json.load(handle)
    items = plan.get('items')
    if items is None:                                   # a sweep's plan names its board table instead
        with open(plan['table'], encoding='utf-8') as handle:
            items = json.load(handle)['items']
    for item in items:
        last = item.get('last_marker') or {}
        if (last.get('fields') or {}).get('host'):       # a marker a run of this demo posted
            print('item #%d %-42s %s/%s, %s: last marker %s %s' % (
                item['number'], item['title'][:42], item['state'], item['status'], item['reason'],
                GLYPHS.get(last.get('kind'), '?'), last.get('kind')))
    for held in plan.get('unplaced') or []:
        print('held: #%s %s' % (held.get('number'), held.get('why') or held.get('reason') or json.dumps(held, sort_keys=True)))
    for master in plan.get('masters') or []:
        print('master %s/%s: %s' % (master['worker'], master['master'], 'dark (%s) until %s' % (
            master.get('source'), master.get('reset_at') or 'unknown') if master.get('dark') else
            'not dark, %s live runs' % (master.get('headroom') or {}).get('live_runs', '?')))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--since', help='ISO-8601 time before the sweep started')
    parser.add_argument('--summary', metavar='DIR', help="print the demo's closing lines from DIR/plan.json")
    parser.add_argument('--items', default='', help='comma-separated items whose runs to wait for (default: the runs seen)')
    parser.add_argument('--poll', type=float, default=2.0)
    parser.add_argument('--timeout', type=float, default=600.0)
    args = parser.parse_args(argv)
    if args.summary:
        return summary(args.summary)
    if not args.since:
        parser.error('--since or --summary is required')
    since = parse_time(args.since) - _dt.timedelta(seconds=2)
    expected = set(int(n) for n in args.items.split(',') if n.strip())
    spec = json.loads(os.environ['FLEET_DEMO_BOARD'])
    board = LedgerBoard.from_spec(spec)
    shown = {}
    deadline = time.monotonic() + args.timeout
    try:
        while True:
            runs = _runs(board.read().items, since)
            for number in sorted(runs):
                line = _describe(number, runs[number])
                if shown.get(number) != line:
                    print('  [%s] %s' % (_dt.datetime.now(_dt.timezone.utc).strftime('%H:%M:%S'), line), flush=True)
                    shown[number] = line
            live = sorted(n for n, run in runs.items() if run[2] is None)
            unstarted = sorted(expected - set(runs))
            if runs and not live and not unstarted:
                break
            if time.monotonic() > deadline:
                print('demo: after %d s still live: %s; not started: %s (see ansible-playbook fleet.dispatch.logs -e issue=N)'
                      % (args.timeout, ', '.join('task-%d' % n for n in live) or 'none',
                         ', '.join('#%d' % n for n in unstarted) or ('none' if runs else 'no run at all')), file=sys.stderr)
                return 1
            time.sleep(args.poll)
    finally:
        board.close()
    print('every run the sweep launched has closed out: %s' % ', '.join(
        '#%d %s' % (n, runs[n][2].kind) for n in sorted(runs)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
