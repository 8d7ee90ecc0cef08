# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent's process: started in its own process group, output to one file, stopped as a group.

One implementation for both runners (the item runner, ``run.py``, and the chain runner's
successor session, ``chain/session.py``; D15). The runner is not a module: it owns the agent's process
group to stop it, which ``run_command`` cannot give.
"""
from __future__ import annotations

import os
import signal
import stat
import subprocess
from typing import Callable, Optional

from .._core.outcome.agent_env import parse_env_file

# Seconds between SIGTERM and SIGKILL of the agent's process group when the run is stopped.
# Unmeasured guess, bounded by the supervisor: systemd's default TimeoutStopSec is 90 s and the
# close-out must be posted inside it, so this must stay well below 90 s minus the close-out's
# time (two board writes). Experiment that settles it: time `claude -p` from SIGTERM to exit
# mid-tool-call over 20 stops and take 3x the maximum.
KILL_GRACE = 10.0


DEFAULT_AGENT_CREDENTIALS = '~/.config/fleet-dispatch/agent-credentials.env'


def read_agent_credentials(path: str) -> dict:
    """The agent credentials file's ``NAME=value`` lines (the agent's own key or merge identity, D18;
    issue 14), for both runners; ``{}`` when ``path`` is empty or absent. ``ValueError`` when it is not a
    regular file of this user's with mode 0600 or stricter: it is never group- or world-readable."""
    if not path or not os.path.lexists(path):
        return {}
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ValueError('the agent credentials file %s must be a regular file of this user with mode 0600 '
                         '(it is %o): chmod 600 it, or re-run fleet.dispatch.worker' % (path, info.st_mode & 0o7777))
    with open(path, encoding='utf-8') as handle:
        return parse_env_file(handle.read())


def keep_environment_private(prctl=None) -> bool:
    """Make the runner's process not dumpable, so the agent cannot read its environment (issue 14).

    The runner's environment holds the board token and the ledger DSN (the unit's ``EnvironmentFile=``).
    The agent runs as the same user, and a same-user process may read a dumpable process's
    ``/proc/PID/environ``: on the bed the agent read ``FLEET_GITHUB_TOKEN`` from its parent's that way
    (``tests/integration/test_sandbox.py``). ``prctl(PR_SET_DUMPABLE, 0)`` makes those files the
    kernel's (no core dump, no ptrace by the same user); ``execve`` resets it, so the agent itself is an
    ordinary process. Returns whether it was set; a platform without ``prctl`` keeps running, dumpable."""
    if prctl is None:
        try:
            import ctypes
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            return False
    return prctl(4, 0, 0, 0, 0) == 0   # PR_SET_DUMPABLE (4, <linux/prctl.h>), 0: not dumpable


class PopenSpawner(object):
    """Start the agent in its own process group (so a stop takes the whole tree), output to one file."""

    def spawn(self, argv, *, stdin_path, capture_path, env, cwd):
        stdin = open(stdin_path, 'rb') if stdin_path else open(os.devnull, 'rb')
        try:
            with open(capture_path, 'ab') as out:
                # the runner is not a module (no AnsibleModule, no run_command) and must own the agent's
                # process group to stop it, which run_command cannot give
                return subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,  # pylint: disable=ansible-bad-function
                                        start_new_session=True, close_fds=True)
        finally:
            stdin.close()


def stop_group(proc, grace: float = KILL_GRACE, log: Optional[Callable[[str], None]] = None) -> Optional[int]:
    """SIGTERM the agent's process group, SIGKILL it after ``grace`` seconds; returns its exit code."""
    if proc is None:
        return None
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            return proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            if log:
                log('the agent (pgid %d) outlived %s; escalating' % (proc.pid, signal.Signals(sig).name))
    return proc.poll()
