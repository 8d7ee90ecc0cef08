# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The close-out decision: the one terminal marker a finished run posts, and its exit code.

Pure: the runner passes the ONE parse of the capture (``capture.read_capture(...).outcome()``), the item as
re-read from the board, and ``now``. How the runner acts on it is ``_runner.run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .capacity import agent_missing_state, state_from
from .exits import BY_MARKER, EXIT_FAILURE
from ..board.markers import markers_of
from ..board.model import format_time
from ..board.references import artifacts_since, attribute
from .retry import DEFAULT_BACKOFF, plan_retry, retry_gate

_EPOCH = '1970-01-01T00:00:00Z'   # "any time": which merges would a start of unknown time have to be checked against

EXIT = BY_MARKER
# 'stopped' only when the AGENT alone died of SIGTERM/SIGINT from outside; a stop of the unit
# re-raises the signal instead, so systemd records the signal itself.
# 'budget' 15: the runner stopped the agent at the run's budget (the mechanism working, like 12 and 13:
# launch's success_exit_status holds it, so the unit is not failed).


@dataclass
class Decision:
    """The close-out: exactly one terminal marker, and what it does to the master's capacity file."""

    kind: str
    text: str
    fields: Dict[str, Any] = field(default_factory=dict)
    close: bool = False                       # success: close the item AFTER the comment
    capacity_state: Optional[Dict[str, Any]] = None   # write this capacity state
    clean: bool = False                       # a clean run: delete the capacity state

    @property
    def exit_code(self) -> int:
        return EXIT.get(self.kind, EXIT_FAILURE)


def decide(outcome, item, *, number: int, started_at: Any, now: Any, repo: str = '', exit_code: Optional[int] = None,
           capture: str = '', ladder=DEFAULT_BACKOFF, timed_out: bool = False, unit: str = '',
           stalled: float = 0, budget_stop: Optional[Dict[str, Any]] = None, pushed: str = '') -> Decision:
    """The terminal marker for a finished agent (D2, D7, D8, D16). Pure: no I/O, ``now`` passed in.

    ``outcome`` is ``_core.outcome.capture.read_capture(capture, agent).outcome(exit_code)`` -- the ONE parse that feeds both the gate and
    this decision (D7). ``item`` is the item as re-read from the board after the agent ended
    (``None`` when the board could not be read: then nothing can be credited and fact 4 of the gate
    is unproven, so the run is neither a success nor a retry).

    ``budget_stop``: the runner stopped the agent at the run's budget (``{'limit', 'budget', 'spend'}``,
    ``_core.outcome.budget``): unless a merged artifact credits the run, it ends in a budget marker --
    not a failure of the work, an attempt all the same -- with the provider limit's capacity state, if the
    capture also shows one.

    ``pushed``: the pull request this run continued and moved the head of (``attribute``'s exception).

    ``started_at`` is the start marker's time as the board recorded it (D16), ``None`` when it could not be read
    back. Nothing is credited without it: a merge that closes this item is then neither a success (it may be
    older than the run, and a false close is invisible) nor passed over as a no-op (it may be this run's work):
    the run ends ``left_open`` naming the merge, the item stays open and dispatchable, and a human decides (a
    visible gap beats a false close, D5, D12).

    Order: a time-attributed merged artifact is a success whatever the exit code (D2: the forge's
    word, not the agent's); else a budget stop; else a provider limit is capacity; else a timeout is a failure (a bare
    timeout is never transient, D7); else a stall (``stalled``: the seconds of silence after which the
    runner stopped it) is a retry before any turn and a failure of its own cause after one; else the
    four-fact gate; else a clean end is a no-op and anything else a failure.
    """
    artifacts = list(item.artifacts) if item is not None else None
    markers = markers_of(item) if item is not None else []
    credited = attribute(artifacts or [], number, started_at, outcome.zero_turns, repo, pushed=pushed)
    base = {'exit_code': exit_code, 'turns': outcome.turns, 'envelope': outcome.envelope is not None}
    cap = outcome.capacity
    cap_state = state_from(cap, now=now, unit=unit) if cap else None
    # D8 "clean": zero exit AND no limit signature -- _core.outcome.capture.is_clean_run's predicate applied to the
    # ONE parse (test_runner checks the two agree), so the capture is not parsed a second time.
    clean = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code == 0 and cap is None
    if credited:
        refs = [a.ref if hasattr(a, 'ref') else a.get('ref') for a in credited]
        fields = dict(base, artifacts=refs)
        return Decision('success', 'done: %s merged after this run started and closes this item' % ', '.join(refs),
                        fields, close=True, capacity_state=cap_state, clean=clean)
    unproven = attribute(artifacts or [], number, _EPOCH, outcome.zero_turns, repo, pushed=pushed) if started_at is None else []
    if unproven:
        refs = [a.ref if hasattr(a, 'ref') else a.get('ref') for a in unproven]
        fields = dict(base, cause='start_unread', artifacts=refs)
        return Decision('left_open', 'run ended; %s merged and closes this item, but the board\'s time of this run\'s start '
                        'could not be read back, so it is not credited to this run (it may be older): left open for a '
                        'human to close if the work is done' % ', '.join(refs), fields, capacity_state=cap_state, clean=clean)
    if budget_stop:
        fields = dict(base, cause='budget', limit=budget_stop['limit'], budget=dict(budget_stop['budget']),
                      spend_at_stop=dict(budget_stop['spend']))
        return Decision('budget', budget_stop.get('text') or 'run stopped at its budget (%s)' % budget_stop['limit'], fields,
                        capacity_state=cap_state)
    if cap:
        fields = dict(base, source=cap['source'], signature=cap.get('signature'), reset_at=format_time(cap.get('reset_at')),
                      reset_text=cap.get('reset_text'))
        if cap['source'] == 'revoked':
            text = 'the worker is dark: entitlement revoked or disabled, a human must act; not an attempt'
        else:
            text = 'the worker is dark: provider rate limit, reset %s; not an attempt' % (
                format_time(cap.get('reset_at')) or 'unknown (none stated)')
        return Decision('capacity', text, fields, capacity_state=cap_state)
    if timed_out:
        return Decision('failure', 'run failed: the agent exceeded the run time limit and was stopped',
                        dict(base, cause='timeout'), clean=False)
    since = artifacts_since(artifacts, number, started_at, repo) if artifacts is not None else None
    if stalled:
        return _stalled(outcome, since, markers, base, stalled, now, ladder)
    gate = retry_gate(outcome, since)
    if gate.retry:
        plan = plan_retry(markers, now, tuple(ladder))
        if plan is not None:
            fields = dict(base, facts=gate.facts, signature=gate.signature, **plan)
            return Decision('retry', 'transient failure (%s) before any turn; eligible again at %s (step %d)'
                            % (gate.signature, plan['not_before'], plan['step']), fields, clean=clean)
        return Decision('failure', 'run failed: transient failure (%s) again, the retry ladder is spent' % gate.signature,
                        dict(base, cause='retries_spent', facts=gate.facts), clean=clean)
    if exit_code == 0 and outcome.is_error is not True:
        claim = ' although the agent reported success' if outcome.envelope is not None else ''
        return Decision('noop', 'run ended with no merged change since its start%s (no-op)' % claim,
                        dict(base, why=gate.why), clean=clean)
    cause = 'error_envelope' if outcome.is_error else 'exit_code'
    return Decision('failure', 'run failed (exit %s%s)' % (exit_code, ', %s' % outcome.subtype if outcome.subtype else ''),
                    dict(base, cause=cause, why=gate.why), clean=clean)


