# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cost of an item's runs, summed from its close-out markers (in all, and per master that ran them).

Pure. Each terminal marker carries what the run's envelope stated (``turns``, ``tokens``,
``cost_usd``; ``_runner.closeout.run_cost``); this adds them up and never fills a gap: a run whose
envelope stated no cost adds nothing to ``cost_usd`` and is not counted in ``priced_runs``.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, Iterable, List, Tuple

from .markers import TERMINAL


def _number(value: Any):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def run_cost(markers: Iterable[Any]) -> Dict[str, Any]:
    """``{'runs', 'turns', 'tokens', 'cost_usd', 'priced_runs'}`` over the terminal markers.

    ``turns``/``tokens``/``cost_usd`` are None when no run stated them.
    """
    runs, priced = 0, 0
    sums = {'turns': None, 'tokens': None, 'cost_usd': None}
    for marker in markers or ():
        if getattr(marker, 'kind', None) not in TERMINAL or getattr(marker, 'kind', None) == 'reset':
            continue   # the reaper's reset closes no run of its own
        fields = getattr(marker, 'fields', None) or {}
        runs += 1
        for key in sums:
            value = _number(fields.get(key))
            if value is None:
                continue
            sums[key] = (sums[key] or 0) + value
            if key == 'cost_usd':
                priced += 1
    if sums['cost_usd'] is not None:
        sums['cost_usd'] = round(sums['cost_usd'], 6)
    return dict(sums, runs=runs, priced_runs=priced)


def spend_by_master(markers: Iterable[Any]) -> List[Dict[str, Any]]:
    """``run_cost`` of the runs each master ran, as their close-out markers name it (``host``/``master`` fields):
    ``[{'host', 'master', 'runs', 'priced_runs', 'tokens', 'cost_usd'}]``, sorted. A close-out that names no
    master is counted under empty names (the runner writes both; an old or hand-made marker may not)."""
    groups = {}   # type: Dict[Tuple[str, str], List[Any]]
    for marker in markers or ():
        fields = getattr(marker, 'fields', None) or {}
        key = (str(fields.get('host') or ''), str(fields.get('master') or ''))
        groups.setdefault(key, []).append(marker)
    return _rows(groups, ('host', 'master'))


def fleet_spend(rows: Iterable[Any]) -> List[Dict[str, Any]]:
    """Many ``spend_by_master`` rows (every item's) folded into one per master, sorted; a sum stays None
    while no run stated it (never a 0 nobody stated)."""
    totals = {}   # type: Dict[Tuple[str, str], Dict[str, Any]]
    for row in rows or ():
        if not isinstance(row, dict):
            continue
        key = (str(row.get('host') or ''), str(row.get('master') or ''))
        entry = totals.setdefault(key, {'host': key[0], 'master': key[1], 'runs': 0, 'priced_runs': 0,
                                        'tokens': None, 'cost_usd': None})
        entry['runs'] += int(_number(row.get('runs')) or 0)
        entry['priced_runs'] += int(_number(row.get('priced_runs')) or 0)
        for name in ('tokens', 'cost_usd'):
            value = _number(row.get(name))
            if value is not None:
                entry[name] = (entry[name] or 0) + value
    out = [totals[key] for key in sorted(totals)]
    for entry in out:
        if entry['cost_usd'] is not None:
            entry['cost_usd'] = round(entry['cost_usd'], 6)
    return out


def spend_by_account_day(markers: Iterable[Any]) -> List[Dict[str, Any]]:
    """``run_cost`` of the runs each agent account closed each UTC day, from close-outs that name their ``account``
    (the launch's ``FLEET_ACCOUNT``): ``[{'account', 'day', 'runs', 'priced_runs', 'tokens', 'cost_usd'}]``, sorted.
    A close-out without an account or a time counts for no day (an account's daily budget,
    ``_core.outcome.account_budget``)."""
    groups = {}   # type: Dict[Tuple[str, str], List[Any]]
    for marker in markers or ():
        fields = getattr(marker, 'fields', None) or {}
        at = getattr(marker, 'at', None)
        account = str(fields.get('account') or '')
        if not account or at is None or getattr(marker, 'kind', None) not in TERMINAL:
            continue
        day = at.astimezone(_dt.timezone.utc).date().isoformat()
        groups.setdefault((account, day), []).append(marker)
    return _rows(groups, ('account', 'day'))


def _rows(groups: Dict[Tuple[str, str], List[Any]], names: Tuple[str, str]) -> List[Dict[str, Any]]:
    """One ``run_cost`` row per group key (named ``names``) that closed a run, sorted by the key."""
    out = []
    for key in sorted(groups):
        cost = run_cost(groups[key])
        if cost['runs']:
            out.append(dict(zip(names, key), runs=cost['runs'], priced_runs=cost['priced_runs'], tokens=cost['tokens'],
                            cost_usd=cost['cost_usd']))
    return out


__all__ = ['fleet_spend', 'run_cost', 'spend_by_account_day', 'spend_by_master']
