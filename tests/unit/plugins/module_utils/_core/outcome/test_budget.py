# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's budget: the usage each CLI states, read event by event from real output, and the stop decision.

The lines are the CLIs' own (tests/corpus: captures of the installed CLIs against the scripted endpoint, and
samples copied from public reports); where a test needs more events than a sample holds it repeats a real
line with a new message id, and says so.
"""
from __future__ import annotations

import datetime as dt
import json

import pytest

from corpus_samples import capture, corpus_text

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import profiles
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.usage import Spend, UsageMeter
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import (
    Budget, enforceable, parse_budget, reached, stop_for)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.closeout import EXIT, decide
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import (
    GLYPHS, TERMINAL, format_marker, parse_marker)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Artifact, Comment, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 12, 5, 12, 0, tzinfo=UTC)

# Claude Code 2.1.83 stream-json, as a reporter pasted it (anthropics/claude-code#38673)
CLAUDE_STREAM = corpus_text('claude-stream-json-success-allowed-1')
CLAUDE_ASSISTANT = [line for line in CLAUDE_STREAM.splitlines() if '"type":"assistant"' in line][0]


def _responses(count, first=1):
    """``count`` model responses of the real assistant line (3 + 2 tokens as stated), each under its own message id,
    each as two lines (Claude Code prints a line per content block, every one with the response's usage)."""
    lines = []
    for n in range(first, first + count):
        obj = json.loads(CLAUDE_ASSISTANT)
        obj['message']['id'] = 'msg_%d' % n
        lines += [json.dumps(obj), json.dumps(obj)]
    return '\n'.join(lines) + '\n'


# --- the usage each CLI states ------------------------------------------------------------------------

def test_claude_stream_json_states_usage_per_response_and_totals_with_cost_in_its_result():
    meter = UsageMeter()
    events = meter.feed(CLAUDE_STREAM + '\n')
    # the assistant line: input 3 + output 2 (its cache reads are stated apart and not counted); then the result
    assert [(event, spend.tokens, spend.cost_usd) for event, spend in events] == [('message', 5, None), ('result', 9, 0.024)]
    assert read_capture(CLAUDE_STREAM, 'claude').spend == Spend(tokens=9, cost_usd=0.024, events=2)


def test_claude_lines_of_one_response_count_once():
    meter = UsageMeter()
    events = meter.feed(_responses(3))
    assert [spend.tokens for _event, spend in events] == [5, 5, 10, 10, 15, 15]


def test_claude_capture_of_the_installed_cli_reads_the_same_way():
    sample = capture('claude-server-error-stream-json')   # claude 2.1.332 stream-json: a synthetic error message, zero usage
    assert sample['argv'][2:4] == ['--output-format', 'stream-json']
    events = UsageMeter().feed(sample['text'])
    assert [(event, spend.tokens, spend.cost_usd) for event, spend in events] == [('message', 0, None), ('result', 0, 0)]


def test_codex_states_usage_at_each_turn_and_no_cost():
    sample = capture('codex-commit')   # codex-cli 0.171.0 exec --json
    events = UsageMeter().feed(sample['text'])
    assert [(event, spend.tokens, spend.cost_usd) for event, spend in events] == [('turn', 300, None)]
    tail = corpus_text('codex-exec-jsonl-success-tail-1')   # input 70021 (57088 of them cached) + output 2374
    assert [spend.tokens for _e, spend in UsageMeter().feed(tail + '\n')] == [72395]


def test_gemini_states_usage_only_in_its_final_result():
    stream = capture('gemini-server-error-stream-json')   # gemini 0.61.0 --output-format stream-json
    assert [(event, spend.tokens, spend.cost_usd) for event, spend in UsageMeter().feed(stream['text'])] == [('result', 0, None)]
    pretty = capture('gemini-commit')['text']   # --output-format json: one object over many lines, at the end
    assert UsageMeter().feed(pretty) == []      # nothing to read live
    assert read_capture(pretty, 'gemini').spend == Spend(tokens=300, cost_usd=None, events=1)   # prompt 240 + candidates 60


def test_a_line_is_read_once_it_is_complete():
    meter = UsageMeter()
    line = _responses(1).splitlines()[0] + '\n'
    assert meter.feed(line[:40]) == []
    assert meter.feed(line[40:-1]) == []
    assert [spend.tokens for _e, spend in meter.feed('\n')] == [5]


def test_noise_and_lines_without_usage_are_not_usage():
    meter = UsageMeter()
    text = ('Warning: Basic terminal detected\n{"type":"system","subtype":"init"}\n'
            '{"type":"assistant","message":{"content":"no usage here"}}\n{not json\n')
    assert meter.feed(text) == [] and meter.spend == Spend()


# --- the stop decision ------------------------------------------------------------------------------

def test_the_stop_is_decided_at_the_event_that_reaches_the_budget():
    budget = Budget(tokens=12)
    meter = UsageMeter()
    decisions = [(spend.tokens, stop_for(budget, event, spend)) for event, spend in meter.feed(_responses(4))]
    assert decisions == [(5, None), (5, None), (10, None), (10, None), (15, 'tokens'), (15, 'tokens'), (20, 'tokens'),
                         (20, 'tokens')]
    first = next(tokens for tokens, limit in decisions if limit)
    assert first == 15   # the third response, the first at or over 12: not a later one


def test_a_codex_turn_over_the_budget_stops_and_a_final_result_does_not():
    codex = UsageMeter().feed(capture('codex-commit')['text'])
    assert stop_for(Budget(tokens=300), *codex[0]) == 'tokens'
    assert stop_for(Budget(tokens=301), *codex[0]) is None
    # Claude's result is its last word: the run ended by itself, the limit is only recorded
    event, spend = UsageMeter().feed(CLAUDE_STREAM + '\n')[-1]
    assert event == 'result' and stop_for(Budget(usd=0.01), event, spend) is None and reached(Budget(usd=0.01), spend) == 'usd'


def test_a_cost_is_never_invented():
    codex = UsageMeter().feed(capture('codex-commit')['text'])[0][1]
    assert codex.cost_usd is None and reached(Budget(usd=0.0001), codex) is None
    assert enforceable(Budget(tokens=10, usd=1.0), profiles.profile('codex').states_cost) == Budget(tokens=10)
    assert enforceable(Budget(usd=1.0), profiles.profile('gemini').states_cost) == Budget()
    assert enforceable(Budget(tokens=10, usd=1.0), profiles.profile('claude').states_cost) == Budget(tokens=10, usd=1.0)
    assert enforceable(Budget(usd=1.0), profiles.profile('custom').states_cost) == Budget(usd=1.0)   # when it states one


@pytest.mark.parametrize('value,expected', [
    (None, Budget()), ({}, Budget()), ({'tokens': 0, 'usd': 0}, Budget()), ({'tokens': 5000}, Budget(tokens=5000)),
    ({'usd': 2}, Budget(usd=2.0)), ({'tokens': 1, 'usd': 0.5}, Budget(tokens=1, usd=0.5)),
])
def test_parse_budget(value, expected):
    assert parse_budget(value) == expected
    assert bool(parse_budget(value)) == (expected != Budget())


@pytest.mark.parametrize('value', [5, {'tokens': -1}, {'tokens': 1.5}, {'tokens': True}, {'usd': '1'}, {'dollars': 1}])
def test_parse_budget_refuses_what_is_not_a_limit(value):
    with pytest.raises(ValueError):
        parse_budget(value)


# --- the budget marker ------------------------------------------------------------------------------

STOP = {'limit': 'tokens', 'budget': {'tokens': 12}, 'spend': {'tokens': 15}, 'text': 'run stopped at its budget: 15 tokens'}


def _item(*comments, artifacts=()):
    return Item(number=7, title='t', body='', state='open', status='Ready', artifacts=list(artifacts),
                comments=[Comment(id='c%d' % i, body=body, created_at=T0 + dt.timedelta(minutes=i)) for i, body in enumerate(comments)])


def test_a_budget_stop_is_its_own_close_out_with_exit_15():
    outcome = read_capture(_responses(3), 'claude').outcome(-15)
    decision = decide(outcome, _item(format_marker('start')), number=7, started_at=T0, now=T0 + dt.timedelta(minutes=5),
                      exit_code=-15, budget_stop=STOP)
    assert (decision.kind, decision.exit_code, EXIT['budget']) == ('budget', 15, 15)
    assert decision.fields['limit'] == 'tokens' and decision.fields['spend_at_stop'] == {'tokens': 15}
    assert decision.text.startswith('run stopped at its budget') and not decision.close


def test_a_merged_change_outranks_the_budget_stop():
    outcome = read_capture(_responses(3), 'claude').outcome(-15)
    merged = Artifact(ref='o/r#9', created_at=T0 + dt.timedelta(minutes=1), merged=True, merged_at=T0 + dt.timedelta(minutes=2),
                      closes=[7])
    decision = decide(outcome, _item(format_marker('start'), artifacts=[merged]), number=7, started_at=T0,
                      now=T0 + dt.timedelta(minutes=5), exit_code=-15, budget_stop=STOP)
    assert decision.kind == 'success'


def test_the_budget_marker_ends_a_run_counts_as_an_attempt_and_leaves_the_item_eligible():
    body = format_marker('budget', {'limit': 'tokens'}, STOP['text'])
    assert body.startswith(GLYPHS['budget'] + ' ') and parse_marker(body).kind == 'budget' and 'budget' in TERMINAL
    assert len(set(GLYPHS.values())) == len(GLYPHS)
    verdict = evaluate(_item(format_marker('start'), body), now=T0 + dt.timedelta(hours=1))
    assert (verdict.reason, verdict.attempts) == ('eligible', 1)
    parked = evaluate(_item(*[format_marker(k) for k in ('start', 'budget') * 3]), now=T0 + dt.timedelta(hours=1))
    assert (parked.reason, parked.attempts) == ('parked', 3)
