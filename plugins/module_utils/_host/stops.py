# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deliberate-stop note and the duplicate stop: one writer, one reader, one stop (D4, D12).

When the probe finds one item live twice, the dispatcher stops the younger run. The run must not
read that SIGTERM as a failure, so before the stop the dispatcher writes a note, and the runner
takes it in its SIGTERM handler: ``<state_dir>/stops/<unit>.<InvocationID>.json`` (format:
docs/dispatch.md, "Duplicate repair"). ``stop_duplicate`` is the module's; ``take_stop_note`` the
runner's; both name the file with ``stop_note_path``, and the stop itself is ``SystemdUser.stop``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Optional

from .files import default_state_dir
from .systemd import SystemdError

STOPS_SUBDIR = 'stops'
NOTE_REASON = 'duplicate'
# 'duplicate': the dispatch path's repair (D4); 'operator': a human's deliberate stop (run_stop, docs/operator.md)
NOTE_REASONS = (NOTE_REASON, 'operator')


def _service(unit: str) -> str:
    return unit if unit.endswith('.service') else unit + '.service'


def _bare(unit: str) -> str:
    return unit[:-len('.service')] if unit.endswith('.service') else unit


def stop_note_path(state_dir: str, unit: str, invocation_id: str) -> str:
    """Where the note for one invocation of one unit lives (the unit without ``.service``)."""
    if not invocation_id or '/' in invocation_id or '/' in unit:
        raise ValueError('a stop note needs a unit and an InvocationID without "/": %r, %r' % (unit, invocation_id))
    return os.path.join(state_dir, STOPS_SUBDIR, '%s.%s.json' % (_bare(unit), invocation_id))


def write_stop_note(state_dir: str, unit: str, invocation_id: str, note: Dict[str, Any]) -> str:
    """Write the note atomically (the runner reads the old state or the whole note); returns its path."""
    if note.get('reason') not in NOTE_REASONS or note.get('invocation_id') not in (None, invocation_id):
        raise ValueError('a stop note says a reason of %s and names the stopped invocation %s, not %r'
                         % ('/'.join(NOTE_REASONS), invocation_id, note.get('invocation_id')))
    path = stop_note_path(state_dir, unit, invocation_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), '.%s.%d.tmp' % (os.path.basename(path), os.getpid()))
    with open(tmp, 'w', encoding='utf-8') as handle:
        handle.write(json.dumps(dict(note, invocation_id=invocation_id), sort_keys=True) + '\n')
    os.replace(tmp, path)
    return path


def take_stop_note(state_dir: str, unit: str, invocation_id: str,
                   log: Optional[Callable[[str], None]] = None) -> Optional[Dict[str, Any]]:
    """The note for THIS invocation, read once and deleted; None when there is none.

    A note for another invocation is stale and never read (its run is gone); anything that is not
    a JSON object saying ``reason: duplicate`` (or ``operator``) for this invocation is no evidence: None.
    """
    try:
        path = stop_note_path(state_dir, unit, invocation_id)
    except ValueError:
        return None
    try:
        with open(path, encoding='utf-8') as handle:
            note = json.load(handle)
    except (OSError, ValueError):
        return None
    try:
        os.unlink(path)
    except OSError as exc:
        if log is not None:
            log('WARNING: the stop note %s could not be deleted: %s' % (path, exc))
    if not isinstance(note, dict) or note.get('reason') not in NOTE_REASONS or note.get('invocation_id') not in (None, invocation_id):
        return None
    return note


def stop_duplicate(sd, state_dir: str, unit: str, invocation_id: str, note: Dict[str, Any], check: bool = False) -> Dict[str, Any]:
    """Stop ``unit`` on ``sd`` (a ``SystemdUser``) only while it is still the duplicate invocation.

    1. Read the unit's InvocationID: another one (a new run took the name) or none (it ended) is
       ``reason: moved-on`` and nothing is touched.
    2. Check mode: ``would-stop``, nothing written.
    3. Write the note, then ``SystemdUser.stop``; when systemd refuses, the note is removed again (a
       note left for a live run would make its next external stop read as a duplicate stop) and
       ``SystemdError`` is raised.

    Returns ``{unit, invocation_id, current_invocation_id, stopped, changed, reason, note_path}``.
    """
    service = _service(unit)
    current = sd.show(service, props=('Id', 'LoadState', 'ActiveState', 'InvocationID')).get('InvocationID') or None
    res = {'unit': _bare(unit), 'invocation_id': invocation_id, 'current_invocation_id': current, 'stopped': False,
           'changed': False, 'reason': None, 'note_path': stop_note_path(state_dir, unit, invocation_id)}
    if current != invocation_id:
        res['reason'] = 'moved-on'
        return res
    if check:
        res.update(changed=True, reason='would-stop')
        return res
    path = write_stop_note(state_dir, unit, invocation_id, note)
    try:
        sd.stop(service)
    except SystemdError:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    res.update(stopped=True, changed=True, reason='stopped')
    return res


__all__ = ['NOTE_REASON', 'NOTE_REASONS', 'default_state_dir', 'stop_duplicate', 'stop_note_path', 'take_stop_note', 'write_stop_note']
