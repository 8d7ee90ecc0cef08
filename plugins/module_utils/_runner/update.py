# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner's self-update: fetch its own checkout, verify the outcome, re-exec once.

``ansible_collections.fleet.dispatch.plugins.module_utils._runner`` (``MODULE``) is what the worker
role's wrapper runs and what the re-exec runs again, both isolated from the run's files (``boot.py``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sys
from typing import Any, Dict, Optional

from .._core.board.model import format_time
from .._host.cmd import SubprocessRunner
from .._host.git import Git, GitError
from .boot import RUNNER_MODULE, collection_root, python_argv

MODULE = RUNNER_MODULE

REEXEC_ENV = 'FLEET_RUNNER_REEXEC'
STARTED_ENV = 'FLEET_RUNNER_STARTED_AT'
EXPECTED_VERSION_ENV = 'FLEET_RUNNER_EXPECTED_VERSION'


class UpdateFailed(Exception):
    """The self-update's outcome did not verify; the message names both sides."""


_VERSION_RE = re.compile(r'^version:\s*["\']?([^"\'\s#]+)', re.MULTILINE)


def installed_version(code_dir: str) -> Optional[str]:
    """The collection version in ``code_dir/galaxy.yml`` (read with a regex: the worker has no PyYAML),
    else in ``code_dir/MANIFEST.json`` (an installed collection's, which the worker role copies)."""
    try:
        with open(os.path.join(code_dir, 'galaxy.yml'), encoding='utf-8') as handle:
            match = _VERSION_RE.search(handle.read())
        return match.group(1) if match else None
    except OSError:
        pass
    try:
        with open(os.path.join(code_dir, 'MANIFEST.json'), encoding='utf-8') as handle:
            version = json.load(handle).get('collection_info', {}).get('version')
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) and version else None


def code_root() -> str:
    """The collection checkout this file was loaded from (``.../ansible_collections/fleet/dispatch``)."""
    here = os.path.abspath(__file__)   # .../dispatch/plugins/module_utils/_runner/update.py
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))


PIN_COMMIT = re.compile(r'^(?:[0-9a-f]{40}|[0-9a-f]{64})$')
"""A full commit name (SHA-1 or SHA-256), lower case: a pin that names one commit whatever is pushed later."""
_TAG = re.compile(r'^(?!-)(?!.*\.\.)[A-Za-z0-9._/+-]{1,200}(?<![./])$')
"""A tag name git accepts that cannot be read as an option or a revision expression."""


NO_PIN = ('the runner self-updates but follows no pin: set worker_runner_pin to a commit (40 hex digits) or a tag, '
          'or worker_runner_self_update to false; a branch head is never followed')


def pin_kind(pin: str) -> str:
    """What the self-update follows (D11): ``commit`` for a full commit name, ``tag`` for anything else that is a tag
    name. A branch head is never followed: whoever can push to the branch -- a merged pull request of the fleet's own
    agent among them -- would choose the code the next run executes with the runner's secrets. ValueError, naming the
    fix, for an empty or unusable pin."""
    pin = str(pin or '').strip()
    if not pin:
        raise ValueError(NO_PIN)
    if PIN_COMMIT.match(pin.lower()):
        return 'commit'
    if pin.startswith('refs/') or not _TAG.match(pin):
        raise ValueError('worker_runner_pin %r is neither a full commit name (40 hex digits) nor a tag name' % pin[:80])
    return 'tag'


