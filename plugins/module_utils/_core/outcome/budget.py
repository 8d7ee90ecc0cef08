# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's budget: the limits, and whether the usage the agent stated has reached one.

Pure: no I/O, no clock. The agent's usage is read by ``_core.outcome.usage.UsageMeter`` (the one
reading of agent output); the runner feeds it the capture as it grows and stops the agent's process
group at the first usage event that reaches a limit (``stop_for``), then posts the budget marker
(``_core.outcome.closeout.decide``). A cost is only ever the one the CLI stated: a profile that states
none is budgeted by tokens only (``enforceable``), and nothing is priced here.
A stop at the budget is not a failure of the work (D8): it has its own marker and counts as an attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

# Usage events after which the agent goes on working, so a stop there saves what it would spend next. A
# ``result`` is the CLI's last word: the run has ended by itself, and a limit reached there is recorded only.
STOPPING_EVENTS = frozenset(['message', 'turn'])


@dataclass(frozen=True)
class Budget:
    """A run's limits: ``tokens`` (input + output, as ``usage.token_count`` counts them) and ``usd``; None: no limit."""

    tokens: Optional[int] = None
    usd: Optional[float] = None

    def __bool__(self) -> bool:
        return self.tokens is not None or self.usd is not None

    def fields(self) -> Dict[str, Any]:
        return dict((k, v) for k, v in (('tokens', self.tokens), ('usd', self.usd)) if v is not None)


def parse_budget(value: Any) -> Budget:
    """The budget in the runner config's ``budget`` object (``{"tokens": N, "usd": X}``); a missing, null or
    zero limit is no limit. ``ValueError`` for anything else that is not a positive number."""
    if value in (None, {}):
        return Budget()
    if not isinstance(value, dict):
        raise ValueError('budget must be an object {"tokens": N, "usd": X}, not %r' % (value,))
    unknown = sorted(set(value) - set(('tokens', 'usd')))
    if unknown:
        raise ValueError('budget has unknown keys %s (known: tokens, usd)' % ', '.join(unknown))
    tokens, usd = value.get('tokens'), value.get('usd')
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0):
        raise ValueError('budget tokens must be a whole number >= 0 (0: no limit), not %r' % (tokens,))
    if usd is not None and (isinstance(usd, bool) or not isinstance(usd, (int, float)) or usd < 0):
        raise ValueError('budget usd must be a number >= 0 (0: no limit), not %r' % (usd,))
    return Budget(tokens=tokens or None, usd=float(usd) if usd else None)


def enforceable(budget: Budget, states_cost: Optional[bool]) -> Budget:
    """The part of ``budget`` a profile can be held to: its USD limit only when the CLI states a cost
    (``states_cost`` False: budgeted by tokens only; None, a custom command: held to it when it states one)."""
    if states_cost is False:
        return Budget(tokens=budget.tokens)
    return budget


def reached(budget: Budget, spend: Any) -> Optional[str]:
    """Which limit the stated ``spend`` (``usage.Spend``) has reached -- ``'tokens'`` or ``'usd'`` -- or None.
    A limit is reached at its value ("stopped at its budget"); a figure the agent did not state reaches nothing."""
    tokens = getattr(spend, 'tokens', None)
    cost = getattr(spend, 'cost_usd', None)
    if budget.tokens is not None and tokens is not None and tokens >= budget.tokens:
        return 'tokens'
    if budget.usd is not None and cost is not None and cost >= budget.usd:
        return 'usd'
    return None


def stop_for(budget: Budget, event: str, spend: Any) -> Optional[str]:
    """The limit to stop the run for after usage ``event`` (``UsageMeter.add``'s kind), or None: a limit is
    reached and the agent would go on (``STOPPING_EVENTS``)."""
    if event not in STOPPING_EVENTS:
        return None
    return reached(budget, spend)


def describe(budget: Budget, spend: Any, limit: str) -> str:
    """The budget marker's words: what was spent against which limit."""
    if limit == 'usd':
        return 'run stopped at its budget: $%s spent of $%s; not a failure of the work, it counts as an attempt' % (
            _money(getattr(spend, 'cost_usd', 0)), _money(budget.usd))
    return 'run stopped at its budget: %s tokens spent of %s; not a failure of the work, it counts as an attempt' % (
        getattr(spend, 'tokens', 0), budget.tokens)


def _money(value: Any) -> str:
    return ('%.4f' % float(value or 0)).rstrip('0').rstrip('.')


__all__ = ['Budget', 'STOPPING_EVENTS', 'describe', 'enforceable', 'parse_budget', 'reached', 'stop_for']
