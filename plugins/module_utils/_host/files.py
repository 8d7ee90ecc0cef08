# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The master's own files: its home, its state directory, and the capacity state file.

One reader and one writer of the capacity file for its two callers, the runner (writes it on a
provider limit, deletes it after a clean run) and ``capacity_info`` (reads it on the dispatch
path); the format and its meaning are ``_core.capacity`` (``dump_state``/``load_state``).
"""

from __future__ import annotations

import os
import pwd
from typing import Any, Dict, Optional, Tuple

from .._core.capacity import dump_state, load_state

CAPACITY_FILE = 'capacity.json'
STATE_SUBDIR = 'fleet-dispatch'


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


def parse_environment_file(text: str) -> Dict[str, str]:
    """The ``NAME=value`` assignments of a systemd ``EnvironmentFile=`` (the worker role's credentials.env).

    The one reader of that format: blank lines and ``#``/``;`` comments are skipped; a value in
    double quotes has ``\\\\``, ``\\"``, ``\\$`` and ``\\``` unescaped (how the role writes it, and how
    systemd and ``sh`` both read it), one in single quotes is taken literally, a bare one is trimmed.
    """
    out = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in '#;' or '=' not in line:
            continue
        name, value = line.split('=', 1)
        name, value = name.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            body, chars, i = value[1:-1], [], 0
            while i < len(body):
                if body[i] == '\\' and i + 1 < len(body):
                    chars.append(body[i + 1])
                    i += 2
                else:
                    chars.append(body[i])
                    i += 1
            value = ''.join(chars)
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        out[name] = value
    return out