def _stalled(outcome, since, markers, base, stalled, now, ladder) -> Decision:
    """A run the stall limit stopped. Before any turn, with nothing on the forge, it is D7's network fault (a
    request that never answered, a CLI reconnecting forever): a retry on the ladder, ``stopped: stall``.
    After a turn, or with an artifact or an unread forge, it is a failure of its own cause."""
    silent = _seconds(stalled)
    fields = dict(base, cause='stall', stall_timeout=stalled)
    if outcome.zero_turns and since is not None and not list(since):
        plan = plan_retry(markers, now, tuple(ladder))
        if plan is not None:
            return Decision('retry', 'stopped: stall (the agent printed nothing new for %ss before any turn); eligible '
                            'again at %s (step %d)' % (silent, plan['not_before'], plan['step']),
                            dict(fields, signature='stall', **plan))
        return Decision('failure', 'run failed: stopped: stall (nothing new for %ss) again, the retry ladder is spent'
                        % silent, dict(fields, cause='retries_spent', signature='stall'))
    return Decision('failure', 'run failed: the agent printed nothing for %ss and was stopped (stalled; not a crash, '
                    'not the run time limit)' % silent, fields, clean=False)


def _seconds(value: float) -> str:
    return ('%d' % value) if float(value).is_integer() else ('%g' % value)


def agent_missing(message: str, *, agent: str, now: Any, unit: str = '') -> Decision:
    """The close-out of a run whose agent executable vanished between the runner's look and the spawn
    (the look before the start marker catches the usual case, and posts nothing): the master is dark
    (``agent_missing``), and it is a capacity marker, so no attempt is spent (D8)."""
    return Decision('capacity', 'the worker is dark: %s; not an attempt' % message,
                    {'exit_code': None, 'turns': 0, 'envelope': False, 'source': 'agent_missing', 'agent': agent},
                    capacity_state=agent_missing_state(None, now=now, message=message, unit=unit))
