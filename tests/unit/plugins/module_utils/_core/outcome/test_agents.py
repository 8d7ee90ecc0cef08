# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Agent profiles and the one reading of a capture (issue 10): the rules the corpus does not pin alone."""
from __future__ import annotations

import datetime as dt
import io
import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import agents
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.closeout import decide
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Artifact, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import classify as classify_mod
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import cli
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as program

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 5, 12, 3, 0, tzinfo=UTC)
CODEX_OK = '\n'.join([
    '{"type":"thread.started","thread_id":"t"}', '{"type":"turn.started"}',
    '{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"usage limit reached? no: HTTP 429 is fine"}}',
    '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":2,"output_tokens":5}}'])
CLAUDE_OK = ('{"type":"result","subtype":"success","is_error":false,"num_turns":7,"result":"fixed; quota fine",'
             '"total_cost_usd":0.5,"usage":{"input_tokens":100,"output_tokens":20}}')


def test_profiles_pass_the_brief_on_stdin_never_argv():
    for name in ('claude', 'codex', 'gemini'):
        prof = agents.profile(name)
        assert prof.brief == 'stdin' and prof.argv and '{brief}' not in prof.argv
    assert agents.profile(None).name == 'custom'
    assert agents.agent_argv('custom', ['my-agent', '{brief_file}']) == ['my-agent', '{brief_file}']
    with pytest.raises(ValueError):
        agents.agent_argv('custom')
    with pytest.raises(ValueError):
        agents.profile('cursor')


@pytest.mark.parametrize('text', ['API Error: Request timed out.', 'OAuth error: timeout of 15000ms exceeded',
                                  'stream disconnected before completion: idle timeout waiting for SSE',
                                  'connect ETIMEDOUT 10.0.0.1:443'])
def test_a_bare_timeout_is_a_failure_never_transient(text):
    assert agents.read_capture(text, 'custom').kind == 'failure'   # D7's narrowness


def test_codex_jsonl_is_a_started_run_with_usage_and_its_own_words_are_not_signatures():
    reading = agents.read_capture(CODEX_OK, 'codex')
    assert (reading.kind, reading.envelope_found, reading.usage['output_tokens']) == ('success', True, 5)
    outcome = reading.outcome(0)
    assert not outcome.zero_turns and outcome.capacity is None and not outcome.transient
    # D16: a started codex run that merged its PR is a success, not "zero turns => no artifact"
    start = NOW - dt.timedelta(minutes=10)
    pr = Artifact(ref='o/r#5', created_at=start + dt.timedelta(minutes=1), merged=True,
                  merged_at=start + dt.timedelta(minutes=2), closes=[42])
    item = Item(number=42, title='t', state='open', artifacts=[pr])
    assert decide(outcome, item, number=42, started_at=start, now=NOW, exit_code=0).kind == 'success'


def test_a_limit_notice_after_a_success_envelope_is_a_limit_but_one_before_it_is_not():
    notice = 'Claude AI usage limit reached|1778565600'
    assert agents.read_capture(CLAUDE_OK + '\n' + notice, 'claude').kind == 'rate_limit'   # D8: a trailing notice
    before = agents.read_capture('API Error: 529 Overloaded\n' + CLAUDE_OK, 'claude')
    assert (before.kind, before.turns, before.cost_usd) == ('success', 7, 0.5)


def test_throttle_limit_and_revoked_are_three_names():
    assert agents.read_capture('You have exhausted your capacity on this model. Your quota will reset after 3s.').kind == 'transient'
    limit = agents.read_capture('You have exhausted your capacity on this model. Your quota will reset after 2h1m.', now=NOW)
    assert (limit.kind, limit.reset_at) == ('rate_limit', NOW + dt.timedelta(hours=2, minutes=1))
    revoked = agents.read_capture('API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"x"}}')
    assert (revoked.kind, revoked.signature, revoked.capacity()['source']) == ('revoked', 'authentication_error', 'revoked')
    assert revoked.reset_at is None


