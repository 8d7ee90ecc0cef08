# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reading of a capture: the rules the corpus does not pin alone. The profiles it reads with:
``test_profiles.py``; the reset times it resolves: ``test_resets.py``."""
from __future__ import annotations

import datetime as dt
import io
import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import signatures
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.closeout import decide
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Artifact, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import classify as classify_mod
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import cli
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.closeout import run_cost

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 5, 12, 3, 0, tzinfo=UTC)
CODEX_OK = '\n'.join([
    '{"type":"thread.started","thread_id":"t"}', '{"type":"turn.started"}',
    '{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"usage limit reached? no: HTTP 429 is fine"}}',
    '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":2,"output_tokens":5}}'])
CLAUDE_OK = ('{"type":"result","subtype":"success","is_error":false,"num_turns":7,"result":"fixed; quota fine",'
             '"total_cost_usd":0.5,"usage":{"input_tokens":100,"output_tokens":20}}')


@pytest.mark.parametrize('text', ['API Error: Request timed out.', 'OAuth error: timeout of 15000ms exceeded',
                                  'stream disconnected before completion: idle timeout waiting for SSE',
                                  'connect ETIMEDOUT 10.0.0.1:443'])
def test_a_bare_timeout_is_a_failure_never_transient(text):
    assert read_capture(text, 'custom').kind == 'failure'   # D7's narrowness


def test_codex_jsonl_is_a_started_run_with_usage_and_its_own_words_are_not_signatures():
    reading = read_capture(CODEX_OK, 'codex')
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
    assert read_capture(CLAUDE_OK + '\n' + notice, 'claude').kind == 'rate_limit'   # D8: a trailing notice
    before = read_capture('API Error: 529 Overloaded\n' + CLAUDE_OK, 'claude')
    assert (before.kind, before.turns, before.cost_usd) == ('success', 7, 0.5)


def test_throttle_limit_and_revoked_are_three_names():
    assert read_capture('You have exhausted your capacity on this model. Your quota will reset after 3s.').kind == 'transient'
    limit = read_capture('You have exhausted your capacity on this model. Your quota will reset after 2h1m.', now=NOW)
    assert (limit.kind, limit.reset_at) == ('rate_limit', NOW + dt.timedelta(hours=2, minutes=1))
    revoked = read_capture('API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"x"}}')
    assert (revoked.kind, revoked.signature, revoked.capacity()['source']) == ('revoked', 'authentication_error', 'revoked')
    assert revoked.reset_at is None


def test_a_rate_limit_event_that_is_allowed_is_not_a_limit():
    allowed = '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1774447200}}\n' + CLAUDE_OK
    assert read_capture(allowed, 'claude').kind == 'success'
    rejected = '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600}}'
    reading = read_capture(rejected, 'claude')
    assert (reading.kind, reading.reset_at) == ('rate_limit', dt.datetime(2026, 5, 12, 6, 0, tzinfo=UTC))


def test_classify_cli_prints_one_object_with_the_contract_keys(tmp_path):
    capture = tmp_path / 'capture.log'
    capture.write_text('noise\n' + CLAUDE_OK + '\n', encoding='utf-8')
    out = io.StringIO()
    assert classify_mod.main(['--agent', 'claude', '--now', '2026-05-12T03:00:00Z', str(capture)], stdout=out, environ={}) == 0
    data = json.loads(out.getvalue())
    assert list(data) == ['profile', 'envelope_found', 'turns', 'claim', 'kind', 'transient', 'signature', 'reset_at',
                          'reset_text', 'usage', 'cost_usd', 'spend', 'decision']
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
    assert run_cost(read_capture(CLAUDE_OK, 'claude')) == {'tokens': 120, 'cost_usd': 0.5}
    assert run_cost(read_capture(CODEX_OK, 'codex')) == {'tokens': 15}
    assert run_cost(read_capture('plain text', 'custom')) == {}


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
    assert read_capture(text, agent, now=NOW).kind == kind


def test_gemini_stream_json_and_codex_before_0_40_are_read_too():
    gemini = '\n'.join([
        '{"type":"init","session_id":"s","model":"gemini-2.5-pro"}',
        '{"type":"message","role":"assistant","content":"You have exhausted your daily quota? Not me.","delta":true}',
        '{"type":"result","status":"success","stats":{"total_tokens":30,"input_tokens":20,"output_tokens":10}}'])
    reading = read_capture(gemini, 'gemini')
    assert (reading.kind, reading.envelope_found, reading.usage['output_tokens']) == ('success', True, 10)
    failed = gemini.replace('"status":"success"', '"status":"error","error":{"type":"FatalTurnLimitedError","message":"max turns"}')
    assert read_capture(failed, 'gemini').kind == 'failure'
    old = '\n'.join([
        '{"id":"0","msg":{"type":"agent_message","message":"I hit a usage limit? no."}}',
        '{"id":"0","msg":{"type":"token_count","input_tokens":40,"output_tokens":4}}',
        '{"id":"0","msg":{"type":"task_complete","last_agent_message":"done"}}'])
    reading = read_capture(old, 'codex')
    assert (reading.kind, reading.envelope_found, reading.usage) == ('success', True, {'input_tokens': 40, 'output_tokens': 4})
    died = '{"id":"0","msg":{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}}'
    assert read_capture(died, 'codex').kind == 'transient'


# The CLIs' own words for limits, overload and billing, from their source or their trackers: one case each.
CLI_WORDINGS = [
    # codex-rs core/src/error.rs: ServerOverloaded, InternalServerError, QuotaExceeded, UsageNotIncluded,
    # UsageLimitReachedError (its plan variants), RetryLimitReachedError
    ('codex', 'Selected model is at capacity. Please try a different model.', 'transient', 'overloaded'),
    ('codex', "We're currently experiencing high demand, which may cause temporary errors.", 'transient', 'overloaded'),
    ('codex', 'Reconnecting... 1/5 (We\u2019re currently experiencing high demand, which may cause temporary errors.)',
     'transient', 'overloaded'),
    ('codex', 'Flex capacity unavailable.', 'transient', 'overloaded'),
    ('codex', 'Quota exceeded. Check your plan and billing details.', 'revoked', 'insufficient_quota'),
    ('codex', 'To use Codex with your ChatGPT plan, upgrade to Plus: https://openai.com/chatgpt/pricing.', 'revoked',
     'plan_not_included'),
    ('codex', "You've hit your usage limit. Upgrade to Plus to continue using Codex (https://openai.com/chatgpt/pricing).",
     'rate_limit', 'hit_your_limit'),
    ('codex', "You've hit your usage limit. To get more access now, send a request to your admin or try again later.",
     'rate_limit', 'hit_your_limit'),
    ('codex', 'exceeded retry limit, last status: 503 Service Unavailable', 'transient', 'http_5xx'),
    # Claude Code: the json result of a subscription limit, and Anthropic's 429 body for it (anthropics/claude-code#19673)
    ('claude', "You've hit your 5-hour limit \u00b7 resets 8:14pm (UTC)", 'rate_limit', 'hit_your_limit'),
    ('claude', "You've hit your weekly limit \u00b7 resets Oct 9, 10am (Europe/Paris)", 'rate_limit', 'hit_your_limit'),
    ('claude', 'API Error: Request rejected (429) \u00b7 This request would exceed your account\'s rate limit. '
               'Please try again later.', 'rate_limit', 'account_limit'),
    ('claude', 'API Error: 529 Overloaded. This is a server-side issue, usually temporary \u2014 try again in a moment.',
     'transient', 'http_5xx'),
    ('claude', 'API Error: Connection refused \u2014 a firewall or proxy may be blocking it (ECONNREFUSED)', 'transient',
     'connection'),
    # Gemini CLI (googleQuotaErrors: TerminalQuotaError / RetryableQuotaError) and Google's bodies
    ('gemini', 'TerminalQuotaError: You have exhausted your daily quota on this model.', 'rate_limit', 'daily_quota'),
    ('gemini', '[API Error: You have exhausted your capacity on this model. Your quota will reset after 2h52m39s.]',
     'rate_limit', 'quota_exhausted'),
    ('gemini', '{"error":{"code":429,"message":"No capacity available for model gemini-3-flash-preview on the server",'
               '"status":"RESOURCE_EXHAUSTED","details":[{"reason":"MODEL_CAPACITY_EXHAUSTED"}]}}', 'transient', 'http_429'),
    ('gemini', 'Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, '
               'limit: 0, model: gemini-2.5-pro', 'revoked', 'zero_quota'),
    ('codex', 'Rate limit reached for gpt-4o in organization org-x on requests per day (RPD): Limit 0, Used 0, '
              'Requested 1.', 'revoked', 'zero_quota'),
    # Qwen Code (OpenAI-compatible bodies, quoted as "[API Error: ...]")
    ('custom', '[API Error: 503 Our servers are currently overloaded. Please try again later.]', 'transient', 'http_5xx'),
    ('custom', '[API Error: 429 The usage limit has been reached]', 'rate_limit', 'usage_limit'),
    ('custom', '[API Error: Connection error. (cause: fetch failed)]', 'transient', 'connection'),
    # ... and as its own profile: its 429 suffix names a quota but is no quota; its own quota, OAuth and heartbeat words
    ('qwen', '[API Error: 429 Rate limit reached for gpt-5 in organization org-fake on tokens per min (TPM): Limit 30000, '
             'Used 29500, Requested 2400. Please try again in 20s.]\nPossible quota limitations in place or slow response '
             'times detected. Please wait and try again later.', 'transient', 'http_429'),
    ('qwen', 'Quota exhausted: Your quota has been exceeded and will reset at 2026-05-13 00:00 UTC\n\nPlease retry after '
             'the reset time, or switch to another API key / auth method.', 'rate_limit', 'quota_exhausted_reset'),
    ('qwen', 'Qwen OAuth free tier has been discontinued as of 2026-04-15.', 'revoked', 'plan_discontinued'),
    ('qwen', '[qwen-code] Waiting for API capacity... attempt 3, retry in 45s', 'transient', 'waiting_for_capacity'),
    ('qwen', '[API Error: 401 Incorrect API key provided: sk-fake*****0000.]', 'revoked', 'http_401'),
]


@pytest.mark.parametrize('agent, text, kind, signature', CLI_WORDINGS, ids=[w[1][:40] for w in CLI_WORDINGS])
def test_the_clis_own_words(agent, text, kind, signature):
    reading = read_capture(text, agent, now=NOW)
    assert (reading.kind, reading.signature) == (kind, signature)


def _claude_error_envelope(result, status=500, etype='api_error', output_tokens=0, **extra):
    env = {'type': 'result', 'subtype': 'success', 'is_error': True, 'num_turns': 1, 'total_cost_usd': 0,
           'terminal_reason': 'api_error', 'api_error_status': status, 'api_error_type': etype, 'result': result,
           'usage': {'input_tokens': 0, 'output_tokens': output_tokens}}
    env.update(extra)
    return json.dumps(env)


def test_num_turns_is_not_a_turn_usage_and_tools_are():
    """Claude Code fills num_turns 1 on an envelope whose every request failed: no turn, so a retry (D7)."""
    died = read_capture(_claude_error_envelope('API Error: 500 Internal server error.'), 'claude')
    assert (died.kind, died.worked, died.turns, died.outcome(1).zero_turns) == ('transient', False, 0, True)
    item = Item(number=1, title='', state='open')
    assert decide(died.outcome(1), item, number=1, started_at=NOW, now=NOW, exit_code=1).kind == 'retry'
    answered = read_capture(_claude_error_envelope('API Error: 500 Internal server error.', output_tokens=12),
                            'claude')
    assert (answered.worked, answered.outcome(1).zero_turns) == (True, False)
    assert decide(answered.outcome(1), item, number=1, started_at=NOW, now=NOW, exit_code=1).kind == 'failure'
    gemini = ('{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\\"error\\":{\\"code\\":500,'
              '\\"status\\":\\"INTERNAL\\"}}]"},"stats":{"total_tokens":0,"output_tokens":0,"tool_calls":0}}')
    reading = read_capture(gemini, 'gemini')
    assert (reading.kind, reading.outcome(244).zero_turns) == ('transient', True)


def test_a_claude_json_subscription_limit_is_capacity_with_its_reset():
    text = _claude_error_envelope("You've hit your 5-hour limit \u00b7 resets 8:14pm (UTC)", status=429,
                                  etype='rate_limit_error', api_error='usage_limit_reached')
    reading = read_capture(text, 'claude', now=NOW)
    assert (reading.kind, reading.reset_at) == ('rate_limit', dt.datetime(2026, 5, 12, 20, 14, tzinfo=UTC))
    assert decide(reading.outcome(1), Item(number=1, title='', state='open'), number=1, started_at=NOW, now=NOW,
                  exit_code=1).kind == 'capacity'


def test_no_envelope_and_no_known_words_is_not_a_success():
    for text in ('', 'Loaded cached credentials.\n', 'Killed\n'):
        assert read_capture(text, 'custom').kind == 'failure', text
        assert read_capture(text, 'custom', exit_code=0).kind != 'success', text


def test_tool_calls_without_an_envelope_are_work():
    """A run cut before its envelope that shows tool calls or git's commit line did work: never "no turn"."""
    stream = '\n'.join([
        '{"type":"system","subtype":"init"}',
        '{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"git commit"}}],'
        '"usage":{"output_tokens":40}}}',
        'API Error: Connection error. (ECONNRESET)'])
    reading = read_capture(stream, 'claude', exit_code=1)
    assert (reading.kind, reading.worked, reading.outcome(1).zero_turns) == ('transient', True, False)
    assert decide(reading.outcome(1), Item(number=1, title='', state='open'), number=1, started_at=NOW, now=NOW,
                  exit_code=1).kind == 'failure'   # it worked: an attempt, never a retry
    plain = '[main 1a2b3c4] add hello\n 1 file changed, 1 insertion(+)\nAPI Error: 503 Service Unavailable\n'
    assert read_capture(plain, 'custom', exit_code=1).outcome(1).zero_turns is False
    assert read_capture('[main 1a2b3c4] add hello\n', 'custom', exit_code=0).kind == 'success'
    for text in ('\u23fa Bash(git commit -m "x")\nAPI Error: 529 Overloaded\n',                  # Claude Code's TUI
                 '\u2502 \u2713  Shell git status   \u2502\n[API Error: 500 Internal]\n',         # Gemini CLI's box
                 'exec\nbash -lc ls in /repo\n succeeded in 12ms:\nERROR: 503 Service Unavailable\n'):  # Codex
        assert read_capture(text, 'custom', exit_code=1).outcome(1).zero_turns is False, text
    assert read_capture('I will run Bash(x) next\nAPI Error: 529\n', 'custom', exit_code=1).outcome(1).zero_turns


