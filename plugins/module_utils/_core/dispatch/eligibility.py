# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eligibility predicate and the attempt count.

Pure functions, no I/O, no clock reads: ``now`` is a parameter. Re-derived from the item's own
comments, events and dependency edges every cycle; nothing here is stored (a stored
counter is a second tracker; D9: re-evaluated from scratch, so a closing blocker releases by
itself).

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/dispatch/eligibility.py``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

from ..chains.chain import item_chain
from ..board.markers import Marker, is_marker_author, markers_of
from ..board.model import parse_time
from .item_budget import describe as budget_words, for_item as budget_for_item, item_spend, spent as budget_spent
from .pr_loop import DEFAULT_MAX_ROUNDS, awaiting, is_round, plan as pull_plan
from .route import unroutable as route_hold

REASONS = ('eligible', 'not_ready', 'closed', 'blocked', 'running', 'retry_wait', 'done', 'tombstone', 'parked',
           'unreadable', 'deferred', 'chained', 'chain_stopped', 'unroutable', 'budget_spent', 'rounds_spent',
           'awaiting_review')

# Precedence, highest first (see module docstring); 'eligible' is what is left.
PRECEDENCE = ('unreadable', 'deferred', 'done', 'closed', 'running', 'chained', 'chain_stopped', 'tombstone', 'retry_wait', 'parked',
              'budget_spent', 'rounds_spent', 'awaiting_review', 'unroutable', 'blocked', 'not_ready')

# A start whose run ended in one of these does not spend an attempt.
# capacity: the seed's rule -- a worker going dark is not the work failing, and a fleet-wide
#   outage would otherwise burn every item's budget in minutes and park the work.
# retry: our extension, same reasoning -- the four-fact gate only writes a retry marker for a
#   run that PROVABLY did nothing (no envelope, zero turns, no artifact) for a transient reason;
#   consecutive retries are bounded by the backoff ladder's length (_core.outcome.retry.DEFAULT_BACKOFF), after
#   which the runner writes a failure, which counts. So the total starts of one item stay bounded
#   by max_attempts x (ladder length + 1). Pass ``uncounted=('capacity',)`` for the seed's rule.
UNCOUNTED_ENDINGS = frozenset(['capacity', 'retry'])

DEFAULT_MAX_ATTEMPTS = 3  # the seed's cap ("max attempts per issue"); unmeasured here. Experiment:
# from the board's own markers, the attempt number at which items that eventually succeeded did so;
# set the cap just above its p95, so the cap parks only items that were not going to succeed.


@dataclass
class Verdict:
    """The answer for one item: exactly one ``reason`` from ``REASONS``."""

    eligible: bool
    reason: str
    attempts: int
    last_marker: Optional[Marker]
    open_blockers: List[int] = field(default_factory=list)
    not_before: Optional[_dt.datetime] = None
    reopened: bool = False          # a reopen outranks the last marker
    holds: List[str] = field(default_factory=list)   # every reason that holds, in precedence order
    chain: Optional[dict] = None    # after a handoff marker: where its chain stands (``chain_hold``)
    unroutable: str = ''            # why no configured master offers the agent profile the item asks for
    spend: Any = None               # what its runs since the last reopen stated they spent (ItemSpend)
    budget_spent: str = ''          # why its spend reached the item budget (``_core.dispatch.item_budget``)
    item_budget: Any = None         # the item budget it is held to: the dispatcher's, with its own budget field's limits
    budget_note: str = ''           # why its budget field was not read (``''``: read, or none)
    pull: Optional[dict] = None     # the open pull request the next run continues (``_core.dispatch.pr_loop``)


def count_attempts(markers: List[Marker], uncounted: Any = UNCOUNTED_ENDINGS) -> int:
    """Starts, minus those whose run ended in a capacity (or retry) marker (D1, D8).

    A run's ending is the first marker after its start and before the next start. A start with
    no ending yet (a live run, or an orphan the reaper has not reset) counts; so do ``stopped``
    (a supervisor timeout stops a stuck run with SIGTERM: not counting it would let a task that
    always times out loop forever) and ``reset``. A round -- a run that moved its open pull request's
    head (``_core.dispatch.pr_loop.is_round``) -- is bounded by the round cap instead, not counted here.
    """
    uncounted = frozenset(uncounted or ())
    markers = list(markers or [])
    attempts = 0
    for index, marker in enumerate(markers):
        if marker.kind != 'start':
            continue
        ending = markers[index + 1] if index + 1 < len(markers) else None
        if ending is not None and ending.kind != 'start' and (ending.kind in uncounted or is_round(ending)):
            continue
        attempts += 1
    return attempts


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _time(value: Any) -> Optional[_dt.datetime]:
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        return None


