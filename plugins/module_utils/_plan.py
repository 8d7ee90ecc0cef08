# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From a board read to a plan: every item assessed, every candidate placed. Pure, no I/O.

This is the one place that turns the queue into decisions for *both* dispatch paths -- the
sweeper and the hand dispatch call the same functions through ``board_info`` and the shared
dispatch tasks (D15: a guard living only in one consumer cannot see the other path).

* ``assess`` -- each item's eligibility verdict (``_eligibility.evaluate``), the attempt count
  derived from its markers (D1: never stored), its open blockers (D9) and its artifacts, as
  JSON-ready dicts; ``candidates`` keeps the eligible ones in board order.
* ``place`` -- put each candidate on the master with the most measured headroom (D13: there
  is no concurrency cap; attempt caps and capacity cooldowns bound waste, a cap only bounds
  useful work). Dark masters get nothing (D8). Placement is deterministic for equal input.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ._eligibility import evaluate
from ._model import format_time, to_jsonable


def _marker_dict(marker, now) -> Optional[Dict[str, Any]]:
    if marker is None:
        return None
    at = getattr(marker, 'at', None)
    age = None
    if at is not None and now is not None:
        age = int((now - at).total_seconds())
    return {
        'kind': marker.kind,
        'at': format_time(at),
        'age_s': age,
        'fields': to_jsonable(getattr(marker, 'fields', {}) or {}),
    }


def assess(items, *, now, ready='Ready', max_attempts=3) -> List[Dict[str, Any]]:
    """Every item with its verdict, as JSON-ready dicts (the ``items`` of ``board_info``)."""
    out = []
    for item in items:
        verdict = evaluate(item, now=now, ready=ready, max_attempts=max_attempts)
        out.append({
            'id': item.id,
            'number': item.number,
            'repo': item.repo,
            'title': item.title,
            'url': item.url,
            'state': item.state,
            'status': item.status,
            'eligible': bool(verdict.eligible),
            'reason': verdict.reason,
            'attempts': verdict.attempts,
            'max_attempts': max_attempts,
            'not_before': format_time(getattr(verdict, 'not_before', None)),
            'last_marker': _marker_dict(verdict.last_marker, now),
            'blockers': [{'number': b.number, 'repo': b.repo, 'state': b.state} for b in item.blockers],
            'open_blockers': list(getattr(verdict, 'open_blockers', []) or []),
            'artifacts': to_jsonable(item.artifacts),
        })
    return out


def candidates(assessed) -> List[Dict[str, Any]]:
    """The eligible items, in board order."""
    return [entry for entry in assessed if entry['eligible']]


def _headroom_key(master):
    """Most headroom first: fewest live runs, then lowest load per CPU, then most memory.

    Unknown figures (a probe that did not answer) sort as if the master were idle: guards
    fail open (D5), and a blind spot must not become a refusal.
    """
    head = master.get('headroom') or {}
    live = head.get('live_runs') or 0
    cpus = head.get('cpus') or 1
    load = head.get('load1')
    load = 0.0 if load is None else float(load) / float(cpus)
    mem = head.get('mem_available_kb')
    mem = 0 if mem is None else -int(mem)
    return (live, load, mem, master.get('worker', ''), master.get('master', ''))


def place(cands, masters) -> Dict[str, Any]:
    """Place candidates on masters; returns ``{'assignments': [...], 'unplaced': [...], 'dark': [...]}``.

    ``masters`` are dicts ``{worker, master, dark, source, reset_at, headroom: {live_runs,
    load1, cpus, mem_available_kb}}``. Each placement counts as one more live run on the
    chosen master before the next candidate is placed, so a batch spreads across the fleet
    by headroom instead of piling onto one box -- without any cap (D13).
    """
    usable = []
    dark = []
    for m in masters:
        if m.get('dark'):
            dark.append({
                'worker': m.get('worker'), 'master': m.get('master'),
                'source': m.get('source'),
                'reset_at': m.get('reset_at') or 'unknown',
                'why': m.get('why', ''),
            })
            continue
        entry = dict(m)
        entry['headroom'] = dict(m.get('headroom') or {})
        usable.append(entry)
    assignments = []
    unplaced = []
    for cand in cands:
        if not usable:
            unplaced.append({'number': cand['number'], 'repo': cand.get('repo', ''),
                             'why': 'no usable master: every master is dark or none is configured'})
            continue
        best = min(usable, key=_headroom_key)
        assignments.append({'number': cand['number'], 'repo': cand.get('repo', ''),
                            'title': cand.get('title', ''),
                            'worker': best.get('worker'), 'master': best.get('master')})
        head = best['headroom']
        head['live_runs'] = (head.get('live_runs') or 0) + 1
    return {'assignments': assignments, 'unplaced': unplaced, 'dark': dark}
