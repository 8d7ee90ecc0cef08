# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The providers' wire shapes, written from their public API references, for the scripted endpoint.

Each protocol turns a scenario step (a reply with text, a tool call, an error) into what its API
sends: a JSON body, or a list of server-sent events ``(event_name_or_None, data_dict)``.

* ``anthropic``: the Messages API (``POST /v1/messages``): a ``message`` object, or the SSE events
  ``message_start``, ``content_block_start/delta/stop`` (``text_delta``, ``input_json_delta`` for
  ``tool_use``), ``message_delta`` (``stop_reason``, output usage), ``message_stop``; errors as
  ``{"type": "error", "error": {"type", "message"}, "request_id"}``.
* ``responses``: OpenAI's Responses API (``POST /v1/responses``, SSE): ``response.created``,
  ``response.in_progress``, ``response.output_item.added/done``, ``response.content_part.*``,
  ``response.output_text.delta/done``, ``response.function_call_arguments.delta/done``,
  ``response.completed``; errors as ``{"error": {"message", "type", "param", "code"}}``.
* ``chat``: OpenAI's Chat Completions (``POST /v1/chat/completions``, JSON or SSE chunks and
  ``[DONE]``): what OpenAI-compatible clients (Qwen Code) speak.
* ``gemini``: ``models/M:generateContent`` and ``:streamGenerateContent?alt=sse``: candidates with
  ``text``/``functionCall`` parts and ``usageMetadata``; errors as the ``google.rpc.Status`` JSON
  ``{"error": {"code", "message", "status", "details"}}``.
"""
from __future__ import annotations

import json
import time
import uuid

ANTHROPIC_ERROR_TYPES = {400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error',
                         403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large',
                         429: 'rate_limit_error', 500: 'api_error', 504: 'timeout_error', 529: 'overloaded_error'}
OPENAI_ERROR_TYPES = {400: 'invalid_request_error', 401: 'invalid_request_error', 403: 'permission_error',
                      404: 'invalid_request_error', 429: 'rate_limit_exceeded', 500: 'server_error',
                      502: 'server_error', 503: 'server_error'}
GOOGLE_STATUS = {400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND',
                 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED'}


def _id(prefix):
    return '%s_%s' % (prefix, uuid.uuid4().hex[:24])


def _chunks(text, size=12):
    return [text[i:i + size] for i in range(0, len(text), size)] or ['']


# --- errors ---------------------------------------------------------------------------------------

def error_body(protocol, status, kind=None, message=None, extra=None):
    """The provider's error envelope for ``status`` (``kind``: the error type/status/code word)."""
    message = message or 'scripted error %d' % status
    if protocol == 'anthropic':
        body = {'type': 'error', 'error': {'type': kind or ANTHROPIC_ERROR_TYPES.get(status, 'api_error'),
                                           'message': message}, 'request_id': _id('req')}
    elif protocol == 'gemini':
        body = {'error': {'code': status, 'message': message, 'status': kind or GOOGLE_STATUS.get(status, 'UNKNOWN')}}
        if extra:
            body['error']['details'] = extra
        return body
    else:
        etype = OPENAI_ERROR_TYPES.get(status, 'server_error')
        body = {'error': {'message': message, 'type': etype, 'param': None, 'code': kind}}
    if extra:
        body['error'].update(extra)
    return body


# --- anthropic ------------------------------------------------------------------------------------

def anthropic_message(model, blocks, stop_reason, usage):
    return {'id': _id('msg'), 'type': 'message', 'role': 'assistant', 'model': model, 'content': blocks,
            'stop_reason': stop_reason, 'stop_sequence': None, 'usage': usage}


