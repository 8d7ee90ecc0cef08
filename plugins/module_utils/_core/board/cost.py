# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cost of an item's runs, summed from its close-out markers.

Pure. Each terminal marker carries what the run's envelope stated (``turns``, ``tokens``,
``cost_usd``; ``_runner.run.run_cost``); this adds them up and never fills a gap: a run whose
envelope stated no cost adds nothing to ``cost_usd`` and is not counted in ``priced_runs``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable

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


__all__ = ['run_cost']
