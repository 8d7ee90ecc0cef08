# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake agent CLI that behaves like a real one (``claude -p --output-format json``), for the runner's tests.

Run it as ``python3 fake_agent.py`` (no shebang: the sanity shebang rule, and a worker has no
``python``). Standalone (stdlib only; the ``merge`` modes import the collection's ledger board from
``PYTHONPATH``, as the runner itself does), so it can be copied to a test-bed worker as one file.

Behaviour, chosen per test by ``--mode`` or ``FAKE_AGENT_MODE``, or per item by ``--modes``
(``1=merge,5=claim``: the mode of the item ``FLEET_ITEM``; an item not listed takes ``--mode``):

=========  ================================================================================
mode       what a real agent CLI would do
=========  ================================================================================
merge      reach the model, "merge" a change that closes the item (a merged artifact on the
           ledger board), print the success envelope on stdout, exit 0
claim      print a success envelope claiming the work is done, merge NOTHING, exit 0 (D2); with
           ``FAKE_AGENT_TRAILER`` that text follows on stderr (a trailing limit notice, D8)
die503     die before the first request: a 503 on stderr, NO envelope, exit 1 (D7 retry case)
ratelimit  hit a provider usage limit with a stated reset time (``FAKE_AGENT_RESET``, default
           ``2099-01-01T00:00:00Z``): an error envelope with zero turns, exit 1 (D8)
revoked    the entitlement is revoked: a 403 body on stderr, no envelope, exit 1 (D8, D20)
hang       print a little, then sleep until killed (writes its pid to ``FAKE_AGENT_PIDFILE``)
noisy      like ``merge``, but the envelope is buried in stderr noise full of stray braces and
           a JSON API error body (D7: the capture merges stderr)
fail       reach the model, work for some turns, fail: an error envelope, exit 1
replay     print the file ``FAKE_AGENT_REPLAY`` (a real captured output, e.g. a corpus sample's
           text) on stdout, exit ``FAKE_AGENT_EXIT`` (default 0); with ``FAKE_AGENT_REPLAY_MERGE=1``
           "merge" a change that closes the item first, as ``merge`` does
spend      stream usage as ``claude -p --output-format stream-json --verbose`` does: an init line, then
           ``FAKE_AGENT_EVENTS`` (default 5) model responses of 100 input + 50 output tokens, each as two
           ``assistant`` lines (a text and a tool_use block) carrying the response's usage, then the
           ``result`` line with the totals and ``total_cost_usd`` (0.01 a response), exit 0 (merges
           nothing); with ``FAKE_AGENT_HANG_AFTER=N`` it sleeps until killed after response N instead
           (a run that would go on spending); its pid in ``FAKE_AGENT_PIDFILE`` before the first line
push       the pull-request loop: when the brief continues an open pull request (``PULL REQUEST <ref> is
           open``), "push" a new head to it (its ``head_sha`` on the ledger board moves); otherwise open one
           that closes the item (``fake-pr/<item>/<hex>``, branch ``fleet/<item>``, OPEN, not merged). Merges
           nothing (a reviewer or the test merges; result.json says blocked), prints a success envelope, exit 0
=========  ================================================================================

What it reads: the brief on stdin (the runner's default) or from ``FLEET_BRIEF_FILE``; the item
from ``FLEET_ITEM``; the board for ``merge``/``noisy`` from ``FAKE_AGENT_BOARD`` (a JSON spec) or
the file ``FAKE_AGENT_BOARD_FILE`` (default ``~/.config/fleet-dispatch/board.json``, the runner's spec
without its secrets), with the PostgreSQL DSN from ``FAKE_FORGE_DSN`` when the spec names none. In
those modes the fake plays the FORGE (a merge), and a forge's credential is the agent's own (D18: the
merge identity is a credential decision): ``FAKE_FORGE_DSN`` comes from the agent credentials file
(``worker_agent_credentials``), never from the runner's ``credentials.env`` (hidden from the run unit,
``worker_sandbox_hide``) nor from its ``FLEET_BOARD_DSN`` (the runner keeps that to itself, issue 14).
What it writes: ``FLEET_OUTPUT_DIR/result.json`` (structured output, D17) and, when
``FAKE_AGENT_LOG`` is set, one JSON line per invocation (mode, argv, brief, FLEET_* env) so a test
can check what the runner handed over.
Session chains (seed 003): when the brief holds ``chain:<topic>:<n>`` with n > 0, the agent hands
off as a real one would: ``FLEET_OUTPUT_DIR/handoff.json`` names the successor ``<topic>``
(untagged: it follows this host) with a brief holding ``chain:<topic>:<n-1>``.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
import uuid

