# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launched is not started (D20): did each launched run start? Pure, no I/O, no clock.

``systemd-run`` answering 0 says a unit was created; it says nothing about the run. A runner that
cannot open the board exits ``EXIT_START_LOST`` within a second, posts nothing, and to a dispatcher that only read
the launch it looks exactly like a run that started. So a launch is confirmed by two facts:

* on the master (``judge``, fed by ``fleet.dispatch.start_info``): the runner's start record
  (``<state_dir>/runs/<unit>/start.json``) for THIS invocation says it started (written only after
  its start marker reached the board) or why it could not; without a record, the unit's own result
  (it ended, or a different invocation holds the name) is a failed start, and a unit still running
  with no record after the bounded wait is ``unconfirmed`` -- never silently ``started``;
* on the board (``confirm``, on the controller): a marker of that run (``fields.run``) is on THIS
  dispatcher's board. A runner that posted elsewhere (a master whose runner serves another board)
  did not start this item.

The words are ``started``, ``failed to start: <the runner's reason>``, ``start not confirmed``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..outcome.exits import name_of

# ActiveState values after which no start record can still come (systemd.unit(5)).
_ENDED = frozenset(('inactive', 'failed'))


def judge(unit: Optional[Dict[str, Any]], record: Optional[Dict[str, Any]], invocation_id: str = '') -> Dict[str, Any]:
    """One run's start from what the master shows: ``{state, cause, reason, run}``.

    ``unit``: ``systemctl --user show`` properties (``LoadState``, ``ActiveState``, ``Result``,
    ``ExecMainStatus``, ``InvocationID``), None when it could not be read. ``record``: the run's
    start record, None when absent. ``state`` is ``started``, ``failed`` or ``pending`` (look again).
    """
    unit = unit or {}
    if isinstance(record, dict) and (not invocation_id or record.get('invocation_id') in ('', None, invocation_id)):
        if record.get('started'):
            return {'state': 'started', 'cause': '', 'reason': '', 'run': record.get('run') or ''}
        return {'state': 'failed', 'cause': record.get('cause') or 'start_failed', 'run': record.get('run') or '',
                'reason': record.get('reason') or 'the runner recorded a failed start without a reason'}
    now_id = unit.get('InvocationID') or ''
    gone = unit.get('LoadState') == 'not-found' or unit.get('ActiveState') in _ENDED
    if gone or (invocation_id and now_id and now_id != invocation_id):
        status = unit.get('ExecMainStatus') or ''
        if name_of(status):     # the runner's own word for its exit (_core.outcome.exits)
            status = '%s, %s' % (status, name_of(status))
        result = unit.get('Result') or ''
        how = ('it is gone (collected)' if unit.get('LoadState') == 'not-found'
               else 'another invocation (%s) holds the name now' % now_id if not gone
               else 'it ended (result %s, exit status %s)' % (result or '?', status or '?'))
        return {'state': 'failed', 'cause': 'no_start_record', 'run': '',
                'reason': 'the unit was launched but the runner left no start record for this invocation and %s; '
                          'its journal says why (journalctl --user -u UNIT on the master)' % how}
    return {'state': 'pending', 'cause': '', 'reason': '', 'run': ''}


def _marker_runs(item: Optional[Dict[str, Any]]) -> List[str]:
    """The run ids the board shows for an item (its last marker's; ``board_info`` returns that one)."""
    marker = (item or {}).get('last_marker') or {}
    run = (marker.get('fields') or {}).get('run')
    return [str(run)] if run else []


def text(row: Dict[str, Any]) -> str:
    """The words for one launched run's start."""
    if row.get('start') == 'started':
        return 'started'
    if row.get('start') == 'failed':
        return 'failed to start: %s' % (row.get('start_reason') or 'no reason recorded')
    if row.get('start') == 'unconfirmed':
        return 'start not confirmed: %s' % (row.get('start_reason') or 'no answer')
    return 'launched (start not checked: %s)' % (row.get('start_reason') or 'the run command is not fleet-runner')


def confirm(launched, answers, items=None, wait: float = 0) -> Dict[str, Any]:
    """Join the launch report, the masters' start answers and the board's markers.

    ``launched``: the launch report's rows (``unit``, ``worker``, ``master``, ``invocation_id``,
    ``number``). ``answers``: ``start_info`` answer records (``target``: a batch ``{worker, master}``,
    ``runs``: one ``judge`` result per unit plus ``unit``). ``items``: the board's items for the
    started ones (``board_info``); None skips the board check (not read). Returns ``launched`` (each
    row with ``start``, ``start_reason``, ``start_cause``, ``start_text``), ``started``,
    ``failed_to_start``, ``unconfirmed`` and ``warnings``.
    """
    found, blind = {}, {}
    for res in answers or []:
        where = res.get('target') or {}
        key = (where.get('worker'), where.get('master'))
        if res.get('status', 'ok') != 'ok':
            blind[key] = res.get('msg') or res.get('status') or 'no answer'
            continue
        for run in res.get('runs') or []:
            found[(key[0], key[1], run.get('unit'))] = run
    by_number = dict(((i.get('number'), i.get('repo') or ''), i) for i in items or [])
    rows, started, failed, unconfirmed, warnings = [], [], [], [], []
    for entry in launched or []:
        row = dict(entry)
        key = (row.get('worker'), row.get('master'))
        run = found.get((key[0], key[1], row.get('unit')))
        if run is None:
            row.update(start='unconfirmed', start_cause='no_answer',
                       start_reason='%s/%s did not answer the start check (%s)' % (key[0], key[1], blind.get(key, 'no answer')))
        elif run.get('state') == 'started':
            row.update(start='started', start_cause='', start_reason='', run=run.get('run') or '')
            if items is not None and run.get('run') and run['run'] not in _marker_runs(
                    by_number.get((row.get('number'), row.get('repo') or ''))):
                row.update(start='failed', start_cause='other_board', start_reason=(
                    'the runner on %s/%s recorded run %s as started, but no marker of that run is on this dispatcher\'s '
                    'board: the runner there posts to another board (a master serves one board: point its '
                    'worker_runner_board at this one)' % (key[0], key[1], run['run'])))
        elif run.get('state') == 'failed':
            row.update(start='failed', start_cause=run.get('cause') or 'start_failed', start_reason=run.get('reason') or '')
        else:
            row.update(start='unconfirmed', start_cause='timeout',
                       start_reason='no start record within %ss and the unit is still running' % (int(wait) if wait else '?'))
        row['start_text'] = text(row)
        rows.append(row)
        label = '%s on %s/%s' % (row.get('unit'), key[0], key[1])
        if row['start'] == 'started':
            started.append(row)
        elif row['start'] == 'failed':
            failed.append(row)
            warnings.append('%s: %s' % (label, row['start_text']))
        else:
            unconfirmed.append(row)
            warnings.append('%s: %s' % (label, row['start_text']))
    return {'launched': rows, 'started': started, 'failed_to_start': failed, 'unconfirmed': unconfirmed,
            'warnings': warnings}


def not_checked(launched, why: str) -> List[Dict[str, Any]]:
    """The launch rows when no start check ran (a run command that is not the fleet runner, check mode)."""
    out = []
    for entry in launched or []:
        row = dict(entry, start='not_checked', start_cause='', start_reason=why)
        row['start_text'] = text(row)
        out.append(row)
    return out
