# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Races that COUNT: many processes, one lease name, exactly one winner per round (D4).

* ``test_one_winner_per_round``: N spawned processes x M rounds on real SQLite and real
  PostgreSQL. In each round they wait on a barrier and then all acquire ``task-race`` at once;
  every attempt is recorded. Between rounds the lease is either released by its winner (odd
  rounds) or left to expire (even rounds: every store is handed a ``now`` 1000 s later) -- so
  every round after the first is a release-then-acquire or a takeover. Asserts: duplicate
  winners == 0, rounds without a winner == 0, every loser names the round's winner as holder,
  tokens strictly increase. The ``-slow`` kinds widen the read-to-write window inside the
  transaction: the transaction's lock alone must keep it to one winner.
* The negative control runs the same harness against a store that reads and writes in two
  transactions with the widened window between (check-then-act): it MUST produce duplicates, or
  the harness proves nothing.
* ``test_playbooks_*``: the seed's own story end to end. Two ``ansible-playbook`` processes
  dispatch ``task-42`` at once; each probes for a live unit, waits (the probe-to-launch window
  D4 measured at 26-27 s, here 3 s), then launches if the probe saw nothing. Without the lease
  both launch (the control); with the lease pinned by ``set_fact`` and released in ``always:``,
  exactly one launches and the lease is free afterwards even though the winner's play failed.

Figures (acquisition latency under contention) are printed, never asserted.
"""
from __future__ import annotations

import datetime as dt
import os
import statistics
import subprocess
import sys
import textwrap
import time

import pytest

from racing import run_contenders

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.lease import decide_acquire
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore

PROCS = 8
ROUNDS = 20
T0 = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
WINDOW = 0.02  # s of sleep between read and write in the slowed stores: widens check-then-act
BARRIER_TIMEOUT = 120  # seconds; only bounds a hung child so the test fails instead of hanging


class SlowStore(SqlLeaseStore):
    """The real transaction, with a WINDOW-long pause between its read and its write."""

    def _read(self, tx, name, lock=True):
        record = SqlLeaseStore._read(self, tx, name, lock)
        time.sleep(WINDOW)
        return record


class UnlockedSlowStore(SqlLeaseStore):
    """Negative control: the read and the write in two transactions, the same pause between them."""

    def acquire(self, name, owner, ttl, now=None):
        when = parse_time(now)
        sql = self._open(when)
        record = sql.transaction(lambda tx: self._read(tx, name, lock=False))
        time.sleep(WINDOW)
        new, lease = decide_acquire(record, name, owner, ttl, when, self.backend)
        if new is not None:
            def write(tx):
                tx.run('INSERT INTO leases (name, owner, token) VALUES (?, NULL, 0) ON CONFLICT (name) DO NOTHING', (name,))
                self._write(tx, name, new)
            sql.transaction(write, write=True)
        return lease


def _make_store(kind, where):
    cls = {'sqlite': SqlLeaseStore, 'postgres': SqlLeaseStore, 'sqlite-slow': SlowStore, 'postgres-slow': SlowStore,
           'unlocked-slow': UnlockedSlowStore}[kind]
    return cls(dsn=where) if kind.startswith('postgres') else cls(path=where)


def _contender(kind, where, idx, rounds, barrier, results):
    """One dispatcher process. Runs in a spawned interpreter."""
    store = _make_store(kind, where)
    owner = 'p%d' % idx
    try:
        for rnd in range(rounds):
            now = T0 + dt.timedelta(seconds=1000 * rnd)
            barrier.wait(BARRIER_TIMEOUT)
            start = time.perf_counter()
            lease = store.acquire('task-race', owner, 500, now=now)
            took = time.perf_counter() - start
            results.put((rnd, owner, lease.acquired, lease.token, lease.holder, lease.degraded, took, lease.why))
            barrier.wait(BARRIER_TIMEOUT)
            if lease.acquired and rnd % 2 == 1:
                store.release('task-race', owner, now=now)
            barrier.wait(BARRIER_TIMEOUT)
    finally:
        store.close()


def _race(kind, where, procs=PROCS, rounds=ROUNDS):
    rows, codes = run_contenders(_contender, lambda i, barrier, results: (kind, where, i, rounds, barrier, results),
                                 procs, procs * rounds, BARRIER_TIMEOUT * 2)
    assert len(rows) == procs * rounds, 'every attempt reported (%d of %d); exit codes %s' % (len(rows), procs * rounds, codes)
    assert all(code == 0 for code in codes), codes
    return rows


def _tally(rows, rounds):
    winners = dict((r, []) for r in range(rounds))
    for rnd, owner, acquired, token, holder, degraded, took, why in rows:
        if acquired:
            winners[rnd].append((owner, token))
    duplicates = sum(max(0, len(w) - 1) for w in winners.values())
    empty = sum(1 for w in winners.values() if not w)
    return winners, duplicates, empty


def _figures(label, rows):
    took = sorted(r[6] * 1000 for r in rows)
    print('\n%s: %d attempts, acquire latency ms: median %.2f, p90 %.2f, max %.2f' % (
        label, len(took), statistics.median(took), took[int(len(took) * 0.9) - 1], took[-1]))


@pytest.mark.parametrize('kind', ['sqlite', 'sqlite-slow', 'postgres', 'postgres-slow'])
def test_one_winner_per_round(kind, tmp_path, request):
    where = request.getfixturevalue('pg_dsn') if kind.startswith('postgres') else str(tmp_path / 'leases.sqlite3')
    rows = _race(kind, where)
    _figures(kind, rows)
    winners, duplicates, empty = _tally(rows, ROUNDS)
    assert duplicates == 0, winners
    assert empty == 0, winners
    assert not [r for r in rows if r[5]], 'no attempt may have degraded: %s' % [r[7] for r in rows if r[5]][:3]
    for rnd, owner, acquired, token, holder, degraded, took, why in rows:
        if not acquired:
            assert holder == winners[rnd][0][0], 'a loser names the winner of its round'
    tokens = [winners[r][0][1] for r in range(ROUNDS)]
    assert all(b > a for a, b in zip(tokens, tokens[1:])), tokens
    # the rounds really alternated between takeover and release-then-acquire
    whys = [next(r[7] for r in rows if r[0] == rnd and r[2]) for rnd in range(1, ROUNDS)]
    assert any('took over' in w for w in whys) and any('after release' in w for w in whys), whys


def test_negative_control_unlocked_store_duplicates(tmp_path):
    """Without the transaction's lock the harness must SEE the race -- otherwise its zeros above mean nothing."""
    rounds = 5
    rows = _race('unlocked-slow', str(tmp_path / 'leases.sqlite3'), rounds=rounds)
    winners, duplicates, empty = _tally(rows, rounds)
    print('\nunlocked control: %d duplicate winners over %d rounds' % (duplicates, rounds))
    assert duplicates > 0


