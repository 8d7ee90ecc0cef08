# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capacity: is a master dark, why, and until when.

Pure functions, no I/O, no clock reads: ``now`` is a parameter.

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/outcome/capacity.py``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import re
from typing import Any, Dict, Optional, Tuple

from ..board.model import format_time, parse_time

from zoneinfo import ZoneInfo

UTC = _dt.timezone.utc
SOURCES = ('rate_limit', 'revoked', 'update_failed', 'board_unreachable', 'agent_missing')
NO_RESET = ('revoked', 'update_failed', 'agent_missing')     # sources that never carry a provider's reset time
STATE_FIELDS = ('source', 'reset_at', 'written_at', 'message', 'unit')

# UNMEASURED GUESS: how long a rate_limit with no stated reset keeps a master dark, counted from
# written_at. Too short costs one wasted start per master per cooldown (it dies in seconds on a
# capacity close-out, which refreshes the file and is not an attempt, but posts two markers on
# an item); too long idles a master that has recovered. 30 minutes = two wasted starts per dark
# hour. Experiment that settles it: over a month of capacity markers, take the stated resets
# (reset_at - written_at) and the unstated ones' time-to-first-clean-run; set the cooldown near
# the median of the latter and report wasted starts per dark hour next to the number.
DEFAULT_UNKNOWN_RESET_COOLDOWN = _dt.timedelta(minutes=30)

# How long a master whose runner could not open the board stays dark (source board_unreachable,
# issue 18): its ``reset_at`` is written as written_at + this, the time the dispatcher tries it
# again -- our own retry time, not a provider's. UNMEASURED GUESS: too short costs one failed
# start per master per cooldown (it dies in about a second, posts nothing, spends no attempt);
# too long idles a master whose board came back (a clean start clears the state at once, so only
# the first start after the repair waits for it). 15 minutes = four failed starts per broken hour,
# against the sweep's default 5-minute timer's twelve. Experiment that settles it: over a month of
# board_unreachable states, the time from written_at to the first clean start on that master.
BOARD_UNREACHABLE_COOLDOWN = _dt.timedelta(minutes=15)

# Characters of the provider's message kept in the state file. Display only (no decision reads
# it); unmeasured guess: the provider limit notices in the tests are all under 120 characters.
# Experiment that settles it: the longest provider message in a month of capacity states, x4.
MESSAGE_MAX = 500

# --- signatures -----------------------------------------------------------------------------
# Hard limits only: a 429 "rate_limit_error" or "Too Many Requests" is a transient throttle
# (_core.outcome.retry), not a dark master. Each pattern names one provider phrasing; keep the list narrow.

_REVOKED = [
    ('credit_exhausted', r'credit balance is too low'),
    ('insufficient_quota', r'\binsufficient_quota\b|check your plan and billing details'),
    ('revoked', r'\b(?:entitlement|access|subscription|api[ _-]?key|oauth token|token|plan|license)\s+'
                r'(?:has\s+been\s+|was\s+|is\s+)?(?:revoked|disabled|suspended|cancell?ed|terminated|deactivated)\b'),
    ('account_disabled', r'\b(?:account|organi[sz]ation|workspace)\s+(?:has\s+been\s+|was\s+|is\s+)?'
                         r'(?:disabled|suspended|deactivated|banned)\b'),
    ('invalid_key', r'\binvalid api[ _-]?key\b|\binvalid x-api-key\b'),
]
_RATE_LIMIT = [
    ('usage_limit', r'\busage limit (?:reached|exceeded|hit)\b|\breached (?:your|the) usage limit\b'),
    ('period_limit', r'\b(?:5[- ]hour|five[- ]hour|session|daily|weekly|monthly|opus|sonnet)\s+(?:usage\s+)?limit\s+'
                     r'(?:reached|exceeded|hit)\b'),
    ('hit_your_limit', u"\\byou(?:'|\u2019)?ve\\s+(?:hit|reached)\\s+your\\s+(?:\\w+\\s+)?limit\\b"),
    ('quota_exceeded', r'\bquota\s+(?:has\s+been\s+|was\s+)?exceeded\b|\bexceeded\s+(?:your|the)\s+(?:\w+\s+)?quota\b'),
]


