# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The result envelope, the run's outcome, and the four-fact retry gate.

Pure functions, no I/O, no clock reads: ``now`` is a parameter.

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/outcome/retry.py``.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .capacity import classify_capacity
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

# An object counts as the agent CLI's result envelope when its "type" is this (the CLI's
# ``--output-format json`` / stream-json final line: {"type":"result","subtype":"success",...}).
ENVELOPE_TYPE = 'result'
# stream-json conversation lines: the agent's own words and tool output, never signatures.
_CONVERSATION_TYPES = frozenset(['assistant', 'user', 'system', 'stream_event'])

# --- transient signatures ---------------------------------------------------------------------
_HTTPISH = r'(?:\bHTTP(?:/\d(?:\.\d)?)?|\bstatus(?:[ _]code)?|\berror|\bcode|\bresponse)\s*[:=]?\s*'
_TRANSIENT = [
    ('http_429', _HTTPISH + r'429\b'),
    ('http_429', r'\b429\s+Too Many Requests\b|\bToo Many Requests\b'),
    ('http_429', r'\brate_limit_error\b'),
    ('http_5xx', _HTTPISH + r'5\d\d\b'),
    ('http_5xx', r'\bInternal Server Error\b|\bBad Gateway\b|\bService Unavailable\b|\bGateway Time-?out\b'),
    ('http_5xx', r'\boverloaded_error\b|\bapi_error\b'),
    ('connection', r'\bE(?:CONNRESET|CONNREFUSED|CONNABORTED|NOTFOUND|AI_AGAIN|NETUNREACH|HOSTUNREACH|NETRESET|PIPE)\b'),
    ('connection', r'\bconnection\s+(?:was\s+)?(?:refused|reset|aborted|closed unexpectedly)\b|\breset by peer\b'),
    ('connection', r'\bsocket hang up\b|\bnetwork is unreachable\b|\bno route to host\b'),
    ('dns', r'\bgetaddrinfo\b|\bName or service not known\b|\bTemporary failure in name resolution\b'
            r'|\bCould not resolve host\b|\bnodename nor servname provided\b'),
]
_TRANSIENT_RE = [(name, re.compile(rx, re.IGNORECASE)) for name, rx in _TRANSIENT]


# Where a JSON object can start: "{" then optional whitespace then a key's quote or "}". Checked
# before calling the decoder because a failed decode costs O(position) (JSONDecodeError counts
# the lines before the error), which made a 2 MB capture with 20,000 stray braces take seconds.
_OBJECT_START = re.compile(r'\{\s*["}]')
_DECODER = json.JSONDecoder()
# strict=False: a raw newline or tab inside a JSON string (a terminal paste, a wrapped log) is kept.
_LENIENT = json.JSONDecoder(strict=False)
# First decode window, characters; grows x8 while a failure may be the window's cut. Reading
# (this machine, Python 3.11): 300 kB capture with 12,000 broken '{"key": x' fragments around
# one envelope -- whole-capture decoding 1.90 s, windowed 0.07 s. 4096 is an unmeasured choice
# within that: any window that holds a typical broken fragment gives the same order of cost.
_WINDOW = 4096


def json_objects(capture: Any, strict: bool = True) -> List[Tuple[dict, int, int]]:
    """Every top-level well-formed JSON object in ``capture``: ``(obj, start, end)``, left to right.

    Noise before, between and after is skipped; a ``{`` that does not start a well-formed object
    (stderr text, a truncated object) is skipped and scanning resumes at the next ``{``; objects
    nested inside a found object are not reported separately. Only dicts are reported.
    ``strict=False`` accepts raw control characters (a newline) inside strings.
    """
    if not isinstance(capture, str) or '{' not in capture:
        return []
    found = []
    match = _OBJECT_START.search(capture)
    while match:
        index = match.start()
        decoded = _decode_at(capture, index, _DECODER if strict else _LENIENT)
        if decoded is None:
            match = _OBJECT_START.search(capture, index + 1)
            continue
        obj, end = decoded
        if isinstance(obj, dict):
            found.append((obj, index, end))
        match = _OBJECT_START.search(capture, end)
    return found


def _decode_at(capture: str, index: int, decoder: json.JSONDecoder = _DECODER) -> Optional[Tuple[Any, int]]:
    """Decode the JSON value starting at ``index``, or None.

    Decodes a growing window rather than the whole capture: a failed decode costs O(position in
    the text it was given) (JSONDecodeError counts the lines before the error), so decoding from
    the full capture made a 300 kB capture with 12,000 broken fragments take ~2 s. A window is
    widened only when the failure could be the window's own cut (error at its end, or a string
    left unterminated); a complete object inside a window is the same object as in the capture.
    """
    size = _WINDOW
    while True:
        window = capture[index:index + size]
        try:
            obj, end = decoder.raw_decode(window)
            return obj, index + end
        except ValueError as exc:
            if index + size >= len(capture):
                return None
            pos = getattr(exc, 'pos', 0)
            msg = getattr(exc, 'msg', '')
            if pos < len(window) - 1 and not msg.startswith('Unterminated string'):
                return None
            size *= 8