# ------------------------------------------------------------------------------------------
# the seed's story with real ansible-playbook processes

PLAYBOOK = textwrap.dedent("""\
    - name: Dispatch task-42 (probe, window, launch)
      hosts: localhost
      connection: local
      gather_facts: false
      tasks:
        - name: Name this dispatcher run once
          ansible.builtin.set_fact:
            owner: "{{ 'dispatch-' ~ (2147483647 | random) }}"

        - name: Hold the lease across the probe and the launch
          block:
            - name: Acquire once, pinned
              ansible.builtin.set_fact:
                lease: "{{ lookup('fleet.dispatch.mutex', 'task-42', owner=owner, ttl=120, path=lease_dir)
                           if use_lease | bool else {'acquired': true} }}"

            - name: Probe for a live unit
              ansible.builtin.stat:
                path: "{{ units }}/task-42"
              register: probe
              when: lease.acquired

            - name: The window between probe and launch
              ansible.builtin.pause:
                seconds: 3
              when: lease.acquired

            - name: Launch when the probe saw nothing
              ansible.builtin.shell: "echo {{ owner }} >> {{ launches }} && touch {{ units }}/task-42"
              register: launch
              when: lease.acquired and not probe.stat.exists

            - name: The winner's play fails after its launch (the lease must still be released)
              ansible.builtin.fail:
                msg: failing on purpose after the launch
              when: use_lease | bool and launch is changed
          always:
            - name: Release
              ansible.builtin.set_fact:
                released: "{{ lookup('fleet.dispatch.mutex', 'task-42', owner=owner, state='released', path=lease_dir)
                              if use_lease | bool else {} }}"
    """)


def _two_dispatchers(tmp_path, use_lease):
    units = tmp_path / 'units'
    units.mkdir()
    launches = tmp_path / 'launches.log'
    lease_dir = tmp_path / 'leases.sqlite3'
    play = tmp_path / 'dispatch.yml'
    play.write_text(PLAYBOOK)
    exe = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='false',
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    argv = [exe, '-i', 'localhost,', str(play), '-e', 'units=%s launches=%s lease_dir=%s use_lease=%s' % (
        units, launches, lease_dir, use_lease)]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
             for dummy in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    lines = launches.read_text().split() if launches.exists() else []
    return lines, [p.returncode for p in procs], outs, str(lease_dir)


def test_playbooks_without_the_lease_both_launch(tmp_path):
    """The control: D4's measured failure, reproduced. Both probes pass, both launch."""
    lines, rcs, outs, dummy = _two_dispatchers(tmp_path, False)
    assert rcs == [0, 0], outs
    assert len(lines) == 2, (lines, outs)


def test_playbooks_with_the_lease_launch_once_and_release(tmp_path):
    lines, rcs, outs, lease_dir = _two_dispatchers(tmp_path, True)
    assert len(lines) == 1, (lines, outs)
    assert sorted(rcs) == [0, 2], 'the winner failed on purpose after its launch; the other did not launch: %s' % outs
    state = SqlLeaseStore(path=lease_dir).get('task-42')
    assert state.holder == '' and not state.degraded, 'released in always: although the block failed'