@functools.lru_cache(maxsize=None)
def _patterns():
    """The compiled tables, on first use: the probe imports this module inside the lease and never
    classifies text, so it does not pay for ~30 compiles (issue 13)."""
    return {
        'revoked': [(name, re.compile(rx, re.IGNORECASE)) for name, rx in _REVOKED],
        'rate_limit': [(name, re.compile(rx, re.IGNORECASE)) for name, rx in _RATE_LIMIT],
        'reset': [re.compile(rx, flags) for rx, flags in _RESET_PHRASES],
    }


# --- reset-time phrases ------------------------------------------------------------------------
_ISO = r'\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*(?:Z|[+-]\d{2}:?\d{2}))?'
_EPOCH = r'\d{10}(?:\d{3})?(?:\.\d+)?'
_CLOCK = r'\d{1,2}(?::\d{2})?\s*(?:[ap]\.?\s?m\.?)?(?![\w:])'
# A zone after a clock time: an IANA name, UTC/GMT offsets, or an UPPER-CASE abbreviation
# (case-sensitive even inside IGNORECASE patterns, so "5pm tomorrow" is not read as a zone).
_TZ = (r'(?:\s*\(?\s*(?:[A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?|(?:UTC|GMT)[+-]\d{1,2}(?::?\d{2})?'
       r'|(?-i:[A-Z]{1,5})\b|[+-]\d{2}:?\d{2})\s*\)?)?')
_DURATION = r'(?:\d+(?:\.\d+)?\s*(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b\s*(?:and\s+)?,?\s*)+'
_WHEN = '(?:' + _ISO + '|' + _EPOCH + '|' + _CLOCK + ')' + _TZ
_RESET_PHRASES = [   # (pattern, flags), compiled by _patterns()
    # Claude Code's machine-readable form: "Claude AI usage limit reached|1764522000"
    (r'limit reached\|(?P<when>' + _EPOCH + r')', 0),
    # relative forms first, so "retry after 30 seconds" is not read as a clock time "30"
    (r'\bretry[- ]after\s*[:=]?\s*(?P<secs>\d+)\s*(?:$|[^\w\s]|\n|s\b|sec|seconds?\b)', re.IGNORECASE),
    (r'\b(?:resets?|will reset|try again|retry|available again)\s+(?:in|after)\s+(?P<dur>' + _DURATION + r')',
     re.IGNORECASE),
    (r'\b(?:resets?|will reset|renews?|available again|try again|retry|come back|back)\s*(?:at|on|after|:)?\s*'
     r'(?P<when>' + _WHEN + r')', re.IGNORECASE),
]

# Timezone abbreviations we resolve. Ambiguous ones (CST: China or US Central; IST; BST) are
# deliberately absent: a named zone we cannot pin down gives None, never a guess.
_ZONES = {
    'UTC': 'UTC', 'GMT': 'UTC', 'Z': 'UTC',
    'PT': 'America/Los_Angeles', 'ET': 'America/New_York', 'CT': 'America/Chicago', 'MT': 'America/Denver',
}
_FIXED = {'PST': -8, 'PDT': -7, 'MST': -7, 'MDT': -6, 'CDT': -5, 'EST': -5, 'EDT': -4,
          'CET': 1, 'CEST': 2, 'EET': 2, 'EEST': 3, 'JST': 9, 'KST': 9}
_NOT_A_ZONE = frozenset(['AM', 'PM', 'A', 'P'])


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


def _duration(text: str) -> Optional[_dt.timedelta]:
    total = 0.0
    units = {'s': 1, 'sec': 1, 'secs': 1, 'second': 1, 'seconds': 1,
             'm': 60, 'min': 60, 'mins': 60, 'minute': 60, 'minutes': 60,
             'h': 3600, 'hr': 3600, 'hrs': 3600, 'hour': 3600, 'hours': 3600,
             'd': 86400, 'day': 86400, 'days': 86400}
    found = False
    for num, unit in re.findall(r'(\d+(?:\.\d+)?)\s*([a-zA-Z]+)', text):
        if unit.lower() in units:
            total += float(num) * units[unit.lower()]
            found = True
    return _dt.timedelta(seconds=total) if found else None


