# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The master's own files: its home, its state directory, and the capacity state file.

One reader and one writer of the capacity file for its two callers, the runner (writes it on a
provider limit, deletes it after a clean run) and ``capacity_info`` (reads it on the dispatch
path); the format and its meaning are ``_core.outcome.capacity`` (``dump_state``/``load_state``).
"""

from __future__ import annotations

import os
import pwd
from typing import Any, Dict, Optional, Tuple

from .._core.outcome.capacity import dump_state, load_state

CAPACITY_FILE = 'capacity.json'
STATE_SUBDIR = 'fleet-dispatch'


def foreign_writer(info, uid=None) -> str:
    """Why a configuration file whose ``os.stat`` is ``info`` may have been written by someone other than
    this user or root ('' when it cannot): another owner, or group or world write permission."""
    uid = os.getuid() if uid is None else uid
    if info.st_uid not in (0, uid):
        return 'it is owned by uid %d, not this user (%d) or root' % (info.st_uid, uid)
    if info.st_mode & 0o022:
        return 'its mode %o lets the group or others write it' % (info.st_mode & 0o7777)
    return ''


def home_dir() -> str:
    """The home of the user this process runs as, by uid (HOME may still name the user become started from)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return os.environ.get('HOME', '/')


def default_state_path(environ=None) -> str:
    """``$XDG_STATE_HOME/fleet-dispatch/capacity.json``, else under ``~/.local/state`` of this user."""
    environ = os.environ if environ is None else environ
    base = environ.get('XDG_STATE_HOME') or os.path.join(home_dir(), '.local', 'state')
    return os.path.join(base, STATE_SUBDIR, CAPACITY_FILE)


def read_capacity_file(path: str) -> Tuple[Optional[Dict[str, Any]], str, bool]:
    """``(state, why, present)`` of the capacity file at ``path``.

    A missing file is ``(None, why, False)``; a file that cannot be read or parsed is
    ``(None, why, True)``: no state, and the caller fails open and may warn why.
    """
    try:
        with open(path, 'rb') as handle:
            text = handle.read()
    except OSError as exc:
        if not os.path.exists(path):
            state, why = load_state(None)
            return state, why, False
        return None, 'capacity state %s unreadable (%s)' % (path, exc), True
    state, why = load_state(text)
    return state, why, True


def write_capacity_file(path: str, state: Dict[str, Any]) -> None:
    """Write the capacity state atomically (a reader sees the old file or the new one, never half)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = '%s.%s.tmp' % (path, os.getpid())
    with open(tmp, 'w', encoding='utf-8') as handle:
        handle.write(dump_state(state))
    os.replace(tmp, path)


def clear_capacity_file(path: str) -> str:
    """Move the capacity state aside to ``<path>.cleared`` (kept for the record, replaced by the next clear); returns it."""
    aside = path + '.cleared'
    os.replace(path, aside)
    return aside


START_FILE = 'start.json'


def default_state_dir(environ=None) -> str:
    """The master's state directory: ``$XDG_STATE_HOME/fleet-dispatch``, else under ``~/.local/state``."""
    return os.path.dirname(default_state_path(environ))


def read_start_record(state_dir: str, unit: str) -> Optional[Dict[str, Any]]:
    """The runner's start record of ``unit`` (``<state_dir>/runs/<unit>/start.json``; the runner writes
    it, ``_runner/workspace.py`` ``Run._start_record``), or None when it is missing or not a JSON object."""
    import json
    try:
        with open(os.path.join(state_dir, 'runs', unit, START_FILE), encoding='utf-8') as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


CHAIN_LOSSES = os.path.join('chain', 'losses.json')


def read_chain_losses(state_dir: str) -> Dict[str, Any]:
    """This master's chain runner's recorded losses (``<state_dir>/chain/losses.json``):
    ``{"<parent>/<successor>": {"holder": ..., "at": ...}}``; ``{}`` when missing or not a JSON object.
    The chain runner writes it (``_runner/chain/tick.py`` ``LocalRecord``); status reads it through here."""
    import json
    try:
        with open(os.path.join(state_dir, CHAIN_LOSSES), encoding='utf-8') as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
