# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The master's sandbox file, ``~/.config/fleet-dispatch/sandbox.json``: the one reader of it.

``roles/worker`` writes it per master (from ``worker_sandbox_*``) next to the PATH file; ``launch``
reads it for every run unless its ``sandbox`` option overrides it. The meaning of its keys (systemd
property names) is ``_core.dispatch.sandbox``; the readings behind them are ``docs/sandbox.md``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from .._core.dispatch.sandbox import anchor_paths, manager_paths, properties, protected_paths
from .files import foreign_writer, home_dir

SANDBOX_FILE = os.path.join('.config', 'fleet-dispatch', 'sandbox.json')


def default_sandbox_path() -> str:
    """``~/.config/fleet-dispatch/sandbox.json`` of the user this process runs as (by uid)."""
    return os.path.join(home_dir(), SANDBOX_FILE)


def read_sandbox_file(path: str) -> Optional[Dict[str, Any]]:
    """The settings in ``path``; ``None`` when there is no such file (a master the worker role has not
    provisioned since sandboxing came: its runs are not hardened). A file that cannot be read or is not
    a JSON object, or one someone other than this user or root could have written (owner, group/world
    write), raises ``ValueError`` naming the file and the fix: a run never starts half-sandboxed."""
    try:
        with open(path, encoding='utf-8') as handle:
            why = foreign_writer(os.fstat(handle.fileno()))
            text = handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError('the sandbox file %s cannot be read (%s): re-run fleet.dispatch.worker' % (path, exc))
    if why:
        raise ValueError('the sandbox file %s is refused: %s (chmod go-w it, or re-run fleet.dispatch.worker)' % (path, why))
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError('the sandbox file %s is not JSON (%s): re-run fleet.dispatch.worker' % (path, exc))
    if not isinstance(data, dict):
        raise ValueError('the sandbox file %s must hold a JSON object of systemd settings: re-run fleet.dispatch.worker'
                         % (path,))
    return data


def run_properties(settings: Optional[Dict[str, Any]], workdir: str, home: Optional[str] = None) -> List[str]:
    """The properties of one run unit of this master: ``settings`` with ``workdir`` writable and the
    runner's own files (``_core.dispatch.sandbox.protected_paths`` of ``home``) read-only, in every profile,
    and their parents pinned where the home is writable (``anchor_paths``)."""
    home = home or home_dir()
    return properties(settings, writable=[workdir], readonly=protected_paths(home), anchors=anchor_paths(home),
                      hidden=manager_paths(os.getuid())) if settings else []


__all__ = ['SANDBOX_FILE', 'default_sandbox_path', 'read_sandbox_file', 'run_properties']