def _epoch(value: float) -> Optional[_dt.datetime]:
    if value > 1e11:  # milliseconds (13 digits)
        value = value / 1000.0
    if not 978307200 <= value <= 4102444800:  # 2001-01-01 .. 2100-01-01: anything else is not a reset time
        return None
    return _dt.datetime.fromtimestamp(value, UTC)


def _clock(text: str, now: _dt.datetime, tz: Any) -> Optional[_dt.datetime]:
    match = re.match(r'^\s*(\d{1,2})(?::(\d{2}))?\s*([ap])?\.?\s?(m)?\.?\s*(.*?)\s*$', text, re.IGNORECASE)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    ampm = match.group(3)
    if ampm and not match.group(4):
        return None
    if match.group(2) is None and not ampm:
        return None  # a bare "5" is not a clock time
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm.lower() == 'p' else 0)
    if hour > 23 or minute > 59:
        return None
    zone_text = match.group(5)
    zone = _tzinfo(zone_text) if zone_text else _tzinfo(tz)
    if zone is None:
        return None
    local_now = now.astimezone(zone)
    day = local_now.date()
    for _add in range(3):  # today, else tomorrow (a DST gap can need one more day)
        candidate = _dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
        if candidate.astimezone(UTC) > now:
            return candidate.astimezone(UTC)
        day = day + _dt.timedelta(days=1)
    return None


def _iso(text: str) -> Optional[_dt.datetime]:
    """``fromisoformat`` made portable to Python 3.9 (no ``Z``, ``+HHMM`` or odd fraction widths there)."""
    text = text.strip().replace(' ', 'T', 1).replace(' ', '')
    text = re.sub(r'[Zz]$', '+00:00', text)
    text = re.sub(r'([+-]\d{2})(\d{2})$', r'\1:\2', text)
    text = re.sub(r'\.(\d+)', lambda m: '.' + (m.group(1) + '000000')[:6], text)
    try:
        return _dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def resolve_reset(value: Any, now: Any, tz: Any = None) -> Optional[_dt.datetime]:
    """Resolve a provider's reset time to an aware UTC datetime, or None (never invented).

    ``value``: datetime; int/float epoch seconds (milliseconds accepted); or text -- ISO-8601
    (naive means ``tz``), epoch digits, ``"in 2h 30m"`` / ``"45 seconds"`` (from ``now``), or a
    bare clock time with an optional zone. ``tz``: the zone for text that names none (a tzinfo,
    an IANA name, ``UTC``, or an offset); default UTC. A bare clock time that already passed
    today rolls forward to tomorrow.
    """
    when_now = parse_time(now)
    if when_now is None:
        raise ValueError('resolve_reset needs "now"')
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            zone = _tzinfo(tz)
            if zone is None:
                return None
            value = value.replace(tzinfo=zone)
        return value.astimezone(UTC)
    if isinstance(value, (int, float)):
        return _epoch(float(value))
    text = str(value).strip().strip('.').strip()
    if not text:
        return None
    if re.match(r'^' + _EPOCH + r'$', text):
        return _epoch(float(text))
    iso = re.match(r'^(' + _ISO + r')\s*(.*)$', text)
    if iso:
        parsed = _iso(iso.group(1))
        if parsed is None:
            return None
        if parsed.tzinfo is None:
            zone = _tzinfo(iso.group(2)) if iso.group(2) else _tzinfo(tz)
            if zone is None:
                return None
            parsed = parsed.replace(tzinfo=zone)
        return parsed.astimezone(UTC)
    rel = re.match(r'^(?:in\s+)?(' + _DURATION + r')$', text, re.IGNORECASE)
    if rel:
        delta = _duration(rel.group(1))
        return when_now + delta if delta is not None else None
    return _clock(text, when_now, tz)


