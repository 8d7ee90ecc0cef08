# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capacity: the limit the one reading finds and its reset, state file, dark-or-not, clean runs (D5, D8, D20).

A limit and its reset are read by ``_core.outcome.capture.read_capture`` (the only reader of a capture);
the cases below hold that reading to what the capacity state needs."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import is_clean_run, read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.resets import stated_reset
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import (
    DEFAULT_UNKNOWN_RESET_COOLDOWN, STATE_FIELDS, dump_state, is_dark, load_state,
    make_state, state_from, update_failed_state, clears_after_update)

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 30, 15, 0, 0, tzinfo=UTC)   # 15:00 UTC = 16:00 in Berlin, 10:00 in New York


def u(*args):
    return dt.datetime(*args, tzinfo=UTC)


def classify_capacity(text, now=None, tz='UTC'):
    """The limit the one reading finds in ``text`` (None: not a limit)."""
    return read_capture(text, 'custom', now=now, tz=tz).capacity() if isinstance(text, str) else None


def resolve_reset(value, now, tz=None):
    """The reset the one reading resolves for a limit stating ``value`` as its reset."""
    if isinstance(value, dt.datetime):
        value = value.isoformat()
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str) or not value:
        return None
    if value.isdigit():
        text = 'Claude AI usage limit reached|%s' % value
    elif value.startswith('in ') or value[:1].isdigit() and 'minutes' in value:
        text = 'Usage limit reached. Try again %s.' % (value if value.startswith('in ') else 'in ' + value)
    else:
        text = 'Usage limit reached. Resets %s.' % value
    return read_capture(text, 'custom', now=now, tz=tz or 'UTC').reset_at


@pytest.mark.parametrize('value, tz, expected', [
    # ISO-8601
    ('2026-12-01T00:00:00Z', None, u(2026, 12, 1)),
    ('2026-12-01T02:00:00+02:00', None, u(2026, 12, 1)),
    ('2026-12-01 00:00', None, u(2026, 12, 1)),
    ('2026-12-01T02:00:00.5+0200', None, u(2026, 12, 1, 0, 0, 0)),   # read to the minute
    ('2026-12-01T00:00:00z', None, u(2026, 12, 1)),
    ('2026-13-01T00:00:00Z', None, None),
    ('2026-12-01T01:00:00', 'Europe/Berlin', u(2026, 12, 1)),          # naive: the given zone
    (dt.datetime(2026, 12, 1, tzinfo=UTC), None, u(2026, 12, 1)),
    # epoch seconds / milliseconds
    (1796083200, None, u(2026, 12, 1)),
    ('1796083200', None, u(2026, 12, 1)),
    ('1796083200000', None, u(2026, 12, 1)),
    (12, None, None),                                                  # not a plausible epoch
    # relative
    ('in 2h 30m', None, NOW + dt.timedelta(hours=2, minutes=30)),
    ('in 45 minutes', None, NOW + dt.timedelta(minutes=45)),
    ('in 45 seconds', None, None),                     # a limit never takes a wait this short as its reset
    ('90 minutes', None, NOW + dt.timedelta(minutes=90)),
    # bare clock times, today if still ahead
    ('5pm', None, u(2026, 11, 30, 17)),
    ('5 PM', None, u(2026, 11, 30, 17)),
    ('17:00', None, u(2026, 11, 30, 17)),
    ('3:30 AM UTC', None, u(2026, 12, 1, 3, 30)),                       # D8: already passed today -> tomorrow
    ('3pm', None, u(2026, 12, 1, 15)),                                  # exactly now is not ahead -> tomorrow
    ('5pm (Europe/Berlin)', None, u(2026, 11, 30, 16)),
    ('3pm (Europe/Berlin)', None, u(2026, 12, 1, 14)),                  # 15:00 Berlin passed (it is 16:00 there)
    ('5pm', 'America/New_York', u(2026, 11, 30, 22)),
    ('9am', 'America/New_York', u(2026, 12, 1, 14)),                   # 09:00 NY passed (it is 10:00 there)
    ('17:00 +02:00', None, u(2026, 11, 30, 15) + dt.timedelta(days=1)),
    ('17:00 UTC+1', None, u(2026, 11, 30, 16)),
    ('5pm PST', None, u(2026, 12, 1, 1)),
    ('12am', None, u(2026, 12, 1)),
    ('12pm', None, u(2026, 12, 1, 12)),
    # never invented
    ('5pm CST', None, None),                                           # China or US Central? no guess
    ('5pm (Mars/Olympus)', None, None),
    ('5', None, None),
    ('13pm', None, None),
    ('25:00', None, None),
    ('soon', None, None),
    ('', None, None),
    (None, None, None),
])
def test_resolve_reset(value, tz, expected):
    assert resolve_reset(value, NOW, tz=tz) == expected


