#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How one root call reaches every master's user manager (issue 13, docs/dispatch.md "One call per worker").

Run ON a worker as root (e.g. ``ssh tester@HOST sudo python3 - d1 d2 < benchmarks/reach_masters.py``).
For the given masters, each way reads ``systemctl --user show 'task-*.service'`` of every master, the
masters in parallel, ``--repeat`` times, and prints the median and max of one whole read:

* ``fork``    -- os.fork per master, initgroups/setgid/setuid + the master's HOME, XDG_RUNTIME_DIR and
                 DBUS_SESSION_BUS_ADDRESS, the answer back over a pipe (what worker_probe does);
* ``machine`` -- ``systemctl --user -M <master>@.host`` from root (systemd >= 248), one process per master;
* ``sudo``    -- ``sudo -u <master>`` with XDG_RUNTIME_DIR, one process per master (become_user's shape).

Prints figures; asserts nothing. (One SSH login per master is measured from the controller, not here.)
"""
import argparse
import json
import os
import pwd
import statistics
import subprocess
import sys
import time

ARGS = ['show', 'task-*.service', '--property=Id,ActiveState,InvocationID,ExecMainStartTimestampMonotonic']


def fork_read(masters):
    kids = []
    for name in masters:
        entry = pwd.getpwnam(name)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.initgroups(name, entry.pw_gid)
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            env = dict(os.environ, HOME=entry.pw_dir, USER=name, XDG_RUNTIME_DIR='/run/user/%d' % entry.pw_uid,
                       DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/%d/bus' % entry.pw_uid)
            out = subprocess.run(['systemctl', '--user'] + ARGS, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 check=False)
            os.write(w, json.dumps([out.returncode, len(out.stdout)]).encode())
            os._exit(0)
        os.close(w)
        kids.append((pid, r))
    answers = []
    for pid, r in kids:
        answers.append(json.loads(os.read(r, 65536).decode()))
        os.close(r)
        os.waitpid(pid, 0)
    return answers


def procs_read(argvs):
    procs = [subprocess.Popen(a, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a in argvs]
    return [[p.wait(), len(p.stdout.read())] for p in procs]


def machine_read(masters):
    return procs_read([['systemctl', '--user', '-M', '%s@.host' % m] + ARGS for m in masters])


def sudo_read(masters):
    return procs_read([['sudo', '-u', m, 'env', 'XDG_RUNTIME_DIR=/run/user/%d' % pwd.getpwnam(m).pw_uid,
                        'systemctl', '--user'] + ARGS for m in masters])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('masters', nargs='*', default=['d1', 'd2'], help='the masters to read (default: d1 d2)')
    parser.add_argument('--repeat', type=int, default=20, help='reads of each way (default 20)')
    args = parser.parse_args(argv)
    repeat, masters = args.repeat, args.masters
    print('load %s, masters %s' % (' '.join(open('/proc/loadavg').read().split()[:3]), ', '.join(masters)))
    for name, fn in (('fork', fork_read), ('machine', machine_read), ('sudo', sudo_read)):
        times, rcs = [], set()
        for _round in range(repeat):
            began = time.monotonic()
            answers = fn(masters)
            times.append(time.monotonic() - began)
            rcs.update(a[0] for a in answers)
        print('%-8s median %.1f ms  max %.1f ms  rc %s' % (name, statistics.median(times) * 1000, max(times) * 1000,
                                                           sorted(rcs)))


if __name__ == '__main__':
    main(sys.argv[1:])