def reset_phrase(text: Any) -> Optional[str]:
    """The provider's stated reset, as written (``"5pm (Europe/Berlin)"``, ``"in 20 minutes"``), or None."""
    if not isinstance(text, str):
        return None
    for pattern in _patterns()['reset']:
        match = pattern.search(text)
        if not match:
            continue
        groups = match.groupdict()
        if groups.get('when'):
            return groups['when'].strip()
        if groups.get('dur'):
            return 'in ' + groups['dur'].strip().rstrip(',').strip()
        if groups.get('secs'):
            return 'in %s seconds' % groups['secs']
    return None


def _line_of(text: str, start: int, end: int) -> str:
    head = text.rfind('\n', 0, start) + 1
    tail = text.find('\n', end)
    return text[head:tail if tail >= 0 else len(text)].strip()


def classify_capacity(text: Any, now: Any = None, tz: Any = None) -> Optional[Dict[str, Any]]:
    """Is ``text`` a provider limit, and which kind? None when no limit signature.

    Returns ``{'source': 'rate_limit'|'revoked', 'signature': name, 'message': the line it is on,
    'reset_text': the stated reset or None, 'reset_at': resolved datetime or None}``. ``reset_at``
    is resolved only when ``now`` is given, and is always None for ``revoked`` (it never clears
    by the clock). Revoked wins when both kinds appear.
    """
    if not isinstance(text, str) or not text:
        return None
    for source in ('revoked', 'rate_limit'):
        table = _patterns()[source]
        for name, pattern in table:
            match = pattern.search(text)
            if not match:
                continue
            message = _line_of(text, match.start(), match.end())
            phrase = None
            reset_at = None
            if source == 'rate_limit':
                phrase = reset_phrase(text[match.start():]) or reset_phrase(text)
                if phrase is not None and now is not None:
                    reset_at = resolve_reset(phrase, now, tz)
            return {'source': source, 'signature': name, 'message': message[:MESSAGE_MAX],
                    'reset_text': phrase, 'reset_at': reset_at}
    return None


# --- the state file ------------------------------------------------------------------------------

def make_state(source: str, *, written_at: Any, reset_at: Any = None, message: str = '', unit: str = '') -> Dict[str, Any]:
    """A capacity state (datetimes as aware UTC). ``revoked``, ``update_failed`` and ``agent_missing`` never carry a reset time."""
    if source not in SOURCES:
        raise ValueError('capacity source must be one of %s, not %r' % (', '.join(SOURCES), source))
    written = parse_time(written_at)
    if written is None:
        raise ValueError('a capacity state needs written_at')
    return {'source': source, 'reset_at': None if source in NO_RESET else parse_time(reset_at),
            'written_at': written, 'message': str(message or '')[:MESSAGE_MAX], 'unit': str(unit or '')}


def state_from(classification: Optional[Dict[str, Any]], *, now: Any, unit: str = '') -> Optional[Dict[str, Any]]:
    """The state the runner writes for a ``classify_capacity`` result (None for None)."""
    if not classification:
        return None
    return make_state(classification['source'], written_at=now, reset_at=classification.get('reset_at'),
                      message=classification.get('message', ''), unit=unit)


def dump_state(state: Dict[str, Any]) -> str:
    """The state file's text: one JSON object with exactly ``STATE_FIELDS``, times as ISO ``Z``."""
    out = {}
    for key in STATE_FIELDS:
        value = state.get(key)
        if key in ('reset_at', 'written_at'):
            value = format_time(parse_time(value)) if value is not None else None
        elif key in ('message', 'unit'):
            value = str(value or '')
        out[key] = value
    return json.dumps(out, sort_keys=True, indent=1) + '\n'