def test_reset_times_as_stated():
    def at(text, **kw):
        return agents.read_capture(text, 'claude', **kw).reset_at
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
    assert agents.parse_duration('5 days 22 hours 11\nminutes') == 511860
    assert agents.parse_duration('8h44m7s') == 31447


def test_a_rate_limit_event_that_is_allowed_is_not_a_limit():
    allowed = '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1774447200}}\n' + CLAUDE_OK
    assert agents.read_capture(allowed, 'claude').kind == 'success'
    rejected = '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600}}'
    reading = agents.read_capture(rejected, 'claude')
    assert (reading.kind, reading.reset_at) == ('rate_limit', dt.datetime(2026, 5, 12, 6, 0, tzinfo=UTC))


def test_classify_cli_prints_one_object_with_the_contract_keys(tmp_path):
    capture = tmp_path / 'capture.log'
    capture.write_text('noise\n' + CLAUDE_OK + '\n', encoding='utf-8')
    out = io.StringIO()
    assert classify_mod.main(['--agent', 'claude', '--now', '2026-05-12T03:00:00Z', str(capture)], stdout=out, environ={}) == 0
    data = json.loads(out.getvalue())
    assert list(data) == ['profile', 'envelope_found', 'turns', 'claim', 'kind', 'transient', 'signature', 'reset_at',
                          'reset_text', 'usage', 'cost_usd', 'decision']
    assert (data['kind'], data['turns'], data['cost_usd'], data['decision']['marker']) == ('success', 7, 0.5, 'noop')
    out = io.StringIO()
    stdin = io.StringIO('Claude AI usage limit reached|1778565600')
    assert classify_mod.main(['-'], stdin=stdin, stdout=out, environ={}) == 0
    data = json.loads(out.getvalue())
    assert (data['profile'], data['kind'], data['reset_at'], data['decision']['marker']) == \
        ('custom', 'rate_limit', '2026-05-12T06:00:00Z', 'capacity')


def test_the_runner_dispatches_classify(tmp_path, capsys):
    capture = tmp_path / 'capture.log'
    capture.write_text(CODEX_OK, encoding='utf-8')
    assert cli.main(['fleet-runner', 'classify', '--agent', 'codex', str(capture)], environ={}) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data['profile'], data['kind'], data['usage']['input_tokens']) == ('codex', 'success', 10)


def test_classify_through_the_wrapper_arguments_reads_the_runner_config(tmp_path, capsys):
    conf = tmp_path / 'runner.json'
    conf.write_text(json.dumps({'agent': 'gemini', 'tz': 'UTC'}), encoding='utf-8')
    capture = tmp_path / 'capture.log'
    capture.write_text('{"response": "ok", "stats": {"models": {"m": {"tokens": {"prompt": 3, "candidates": 2}}}}}')
    # what ~/.local/bin/fleet-runner passes before the caller's words
    argv = ['fleet-runner', '--code-dir', '/x', '--config', str(conf), '--branch', 'main', 'classify', str(capture)]
    assert cli.main(argv, environ={}) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data['profile'], data['kind'], data['usage']) == ('gemini', 'success', {'prompt': 3, 'candidates': 2})
    assert cli.subcommand_of(['--item', 'classify']) is None   # a value, not the subcommand


def test_the_runner_help_names_classify(capsys):
    with pytest.raises(SystemExit):
        cli.main(['fleet-runner', '--help'], environ={})
    assert 'fleet-runner classify' in capsys.readouterr().out


def test_run_cost_only_what_is_stated():
    assert program.run_cost(agents.read_capture(CLAUDE_OK, 'claude')) == {'tokens': 120, 'cost_usd': 0.5}
    assert program.run_cost(agents.read_capture(CODEX_OK, 'codex')) == {'tokens': 15}
    assert program.run_cost(agents.read_capture('plain text', 'custom')) == {}


def test_classify_cli_with_an_unknown_now_reads_on_the_stated_day():
    out = io.StringIO()
    stdin = io.StringIO("You've hit your session limit · resets 4am (Asia/Calcutta)\n")
    assert classify_mod.main(['--agent', 'claude', '--now', 'unknown', '--on-date', '2026-09-06', '-'], stdin=stdin,
                             stdout=out, environ={}) == 0
    assert json.loads(out.getvalue())['reset_at'] == '2026-09-05T22:30:00Z'


