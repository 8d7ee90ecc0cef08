# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reaper: which orphaned starts get a ``reset`` marker this cycle (D14). Pure, no I/O.

A run killed the hard way (SIGKILL, the OOM killer, a worker restart) never writes its ending, so
its start stays the last word and the item reads ``running`` forever. An item is reaped when all
three hold (``_core.dispatch.eligibility.orphaned``): its last marker is a start; the probe of EVERY master
answered this cycle and none has its unit live (a blind master is "unknown", and unknown never
reaps: D5, D20); and the start is older than the threshold. The probe is the signal; the clock
only keeps a blinked probe from reaping a live run. The threshold is ``FACTOR`` x the longest run
this board has observed (its own start/ending pairs, ``run_durations``), never below a floor for a
young board. A reset ends the run: the item is eligible again next cycle and the run keeps its
attempt (``count_attempts`` counts a start that ended in ``reset``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .eligibility import orphaned
from ..board.markers import Marker
from ..board.model import format_time, parse_time
from ..board.naming import unit_name

# Reading (D13): the longest run on the test bed is the fake agent's (about a second); real agent
# runs on the boards this was written against lasted minutes to an hour. 2x the longest observed
# run is the seed's rule: a live run is never older than the longest run so far by more than its
# own variance, and 2x leaves that room while an orphan still resets within one more run length.
FACTOR = 2.0
# Reading (D13): a young board has no finished run to measure. 1800 s is longer than every run the
# hand fault matrix of this collection saw (26 minutes was the longest orphan age it reported, and
# the longest finished run was well under that); a fleet whose runs are longer raises
# ``dispatch_reap_floor``. It only delays a reset: the probe still has to find no unit anywhere.
DEFAULT_FLOOR_S = 1800


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def threshold(items: Any, *, floor: Any = DEFAULT_FLOOR_S, factor: Any = FACTOR) -> Dict[str, Any]:
    """The reap threshold for this board: ``{seconds, longest_s, runs, floor_s, factor, source}``.

    ``items``: ``board_info`` items, each with ``run_durations`` (seconds of its finished runs).
    ``source`` says in words where the number came from (shown in the reset marker and the docs).
    """
    floor = float(floor)
    factor = float(factor)
    if floor < 0 or factor <= 0:
        raise ValueError('the reap floor must be >= 0 and the factor > 0, not %r and %r' % (floor, factor))
    durations = [float(d) for it in (items or []) for d in (_get(it, 'run_durations') or []) if d is not None and d >= 0]
    longest = max(durations) if durations else None
    measured = factor * longest if longest is not None else None
    if measured is not None and measured >= floor:
        seconds = measured
        source = '%gx the longest of %d runs on this board (%ds)' % (factor, len(durations), int(longest))
    elif measured is not None:
        seconds = floor
        source = 'the floor dispatch_reap_floor=%ds (%gx the longest of %d runs on this board is only %ds)' % (
            int(floor), factor, len(durations), int(measured))
    else:
        seconds = floor
        source = 'the floor dispatch_reap_floor=%ds (no finished run on this board yet)' % int(floor)
    return {'seconds': seconds, 'longest_s': longest, 'runs': len(durations), 'floor_s': floor, 'factor': factor,
            'source': source}


def _start_of(item: Any) -> Optional[Marker]:
    last = _get(item, 'last_marker') or {}
    if _get(last, 'kind') != 'start':
        return None
    try:
        at = parse_time(_get(last, 'at'))
    except (TypeError, ValueError):
        at = None
    return Marker(kind='start', at=at, fields=dict(_get(last, 'fields') or {}))


def due(items: Any, *, now: Any, limit: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The items whose last marker is a start older than the threshold: the ones to lease and probe.

    The clock half of the rule only (``orphaned`` with ``live=False``); the probe decides. A
    reopened item is not due: its reopen outranks the start (it is eligible already). Each entry is
    ``{number, repo, unit, started_at, age_s}``.
    """
    out = []
    for it in items or []:
        if _get(it, 'reason') != 'running':
            continue
        start = _start_of(it)
        if start is None:
            continue
        reap, _why = orphaned([start], now=now, live=False, threshold=limit['seconds'])
        if not reap:
            continue
        age = (parse_time(now) - start.at).total_seconds()
        out.append({'number': _get(it, 'number'), 'repo': _get(it, 'repo') or '',
                    'unit': unit_name(_get(it, 'number'), _get(it, 'repo') or ''),
                    'started_at': format_time(start.at), 'age_s': int(age)})
    return out


def reaping(items: Any, *, now: Any, floor: Any = DEFAULT_FLOOR_S) -> Dict[str, Any]:
    """The clock half of one cycle, ``{threshold, due}``: the threshold of this board and the starts older
    than it (the ``reap_due`` filter of reap.yml and the guard's ``decide`` step read this one function)."""
    limit = threshold(items, floor=floor)
    return {'threshold': limit, 'due': due(items, now=now, limit=limit)}


def decide(due_items: Any, surveyed: Dict[str, Any], masters: Any, *, now: Any, limit: Dict[str, Any],
           leases: Any = None, lease_enabled: bool = True) -> Dict[str, Any]:
    """Which due items get a reset now: ``{reap: [...], held: [...]}`` (D5, D14, D20).

    ``surveyed`` is ``_core.dispatch.plan.survey`` of this cycle's probe; ``masters`` the fleet's masters
    (``{worker, master}``). An item is reaped only if every master answered (none blind, none
    missing) and none has its unit live, and (with leases on) this run holds its lease. Each
    ``reap`` entry carries the marker's ``fields`` and ``text``; each ``held`` entry says why not.
    """
    masters = list(masters or [])
    answered = set((surveyed or {}).get('masters', {}))
    blind = ['%s/%s' % (b.get('worker'), b.get('master')) for b in (surveyed or {}).get('blind', [])]
    missing = ['%s/%s' % (m.get('worker'), m.get('master')) for m in masters
               if '%s/%s' % (m.get('worker'), m.get('master')) not in answered and
               '%s/%s' % (m.get('worker'), m.get('master')) not in blind]
    held_by = dict((le.get('name'), le) for le in (leases or []))
    live = (surveyed or {}).get('live', {})
    reap, held = [], []
    for entry in due_items or []:
        unit = entry['unit']
        if not masters:
            held.append(dict(entry, why='no master is configured: no probe, no evidence'))
            continue
        if blind or missing:
            # ``blind``: the masters that did not answer (the announcer reports an orphan held this way, D14)
            held.append(dict(entry, blind=blind + missing, why='not reaped: the probe did not answer on %s (blind is not dead)'
                             % ', '.join(blind + missing)))
            continue
        if lease_enabled:
            lease = held_by.get(unit) or {}
            if not lease.get('acquired'):
                held.append(dict(entry, why='not reaped: the lease %s is held by %s' % (unit, lease.get('owner') or 'another dispatcher')))
                continue
        waiting = ((surveyed or {}).get('spooled') or {}).get(unit) or []
        if waiting:
            # D12: the run ended and its outcome is known, only not posted yet: a reset would replace it
            held.append(dict(entry, why='not reaped: its close-out (%s) is spooled on %s, delivered by that master\'s next run'
                             % (', '.join(sorted(set(str(w.get('kind')) for w in waiting))),
                                ', '.join('%s/%s' % (w.get('worker'), w.get('master')) for w in waiting))))
            continue
        units = live.get(unit) or []
        start = Marker(kind='start', at=parse_time(entry['started_at']))
        ok, why = orphaned([start], now=now, live=bool(units), threshold=limit['seconds'])
        if not ok:
            held.append(dict(entry, why='not reaped: ' + why))
            continue
        text = ('reset by the reaper: no live %s on any of the %d masters probed; started at %s (%ds ago); '
                'threshold %ds, from %s') % (unit, len(masters), entry['started_at'], entry['age_s'],
                                             int(limit['seconds']), limit['source'])
        fields = {'unit': unit, 'reason': 'orphaned', 'masters_probed': len(masters), 'started_at': entry['started_at'],
                  'age_s': entry['age_s'], 'threshold_s': int(limit['seconds']), 'threshold_source': limit['source'],
                  'at': format_time(parse_time(now))}
        reap.append(dict(entry, fields=fields, text=text))
    return {'reap': reap, 'held': held}


__all__ = ['FACTOR', 'DEFAULT_FLOOR_S', 'threshold', 'due', 'decide']