WRITE_PERMISSIONS = frozenset(('ADMIN', 'MAINTAIN', 'WRITE'))
"""The repository permissions (GitHub's ``RepositoryPermission``) whose holder's reopen grants a fresh
attempt budget. ``TRIAGE`` may reopen an issue on GitHub but may not merge or push, and an issue's
author may reopen an issue they closed themselves: neither is the maintainer's act the cap waits for."""


def reopen_ignored(item: Any, event: Any) -> Optional[str]:
    """Why a ``reopened`` event of ``item`` does not count, or None when it does.

    A reopen resets the attempt count and outranks the last marker, so it is authority like a
    marker's: it counts when its actor is one of the item's ``marker_authors`` (the fleet's
    identities, compared with the account type as markers are) or holds write access to the
    repository (``Event.permission`` in ``WRITE_PERMISSIONS``, as the board read it). Anyone else's
    reopen -- a passer-by who reopened an issue they opened, a triager -- is shown, never obeyed. An
    item built by hand (``marker_authors`` None) enforces nothing, as for markers.
    """
    authors = _get(item, 'marker_authors', None)
    if authors is None:
        return None
    actor = str(_get(event, 'actor', '') or '')
    if actor and is_marker_author(actor, authors, kind=_get(event, 'actor_type', '') or ''):
        return None
    permission = str(_get(event, 'permission', '') or '').upper()
    if permission in WRITE_PERMISSIONS:
        return None
    who = actor or 'an unknown account'
    if not permission:
        return '%s is not one of the fleet\'s identities and the board could not tell its permission on the repository' % who
    return '%s is not one of the fleet\'s identities and has %s permission, not write access' % (who, permission.lower())


def _reopens(item: Any) -> List[Tuple[Any, Optional[_dt.datetime], Optional[str]]]:
    return [(ev, _time(_get(ev, 'at')), reopen_ignored(item, ev)) for ev in (_get(item, 'events') or ())
            if str(_get(ev, 'kind', '')).lower() == 'reopened']


def last_reopen(item: Any) -> Optional[_dt.datetime]:
    """The time of the item's last ``reopened`` event that counts (``reopen_ignored``), or None."""
    times = [t for _ev, t, why in _reopens(item) if t is not None and why is None]
    return max(times) if times else None


def ignored_reopens(item: Any) -> List[dict]:
    """The reopens that do not count, oldest first: ``{'actor', 'at', 'why'}`` each (status and
    explain show them, as they show glyph-led comments that are not markers)."""
    out = []
    for event, at, why in _reopens(item):
        if why is not None:
            out.append({'actor': str(_get(event, 'actor', '') or ''), 'at': at, 'why': why})
    return out


def open_blockers(item: Any) -> List[int]:
    """Numbers of blockers whose state is literally ``open`` (D9; D5 for anything else)."""
    found = []
    for blocker in _get(item, 'blockers') or ():
        if str(_get(blocker, 'state', '') or '').strip().lower() == 'open':
            found.append(_get(blocker, 'number'))
    return found


def chain_hold(item: Any, marker: Marker) -> Tuple[Optional[str], dict]:
    """The hold a ``handoff`` marker puts on its item (D6): ``(hold or None, chain)``.

    The marker names the session that handed off; the item's ledger rows (``item.sessions``, set by
    a board that shares its store with the sessions) say how the chain went on (``_core.chains.chain.item_chain``):
    alive -> ``chained`` (the successor posts its own markers on the item, so re-dispatching would run
    the work twice); its last hop refused at the depth limit -> ``chain_stopped`` (a human decides:
    reopen the item); it ended otherwise (a hop failed to start, or closed with no handoff and no
    marker of its own) -> no hold, the item is back in the queue under the attempt cap. Rows not
    known, or none for that session: ``chained`` -- the marker is the only evidence, and a reopen
    outranks it.
    """
    session = marker.fields.get('session')
    rows = _get(item, 'sessions', None)
    if rows is None:
        return 'chained', {'session': session, 'known': False}
    found = item_chain(rows, session)
    if found is None:
        return 'chained', {'session': session, 'known': False}
    found['known'] = True
    if found['alive']:
        return 'chained', found
    if found['stopped']:
        return 'chain_stopped', found
    return None, found