# Wordings of the three CLIs seen in their trackers but not (yet) in the corpus, written here by us:
# constructed cases, not real samples (the real ones are tests/corpus).
OTHER_WORDINGS = [
    ('claude', 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed '
               'the rate limit for your organization of 40,000 input tokens per minute."}}', 'transient'),
    ('claude', 'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is '
               'too low to access the Anthropic API."}}', 'revoked'),
    ('claude', 'Prompt is too long', 'failure'),
    ('claude', 'Session limit reached \u2219 resets 3pm (Europe/Paris)', 'rate_limit'),
    ('claude', 'Opus weekly limit reached \u2219 resets Oct 9, 10am', 'rate_limit'),
    ('claude', 'API Error: 403 {"error":{"type":"forbidden","message":"Request not allowed"}}', 'revoked'),
    ('codex', 'ERROR: unexpected status 401 Unauthorized: Missing bearer or basic authentication in header', 'revoked'),
    ('codex', 'Token data is not available.', 'revoked'),
    ('codex', 'stream disconnected before completion: Transport error: error decoding response body', 'transient'),
    ('codex', 'You exceeded your current quota, please check your plan and billing details.', 'revoked'),
    ('codex', 'Rate limit reached for gpt-4o on requests per min (RPM): Limit 500. Please try again in 120ms.', 'transient'),
    ('gemini', "[API Error: Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro Requests "
               "per minute per user' of service 'cloudcode-pa.googleapis.com']", 'transient'),
    ('gemini', 'Failed to login. Message: Request had invalid authentication credentials', 'revoked'),
    ('gemini', 'Usage limit reached for all Pro models. Access resets at 3:14 AM PST.', 'rate_limit'),
    ('custom', 'HTTP/1.1 429\nretry-after: 30', 'transient'),
    ('claude', 'Request rejected (429) \u00b7 this may be a temporary capacity issue', 'transient'),
    ('claude', 'OAuth token revoked \u00b7 Please run /login', 'revoked'),
    # the gemini profile: Google's billing wording is a quota, never revoked, even without Google's markers
    ('gemini', '[API Error: You exceeded your current quota, please check your plan and billing details.]', 'rate_limit'),
    ('gemini', 'Rate limiting detected. Automatically switching from gemini-2.5-pro to gemini-2.5-flash.', 'transient'),
]


@pytest.mark.parametrize('agent, text, kind', OTHER_WORDINGS, ids=[w[1][:40] for w in OTHER_WORDINGS])
def test_other_wordings(agent, text, kind):
    assert agents.read_capture(text, agent, now=NOW).kind == kind


def test_gemini_stream_json_and_codex_before_0_40_are_read_too():
    gemini = '\n'.join([
        '{"type":"init","session_id":"s","model":"gemini-2.5-pro"}',
        '{"type":"message","role":"assistant","content":"You have exhausted your daily quota? Not me.","delta":true}',
        '{"type":"result","status":"success","stats":{"total_tokens":30,"input_tokens":20,"output_tokens":10}}'])
    reading = agents.read_capture(gemini, 'gemini')
    assert (reading.kind, reading.envelope_found, reading.usage['output_tokens']) == ('success', True, 10)
    failed = gemini.replace('"status":"success"', '"status":"error","error":{"type":"FatalTurnLimitedError","message":"max turns"}')
    assert agents.read_capture(failed, 'gemini').kind == 'failure'
    old = '\n'.join([
        '{"id":"0","msg":{"type":"agent_message","message":"I hit a usage limit? no."}}',
        '{"id":"0","msg":{"type":"token_count","input_tokens":40,"output_tokens":4}}',
        '{"id":"0","msg":{"type":"task_complete","last_agent_message":"done"}}'])
    reading = agents.read_capture(old, 'codex')
    assert (reading.kind, reading.envelope_found, reading.usage) == ('success', True, {'input_tokens': 40, 'output_tokens': 4})
    died = '{"id":"0","msg":{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}}'
    assert agents.read_capture(died, 'codex').kind == 'transient'
