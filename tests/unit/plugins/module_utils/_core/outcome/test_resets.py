# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reset times as the agent stated them, resolved against when the capture was printed (D8): never guessed."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import resets
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import read_capture

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 5, 12, 3, 0, tzinfo=UTC)


def test_reset_times_as_stated():
    def at(text, **kw):
        return read_capture(text, 'claude', **kw).reset_at
    assert at('Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).',
              now=dt.datetime(2025, 6, 14, 17, 56, tzinfo=UTC)) == dt.datetime(2025, 6, 14, 18, 0, tzinfo=UTC)
    # a bare clock time that has passed rolls to tomorrow; one that has not stays today
    assert at("You've hit your limit · resets 2am (UTC)", now=NOW) == dt.datetime(2026, 5, 13, 2, 0, tzinfo=UTC)
    assert at("You've hit your limit · resets 4am (UTC)", now=NOW) == dt.datetime(2026, 5, 12, 4, 0, tzinfo=UTC)
    # no zone: only with the machine's zone, never guessed
    assert at("You've hit your limit · resets 10pm", now=NOW) is None
    assert at("You've hit your limit · resets 10pm", now=NOW, tz='Europe/Berlin') == dt.datetime(2026, 5, 12, 20, 0, tzinfo=UTC)
    assert at("You've hit your limit · resets Jan 30, 11:30am (Asia/Calcutta)",
              now=dt.datetime(2026, 12, 30, tzinfo=UTC)) == dt.datetime(2027, 1, 30, 6, 0, tzinfo=UTC)
    assert at('Usage limit reached. Access resets at 10:57 PM GMT-3.', on_date='2026-03-16') == \
        dt.datetime(2026, 3, 17, 1, 57, tzinfo=UTC)
    assert resets.parse_duration('5 days 22 hours 11\nminutes') == 511860
    assert resets.parse_duration('8h44m7s') == 31447


def test_a_google_daily_quota_resets_at_midnight_pacific_never_at_the_per_minute_hint():
    text = ('{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.\\n'
            '* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 50, '
            'model: gemini-2.5-pro\\nPlease retry in 36.25s.","status":"RESOURCE_EXHAUSTED","details":[{"violations":'
            '[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"50"}]},'
            '{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"36s"}]}}')
    reading = read_capture(text, 'gemini', now=NOW)   # 03:00Z is 20:00 PDT the day before
    assert (reading.kind, reading.reset_at) == ('rate_limit', dt.datetime(2026, 5, 12, 7, 0, tzinfo=UTC))
    assert read_capture(text, 'gemini').reset_at is None          # no "now": unknown, never invented
    zero = read_capture(text.replace('"quotaValue":"50"', '"quotaValue":"0"'), 'gemini', now=NOW)
    assert (zero.kind, zero.signature, zero.reset_at) == ('revoked', 'zero_quota', None)


def test_a_limit_never_takes_a_short_wait_as_its_reset():
    reading = read_capture("You've hit your usage limit. Please retry in 20s.", 'codex', now=NOW)
    assert (reading.kind, reading.reset_at) == ('rate_limit', None)
