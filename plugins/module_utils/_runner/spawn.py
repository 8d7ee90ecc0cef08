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
import shutil
import signal
import stat
import subprocess
import time
from typing import Callable, Optional, Tuple

from .._core.board.model import format_time
from .._core.dispatch.agent_sandbox import confine
from .._core.outcome.agent_env import parse_env_file
from .._core.outcome.capacity import agent_missing_state, clears_after_agent_found
from .._core.outcome.stall import Progress
from .._host.files import read_capacity_file, write_capacity_file

# Seconds between SIGTERM and SIGKILL of the agent's process group when the run is stopped.
# Unmeasured guess, bounded by the supervisor: systemd's default TimeoutStopSec is 90 s and the
# close-out must be posted inside it, so this must stay well below 90 s minus the close-out's
# time (two board writes). Experiment that settles it: time `claude -p` from SIGTERM to exit
# mid-tool-call over 20 stops and take 3x the maximum.
KILL_GRACE = 10.0


# Seconds between two looks at the capture while the agent runs with a stall limit (stall_timeout):
# one stat() a look. Derived from the stall limit: a quarter of it, at most this, so a stall is seen
# within 25% of its limit; 5 s bounds the looks at 12 a minute (a stat costs microseconds).
STALL_POLL_MAX = 5.0


# Seconds between two reads of the capture while a run has a budget: each read takes what the agent printed
# since the last and checks every usage event in it, in order, so the stop is decided at the event that
# reached the budget. Unmeasured guess: a usage event is one model response, and the quickest seen here is
# the scripted endpoint's (claude-commit capture: two responses in duration_api_ms 409, ~0.2 s each), a real
# model's seconds; the agent runs on for at most this long after the event. Experiment that settles it: the
# gaps between consecutive usage events in a month of stream-json captures; set this below their p1.
BUDGET_POLL = 0.25


DEFAULT_AGENT_CREDENTIALS = '~/.config/fleet-dispatch/agent-credentials.env'


def read_agent_credentials(path: str) -> dict:
    """The agent credentials file's ``NAME=value`` lines (the agent's own key or merge identity, D18),
    for both runners; ``{}`` when ``path`` is empty or absent. ``ValueError`` when it is not a
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
    """Make the runner's process not dumpable, so the agent cannot read its environment.

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


# --- the agent's executable: on the run's PATH, or the master is dark (agent_missing) ----------------

def find_agent(argv0: str, path: Optional[str]) -> Optional[str]:
    """Where ``argv0`` resolves on ``path`` (the PATH the agent is given), as ``execvpe`` would; None when
    it does not (missing, or not executable). A name with a ``/`` is taken as it is."""
    if not argv0:
        return None
    if '/' in argv0:
        return argv0 if os.path.isfile(argv0) and os.access(argv0, os.X_OK) else None
    return shutil.which(argv0, path=path if path is not None else os.defpath)


def confined_argv(mode: Optional[str], argv, *, path: Optional[str], state_dir: str, config_dir: str, out_dir: str,
                  brief_path: str, workdir: str):
    """The agent's argv under ``worker_runner_agent_sandbox`` (``_core.dispatch.agent_sandbox``), for both
    runners: the state and configuration directories hidden, the run's output directory writable, its brief
    readable, the workspace and the home kept. ``ValueError`` names the fix when bwrap is asked for and absent."""
    if (mode or 'none') == 'none':
        return list(argv)
    return confine(mode, argv, bwrap=find_agent('bwrap', path),
                   hidden=[p for p in (state_dir, config_dir) if p and os.path.isdir(p)],
                   writable=[out_dir], readonly=[brief_path], keep=[p for p in (workdir, os.path.expanduser('~')) if p])


def _interpreter(executable: str) -> str:
    """The program a ``#!/usr/bin/env NAME`` script needs from the PATH (an npm CLI's ``node``), else ''."""
    try:
        with open(executable, 'rb') as handle:
            first = handle.readline(256)
    except OSError:
        return ''
    words = first[2:].decode('utf-8', 'replace').split() if first.startswith(b'#!') else []
    if len(words) >= 2 and os.path.basename(words[0]) == 'env':
        rest = [w for w in words[1:] if not w.startswith('-') and '=' not in w]
        return rest[0] if rest else ''
    return ''


def missing_agent(argv0: str, path: Optional[str]) -> str:
    """What of the agent is not on ``path``: ``argv0`` itself, or the interpreter its ``#!/usr/bin/env``
    line asks the PATH for (``node`` for an npm CLI); '' when both are there."""
    found = find_agent(argv0, path)
    if found is None:
        return argv0 or '(empty agent command)'
    needs = _interpreter(found)
    if needs and find_agent(needs, path) is None:
        return needs
    return ''


