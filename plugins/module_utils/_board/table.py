# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board table: every item of one read with its decision, as one JSON file on the controller.

A sweep of a large board carries only its candidates and counts across the module boundary; the whole
table is written once, here, by ``board_info`` (its ``table`` option), and read back in Python by the
controller steps that need every item (the reaper's clock half, the announcer, the plan table, the
status page). One writer and one reader, so the file's shape is stated once: a JSON object with
``now`` (the read's time) and ``items`` (the entries of ``board_info``'s ``board_items``).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, List


class TableError(Exception):
    """The table cannot be written or read (the path and the cause in the message)."""


def write_table(path: str, items: List[Dict[str, Any]], now: str) -> None:
    """Replace ``path`` whole and atomically (a reader sees the old table or the new one), mode 0600; a missing
    directory is made, mode 0700."""
    path = os.path.abspath(os.path.expanduser(path))
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix='.board-', suffix='.json', dir=folder)
    except OSError as exc:
        raise TableError('cannot write the board table in %s: %s' % (folder, exc))
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as fh:
            json.dump({'now': now, 'items': items}, fh, separators=(',', ':'), sort_keys=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError) as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise TableError('cannot write the board table %s: %s' % (path, exc))


def read_table(path: str) -> List[Dict[str, Any]]:
    """The items of the table at ``path``."""
    path = os.path.expanduser(path)
    try:
        with open(path, encoding='utf-8') as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise TableError('cannot read the board table %s: %s' % (path, exc))
    if not isinstance(doc, dict) or not isinstance(doc.get('items'), list):
        raise TableError('%s is not a board table (a JSON object with an items list)' % path)
    return doc['items']