def load_state(text: Any) -> Tuple[Optional[Dict[str, Any]], str]:
    """Parse a state file's text: ``(state, '')``, or ``(None, why)`` -- the caller fails open (D5).

    ``text`` of None means the file is missing. A state whose ``reset_at`` is unreadable is kept
    (the source is positive evidence of dark) with ``reset_at`` None and the reason given.
    """
    if text is None:
        return None, 'no capacity state file'
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError:
            return None, 'capacity state is not UTF-8'
    if not str(text).strip():
        return None, 'capacity state file is empty'
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, 'capacity state is not JSON (%s)' % exc
    if not isinstance(data, dict):  # check the type before trusting it
        return None, 'capacity state is %s, not an object' % type(data).__name__
    source = data.get('source')
    if source not in SOURCES:
        return None, 'capacity state has unknown source %r' % (source,)
    try:
        written = parse_time(data.get('written_at'))
    except (TypeError, ValueError):
        written = None
    reason = ''
    try:
        reset_at = parse_time(data.get('reset_at'))
    except (TypeError, ValueError):
        reset_at = None
        reason = 'reset_at %r unreadable; treated as unknown' % (data.get('reset_at'),)
    if written is None:
        reason = (reason + '; ' if reason else '') + 'written_at missing or unreadable'
    state = {'source': source, 'reset_at': None if source in NO_RESET else reset_at, 'written_at': written,
             'message': str(data.get('message') or ''), 'unit': str(data.get('unit') or '')}
    return state, reason


def is_dark(state: Optional[Dict[str, Any]], now: Any,
            unknown_reset_cooldown: _dt.timedelta = DEFAULT_UNKNOWN_RESET_COOLDOWN) -> Tuple[bool, Optional[str], Optional[_dt.datetime], str]:
    """``(dark, source, reset_at, why)`` for a master whose state is ``state`` at ``now`` (D8, D20).

    * None (no file, or unreadable): not dark (D5).
    * ``revoked``: dark, whatever the clock says; ``reset_at`` None; a human must act.
    * ``rate_limit`` with ``reset_at``: dark while ``now < reset_at``.
    * ``update_failed``: dark while ``now < written_at + unknown_reset_cooldown`` (D11: a runner that
      cannot update itself must not draw work), ``reset_at`` None.
    * ``agent_missing``: the same clock (the agent CLI is not on the run's PATH: a run here cannot start
      one); cleared at once by an install whose check finds it.
    * ``rate_limit`` without: dark while ``now < written_at + unknown_reset_cooldown``; ``reset_at``
      stays None (unknown is reported as unknown, D8) and ``why`` names the cooldown's end.
      Without a readable ``written_at`` either, there is no evidence left to hold on: not dark.
    """
    when = parse_time(now)
    if when is None:
        raise ValueError('is_dark needs "now"')
    if not state:
        return False, None, None, 'no capacity state'
    source = state.get('source')
    message = state.get('message') or ''
    if source == 'revoked':
        return True, 'revoked', None, 'entitlement revoked or disabled; it does not clear by itself: a human must act (%s)' % message
    if source == 'update_failed':
        try:
            written = parse_time(state.get('written_at'))
        except (TypeError, ValueError):
            written = None
        if written is None:
            return False, source, None, 'self-update failure with unreadable written_at: proceeding'
        until = written + unknown_reset_cooldown
        if when < until:
            return True, source, None, ('the runner could not update itself; re-run fleet.dispatch.worker or fix the '
                                        'runner checkout; tried again after %s (%s)' % (format_time(until), message))
        return False, source, None, 'self-update failure cooled down at %s: the next run tries again' % format_time(until)
    if source == 'board_unreachable':
        return _board_unreachable_dark(state, when)
    if source == 'agent_missing':
        return _agent_missing_dark(state, when, unknown_reset_cooldown)
    if source != 'rate_limit':
        return False, None, None, 'unknown capacity source %r ignored' % (source,)
    try:
        reset_at = parse_time(state.get('reset_at'))
        written = parse_time(state.get('written_at'))
    except (TypeError, ValueError):
        reset_at, written = None, None
    if reset_at is not None:
        if when < reset_at:
            return True, 'rate_limit', reset_at, 'rate limited until %s (%s)' % (format_time(reset_at), message)
        return False, 'rate_limit', reset_at, 'rate limit reset passed at %s' % format_time(reset_at)
    if written is None:
        return False, 'rate_limit', None, 'rate limit with unknown reset and unreadable written_at: proceeding'
    until = written + unknown_reset_cooldown
    if when < until:
        return True, 'rate_limit', None, 'rate limited, reset unknown; cooling down until %s (%s)' % (format_time(until), message)
    return False, 'rate_limit', None, 'rate limit with unknown reset: cooldown ended at %s' % format_time(until)


