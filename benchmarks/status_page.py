#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Status page and textfile render time for a large board (issue 15 asks: 1,000 items in under a second).

Builds a board of N items (the five states of tests/unit/operator/page_data.py plus N-5 ready ones),
assesses it with the decision core, renders the page and the metrics, and prints the times and the
page size; with --chromium also the time headless Chromium takes to load and serialise the page.
Asserts nothing.

    python benchmarks/status_page.py                   # 1,000 items
    python benchmarks/status_page.py --items 10000 --repeat 3 --chromium
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tests'))
sys.path.insert(0, str(REPO / 'tests' / 'unit' / 'operator'))
# conftest makes ansible_collections.fleet.dispatch importable (a symlink to this checkout).
import conftest  # noqa: E402,F401  pylint: disable=unused-import
from page_data import cycle  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import render_metrics, render_page  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--items', type=int, default=1000)
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--chromium', action='store_true', help='also time a headless Chromium load of the page')
    args = parser.parse_args()
    data = cycle(extra=max(args.items - 5, 0))
    page_s, metrics_s = [], []
    for _round in range(args.repeat):
        t0 = time.perf_counter()
        page = render_page(data)
        t1 = time.perf_counter()
        render_metrics(data)
        metrics_s.append(time.perf_counter() - t1)
        page_s.append(t1 - t0)
    print('%d items: page %.1f ms median (%s), %d kB; metrics %.1f ms median; load1 %.2f' % (
        len(data['items']), 1000 * statistics.median(page_s), ', '.join('%.1f' % (1000 * s) for s in page_s),
        len(page.encode('utf-8')) // 1024, 1000 * statistics.median(metrics_s), os.getloadavg()[0]))
    if args.chromium:
        exe = shutil.which('chromium')
        if exe is None:
            print('chromium: not installed (apt-get install chromium)')
            return
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / 'status.html'
            path.write_text(page, encoding='utf-8')
            argv = [exe, '--headless', '--disable-gpu', '--user-data-dir=%s' % tmp, '--dump-dom', path.as_uri()]
            if os.geteuid() == 0:
                argv.insert(1, '--no-sandbox')
            t0 = time.perf_counter()
            subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=300)
            print('chromium load and serialise (including its own start): %.0f ms' % (1000 * (time.perf_counter() - t0)))


if __name__ == '__main__':
    main()
