# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reset times as a provider states them, in prose or in JSON fields (D8).

Pure functions, no I/O, no clock reads: ``now`` is a parameter. Read as stated (``resolve_stated``):
epoch, ISO, ``resets 3am (Zone)``, ``Jan 30, 11:30am (Asia/Calcutta)``, ``Jul 5th, 2026 8:19 PM``,
``10 de jul. de 2026, 11:52``, ``Etc/GMT+5`` (POSIX-inverted: UTC-5), ``GMT-3`` (ordinary offset),
durations (``4h28m20s``, ``5 days 22 hours 11 minutes``). A bare clock time rolls forward only when
it has passed at ``now``; a zone-less time is resolved only with a known ``tz``; nothing is invented.
The one reset derived by rule is a Google per-day quota's, at midnight Pacific time as Google
documents it (``google_day_reset``).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from zoneinfo import ZoneInfo

from ..board.model import parse_time

UTC = _dt.timezone.utc

# deliberately absent: a named zone we cannot pin down gives None, never a guess.
_ZONES = {
    'UTC': 'UTC', 'GMT': 'UTC', 'Z': 'UTC',
    'PT': 'America/Los_Angeles', 'ET': 'America/New_York', 'CT': 'America/Chicago', 'MT': 'America/Denver',
}
_FIXED = {'PST': -8, 'PDT': -7, 'MST': -7, 'MDT': -6, 'CDT': -5, 'EST': -5, 'EDT': -4,
          'CET': 1, 'CEST': 2, 'EET': 2, 'EEST': 3, 'JST': 9, 'KST': 9}


def tzinfo_of(tz: Any) -> Optional[_dt.tzinfo]:
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
    return tzinfo_of(text)


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
    zone = _zone(zone_text) if zone_text else (tzinfo_of(tz) if tz not in (None, '') else None)
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


def structured_reset(resets: List[Tuple[str, Any]], now: Optional[_dt.datetime]) -> Optional[Stated]:
    """A reset JSON fields state (``resets``: ``(key as written, value)`` pairs): an instant (``resets_at``/
    ``resetsAt``) wins over a wait (``resets_in_seconds``, ``retry-after``, ``retryDelay``), whose seconds it
    keeps as ``in_s``."""
    best, exact = None, None
    for key, value in resets:
        if key in ('resets_at', 'resetsAt'):
            at = _epoch(value) if not isinstance(value, str) or value.strip().isdigit() else parse_time_safe(value)
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


def parse_time_safe(value: Any) -> Optional[_dt.datetime]:
    """``parse_time(value)``, or None when it is not a time."""
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        return None


# Google's per-day quotas reset at midnight Pacific time: documented ("Requests per day (RPD) quotas
# reset at midnight Pacific time", https://ai.google.dev/gemini-api/docs/rate-limits), not a guess.
GOOGLE_DAY_ZONE = 'America/Los_Angeles'
_DAILY_SPAN = re.compile(r'\bdaily\s+(?:[\w.-]+\s+)?quota\b|\b\w*PerDay\w*|\bper\s+day\b', re.IGNORECASE)


def google_day_reset(flat: str, now: Optional[_dt.datetime]) -> Optional[Stated]:
    """A Google per-day quota's reset: the next midnight in ``GOOGLE_DAY_ZONE`` after ``now`` (None
    without ``now``: unknown, never invented). ``text`` is the span that names the daily quota."""
    found = _DAILY_SPAN.search(flat)
    if found is None:
        return None
    if now is None:
        return Stated(found.group(0))
    zone = tzinfo_of(GOOGLE_DAY_ZONE)
    local = now.astimezone(zone).date() + _dt.timedelta(days=1)
    return Stated(found.group(0), at=_localize(_dt.datetime(local.year, local.month, local.day), zone))


__all__ = ['GOOGLE_DAY_ZONE', 'Stated', 'google_day_reset', 'parse_duration', 'parse_time_safe', 'resolve_stated',
           'stated_reset', 'structured_reset', 'tzinfo_of']
