# -*- coding: utf-8 -*-
"""The scripted model endpoint (tests/fakes/model_endpoint) speaks each provider's documented shape.

Fast and local: a real server on a free port, read with urllib; no agent CLI needed.
"""
from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from fakes.model_endpoint import Endpoint, presets

ANTHROPIC_TOOLS = [{'name': 'Bash', 'input_schema': {'type': 'object'}}]
RESPONSES_TOOLS = [{'type': 'function', 'name': 'exec_command', 'parameters': {'type': 'object'}}]
GEMINI_TOOLS = [{'functionDeclarations': [{'name': 'run_shell_command'}]}]
CHAT_TOOLS = [{'type': 'function', 'function': {'name': 'run_shell_command'}}]


def post(url, path, body, headers=None):
    """``(status, headers, text)`` of one POST."""
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method='POST',
                                 headers=dict({'content-type': 'application/json'}, **(headers or {})))
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def sse(text):
    """``[(event, data)]`` of an SSE body (``data`` parsed unless it is ``[DONE]``)."""
    out = []
    for frame in text.strip().split('\n\n'):
        event, data = None, None
        for line in frame.splitlines():
            if line.startswith('event: '):
                event = line[7:]
            elif line.startswith('data: '):
                data = line[6:]
        out.append((event, data if data == '[DONE]' else json.loads(data)))
    return out


def test_anthropic_stream_tool_use_then_text():
    with Endpoint([{'shell': 'git commit -m x'}, {'text': 'done'}]) as ep:
        status, headers, body = post(ep.url, '/v1/messages', {'model': 'm', 'stream': True, 'tools': ANTHROPIC_TOOLS})
        assert status == 200 and headers['content-type'] == 'text/event-stream'
        events = sse(body)
        names = [e for e, _data in events]
        assert names[0] == 'message_start' and names[-2:] == ['message_delta', 'message_stop']
        assert events[1][1]['content_block'] == {'type': 'tool_use', 'id': events[1][1]['content_block']['id'],
                                                 'name': 'Bash', 'input': {}}
        partial = ''.join(d['delta']['partial_json'] for e, d in events if e == 'content_block_delta')
        assert json.loads(partial)['command'] == 'git commit -m x'
        assert events[-2][1]['delta']['stop_reason'] == 'tool_use'
        status, _h, body = post(ep.url, '/v1/messages', {'model': 'm', 'tools': ANTHROPIC_TOOLS})
        message = json.loads(body)
        assert message['type'] == 'message' and message['content'] == [{'type': 'text', 'text': 'done'}]
        assert message['stop_reason'] == 'end_turn' and message['usage']['input_tokens'] > 0
        assert [r['role'] for r in ep.requests] == ['turn', 'turn']


def test_anthropic_errors_and_headers():
    with Endpoint([{'error': 'throttle'}]) as ep:
        status, headers, body = post(ep.url, '/v1/messages', {'model': 'm', 'tools': ANTHROPIC_TOOLS})
        assert status == 429 and headers['retry-after'] == str(presets.THROTTLE_RESET_S)
        assert headers['anthropic-ratelimit-input-tokens-remaining'] == '0'
        assert json.loads(body)['error']['type'] == 'rate_limit_error'
        assert json.loads(body)['type'] == 'error'
    with Endpoint([{'error': 'overloaded'}]) as ep:
        status, _h, body = post(ep.url, '/v1/messages', {'model': 'm', 'tools': ANTHROPIC_TOOLS})
        assert status == 529 and json.loads(body)['error']['type'] == 'overloaded_error'
    now = 1_800_000_000
    with Endpoint([{'error': 'usage_limit'}], clock=lambda: now) as ep:
        status, headers, _b = post(ep.url, '/v1/messages', {'model': 'm', 'tools': ANTHROPIC_TOOLS})
        assert status == 429 and headers['anthropic-ratelimit-unified-status'] == 'rejected'
        assert headers['anthropic-ratelimit-unified-reset'] == str(now + presets.LIMIT_RESET_S)


def test_anthropic_error_inside_a_stream():
    with Endpoint([{'error': 'overloaded', 'in_stream': True}]) as ep:
        status, _h, body = post(ep.url, '/v1/messages', {'model': 'm', 'stream': True, 'tools': ANTHROPIC_TOOLS})
        events = sse(body)
        assert status == 200 and events[0][0] == 'message_start'
        assert events[-1] == ('error', events[-1][1]) and events[-1][1]['error']['type'] == 'overloaded_error'


