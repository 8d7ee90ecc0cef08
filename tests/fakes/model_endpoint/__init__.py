# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A scripted model endpoint: one local HTTP server speaking Anthropic Messages, OpenAI Responses and
Chat Completions, and Gemini generateContent, so the real agent CLIs run unattended without a provider.

A scenario is a list of steps; each *turn* request (one that declares tools: what an agent sends for
its next move) takes the next step, and the last step repeats once the list is spent. A step is one of:

* ``{"text": "done"}``: a reply with text;
* ``{"shell": "git commit ..."}``: a call of the CLI's own shell tool (found among the request's
  declared tools: ``Bash``, ``shell``, ``shell_command``, ``exec_command``, ``run_shell_command``),
  optionally with ``"text"`` before it; ``{"tool": {"name": N, "input": {...}}}`` for any other tool;
* ``{"error": "throttle"}`` (a name of ``presets.NAMES``, in the provider's own shape) or
  ``{"error": {"status": 429, "type": "...", "message": "...", "headers": {...}, "body": {...}}}``;
  ``"in_stream": true`` sends it inside a 200 stream instead (Anthropic ``event: error``,
  Responses ``response.failed``);
* ``{"stall": S}``: accept the request, send nothing for S seconds, then close;
* ``{"wait": true}``: accept the request and send nothing until the client hangs up or ``release()``
  (a provider that never answers: the caller's own limit ends it, whenever that is);
* ``{"drop": true}``: close the connection without a response; with a reply, ``"drop_after": N``
  closes after N stream events;
* any reply may carry ``"delay": S`` (seconds between stream events: a slow stream) and
  ``"usage": {"input_tokens": N, "output_tokens": M}``.

A step with ``"times": N`` is served N times. Requests without tools (titles, classifiers, quota
probes) and the auxiliary endpoints (model lists, token counts) are answered with a canned reply,
except that while the current step is an error, they get that error too (an outage hits every call).
Every request is recorded (``Endpoint.requests``, and ``log`` as JSON lines) with its secrets masked.
``with endpoint.refusing():`` closes the listening socket (a client gets connection refused) and
listens again on the same port after the block.

    with Endpoint({'steps': [{'shell': 'touch x'}, {'text': 'done'}]}) as ep:
        run_cli(base_url=ep.url)
        assert [r['role'] for r in ep.requests] == ['turn', 'turn']

Command line: ``python -m tests.fakes.model_endpoint --scenario FILE --port N [--log FILE]``.
"""
from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from . import presets, wire

SHELL_TOOLS = {
    'Bash': lambda cmd: {'command': cmd, 'description': 'Run the command'},
    'shell': lambda cmd: {'command': ['bash', '-lc', cmd]},
    'shell_command': lambda cmd: {'command': cmd},
    'exec_command': lambda cmd: {'cmd': cmd},
    'run_shell_command': lambda cmd: {'command': cmd, 'description': 'Run the command'},
}
SECRET_HEADERS = ('authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'cookie')
_GEMINI = re.compile(r'/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$')


def load_scenario(path):
    """A scenario file: JSON, or YAML when PyYAML is importable. A bare list is the steps."""
    with open(path, 'r', encoding='utf-8') as handle:
        text = handle.read()
    try:
        data = json.loads(text)
    except ValueError:
        import yaml  # only for YAML scenario files
        data = yaml.safe_load(text)
    return {'steps': data} if isinstance(data, list) else data


def _expand(steps):
    out = []
    for step in steps:
        out.extend([step] * int(step.get('times', 1)))
    return out


def tool_names(protocol, body):
    """The names of the tools a request declares, in its protocol's shape."""
    names = []
    for tool in body.get('tools') or []:
        if not isinstance(tool, dict):
            continue
        if protocol == 'gemini':
            names.extend(d.get('name') for d in tool.get('functionDeclarations') or tool.get('function_declarations') or [])
        elif protocol == 'chat':
            names.append((tool.get('function') or {}).get('name'))
        else:
            names.append(tool.get('name') or tool.get('type'))
    return [n for n in names if n]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that hangs up (a CLI stopped or cancelling a retry) is not an error of the endpoint."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class Endpoint:
    """The server; ``start()`` returns the base URL (``http://127.0.0.1:PORT``), ``stop()`` ends it."""

    def __init__(self, scenario=None, host='127.0.0.1', port=0, log=None, clock=time.time):
        scenario = scenario or {}
        if isinstance(scenario, list):
            scenario = {'steps': scenario}
        self.steps = _expand(scenario.get('steps') or [{'text': 'done'}])
        self.model = scenario.get('model')
        self.host, self.port = host, port
        self.log_path = log
        self.clock = clock
        self.requests = []
        self.turns = 0
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server = None
        self._thread = None

    # --- lifecycle ---
    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    def start(self):
        handler = type('Handler', (_Handler,), {'endpoint': self})
        self._server = _Server((self.host, self.port), handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name='model-endpoint', daemon=True)
        self._thread.start()
        return self.url

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @contextlib.contextmanager
    def refusing(self):
        """Nothing listens on the port inside the block (connection refused); the same URL serves after it."""
        self.stop()
        try:
            yield self
        finally:
            self.start()

    def script(self, steps):
        """A new scenario from its first step (``release()`` undone)."""
        with self._lock:
            self.steps, self.turns = _expand(steps), 0
            self._released.clear()

    def release(self):
        """End every ``wait`` step now held, and let later ones return at once (``script`` clears it)."""
        self._released.set()

    def serve_forever(self):
        self.start()
        try:
            self._thread.join()
        finally:
            self.stop()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # --- the script ---
    def next_step(self, turn):
        """The step for a request: a turn takes the next one; an auxiliary call only peeks."""
        with self._lock:
            index = min(self.turns, len(self.steps) - 1)
            if turn:
                self.turns += 1
            return index, self.steps[index]

    def record(self, entry):
        with self._lock:
            self.requests.append(entry)
            if self.log_path:
                with open(self.log_path, 'a', encoding='utf-8') as handle:
                    handle.write(json.dumps(entry, sort_keys=True) + '\n')


class _Handler(BaseHTTPRequestHandler):
    endpoint = None  # set per server
    protocol_version = 'HTTP/1.1'
    server_version = 'scripted-model-endpoint/1'

    def log_message(self, *args):  # the record is ours, not stderr's
        pass

    # --- plumbing ---
    def _body(self):
        length = int(self.headers.get('content-length') or 0)
        raw = self.rfile.read(length) if length else b''
        try:
            return json.loads(raw.decode('utf-8')) if raw else {}
        except ValueError:
            return {'_raw': raw[:2000].decode('utf-8', 'replace')}

    def _send_json(self, status, body, headers=None):
        data = json.dumps(body).encode('utf-8')
        self.send_response(status)
        self.send_header('content-type', 'application/json')
        self.send_header('content-length', str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events, delay=0.0, drop_after=None, headers=None):
        self.send_response(200)
        self.send_header('content-type', 'text/event-stream')
        self.send_header('cache-control', 'no-cache')
        self.send_header('transfer-encoding', 'chunked')
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        for n, (name, data) in enumerate(events):
            if drop_after is not None and n >= drop_after:
                self._drop()
                return
            payload = data if isinstance(data, str) else json.dumps(data)
            frame = ('event: %s\n' % name if name else '') + 'data: %s\n\n' % payload
            raw = frame.encode('utf-8')
            self.wfile.write(b'%x\r\n%s\r\n' % (len(raw), raw))
            self.wfile.flush()
            if delay:
                time.sleep(delay)
        self.wfile.write(b'0\r\n\r\n')

    def _drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _entry(self, protocol, role, body, **extra):
        headers = {k.lower(): ('***' if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}
        query = urlsplit(self.path).query
        entry = {'t': round(self.endpoint.clock(), 3), 'method': self.command, 'path': urlsplit(self.path).path,
                 'query': re.sub(r'key=[^&]*', 'key=***', query), 'protocol': protocol, 'role': role,
                 'headers': headers, 'model': body.get('model') if isinstance(body, dict) else None,
                 'stream': bool(body.get('stream')) if isinstance(body, dict) else False}
        if isinstance(body, dict):
            entry['tools'] = tool_names(protocol, body)
        entry.update(extra)
        return entry

    # --- routing ---
    def do_GET(self):
        path = urlsplit(self.path).path
        if path.rstrip('/').endswith('/models'):
            protocol = self._protocol_of(path)
            self.endpoint.record(self._entry(protocol, 'aux', {}, status=200))
            return self._send_json(200, self._models(protocol))
        self.endpoint.record(self._entry(None, 'unknown', {}, status=404))
        return self._send_json(404, {'error': {'message': 'no route %s' % path, 'type': 'not_found'}})

    def do_POST(self):
        path = urlsplit(self.path).path
        body = self._body()
        gem = _GEMINI.search(path)
        if gem:
            method = gem.group('method')
            if method in ('generateContent', 'streamGenerateContent'):
                return self._model_call('gemini', body, stream=method == 'streamGenerateContent',
                                        model=gem.group('model'))
            if method == 'countTokens':
                return self._aux('gemini', body, {'totalTokens': 120})
            if method in ('embedContent', 'batchEmbedContents'):
                return self._aux('gemini', body, {'embedding': {'values': [0.0] * 8}})
        if path.endswith('/messages/count_tokens'):
            return self._aux('anthropic', body, {'input_tokens': 120})
        if path.endswith('/messages'):
            return self._model_call('anthropic', body, stream=bool(body.get('stream')))
        if path.endswith('/responses'):
            return self._model_call('responses', body, stream=body.get('stream', False) is not False)
        if path.endswith('/chat/completions'):
            return self._model_call('chat', body, stream=bool(body.get('stream')))
        self.endpoint.record(self._entry(None, 'unknown', body, status=404))
        return self._send_json(404, {'error': {'message': 'no route %s' % path, 'type': 'not_found'}})

    def _protocol_of(self, path):
        if 'v1beta' in path or 'v1alpha' in path:
            return 'gemini'
        if self.headers.get('anthropic-version') or self.headers.get('x-api-key'):
            return 'anthropic'
        return 'responses'

    def _models(self, protocol):
        model = self.endpoint.model
        if protocol == 'gemini':
            names = [model] if model else ['gemini-2.5-pro', 'gemini-2.5-flash']
            return {'models': [{'name': 'models/%s' % n, 'displayName': n, 'inputTokenLimit': 1048576,
                                'outputTokenLimit': 65536,
                                'supportedGenerationMethods': ['generateContent', 'countTokens']} for n in names]}
        if protocol == 'anthropic':
            names = [model] if model else ['claude-sonnet-4-5', 'claude-haiku-4-5']
            data = [{'type': 'model', 'id': n, 'display_name': n, 'created_at': '2025-01-01T00:00:00Z'} for n in names]
            return {'data': data, 'has_more': False, 'first_id': names[0], 'last_id': names[-1]}
        names = [model] if model else ['gpt-5', 'gpt-5-codex']
        return {'object': 'list', 'data': [{'id': n, 'object': 'model', 'created': 0, 'owned_by': 'fake'}
                                           for n in names]}

    def _aux(self, protocol, body, reply):
        _index, step = self.endpoint.next_step(turn=False)
        if 'error' in step and not step.get('in_stream'):
            status, ebody, headers = self._error(protocol, step['error'], body.get('model') if body else None)
            self.endpoint.record(self._entry(protocol, 'aux', body, status=status))
            return self._send_json(status, ebody, headers)
        self.endpoint.record(self._entry(protocol, 'aux', body, status=200))
        return self._send_json(200, reply)

    def _error(self, protocol, spec, model):
        if isinstance(spec, str):
            return presets.preset(protocol, spec, self.endpoint.clock(), model or 'gemini-2.5-pro')
        status = int(spec.get('status', 500))
        body = spec.get('body') or wire.error_body(
            protocol, status, spec.get('type'), spec.get('message'), spec.get('details'))
        return status, body, dict(spec.get('headers') or {})

    def _model_call(self, protocol, body, stream, model=None):
        model = model or body.get('model') or self.endpoint.model or 'model'
        tools = tool_names(protocol, body)
        turn = bool(tools)
        index, step = self.endpoint.next_step(turn=turn)
        role = 'turn' if turn else 'aux'
        if not turn and 'error' not in step and 'stall' not in step and not step.get('drop') and not step.get('wait'):
            step = {'text': 'ok'}
        if step.get('wait'):
            self.endpoint.record(self._entry(protocol, role, body, step=index, status=None, action='wait'))
            self._hold()
            return self._drop()
        if 'stall' in step:
            self.endpoint.record(self._entry(protocol, role, body, step=index, status=None, action='stall'))
            time.sleep(float(step['stall']))
            return self._drop()
        if step.get('drop') is True:
            self.endpoint.record(self._entry(protocol, role, body, step=index, status=None, action='drop'))
            return self._drop()
        if 'error' in step and not step.get('in_stream'):
            status, ebody, headers = self._error(protocol, step['error'], model)
            self.endpoint.record(self._entry(protocol, role, body, step=index, status=status, action='error'))
            return self._send_json(status, ebody, headers)
        self.endpoint.record(self._entry(protocol, role, body, step=index, status=200,
                                         action='error_in_stream' if 'error' in step else 'reply'))
        if 'error' in step:
            return self._stream_error(protocol, step['error'], model)
        tool = None
        if 'shell' in step:
            name = next((n for n in SHELL_TOOLS if n in tools), None)
            if name is None:
                raise RuntimeError('no shell tool among %s' % tools)
            tool = {'name': name, 'input': SHELL_TOOLS[name](step['shell'])}
        elif 'tool' in step:
            tool = step['tool']
        make = {'anthropic': wire.anthropic_reply, 'responses': wire.responses_reply, 'chat': wire.chat_reply,
                'gemini': wire.gemini_reply}[protocol]
        whole, events = make(model, step.get('text'), tool, step.get('usage'))
        if stream:
            return self._send_sse(events, float(step.get('delay', 0)), step.get('drop_after'))
        return self._send_json(200, whole)

    def _hold(self):
        """Until the client hangs up (its socket readable with nothing to read) or ``release()``."""
        while not self.endpoint._released.is_set():
            try:
                readable, _w, _x = select.select([self.connection], [], [], 0.2)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return
            except OSError:
                return

    def _stream_error(self, protocol, spec, model):
        status, ebody, _headers = self._error(protocol, spec, model)
        if protocol == 'anthropic':
            start = wire.anthropic_reply(model, 'x')[1][0]
            return self._send_sse([start, ('error', ebody)])
        if protocol == 'responses':
            err = ebody.get('error') or {}
            return self._send_sse(wire.responses_failed(model, err.get('code') or err.get('type'), err.get('message')))
        return self._send_sse([(None, ebody)])