def test_resolve_reset_across_dst():
    """Rolling forward is by calendar day in the zone, not +24 h (Berlin leaves DST on 2026-10-25)."""
    now = dt.datetime(2026, 10, 24, 20, 0, tzinfo=UTC)       # 22:00 CEST
    assert resolve_reset('9pm (Europe/Berlin)', now) == dt.datetime(2026, 10, 25, 20, 0, tzinfo=UTC)   # 21:00 CET


@pytest.mark.parametrize('text, source, phrase', [
    ('Claude AI usage limit reached|1796083200', 'rate_limit', '1796083200'),
    ('Claude usage limit reached. Your limit will reset at 5pm (Europe/Berlin).', 'rate_limit', '5pm (Europe/Berlin)'),
    (u"You've hit your limit \u00b7 resets 3pm (Europe/Berlin)", 'rate_limit', '3pm (Europe/Berlin)'),
    (u'5-hour limit reached \u2219 resets 2am', 'rate_limit', '2am'),
    ('Weekly limit reached. Try again in 2 hours 30 minutes.', 'rate_limit', 'in 2 hours 30 minutes'),
    ('usage limit reached, try again at 2026-12-01T00:00:00Z', 'rate_limit', '2026-12-01T00:00:00Z'),
    ('Claude usage limit reached.', 'rate_limit', None),
    (u'You\u2019ve reached your usage limit.', 'rate_limit', None),                     # none stated: None, never invented
    ('Your credit balance is too low to access the Anthropic API.', 'revoked', None),
    ('You exceeded your current quota, please check your plan and billing details.', 'revoked', None),
    ('Error: your subscription has been cancelled', 'revoked', None),
    ('This organization has been disabled.', 'revoked', None),
    ('API key has been revoked. Resets 5pm', 'revoked', None),               # revoked never clears by the clock
    ('Invalid API key \u00b7 Please run /login', 'revoked', None),
    ('usage limit reached ... also: account suspended', 'revoked', None),     # both: revoked wins
])
def test_classify_capacity(text, source, phrase):
    found = classify_capacity(text)
    assert found['source'] == source
    assert found['reset_text'] == phrase if phrase is None else phrase in found['reset_text']
    assert found['message']


@pytest.mark.parametrize('text', [
    'HTTP 429 Too Many Requests',                    # a transient throttle, not a dark worker
    '{"type":"error","error":{"type":"rate_limit_error"}}',
    'Reached maximum number of turns (40)',
    'rate limit approaching: 80% used',
    'limit reached',
    'Request timed out',
    'Quota exceeded for this project. Retry after 120 seconds',   # a stated wait this short is a throttle
    '', None,
])
def test_not_capacity(text):
    assert classify_capacity(text) is None


def test_classify_resolves_when_given_now():
    found = classify_capacity('usage limit reached; resets 5pm (Europe/Berlin)', now=NOW)
    assert found['reset_at'] == u(2026, 11, 30, 16)
    assert classify_capacity('usage limit reached; resets 5pm CST', now=NOW)['reset_at'] is None
    assert classify_capacity('credit balance is too low; resets 5pm', now=NOW)['reset_at'] is None


@pytest.mark.parametrize('text, span, in_s', [
    ('resets 5pm tomorrow', 'resets 5pm', None),
    ('retry after 30 seconds', 'retry after 30 seconds', 30),
    ('Retry-After: 17', 'Retry-After: 17', 17),
    ('no phrase here', None, None),
])
def test_stated_reset(text, span, in_s):
    stated = stated_reset(text, now=NOW, tz='UTC', on_date=None)
    assert (stated.text if stated else None, stated.in_s if stated else None) == (span, in_s)


# --- state file ---------------------------------------------------------------------------------

def test_state_round_trip():
    state = make_state('rate_limit', written_at=NOW, reset_at=u(2026, 11, 30, 17), message='usage limit reached', unit='task-42')
    text = dump_state(state)
    assert set(json.loads(text)) == set(STATE_FIELDS)
    assert json.loads(text)['reset_at'] == '2026-11-30T17:00:00.000000Z'
    loaded, why = load_state(text)
    assert why == '' and loaded == state


def test_state_unknown_reset_is_null():
    text = dump_state(make_state('rate_limit', written_at=NOW))
    assert json.loads(text)['reset_at'] is None
    assert load_state(text)[0]['reset_at'] is None