def is_envelope(obj: Any, envelope_type: Optional[str] = ENVELOPE_TYPE) -> bool:
    """A result envelope: a dict whose ``type`` is ``envelope_type`` (any dict when that is None)."""
    if not isinstance(obj, dict):
        return False
    return envelope_type is None or obj.get('type') == envelope_type


def scan_envelope(capture: Any, predicate: Optional[Callable[[dict], bool]] = None) -> Optional[dict]:
    """The LAST well-formed JSON object anywhere in ``capture``, or None.

    ``predicate`` narrows which objects qualify (``read_outcome`` uses ``is_envelope``, so an API
    error body printed on stderr -- itself a JSON object -- is never mistaken for the envelope).
    """
    for obj, _start, _end in reversed(json_objects(capture)):
        if predicate is None or predicate(obj):
            return obj
    return None


def _int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return None


def transient_signature(text: Any) -> str:
    """The name of the first transient signature in ``text`` (``http_429``, ``http_5xx``,
    ``connection``, ``dns``), or ``''``. A bare timeout is not one."""
    if not isinstance(text, str):
        return ''
    for name, pattern in _TRANSIENT_RE:
        if pattern.search(text):
            return name
    return ''


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
    capacity: Optional[Dict[str, Any]] = None   # the provider limit: _core.outcome.agents.Reading.capacity()
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


def signature_text(capture: Any, objects: Optional[List[Tuple[dict, int, int]]] = None,
                   envelope_type: Optional[str] = ENVELOPE_TYPE) -> str:
    """The part of a capture in which failure signatures are searched.

    Removed: the agent's own words, which may discuss anything (quotas, 429s, "fixes #12") --
    stream-json conversation objects, and a result envelope that is not an error. Kept: stderr
    noise, API error bodies, and an error envelope (its ``result`` is the CLI's error message,
    e.g. ``Claude AI usage limit reached|1764522000``).
    """
    if not isinstance(capture, str):
        return ''
    if objects is None:
        objects = json_objects(capture)
    pieces = []
    cursor = 0
    for obj, start, end in objects:
        if obj.get('type') in _CONVERSATION_TYPES:
            pieces.append(capture[cursor:start])
        elif is_envelope(obj, envelope_type):
            if obj.get('is_error') is True:
                pieces.append(capture[cursor:end])
                pieces.append(str(obj.get('result') or ''))  # unescaped, so the patterns see the words
            else:
                pieces.append(capture[cursor:start])
        else:
            continue  # other JSON (an API error body): kept in place
        cursor = end
    pieces.append(capture[cursor:])
    return '\n'.join(p for p in pieces if p)


def read_outcome(capture: Any, exit_code: Optional[int] = None, *, envelope_type: Optional[str] = ENVELOPE_TYPE,
                 now: Any = None, tz: Any = None) -> Outcome:
    """Parse a run's capture once (D7): the envelope, turns, and the failure signatures.

    ``now``/``tz`` resolve a stated capacity reset time (``_core.outcome.capacity.resolve_reset``).
    """
    text = capture if isinstance(capture, str) else ''
    objects = json_objects(text)
    envelope = None
    for obj, _start, _end in reversed(objects):
        if is_envelope(obj, envelope_type):
            envelope = obj
            break
    sig_text = signature_text(text, objects, envelope_type)
    if envelope is None:
        turns = 0
        is_error = None
        subtype = ''
        result = ''
    else:
        turns = _int(envelope.get('num_turns'))
        is_error = envelope.get('is_error') if isinstance(envelope.get('is_error'), bool) else None
        subtype = str(envelope.get('subtype') or '')
        result = envelope.get('result') if isinstance(envelope.get('result'), str) else ''
    return Outcome(envelope=envelope, turns=turns, is_error=is_error, subtype=subtype, result=result,
                   exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
                   transient=transient_signature(sig_text), capacity=classify_capacity(sig_text, now=now, tz=tz),
                   signature_text=sig_text)


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


def is_clean_run(exit_code: Any, capture: Any) -> bool:
    """"The next clean run deletes the file" (D8): zero exit AND no limit signature in the capture.

    The capture is read through ``read_outcome`` -- the same parse the retry gate and the
    close-out use (D7) -- so a success envelope that merely discusses quotas is not a limit,
    while a trailing limit notice after a zero exit is.
    """
    if isinstance(exit_code, bool) or exit_code != 0:
        return False
    return read_outcome(capture, exit_code=exit_code).capacity is None


__all__ = ['DEFAULT_BACKOFF', 'ENVELOPE_TYPE', 'Gate', 'Outcome', 'classify_capacity', 'is_clean_run', 'is_envelope',
           'json_objects', 'plan_retry', 'read_outcome', 'retry_gate', 'retry_step', 'scan_envelope', 'signature_text', 'transient_signature']
