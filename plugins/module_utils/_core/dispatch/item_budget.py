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

An item may carry its own budget (the board's budget field, ``for_item``): each limit it names replaces
the dispatcher's for that item -- how a human raises the budget of one held item -- and ``none`` lifts
both. A field that is not a budget changes nothing (D5: the dispatcher's budget holds, and explain says
the field was not read).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional, Tuple

from ..board.cost import run_cost
from ..outcome.budget import Budget, parse_budget, reached
from ..outcome.profiles import PROFILES

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


_TERM = re.compile(r'\s*(?:(?P<none>none)|\$\s*(?P<dollars>\d+(?:\.\d+)?)|(?P<num>\d+(?:\.\d+)?)\s*(?P<mult>[km])?'
                   r'\s*(?P<unit>usd|tokens|token|tok)?)\s*(?:[,;]|(?=\$)|(?=\d)|$)', re.IGNORECASE)
_MULT = {'': 1, 'k': 1000, 'm': 1000000}


def parse_override(value: Any) -> Dict[str, Optional[float]]:
    """The limits an item's budget field names: ``{'tokens': N}``, ``{'usd': X}`` or both, a limit of 0 being
    no limit (None); ``none`` names both as no limit; empty or None names nothing (``{}``). A number (a number
    field) is tokens. Text is terms split by commas or spaces: ``50000``, ``50k tokens``, ``2M``, ``$2.50``,
    ``2.5 usd``. ``ValueError`` for anything else, or a limit named twice."""
    if value is None or isinstance(value, bool) and not value:
        return {}
    if isinstance(value, bool):
        raise ValueError('a budget is a number of tokens or $ dollars, not %r' % (value,))
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0 or float(value) != int(value):
            raise ValueError('a budget number is a whole number of tokens >= 0, not %r' % (value,))
        return {'tokens': int(value) or None}
    text = str(value).strip()
    out = {}   # type: Dict[str, Optional[float]]
    pos = 0
    while pos < len(text):
        found = _TERM.match(text, pos)
        if not found or found.end() == pos:
            raise ValueError('%r is not a budget (terms like 50000, 50k tokens, $2.50, none)' % text)
        pos = found.end()
        if found.group('none'):
            pairs = [('tokens', None), ('usd', None)]
        elif found.group('dollars') is not None or (found.group('unit') or '').lower() == 'usd':
            if found.group('mult'):
                raise ValueError('%r is not a budget: a dollar figure takes no k or M' % text)
            usd = float(found.group('dollars') if found.group('dollars') is not None else found.group('num'))
            pairs = [('usd', usd or None)]
        else:
            tokens = float(found.group('num')) * _MULT[(found.group('mult') or '').lower()]
            if tokens != int(tokens):
                raise ValueError('%r is not a budget: tokens are a whole number' % text)
            pairs = [('tokens', int(tokens) or None)]
        for key, limit in pairs:
            if key in out:
                raise ValueError('%r is not a budget: it names the %s limit twice' % (text, key))
            out[key] = limit
    return out


def for_item(default: Optional[Budget], value: Any) -> Tuple[Budget, str]:
    """The item budget ``item`` is held to, from the dispatcher's ``default`` and the item's budget field
    ``value`` (``parse_override``): each limit the field names replaces the default's. The second value says
    why the field was not read (``''`` when it was, or there is none); the default then holds (D5)."""
    base = default or Budget()
    try:
        named = parse_override(value)
    except ValueError as exc:
        return base, 'its budget field is not read (%s): the dispatcher\'s item budget holds' % exc
    if not named:
        return base, ''
    return Budget(tokens=named.get('tokens', base.tokens), usd=named.get('usd', base.usd)), ''


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


def held_by(budget: Optional[Budget], spend: Optional[ItemSpend], agent: Any = '') -> Dict[str, Any]:
    """Which limits of the item's budget can hold it: ``{'limits': ['tokens', 'usd'], 'short': ..., 'text': ...}``
    (``short``: ``tokens and usd``, ``tokens only``, ``nothing`` ...; ``text`` adds why); ``{}`` without a budget.

    A cost is never estimated, so a USD limit holds only where a cost is stated: not when the agent profile the item's
    route asks for states none (``codex``, ``gemini``), nor once its runs have all stated none (none priced). The item is
    then held by tokens only, or by nothing, and ``text`` says which and why. Before any run, an item that names no
    profile is held to the USD limit when its CLI states a cost (the runner checks it there)."""
    if not budget:
        return {}
    spend = spend or ItemSpend()
    limits, why = [], ''
    if budget.tokens is not None:
        limits.append('tokens')
    if budget.usd is not None:
        prof = PROFILES.get(str(agent or '').strip().lower())
        if prof is not None and prof.states_cost is False:
            why = 'the %s profile it is routed to states no cost' % prof.name
        elif spend.runs and not spend.priced_runs:
            why = 'its %d run(s) since the last reopen stated no cost' % spend.runs
        else:
            limits.append('usd')
    short = ('tokens only' if limits else 'nothing') if why else ' and '.join(limits)
    text = short
    if why:
        text += ': %s%s' % (why, ', and a cost is never estimated' if limits else
                            ' and it has no token limit; a cost is never estimated')
    return {'limits': limits, 'short': short, 'text': text}


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


__all__ = ['ENV', 'ItemSpend', 'describe', 'for_item', 'from_env', 'item_budget', 'item_spend', 'left_env', 'parse_override',
           'remaining', 'spent', 'tighter']
