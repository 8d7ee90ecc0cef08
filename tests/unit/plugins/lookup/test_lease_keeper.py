# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease keeper with real ``ansible-playbook`` holders (D4): a dispatcher killed inside its lease
frees it within about one heartbeat, a living one keeps it, and a keeper never takes a lease back.

Each holder is an ``ansible-playbook`` that takes ``task-42`` through ``fleet.dispatch.mutex`` (heartbeat
2 s, ttl 300 s) and then waits; the test reads the lease store between heartbeats. Times are bounds
on polling only: what is asserted is who holds the lease and with which token.
"""
from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import SqlStore
from ansible_collections.fleet.dispatch.plugins.plugin_utils import lease_keeper

pytestmark = pytest.mark.playbook

HEARTBEAT = 2
TTL = 300
WAIT = 120   # polling bound only: a playbook that has not taken its lease by then is broken

HOLD = textwrap.dedent("""\
    - name: Take task-42 and hold it
      hosts: localhost
      connection: local
      gather_facts: false
      tasks:
        - name: Acquire
          ansible.builtin.set_fact:
            lease: "{{ lookup('fleet.dispatch.mutex', 'task-42', owner='holder-a', ttl=%(ttl)d, heartbeat=%(hb)d,
                              path=lease_path) }}"
        - name: Say it
          ansible.builtin.copy:
            content: "{{ lease | to_json }}"
            dest: "{{ lease_path }}.taken"
            mode: "0600"
        - name: Hold it (the probe-to-launch window, stretched)
          ansible.builtin.command: sleep {{ hold }}
          changed_when: false
        - name: Release
          ansible.builtin.set_fact:
            released: "{{ lookup('fleet.dispatch.mutex', 'task-42', owner='holder-a', state='released', path=lease_path) }}"
    """ % {'ttl': TTL, 'hb': HEARTBEAT})


def _holder(tmp_path, hold):
    play = tmp_path / 'hold.yml'
    play.write_text(HOLD)
    path = str(tmp_path / 'leases.sqlite3')
    exe = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='false', ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    proc = subprocess.Popen([exe, '-i', 'localhost,', str(play), '-e', 'lease_path=%s hold=%d' % (path, hold)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    deadline = time.monotonic() + WAIT
    while not os.path.exists(path + '.taken'):
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, 'the holder took no lease within %d s' % WAIT
        time.sleep(0.2)
    return proc, path


def _row(path):
    sql = SqlStore(path=path)
    try:
        return sql.transaction(lambda tx: tx.one('SELECT owner, token, acquired_at, expires_at FROM leases WHERE name = ?',
                                                 ('task-42',)))
    finally:
        sql.close()


def _stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def test_a_living_holder_keeps_its_lease_past_many_heartbeats(tmp_path):
    proc, path = _holder(tmp_path, hold=600)
    try:
        first = _row(path)
        assert first[0] == 'holder-a'
        expiries = set()
        deadline = time.monotonic() + 4 * HEARTBEAT
        while time.monotonic() < deadline:
            lease = SqlLeaseStore(path=path).acquire('task-42', 'contender-b', 60)
            assert not lease.acquired and lease.holder == 'holder-a', lease.why
            expiries.add(_row(path)[3])
            time.sleep(HEARTBEAT / 4.0)
        assert len(expiries) >= 3, 'the keeper renewed the lease while its holder lived: %s' % sorted(expiries)
        assert _row(path)[1] == first[1], 'renewals keep the token'
    finally:
        _stop(proc)


def test_a_holder_killed_inside_its_lease_frees_it_within_a_heartbeat_not_the_ttl(tmp_path):
    proc, path = _holder(tmp_path, hold=600)
    taken = None
    try:
        owner, token, acquired_at, dummy = _row(path)
        os.kill(proc.pid, signal.SIGKILL)   # the controller dies inside its lease: no always:, no release
        deadline = time.monotonic() + WAIT
        while taken is None or not taken.acquired:
            assert time.monotonic() < deadline, 'the lease was not free %d s after its holder died' % WAIT
            time.sleep(0.5)
            taken = SqlLeaseStore(path=path).acquire('task-42', 'contender-b', 60)
        assert 'took over the expired lease of holder-a' in taken.why and taken.token > token
        # taken over long before the ttl would have freed it: a heartbeat or two, plus this poll
        held_for = (dt.datetime.now(dt.timezone.utc) - parse_time(acquired_at)).total_seconds()
        assert held_for < TTL / 2, 'taken over after %.0f s: the ttl, not the heartbeat, freed it' % held_for
        time.sleep(2 * HEARTBEAT)
        assert _row(path)[:2] == ('contender-b', taken.token), 'nothing of the dead holder renewed it back'
    finally:
        _stop(proc)


def test_a_keeper_never_takes_back_a_lease_taken_over_or_released(tmp_path):
    proc, path = _holder(tmp_path, hold=4 * HEARTBEAT)
    try:
        owner, token, dummy, dummy2 = _row(path)
        # a revived holder's story from the other side: its lease is expired by force while it lives
        sql = SqlStore(path=path)
        try:
            sql.transaction(lambda tx: tx.run("UPDATE leases SET expires_at = '2000-01-01T00:00:00.000000Z' WHERE name = ?",
                                              ('task-42',)), write=True)
        finally:
            sql.close()
        taken = SqlLeaseStore(path=path).acquire('task-42', 'contender-b', 2 * HEARTBEAT)
        assert taken.acquired and taken.token == token + 1
        SqlLeaseStore(path=path).release('task-42', 'contender-b')
        proc.communicate(timeout=WAIT)
        assert proc.returncode == 0
        time.sleep(2 * HEARTBEAT)
        row = _row(path)
        assert row[0] is None and row[1] == token + 1, 'no keeper took the lease back: %r' % (row,)
    finally:
        _stop(proc)


def test_the_holder_is_the_playbook_not_its_worker_process():
    """Outside a multiprocessing worker the holder is the calling process itself."""
    pid, start = lease_keeper.holder()
    assert pid == os.getpid() and lease_keeper.alive(pid, start)
    assert not lease_keeper.alive(pid, 'another start time'), 'a reused pid is another process'
