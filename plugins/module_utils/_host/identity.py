# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run one function as each master of a worker, in parallel, from ONE module call (D3:
each master's runs live in its own user manager, so the call must be that master to reach them).

A per-worker module (``worker_probe``, ``worker_launch``) runs as root (``become: true``) and
reaches every master's user manager by switching identity in a forked child per master:
``initgroups``/``setgid``/``setuid`` to the master, with ``HOME``, ``USER``, ``LOGNAME``,
``XDG_RUNTIME_DIR=/run/user/<uid>`` and ``DBUS_SESSION_BUS_ADDRESS`` of that master, so
``systemctl --user``, ``systemd-run --user`` and git run exactly as they do under
``become_user``. The children run at the same time; each one's answer (a JSON document) comes
back over its own pipe. A module already running as the master calls the function in-process.
The measured alternatives (``systemctl --user -M master@.host``, one SSH login per master) and
the reason for this choice: docs/dispatch.md, "One call per worker".

The answer of one master is ``{'ok': True, 'value': ..., 'warnings': [...]}`` or
``{'ok': False, 'msg': ..., 'warnings': [...]}``: a master that cannot be reached fails alone.
"""

from __future__ import annotations

import json
import os
import pwd
import traceback
from typing import Any, Callable, Dict, List

_LIMIT = 64 * 1024 * 1024   # an answer larger than this is a bug, not a reading


def in_home(path: str, home: str) -> str:
    """``path`` with a leading ``~`` meaning ``home`` (the master's, by uid: never the caller's HOME)."""
    if path == '~':
        return home
    if path.startswith('~/'):
        return os.path.join(home, path[2:])
    return path


def master_env(entry) -> Dict[str, str]:
    """The environment a login of this passwd entry would have for its user manager."""
    runtime = '/run/user/%d' % entry.pw_uid
    return {'HOME': entry.pw_dir, 'USER': entry.pw_name, 'LOGNAME': entry.pw_name,
            'XDG_RUNTIME_DIR': runtime, 'DBUS_SESSION_BUS_ADDRESS': 'unix:path=%s/bus' % runtime}


def _call(func, name, warnings) -> Dict[str, Any]:
    try:
        return {'ok': True, 'value': func(name, warnings.append), 'warnings': warnings}
    except Exception as exc:  # pylint: disable=broad-except  # one master's failure is its answer, never the call's
        return {'ok': False, 'msg': '%s: %s' % (type(exc).__name__, exc), 'warnings': warnings}


def _child(entry, func, write_fd) -> None:
    """In the forked child: become the master, run ``func``, write the answer, exit without cleanup."""
    code = 0
    try:
        try:
            os.initgroups(entry.pw_name, entry.pw_gid)
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            os.environ.update(master_env(entry))
            os.chdir(entry.pw_dir if os.path.isdir(entry.pw_dir) else '/')
        except OSError as exc:
            answer = {'ok': False, 'warnings': [],
                      'msg': 'cannot become %s (uid %d): %s; run the module as root (become: true)'
                             % (entry.pw_name, entry.pw_uid, exc)}
        else:
            answer = _call(func, entry.pw_name, [])
        data = json.dumps(answer).encode('utf-8')
    except Exception:  # pylint: disable=broad-except
        data = json.dumps({'ok': False, 'warnings': [], 'msg': traceback.format_exc()[-2000:]}).encode('utf-8')
        code = 1
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view):]
    finally:
        # os._exit: the parent's atexit handlers (AnsibleModule's temp dir cleanup) must not run here
        os._exit(code)  # pylint: disable=protected-access


def _read_all(fd) -> bytes:
    chunks, size = [], 0
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        size += len(chunk)
        if size > _LIMIT:
            break
        chunks.append(chunk)
    os.close(fd)
    return b''.join(chunks)


def for_each_master(names: List[str], func: Callable[[str, Callable[[str], Any]], Any]) -> Dict[str, Dict[str, Any]]:
    """``{name: answer}`` of ``func(name, warn)`` run as each master, the masters in parallel.

    ``func`` must return JSON-serialisable data. The caller is root (each master runs in a child
    that switched to it) or one of the masters (that one runs in-process; any other master is
    answered with the fix: run as root).
    """
    me = os.getuid()
    answers, children = {}, []
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            answers[name] = {'ok': False, 'warnings': [], 'msg': 'no such user on this worker: %s' % name}
            continue
        if entry.pw_uid == me:
            continue    # runs in-process below, after the children are started
        if me != 0:
            answers[name] = {'ok': False, 'warnings': [],
                             'msg': 'this call runs as uid %d and cannot reach master %s (uid %d): run it as root '
                                    '(become: true)' % (me, name, entry.pw_uid)}
            continue
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(entry, func, write_fd)
        os.close(write_fd)
        children.append((name, pid, read_fd))
    for name in names:
        if name not in answers and not any(c[0] == name for c in children):
            answers[name] = _call(func, name, [])
    for name, pid, read_fd in children:
        data = _read_all(read_fd)
        _pid, status = os.waitpid(pid, 0)
        try:
            answers[name] = json.loads(data.decode('utf-8'))
        except ValueError:
            answers[name] = {'ok': False, 'warnings': [],
                             'msg': 'the child for master %s ended without an answer (wait status %d)' % (name, status)}
    return answers