FORGE_DSN_ENV = 'FAKE_FORGE_DSN'
"""The fake forge's own ledger DSN (its merge identity, D18): from the agent credentials file only."""

MODES = ('merge', 'claim', 'die503', 'ratelimit', 'revoked', 'hang', 'noisy', 'fail', 'replay', 'spend', 'push')


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _read_brief():
    path = os.environ.get('FLEET_BRIEF_FILE')
    data = ''
    if not sys.stdin.isatty():
        try:
            data = sys.stdin.read()
        except (OSError, ValueError):
            data = ''
    if not data and path and os.path.exists(path):
        with open(path, encoding='utf-8') as handle:
            data = handle.read()
    return data


def _log(mode, brief):
    path = os.environ.get('FAKE_AGENT_LOG')
    if not path:
        return
    entry = {'mode': mode, 'argv': sys.argv, 'brief': brief, 'pid': os.getpid(), 'at': _now().isoformat(),
             'env': dict((k, v) for k, v in os.environ.items() if k.startswith('FLEET_'))}
    with open(path, 'a', encoding='utf-8') as handle:
        handle.write(json.dumps(entry) + '\n')


def _board_spec():
    text = os.environ.get('FAKE_AGENT_BOARD')
    if not text:
        path = os.environ.get('FAKE_AGENT_BOARD_FILE') or os.path.expanduser('~/.config/fleet-dispatch/board.json')
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
    spec = json.loads(text)
    if not isinstance(spec, dict):
        raise SystemExit('fake agent: the board spec is not a JSON object')
    # The fake plays the FORGE here (its merge), not an agent: its DSN is its own credential (FAKE_FORGE_DSN,
    # from the agent credentials file), never the runner's (FLEET_BOARD_DSN, credentials.env: issue 14).
    if spec.get('kind') == 'ledger' and not spec.get('path') and not spec.get('dsn'):
        dsn = os.environ.get(FORGE_DSN_ENV)
        if not dsn:
            raise SystemExit('fake agent: the board spec names no ledger path or DSN and %s is not set: as the forge '
                             'the fake needs its own credential; give it in worker_agent_credentials '
                             '(%s: the ledger DSN), not in worker_credentials' % (FORGE_DSN_ENV, FORGE_DSN_ENV))
        spec['dsn'] = dsn
    return spec


def _open_board():
    try:
        from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
    except ImportError:
        # the runner starts Python isolated and hands the agent no PYTHONPATH: as the forge, the fake finds the
        # collection where the worker role puts the runner's code (or FAKE_AGENT_COLLECTIONS)
        roots = [p for p in os.environ.get('FAKE_AGENT_COLLECTIONS', '').split(os.pathsep) if p]
        roots += ['/usr/local/lib/fleet-dispatch/runner', os.path.expanduser('~/.local/lib/fleet-dispatch/runner'),
                  os.path.expanduser('~/.local/share/fleet-dispatch/runner')]
        sys.path[:0] = [r for r in roots if os.path.isdir(os.path.join(r, 'ansible_collections'))]
        from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
    return open_board(_board_spec())


def _merge(item):
    """Record a merged change closing ``item`` on the ledger, the way a forge merge would (D2)."""
    board = _open_board()
    try:
        ref = 'fake-pr/%s/%s' % (item, uuid.uuid4().hex[:8])
        board.add_artifact(ref, merged=True, closes=[int(item)], title='Fix item %s' % item)
    finally:
        board.close()
    return ref


