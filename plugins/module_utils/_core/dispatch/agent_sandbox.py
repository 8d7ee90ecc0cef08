# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent's own confinement inside its run: the ``bwrap`` argv that wraps the agent command.

Pure: no I/O. The run unit's sandbox (``sandbox.py``) confines the runner and the agent together; the
agent follows text written by strangers, so it also gets a mount namespace of its own (bubblewrap,
unprivileged, under the unit's user namespace): the fleet's state directory (the runs' records, the
close-out spool, a SQLite ledger, the capacity state) and its configuration directory (credentials,
runner.json, board.json) are empty tmpfs mounts to it, and only the run's output directory is mounted
back writable and its brief read-only. Everything else is the unit's own view, so the agent keeps its
workspace, its CLI's home config, the network and the unit's read-only and hidden paths.

Not a PID namespace: a fresh /proc cannot be mounted where /proc has masked paths (a container; read on
the test bed), so the agent still sees its runner's process. The runner is not dumpable (its environment
and memory are closed to the agent), and an agent that kills it leaves the start marker for the reaper:
a gap on the board, never a false close (D12). Readings: docs/sandbox.md.
"""

from __future__ import annotations

import posixpath
from typing import List, Optional, Sequence

MODES = ('none', 'bwrap')
"""``none``: the agent runs in the unit as the runner does; ``bwrap``: in its own mount namespace."""


def _abs(path: str, what: str) -> str:
    if not isinstance(path, str) or not path.startswith('/') or any(c in path for c in '\n\r\x00'):
        raise ValueError('the agent sandbox needs an absolute path for %s, got %r' % (what, path))
    return posixpath.normpath(path)


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip('/') + '/')


def bwrap_argv(bwrap: str, *, hidden: Sequence[str], writable: Sequence[str] = (), readonly: Sequence[str] = (),
               keep: Sequence[str] = ()) -> List[str]:
    """The argv prefix that runs a command under ``bwrap`` (its path) with ``hidden`` directories empty.

    ``writable``/``readonly``: paths inside a hidden directory mounted back (the run's output directory,
    its brief). ``keep``: paths the agent must reach (its workspace, its home): a hidden directory that
    holds one of them, or lies inside one, is refused (``ValueError``) rather than hiding the agent's
    own work or leaving a hidden path reachable through a parent."""
    hidden_paths = sorted(set(_abs(p, 'a hidden directory') for p in hidden), key=lambda p: (p.count('/'), p))
    kept = [_abs(p, 'a path the agent keeps') for p in keep]
    for path in hidden_paths:
        for own in kept:
            if _inside(own, path):
                raise ValueError('the agent sandbox cannot hide %s: it holds %s, which the agent must reach' % (path, own))
    argv = [bwrap, '--die-with-parent', '--dev-bind', '/', '/']
    for path in hidden_paths:
        argv += ['--tmpfs', path]
    for option, paths in (('--bind', writable), ('--ro-bind', readonly)):
        for raw in paths:
            path = _abs(raw, 'a path mounted back')
            if not any(_inside(path, h) for h in hidden_paths):
                continue   # already the unit's own view
            argv += [option, path, path]
    return argv + ['--']


def confine(mode: Optional[str], argv: Sequence[str], *, bwrap: Optional[str], hidden: Sequence[str],
            writable: Sequence[str] = (), readonly: Sequence[str] = (), keep: Sequence[str] = ()) -> List[str]:
    """``argv`` as the agent runs it under ``mode`` (one of ``MODES``; empty is ``none``). ``bwrap``: the
    found bwrap binary, None when it is not installed (``ValueError`` naming the fix for mode ``bwrap``)."""
    mode = mode or 'none'
    if mode not in MODES:
        raise ValueError('agent_sandbox must be one of %s, got %r' % (', '.join(MODES), mode))
    if mode == 'none':
        return list(argv)
    if not bwrap:
        raise ValueError('agent_sandbox is bwrap but bwrap is not on the run\'s PATH: install bubblewrap on the worker '
                         '(fleet.dispatch.worker does with worker_packages_install) or set worker_runner_agent_sandbox: none')
    return bwrap_argv(bwrap, hidden=hidden, writable=writable, readonly=readonly, keep=keep) + list(argv)
