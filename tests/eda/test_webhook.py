# -*- coding: utf-8 -*-
"""Webhook dispatch with the real ansible-rulebook (issue 16).

ansible-rulebook (Drools on a Java runtime) runs extensions/eda/rulebooks/webhook_dispatch.yml on
loopback, with ansible-rulebook's own webhook source (``eda.builtin.webhook``, no collection needed)
verifying GitHub's HMAC-SHA256 signature (X-Hub-Signature-256). The test POSTs GitHub-shaped events to it and reads
what the hand dispatch playbook decided for each, on a ledger board of three items:

* a correctly signed ``issues opened`` for the eligible #1: exactly one hand dispatch, and it
  places #1 (plan mode: there is no worker here to launch on -- the launch itself, and the lease
  that makes an event and the timer racing on one item launch it once, are the shared path's,
  tested on real systemd hosts in tests/integration/test_dispatch_path.py);
* a correctly signed ``issue_comment created`` on the blocked #2: one hand dispatch, which
  refuses #2 with its reason, as the timer's sweep would (D15);
* #3 with a wrong signature (401), with no signature (400), and a signed event for a pull
  request comment (no rule): no dispatch of #3 at all;
* a trusted review asking for changes on o/r#9, the open pull request a run of #4 left: one hand dispatch,
  which places #4 (it continues that pull request); a stranger's review and an approval: none; a failing
  check suite on o/r#10, which no run left: one hand dispatch, which names no item and writes no plan;
* the secret is in no output and no file the runs leave.

Each hand dispatch writes its own plan file (dispatch_plan_json carries the item and a clock
reading), so the files count the runs.
"""
from __future__ import annotations

import datetime as _dt
import glob
import hashlib
import hmac
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
import requests

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from racing import free_port

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
SECRET = 'fleet-webhook-test-secret-%d' % os.getpid()


def java_home():
    for cand in [os.environ.get('JAVA_HOME', '')] + sorted(glob.glob('/usr/lib/jvm/java-*-openjdk-*')):
        if cand and os.access(os.path.join(cand, 'bin', 'java'), os.X_OK):
            return cand
    return None


def require(condition, why):
    if not condition:
        if os.environ.get('FLEET_REQUIRE_EDA') == '1':
            pytest.fail(why)
        pytest.skip(why)


def sign(body: bytes, secret: str = SECRET) -> str:
    return 'sha256=' + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(port, payload, event, signature='good'):
    body = json.dumps(payload).encode()
    headers = {'Content-Type': 'application/json', 'X-GitHub-Event': event,
               'X-GitHub-Delivery': str(uuid.uuid4())}   # GitHub's delivery ids are GUIDs
    if signature == 'good':
        headers['X-Hub-Signature-256'] = sign(body)
    elif signature == 'bad':
        headers['X-Hub-Signature-256'] = sign(body, 'not-the-secret')
    return requests.post('http://127.0.0.1:%d/github' % port, data=body, headers=headers, timeout=30)


def plans(state, number):
    return sorted(state.glob('plan-%s-*.json' % number))


def text_has(log, words):
    return words in log.read_text()


def wait_for(predicate, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.5)
    return predicate()


