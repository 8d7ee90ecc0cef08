# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The close-out spool: a terminal marker the runner could not post, kept on the worker (D12).

A run's outcome is known when its agent exits; a board that is down at that moment must not lose
it. The runner writes the marker here (``<state dir>/spool/<run>.json``: the item, the run, the
marker's kind, body and close), keeps retrying while its unit is still live, and deletes the file
once the marker is on the board. What is left is delivered by the master's next run, before its
own start marker, and the probe reports it so the reaper never resets an item whose true outcome
is waiting here. One writer and one reader of the format: this module.

Delivery is exactly once: a deliverer first claims a file by renaming it (one rename wins), checks
the board for a marker of that run and kind, posts only when there is none, and deletes the file;
a failed delivery renames it back.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

SPOOL_SUBDIR = 'spool'
_KEYS = ('run', 'unit', 'item', 'repo', 'kind', 'body', 'close', 'spooled_at')


def spool_dir(state_dir: str) -> str:
    return os.path.join(state_dir, SPOOL_SUBDIR)


def _name(run: str) -> str:
    safe = ''.join(c for c in str(run) if c.isalnum() or c in '-_.')
    if not safe or safe.startswith('.'):
        raise ValueError('a spooled close-out needs its run id, got %r' % (run,))
    return safe + '.json'


def write(state_dir: str, entry: Dict[str, Any], claimed: bool = False) -> str:
    """Keep ``entry`` (the ``_KEYS``) atomically; returns its path. Raises OSError when it cannot.

    ``claimed``: written already claimed by this process (the runner still retrying it), so no other
    deliverer takes it until ``release``."""
    missing = [k for k in _KEYS if k not in entry]
    if missing:
        raise ValueError('a spooled close-out needs %s' % ', '.join(missing))
    where = spool_dir(state_dir)
    os.makedirs(where, mode=0o700, exist_ok=True)
    path = os.path.join(where, _name(entry['run']))
    if claimed:
        path = '%s.claimed.%d' % (path, os.getpid())
    tmp = '%s.%d.tmp' % (path, os.getpid())
    with open(tmp, 'w', encoding='utf-8') as handle:
        json.dump(dict((k, entry[k]) for k in _KEYS), handle, indent=1, sort_keys=True)
        handle.write('\n')
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


def _read(path: str) -> Tuple[Optional[Dict[str, Any]], str]:
    try:
        with open(path, encoding='utf-8') as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        return None, 'unreadable (%s)' % exc
    if not isinstance(data, dict) or any(k not in data for k in _KEYS) or not isinstance(data.get('body'), str):
        return None, 'not a spooled close-out (missing %s)' % ', '.join(k for k in _KEYS if not isinstance(data, dict) or k not in data)
    return data, ''


def pending(state_dir: str, release_dead: bool = True) -> Tuple[List[Tuple[str, Dict[str, Any]]], List[str]]:
    """``([(path, entry)...], [problems])``: the spooled close-outs not claimed by a deliverer now.

    ``release_dead=False`` (a read-only look: plan and check mode) renames nothing: a claim whose process is
    gone is listed as pending, as it will be once given back."""
    where = spool_dir(state_dir)
    try:
        names = sorted(os.listdir(where))
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], ['the close-out spool %s cannot be listed: %s' % (where, exc)]
    out, problems, dead = [], [], set()
    for name in list(names):
        # a claim whose process is gone (a runner killed while it retried) is given back
        base, sep, pid = name.rpartition('.json.claimed.')
        if sep and pid.isdigit() and not _alive(int(pid)):
            if not release_dead:
                dead.add(name)
                continue
            try:
                os.rename(os.path.join(where, name), os.path.join(where, base + '.json'))
                names.append(base + '.json')
            except OSError:
                pass
    for name in sorted(set(names)):
        if not (name.endswith('.json') or name in dead) or not os.path.exists(os.path.join(where, name)):
            continue
        path = os.path.join(where, name)
        entry, why = _read(path)
        if entry is None:
            problems.append('%s: %s' % (path, why))
            continue
        out.append((path, entry))
    return out, problems


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True     # it exists, as another user
    return True


def claim(path: str) -> Optional[str]:
    """Take ``path`` for delivery (a rename: one deliverer wins); the claimed path, or None when another has it."""
    claimed = '%s.claimed.%d' % (path, os.getpid())
    try:
        os.rename(path, claimed)
    except FileNotFoundError:
        return None
    return claimed


def release(claimed: str) -> None:
    """Give a claimed file back (its delivery failed): the next deliverer tries again."""
    os.rename(claimed, claimed.rsplit('.claimed.', 1)[0])


def delivered(path: str) -> None:
    """The marker is on the board: drop the file (claimed or not)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def summary(state_dir: str, release_dead: bool = True) -> Dict[str, Any]:
    """What the probe reports of this master's spool: ``{spooled: [{unit, item, repo, run, kind, spooled_at}], problems}``
    (``release_dead``: as ``pending``)."""
    entries, problems = pending(state_dir, release_dead)
    rows = [dict((k, entry[k]) for k in ('unit', 'item', 'repo', 'run', 'kind', 'spooled_at')) for _path, entry in entries]
    return {'spooled': rows, 'spool_problems': problems}
