# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers the multi-process race tests share (the lease race, the handoff claim race).

A race test starts N real interpreters (``spawn``: no inherited connections), lines them up on a
barrier so they hit the store together, and COUNTS what happened from their reports.
"""
from __future__ import annotations

import multiprocessing
import socket
import time


def free_port():
    """A TCP port on loopback that nothing listens on (for "the store is unreachable" cases)."""
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def run_contenders(target, args_of, procs, expected, timeout):
    """Start ``procs`` processes of ``target(*args_of(index, barrier, results))`` and collect up to
    ``expected`` reports from the ``results`` queue (each contender ``put``s one per attempt).

    Returns ``(reports, exit_codes)``; a contender that hangs is terminated after ``timeout`` s.
    """
    ctx = multiprocessing.get_context('spawn')
    barrier = ctx.Barrier(procs)
    results = ctx.Queue()
    workers = [ctx.Process(target=target, args=args_of(i, barrier, results)) for i in range(procs)]
    for w in workers:
        w.start()
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        try:
            got.append(results.get(timeout=5))
        except Exception:  # queue.Empty: are the children still alive?
            if not any(w.is_alive() for w in workers):
                break
    for w in workers:
        w.join(30)
        if w.is_alive():
            w.terminate()
            w.join(5)
    return got, [w.exitcode for w in workers]
