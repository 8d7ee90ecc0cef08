#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Claim-to-launch latency of the chain runner (seed 003): tick start -> successor unit active.

Every ``launched`` line a chain tick writes (``~/.local/state/fleet-dispatch/chain/tick.log`` of
each master) carries ``tick to active S s``: from the tick's first clock read (before the ledger
read, the room check and the claim) to ``systemd-run`` returning for the successor's unit. With
``Type=exec`` that return is the unit's program running, so the figure is tick -> unit active,
and it includes the handoffs launched before it in the same tick.

    python benchmarks/chain_latency.py DIR_OR_FILE...   # tick logs (a directory: every *.log in it)

The bed test ``tests/integration/test_chains.py`` writes the six masters' tick logs to
``$FLEET_CHAIN_LOGS`` when it is set. Prints the count, min/p50/p90/max and a histogram; asserts
nothing.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

LINE = re.compile(r'tick to active (?P<s>[0-9.]+) s')


def latencies(lines):
    """The ``tick to active`` seconds of every ``launched`` line."""
    out = []
    for line in lines:
        match = LINE.search(line) if ': launched ' in line else None
        if match:
            out.append(float(match.group('s')))
    return out


def summary(values):
    """``{n, min, p50, p90, max}`` of ``values`` (nearest-rank percentiles); empty dict for none."""
    if not values:
        return {}
    ordered = sorted(values)

    def rank(q):
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return {'n': len(ordered), 'min': ordered[0], 'p50': rank(0.5), 'p90': rank(0.9), 'max': ordered[-1]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('paths', nargs='+', help='tick logs, or directories of them (*.log)')
    args = parser.parse_args(argv)
    lines = []
    for name in args.paths:
        path = pathlib.Path(name)
        for one in (sorted(path.glob('*.log')) if path.is_dir() else [path]):
            lines += one.read_text(encoding='utf-8', errors='replace').splitlines()
    values = latencies(lines)
    found = summary(values)
    if not found:
        print('no launched lines with a tick-to-active figure in %s' % ', '.join(args.paths))
        return 1
    print('tick -> unit active, %(n)d launches: min %(min).3f s, p50 %(p50).3f s, p90 %(p90).3f s, max %(max).3f s' % found)
    top = max(values)
    width = max(top / 10.0, 0.001)
    for index in range(10):
        low, high = index * width, (index + 1) * width
        count = sum(1 for v in values if low <= v < high or (index == 9 and v == top))
        print('  %6.2f-%6.2f s %4d %s' % (low, high, count, '#' * count))
    return 0


if __name__ == '__main__':
    sys.exit(main())