def test_revoked_state_never_carries_a_reset():
    state = make_state('revoked', written_at=NOW, reset_at=u(2026, 11, 30, 17))
    assert state['reset_at'] is None
    assert load_state(json.dumps({'source': 'revoked', 'reset_at': '2026-11-30T17:00:00Z', 'written_at': '2026-11-30T15:00:00Z'}))[0]['reset_at'] is None


@pytest.mark.parametrize('bad', [
    dict(source='dark', written_at=NOW), dict(source='rate_limit', written_at=None),
])
def test_make_state_validates(bad):
    with pytest.raises(ValueError):
        make_state(bad.pop('source'), **bad)


@pytest.mark.parametrize('text, why_part', [
    (None, 'no capacity state file'),
    ('', 'empty'),
    ('   \n', 'empty'),
    ('{"source": "rate_limit",', 'not JSON'),
    ('[1, 2]', 'not an object'),                       # D5: check the type before trusting it
    ('"rate_limit"', 'not an object'),
    ('{"error": "Not Found"}', 'unknown source'),      # an API error body is not a state
    ('{"source": "Rate_Limit"}', 'unknown source'),
    (b'\xff\xfe', 'not UTF-8'),
])
def test_load_state_fails_open(text, why_part):
    state, why = load_state(text)
    assert state is None and why_part in why
    assert is_dark(state, NOW)[0] is False


def test_load_state_unreadable_reset_kept_as_unknown():
    state, why = load_state('{"source": "rate_limit", "reset_at": "5pm-ish", "written_at": "2026-11-30T15:00:00Z"}')
    assert state['source'] == 'rate_limit' and state['reset_at'] is None and 'reset_at' in why


def test_state_from_classification():
    state = state_from(classify_capacity('usage limit reached; resets 5pm', now=NOW), now=NOW, unit='task-42')
    assert state['source'] == 'rate_limit' and state['reset_at'] == u(2026, 11, 30, 17) and state['unit'] == 'task-42'
    assert state_from(None, now=NOW) is None


# --- dark or not ----------------------------------------------------------------------------------

RL_KNOWN = make_state('rate_limit', written_at=NOW, reset_at=u(2026, 11, 30, 17), message='limit')
RL_UNKNOWN = make_state('rate_limit', written_at=NOW, message='limit')
REVOKED = make_state('revoked', written_at=NOW, message='credit balance is too low')
UPDATE_FAILED = make_state('update_failed', written_at=NOW, reset_at=u(2026, 11, 30, 17), message='git fetch failed')


@pytest.mark.parametrize('name, state, at, dark, source, reset_at', [
    ('no state', None, NOW, False, None, None),
    ('rate limit before reset', RL_KNOWN, u(2026, 11, 30, 16, 59), True, 'rate_limit', u(2026, 11, 30, 17)),
    ('rate limit clears by the clock', RL_KNOWN, u(2026, 11, 30, 17), False, 'rate_limit', u(2026, 11, 30, 17)),
    ('unknown reset: dark inside the cooldown', RL_UNKNOWN, NOW + DEFAULT_UNKNOWN_RESET_COOLDOWN - dt.timedelta(seconds=1),
     True, 'rate_limit', None),
    ('unknown reset: the cooldown is bounded', RL_UNKNOWN, NOW + DEFAULT_UNKNOWN_RESET_COOLDOWN, False, 'rate_limit', None),
    ('revoked never clears by itself', REVOKED, NOW + dt.timedelta(days=365), True, 'revoked', None),
    ('unknown reset, unreadable written_at: no evidence left', {'source': 'rate_limit', 'reset_at': None, 'written_at': None},
     NOW, False, 'rate_limit', None),
    ('state loaded from text (ISO strings)', json.loads(dump_state(RL_KNOWN)), NOW, True, 'rate_limit', u(2026, 11, 30, 17)),
    # D11 + D8: a runner that cannot update itself draws no work, for a bounded cooldown
    ('update failed: dark inside the cooldown', UPDATE_FAILED, NOW + DEFAULT_UNKNOWN_RESET_COOLDOWN - dt.timedelta(seconds=1),
     True, 'update_failed', None),
    ('update failed: one run tries again after it', UPDATE_FAILED, NOW + DEFAULT_UNKNOWN_RESET_COOLDOWN, False, 'update_failed', None),
    ('update failed, unreadable written_at: no evidence left', {'source': 'update_failed', 'written_at': 'x'}, NOW, False,
     'update_failed', None),
    ('update failed, loaded from text', load_state(dump_state(UPDATE_FAILED))[0], NOW, True, 'update_failed', None),
])
def test_is_dark(name, state, at, dark, source, reset_at):
    got = is_dark(state, at)
    assert got[:3] == (dark, source, reset_at), name
    assert got[3]