def live_start(item: Any) -> Optional[Marker]:
    """The start marker that makes ``item`` read ``running`` -- its last marker, with no reopen after it -- else None.

    The runner reads it before posting its own start (D4 at the resource): a dispatcher whose lease was taken over
    while it was stopped, and that launched on its stale probe, finds the taker's run here and starts nothing."""
    markers = markers_of(item)
    last = markers[-1] if markers else None
    if last is None or last.kind != 'start':
        return None
    reopen_at = last_reopen(item)
    if reopen_at is not None and (last.at is None or reopen_at > last.at):
        return None
    return last


def retry_not_before(marker) -> Optional[_dt.datetime]:
    """When a retry marker lets its item run again, on the board's clock (D16): the marker's own time as the board
    dated it plus its ``delay_s``. Its ``not_before`` was written on the runner's clock, which may lag or lead the
    board's by minutes; it is read only when the delay is not stated. None: no evidence of a wait."""
    delay = marker.fields.get('delay_s')
    if marker.at is not None and isinstance(delay, (int, float)) and not isinstance(delay, bool) and delay >= 0:
        return marker.at + _dt.timedelta(seconds=delay)
    return marker.time('not_before')


def evaluate(item: Any, *, now: Any, ready: Optional[str] = 'Ready', max_attempts: Optional[int] = DEFAULT_MAX_ATTEMPTS,
             markers: Optional[List[Marker]] = None, uncounted: Any = UNCOUNTED_ENDINGS, agents: Any = None,
             item_budget: Any = None, max_rounds: Optional[int] = DEFAULT_MAX_ROUNDS) -> Verdict:
    """Decide whether ``item`` may be dispatched at ``now`` (see the module docstring for the rules).

    ``ready``: the status value that means "dispatch me"; ``None`` or ``''`` skips the status test
    (a board without a status field). ``max_attempts``: the attempt cap; ``None`` means no cap.
    ``markers``: pre-parsed ``markers_of(item)`` if the caller has them. ``agents``: the agent profiles
    the fleet's masters offer; an item asking for another is ``unroutable`` (``None``: not judged here).
    ``item_budget``: the per-item cap (``_core.outcome.budget.Budget``); an item whose runs since the last
    reopen spent it is ``budget_spent`` (``_core.dispatch.item_budget``; ``None``: no cap). The item's own
    budget field replaces each limit it names (``item_budget.for_item``).
    ``max_rounds``: the round cap on the open pull request the next run would continue (``rounds_spent``); below
    it, a round that nothing has answered yet waits (``awaiting_review``, ``_core.dispatch.pr_loop.awaiting``).
    """
    when = _time(now)
    if when is None:
        raise ValueError('evaluate needs an aware "now", got %r' % (now,))
    if max_attempts is not None and (isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1):
        raise ValueError('max_attempts must be a positive integer or None, not %r' % (max_attempts,))

    all_markers = markers if markers is not None else markers_of(item)
    last = all_markers[-1] if all_markers else None
    reopen_at = last_reopen(item)
    reopened = bool(last is not None and reopen_at is not None and (last.at is None or reopen_at > last.at))
    effective = None if reopened else last

    since = all_markers
    if reopen_at is not None:
        # a marker at the very instant of the reopen stands (see above), so it also counts
        since = [m for m in all_markers if m.at is not None and m.at >= reopen_at]
    attempts = count_attempts(since, uncounted=uncounted)

    blockers = open_blockers(item)
    not_before = retry_not_before(last) if last is not None and last.kind == 'retry' else None
    state = str(_get(item, 'state', '') or '').strip().lower()
    status = str(_get(item, 'status', '') or '').strip().lower()

    holds = []
    kind = effective.kind if effective is not None else None
    # The board could not read part of this item (its comments, timeline, closing PRs or edges):
    # every other reason would be judged on partial data, so none is trusted and it never runs.
    if str(_get(item, 'unreadable', '') or '').strip():
        holds.append('unreadable')
    # This read skipped the item's details (unchanged since its last read): same rule, no judgement
    # on the page fields alone; a later cycle reads it (at most the board's full_read_every).
    if str(_get(item, 'deferred', '') or '').strip():
        holds.append('deferred')
    if state == 'closed':
        holds.append('done' if kind == 'success' else 'closed')
    if kind == 'start':
        holds.append('running')
    chain = None
    if kind == 'handoff':
        hold, chain = chain_hold(item, effective)
        if hold:
            holds.append(hold)
    if kind == 'success' and state != 'closed':
        holds.append('tombstone')
    # A retry marker whose not_before is missing or unparseable is no evidence of a wait.
    if kind == 'retry' and not_before is not None and not_before > when:
        holds.append('retry_wait')
    if max_attempts is not None and attempts >= max_attempts:
        holds.append('parked')
    spend = item_spend(all_markers, since=reopen_at)
    over = ''
    item_budget, budget_note = budget_for_item(item_budget, _get(item, 'budget', None))
    if item_budget:
        limit = budget_spent(item_budget, spend)
        if limit:
            holds.append('budget_spent')
            over = budget_words(item_budget, spend, limit)
    loop = pull_plan(item, all_markers, counted=since, max_rounds=max_rounds)
    pull = loop.view()
    if loop.spent:
        holds.append('rounds_spent')
    elif pull is not None:
        pull['awaiting'] = awaiting(loop, all_markers)
        if pull['awaiting']:
            holds.append('awaiting_review')
    no_route = route_hold(item, agents)
    if no_route:
        holds.append('unroutable')
    if blockers:
        holds.append('blocked')
    if ready and status != str(ready).strip().lower():
        holds.append('not_ready')
    holds.sort(key=PRECEDENCE.index)
    reason = holds[0] if holds else 'eligible'
    return Verdict(eligible=(reason == 'eligible'), reason=reason, attempts=attempts, last_marker=last,
                   open_blockers=blockers, not_before=not_before, reopened=reopened, holds=holds, chain=chain,
                   unroutable=no_route, spend=spend, budget_spent=over, pull=pull,
                   item_budget=item_budget if item_budget else None, budget_note=budget_note)


