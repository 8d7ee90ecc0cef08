# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The laptop's dispatch (``playbooks/handoff.yml``) and status showing chains, through ansible-playbook.

handoff.yml closes the session with its handoff and starts nothing: with chain_dispatch_by_default an
untagged successor is recorded as any-, an addressed one as written; status (with
``dispatch_chains_status``) then shows the chain and the handoff waiting for room.
"""
from __future__ import annotations

import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sessions import SessionStore

from test_playbooks import playbook

BRIEF = {'asked': 'document it', 'done_when': 'merged', 'start_at': 'docs/', 'verify': 'read it', 'if_landed': 'stop'}


@pytest.fixture
def board(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='free', status='Ready')
    return spec


def test_handoff_then_status_shows_the_waiting_chain(tmp_path, board):
    ledger = {'path': board['path']}
    args = json.dumps({'session': 'lap-7', 'successor': 'docs', 'brief': BRIEF, 'handoff_ledger': ledger,
                       'chain_dispatch_by_default': True})
    res = playbook('handoff.yml', tmp_path, board, '-e', args)
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'with the handoff any-docs' in res.stdout and 'nothing was started here' in res.stdout
    with SessionStore(path=board['path']) as store:
        row = store.get('lap-7')
    assert (row['state'], row['handoff'], row['brief']) == ('closed', 'any-docs', BRIEF)
    again = playbook('handoff.yml', tmp_path, board, '-e', args)
    assert again.returncode != 0 and 'already closed' in again.stdout
    addressed = json.dumps({'session': 'lap-8', 'successor': 'dsp@ch-w1', 'brief': BRIEF, 'handoff_ledger': ledger,
                            'chain_dispatch_by_default': True})
    res = playbook('handoff.yml', tmp_path, board, '-e', addressed)
    assert res.returncode == 0 and 'with the handoff dsp@ch-w1: the chain runners of ch-w1 start it' in res.stdout, res.stdout
    with SessionStore(path=board['path']) as store:
        assert store.get('lap-8')['handoff'] == 'dsp@ch-w1', 'addressed: recorded as written, never any-'
    status = playbook('status.yml', tmp_path, board, '-e', 'dispatch_chains_status=true')
    assert status.returncode == 0, status.stdout + status.stderr
    shown = status.stdout.split('Show the chains, one line per hop')[1].split('TASK [')[0]
    assert 'chain lap-7 hop 0: lap-7 (lap-7) on ' in shown and '-> handoff any-docs' in shown
    assert 'waiting: lap-7 -> any-docs since ' in shown
    written, = (tmp_path / 'state' / 'fleet-dispatch').glob('*/chains.json')    # beside status.json, in the board's directory
    chains = json.loads(written.read_text())
    assert sorted(w['successor'] for w in chains['waiting']) == ['any-docs', 'dsp@ch-w1']