def _push(item, brief):
    """Push to the pull request the brief continues (a new head on the ledger), or open one closing ``item``."""
    import re
    match = re.search(r'PULL REQUEST (\S+) is open and not merged', brief or '')
    head = uuid.uuid4().hex + uuid.uuid4().hex[:8]
    board = _open_board()
    try:
        if match:
            ref = match.group(1)
            board.add_artifact(ref, head_sha=head)
            return ref, 'pushed %s to %s' % (head[:12], ref)
        ref = 'fake-pr/%s/%s' % (item, uuid.uuid4().hex[:8])
        board.add_artifact(ref, created_at=_now(), closes=[int(item)], title='Fix item %s' % item,
                           head_ref='fleet/%s' % item, head_sha=head, state='OPEN')
        return ref, 'opened %s (head %s); it closes the item once merged' % (ref, head[:12])
    finally:
        board.close()


def _write_result(payload):
    out = os.environ.get('FLEET_OUTPUT_DIR')
    if out and os.path.isdir(out):
        with open(os.path.join(out, 'result.json'), 'w', encoding='utf-8') as handle:
            json.dump(payload, handle)


def _hand_off(brief):
    import re
    match = re.search(r'chain:([A-Za-z0-9][A-Za-z0-9._-]*):(\d+)', brief or '')
    out = os.environ.get('FLEET_OUTPUT_DIR')
    if not match or int(match.group(2)) < 1 or not out or not os.path.isdir(out):
        return
    topic, left = match.group(1), int(match.group(2)) - 1
    text = 'continue chain:%s:%d' % (topic, left)
    with open(os.path.join(out, 'handoff.json'), 'w', encoding='utf-8') as handle:
        brief = {'asked': text, 'done_when': 'n reaches 0', 'start_at': 'here', 'verify': 'count the hops', 'if_landed': 'stop'}
        json.dump({'successor': topic, 'brief': brief}, handle)


def _envelope(subtype='success', is_error=False, turns=7, result=''):
    return json.dumps({'type': 'result', 'subtype': subtype, 'is_error': is_error, 'num_turns': turns,
                       'duration_ms': 1234, 'result': result, 'session_id': uuid.uuid4().hex})