def test_is_dark_messages_name_the_remedy():
    assert 'human' in is_dark(REVOKED, NOW)[3]
    assert 'unknown' in is_dark(RL_UNKNOWN, NOW)[3]


def test_update_failed_never_carries_a_reset_and_names_the_remedy():
    assert UPDATE_FAILED['reset_at'] is None
    assert 'fleet.dispatch.worker' in is_dark(UPDATE_FAILED, NOW)[3]


@pytest.mark.parametrize('existing, at, writes', [
    (None, NOW, True),
    (RL_KNOWN, u(2026, 11, 30, 16), False),             # a rate limit still dark: stronger evidence stays
    (RL_KNOWN, u(2026, 11, 30, 18), True),              # one that has cleared does not
    (REVOKED, NOW + dt.timedelta(days=3), False),        # revoked never clears by itself: never overwritten
    (UPDATE_FAILED, NOW + dt.timedelta(hours=1), True),  # a second failure starts a new cooldown
])
def test_update_failed_state_keeps_stronger_evidence(existing, at, writes):
    state = update_failed_state(existing, now=at, message='the fetch failed', unit='task-7')
    if writes:
        assert state['source'] == 'update_failed' and state['written_at'] == at and state['unit'] == 'task-7'
    else:
        assert state is None


def test_only_an_update_failed_state_clears_after_an_update():
    assert clears_after_update(UPDATE_FAILED)
    assert not clears_after_update(REVOKED) and not clears_after_update(RL_KNOWN) and not clears_after_update(None)


def test_is_dark_cooldown_is_a_parameter():
    assert is_dark(RL_UNKNOWN, NOW + dt.timedelta(minutes=5), unknown_reset_cooldown=dt.timedelta(minutes=1))[0] is False


def test_d8_story_past_clock_reset_must_not_recover_a_dark_worker():
    """D8: a bare clock time with no date, resolved to an instant that already passed, renders a
    dark worker as recovered. It rolls forward, so the worker stays dark."""
    found = classify_capacity('usage limit reached; resets 2am', now=NOW)
    state = state_from(found, now=NOW)
    assert state['reset_at'] == u(2026, 12, 1, 2)
    assert is_dark(state, NOW + dt.timedelta(minutes=1))[0] is True


# --- clean runs -------------------------------------------------------------------------------------

ENV_OK = json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 9, "result": "done"})


@pytest.mark.parametrize('name, exit_code, capture, clean', [
    ('zero exit, success envelope', 0, ENV_OK, True),
    ('non-zero exit', 1, ENV_OK, False),
    ('signal exit', 143, ENV_OK, False),
    ('no exit code', None, ENV_OK, False),
    ('bool is not an exit code', False, ENV_OK, False),
    # D8: a run ending on a trailing notice must not delete a marker that is still true
    ('zero exit on a trailing limit notice', 0, ENV_OK + '\nClaude usage limit reached. resets 5pm', False),
    ('zero exit on a revocation notice', 0, ENV_OK + '\nYour credit balance is too low', False),
    ('the agent discussing quotas is not a limit', 0,
     json.dumps({"type": "result", "is_error": False, "num_turns": 3, "result": "Handled 'usage limit reached' errors"}), True),
    ('a transient 429 the SDK rode out is not a limit', 0, 'HTTP 429, retrying\n' + ENV_OK, True),
])
def test_is_clean_run(name, exit_code, capture, clean):
    assert is_clean_run(exit_code, capture) is clean, name


def test_a_clean_run_clears_only_a_state_written_before_it_started():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import clears_after_clean_run
    start = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
    before = {'source': 'rate_limit', 'written_at': start - dt.timedelta(minutes=5)}
    during = {'source': 'rate_limit', 'written_at': start + dt.timedelta(minutes=5)}
    assert clears_after_clean_run(before, start)
    assert not clears_after_clean_run(during, start)
    assert clears_after_clean_run({'source': 'rate_limit', 'written_at': None}, start)
    assert clears_after_clean_run(None, start)


def test_the_default_account_is_a_fingerprint_of_the_credential_never_the_credential():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import credential_account
    key = {'ANTHROPIC_API_KEY': 'sk-ant-secret-1'}
    one = credential_account(key)
    assert one.startswith('key-') and len(one) == 16 and 'secret' not in one
    # one key on two masters is one account, in whatever order the names come; another key is another
    assert credential_account(dict(key)) == one
    assert credential_account({'B': '2', 'A': '1'}) == credential_account({'A': '1', 'B': '2'})
    assert credential_account({'ANTHROPIC_API_KEY': 'sk-ant-secret-2'}) != one
    assert credential_account({}) == '' and credential_account(None) == ''