def update_failed_state(existing: Optional[Dict[str, Any]], *, now: Any, message: str, unit: str = '') -> Optional[Dict[str, Any]]:
    """The ``update_failed`` state the runner writes when its self-update did not verify,
    or None when ``existing`` is stronger evidence that must stay: ``revoked``, or a ``rate_limit``
    still dark at ``now`` (overwriting either would clear the master sooner than its remedy)."""
    if existing and existing.get('source') in ('revoked', 'rate_limit') and is_dark(existing, now)[0]:
        return None
    return make_state('update_failed', written_at=now, message=message, unit=unit)


def clears_after_update(existing: Optional[Dict[str, Any]]) -> bool:
    """A verified self-update (or install) deletes an ``update_failed`` state, and only that one."""
    return bool(existing) and existing.get('source') == 'update_failed'


# --- agent_missing: the agent CLI is not on this master's run PATH ------------------------------

def agent_missing_state(existing: Optional[Dict[str, Any]], *, now: Any, message: str, unit: str = '') -> Optional[Dict[str, Any]]:
    """The ``agent_missing`` state the runner writes when the agent's executable is not on the run's PATH
    (D8, D20: "this master cannot run an agent", not "the work failed": no attempt is spent). It carries
    no reset: the remedy is an install (fleet.dispatch.worker), and after ``DEFAULT_UNKNOWN_RESET_COOLDOWN``
    one run looks again. None when ``existing`` is stronger evidence still dark at ``now`` (``revoked``,
    a dark ``rate_limit``): overwriting it would clear the master sooner than its remedy."""
    if existing and existing.get('source') in ('revoked', 'rate_limit') and is_dark(existing, now)[0]:
        return None
    return make_state('agent_missing', written_at=now, message=message, unit=unit)


def clears_after_agent_found(existing: Optional[Dict[str, Any]]) -> bool:
    """An agent executable found on the run's PATH (by a run, or by the install's check) deletes an
    ``agent_missing`` state, and only that one."""
    return bool(existing) and existing.get('source') == 'agent_missing'


def _agent_missing_dark(state: Dict[str, Any], when: _dt.datetime, cooldown: _dt.timedelta):
    """Dark until written_at + the cooldown (one run then looks for the agent again), or until cleared."""
    message = state.get('message') or ''
    try:
        written = parse_time(state.get('written_at'))
    except (TypeError, ValueError):
        written = None
    if written is None:
        return False, 'agent_missing', None, 'agent missing with unreadable written_at: proceeding'
    until = written + cooldown
    if when < until:
        return True, 'agent_missing', None, ('the agent CLI is not on this master\'s run PATH; re-run fleet.dispatch.worker '
                                             '(it installs the agent); tried again after %s (%s)' % (format_time(until), message))
    return False, 'agent_missing', None, 'agent missing cooled down at %s: the next run looks again' % format_time(until)


# --- capacity per account (D8) -----------------------------------------------------------------
ACCOUNT_SOURCES = ('revoked', 'rate_limit')
"""Sources that belong to the agent's credential, not to the master: every master sharing the
account is dark with it. ``update_failed`` is the master's own runner and stays the master's."""

_ACCOUNT_RANK = {'revoked': 2, 'rate_limit': 1}