def start_rulebook(tmp_path, collections_path, secret):
    home = java_home()
    require(home is not None, 'no Java runtime (JAVA_HOME or /usr/lib/jvm): ansible-rulebook cannot run '
            '(tests/run eda installs openjdk-17-jre-headless as root)')
    require(shutil.which('ansible-rulebook', path=str(BIN)) is not None, 'ansible-rulebook is not installed in %s' % BIN)
    ledger = tmp_path / 'ledger.sqlite3'
    with open_board({'kind': 'ledger', 'path': str(ledger), 'create': True}) as board:
        board.upsert_item(number=1, title='eligible', status='Ready')
        board.upsert_item(number=2, title='blocked', status='Ready', blocked_by=[1])
        board.upsert_item(number=3, title='eligible, but only ever sent with a bad signature', status='Ready')
        # a run of #4 left the open pull request o/r#9 (the ref GitHub's events name) and ended a no-op
        past = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(hours=2)
        board.upsert_item(number=4, title='left a pull request open', status='Ready')
        board.comment(4, format_marker('start', {'unit': 'task-4'}), at=past)
        board.add_artifact('o/r#9', closes=[4], created_at=past + _dt.timedelta(minutes=10), head_ref='fleet/4',
                           head_sha='a' * 40, state='OPEN')
        board.comment(4, format_marker('noop', {'unit': 'task-4'}), at=past + _dt.timedelta(minutes=20))
        # the review the webhook event announces, as the forge holds it (else #4 is held awaiting_review)
        board.add_review('o/r#9', 'rename it', kind='review', author='maint', association='COLLABORATOR',
                         state='CHANGES_REQUESTED', at=past + _dt.timedelta(minutes=30))
    state = tmp_path / 'state'
    state.mkdir()
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'all': {
        'hosts': {'localhost': {
            'ansible_connection': 'local',
            'ansible_python_interpreter': str(BIN / 'python'),
            'dispatch_board': {'kind': 'ledger', 'path': str(ledger)},
            'dispatch_state_dir': str(state),
            # one plan file per run: the item (0: the sweep), then a clock reading (the files count the runs)
            'dispatch_plan_json': "%s/plan-{{ dispatch_issue | default(0) }}-{{ lookup('ansible.builtin.pipe', 'date +%%s%%N') }}.json" % state,
        }},
        'children': {'workers': {'hosts': {'localhost': {'worker_masters': [{'name': 'agent1'}]}}}},
    }}))
    port = free_port()
    variables = tmp_path / 'vars.yml'
    variables.write_text(json.dumps({'fleet_webhook_port': port, 'fleet_webhook_host': '127.0.0.1',
                                     'fleet_dispatch_mode': 'plan'}))
    env = dict(os.environ, JAVA_HOME=home, ANSIBLE_COLLECTIONS_PATH=collections_path,
               PATH='%s:%s' % (BIN, os.environ.get('PATH', '')), FLEET_WEBHOOK_SECRET=secret,
               ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', XDG_STATE_HOME=str(state))
    log = tmp_path / 'rulebook.log'
    with open(log, 'w') as out:
        proc = subprocess.Popen(
            [str(BIN / 'ansible-rulebook'), '-i', str(inventory), '--rulebook', 'fleet.dispatch.webhook_dispatch',
             '--vars', str(variables), '--env-vars', 'FLEET_WEBHOOK_SECRET', '-v'],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(tmp_path), start_new_session=True)
    return proc, port, state, log


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


LOG_LINE = re.compile(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ - ')


def played(text):
    """The playbooks' own output in ansible-rulebook's log: without the copy of a failed run's output that
    ansible-rulebook logs again under its ERROR line (that copy would count the run twice)."""
    kept, in_copy = [], False
    for line in text.splitlines():
        if LOG_LINE.match(line):
            in_copy = 'run_playbook - ERROR - ' in line
        elif not in_copy:
            kept.append(line)
    return '\n'.join(kept)


@pytest.fixture
def rulebook(tmp_path, collections_path):
    proc, port, state, log = start_rulebook(tmp_path, collections_path, SECRET)
    try:
        def listening():
            assert proc.poll() is None, 'ansible-rulebook exited (%s): %s' % (proc.returncode, log.read_text()[-3000:])
            try:
                socket.create_connection(('127.0.0.1', port), 1).close()
                return True
            except OSError:
                return False
        assert wait_for(listening, 120), 'the webhook never listened: ' + log.read_text()[-3000:]
        yield port, state, log
    finally:
        stop(proc)


def test_signed_events_dispatch_their_item_once_and_a_bad_signature_nothing(rulebook, tmp_path):
    port, state, log = rulebook
    opened = {'action': 'opened', 'issue': {'number': 1, 'title': 'eligible', 'state': 'open', 'author_association': 'OWNER'}}
    comment = {'action': 'created', 'issue': {'number': 2, 'state': 'open'},
               'comment': {'body': 'please', 'author_association': 'COLLABORATOR'}}
    third = {'action': 'opened', 'issue': {'number': 3, 'state': 'open', 'author_association': 'OWNER'}}
    pr_comment = {'action': 'created', 'issue': {'number': 3, 'pull_request': {'url': 'x'}},
                  'comment': {'body': 'lgtm', 'author_association': 'OWNER'}}
    # a stranger's events start nothing: a comment, an issue opened (the sweep still reads the item)
    stranger_comment = {'action': 'created', 'issue': {'number': 3, 'state': 'open'},
                        'comment': {'body': 'run it', 'author_association': 'NONE'}}
    stranger_opened = {'action': 'opened', 'issue': {'number': 3, 'state': 'open', 'author_association': 'CONTRIBUTOR'}}
    # an organization's member need not have write access: untrusted unless the operator opts in
    member_comment = {'action': 'created', 'issue': {'number': 3, 'state': 'open'},
                      'comment': {'body': 'run it', 'author_association': 'MEMBER'}}

    bad = post(port, third, 'issues', signature='bad')
    unsigned = post(port, third, 'issues', signature=None)
    assert (bad.status_code, bad.text) == (401, 'HMAC verification failed')
    assert unsigned.status_code == 400
    assert post(port, opened, 'issues').status_code == 200
    assert post(port, comment, 'issue_comment').status_code == 200
    assert post(port, pr_comment, 'issue_comment').status_code == 200
    assert post(port, stranger_comment, 'issue_comment').status_code == 200
    assert post(port, stranger_opened, 'issues').status_code == 200
    assert post(port, member_comment, 'issue_comment').status_code == 200
    # a burst on one item (each a new delivery) dispatches it once a minute, not once per event
    for _burst in range(3):
        assert post(port, comment, 'issue_comment').status_code == 200
    # a pull request's review or failing check dispatches the item whose next run continues it
    repo = {'full_name': 'o/r'}
    review = {'action': 'submitted', 'repository': repo, 'pull_request': {'number': 9, 'state': 'open'},
              'review': {'state': 'changes_requested', 'body': 'rename it', 'author_association': 'COLLABORATOR'}}
    stranger_review = dict(review, pull_request={'number': 10}, review=dict(review['review'], author_association='NONE'))
    approval = dict(review, pull_request={'number': 10}, review=dict(review['review'], state='approved'))
    suite = {'action': 'completed', 'repository': repo,
             'check_suite': {'conclusion': 'failure', 'head_sha': 'b' * 40, 'pull_requests': [{'number': 10}]}}
    assert post(port, review, 'pull_request_review').status_code == 200
    assert post(port, stranger_review, 'pull_request_review').status_code == 200
    assert post(port, approval, 'pull_request_review').status_code == 200
    assert post(port, suite, 'check_suite').status_code == 200

    assert wait_for(lambda: plans(state, 1) and plans(state, 2) and plans(state, 4)
                    and text_has(log, 'o/r#10: no item continues it'), 240), log.read_text()[-4000:]
    time.sleep(10)  # room for a duplicate run to show up
    text = log.read_text()
    assert len(plans(state, 1)) == 1, 'item 1 dispatched %d times: %s' % (len(plans(state, 1)), text[-4000:])
    assert len(plans(state, 2)) == 1
    assert plans(state, 3) == [] and plans(state, 0) == [], text[-4000:]
    assert len(plans(state, 4)) == 1
    four = json.loads(plans(state, 4)[0].read_text())
    assert [(a['number'], a['master']) for a in four['assignments']] == [(4, 'agent1')]
    one = json.loads(plans(state, 1)[0].read_text())
    assert [(a['number'], a['master']) for a in one['assignments']] == [(1, 'agent1')]
    two = json.loads(plans(state, 2)[0].read_text())
    assert two['assignments'] == []
    assert '#2 refused: blocked by #1' in text
    assert played(text).count('PLAY [Dispatch one item by hand]') == 4, text[-4000:]
    # each dispatch carried its delivery id, and marked it (a replay of it would be refused)
    assert len(list((state / 'deliveries').iterdir())) == 4
    # the secret: in no output, no file the runs left
    assert SECRET not in text
    for path in tmp_path.rglob('*'):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.parametrize('secret', ['', 'short-secret'])
def test_an_empty_or_short_secret_refuses_to_start(tmp_path, collections_path, secret):
    """An empty HMAC key signs every forged event: the rulebook names what is wrong and never listens."""
    proc, port, _state, log = start_rulebook(tmp_path, collections_path, secret)
    try:
        assert wait_for(lambda: proc.poll() is not None, 120), 'ansible-rulebook still runs: ' + log.read_text()[-3000:]
        text = log.read_text()
        assert proc.returncode != 0 and 'FLEET_WEBHOOK_SECRET_MUST_BE_AT_LEAST_16_CHARACTERS' in text, text[-3000:]
        with pytest.raises(OSError):
            socket.create_connection(('127.0.0.1', port), 1).close()
    finally:
        stop(proc)
