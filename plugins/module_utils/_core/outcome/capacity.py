# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capacity: is a master dark, why, and until when (D8, D20).

Pure functions, no I/O, no clock reads: ``now`` is a parameter. Whether a capture states a limit,
and its reset, is read in one place only, ``_core.outcome.capture`` (``Reading.capacity()``); this
module keeps the state that reading leaves behind.

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/outcome/capacity.py``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from typing import Any, Dict, Optional, Tuple

from ..board.model import format_time, parse_time

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

# How long a master whose runner could not open the board stays dark (source board_unreachable):
# its ``reset_at`` is written as written_at + this, the time the dispatcher tries it
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
    """The state the runner writes for a limit (``_core.outcome.capture.Reading.capacity()``; None for None)."""
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


def credential_account(credentials: Any) -> str:
    """The default capacity account of a master: a short fingerprint of its agent credentials (D8), so one key on
    two masters is one account whatever the masters are called. ``key-`` and the first 12 hex digits of the
    SHA-256 of the sorted ``NAME=value`` lines: it names the credential, it cannot give it back. '' for none."""
    if not isinstance(credentials, dict) or not credentials:
        return ''
    text = ''.join('%s=%s\n' % (name, credentials[name]) for name in sorted(credentials))
    return 'key-' + hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]


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


# --- board_unreachable: the runner on this master cannot open the board ----------------

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