def missing_agent_message(argv0: str, what: str, path: Optional[str], host: str = '', master: str = '') -> str:
    """The words for an agent (or its runtime, ``what``) that is not on the run PATH, with the fix."""
    where = ' on %s/%s' % (host, master) if host or master else ''
    what_text = ('the agent CLI %r' % argv0) if what == argv0 else ('%r, which the agent CLI %r runs on,' % (what, argv0))
    return ('%s is not on the run PATH%s (%s): re-run fleet.dispatch.worker, which installs the agent and its runtime '
            '(worker_agent_packages, worker_agent_node_package) on that PATH, or put it there'
            % (what_text, where, path or '(no PATH)'))


def note_agent(capacity_path: str, *, missing: str, now, unit: str = '', log: Callable[[str], None]) -> bool:
    """D8 for the agent: a missing agent executable darkens the master (``agent_missing``: no run starts,
    no attempt is spent); a found one deletes that state (an install or a hand repair heals it). Returns
    whether the file changed. Never fatal."""
    try:
        existing, _why, _present = read_capacity_file(capacity_path)
        if not missing:
            if clears_after_agent_found(existing):
                os.unlink(capacity_path)
                log('the agent CLI is on the run PATH again: capacity state %s (agent_missing) deleted' % capacity_path)
                return True
            return False
        state = agent_missing_state(existing, now=now, message=missing, unit=unit)
        if state is None:
            log('the master is already dark (%s): its capacity state is left as it is' % existing['source'])
            return False
        write_capacity_file(capacity_path, state)
        log('capacity state %s written (agent_missing, %s): the dispatcher places nothing on this master until the agent '
            'is installed (fleet.dispatch.worker) or the cooldown ends' % (capacity_path, format_time(state['written_at'])))
        return True
    except OSError as exc:
        log('WARNING: the capacity state %s could not be updated: %s' % (capacity_path, exc))
        return False


# --- waiting for the agent: the wall-clock limit and the stall limit -------------------------------

def _capture_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


# Bytes read from the capture per look; more appended since the last look is progress unread. Unmeasured
# guess, a bound on one look's read (a look every STALL_POLL_MAX s at most). Experiment that settles it: the
# largest growth of a capture between two looks over a month of runs; keep this above it.
_READ_MAX = 1 << 20


def _appended(path: str, offset: int) -> Tuple[int, Optional[bytes]]:
    """``(new offset, bytes appended since offset)``; ``None`` for more than ``_READ_MAX`` (progress)."""
    size = _capture_size(path)
    if size <= offset:
        return (size if size < offset else offset), b''
    if size - offset > _READ_MAX:
        return size, None
    try:
        with open(path, 'rb') as handle:
            handle.seek(offset)
            data = handle.read(size - offset)
    except OSError:
        return offset, b''
    return offset + len(data), data


def wait_agent(proc, *, capture_path: str, timeout: Optional[float] = None, stall_timeout: Optional[float] = None,
               grace: float = KILL_GRACE, log: Optional[Callable[[str], None]] = None,
               monotonic: Callable[[], float] = time.monotonic, watch: Optional[Callable[[], bool]] = None,
               watch_poll: float = BUDGET_POLL) -> Tuple[Optional[int], str]:
    """Wait for the agent: ``(exit code, why)``, ``why`` ``''`` (it ended), ``'timeout'`` (it ran longer than
    ``timeout`` seconds), ``'stall'`` (no new line in its capture for ``stall_timeout`` seconds: a line it
    printed before, digits aside, is no progress -- ``_core.outcome.stall``) or ``'budget'``
    (``watch()``, called every ``watch_poll`` seconds while it runs, said stop: the run's budget); the last
    three stop its process group. None or 0 for a limit: no such limit here."""
    timeout = timeout or None
    stall_timeout = stall_timeout or None
    if stall_timeout is None and watch is None:
        try:
            return proc.wait(timeout=timeout), ''
        except subprocess.TimeoutExpired:
            if log:
                log('the agent ran longer than %ss; stopping its process group' % timeout)
            return stop_group(proc, grace, log), 'timeout'
    poll = min(STALL_POLL_MAX, stall_timeout / 4.0) if stall_timeout is not None else watch_poll
    if watch is not None:
        poll = min(poll, watch_poll)
    start = last_change = monotonic()
    offset, progress = max(0, _capture_size(capture_path)), Progress()
    while True:
        now = monotonic()
        wait = poll if timeout is None else max(0.0, min(poll, start + timeout - now))
        try:
            return proc.wait(timeout=wait), ''
        except subprocess.TimeoutExpired:
            pass
        now = monotonic()
        if timeout is not None and now - start >= timeout:
            if log:
                log('the agent ran longer than %ss; stopping its process group' % timeout)
            return stop_group(proc, grace, log), 'timeout'
        if watch is not None and proc.poll() is None and watch():
            return stop_group(proc, grace, log), 'budget'
        if stall_timeout is None:
            continue
        offset, data = _appended(capture_path, offset)
        if data is None or progress.feed(data):
            last_change = now
        elif now - last_change >= stall_timeout:
            if log:
                log('the agent printed nothing new for %ss (stall limit); stopping its process group' % stall_timeout)
            return stop_group(proc, grace, log), 'stall'
