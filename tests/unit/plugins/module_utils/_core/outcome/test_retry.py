# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Outcome, transient signatures, the four-fact gate and the ladder (D7, D8).

The capture is read by the one reading, ``_core.outcome.capture.read_capture``; its ``outcome()`` is
what the gate takes. Which object is the envelope: ``test_envelope.py``."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import Marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.retry import (
    DEFAULT_BACKOFF, plan_retry, retry_gate, retry_step)

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)

ENVELOPE = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 12,
            "result": "Opened PR; {braces} and \"quotes\" inside", "usage": {"input_tokens": 10, "nested": {"a": [1, {"b": 2}]}}}
ENV = json.dumps(ENVELOPE)


def read_outcome(capture, exit_code=None, now=None):
    """The one reading's outcome, as the runner takes it (Claude Code's envelope)."""
    return read_capture(capture, 'claude', exit_code=exit_code, now=now).outcome(exit_code)


def transient_signature(text):
    reading = read_capture(text, 'custom')
    return reading.signature if reading.kind == 'transient' else ''


@pytest.mark.parametrize('text, signature', [
    ('HTTP 429 Too Many Requests', 'http_429'),
    ('status code: 429', 'http_429'),
    ('{"type":"error","error":{"type":"rate_limit_error"}}', 'http_429'),
    ('HTTP/1.1 503 Service Unavailable', 'http_5xx'),
    ('API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', 'http_5xx'),
    ('502 Bad Gateway', 'http_5xx'),
    ('Error: 500 Internal Server Error', 'http_5xx'),
    ('Gateway Timeout', 'http_5xx'),
    ('Error: read ECONNRESET', 'connection'),
    ('connect ECONNREFUSED 127.0.0.1:443', 'connection'),
    ('Connection refused', 'connection'),
    ('Connection reset by peer', 'connection'),
    ('socket hang up', 'connection'),
    ('getaddrinfo EAI_AGAIN api.example.com', 'connection'),
    ('curl: (6) Could not resolve host: api.example.com', 'dns'),
    ('Temporary failure in name resolution', 'dns'),
    # D7: deliberately narrow
    ('Error: timeout', ''),
    ('Request timed out.', ''),
    ('ETIMEDOUT', ''),
    ('processed 429 files in 503 ms', ''),
    ('test failed: expected 500 got 200', ''),
    ('AssertionError', ''),
    ('', ''),
    (None, ''),
])
def test_transient_signature(text, signature):
    assert bool(transient_signature(text)) == bool(signature), transient_signature(text)


def test_outcome_of_a_successful_run():
    outcome = read_outcome('npm WARN deprecated\n' + ENV + '\n', exit_code=0)
    assert outcome.envelope == ENVELOPE and outcome.started
    assert outcome.turns == 12 and not outcome.zero_turns
    assert outcome.is_error is False and outcome.subtype == 'success'
    assert outcome.result.startswith('Opened PR')
    assert outcome.exit_code == 0 and outcome.transient == '' and outcome.capacity is None


def test_outcome_ignores_the_agents_own_words():
    """The agent's result text may discuss 429s and quotas; that is not this run's signature."""
    env = dict(ENVELOPE, result='Implemented handling for HTTP 429 and "usage limit reached" messages')
    stream = json.dumps({"type": "assistant", "message": {"content": "ECONNRESET handling, quota exceeded"}})
    outcome = read_outcome(stream + '\n' + json.dumps(env), exit_code=0)
    assert outcome.transient == '' and outcome.capacity is None


def test_outcome_reads_an_error_envelope():
    env = {"type": "result", "subtype": "error", "is_error": True, "num_turns": 0,
           "result": "Claude AI usage limit reached|1893456000"}
    outcome = read_outcome(json.dumps(env), exit_code=1, now=NOW)
    assert outcome.started and outcome.zero_turns
    assert outcome.capacity['source'] == 'rate_limit'
    assert outcome.capacity['reset_at'] == dt.datetime(2030, 1, 1, tzinfo=UTC)


def test_outcome_envelope_without_turns():
    outcome = read_outcome('{"type": "result", "is_error": false}')
    assert outcome.started and outcome.turns is None and not outcome.zero_turns


