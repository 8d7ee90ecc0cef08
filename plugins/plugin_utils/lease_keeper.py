# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease's heartbeat: a detached process that keeps a dispatcher's leases while it lives (D4).

A lease is stored with a short expiry (the heartbeat) and renewed every third of it by this keeper
for as long as the holder -- the ``ansible-playbook`` process that took it -- is alive, never past
the lease's ttl. When the holder dies (SIGKILL, a crashed controller), the keeper stops renewing and
the lease is free one heartbeat later instead of one ttl later. The keeper also stops as soon as a
renewal is refused (the lease was released, or taken over under a larger token: the fencing token
orders holders), so it never takes a lease back. A store that fails a renewal is tried again at the
next beat (D5: the lease then simply expires). Controller-only: it runs where the lookup runs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

RENEWALS_PER_HEARTBEAT = 3
"""A lease is renewed this many times per heartbeat: two renewals may be missed (a loaded controller)
before a living holder's lease expires."""


def _start_time(pid):
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None
    when it is gone or a zombie; ``''`` where ``/proc`` is absent (then only the pid is checked)."""
    try:
        with open('/proc/%d/stat' % pid, 'rb') as handle:
            stat = handle.read().decode('ascii', 'replace')
    except FileNotFoundError:
        return None
    except OSError:
        return ''
    fields = stat[stat.rfind(')') + 2:].split()   # after "(comm)": state is field 3, starttime field 22
    if not fields or fields[0] in ('Z', 'X'):
        return None
    return fields[19] if len(fields) > 19 else ''


def holder():
    """``(pid, start)`` of the process that holds the leases this process takes: the parent
    ``ansible-playbook`` when this is one of its worker processes (``multiprocessing``), else this
    process itself (a lookup called from Python)."""
    import multiprocessing
    parent = multiprocessing.parent_process()
    pid = parent.pid if parent is not None and parent.pid else os.getpid()
    return pid, _start_time(pid)


def alive(pid, start):
    """The holder still runs: same pid, same start time (a reused pid is another process)."""
    now = _start_time(pid)
    if now is None:
        return False
    if now == '' or start in ('', None):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return now == start


def keep(open_store, leases, owner, heartbeat, until, who, sleep=time.sleep, clock=time.monotonic):
    """Renew ``leases`` ({name: token}) every ``heartbeat / RENEWALS_PER_HEARTBEAT`` seconds while
    ``who`` (``(pid, start)``) is alive, until ``until`` (ISO time: the hold's cap) or until no lease
    is held any more. ``open_store()`` gives a store (opened per beat: a connection is not kept).
    Returns the reason it stopped."""
    held = dict(leases)
    beat = float(heartbeat) / RENEWALS_PER_HEARTBEAT
    while held:
        sleep(beat)
        if not alive(*who):
            return 'holder %d is gone' % who[0]
        try:
            store = open_store()
        except FileNotFoundError:
            return 'the store is gone'
        except Exception:  # noqa: BLE001 - a store that cannot open now may open at the next beat (D5)
            continue
        try:
            for name, token in list(held.items()):
                lease = store.renew(name, owner, token, heartbeat, until)
                if not lease.degraded and not lease.acquired:
                    del held[name]
        finally:
            store.close()
    return 'no lease held'


def start(store, leases, owner, heartbeat, until, who):
    """Start the keeper as a fresh interpreter in its own session (stdio on /dev/null, reaped by init
    once this process exits) and return True; False when it could not be started (the caller then
    takes the full ttl). ``store`` is ``{'backend', 'path', 'dsn'}``: it goes to the keeper on its
    standard input, never on its command line (a DSN carries a password). A fresh interpreter, not a
    fork: a forked copy of this process would inherit its open SQLite and PostgreSQL connections."""
    root = os.path.dirname(os.path.abspath(__file__))
    for dummy in range(5):          # plugin_utils -> plugins -> dispatch -> fleet -> ansible_collections
        root = os.path.dirname(root)
    code = ('import sys; sys.path.insert(0, sys.argv[1]); '
            'from ansible_collections.fleet.dispatch.plugins.plugin_utils.lease_keeper import main; main()')
    request = json.dumps({'store': store, 'leases': leases, 'owner': owner, 'heartbeat': heartbeat, 'until': until,
                          'who': list(who)})
    try:
        proc = subprocess.Popen([sys.executable, '-I', '-c', code, root], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd='/', close_fds=True,
                                start_new_session=True)
        proc.stdin.write(request.encode('utf-8'))
        proc.stdin.close()
    except (OSError, ValueError):
        return False
    proc.returncode = 0   # never waited for here: its exit is init's to reap (no ResourceWarning either)
    return True


def main():
    """The keeper process: the request on standard input (see ``start``)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import open_store

    request = json.loads(sys.stdin.read())
    store = request['store']
    if store.get('backend') == 'sqlite' and not os.path.exists(store.get('path') or ''):
        return   # nothing to keep: the store is gone (and must not be made again here)

    def reopen():
        if store.get('backend') == 'sqlite' and not os.path.exists(store['path']):
            raise FileNotFoundError(store['path'])
        return open_store(store['backend'], path=store.get('path') or '', dsn=store.get('dsn') or '')
    keep(reopen, request['leases'], request['owner'], float(request['heartbeat']), request['until'], tuple(request['who']))
