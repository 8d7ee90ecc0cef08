# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Agent profiles, and the ONE reading of an agent's capture (D2, D7, D8, D16, D20).

Pure functions, no I/O, no clock reads: ``now`` is a parameter.

An agent profile says how one agent CLI is run (argv, how the brief is passed) and how its
output is read (where the result envelope is, turns, the agent's claim, usage and cost).
``read_capture`` reads every profile's output through one code path: structured fields first
(HTTP status, error ``type``, ``resetsAt``/``resets_at``/``retry-after``, ``code: 429``,
``RESOURCE_EXHAUSTED``, quota ids) wherever they sit in the capture (result envelope, JSONL
events, error bodies on stderr, JSON inside JSON strings), prose patterns only as the fallback.
It tells a throttle (``transient``) from a usage limit (``rate_limit``) from a dead credential
(``revoked``) and keeps D7's narrowness: a bare timeout is a ``failure``. ``Reading.outcome``
turns the reading into the ``_core.outcome.retry.Outcome`` that the retry gate and ``_core.outcome.closeout.decide``
take, so ``fleet-runner classify`` and the runner cannot disagree. This is the only module that
reads agent output: the retry gate, the capacity state and the runner take its ``Reading``.

Whether a turn happened is read from output tokens, cost and tool calls (``_work``), never from a
turn counter the CLI fills regardless; output with no envelope, no tool call and no words known is
a failure, never a success; terminal wraps, ANSI escapes and box glyphs are undone first (``_flat``).

Reset times are read as the provider states them (``resolve_stated``): epoch, ISO, ``resets 3am
(Zone)``, ``Jan 30, 11:30am (Asia/Calcutta)``, ``Jul 5th, 2026 8:19 PM``, ``10 de jul. de 2026,
11:52``, ``Etc/GMT+5`` (POSIX-inverted: UTC-5), ``GMT-3`` (ordinary offset), durations
(``4h28m20s``, ``5 days 22 hours 11 minutes``). A bare clock time rolls forward only when it has
passed at ``now``; a zone-less time is resolved only with a known ``tz``; nothing is invented. A
limit never takes a short wait printed beside it as its reset; the one reset derived by rule is a
Google per-day quota's, at midnight Pacific time as Google documents it (``_limit_reset``).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .capacity import MESSAGE_MAX
from ..board.model import parse_time
from .retry import Outcome

from zoneinfo import ZoneInfo

UTC = _dt.timezone.utc
KINDS = ('success', 'noop_claim', 'failure', 'transient', 'rate_limit', 'revoked')

# A stated wait up to this many seconds is a throttle (transient: the backoff ladder covers it);
# a longer one is a usage limit (capacity: wait for the reset). Unmeasured guess, placed between
# the corpus's throttles (Gemini "reset after 0s".."5s", "Please retry in 15s", OpenAI TPM "try
# again in 1.574s".."17 seconds") and its limits (Gemini "reset after 4h28m20s", Codex "try again
# in 3 hours 2 minutes"); 600 s is beyond the ladder's second step (120 s). Experiment that
# settles it: over a month of capacity and retry markers, plot the stated waits of the signatures
# this decides (Gemini "exhausted your capacity", Google per-minute quota) against the time to the
# next clean run, and put the boundary in the gap.
THROTTLE_MAX_S = 600

# Characters of a matched line kept as the message. Display only; unmeasured guess, see
# _core.outcome.capacity.MESSAGE_MAX (the same bound, the same experiment).
_MESSAGE_MAX = MESSAGE_MAX


# --- JSON in a capture -------------------------------------------------------------------------

# An object counts as the agent CLI's result envelope when its "type" is this (the CLI's
# ``--output-format json`` / stream-json final line: {"type":"result","subtype":"success",...}).
ENVELOPE_TYPE = 'result'

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

    ``predicate`` narrows which objects qualify (``is_envelope``: an API
    error body printed on stderr -- itself a JSON object -- is never mistaken for the envelope).
    """
    for obj, _start, _end in reversed(json_objects(capture)):
        if predicate is None or predicate(obj):
            return obj
    return None


# Timezone abbreviations we resolve. Ambiguous ones (CST: China or US Central; IST; BST) are
# deliberately absent: a named zone we cannot pin down gives None, never a guess.
_ZONES = {
    'UTC': 'UTC', 'GMT': 'UTC', 'Z': 'UTC',
    'PT': 'America/Los_Angeles', 'ET': 'America/New_York', 'CT': 'America/Chicago', 'MT': 'America/Denver',
}
_FIXED = {'PST': -8, 'PDT': -7, 'MST': -7, 'MDT': -6, 'CDT': -5, 'EST': -5, 'EDT': -4,
          'CET': 1, 'CEST': 2, 'EET': 2, 'EEST': 3, 'JST': 9, 'KST': 9}


def _tzinfo(tz: Any) -> Optional[_dt.tzinfo]:
    """A tzinfo from a tzinfo, an IANA name, an abbreviation or an offset; None if not understood."""
    if tz is None or tz == '':
        return UTC
    if isinstance(tz, _dt.tzinfo):
        return tz
    text = str(tz).strip().strip('()').strip()
    upper = text.upper()
    if upper in _ZONES:
        text = _ZONES[upper]
        if text == 'UTC':
            return UTC
    if upper in _FIXED:
        return _dt.timezone(_dt.timedelta(hours=_FIXED[upper]))
    match = re.match(r'^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$', text, re.IGNORECASE)
    if match:
        sign = -1 if match.group(1) == '-' else 1
        return _dt.timezone(sign * _dt.timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0)))
    if '/' in text:
        try:
            return ZoneInfo(text)
        except Exception:  # noqa: BLE001 - unknown zone or missing tzdata: not understood
            return None
    return None


# --- profiles ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AgentProfile:
    """How one agent CLI is run and read.

    ``argv``: the command; ``brief``: ``stdin`` (the brief file is the agent's standard input) or
    ``file`` (``{brief_file}`` in argv); never argv for the brief itself. ``envelopes``: which
    result shapes count as this agent's envelope (``claude_result``: the last ``type: result``
    object of ``-p --output-format json|stream-json``; ``codex_turn``: the last ``turn.completed``
    event of ``codex exec --json``; ``gemini_json``: the ``{"response", "stats"}`` object of
    ``gemini -p --output-format json``).
    """

    name: str
    argv: Tuple[str, ...]
    brief: str
    envelopes: Tuple[str, ...]
    doc: str = ''
    usage: str = ''                  # where its output states usage: USAGE_WHEN
    states_cost: Optional[bool] = None   # whether it states a cost at all (None: the command decides)
    stream_argv: Tuple[str, ...] = ()    # the argv whose output states usage as it streams, when argv's does not
    route_args: Tuple[Tuple[str, str, str], ...] = ()   # how its CLI takes an item's model/effort: (key, option, prefix)
    route_at: int = 1                    # where in argv they go (after the executable, or its subcommand)


ENVELOPE_SHAPES = ('claude_result', 'codex_turn', 'gemini_json')

# Where a profile's output states the agent's usage, so when a run budget can be checked (UsageMeter):
# ``message`` after every model response (Claude Code stream-json ``assistant`` lines), ``turn`` at each turn
# the CLI reports (Codex ``turn.completed``; ``codex exec`` runs one turn, so at its end), ``result`` only in
# the final result (Gemini CLI json and stream-json ``stats``), ``any`` whatever the command prints.
USAGE_WHEN = ('message', 'turn', 'result', 'any')

PROFILES = {
    'claude': AgentProfile(
        'claude', ('claude', '-p', '--output-format', 'json'), 'stdin', ('claude_result',),
        'Claude Code: the brief on stdin; one JSON result object (stream-json: the last type=result line); '
        'num_turns, total_cost_usd, usage; errors in result/errors/api_error_status; rate_limit_event lines',
        usage='message', states_cost=True,
        stream_argv=('claude', '-p', '--output-format', 'stream-json', '--verbose'),
        route_args=(('model', '--model', ''),)),
    'codex': AgentProfile(
        'codex', ('codex', 'exec', '--json', '-'), 'stdin', ('codex_turn',),
        'OpenAI Codex CLI: "-" reads the brief from stdin; JSONL events (thread.started, turn.started, item.*, '
        'turn.completed with usage, turn.failed, error); no cost is stated', usage='turn', states_cost=False,
        route_args=(('model', '-m', ''), ('effort', '-c', 'model_reasoning_effort=')), route_at=2),
    'gemini': AgentProfile(
        'gemini', ('gemini', '--output-format', 'json', '-p', 'Follow the brief given on standard input.'), 'stdin',
        ('gemini_json', 'claude_result'),
        'Gemini CLI: the brief on stdin (appended to -p); one JSON object {"response", "stats", "error"}; '
        'token counts per model in stats; no cost or turn count is stated', usage='result', states_cost=False,
        route_args=(('model', '-m', ''),)),
    'custom': AgentProfile(
        'custom', (), 'stdin', ENVELOPE_SHAPES,
        "the runner config's agent_command ({brief_file} or {brief} in it, else the brief on stdin); any known envelope",
        usage='any'),
}
DEFAULT_PROFILE = 'custom'


def profile(name: Any) -> AgentProfile:
    """The profile called ``name`` (None or '' -> ``custom``); ValueError for an unknown name."""
    key = str(name or DEFAULT_PROFILE).strip().lower()
    if key not in PROFILES:
        raise ValueError('unknown agent %r: one of %s' % (name, ', '.join(sorted(PROFILES))))
    return PROFILES[key]


def agent_argv(name: Any, agent_command: Optional[List[str]] = None, streaming: bool = False) -> List[str]:
    """The argv a profile runs: an explicit ``agent_command`` wins (``custom`` needs one). ``streaming``: the
    argv whose output states usage as it streams (``stream_argv``: a run with a budget), where the profile has one."""
    prof = profile(name)
    if agent_command:
        return list(agent_command)
    if not prof.argv:
        raise ValueError('the custom agent needs agent_command')
    return list(prof.stream_argv if streaming and prof.stream_argv else prof.argv)


_ROUTE_VALUE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$')
"""A model or effort name given to a CLI as an argument: a word of name characters that cannot be read
as an option (no leading ``-``) nor as more than one value (no space, ``=``, quote or comma)."""


def _sets(given: Any, option: str, prefix: str) -> bool:
    """Whether the arguments ``given`` already set what ``option`` (with ``prefix``) would: the same option, or
    for a ``-c key=`` override the same key (also as ``--config key=...`` or Codex's ``-c model=`` for ``-m``)."""
    words = [str(w) for w in given or ()]
    key = prefix.rstrip('=') if prefix else ('model' if option in ('-m', '--model') else '')
    for index, word in enumerate(words):
        if not prefix and (word == option or word.startswith(option + '=') or word in ('-m', '--model')
                           or word.startswith('--model=')):
            return True
        if key and word in ('-c', '--config') and index + 1 < len(words) and words[index + 1].split('=', 1)[0].strip() == key:
            return True
        if key and word.startswith('--config=') and word[len('--config='):].split('=', 1)[0].strip() == key:
            return True
    return False


def route_argv(name: Any, argv: List[str], route: Dict[str, str], given: Any = ()) -> Tuple[List[str], List[str]]:
    """``argv`` with the item's model and effort as the profile's CLI takes them (``AgentProfile.route_args``:
    Codex CLI ``-m MODEL -c model_reasoning_effort=EFFORT`` after ``exec``, Claude Code ``--model MODEL``,
    Gemini CLI ``-m MODEL``), and what was left out: ``(argv, refused)``, each refusal a sentence. A value
    that is not a plain name (``_ROUTE_VALUE``) is never put on the command line; a custom profile takes
    none (its command reads ``AGENT_MODEL``/``AGENT_EFFORT``). ``given``: the worker's own agent arguments; one
    that already sets the option (``-m X``, ``--model=X``, ``-c model_reasoning_effort=...``) wins, as the
    worker's environment does."""
    prof = profile(name)
    added, refused = [], []
    for key, option, prefix in prof.route_args:
        value = str((route or {}).get(key) or '').strip()
        if not value:
            continue
        if _sets(given, option, prefix):
            continue
        if not _ROUTE_VALUE.match(value):
            refused.append('the item\'s %s %r is not a plain name: not passed to the %s CLI' % (key, value[:60], prof.name))
            continue
        added.extend([option, prefix + value])
    out = list(argv)
    return out[:prof.route_at] + added + out[prof.route_at:], refused


# --- structured facts ----------------------------------------------------------------------------

# The agent's own words and tool traffic: claude stream-json, gemini stream-json (init, message,
# tool_use, tool_result), codex exec --json item events and its pre-0.40 {"msg": {...}} events.
_CONVERSATION = frozenset(['assistant', 'user', 'system', 'stream_event', 'init', 'message', 'tool_use', 'tool_result'])
_CODEX_SIGNALS = frozenset(['error', 'stream_error', 'background_event'])   # old codex msg types that are not its words
_CODEX_EVENTS = frozenset(['thread.started', 'turn.started', 'turn.completed', 'turn.failed'])
_REVOKED_TYPES = frozenset(['authentication_error', 'permission_error'])
_TRANSIENT_TYPES = frozenset(['rate_limit_error', 'overloaded_error', 'api_error'])
_REVOKED_STATUS = frozenset(['UNAUTHENTICATED', 'PERMISSION_DENIED'])
_TRANSIENT_STATUS = frozenset(['RESOURCE_EXHAUSTED', 'UNAVAILABLE', 'INTERNAL'])
_LIMIT_TYPES = frozenset(['usage_limit_reached', 'insufficient_quota'])
_STATUS_KEYS = ('code', 'status', 'status_code', 'statusCode', 'api_error_status', 'http_status')
# How deep JSON inside JSON (an error body quoted in a message, inside an event) is followed.
# Unmeasured guess with a margin: the corpus's deepest is 3 (Gemini: API Error -> error.message ->
# error). Experiment that settles it: the nesting depth of every error body in a month of captures, +2.
_MAX_DEPTH = 6


@dataclass
class _Facts:
    """What the JSON in a capture states, collected from every error body and event."""

    statuses: List[int] = field(default_factory=list)
    types: List[str] = field(default_factory=list)
    words: List[str] = field(default_factory=list)       # status strings, reasons, quota ids
    messages: List[str] = field(default_factory=list)
    resets: List[Tuple[str, Any]] = field(default_factory=list)   # (key as written, value)
    quota_values: List[str] = field(default_factory=list)   # Google quotaValue: '0' means no quota at all
    limit_rejected: bool = False
    limit_allowed: bool = False

    def any(self):
        return bool(self.statuses or self.types or self.words or self.messages or self.resets or self.limit_rejected)


def _embedded(text: str) -> List[dict]:
    """JSON objects inside a string value (an error body quoted as a message)."""
    if '{' not in text:
        return []
    return [obj for obj, _s, _e in json_objects(text, strict=False)]


def _collect(value: Any, facts: _Facts, depth: int = 0) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, list):
        for element in value:
            _collect(element, facts, depth + 1)
        return
    if isinstance(value, str):
        for obj in _embedded(value):
            _collect(obj, facts, depth + 1)
        return
    if not isinstance(value, dict):
        return
    if value.get('type') == 'rate_limit_event':
        info = value.get('rate_limit_info') if isinstance(value.get('rate_limit_info'), dict) else {}
        if str(info.get('status', '')).lower() == 'rejected':
            facts.limit_rejected = True
            if info.get('resetsAt') is not None:
                facts.resets.append(('resetsAt', info.get('resetsAt')))
        else:
            facts.limit_allowed = True
        return
    for key in _STATUS_KEYS:
        status = value.get(key)
        if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
            facts.statuses.append(status)
        elif isinstance(status, str):
            if status.isdigit() and 100 <= int(status) <= 599:
                facts.statuses.append(int(status))
            elif (status.isupper() and '_' in status) or status in _REVOKED_STATUS | _TRANSIENT_STATUS:
                facts.words.append(status)
    for key in ('type', 'api_error_type', 'api_error'):   # Claude Code's envelope names the error in api_error*
        etype = value.get(key)
        if isinstance(etype, str) and (etype.endswith('_error') or etype in _LIMIT_TYPES):
            facts.types.append(etype)
    for key in ('quotaValue', 'quota_value'):   # Google's QuotaFailure violation: the quota's size
        if value.get(key) is not None:
            facts.quota_values.append(str(value.get(key)).strip())
    for key in ('reason', 'quotaId', 'quota_id', 'quota_limit', 'code'):
        word = value.get(key)
        if isinstance(word, str) and word and not word.isdigit():
            facts.words.append(word)
    for key in ('resets_at', 'resetsAt', 'resets_in_seconds', 'retry-after', 'retry_after', 'Retry-After', 'retryDelay'):
        if value.get(key) is not None:
            facts.resets.append((key, value.get(key)))
    headers = value.get('headers')
    if isinstance(headers, dict):
        for key, item in headers.items():
            if str(key).lower() == 'retry-after':
                facts.resets.append(('retry-after', item))
    message = value.get('message')
    if isinstance(message, str) and message.strip():
        stripped = message.strip()
        if not (stripped.startswith('{') or stripped.startswith('[')):
            facts.messages.append(message)
    for key, item in value.items():
        if isinstance(item, (dict, list)) or (isinstance(item, str) and '{' in item):
            _collect(item, facts, depth + 1)


# --- prose signatures (the fallback, searched in the capture minus the agent's own words) --------

def _rx(pattern):
    return re.compile(pattern, re.IGNORECASE)


_GOOGLE = _rx(r'RESOURCE_EXHAUSTED|googleapis\.com|ai\.google\.dev|google\.rpc|cloudcode-pa|generativelanguage')
_BILLING = _rx(r'check\s+your\s+plan\s+and\s+billing\s+details|\binsufficient_quota\b')
_PER_DAY = _rx(r'PerDay|per\s+day|\bdaily\b')
_PER_MINUTE = _rx(r'PerMinute|per\s+minute|\bper\s+min\b|\(TPM\)|\(RPM\)')

_REVOKED = [
    ('http_401', _rx(r'(?:\b(?:status|error|code|http)\b[^\n\w]{0,3}\s*401\b|\b401\s+Unauthorized\b)')),
    ('http_403', _rx(r'(?:\b(?:status|error|code|http)\b[^\n\w]{0,3}\s*403\b|\b403\s+Forbidden\b)')),
    ('authentication_error', _rx(r'\bauthentication_error\b|\binvalid\s+authentication\s+credentials\b')),
    ('permission_error', _rx(r'\bpermission_error\b|\bno\s+longer\s+a\s+member\s+of\s+the\s+organi[sz]ation\b')),
    ('oauth_expired', _rx(r'\b(?:oauth\s+|access\s+)?token\s+has\s+expired\b')),
    ('refresh_failed', _rx(r'\brefresh\s+token\s+(?:has\s+already\s+been\s+used|was\s+revoked|is\s+invalid|has\s+expired)'
                           r'|\baccess\s+token\s+could\s+not\s+be\s+refreshed\b|\bfailed\s+to\s+refresh\s+token\b'
                           r'|\b(?:log\s+out\s+and\s+)?sign\s+in\s+again\b')),
    ('invalid_key', _rx(r'\binvalid\s+(?:x-)?api[ _-]?key\b|\bapi[ _-]?key\s+(?:not\s+valid|not\s+found|is\s+invalid)\b'
                        r'|\bAPI_KEY_INVALID\b|\bincorrect\s+api\s+key\b|\bapi[ _-]?key\s+(?:has\s+)?expired\b')),
    ('missing_key', _rx(r'\bmissing\s+api[ _-]?key\b|\bmust\s+specify\s+the\s+\w*API_KEY\b')),
    ('no_auth', _rx(r'\bplease\s+set\s+an\s+auth\s+method\b|\binvalid\s+auth\s+method\b|\bnot\s+logged\s+in\b'
                    r'|\btoken\s+data\s+is\s+not\s+available\b|\bplease\s+(?:log|sign)\s+in\b|\bfailed\s+to\s+login\b'
                    r'|\berror\s+authenticating\b|\bauthentication\s+failed\b|\binvalid\s+bearer\s+token\b'
                    r'|\brequires\s+setting\s+the\s+GOOGLE_CLOUD_PROJECT\b')),
    ('login_required', _rx(r'\bplease\s+run\s+/login\b|\brun\s+/login\b')),
    ('credit_exhausted', _rx(r'\bcredit\s+balance\s+(?:is\s+)?too\s+low\b')),
    # Codex CLI's UsageNotIncluded (codex-rs core/src/error.rs): the plan does not include Codex at all
    ('plan_not_included', _rx(r'\bto\s+use\s+Codex\s+with\s+your\s+ChatGPT\s+plan,?\s+upgrade\b')),
    ('account_disabled', _rx(r'\b(?:account|organi[sz]ation|workspace)\s+(?:has\s+been\s+|was\s+|is\s+)?'
                             r'(?:disabled|suspended|deactivated|banned)\b|\borgani[sz]ation\s+has\s+disabled\b')),
    ('revoked', _rx(r'\b(?:entitlement|access|subscription|api[ _-]?key|oauth\s+token|license)\s+'
                    r'(?:has\s+been\s+|was\s+|is\s+)?(?:revoked|disabled|suspended|cancell?ed|terminated|deactivated)\b')),
]
# Billing wording: OpenAI's insufficient_quota (money gone: revoked); Google's is a quota (below).
_BILLING_REVOKED = ('insufficient_quota', _BILLING)

_RATE_LIMIT = [
    ('usage_limit', _rx(r'\busage\s+limits?\s+(?:has\s+been\s+|have\s+been\s+)?(?:reached|exceeded|hit)\b'
                        r'|\b(?:reached|hit|exceeded)\s+(?:your|the)\s+(?:\w+\s+){0,2}usage\s+limits?\b')),
    ('period_limit', _rx(r'\b(?:5[- ]hour|five[- ]hour|session|daily|weekly|monthly|opus|sonnet)\s+(?:usage\s+)?limit\s+'
                         r'(?:reached|exceeded|hit)\b')),
    # "You've hit your limit", "You've hit your 5-hour limit" (Claude Code), "You've hit your usage limit" (Codex)
    ('hit_your_limit', _rx(u"\\byou(?:'|\u2019)?ve\\s+(?:hit|reached)\\s+your\\s+(?:[\\w-]+\\s+)?limit\\b")),
    # Anthropic's 429 body for a subscription (unified) limit: the body Claude Code prints with an API key and
    # logs next to "You've hit your limit · resets 4pm (...)" (anthropics/claude-code#19673, #54698); its
    # per-minute throttle says "the rate limit for your organization ... per minute" instead.
    ('account_limit', _rx(u"\\bexceed\\s+your\\s+account(?:'|\u2019)?s\\s+rate\\s+limit\\b")),
    ('daily_quota', _rx(r'\b(?:reached|exhausted)\s+your\s+daily\s+(?:[\w.-]+\s+)?quota\b|\bdaily\s+(?:[\w.-]+\s+)?quota\s+limit\b')),
    ('usage_limit', _rx(r'\batingiu\s+o\s+limite\b|\blimite\s+de\s+uso\b')),
]
# Words that are a limit or a throttle depending on the stated wait (THROTTLE_MAX_S).
_CAPACITY_WORDS = _rx(r'\bexhausted\s+your\s+capacity\b')
# A quota whose size is zero ("Quota exceeded for metric: ..., limit: 0, model: ..."): none was ever granted
# (billing, tier, region), so no wait helps -- revoked, never a throttle or a limit.
_ZERO_QUOTA = _rx(r'\blimit:?\s*0(?![\d.])')
_LIMIT_CONTEXT = _rx(r'\brate\s+limit|\bquota\b')
_QUOTA_WORDS = _rx(r'\bquota\s+exceeded\b|\bexceeded\s+your\s+current\s+quota\b')

_HTTPISH = r'(?:\bHTTP(?:/\d(?:\.\d)?)?|\bstatus(?:[ _]code)?|\berror|\bcode|\bresponse|\bAPI\s+Error)\s*[:=(]?\s*'
_TRANSIENT = [
    ('http_429', _rx(_HTTPISH + r'429\b|\b429\s+Too\s+Many\s+Requests\b|\bToo\s+Many\s+Requests\b|\brate_limit_error\b'
                     r'|\brejected\s*\(429\)|\brate\s+limiting\s+detected\b')),
    # overload in the CLIs' own words, with no status: Codex's ServerOverloaded and InternalServerError
    # (codex-rs core/src/error.rs), Google's MODEL_CAPACITY_EXHAUSTED ("No capacity available for model ...")
    ('overloaded', _rx(r'\bselected\s+model\s+is\s+at\s+capacity\b|\bcurrently\s+experiencing\s+high\s+demand\b'
                       r'|\bflex\s+capacity\s+unavailable\b|\bno\s+capacity\s+available\s+for\s+model\b'
                       r'|\bMODEL_CAPACITY_EXHAUSTED\b')),
    ('rate_limited', _rx(r'\brate\s+limit\s+(?:is\s+)?(?:reached|exceeded)\b|\bRESOURCE_EXHAUSTED\b'
                         r'|\bresource\s+(?:has\s+been\s+)?exhausted\b')),
    ('http_5xx', _rx(_HTTPISH + r'5\d\d\b|\bRepeated\s+5\d\d\b|\bInternal\s+Server\s+Error\b|\bBad\s+Gateway\b'
                     r'|\bService\s+Unavailable\b|\bGateway\s+Time-?out\b|\boverloaded(?:_error)?\b|\bapi_error\b'
                     r'|\bstatus:\s*UNAVAILABLE\b|\ban\s+error\s+occurred\s+while\s+processing\s+your\s+request\b'
                     r'|\binternal\s+error\s+(?:has\s+occurred|encountered)\b')),
    ('connection', _rx(r'\bE(?:CONNRESET|CONNREFUSED|CONNABORTED|NOTFOUND|AI_AGAIN|NETUNREACH|HOSTUNREACH|NETRESET|PIPE)\b'
                       r'|\bconnection\s+(?:was\s+)?(?:refused|reset|aborted|closed\s+unexpectedly|error)\b|\breset\s+by\s+peer\b'
                       r'|\bsocket\s+hang\s+up\b|\bnetwork\s+is\s+unreachable\b|\bno\s+route\s+to\s+host\b|\bfetch\s+failed\b'
                       r'|\berror\s+sending\s+request\b|\btransport\s+error\b|\berror\s+decoding\s+response\s+body\b'
                       r'|\bstream\s+closed\s+before\s+response\.completed\b|\bunable\s+to\s+connect\s+to\s+(?:the\s+)?API\b')),
    ('dns', _rx(r'\bgetaddrinfo\b|\bName\s+or\s+service\s+not\s+known\b|\bTemporary\s+failure\s+in\s+name\s+resolution\b'
                r'|\bCould\s+not\s+resolve\s+host\b|\bnodename\s+nor\s+servname\s+provided\b')),
]
# A failure the text states (only read when no envelope and no limit/transient signature decided).
_FAILURE = _rx(r'\berror\b|\bfailed\b|\bfailure\b|\btimed\s+out\b|\btimeout\b|\bUnknown\s+arguments?\b|\bBad\s+Request\b'
               r'|\bexception\b|\btraceback\b|\bpanicked\b|\bETIMEDOUT\b|\bprompt\s+is\s+too\s+long\b'
               r'|\bcontext\s+(?:window|length)\b.{0,40}\bexceeded\b|\binvalid\s+model\b|\bpermission\s+denied\b'
               r'|\bcommand\s+not\s+found\b|\bno\s+such\s+file\b')
# A success envelope that is no longer JSON (a reporter elided "stats": { ... }, a log cut it), still
# known by its keys: Gemini CLI's {"response": "...", "stats": ...}, Claude Code's subtype success
# with is_error false.
_BROKEN_ENVELOPE = re.compile(r'"response"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"stats"\s*:')
_CLAUDE_OK_KEYS = (re.compile(r'"subtype"\s*:\s*"success"'), re.compile(r'"is_error"\s*:\s*false'))
# The agent's result text claims completed work (D2: a claim, never proof).
_CLAIM_DONE = _rx(r'\b(?:done|fixed|pushed|merged|implemented|completed|committed|created)\b')


# --- reset times -------------------------------------------------------------------------------

_MONTHS = {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10,
           'nov': 11, 'dec': 12,
           # Portuguese abbreviations (Codex prints localized dates: "10 de jul. de 2026")
           'fev': 2, 'abr': 4, 'mai': 5, 'ago': 8, 'set': 9, 'out': 10, 'dez': 12}
_CLOCK = r'(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?(?::\d{2}(?:\.\d+)?)?\s*(?P<ap>[ap]\.?\s?m\b\.?)?'
_ZONE = (r'(?:\s*\(\s*(?P<zp>[^()\n]{1,40}?)\s*\)|\s*(?P<z>(?:Etc/)?GMT[+-]\d{1,2}(?::?\d{2})?|UTC[+-]\d{1,2}(?::?\d{2})?'
         r'|[A-Z][A-Za-z_]+/[A-Za-z_]+(?:/[A-Za-z_]+)?|(?-i:UTC|GMT|[A-Z]{2,4}T|Z)\b|[+-]\d{2}:?\d{2}\b))?')
_MON = r'(?P<mon>jan|feb|fev|mar|apr|abr|may|mai|jun|jul|aug|ago|sep|set|oct|out|nov|dec|dez)[a-z]*\.?'
_DATE_EN = _MON + r'\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?(?:\s+(?P<y>\d{4}),?)?\s*(?:at\s+)?'
_DATE_PT = r'(?P<d>\d{1,2})\s+de\s+' + _MON + r'\s+de\s+(?P<y>\d{4}),?\s*(?:às\s+)?'
_DATE_ISO = r'(?P<iso>\d{4}-\d{2}-\d{2})(?:[T ]|\s+at\s+)'
_LEAD = (r'(?:\breset(?:s|ting)?(?:\s+at|\s+on)?|\bwill\s+reset\s+at|\btry\s+again\s+(?:at|on)|\bregain\s+access\s+on'
         r'|\bavailable\s+again\s+(?:at|on)|\bredefinido\s+em|\bback\s+at)\s+')
_STATED = [
    ('date', re.compile(_LEAD + r'(?:' + _DATE_ISO + r')' + _CLOCK + _ZONE, re.IGNORECASE)),
    ('date', re.compile(_LEAD + _DATE_EN + _CLOCK + _ZONE, re.IGNORECASE)),
    ('date', re.compile(_LEAD + _DATE_PT + _CLOCK + _ZONE, re.IGNORECASE)),
    ('clock', re.compile(_LEAD + _CLOCK + _ZONE + r'(?![\w/])', re.IGNORECASE)),
]
_DUR_UNIT = r'(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)'
_DURATION = r'(?:\d+(?:\.\d+)?\s*' + _DUR_UNIT + r'(?![a-zA-Z])[\s,]*(?:and\s+)?)+'
_STATED_DURATION = re.compile(r'(?:\btry\s+again|\bretry|\breset|\bresets)\s+(?:in|after)\s+(?P<dur>' + _DURATION + r')',
                              re.IGNORECASE)
_RETRY_AFTER = re.compile(r'\bretry-after\s*[:=]\s*"?(?P<dur>\d+(?:\.\d+)?)\b', re.IGNORECASE)
_EPOCH_NOTICE = re.compile(r'limit\s+reached\|(?P<epoch>\d{10}(?:\d{3})?)\b')
_UNITS = {'ms': 0.001, 'millisecond': 0.001, 'milliseconds': 0.001, 's': 1, 'sec': 1, 'secs': 1, 'second': 1,
          'seconds': 1, 'm': 60, 'min': 60, 'mins': 60, 'minute': 60, 'minutes': 60, 'h': 3600, 'hr': 3600,
          'hrs': 3600, 'hour': 3600, 'hours': 3600, 'd': 86400, 'day': 86400, 'days': 86400}


def parse_duration(text: Any) -> Optional[float]:
    """Seconds in ``"4h28m20s"``, ``"5 days 22 hours 11 minutes"``, ``"1.574s"``, ``"15s"``; None if none."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        return None
    total, found = 0.0, False
    for num, unit in re.findall(r'(\d+(?:\.\d+)?)\s*([a-zA-Z]+)', text):
        factor = _UNITS.get(unit.lower())
        if factor is None:
            continue
        total += float(num) * factor
        found = True
    if not found and re.match(r'^\s*\d+(?:\.\d+)?\s*$', text):
        return float(text)
    return total if found else None


def _epoch(value: Any) -> Optional[_dt.datetime]:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if number > 1e11:
        number = number / 1000.0
    if not 978307200 <= number <= 4102444800:   # 2001..2100: anything else is not a reset time
        return None
    return _dt.datetime.fromtimestamp(number, UTC)


def _zone(text: Optional[str]) -> Optional[_dt.tzinfo]:
    """A zone as written after a time; None when not understood. ``Etc/GMT+5`` is UTC-5 (tzdata's
    own POSIX sign); ``GMT-3``/``UTC+2`` without ``Etc/`` are ordinary offsets."""
    if not text:
        return None
    text = text.strip()
    if text.upper() in ('AM', 'PM'):
        return None
    return _tzinfo(text)


@dataclass
class Stated:
    """A reset as the capture states it: the span, and what it resolves to."""

    text: str
    at: Optional[_dt.datetime] = None      # the instant (aware UTC), when it can be known
    local: Optional[str] = None            # zone-less wall-clock date-time, when a date is stated
    in_s: Optional[float] = None           # a stated duration, seconds


def _clock_parts(match) -> Optional[Tuple[int, int]]:
    hour, minute = int(match.group('h')), int(match.group('mi') or 0)
    ampm = match.group('ap')
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm.strip().lower().startswith('p') else 0)
    elif match.group('mi') is None:
        return None   # a bare "5" is not a clock time
    if hour > 23 or minute > 59:
        return None
    return hour, minute


def _localize(naive: _dt.datetime, zone: _dt.tzinfo) -> _dt.datetime:
    return naive.replace(tzinfo=zone).astimezone(UTC)


def resolve_stated(match, kind: str, *, now: Optional[_dt.datetime], tz: Any, on_date: Optional[_dt.date]) -> Stated:
    """Resolve one stated reset (a match of ``_STATED``). Never invents: no zone and no ``tz`` -> no instant."""
    text = match.group(0).strip().rstrip('.').strip()
    parts = _clock_parts(match)
    if parts is None:
        return Stated(text)
    hour, minute = parts
    zone_text = match.group('zp') or match.group('z')
    zone = _zone(zone_text) if zone_text else (_tzinfo(tz) if tz not in (None, '') else None)
    if zone_text and zone is None:
        return Stated(text)   # a zone we cannot pin down: unknown, never a guess
    groups = match.groupdict()
    if kind == 'date':
        if groups.get('iso'):
            try:
                day = _dt.date.fromisoformat(groups['iso'])
            except ValueError:
                return Stated(text)
            year_stated = True
        else:
            month = _MONTHS.get(groups['mon'][:3].lower())
            year_stated = bool(groups.get('y'))
            ref = now.date() if now is not None else on_date
            year = int(groups['y']) if year_stated else (ref.year if ref is not None else None)
            if month is None or year is None:
                return Stated(text)
            try:
                day = _dt.date(year, month, int(groups['d']))
            except ValueError:
                return Stated(text)
            if not year_stated and ref is not None and day < ref - _dt.timedelta(days=1):
                try:
                    day = day.replace(year=day.year + 1)   # "Jan 2" stated on Dec 30
                except ValueError:
                    return Stated(text)
        naive = _dt.datetime(day.year, day.month, day.day, hour, minute)
        local = naive.isoformat() if not zone_text else None
        if zone is None:
            return Stated(text, local=local)
        return Stated(text, at=_localize(naive, zone), local=local)
    # a bare clock time: on now's date in its zone, rolled forward only when it has passed
    if zone is None:
        return Stated(text)
    if now is not None:
        day = now.astimezone(zone).date()
        for _add in range(3):   # today, else tomorrow (a DST gap can need one more day)
            candidate = _localize(_dt.datetime(day.year, day.month, day.day, hour, minute), zone)
            if candidate > now:
                return Stated(text, at=candidate)
            day = day + _dt.timedelta(days=1)
        return Stated(text)
    if on_date is not None:   # the day it was printed, no later instant known: that day
        return Stated(text, at=_localize(_dt.datetime(on_date.year, on_date.month, on_date.day, hour, minute), zone))
    return Stated(text)


def stated_reset(text: str, *, now: Optional[_dt.datetime], tz: Any, on_date: Optional[_dt.date]) -> Optional[Stated]:
    """The LAST reset the prose states (an agent that retried prints several; the last one is current),
    preferring one that resolves (a span a terminal wrap broke, "8:1" of "8:14pm", resolves to nothing)."""
    found = []   # (position, Stated)
    for match in _EPOCH_NOTICE.finditer(text):
        found.append((match.start(), Stated(match.group('epoch'), at=_epoch(match.group('epoch')))))
    taken = []
    for kind, pattern in _STATED:
        for match in pattern.finditer(text):
            if any(s <= match.start() < e for s, e in taken):
                continue
            taken.append((match.start(), match.end()))
            found.append((match.start(), resolve_stated(match, kind, now=now, tz=tz, on_date=on_date)))
    for match in list(_STATED_DURATION.finditer(text)) + list(_RETRY_AFTER.finditer(text)):
        seconds = parse_duration(match.group('dur'))
        if seconds is None:
            continue
        span = match.group(0).rstrip(' ,\n')
        at = now + _dt.timedelta(seconds=seconds) if now is not None else None
        found.append((match.start(), Stated(span, at=at, in_s=seconds)))
    if not found:
        return None
    found.sort(key=lambda pair: pair[0])
    resolved = [stated for _pos, stated in found if stated.at is not None or stated.in_s is not None or stated.local]
    return resolved[-1] if resolved else found[-1][1]


def _structured_reset(facts: _Facts, now: Optional[_dt.datetime]) -> Optional[Stated]:
    """A reset a JSON field states: an instant (``resets_at``/``resetsAt``) wins over a wait
    (``resets_in_seconds``, ``retry-after``, ``retryDelay``), whose seconds it keeps as ``in_s``."""
    best, exact = None, None
    for key, value in facts.resets:
        if key in ('resets_at', 'resetsAt'):
            at = _epoch(value) if not isinstance(value, str) or value.strip().isdigit() else _parse_time_safe(value)
            if at is not None and exact is None:
                exact = Stated('"%s":%s' % (key, value), at=at)
        elif best is None:
            seconds = parse_duration(value)
            if seconds is not None:
                best = Stated('"%s":%s' % (key, json.dumps(value)), in_s=seconds,
                              at=(now + _dt.timedelta(seconds=seconds)) if now is not None else None)
    if exact is not None:
        exact.in_s = best.in_s if best is not None else None
        return exact
    return best


def _parse_time_safe(value: Any) -> Optional[_dt.datetime]:
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        return None


# --- the reading -------------------------------------------------------------------------------

@dataclass
class Reading:
    """What a capture says, for one profile: the one reading the runner and ``classify`` share."""

    profile: str
    kind: str
    envelope: Optional[dict] = None
    envelope_shape: str = ''
    turns: Optional[int] = None
    claim: Optional[str] = None             # the agent's word about itself: 'success' | 'error' | None
    signature: str = ''
    evidence: str = ''                      # 'envelope' | 'structured' | 'prose' | ''
    message: str = ''
    reset: Optional[Stated] = None
    usage: Dict[str, Any] = field(default_factory=dict)
    cost_usd: Optional[float] = None
    subtype: str = ''
    result: str = ''
    is_error: Optional[bool] = None
    worked: bool = False                    # a turn happened: output tokens, cost or a tool call (D7)
    signature_text: str = field(default='', repr=False)

    @property
    def envelope_found(self) -> bool:
        return self.envelope is not None

    spend: Optional['Spend'] = None         # every usage the capture states, read as UsageMeter reads it live

    @property
    def tokens(self) -> Optional[int]:
        """Input plus output tokens as the capture states them (``token_count``); None when it states none."""
        return token_count(self.usage)

    @property
    def transient(self) -> bool:
        return self.kind == 'transient'

    @property
    def reset_at(self) -> Optional[_dt.datetime]:
        return None if self.kind == 'revoked' or self.reset is None else self.reset.at

    @property
    def reset_text(self) -> Optional[str]:
        return None if self.kind == 'revoked' or self.reset is None else self.reset.text

    def capacity(self) -> Optional[Dict[str, Any]]:
        """The limit, as ``_core.outcome.capacity.state_from`` and the close-out take it, or None (D8, D20):
        ``{'source': 'rate_limit'|'revoked', 'signature', 'message', 'reset_text', 'reset_at'}``."""
        if self.kind not in ('rate_limit', 'revoked'):
            return None
        return {'source': self.kind, 'signature': self.signature, 'message': self.message[:_MESSAGE_MAX],
                'reset_text': self.reset_text, 'reset_at': self.reset_at}

    def outcome(self, exit_code: Optional[int] = None) -> Outcome:
        """The ``_core.outcome.retry.Outcome`` the retry gate and ``_core.outcome.closeout.decide`` read (D7: one parse)."""
        code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
        turns = (self.turns if self.envelope is not None else None) if self.worked else 0
        is_error = self.is_error
        if self.kind not in ('success', 'noop_claim') and (self.envelope is not None or self.evidence == 'structured'):
            is_error = True
        return Outcome(envelope=self.envelope, turns=turns, is_error=is_error, subtype=self.subtype, result=self.result,
                       exit_code=code, transient=self.signature if self.kind == 'transient' else '',
                       capacity=self.capacity(), signature_text=self.signature_text, worked=self.worked)


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _int_or_none(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _shape(obj: dict) -> str:
    kind = obj.get('type')
    if kind == 'result':
        return 'claude_result'
    if kind == 'turn.completed':
        return 'codex_turn'
    msg = obj.get('msg')
    if kind is None and isinstance(msg, dict) and msg.get('type') == 'task_complete':
        return 'codex_turn'   # codex exec --json before 0.40: {"id": ..., "msg": {"type": "task_complete"}}
    if 'response' in obj and ('stats' in obj or 'error' not in obj) and kind is None:
        return 'gemini_json'
    return ''


def _gemini_usage(stats: Any) -> Dict[str, Any]:
    total = {}
    models = stats.get('models') if isinstance(stats, dict) else None
    if not isinstance(models, dict):
        return total
    for model in models.values():
        tokens = model.get('tokens') if isinstance(model, dict) else None
        if isinstance(tokens, dict):
            for key, value in tokens.items():
                if _int_or_none(value) is not None:
                    total[key] = total.get(key, 0) + value
    return total


def _clean_usage(usage: Any) -> Dict[str, Any]:
    if not isinstance(usage, dict):
        return {}
    return dict((k, v) for k, v in usage.items() if _int_or_none(v) is not None)


TOKEN_KEYS = ('input_tokens', 'output_tokens', 'prompt', 'candidates')


def token_count(usage: Any) -> Optional[int]:
    """Input plus output tokens as a usage object states them: Claude Code's and Codex's ``input_tokens`` +
    ``output_tokens`` (Claude's cache reads and writes are stated apart and not counted; Codex's cached input is
    inside its ``input_tokens``), Gemini CLI's ``prompt`` + ``candidates`` (json) or ``input_tokens`` +
    ``output_tokens`` (stream-json). None when it states none: never estimated."""
    if not isinstance(usage, dict):
        return None
    counts = [usage.get(k) for k in TOKEN_KEYS if _int_or_none(usage.get(k)) is not None]
    return sum(counts) if counts else None


# --- usage as the agent states it, event by event ------------------------------------------------

@dataclass
class Spend:
    """What the agent stated it spent: ``tokens`` (``token_count``) and ``cost_usd``, each None when the
    output stated none (never estimated, never priced here); ``events``: the usage events read."""

    tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    events: int = 0

    def fields(self) -> Dict[str, Any]:
        """The figures that were stated, as marker fields."""
        return dict((k, v) for k, v in (('tokens', self.tokens), ('cost_usd', self.cost_usd)) if v is not None)


class UsageMeter(object):
    """The agent's usage, read event by event: the one reading of usage, live (``feed``, as the capture
    grows) and after the run (``read_capture`` passes every object of the capture to ``add``).

    Per format: Claude Code stream-json states each model response's usage in its ``assistant`` lines (one
    line per content block, all with the message's usage: counted once per message ``id``, the last line
    wins) and the run's totals and ``total_cost_usd`` in its ``result``; Codex ``exec --json`` states the
    thread's usage so far in each ``turn.completed`` (before 0.40, ``token_count`` events'
    ``total_token_usage``); Gemini CLI states ``stats`` in its final object only (json: per model; stream-json:
    the ``result`` line). A total the CLI states and the sum of the responses it stated are both what was
    spent; the larger is kept. Pure: no I/O.
    """

    def __init__(self):
        self._messages = {}   # type: Dict[str, int]
        self._unnamed = 0
        self._total = None    # type: Optional[int]
        self._cost = None     # type: Optional[float]
        self._events = 0
        self._rest = ''

    def add(self, obj: Any) -> str:
        """Read one JSON object of the output: the kind of usage event it is (``message``, ``turn``,
        ``result``), or '' when it states no usage."""
        if not isinstance(obj, dict):
            return ''
        kind, msg = obj.get('type'), obj.get('msg')
        event, total, cost = '', None, None
        if kind == 'assistant' and isinstance(obj.get('message'), dict):
            message = obj['message']
            count = token_count(message.get('usage'))
            if count is None:
                return ''
            if isinstance(message.get('id'), str) and message['id']:
                self._messages[message['id']] = count
            else:
                self._unnamed += count
            event = 'message'
        elif kind == 'result':       # Claude Code's result; Gemini CLI stream-json's result (stats)
            total = token_count(obj.get('usage'))
            if total is None and isinstance(obj.get('stats'), dict):
                total = token_count(obj['stats'])
            cost = _num(obj.get('total_cost_usd'))
            event = 'result' if total is not None or cost is not None else ''
        elif kind == 'turn.completed':
            total = token_count(obj.get('usage'))
            event = 'turn' if total is not None else ''
        elif kind is None and isinstance(msg, dict) and msg.get('type') == 'token_count':   # codex before 0.40
            info = msg.get('info') if isinstance(msg.get('info'), dict) else {}
            total = token_count(info.get('total_token_usage') if isinstance(info.get('total_token_usage'), dict) else msg)
            event = 'message' if total is not None else ''
        elif kind is None and _shape(obj) == 'gemini_json':
            total = token_count(_gemini_usage(obj.get('stats')))
            event = 'result' if total is not None else ''
        if not event:
            return ''
        if total is not None:
            self._total = total if self._total is None else max(self._total, total)
        if cost is not None:
            self._cost = cost
        self._events += 1
        return event

    def feed(self, text: str) -> List[Tuple[str, 'Spend']]:
        """Read the output that followed what was fed before: ``(event, spend after it)`` for each usage
        event on a completed line, in order. An unfinished last line waits for the next ``feed``; an object
        broken over several lines (Gemini CLI's pretty-printed json) is read only by ``read_capture``."""
        lines = (self._rest + (text or '')).split('\n')
        self._rest = lines.pop()
        found = []
        for line in lines:
            for obj, _start, _end in json_objects(line, strict=False):
                event = self.add(obj)
                if event:
                    found.append((event, self.spend))
        return found

    @property
    def spend(self) -> Spend:
        summed = sum(self._messages.values()) + self._unnamed if (self._messages or self._unnamed) else None
        stated = [n for n in (summed, self._total) if n is not None]
        return Spend(tokens=max(stated) if stated else None, cost_usd=self._cost, events=self._events)


# Terminal dressing around the words: ANSI escapes (CSI and OSC), box-drawing and block glyphs.
_ANSI = re.compile(r'\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]')
_BOX = re.compile(u'[\u2500-\u259f]')
# Lines at least this long that share one length are a terminal's hard wrap (its width). Unmeasured
# guess: below the narrowest terminal in the corpus's wrapped pastes (80 columns, less a box border);
# the experiment that settles it is the width of every wrapped paste in a month of captures.
_WRAP_MIN = 40


def _unwrap(text: str) -> str:
    """``text`` with its terminal wraps undone: escapes and box glyphs dropped, and each line as long
    as the terminal is wide (the most common length of two or more lines of ``_WRAP_MIN`` or more)
    joined to the next (one a character short, with a space: the paste dropped it) -- "resets 8:1" +
    "4pm (UTC)" is "resets 8:14pm (UTC)" again."""
    lines = [_BOX.sub(' ', line).strip() if _BOX.search(line) else line.rstrip('\r')
             for line in _ANSI.sub('', text).split('\n')]
    lengths = {}
    for line in lines:
        if len(line) >= _WRAP_MIN:
            lengths[len(line)] = lengths.get(len(line), 0) + 1
    width = max((n for n, count in lengths.items() if count >= 2), key=lambda n: (lengths[n], n), default=None)
    if width is None:
        return '\n'.join(lines)
    out, glue = [], None
    for line in lines:
        if glue is not None and out:
            out[-1] += glue + line
        else:
            out.append(line)
        # a full line continues on the next; one short of full lost its trailing space to the paste
        glue = '' if len(line) == width else ' ' if len(line) == width - 1 else None
    return '\n'.join(out)


def _flat(text: str) -> str:
    """The signature text as a human reads it: JSON escapes undone, then, after it, the same text
    with its terminal wraps undone (``_unwrap``) when that differs."""
    text = text.replace('\\r\\n', '\n').replace('\\n', '\n').replace('\\"', '"').replace('\\\\', '\\')
    unwrapped = _unwrap(text)
    return text if unwrapped == text else text + '\n' + unwrapped


def _line(text: str, start: int, end: int) -> str:
    head = text.rfind('\n', 0, start) + 1
    tail = text.find('\n', end)
    return text[head:tail if tail >= 0 else len(text)].strip()


def _first(table, text: str):
    best = None
    for name, pattern in table:
        match = pattern.search(text)
        if match and (best is None or match.start() < best[1].start()):
            best = (name, match)
    return best


def _own_words(obj: dict) -> bool:
    """An object that is the agent's own words or tool traffic (never searched for signatures)."""
    kind = obj.get('type')
    if kind in _CONVERSATION or kind in ('thread.started', 'turn.started'):
        return True
    if isinstance(kind, str) and kind.startswith('item.'):
        return True
    msg = obj.get('msg')
    if kind is None and isinstance(msg, dict) and isinstance(msg.get('type'), str):
        return msg['type'] not in _CODEX_SIGNALS
    return False


def _old_codex_usage(objects) -> Dict[str, Any]:
    usage = {}
    for obj, _start, _end in objects:
        msg = obj.get('msg')
        if isinstance(msg, dict) and msg.get('type') == 'token_count':
            info = msg.get('info') if isinstance(msg.get('info'), dict) else {}
            usage = _clean_usage(info.get('total_token_usage') if isinstance(info.get('total_token_usage'), dict) else msg)
    return usage


# Git's own summary line for a commit it made ("[main 1a2b3c4] add hello", "[main (root-commit) 1a2b3c4] ..."),
# at a line start in the raw text or in a JSON string (an escaped newline): a tool really ran.
_GIT_COMMIT = re.compile(r'(?:^|\n|\\n)[ \t]*\[[\w./-]+(?: \(root-commit\))? [0-9a-f]{7,40}\] ', re.MULTILINE)
# A tool call as the CLIs' plain-text output shows it: Claude Code's "⏺ Bash(git commit ...)", Gemini
# CLI's "✓  Shell git commit ..." box line, Codex's "exec ... succeeded in 12ms:".
_TUI_TOOL = re.compile(u'^[ \t\u2502|]*(?:[\u23fa\u25cf]\\s*(?:Bash|Read|Write|Edit|MultiEdit|Update|Glob|Grep|Task|'
                       u'WebFetch|WebSearch|TodoWrite|NotebookEdit)\\(|[\u2714\u2713]\\s+(?:Shell|WriteFile|ReadFile|Edit|'
                       u'ReadFolder|FindFiles|SearchText|ReadManyFiles|WebFetch|GoogleSearch)\\b)'
                       u'|\\bsucceeded in \\d+ms:', re.MULTILINE)
# Codex item types that are the model's words or bookkeeping, not a tool call.
_CODEX_WORDS = frozenset(['agent_message', 'reasoning', 'todo_list', 'error'])
# Old codex {"msg": {...}} events that start a tool call.
_CODEX_OLD_TOOLS = frozenset(['exec_command_begin', 'patch_apply_begin', 'mcp_tool_call_begin', 'web_search_begin'])


@dataclass
class _Work:
    """What the capture shows the agent did: tool calls (None: the output cannot tell), output
    tokens (None: no usage stated), cost, and its last words."""

    tools: Optional[int] = None
    out_tokens: Optional[int] = None
    cost: float = 0.0
    said: str = ''
    worked: bool = False

    def tool(self, count: int = 1) -> None:
        self.tools = (self.tools or 0) + count

    def tokens(self, value: Any) -> None:
        if _int_or_none(value) is not None:
            self.out_tokens = max(self.out_tokens or 0, value)


def _work(text: str, objects, envelope: Optional[dict], shape: str) -> _Work:
    """Did a turn happen (D7 fact 3, D16)? Decided from output tokens, cost and tool calls -- never from
    a counter the CLI fills regardless (Claude Code's and Qwen Code's error envelopes say
    ``num_turns: 1`` with zero usage after every request failed) -- nor from a missing envelope when
    the output shows tool calls or git's own commit line."""
    work = _Work()
    seen_ids = set()
    for obj, _start, _end in objects:
        kind = obj.get('type')
        message = obj.get('message') if isinstance(obj.get('message'), dict) else None
        if kind == 'assistant' and message is not None:          # claude / qwen stream lines
            work.tool(0)
            usage = message.get('usage') if isinstance(message.get('usage'), dict) else {}
            work.tokens(usage.get('output_tokens'))
            for block in message.get('content') or []:
                if isinstance(block, dict) and block.get('type') == 'tool_use':
                    work.tool()
                elif isinstance(block, dict) and block.get('type') == 'text' and isinstance(block.get('text'), str):
                    work.said = block['text']
        elif kind == 'tool_use':                                  # gemini stream-json
            work.tool()
        elif kind == 'message' and obj.get('role') == 'assistant':
            work.tool(0)
            if isinstance(obj.get('content'), str):
                work.said = (work.said + obj['content']) if obj.get('delta') else obj['content']
        elif kind in ('thread.started', 'turn.started'):         # codex exec --json
            work.tool(0)
        elif isinstance(kind, str) and kind.startswith('item.') and isinstance(obj.get('item'), dict):
            item = obj['item']
            work.tool(0)
            if item.get('type') == 'agent_message' and isinstance(item.get('text'), str):
                work.said = item['text']
            elif item.get('type') not in _CODEX_WORDS and item.get('id') not in seen_ids:
                seen_ids.add(item.get('id'))
                work.tool()
        elif kind == 'turn.completed' and isinstance(obj.get('usage'), dict):
            work.tokens(obj['usage'].get('output_tokens'))
        elif kind is None and isinstance(obj.get('msg'), dict):  # codex before 0.40
            msg = obj['msg']
            if msg.get('type') in _CODEX_OLD_TOOLS:
                work.tool()
            elif msg.get('type') == 'agent_message' and isinstance(msg.get('message'), str):
                work.tool(0)
                work.said = msg['message']
            elif msg.get('type') == 'token_count':
                info = msg.get('info') if isinstance(msg.get('info'), dict) else {}
                total = info.get('total_token_usage') if isinstance(info.get('total_token_usage'), dict) else msg
                work.tokens(total.get('output_tokens'))
    error = False
    if envelope is not None:
        usage = envelope.get('usage') if isinstance(envelope.get('usage'), dict) else None
        stats = envelope.get('stats') if isinstance(envelope.get('stats'), dict) else None
        if usage is not None:
            work.tokens(usage.get('output_tokens'))
        if stats is not None:
            work.tokens(stats.get('output_tokens'))               # gemini stream-json result
            if _int_or_none(stats.get('tool_calls')) is not None:
                work.tool(stats['tool_calls'])
            for model in (stats.get('models') or {}).values() if isinstance(stats.get('models'), dict) else []:
                tokens = model.get('tokens') if isinstance(model, dict) and isinstance(model.get('tokens'), dict) else {}
                work.tokens(tokens.get('candidates'))             # gemini json
                if isinstance(model, dict):
                    work.tokens(model.get('output_tokens'))
            tools = stats.get('tools') if isinstance(stats.get('tools'), dict) else {}
            if _int_or_none(tools.get('totalCalls')) is not None:
                work.tool(tools['totalCalls'])
        cost = _num(envelope.get('total_cost_usd'))
        work.cost = cost or 0.0
        error = (envelope.get('is_error') is True or str(envelope.get('status', '')).lower() == 'error'
                 or isinstance(envelope.get('error'), dict)
                 or str(envelope.get('subtype') or 'success') != 'success')
        if (shape == 'claude_result' and work.tools is None and not error
                and _int_or_none(envelope.get('num_turns')) == 1):
            work.tool(0)   # json mode lists no tools, but a tool call needs a second turn to answer it
    commits = len(_GIT_COMMIT.findall(text)) + len(_TUI_TOOL.findall(text))
    if commits:
        work.tool(commits)
    if (work.tools or 0) > 0 or (work.out_tokens or 0) > 0 or work.cost > 0:
        work.worked = True
    elif envelope is not None and work.out_tokens is None:
        # no usage stated: a success envelope, or one that stopped at its turn limit, is taken at its word --
        # unless it says num_turns 0 (a counter may overstate work, D7; saying none is believed, D16)
        work.worked = (not error or envelope.get('subtype') == 'error_max_turns') and envelope.get('num_turns') != 0
    return work


def read_capture(capture: Any, agent: Any = None, *, exit_code: Optional[int] = None, now: Any = None, tz: Any = None,
                 on_date: Any = None) -> Reading:
    """Read one run's capture as profile ``agent`` (default ``custom``): envelope, turns, claim,
    usage, cost, and the kind -- ``success``, ``noop_claim``, ``failure``, ``transient``,
    ``rate_limit`` or ``revoked`` -- with its signature and any stated reset.

    ``now``: when the capture was printed (resolves durations and bare clock times; a passed clock
    time rolls to the next day). ``tz``: the printing machine's zone for times that name none
    (None: such times stay unresolved). ``on_date``: without ``now``, the day it was printed (a
    zoned clock time is read on that day). ``exit_code``: the agent's exit code, when known.
    """
    prof = profile(agent)
    text = capture if isinstance(capture, str) else ''
    when = _parse_time_safe(now) if now is not None else None
    day = on_date if isinstance(on_date, _dt.date) else None
    if day is None and on_date:
        try:
            day = _dt.date.fromisoformat(str(on_date)[:10])
        except ValueError:
            day = None
    objects = json_objects(text, strict=False)
    envelope, env_shape, env_end = None, '', 0
    for obj, _start, end in objects:
        shape = _shape(obj)
        if shape and shape in prof.envelopes:
            envelope, env_shape, env_end = obj, shape, end
    work = _work(text, objects, envelope, env_shape)
    meter = UsageMeter()
    for obj, _start, _end in objects:
        meter.add(obj)
    reading = Reading(profile=prof.name, kind='failure', envelope=envelope, envelope_shape=env_shape, spend=meter.spend)
    env_error = False
    if envelope is not None:
        if env_shape == 'claude_result':
            reading.turns = _int_or_none(envelope.get('num_turns'))
            reading.cost_usd = _num(envelope.get('total_cost_usd'))
            reading.usage = _clean_usage(envelope.get('usage'))
            reading.subtype = str(envelope.get('subtype') or '')
            reading.result = envelope.get('result') if isinstance(envelope.get('result'), str) else ''
            reading.is_error = envelope.get('is_error') if isinstance(envelope.get('is_error'), bool) else None
            env_error = (reading.is_error is True or (reading.subtype not in ('', 'success'))
                         or envelope.get('terminal_reason') not in (None, '', 'completed')
                         or str(envelope.get('status', '')).lower() == 'error')   # gemini stream-json's result line
            if not reading.usage and isinstance(envelope.get('stats'), dict):
                reading.usage = _clean_usage(envelope['stats'])
        elif env_shape == 'codex_turn':
            reading.usage = _clean_usage(envelope.get('usage')) or _old_codex_usage(objects)
        elif env_shape == 'gemini_json':
            reading.usage = _gemini_usage(envelope.get('stats'))
            reading.result = envelope.get('response') if isinstance(envelope.get('response'), str) else ''
            env_error = isinstance(envelope.get('error'), dict)
        reading.claim = 'error' if env_error else 'success'
    # the signature text: the capture minus the agent's own words (conversation lines, a success
    # envelope, codex item events) -- and, after a success envelope, only what follows it
    pieces, cursor, facts = [], 0, _Facts()
    for obj, start, end in objects:
        shape = _shape(obj)
        own = _own_words(obj)
        if obj is envelope and not env_error:
            own = True
        if shape and obj is not envelope:
            own = True   # an earlier envelope: superseded
        if own:
            pieces.append(text[cursor:start])
        else:
            pieces.append(text[cursor:end])
            _collect(obj, facts)
            if obj is envelope:
                for key in ('result', 'errors'):
                    value = obj.get(key)
                    values = value if isinstance(value, list) else [value]
                    pieces.extend(str(v) for v in values if isinstance(v, str))
        cursor = end
    pieces.append(text[cursor:])
    if envelope is not None and not env_error:
        tail = text[env_end:]
        pieces = [tail]
        facts = _Facts()
        for obj, start, _end in objects:
            if start >= env_end and not _own_words(obj):
                _collect(obj, facts)
    sig = '\n'.join(p for p in pieces if p)
    reading.signature_text = sig
    flat = _flat(sig)
    for message in facts.messages:
        flat += '\n' + message
    kind, signature, evidence, match_line = _decide(facts, flat, when=when, tz=tz, day=day, google=prof.name == 'gemini')
    reading.worked = work.worked
    if envelope is not None and env_shape == 'claude_result' and not work.worked:
        reading.turns = 0   # the CLI's num_turns counts an attempt that never got an answer (D7)
    if not reading.result and work.said:
        reading.result = work.said
    if kind is None:
        claim_done = bool(_CLAIM_DONE.search(reading.result or ''))
        exited = isinstance(exit_code, int) and not isinstance(exit_code, bool)
        if envelope is not None and not env_error:
            if work.tools == 0 and claim_done:
                kind, signature, evidence = 'noop_claim', 'claim_without_tool_use', 'envelope'
            else:
                kind, signature, evidence = 'success', 'envelope', 'envelope'
        elif env_error:
            kind, signature, evidence = 'failure', reading.subtype or 'error_envelope', 'envelope'
        elif exited and exit_code != 0:
            kind, signature, evidence = 'failure', 'exit_code', ''
        else:
            found = _FAILURE.search(flat) if exit_code is None else None
            if found or facts.statuses or facts.types:
                kind, signature, evidence = 'failure', 'error_text' if found else 'error_body', 'prose' if found else 'structured'
                if found:
                    match_line = _line(flat, found.start(), found.end())
            elif work.worked and work.tools:
                kind, signature, evidence = 'success', 'tool_calls', 'structured'
            elif work.worked and claim_done and work.tools == 0:
                kind, signature, evidence = 'noop_claim', 'claim_without_tool_use', 'structured'
            elif _BROKEN_ENVELOPE.search(text) or (_CLAUDE_OK_KEYS[0].search(text) and _CLAUDE_OK_KEYS[1].search(text)):
                kind, signature, evidence = 'success', 'envelope_text', 'prose'   # a paste cut or elided it
            else:
                # no envelope, no tool call, no words we know: nothing says the agent finished (D2)
                kind, signature, evidence = 'failure', 'unrecognised', ''
    reading.kind, reading.signature, reading.evidence = kind, signature, evidence
    reading.message = (match_line or '')[:_MESSAGE_MAX]
    if kind in ('rate_limit', 'transient'):
        reading.reset = _limit_reset(kind, signature, facts, flat, when=when, tz=tz, day=day,
                                     google=prof.name == 'gemini' or _is_google(facts, flat))
    return reading


def _is_google(facts: _Facts, flat: str) -> bool:
    return bool(_GOOGLE.search(flat)) or bool(set(facts.words) & {'RESOURCE_EXHAUSTED', 'RATE_LIMIT_EXCEEDED'})


# Google's per-day quotas reset at midnight Pacific time: documented ("Requests per day (RPD) quotas
# reset at midnight Pacific time", https://ai.google.dev/gemini-api/docs/rate-limits), not a guess.
GOOGLE_DAY_ZONE = 'America/Los_Angeles'
_DAILY_SPAN = _rx(r'\bdaily\s+(?:[\w.-]+\s+)?quota\b|\b\w*PerDay\w*|\bper\s+day\b')


def _google_day_reset(flat: str, now: Optional[_dt.datetime]) -> Optional[Stated]:
    """A Google per-day quota's reset: the next midnight in ``GOOGLE_DAY_ZONE`` after ``now`` (None
    without ``now``: unknown, never invented). ``text`` is the span that names the daily quota."""
    found = _DAILY_SPAN.search(flat)
    if found is None:
        return None
    if now is None:
        return Stated(found.group(0))
    zone = _tzinfo(GOOGLE_DAY_ZONE)
    local = now.astimezone(zone).date() + _dt.timedelta(days=1)
    return Stated(found.group(0), at=_localize(_dt.datetime(local.year, local.month, local.day), zone))


def _limit_reset(kind: str, signature: str, facts: _Facts, flat: str, *, when, tz, day, google: bool) -> Optional[Stated]:
    """The reset of a limit or a throttle (D8). A limit never takes a stated wait under
    ``THROTTLE_MAX_S`` as its reset: that is a per-minute hint beside it (Google's "Please retry in
    36s" next to a per-day quota), not when the limit ends. A Google per-day quota with no longer
    stated reset resets at the next midnight Pacific time (``_google_day_reset``)."""
    stated = _structured_reset(facts, when) or stated_reset(flat, now=when, tz=tz, on_date=day)
    if kind != 'rate_limit':
        return stated
    if stated is not None and stated.in_s is not None and stated.in_s <= THROTTLE_MAX_S \
            and not stated.text.startswith(('"resets_at"', '"resetsAt"')):
        stated = None
    per_day = signature in ('quota_per_day', 'daily_quota') or any(_PER_DAY.search(w) for w in facts.words)
    if stated is None and google and per_day:
        stated = _google_day_reset(flat, when)
    return stated


def _decide(facts: _Facts, flat: str, *, when, tz, day, google=False) -> Tuple[Optional[str], str, str, str]:
    """``(kind, signature, evidence, line)`` from the structured facts, then the prose; kind None: no signature.

    ``google``: the capture is Google's (the gemini profile); otherwise Google's own markers decide."""
    types, words, statuses = set(facts.types), set(facts.words), set(facts.statuses)
    google = google or _is_google(facts, flat)

    def line_of(pattern):
        found = pattern.search(flat)
        return _line(flat, found.start(), found.end()) if found else ''

    def waited():
        stated = _structured_reset(facts, when) or stated_reset(flat, now=when, tz=tz, on_date=day)
        if stated is None:
            return None
        if stated.in_s is not None:
            return stated.in_s
        if stated.at is not None and when is not None:
            return (stated.at - when).total_seconds()
        return None

    # 1. revoked: the credential or the account, from structured fields, then the prose
    if types & _REVOKED_TYPES or words & (_REVOKED_STATUS | {'API_KEY_INVALID'}) or statuses & {401, 403}:
        name = sorted(types & _REVOKED_TYPES)[0] if types & _REVOKED_TYPES else (
            'API_KEY_INVALID' if 'API_KEY_INVALID' in words else 'http_%d' % min(statuses & {401, 403}) if statuses & {401, 403}
            else sorted(words & _REVOKED_STATUS)[0])
        return 'revoked', name, 'structured', (facts.messages or [''])[0]
    if 'usage_limit_reached' in types or facts.limit_rejected:
        return 'rate_limit', 'usage_limit_reached' if 'usage_limit_reached' in types else 'rate_limit_event', 'structured', \
            (facts.messages or [''])[0]
    prose_revoked = _first(_REVOKED, flat)
    if prose_revoked:
        name, match = prose_revoked
        return 'revoked', name, 'prose', _line(flat, match.start(), match.end())
    billing = _BILLING.search(flat) or ('insufficient_quota' in types)
    zero = _ZERO_QUOTA.search(flat)
    if '0' in facts.quota_values or (zero and (google or billing or _QUOTA_WORDS.search(flat) or 429 in statuses
                                               or _LIMIT_CONTEXT.search(flat))):
        return 'revoked', 'zero_quota', 'structured' if '0' in facts.quota_values else 'prose', \
            _line(flat, zero.start(), zero.end()) if zero else (facts.messages or [''])[0]
    if billing and not google:
        return 'revoked', 'insufficient_quota', 'prose', line_of(_BILLING)
    # 2. a usage limit: hours away or a stated reset
    limit = _first(_RATE_LIMIT, flat)
    if limit:
        name, match = limit
        return 'rate_limit', name, 'prose', _line(flat, match.start(), match.end())
    per_day = any(_PER_DAY.search(w) for w in words) or bool(re.search(r'\bper\s+day\b|PerDay', flat))
    if google and (per_day and (429 in statuses or 'RESOURCE_EXHAUSTED' in words or _QUOTA_WORDS.search(flat) or billing)):
        return 'rate_limit', 'quota_per_day', 'structured' if facts.any() else 'prose', line_of(_QUOTA_WORDS) or line_of(_BILLING)
    capacity_words = _CAPACITY_WORDS.search(flat)
    quota_words = _QUOTA_WORDS.search(flat) if google or not facts.any() else None
    if capacity_words or quota_words or (google and billing):
        wait = waited()
        found = capacity_words or quota_words or billing
        line = _line(flat, found.start(), found.end()) if hasattr(found, 'start') else ''
        if (wait is not None and wait <= THROTTLE_MAX_S) or (wait is None and _PER_MINUTE.search(flat)):
            return 'transient', 'quota_throttle', 'prose', line
        if wait is not None or (google and billing) or quota_words:
            return 'rate_limit', 'quota_exhausted' if capacity_words else 'quota_exceeded', 'prose', line
        return 'transient', 'quota_throttle', 'prose', line
    # 3. a throttle, an overload, a 5xx, a connection fault (never a bare timeout: D7)
    if types & _TRANSIENT_TYPES or words & _TRANSIENT_STATUS or 429 in statuses or any(500 <= s <= 599 for s in statuses):
        if types & _TRANSIENT_TYPES:
            name = sorted(types & _TRANSIENT_TYPES)[0]
        elif 429 in statuses or 'RESOURCE_EXHAUSTED' in words:
            name = 'http_429'
        else:
            name = 'http_5xx'
        return 'transient', name, 'structured', (facts.messages or [''])[0]
    throttle = _first(_TRANSIENT, flat)
    if throttle:
        name, match = throttle
        return 'transient', name, 'prose', _line(flat, match.start(), match.end())
    # 4. an error body that is none of these: a failure (a bad request, a policy refusal)
    if types or any(400 <= s <= 499 for s in statuses):
        return 'failure', sorted(types)[0] if types else 'http_%d' % min(s for s in statuses if 400 <= s <= 499), \
            'structured', (facts.messages or [''])[0]
    return None, '', '', ''


def is_clean_run(exit_code: Any, capture: Any, agent: Any = None) -> bool:
    """"The next clean run deletes the file" (D8): zero exit AND no limit in the capture, read by
    ``read_capture`` -- the same reading the retry gate and the close-out use (D7) -- so a success
    envelope that merely discusses quotas is not a limit, while a trailing limit notice after a
    zero exit is."""
    if isinstance(exit_code, bool) or exit_code != 0:
        return False
    return read_capture(capture, agent, exit_code=exit_code).capacity() is None


def summary(reading: Reading) -> Dict[str, Any]:
    """The reading as the JSON fields ``fleet-runner classify`` prints (``decision`` added by the caller)."""
    at = reading.reset_at
    return {
        'profile': reading.profile,
        'envelope_found': reading.envelope_found,
        'turns': reading.turns,
        'claim': reading.claim,
        'kind': reading.kind,
        'transient': reading.transient,
        'signature': reading.signature,
        'reset_at': at.strftime('%Y-%m-%dT%H:%M:%SZ') if at is not None else None,
        'reset_text': reading.reset_text,
        'usage': dict(reading.usage),
        'cost_usd': reading.cost_usd,
        'spend': reading.spend.fields() if reading.spend is not None else {},
    }


__all__ = ['AgentProfile', 'DEFAULT_PROFILE', 'ENVELOPE_TYPE', 'GOOGLE_DAY_ZONE', 'KINDS', 'PROFILES', 'Reading', 'Spend', 'Stated',
           'THROTTLE_MAX_S', 'TOKEN_KEYS', 'USAGE_WHEN', 'UsageMeter', 'agent_argv', 'route_argv', 'is_clean_run', 'is_envelope',
           'json_objects', 'parse_duration', 'profile', 'read_capture', 'resolve_stated', 'scan_envelope', 'stated_reset',
           'summary', 'token_count']