def anthropic_reply(model, text=None, tool=None, usage=None):
    """``(json_message, sse_events)`` for a text reply and/or one ``tool_use`` block."""
    usage = dict(usage or {'input_tokens': 120, 'output_tokens': 30})
    usage.setdefault('cache_creation_input_tokens', 0)
    usage.setdefault('cache_read_input_tokens', 0)
    blocks, events = [], []
    start = anthropic_message(model, [], None, dict(usage, output_tokens=1))
    events.append(('message_start', {'type': 'message_start', 'message': start}))
    index = 0
    if text:
        blocks.append({'type': 'text', 'text': text})
        events.append(('content_block_start', {'type': 'content_block_start', 'index': index,
                                               'content_block': {'type': 'text', 'text': ''}}))
        events.append(('ping', {'type': 'ping'}))
        for piece in _chunks(text):
            events.append(('content_block_delta', {'type': 'content_block_delta', 'index': index,
                                                   'delta': {'type': 'text_delta', 'text': piece}}))
        events.append(('content_block_stop', {'type': 'content_block_stop', 'index': index}))
        index += 1
    if tool:
        block = {'type': 'tool_use', 'id': _id('toolu'), 'name': tool['name'], 'input': tool['input']}
        blocks.append(block)
        events.append(('content_block_start', {'type': 'content_block_start', 'index': index,
                                               'content_block': dict(block, input={})}))
        for piece in _chunks(json.dumps(tool['input']), 20):
            events.append(('content_block_delta', {'type': 'content_block_delta', 'index': index,
                                                   'delta': {'type': 'input_json_delta', 'partial_json': piece}}))
        events.append(('content_block_stop', {'type': 'content_block_stop', 'index': index}))
    stop = 'tool_use' if tool else 'end_turn'
    events.append(('message_delta', {'type': 'message_delta', 'delta': {'stop_reason': stop, 'stop_sequence': None},
                                     'usage': {'output_tokens': usage['output_tokens']}}))
    events.append(('message_stop', {'type': 'message_stop'}))
    return anthropic_message(model, blocks, stop, usage), events


# --- openai responses -----------------------------------------------------------------------------

def responses_reply(model, text=None, tool=None, usage=None):
    """``(json_response, sse_events)`` for a message item and/or one ``function_call`` item."""
    u = usage or {'input_tokens': 120, 'output_tokens': 30}
    usage = {'input_tokens': u['input_tokens'], 'input_tokens_details': {'cached_tokens': 0},
             'output_tokens': u['output_tokens'], 'output_tokens_details': {'reasoning_tokens': 0},
             'total_tokens': u['input_tokens'] + u['output_tokens']}
    rid = _id('resp')
    base = {'id': rid, 'object': 'response', 'created_at': int(time.time()), 'status': 'in_progress', 'model': model,
            'output': [], 'usage': None, 'error': None, 'incomplete_details': None}
    events = [(None, {'type': 'response.created', 'response': base}),
              (None, {'type': 'response.in_progress', 'response': base})]
    output = []
    if text:
        item = {'id': _id('msg'), 'type': 'message', 'status': 'in_progress', 'role': 'assistant', 'content': []}
        n = len(output)
        events.append((None, {'type': 'response.output_item.added', 'output_index': n, 'item': item}))
        part = {'type': 'output_text', 'text': '', 'annotations': []}
        events.append((None, {'type': 'response.content_part.added', 'item_id': item['id'], 'output_index': n,
                              'content_index': 0, 'part': part}))
        for piece in _chunks(text):
            events.append((None, {'type': 'response.output_text.delta', 'item_id': item['id'], 'output_index': n,
                                  'content_index': 0, 'delta': piece}))
        events.append((None, {'type': 'response.output_text.done', 'item_id': item['id'], 'output_index': n,
                              'content_index': 0, 'text': text}))
        done_part = dict(part, text=text)
        events.append((None, {'type': 'response.content_part.done', 'item_id': item['id'], 'output_index': n,
                              'content_index': 0, 'part': done_part}))
        done = dict(item, status='completed', content=[done_part])
        events.append((None, {'type': 'response.output_item.done', 'output_index': n, 'item': done}))
        output.append(done)
    if tool:
        args = json.dumps(tool['input'])
        item = {'id': _id('fc'), 'type': 'function_call', 'status': 'in_progress', 'call_id': _id('call'),
                'name': tool['name'], 'arguments': ''}
        n = len(output)
        events.append((None, {'type': 'response.output_item.added', 'output_index': n, 'item': item}))
        events.append((None, {'type': 'response.function_call_arguments.delta', 'item_id': item['id'],
                              'output_index': n, 'delta': args}))
        events.append((None, {'type': 'response.function_call_arguments.done', 'item_id': item['id'],
                              'output_index': n, 'arguments': args}))
        done = dict(item, status='completed', arguments=args)
        events.append((None, {'type': 'response.output_item.done', 'output_index': n, 'item': done}))
        output.append(done)
    final = dict(base, status='completed', output=output, usage=usage)
    events.append((None, {'type': 'response.completed', 'response': final}))
    for seq, (_name, data) in enumerate(events):
        data['sequence_number'] = seq
    return final, events