def test_terminal_wraps_escapes_and_boxes_are_undone_before_reading():
    width = 44
    line = "You've hit your limit \u00b7 resets 8:14pm (Europe/Berlin) please wait"
    wrapped = '\n'.join('\u2502 ' + line[i:i + width].ljust(width) + ' \u2502' for i in range(0, len(line), width))
    filler = '\n'.join('\u2502 ' + ('x' * width) + ' \u2502' for _row in range(2))
    text = '\x1b[31m' + filler + '\n' + wrapped + '\x1b[0m\n'
    reading = read_capture(text, 'claude', now=NOW)
    assert (reading.kind, reading.reset_at) == ('rate_limit', dt.datetime(2026, 5, 12, 18, 14, tzinfo=UTC)), text
    words = ('Claude usage limit reached. Your limit will reset at 8:14pm (Etc/GMT+5). Meanwhile nothing else can '
             'run on this account, so the runner waits for the reset.')
    cut = words.index('8:14') + 3                                  # the terminal wraps inside "8:14pm"
    hard = '\n'.join(words[i:i + cut] for i in range(0, len(words), cut))
    assert '8:1\n4pm' in hard and signatures.unwrap(hard) == words
    assert read_capture(hard, 'claude', now=NOW).reset_at == dt.datetime(2026, 5, 13, 1, 14, tzinfo=UTC)