def self_update(code_dir: str, pin: str, *, runner=None, expected_version: Optional[str] = None, environ=None,
                execv=None, argv=None, started_at: Optional[_dt.datetime] = None, log=None) -> Dict[str, Any]:
    """Bring the runner's own checkout to ``pin`` -- a commit, or a tag's commit -- and re-exec once when it moved (D11).

    Never a branch head (``pin_kind``): a commit pin is checked out as named (fetched by name when missing), a tag
    pin is fetched from the remote's ``refs/tags/`` and its commit checked out. 🔴 Verify the OUTCOME, never the
    exit code: the fetched tag must name FETCH_HEAD's commit (``_host.git.Git.fetch_tag``), after the checkout HEAD
    must equal the pinned commit, and the installed version must equal ``expected_version`` when one is given.
    Anything else raises ``UpdateFailed`` with both sides named. With ``FLEET_RUNNER_REEXEC=1`` in ``environ``
    nothing is fetched (this process IS the re-exec) and only the version is verified: the guard that stops a
    loop. Concurrent runs of one master serialise on a lock file in the checkout's git dir.

    No pin at all: nothing is fetched, an error names the fix, and the installed code runs (D5), its version verified.

    Returns ``{'status': 'current'|'updated'|'reexeced'|'unpinned', 'from': sha, 'to': sha, 'version': v}``;
    for ``updated`` the ``execv`` callable has been called (and does not return in production).
    """
    environ = dict(os.environ if environ is None else environ)
    log = log or (lambda msg: sys.stderr.write(msg + '\n'))
    code_dir = os.path.realpath(code_dir)

    def _version_check():
        version = installed_version(code_dir)
        if expected_version and version != expected_version:
            raise UpdateFailed('the runner at %s is version %s but the dispatcher expects %s (stale runner refused)'
                               % (code_dir, version, expected_version))
        return version

    if environ.get(REEXEC_ENV) == '1':
        return {'status': 'reexeced', 'from': None, 'to': None, 'version': _version_check()}
    if not str(pin or '').strip():
        # D5: the code a human provisioned runs (its version still verified); no branch head is followed in its stead
        log('fleet-runner: ERROR: no self-update: %s' % NO_PIN)
        return {'status': 'unpinned', 'from': None, 'to': None, 'version': _version_check()}
    try:
        kind = pin_kind(pin)
    except ValueError as exc:
        raise UpdateFailed(str(exc))
    pin = pin.strip().lower() if kind == 'commit' else pin.strip()
    git = Git(runner or SubprocessRunner())
    lock = None
    try:
        import fcntl
        lock = open(os.path.join(code_dir, '.git', 'fleet-runner-update.lock'), 'a')
        fcntl.flock(lock, fcntl.LOCK_EX)
    except (OSError, ImportError) as exc:
        log('fleet-runner: WARNING: no update lock (%s); updating unlocked' % exc)
    try:
        try:
            sha = git.fetch_commit(code_dir, pin) if kind == 'commit' else git.fetch_tag(code_dir, pin)
            head = git.rev_parse(code_dir, 'HEAD')
            if head != sha:
                rc, err = git.checkout_detached(code_dir, sha)
                after = git.rev_parse(code_dir, 'HEAD')
                if after != sha:
                    raise UpdateFailed('the runner checkout %s is at %s after moving to the pinned %s %s = %s '
                                       '(git checkout rc=%s: %s)' % (code_dir, after, kind, pin, sha, rc, (err or '').strip()))
        except GitError as exc:
            raise UpdateFailed('the runner could not update itself in %s to the pinned %s %s: %s' % (code_dir, kind, pin, exc))
    finally:
        if lock is not None:
            lock.close()
    version = _version_check()
    if head == sha:
        return {'status': 'current', 'from': head, 'to': sha, 'version': version}
    log('fleet-runner: updated %s from %s to %s (version %s); re-executing once' % (code_dir, head, sha, version))
    env = dict(environ)
    env[REEXEC_ENV] = '1'
    if started_at is not None:
        env[STARTED_ENV] = format_time(started_at)
    # isolated, from /: the re-exec imports from nothing the run can write (boot.py)
    args = python_argv(sys.executable, collection_root(code_dir), MODULE, list((argv or sys.argv)[1:]))
    if execv is None:
        os.chdir('/')   # the wrapper already left the workspace; a re-exec never starts in one either
    (execv or os.execve)(sys.executable, args, env)
    return {'status': 'updated', 'from': head, 'to': sha, 'version': version}
