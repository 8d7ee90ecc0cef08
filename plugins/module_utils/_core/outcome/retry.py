# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's outcome and the four-fact retry gate (D7).

Pure functions, no I/O, no clock reads: ``now`` is a parameter. The capture is read in one place
only, ``_core.outcome.capture.read_capture``; its ``Reading.outcome()`` is the ``Outcome`` here.

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/outcome/retry.py``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..board.model import format_time, parse_time

# The backoff ladder, seconds, written into each retry marker (``not_before`` = now + gap).
# THIS IS THE SEED'S READING, NOT OURS: 30 s -> 2 min -> 8 min was measured against another
# fleet's agent SDK, whose own internal retry ladder took ~212 s; the rule is that each gap must
# outlast the SDK's internal ladder, or the retry re-enters the degraded window the SDK just spent
# minutes losing to (note the seed's own first gap, 30 s, is shorter than its 212 s). Kept as a
# configurable default until measured. Experiment that settles it: point our agent CLI at a local
# endpoint that answers every request 529 (then: resets every connection), N=20 runs each, and
# record the time from launch to exit; the first gap must exceed the max of those, and each later
# gap should be checked against the provider's incident durations from the capacity markers.
DEFAULT_BACKOFF = (30, 120, 480)


@dataclass
class Outcome:
    """What one run's capture says -- the single parse shared by the retry gate and the close-out."""

    envelope: Optional[dict]
    turns: Optional[int]           # 0 without an envelope; the envelope's num_turns, None when it has none
    is_error: Optional[bool]       # the envelope's is_error (None without one)
    subtype: str                   # the envelope's subtype ('' without one)
    result: str                    # the envelope's result text ('' without one)
    exit_code: Optional[int]
    transient: str                 # transient signature name, or ''
    capacity: Optional[Dict[str, Any]] = None   # the provider limit: _core.outcome.capture.Reading.capacity()
    signature_text: str = field(default='', repr=False)
    worked: Optional[bool] = None  # a turn happened (output tokens, cost, a tool call); None: unknown

    @property
    def started(self) -> bool:
        """The run reached the model (an envelope exists)."""
        return self.envelope is not None

    @property
    def zero_turns(self) -> bool:
        """No turn happened (D7 fact 3; D16 attribution): ``worked`` when the reading decided it (from
        usage and tool calls, never from a turn counter), else no envelope or one stating zero turns."""
        if self.worked is not None:
            return not self.worked
        return self.envelope is None or self.turns == 0

    @property
    def hard_quota(self) -> bool:
        """A provider limit (rate_limit or revoked): capacity, never a retry (D7 fact 2)."""
        return self.capacity is not None


@dataclass
class Gate:
    """The retry gate's answer: ``retry`` only when all four ``facts`` hold."""

    retry: bool
    facts: Dict[str, bool]
    why: str
    signature: str = ''


def retry_gate(outcome: Outcome, artifacts_since_start: Any) -> Gate:
    """The four-fact conjunction (D7).

    ``artifacts_since_start``: what the forge reports for this item since the run started --
    ANY artifact, merged or not (an open PR is a side effect too): a count, or a list such as
    ``_core.board.references.artifacts_since(...)``. Do NOT pass ``_core.board.references.attribute(...)``: that is
    empty by construction for a zero-turn run, which would make fact 4 vacuous. ``None`` means
    the forge was not asked (or could not answer): fact 4 is unproven and there is no retry --
    a retry needs proof that the run did nothing.
    """
    if artifacts_since_start is None:
        no_artifact = False
    elif isinstance(artifacts_since_start, bool):
        no_artifact = not artifacts_since_start
    elif isinstance(artifacts_since_start, int):
        no_artifact = artifacts_since_start == 0
    else:
        no_artifact = len(list(artifacts_since_start)) == 0
    facts = {
        'transient': bool(outcome.transient),
        'not_hard_quota': not outcome.hard_quota,
        'zero_turns': outcome.zero_turns,
        'no_artifact': no_artifact,
    }
    missing = [name for name, held in facts.items() if not held]
    if not missing:
        why = 'transient (%s) before any turn, no provider limit, no artifact: retry' % outcome.transient
    else:
        why = 'no retry: %s' % ', '.join({
            'transient': 'no transient signature',
            'not_hard_quota': 'a provider limit (%s) is capacity, not a blip' % ((outcome.capacity or {}).get('signature', '')),
            'zero_turns': 'the run reached the model (result envelope present)',
            'no_artifact': 'the forge reports an artifact since the start' if artifacts_since_start is not None
            else 'the forge was not asked for artifacts',
        }[name] for name in missing)
    return Gate(retry=not missing, facts=facts, why=why, signature=outcome.transient)


def retry_step(markers: List[Any]) -> int:
    """How many retry close-outs in a row end the marker list (starts in between ignored).

    Derived from the markers every time. ``[start, retry, start]`` -> 1.
    """
    count = 0
    for marker in reversed(list(markers or [])):
        kind = getattr(marker, 'kind', None)
        if kind == 'start':
            continue
        if kind == 'retry':
            count += 1
            continue
        break
    return count


def plan_retry(markers: List[Any], now: Any, ladder: Tuple[int, ...] = DEFAULT_BACKOFF) -> Optional[Dict[str, Any]]:
    """The fields of the next retry marker, or None when the ladder is spent (post a failure instead).

    ``markers``: the item's markers so far (this run's start included). Returns
    ``{'step': n, 'delay_s': gap, 'not_before': ISO}`` -- step n uses ``ladder[n-1]``.
    """
    when = parse_time(now)
    if when is None:
        raise ValueError('plan_retry needs "now"')
    step = retry_step(markers) + 1
    if step > len(ladder):
        return None
    delay = int(ladder[step - 1])
    return {'step': step, 'delay_s': delay, 'not_before': format_time(when + _dt.timedelta(seconds=delay))}


__all__ = ['DEFAULT_BACKOFF', 'Gate', 'Outcome', 'plan_retry', 'retry_gate', 'retry_step']
