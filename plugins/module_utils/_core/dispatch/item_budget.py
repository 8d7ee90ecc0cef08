# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An item's budget across its attempts: what its runs spent, and whether that reached the cap.

Pure: no I/O, no clock. The spend is the sum of what each run's terminal marker records (``tokens``
and ``cost_usd``, as the agent stated them: ``_runner.closeout.run_cost``) over the runs since the last
reopen that counts -- the human's act that starts the count again, as for the attempt cap. A run that
stated no cost adds nothing to the USD figure and is not a priced run: nothing is estimated, so a USD
cap over unpriced runs is a floor, and ``describe`` says how many runs were priced.

An item whose spend reached the cap is held (``budget_spent``, ``_core.dispatch.eligibility``) until a
human reopens it or raises the cap. Each run is also held to what is left (``remaining``): the dispatcher
passes it to the runner, which stops the run at the smaller of it and the run's own budget. A stop at a
budget is not a failure of the work (D8): the hold is its own reason, never ``parked``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional

from ..board.cost import run_cost
from ..outcome.budget import Budget, parse_budget, reached

ENV = {'tokens': 'FLEET_ITEM_BUDGET_TOKENS', 'usd': 'FLEET_ITEM_BUDGET_USD'}
"""The launch environment that carries what is left of the item's budget to its run (non-secret figures)."""


@dataclass(frozen=True)
class ItemSpend:
    """What an item's runs stated they spent: ``tokens`` and ``cost_usd`` (None: no run stated it),
    over ``runs`` closed runs of which ``priced_runs`` stated a cost."""

    runs: int = 0
    priced_runs: int = 0
    tokens: Optional[int] = None
    cost_usd: Optional[float] = None

    def fields(self) -> Dict[str, Any]:
        return {'runs': self.runs, 'priced_runs': self.priced_runs, 'tokens': self.tokens, 'cost_usd': self.cost_usd}


def item_budget(tokens: Any = 0, usd: Any = 0) -> Budget:
    """The per-item cap from the dispatcher's options (0 or None: no limit); ``ValueError`` as ``parse_budget``."""
    return parse_budget({'tokens': tokens or None, 'usd': usd or None})


def item_spend(markers: Iterable[Any], since: Any = None) -> ItemSpend:
    """The spend of the runs whose terminal marker is at or after ``since`` (the last reopen that counts; None:
    every run). A marker without a time is counted when there is no ``since`` only."""
    chosen = [m for m in markers or () if since is None or (getattr(m, 'at', None) is not None and m.at >= since)]
    cost = run_cost(chosen)
    tokens = cost['tokens']
    return ItemSpend(runs=cost['runs'], priced_runs=cost['priced_runs'],
                     tokens=int(tokens) if tokens is not None else None, cost_usd=cost['cost_usd'])


def spent(budget: Optional[Budget], spend: ItemSpend) -> Optional[str]:
    """Which of the item's limits its spend has reached -- ``'tokens'`` or ``'usd'`` -- or None."""
    if not budget:
        return None
    return reached(budget, spend)


def remaining(budget: Optional[Budget], spend: ItemSpend) -> Budget:
    """What is left of the item's budget for its next run (a limit nobody spent against is the whole limit;
    a reached one is 0, which the runner reads as "stop at the first usage event")."""
    if not budget:
        return Budget()
    tokens = usd = None
    if budget.tokens is not None:
        tokens = max(0, budget.tokens - (spend.tokens or 0))
    if budget.usd is not None:
        usd = max(0.0, round(budget.usd - (spend.cost_usd or 0.0), 6))
    return Budget(tokens=tokens, usd=usd)


def left_env(left: Any) -> Dict[str, str]:
    """The launch environment (``ENV``) for what is left of an item's budget, ``remaining(...).fields()``
    as ``board_info`` returns it (``budget_left``); nothing when the item has no budget."""
    out = {}
    left = left if isinstance(left, dict) else {}
    if left.get('tokens') is not None:
        out[ENV['tokens']] = str(int(left['tokens']))
    if left.get('usd') is not None:
        out[ENV['usd']] = ('%.6f' % float(left['usd'])).rstrip('0').rstrip('.') or '0'
    return out


def from_env(environ: Any) -> Optional[Budget]:
    """The run's share of its item's budget from the launch environment (``remaining_env``); None when the
    dispatcher set none. A figure that does not parse is ignored (D5: a guard fails open) -- the dispatcher's
    hold still stops the item at its cap."""
    tokens = usd = None
    text = str((environ or {}).get(ENV['tokens'], '') or '').strip()
    if text:
        try:
            tokens = int(text)
        except ValueError:
            tokens = None
    text = str((environ or {}).get(ENV['usd'], '') or '').strip()
    if text:
        try:
            usd = float(text)
        except ValueError:
            usd = None
    if tokens is not None and tokens < 0:
        tokens = None
    if usd is not None and (not math.isfinite(usd) or usd < 0):
        usd = None
    if tokens is None and usd is None:
        return None
    return Budget(tokens=tokens, usd=usd)


def tighter(run: Budget, item: Optional[Budget]) -> Budget:
    """The budget a run is held to: each limit the smaller of the run's and what is left of its item's."""
    if item is None:
        return run

    def low(a, b):
        return b if a is None else (a if b is None else min(a, b))
    return Budget(tokens=low(run.tokens, item.tokens), usd=low(run.usd, item.usd))


def describe(budget: Budget, spend: ItemSpend, limit: str) -> str:
    """The hold's words: what the item's runs spent against which cap, and how a human lifts it."""
    if limit == 'usd':
        what = '$%s stated over %d run(s) (%d priced) reached its item budget of $%s' % (
            _money(spend.cost_usd), spend.runs, spend.priced_runs, _money(budget.usd))
    else:
        what = '%s tokens over %d run(s) reached its item budget of %s tokens' % (spend.tokens, spend.runs, budget.tokens)
    return what + ': reopen the item (a reopen starts the count again) or raise the item budget'


def _money(value: Any) -> str:
    return ('%.4f' % float(value or 0)).rstrip('0').rstrip('.') or '0'


__all__ = ['ENV', 'ItemSpend', 'describe', 'from_env', 'item_budget', 'item_spend', 'left_env', 'remaining', 'spent',
           'tighter']