def share_by_account(masters: Any) -> list:
    """Spread account-wide darkness: each master dict (``worker``, ``master``, ``account``, ``dark``,
    ``source``, ``reset_at``) comes back with ``dark``/``source``/``reset_at`` of its account's
    strongest dark state (revoked over a rate limit; of two rate limits the later reset, an unknown
    reset counting as later) and ``dark_via`` naming the master whose state it took. A master with
    no ``account`` is its own account. Masters of other accounts are untouched (D8)."""
    masters = [dict(m) for m in masters or []]
    worst = {}
    for m in masters:
        if not m.get('dark') or m.get('source') not in ACCOUNT_SOURCES:
            continue
        account = m.get('account') or '%s/%s' % (m.get('worker'), m.get('master'))
        reset = parse_time(m.get('reset_at')) if m.get('reset_at') not in (None, '', 'unknown') else None
        rank = (_ACCOUNT_RANK[m['source']], reset is None, reset or _dt.datetime.min.replace(tzinfo=UTC))
        if account not in worst or rank > worst[account][0]:
            worst[account] = (rank, m)
    for m in masters:
        account = m.get('account') or '%s/%s' % (m.get('worker'), m.get('master'))
        if account not in worst:
            continue
        src = worst[account][1]
        if src is m or (m.get('dark') and m.get('source') == src.get('source') and m.get('reset_at') == src.get('reset_at')):
            continue
        if m.get('dark') and m.get('source') == 'revoked':
            continue
        m.update(dark=True, source=src.get('source'), reset_at=src.get('reset_at'),
                 dark_via='%s/%s' % (src.get('worker'), src.get('master')))
    return masters


# --- board_unreachable: the runner on this master cannot open the board (issue 18) ----------------

def board_unreachable_state(existing: Optional[Dict[str, Any]], *, now: Any, message: str, unit: str = '',
                            cooldown: _dt.timedelta = BOARD_UNREACHABLE_COOLDOWN) -> Optional[Dict[str, Any]]:
    """The ``board_unreachable`` state the runner writes when it could not open the board to post
    its start marker (D8, D20: "this master cannot start work", not "the work failed"; no attempt
    is spent, nothing reaches the board). ``reset_at`` is ``now + cooldown``: when the dispatcher
    tries this master again. None when ``existing`` is stronger evidence still dark at ``now``
    (``revoked``, a dark ``rate_limit``): overwriting it would clear the master sooner."""
    if existing and existing.get('source') in ('revoked', 'rate_limit') and is_dark(existing, now)[0]:
        return None
    written = parse_time(now)
    if written is None:
        raise ValueError('board_unreachable_state needs "now"')
    state = make_state('board_unreachable', written_at=written, message=message, unit=unit)
    state['reset_at'] = written + cooldown
    return state


def clears_after_clean_run(existing: Optional[Dict[str, Any]], started_at: Any) -> bool:
    """A clean run heals its master (D8) only of a state written before that run started. A state
    written while it ran (a concurrent run's rate limit) is newer evidence than this run's clean end
    and stays. A state with no readable ``written_at`` (or no state) holds nothing: cleared."""
    if not existing:
        return True
    try:
        written, start = parse_time(existing.get('written_at')), parse_time(started_at)
    except (TypeError, ValueError):
        return True
    return written is None or start is None or written < start


def clears_after_start(existing: Optional[Dict[str, Any]]) -> bool:
    """A start marker that reached the board deletes a ``board_unreachable`` state, and only that
    one (a rate limit or a revocation is cleared by its own remedy, not by the board answering)."""
    return bool(existing) and existing.get('source') == 'board_unreachable'


def _board_unreachable_dark(state: Dict[str, Any], when: _dt.datetime):
    """Dark until ``reset_at`` (written by ``board_unreachable_state``), else written_at + the cooldown."""
    message = state.get('message') or ''
    try:
        until = parse_time(state.get('reset_at'))
        if until is None:
            written = parse_time(state.get('written_at'))
            until = None if written is None else written + BOARD_UNREACHABLE_COOLDOWN
    except (TypeError, ValueError):
        until = None
    if until is None:
        return False, 'board_unreachable', None, 'board unreachable with no readable time: proceeding'
    if when < until:
        return True, 'board_unreachable', until, ('the runner on this master could not open the board; tried again at '
                                                  '%s; the next run that starts cleanly clears it (%s)' % (format_time(until), message))
    return False, 'board_unreachable', until, 'board unreachable cooled down at %s: the next run tries again' % format_time(until)