def _spend(out):
    """Claude Code's stream-json lines (the shape of tests/corpus captures), usage as it streams."""
    pidfile = os.environ.get('FAKE_AGENT_PIDFILE')
    if pidfile:   # first: the runner may stop it at any line below
        with open(pidfile, 'w', encoding='utf-8') as handle:
            handle.write('%d\n' % os.getpid())
    session = uuid.uuid4().hex
    events = int(os.environ.get('FAKE_AGENT_EVENTS', '5'))
    hang_after = int(os.environ.get('FAKE_AGENT_HANG_AFTER', '0') or 0)
    out.write(json.dumps({'type': 'system', 'subtype': 'init', 'session_id': session, 'model': 'claude-sonnet-4-5'}) + '\n')
    for n in range(1, events + 1):
        usage = {'input_tokens': 100, 'cache_creation_input_tokens': 0, 'cache_read_input_tokens': 0, 'output_tokens': 50,
                 'service_tier': 'standard'}
        blocks = [{'type': 'text', 'text': 'step %d' % n},
                  {'type': 'tool_use', 'id': 'toolu_%d' % n, 'name': 'Bash', 'input': {'command': 'true'}}]
        for block in blocks:   # one line per content block, each with the response's usage
            message = {'model': 'claude-sonnet-4-5', 'id': 'msg_%d' % n, 'type': 'message', 'role': 'assistant',
                       'content': [block], 'stop_reason': None, 'usage': usage}
            out.write(json.dumps({'type': 'assistant', 'message': message, 'parent_tool_use_id': None,
                                  'session_id': session}) + '\n')
        out.flush()
        if n == hang_after:
            while True:
                time.sleep(3600)
    out.write(json.dumps({'type': 'result', 'subtype': 'success', 'is_error': False, 'num_turns': events, 'result': 'done',
                          'session_id': session, 'total_cost_usd': round(0.01 * events, 6),
                          'usage': {'input_tokens': 100 * events, 'output_tokens': 50 * events}}) + '\n')
    return 0


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    mode = os.environ.get('FAKE_AGENT_MODE', '')
    if '--mode' in args:
        mode = args[args.index('--mode') + 1]
    if '--modes' in args:     # one agent command for a master, a mode per item (make demo)
        chosen = dict(pair.split('=', 1) for pair in args[args.index('--modes') + 1].split(',') if '=' in pair)
        mode = chosen.get(os.environ.get('FLEET_ITEM', ''), mode)
    if mode not in MODES:
        sys.stderr.write('fake agent: unknown mode %r (one of %s)\n' % (mode, ', '.join(MODES)))
        return 64
    brief = _read_brief()
    _log(mode, brief)
    _hand_off(brief)
    item = os.environ.get('FLEET_ITEM', '0')
    err, out = sys.stderr, sys.stdout

    if mode == 'replay':
        if os.environ.get('FAKE_AGENT_REPLAY_MERGE') == '1':
            _merge(item)
        with open(os.environ['FAKE_AGENT_REPLAY'], 'r', encoding='utf-8') as handle:
            out.write(handle.read())
        return int(os.environ.get('FAKE_AGENT_EXIT', '0'))
    if mode == 'spend':
        return _spend(out)
    if mode == 'push':
        ref, what = _push(item, brief)
        _write_result({'status': 'blocked', 'pull_request': ref, 'evidence': [{'command': 'git push', 'output': what}]})
        out.write(_envelope(result=what[0].upper() + what[1:] + '.') + '\n')
        return 0
    if mode == 'die503':
        err.write('Retrying request to /v1/messages in 0.8 seconds\n')
        err.write('API Error: 503 {"type":"error","error":{"type":"api_error","message":"Service Unavailable"}}\n')
        return 1
    if mode == 'revoked':
        err.write('API Error: 403 {"type":"error","error":{"type":"permission_error",'
                  '"message":"Your API key has been revoked. Contact your administrator."}}\n')
        return 1
    if mode == 'ratelimit':
        reset = os.environ.get('FAKE_AGENT_RESET', '2099-01-01T00:00:00Z')
        out.write(_envelope(is_error=True, turns=0, result='Claude AI usage limit reached. Your limit will reset at %s.' % reset) + '\n')
        return 1
    if mode == 'hang':
        pidfile = os.environ.get('FAKE_AGENT_PIDFILE')
        if pidfile:
            with open(pidfile, 'w', encoding='utf-8') as handle:
                handle.write('%d\n' % os.getpid())
        err.write('thinking...\n')
        err.flush()
        while True:
            time.sleep(3600)
    if mode == 'fail':
        err.write('tool error: the test suite does not build\n')
        out.write(_envelope(subtype='error_during_execution', is_error=True, turns=5, result='could not make the build pass') + '\n')
        return 1
    if mode == 'claim':
        _write_result({'status': 'merged', 'pull_request': None, 'evidence': []})
        out.write(_envelope(result='All done! The change is merged (it is not).') + '\n')
        if os.environ.get('FAKE_AGENT_TRAILER'):   # a notice printed after the envelope, exit still 0 (D8)
            out.flush()   # after it in the capture too (the order held only under an inherited PYTHONUNBUFFERED=1)
            err.write(os.environ['FAKE_AGENT_TRAILER'] + '\n')
        return 0
    # merge / noisy
    ref = _merge(item)
    _write_result({'status': 'merged', 'pull_request': ref, 'evidence': [{'command': 'true', 'output': ''}]})
    envelope = _envelope(result='Merged %s; it closes the item.' % ref)
    if mode == 'noisy':
        err.write('[debug] {not json at all\n')
        err.write('API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}} (retried, ok)\n')
        err.write('{"type":"assistant","message":{"content":"I hit a usage limit earlier? no."}}\n')
        err.write('progress {{ 3/7 }} ' + envelope + ' trailing {garbage\n')
        err.write('[debug] } closing brace noise {\n')
        return 0
    out.write(envelope + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