def responses_failed(model, code, message):
    """The in-stream failure: ``response.created`` then ``response.failed`` carrying the error."""
    base = {'id': _id('resp'), 'object': 'response', 'created_at': int(time.time()), 'status': 'in_progress',
            'model': model, 'output': [], 'usage': None, 'error': None}
    failed = dict(base, status='failed', error={'code': code, 'message': message})
    return [(None, {'type': 'response.created', 'response': base, 'sequence_number': 0}),
            (None, {'type': 'response.failed', 'response': failed, 'sequence_number': 1})]


# --- openai chat completions ----------------------------------------------------------------------

def chat_reply(model, text=None, tool=None, usage=None):
    u = usage or {'input_tokens': 120, 'output_tokens': 30}
    usage = {'prompt_tokens': u['input_tokens'], 'completion_tokens': u['output_tokens'],
             'total_tokens': u['input_tokens'] + u['output_tokens']}
    cid, created = _id('chatcmpl'), int(time.time())
    message = {'role': 'assistant', 'content': text or None}
    calls = None
    if tool:
        calls = [{'index': 0, 'id': _id('call'), 'type': 'function',
                  'function': {'name': tool['name'], 'arguments': json.dumps(tool['input'])}}]
        message['tool_calls'] = calls
    finish = 'tool_calls' if tool else 'stop'
    body = {'id': cid, 'object': 'chat.completion', 'created': created, 'model': model,
            'choices': [{'index': 0, 'message': message, 'finish_reason': finish}], 'usage': usage}

    def chunk(delta, finish_reason=None, with_usage=False):
        data = {'id': cid, 'object': 'chat.completion.chunk', 'created': created, 'model': model,
                'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish_reason}]}
        if with_usage:
            data['usage'] = usage
        return (None, data)
    events = [chunk({'role': 'assistant', 'content': ''})]
    for piece in (_chunks(text) if text else []):
        events.append(chunk({'content': piece}))
    if calls:
        events.append(chunk({'tool_calls': calls}))
    events.append(chunk({}, finish, with_usage=True))
    events.append((None, '[DONE]'))
    return body, events


# --- gemini ---------------------------------------------------------------------------------------

def gemini_reply(model, text=None, tool=None, usage=None):
    u = usage or {'input_tokens': 120, 'output_tokens': 30}
    meta = {'promptTokenCount': u['input_tokens'], 'candidatesTokenCount': u['output_tokens'],
            'totalTokenCount': u['input_tokens'] + u['output_tokens']}
    parts = []
    if text:
        parts.append({'text': text})
    if tool:
        parts.append({'functionCall': {'name': tool['name'], 'args': tool['input']}})
    rid = uuid.uuid4().hex[:20]

    def response(ps, finish=None, with_usage=False):
        cand = {'content': {'parts': ps, 'role': 'model'}, 'index': 0}
        if finish:
            cand['finishReason'] = finish
        data = {'candidates': [cand], 'modelVersion': model, 'responseId': rid}
        if with_usage:
            data['usageMetadata'] = meta
        return data
    body = response(parts, 'STOP', True)
    events = []
    if text:
        for piece in _chunks(text, 40)[:-1]:
            events.append((None, response([{'text': piece}])))
        last = [{'text': _chunks(text, 40)[-1]}]
    else:
        last = []
    if tool:
        last.append({'functionCall': {'name': tool['name'], 'args': tool['input']}})
    events.append((None, response(last, 'STOP', True)))
    return body, events