def test_a_claim_without_a_tool_call_is_a_noop_claim_for_every_cli():
    codex = '\n'.join(['{"type":"thread.started","thread_id":"t"}', '{"type":"turn.started"}',
                       '{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"Done: committed."}}',
                       '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":5}}'])
    assert read_capture(codex, 'codex').kind == 'noop_claim'
    worked = codex.replace('{"type":"turn.completed"', '{"type":"item.completed","item":{"id":"i1","type":"command_execution",'
                           '"command":"git commit","exit_code":0}}\n{"type":"turn.completed"')
    assert read_capture(worked, 'codex').kind == 'success'
    gemini = json.dumps({'response': 'Done: I committed it.', 'stats': {'models': {'m': {'tokens': {'candidates': 9}}},
                                                                        'tools': {'totalCalls': 0}}})
    assert read_capture(gemini, 'gemini').kind == 'noop_claim'
    claude = json.dumps({'type': 'result', 'subtype': 'success', 'is_error': False, 'num_turns': 1, 'result': 'Done.',
                         'usage': {'output_tokens': 5}})
    assert read_capture(claude, 'claude').kind == 'noop_claim'
    assert read_capture(claude.replace('"num_turns": 1', '"num_turns": 3'), 'claude').kind == 'success'


def test_qwen_codes_quota_with_a_stated_reset_darkens_until_that_reset():
    text = ('{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,'
            '"usage":{"input_tokens":0,"output_tokens":0},"error":{"message":"Quota exhausted: Your quota has been '
            'exceeded and will reset at 2026-05-13 00:00 UTC"}}')
    reading = read_capture(text, 'qwen', now=NOW)
    assert (reading.kind, reading.worked, reading.reset_at) == ('rate_limit', False, dt.datetime(2026, 5, 13, tzinfo=UTC))
    assert decide(reading.outcome(1), Item(number=1, title='', state='open'), number=1, started_at=NOW, now=NOW,
                  exit_code=1).kind == 'capacity'