def test_responses_stream_function_call_and_completed():
    with Endpoint([{'shell': 'ls'}]) as ep:
        status, _h, body = post(ep.url, '/v1/responses', {'model': 'gpt', 'stream': True, 'tools': RESPONSES_TOOLS})
        events = [d for _e, d in sse(body)]
        types = [d['type'] for d in events]
        assert types[:2] == ['response.created', 'response.in_progress'] and types[-1] == 'response.completed'
        assert [d['sequence_number'] for d in events] == list(range(len(events)))
        item = next(d['item'] for d in events if d['type'] == 'response.output_item.done')
        assert item['type'] == 'function_call' and item['name'] == 'exec_command'
        assert json.loads(item['arguments']) == {'cmd': 'ls'}
        assert events[-1]['response']['usage']['total_tokens'] > 0


@pytest.mark.parametrize('name, status, code', [
    ('throttle', 429, 'rate_limit_exceeded'), ('bad_key', 401, 'invalid_api_key'), ('quota', 429, 'insufficient_quota'),
    ('too_long', 400, 'context_length_exceeded'), ('server_error', 500, None), ('overloaded', 503, 'server_is_overloaded'),
])
def test_responses_errors(name, status, code):
    with Endpoint([{'error': name}]) as ep:
        got, _h, body = post(ep.url, '/v1/responses', {'model': 'gpt', 'stream': True, 'tools': RESPONSES_TOOLS})
        assert got == status and json.loads(body)['error']['code'] == code


def test_responses_usage_limit_states_its_reset():
    with Endpoint([{'error': 'usage_limit'}], clock=lambda: 1000) as ep:
        status, _h, body = post(ep.url, '/v1/responses', {'model': 'gpt', 'tools': RESPONSES_TOOLS})
        err = json.loads(body)['error']
        assert status == 429 and err['type'] == 'usage_limit_reached'
        assert err['resets_at'] == 1000 + presets.LIMIT_RESET_S and err['resets_in_seconds'] == presets.LIMIT_RESET_S


def test_responses_failed_in_stream():
    with Endpoint([{'error': 'too_long', 'in_stream': True}]) as ep:
        _s, _h, body = post(ep.url, '/v1/responses', {'model': 'gpt', 'stream': True, 'tools': RESPONSES_TOOLS})
        last = sse(body)[-1][1]
        assert last['type'] == 'response.failed' and last['response']['error']['code'] == 'context_length_exceeded'


def test_gemini_stream_function_call():
    with Endpoint([{'text': 'running it', 'shell': 'ls'}]) as ep:
        status, _h, body = post(ep.url, '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse',
                                {'contents': [], 'tools': GEMINI_TOOLS})
        chunks = [d for _e, d in sse(body)]
        parts = [p for c in chunks for p in c['candidates'][0]['content']['parts']]
        call = {'name': 'run_shell_command', 'args': {'command': 'ls', 'description': 'Run the command'}}
        assert {'functionCall': call} in parts
        assert chunks[-1]['candidates'][0]['finishReason'] == 'STOP' and 'usageMetadata' in chunks[-1]
        assert ep.requests[0]['query'] == 'alt=sse'


def test_gemini_quota_details_and_bad_key():
    with Endpoint([{'error': 'throttle'}]) as ep:
        status, _h, body = post(ep.url, '/v1beta/models/gemini-2.5-pro:generateContent', {'tools': GEMINI_TOOLS})
        err = json.loads(body)['error']
        assert status == 429 and err['status'] == 'RESOURCE_EXHAUSTED'
        kinds = {d['@type'].rsplit('.', 1)[1]: d for d in err['details']}
        assert 'PerMinute' in kinds['QuotaFailure']['violations'][0]['quotaId']
        assert kinds['RetryInfo']['retryDelay'] == '36s'
    with Endpoint([{'error': 'usage_limit'}]) as ep:
        _s, _h, body = post(ep.url, '/v1beta/models/gemini-2.5-pro:generateContent', {'tools': GEMINI_TOOLS})
        assert 'PerDay' in body and 'Please retry in' in body
    with Endpoint([{'error': 'bad_key'}]) as ep:
        status, _h, body = post(ep.url, '/v1beta/models/gemini-2.5-pro:generateContent', {'tools': GEMINI_TOOLS})
        err = json.loads(body)['error']
        assert status == 400 and err['status'] == 'INVALID_ARGUMENT' and err['details'][0]['reason'] == 'API_KEY_INVALID'
    with Endpoint([{'error': 'overloaded'}]) as ep:
        status, _h, body = post(ep.url, '/v1beta/models/gemini-2.5-pro:generateContent', {'tools': GEMINI_TOOLS})
        assert status == 503 and json.loads(body)['error']['status'] == 'UNAVAILABLE'


