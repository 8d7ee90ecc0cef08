# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The laptop's dispatch (``playbooks/handoff.yml``) and status showing chains, through ansible-playbook.

handoff.yml closes the session with an any- handoff and starts nothing; status (with
``dispatch_chains_status``) then shows the chain and the handoff waiting for room.
"""
from __future__ import annotations

import json

from ansible_collections.fleet.dispatch.plugins.module_utils._store.sessions import SessionStore

from test_playbooks import board, playbook  # noqa: F401 - board is a fixture

BRIEF = {'asked': 'document it', 'done_when': 'merged', 'start_at': 'docs/', 'verify': 'read it', 'if_landed': 'stop'}


def test_handoff_then_status_shows_the_waiting_chain(tmp_path, board):  # noqa: F811
    ledger = {'path': board['path']}
    res = playbook('handoff.yml', tmp_path, board, '-e', json.dumps({'session': 'lap-7', 'successor': 'docs', 'brief': BRIEF,
                                                                       'handoff_ledger': ledger}))
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'with the handoff any-docs' in res.stdout and 'nothing was started here' in res.stdout
    with SessionStore(path=board['path']) as store:
        row = store.get('lap-7')
    assert (row['state'], row['handoff'], row['brief']) == ('closed', 'any-docs', BRIEF)
    again = playbook('handoff.yml', tmp_path, board, '-e', json.dumps({'session': 'lap-7', 'successor': 'docs', 'brief': BRIEF,
                                                                         'handoff_ledger': ledger}))
    assert again.returncode != 0 and 'already closed' in again.stdout
    status = playbook('status.yml', tmp_path, board, '-e', 'dispatch_chains_status=true')
    assert status.returncode == 0, status.stdout + status.stderr
    shown = status.stdout.split('Show the chains, one line per hop')[1].split('TASK [')[0]
    assert 'chain lap-7 hop 0: lap-7 (lap-7) on ' in shown and '-> handoff any-docs' in shown
    assert 'waiting: lap-7 -> any-docs since ' in shown
    chains = json.loads((tmp_path / 'state' / 'fleet-dispatch' / 'chains.json').read_text())
    assert chains['waiting'][0]['successor'] == 'any-docs'