def run_durations(markers: List[Marker], exclude: Any = ()) -> List[float]:
    """Seconds from each start to its run's ending (the next non-start marker), for finished runs.

    The reaper's threshold is set from these ("2x the longest run ever observed"), read from
    the board's own timestamps rather than a state file. Starts without an ending, and
    markers without times, are skipped; so are runs whose ending is in ``exclude`` (the reaper
    passes ``('reset',)``: a reset's age is the threshold itself, not a run's length, and counting
    it would double the threshold with every reap).
    """
    exclude = frozenset(exclude or ())
    markers = list(markers or [])
    found = []
    for index, marker in enumerate(markers):
        if marker.kind != 'start' or marker.at is None or index + 1 >= len(markers):
            continue
        ending = markers[index + 1]
        if ending.kind == 'start' or ending.at is None or ending.kind in exclude:
            continue
        found.append((ending.at - marker.at).total_seconds())
    return found


def orphaned(markers: List[Marker], *, now: Any, live: Optional[bool], threshold: Any) -> Tuple[bool, str]:
    """Should the reaper reset this item (post a reset marker)? ``(reap, why)`` (D12, D14).

    All three must hold: the last marker is a start; the unit probe of EVERY master on every
    worker positively found no live unit for the item (``live is False``; ``None`` -- a probe that
    failed or did not reach every worker -- is not evidence, and reaping a live run would let a
    second one launch); and the start is older than ``threshold`` (a ``timedelta`` or seconds).
    The probe is the real signal; the clock only stops a blinked probe from reaping a live run.
    """
    when = _time(now)
    if when is None:
        raise ValueError('orphaned needs an aware "now"')
    if not isinstance(threshold, _dt.timedelta):
        threshold = _dt.timedelta(seconds=float(threshold))
    markers = list(markers or [])
    last = markers[-1] if markers else None
    if last is None or last.kind != 'start':
        return False, 'last marker is not a start'
    if live is None:
        return False, 'the unit probe did not answer for every worker: no evidence'
    if live:
        return False, 'a live unit runs this item'
    if last.at is None:
        return False, 'the start marker has no time'
    age = when - last.at
    if age <= threshold:
        return False, 'start is %ds old, not older than the %ds threshold' % (age.total_seconds(), threshold.total_seconds())
    return True, 'start is %ds old, no live unit on any worker' % age.total_seconds()