def test_chat_completions_stream_ends_with_done():
    with Endpoint([{'shell': 'ls'}]) as ep:
        _s, _h, body = post(ep.url, '/v1/chat/completions', {'model': 'q', 'stream': True, 'tools': CHAT_TOOLS})
        events = [d for _e, d in sse(body)]
        assert events[-1] == '[DONE]' and events[-2]['choices'][0]['finish_reason'] == 'tool_calls'
        call = next(d['choices'][0]['delta']['tool_calls'][0] for d in events[:-1]
                    if 'tool_calls' in d['choices'][0]['delta'])
        assert call['function']['name'] == 'run_shell_command'


def test_script_order_times_and_the_last_step_repeats():
    with Endpoint([{'error': 'server_error', 'times': 2}, {'text': 'done'}]) as ep:
        got = [post(ep.url, '/v1/messages', {'model': 'm', 'tools': ANTHROPIC_TOOLS})[0] for _i in range(4)]
        assert got == [500, 500, 200, 200]
        assert [r['step'] for r in ep.requests] == [0, 1, 2, 2]


def test_auxiliary_calls_take_no_step_but_share_an_outage():
    with Endpoint([{'text': 'done'}]) as ep:
        status, _h, body = post(ep.url, '/v1/messages', {'model': 'haiku', 'messages': []})   # no tools: auxiliary
        assert status == 200 and json.loads(body)['content'][0]['text'] == 'ok'
        assert post(ep.url, '/v1/messages/count_tokens', {'model': 'm'})[0] == 200
        assert ep.turns == 0 and [r['role'] for r in ep.requests] == ['aux', 'aux']
        with urllib.request.urlopen(ep.url + '/v1/models', timeout=5) as resp:
            assert json.loads(resp.read())['data']
    with Endpoint([{'error': 'bad_key'}]) as ep:
        assert post(ep.url, '/v1/messages/count_tokens', {'model': 'm'}, {'x-api-key': 'sk-secret'})[0] == 401
        assert ep.requests[0]['headers']['x-api-key'] == '***'   # secrets never reach the record


def test_unknown_path_is_recorded_as_404():
    with Endpoint() as ep:
        assert post(ep.url, '/v2/elsewhere', {})[0] == 404
        assert ep.requests[0]['role'] == 'unknown' and ep.requests[0]['path'] == '/v2/elsewhere'


def test_drop_closes_without_a_response():
    with Endpoint([{'drop': True}]) as ep:
        host, port = ep.url[7:].split(':')
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request('POST', '/v1/messages', json.dumps({'tools': ANTHROPIC_TOOLS}))
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            conn.getresponse()


def test_stall_sends_nothing_for_its_duration():
    with Endpoint([{'stall': 0.6}]) as ep:
        host, port = ep.url[7:].split(':')
        started = time.monotonic()
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request('POST', '/v1/messages', json.dumps({'tools': ANTHROPIC_TOOLS}))
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError, socket.timeout)):
            conn.getresponse()
        assert time.monotonic() - started >= 0.5


def test_slow_stream_and_a_drop_mid_stream():
    with Endpoint([{'text': 'a' * 48, 'delay': 0.1}, {'text': 'b' * 48, 'drop_after': 3}]) as ep:
        started = time.monotonic()
        _s, _h, body = post(ep.url, '/v1/messages', {'stream': True, 'tools': ANTHROPIC_TOOLS})
        assert time.monotonic() - started >= 0.5 and sse(body)[-1][0] == 'message_stop'
        with pytest.raises((http.client.IncompleteRead, ConnectionError)):
            post(ep.url, '/v1/messages', {'stream': True, 'tools': ANTHROPIC_TOOLS})


def test_wait_holds_the_request_until_the_client_hangs_up_or_release():
    with Endpoint([{'wait': True}]) as ep:
        host, port = ep.url[7:].split(':')
        conn = http.client.HTTPConnection(host, int(port), timeout=0.5)
        conn.request('POST', '/v1/messages', json.dumps({'tools': ANTHROPIC_TOOLS}))
        with pytest.raises(socket.timeout):
            conn.getresponse()
        conn.close()
        assert [(r['role'], r['action']) for r in ep.requests] == [('turn', 'wait')]
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request('POST', '/v1/responses', json.dumps({'tools': RESPONSES_TOOLS}))
        ep.release()
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            conn.getresponse()
        ep.script([{'text': 'done'}])
        assert post(ep.url, '/v1/messages', {'tools': ANTHROPIC_TOOLS})[0] == 200


def test_refusing_closes_the_port_and_serves_the_same_url_after():
    with Endpoint() as ep:
        url = ep.url
        with ep.refusing():
            with pytest.raises(urllib.error.URLError) as err:
                post(url, '/v1/messages', {'tools': ANTHROPIC_TOOLS})
            assert isinstance(err.value.reason, ConnectionRefusedError)
        assert ep.url == url and post(url, '/v1/messages', {'tools': ANTHROPIC_TOOLS})[0] == 200
        assert len(ep.requests) == 1, 'the refused request never arrived'
