# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An agent account's daily budget: the capacity source ``budget`` (D8's semantics). Pure, no I/O, no clock.

Each run carries the account the dispatcher placed it on (``ACCOUNT_ENV`` in the launch; the runner writes it
as ``account`` in its start and close-out markers), so an account's spend on a day is the sum of what the
close-outs of that account dated that day (UTC) stated (``_core.board.cost.spend_by_account_day``). When it
reaches the daily budget, every master of the account is dark with source ``budget`` until the next day
boundary (00:00 UTC): "this account cannot accept work", never "the work failed" -- no marker, no attempt.
A cost is never estimated: a USD limit counts only the runs that stated a cost, so a CLI that states none is
held by tokens or not at all, and the figures say how many runs were priced.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, Iterable, List, Optional

from ..board.model import format_time, parse_time
from .budget import Budget, reached

ACCOUNT_ENV = 'FLEET_ACCOUNT'
"""The launch environment naming the run's agent account (an identity, never a key)."""

SOURCE = 'budget'

UTC = _dt.timezone.utc


def account_key(master: Dict[str, Any]) -> str:
    """A master's account as the daily budget counts it: its ``account``, else the master itself (as
    ``_core.outcome.capacity.share_by_account`` reads a master with none)."""
    return str(master.get('account') or '%s/%s' % (master.get('worker'), master.get('master')))


def day_of(now: Any) -> str:
    """The UTC day of ``now`` as ``YYYY-MM-DD``."""
    return parse_time(now).astimezone(UTC).date().isoformat()


def next_day(now: Any) -> _dt.datetime:
    """The next day boundary after ``now``: 00:00 UTC of the following day."""
    when = parse_time(now).astimezone(UTC)
    return _dt.datetime(when.year, when.month, when.day, tzinfo=UTC) + _dt.timedelta(days=1)


SHOWN_DAYS = 7  # unmeasured guess: a week of spend per account in status and on the page. Experiment: ask operators
# which past days they look up; the board keeps every day (board_info's spend_by_account_day) anyway


def _fold(items: Iterable[Dict[str, Any]], days: Iterable[str]) -> Dict[Any, Dict[str, Any]]:
    """Per ``(account, day)`` of ``days``, the sum of every item's ``spend_by_account_day`` rows (``board_info``);
    a figure nobody stated stays None."""
    wanted = frozenset(days)
    out = {}   # type: Dict[Any, Dict[str, Any]]
    for item in items or ():
        for row in (item.get('spend_by_account_day') or []) if isinstance(item, dict) else ():
            if not isinstance(row, dict) or row.get('day') not in wanted or not row.get('account'):
                continue
            entry = out.setdefault((str(row['account']), row['day']),
                                   {'runs': 0, 'priced_runs': 0, 'tokens': None, 'cost_usd': None})
            entry['runs'] += int(row.get('runs') or 0)
            entry['priced_runs'] += int(row.get('priced_runs') or 0)
            for name in ('tokens', 'cost_usd'):
                value = row.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    entry[name] = (entry[name] or 0) + value
    return out


def account_spend(items: Iterable[Dict[str, Any]], now: Any) -> Dict[str, Dict[str, Any]]:
    """Per account, what its runs closed on ``now``'s UTC day stated: ``{account: {runs, priced_runs, tokens,
    cost_usd}}`` from each item's ``spend_by_account_day`` (``board_info``); a figure nobody stated stays None."""
    return dict((account, entry) for (account, _day), entry in _fold(items, [day_of(now)]).items())


def account_days(items: Iterable[Dict[str, Any]], now: Any, budget: Optional[Budget] = None,
                 days: int = SHOWN_DAYS) -> List[Dict[str, Any]]:
    """Spend per account and UTC day over the ``days`` days up to ``now``'s, newest day first, then by account:
    ``{account, day, today, runs, priced_runs, tokens, cost_usd, limit, reset_at}``. ``limit`` is the daily
    budget's limit that day's spend reached (``'tokens'``/``'usd'``, None); today's reached one darkens the
    account until ``reset_at``, the next day boundary (``darken``). Status, the page and the metrics show these."""
    today = parse_time(now).astimezone(UTC).date()
    wanted = [(today - _dt.timedelta(days=back)).isoformat() for back in range(max(1, int(days)))]
    rows = []
    for (account, day), entry in _fold(items, wanted).items():
        limit = reached(budget, _Spend(entry)) if budget else None
        if entry['cost_usd'] is not None:
            entry['cost_usd'] = round(entry['cost_usd'], 6)
        rows.append(dict(entry, account=account, day=day, today=day == wanted[0], limit=limit,
                         reset_at=format_time(next_day(now)) if limit and day == wanted[0] else None))
    rows.sort(key=lambda r: (wanted.index(r['day']), r['account']))
    return rows


class _Spend(object):
    def __init__(self, entry):
        self.tokens = entry.get('tokens')
        self.cost_usd = entry.get('cost_usd')


def spent_accounts(spend: Dict[str, Dict[str, Any]], budget: Optional[Budget]) -> Dict[str, str]:
    """The accounts whose spend today reached ``budget``: ``{account: 'tokens' | 'usd'}``."""
    if not budget:
        return {}
    out = {}
    for account, entry in spend.items():
        limit = reached(budget, _Spend(entry))
        if limit:
            out[account] = limit
    return out


def describe(account: str, entry: Dict[str, Any], budget: Budget, limit: str) -> str:
    """Why the account is dark: its spend today against the daily budget."""
    if limit == 'usd':
        return 'account %s spent $%s today (%d of %d runs stated a cost) of its daily budget $%s' % (
            account, _money(entry.get('cost_usd')), entry.get('priced_runs', 0), entry.get('runs', 0), _money(budget.usd))
    return 'account %s spent %s tokens today over %d run(s) of its daily budget %s tokens' % (
        account, entry.get('tokens'), entry.get('runs', 0), budget.tokens)


def darken(masters: List[Dict[str, Any]], items: Iterable[Dict[str, Any]], budget: Optional[Budget], now: Any) -> List[Dict[str, Any]]:
    """``masters`` (``place``'s dicts) with every master of an account over its daily budget dark: ``source``
    ``budget``, ``reset_at`` the next day boundary, ``budget_why`` the figures. A master already dark for a
    reason of its own keeps it (a revocation needs a human; a rate limit has its own reset)."""
    spend = account_spend(items, now)
    over = spent_accounts(spend, budget)
    out = []
    for master in masters or []:
        entry = dict(master)
        account = account_key(entry)
        if account in over and not entry.get('dark'):
            entry.update(dark=True, source=SOURCE, reset_at=format_time(next_day(now)),
                         budget_why=describe(account, spend[account], budget, over[account]))
        out.append(entry)
    return out


def _money(value: Any) -> str:
    return ('%.4f' % float(value or 0)).rstrip('0').rstrip('.') or '0'


__all__ = ['ACCOUNT_ENV', 'SHOWN_DAYS', 'SOURCE', 'account_days', 'account_key', 'account_spend', 'darken', 'day_of',
           'describe', 'next_day', 'spent_accounts']