def _gate(capture, artifacts=0, exit_code=1):
    return retry_gate(read_outcome(capture, exit_code=exit_code), artifacts)


GATE_CASES = [
    # name, capture, artifacts, retry
    ('all four facts: 529 before any turn', 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}', 0, True),
    ('all four facts: connection reset', 'Error: read ECONNRESET\n    at TLSWrap.onStreamRead', [], True),
    ('an error envelope with zero turns and a 5xx', json.dumps({"type": "result", "is_error": True, "num_turns": 0,
                                                                "result": "API Error: 500 Internal Server Error"}), 0, True),
    ('not transient: a bare timeout', 'Error: Request timed out', 0, False),
    ('not transient: a defect', 'TypeError: cannot read properties of undefined', 0, False),
    ('hard quota is capacity, not a blip', 'HTTP 429: Claude usage limit reached. resets 5pm', 0, False),
    ('revoked is capacity', 'HTTP 403 ... 503? Your credit balance is too low', 0, False),
    ('the run reached the model', 'HTTP 503 Service Unavailable\n' + ENV, 0, False),
    ('an artifact exists since start', 'Error: read ECONNRESET', 1, False),
    ('an open PR (listed) exists since start', 'Error: read ECONNRESET', ['o/r#9'], False),
    ('the forge was not asked', 'Error: read ECONNRESET', None, False),
]


@pytest.mark.parametrize('name, capture, artifacts, retry', GATE_CASES, ids=[c[0] for c in GATE_CASES])
def test_retry_gate(name, capture, artifacts, retry):
    gate = _gate(capture, artifacts)
    assert gate.retry is retry, gate.why
    assert gate.retry == all(gate.facts.values())
    assert set(gate.facts) == {'transient', 'not_hard_quota', 'zero_turns', 'no_artifact'}
    assert gate.why


def test_one_parse_feeds_gate_and_close_out():
    """D7 story: a whole-capture parse failed on a SUCCESSFUL run because stderr was mixed in, so
    the gate saw 'no envelope' and would have retried a run that did work. One parse: the gate and
    the close-out see the same envelope."""
    capture = '(node:42) ExperimentalWarning: fetch\nError: read ECONNRESET (retrying)\n' + ENV + '\n'
    with pytest.raises(ValueError):
        json.loads(capture)
    outcome = read_outcome(capture, exit_code=0)
    assert outcome.envelope == ENVELOPE and outcome.turns == 12      # what the close-out reads
    gate = retry_gate(outcome, 0)                                     # what the gate reads
    assert not gate.retry and not gate.facts['zero_turns']


def _m(*kinds):
    return [Marker(kind=k, at=NOW) for k in kinds]


@pytest.mark.parametrize('kinds, step', [
    ([], 0), (['start'], 0), (['start', 'retry', 'start'], 1), (['start', 'retry', 'start', 'retry', 'start'], 2),
    (['start', 'retry', 'start', 'failure', 'start'], 0), (['start', 'capacity', 'start', 'retry', 'start'], 1),
])
def test_retry_step(kinds, step):
    assert retry_step(_m(*kinds)) == step


@pytest.mark.parametrize('kinds, step, delay', [
    (['start'], 1, 30), (['start', 'retry', 'start'], 2, 120), (['start', 'retry', 'start', 'retry', 'start'], 3, 480),
])
def test_plan_retry_ladder(kinds, step, delay):
    plan = plan_retry(_m(*kinds), NOW)
    assert plan['step'] == step and plan['delay_s'] == delay
    assert plan['not_before'] == (NOW + dt.timedelta(seconds=delay)).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def test_plan_retry_ladder_spent():
    assert plan_retry(_m('start', 'retry', 'start', 'retry', 'start', 'retry', 'start'), NOW) is None
    assert plan_retry(_m('start'), NOW, ladder=()) is None
    assert plan_retry(_m('start', 'retry', 'start'), NOW, ladder=(5, 7))['delay_s'] == 7


def test_default_ladder_is_the_seeds():
    assert DEFAULT_BACKOFF == (30, 120, 480)
