# -*- coding: utf-8 -*-
"""Every dispatcher cycle leaves its record (D14), and the reaper in plan mode writes nothing (D5).

The real ``ansible-playbook`` on the working tree, as tests/unit/playbooks/test_playbooks.py runs it.
The reaper's resets on real hosts are in tests/integration/test_fault_matrix.py.
"""
from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import test_playbooks  # noqa: E402
from test_playbooks import playbook  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board  # noqa: E402


board = test_playbooks.board      # the shared board fixture, under its own name here


def _board_file(tmp_path, name):
    """The one file of that name in the board's own state directory (<state>/fleet-dispatch/<board id>/, issue 18)."""
    found = sorted((tmp_path / 'state' / 'fleet-dispatch').glob('*/' + name))
    assert len(found) == 1, 'expected one %s under one board directory, found %s' % (name, found)
    return found[0]


def record(tmp_path):
    return json.loads(_board_file(tmp_path, 'last_cycle.json').read_text())


def test_a_failed_apply_on_an_unreadable_board_records_the_failure_not_the_last_success(tmp_path, board):
    ok = playbook('sweep.yml', tmp_path, board)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    first = record(tmp_path)
    assert first['result'] == 'ok' and first['mode'] == 'plan' and first['dispatcher'] == 'sweep' and first['reason'] == ''
    # the SAME board becomes unreadable (its file replaced), so its record stays in its own directory
    ledger = pathlib.Path(board['path'])
    good = ledger.read_bytes()
    ledger.write_bytes(b'this is not an SQLite database' * 100)
    res = playbook('sweep.yml', tmp_path, board, '-e', 'dispatch_mode=apply')
    assert res.returncode != 0
    ledger.write_bytes(good)
    rec = record(tmp_path)
    assert rec['result'] == 'failed' and rec['mode'] == 'apply' and rec['launched'] == []
    assert rec['failed_task'].startswith('Read the board') and rec['reason'], rec
    assert rec['at'] >= first['at']
    # plan.json is this cycle's too: the failure, nothing placed - not the previous cycle's plan
    plan = json.loads(_board_file(tmp_path, 'plan.json').read_text())
    assert plan['failed'] is True and plan['mode'] == 'apply' and plan['assignments'] == [], plan
    assert plan['reason'] == rec['reason'] and plan['failed_task'] == rec['failed_task']
    status = playbook('status.yml', tmp_path, board)
    assert status.returncode == 0, status.stdout + status.stderr
    assert 'last cycle: failed at ' + rec['at'] in status.stdout
    assert json.loads(_board_file(tmp_path, 'status.json').read_text())['last_cycle']['result'] == 'failed'


def test_a_hand_dispatch_records_its_cycle_too(tmp_path, board):
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_mode=plan')
    assert res.returncode == 0, res.stdout + res.stderr
    rec = record(tmp_path)
    assert rec['result'] == 'ok' and rec['dispatcher'] == 'hand' and rec['issue'] == 1 and rec['candidates'] == [1]


def test_plan_mode_reports_the_reaper_and_a_blind_master_never_reaps(tmp_path, board):
    """Item 3's start is due with a zero floor; the example inventory's master does not exist here, so its
    probe fails: blind is unknown, and unknown never reaps. Plan mode writes nothing either way."""
    before = [len(open_board(board).get(n).comments) for n in (1, 2, 3, 4)]
    res = playbook('sweep.yml', tmp_path, board, '-e', 'dispatch_reap_floor=0')
    assert res.returncode == 0, res.stdout + res.stderr
    rec = record(tmp_path)
    # item 4's start/success pair is the board's one finished run; twice it beats a zero floor
    assert rec['reap_threshold']['runs'] == 1 and '2x the longest of 1 runs' in rec['reap_threshold']['source']
    assert [h['number'] for h in rec['reap_held']] == [3] and 'blind is not dead' in rec['reap_held'][0]['why']
    assert rec['reaped'] == [] and rec['reap_would'] == []
    # said in the reaper's one message of the cycle, not a task result per item
    said = res.stdout.split('Say what the reaper holds back and why, and what it would reset', 1)[1].split('TASK [', 1)[0]
    assert said.count('ok: [localhost]') == 1 and '#3 (task-3, started ' in said and 'blind is not dead' in said
    with open_board(board) as b:
        assert [len(b.get(n).comments) for n in (1, 2, 3, 4)] == before
