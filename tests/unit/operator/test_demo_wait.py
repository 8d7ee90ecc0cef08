# -*- coding: utf-8 -*-
"""``demo/wait.py`` (make demo's follower of the runs) on a real SQLite ledger, and the fake agent's
``--modes`` (one agent command for a master, a mode per item).

The follower's rule: a start marker after ``--since`` is a live run; the first other marker after
that start is its close-out; it ends when every such run has closed out (with ``--items``, once
each of those items has had one).
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time

REPO = pathlib.Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location('demo_wait', str(REPO / 'demo' / 'wait.py'))
wait = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(wait)
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'


def _board(tmp_path):
    board = LedgerBoard(path=str(tmp_path / 'ledger.sqlite3'), create=True)
    for number in (1, 2, 3, 4):
        board.upsert_item(number=number, title='item %d' % number, status='Ready')
    return board


def test_a_start_after_since_is_live_until_its_close_out(tmp_path):
    board = _board(tmp_path)
    try:
        board.post_marker(1, format_marker('start', {'unit': 'task-1'}), at='2026-12-01T09:00:00Z')   # before: not this demo's
        board.post_marker(1, format_marker('failure', {'unit': 'task-1'}), at='2026-12-01T09:01:00Z')
        board.post_marker(2, format_marker('start', {'unit': 'task-2'}), at='2026-12-01T10:00:05Z')
        board.post_marker(3, format_marker('start', {'unit': 'task-3'}), at='2026-12-01T10:00:06Z')
        board.post_marker(3, format_marker('retry', {'unit': 'task-3', 'not_before': '2026-12-01T10:30:00Z'}),
                          at='2026-12-01T10:00:09Z')
        board.post_marker(4, format_marker('start', {'unit': 'task-4'}), at='2026-12-01T10:00:07Z')
        board.post_marker(4, format_marker('capacity', {'unit': 'task-4', 'source': 'rate_limit', 'reset_at': '2026-12-01T12:00:00Z'}),
                          at='2026-12-01T10:00:08Z')
        runs = wait._runs(board.read().items, parse_time('2026-12-01T10:00:00Z'))
    finally:
        board.close()
    assert sorted(runs) == [2, 3, 4]
    assert wait._describe(2, runs[2]) == 'task-2 (item 2) is live'
    assert wait._describe(3, runs[3]) == ('task-3 (item 3) closed out: \U0001f501 retry, eligible again at 2026-12-01T10:30:00Z; '
                                          'the item is open')
    assert 'the master is dark (rate_limit until 2026-12-01T12:00:00Z)' in wait._describe(4, runs[4])


def test_with_items_it_waits_for_a_run_not_started_yet(tmp_path, monkeypatch, capsys):
    # the sweep launches one run after another: an early read sees #2 closed and #3 not started yet
    board = _board(tmp_path)
    try:
        board.post_marker(2, format_marker('start', {'unit': 'task-2'}), at='2026-12-01T10:00:05Z')
        board.post_marker(2, format_marker('noop', {'unit': 'task-2'}), at='2026-12-01T10:00:06Z')
    finally:
        board.close()
    monkeypatch.setenv('FLEET_DEMO_BOARD', json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}))
    polls = []

    def start_three_later(_seconds):      # the second poll's read finds #3 started and closed out
        polls.append(_seconds)
        if len(polls) == 1:
            late = LedgerBoard(path=str(tmp_path / 'ledger.sqlite3'))
            try:
                late.post_marker(3, format_marker('start', {'unit': 'task-3'}), at='2026-12-01T10:00:09Z')
                late.post_marker(3, format_marker('success', {'unit': 'task-3'}), at='2026-12-01T10:00:10Z')
            finally:
                late.close()
    monkeypatch.setattr(wait.time, 'sleep', start_three_later)
    assert wait.main(['--since', '2026-12-01T10:00:00Z', '--items', '2,3', '--poll', '0']) == 0
    assert len(polls) == 1, polls
    assert 'every run the sweep launched has closed out: #2 noop, #3 success' in capsys.readouterr().out
    # an expected item that never starts: the wait ends at its timeout, naming it
    monkeypatch.setattr(wait.time, 'sleep', lambda _s: None)
    assert wait.main(['--since', '2026-12-01T10:00:09Z', '--items', '3,4', '--poll', '0', '--timeout', '0']) == 1
    assert 'not started: #4' in capsys.readouterr().err


def test_the_summary_names_the_dark_master_and_its_reset(tmp_path, capsys):
    plan = {'items': [{'number': 1, 'title': 'Write the importer', 'state': 'closed', 'status': 'Ready', 'reason': 'done',
                       'last_marker': {'kind': 'success', 'fields': {'host': 'fleet-demo'}}},
                      {'number': 2, 'title': 'Document it', 'state': 'open', 'status': 'Backlog', 'reason': 'not_ready',
                       'last_marker': None}],
            'unplaced': [{'number': 4, 'why': 'every master is dark'}],
            'masters': [{'worker': 'fleet-demo', 'master': 'fleet1', 'dark': True, 'source': 'rate_limit',
                         'reset_at': '2026-12-01T12:00:00Z'}]}
    (tmp_path / 'plan.json').write_text(json.dumps(plan))
    assert wait.main(['--summary', str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert 'item #1 Write the importer' in out and '\u2705 success' in out and 'item #2' not in out
    # a sweep's plan names the board table its read wrote instead of carrying the items
    (tmp_path / 'board_table.json').write_text(json.dumps({'now': 'x', 'items': plan.pop('items')}))
    (tmp_path / 'plan.json').write_text(json.dumps(dict(plan, table=str(tmp_path / 'board_table.json'))))
    assert wait.main(['--summary', str(tmp_path)]) == 0
    assert out == capsys.readouterr().out
    assert 'held: #4 every master is dark' in out
    assert 'master fleet-demo/fleet1: dark (rate_limit) until 2026-12-01T12:00:00Z' in out


def test_the_fake_agent_takes_each_items_mode_from_modes(tmp_path):
    outcomes = {}
    for item in ('5', '10', '7'):
        env = dict(os.environ, FLEET_ITEM=item, FLEET_OUTPUT_DIR=str(tmp_path))
        env.pop('FAKE_AGENT_MODE', None)
        proc = subprocess.run([sys.executable, str(FAKE_AGENT), '--mode', 'fail', '--modes', '5=claim,10=die503'],
                              input='the brief', capture_output=True, text=True, env=env, timeout=60, check=False)
        outcomes[item] = (proc.returncode, proc.stdout + proc.stderr)
    assert outcomes['5'][0] == 0 and 'All done!' in outcomes['5'][1]            # claim
    assert outcomes['10'][0] == 1 and 'API Error: 503' in outcomes['10'][1]     # die503
    assert outcomes['7'][0] == 1 and 'could not make the build pass' in outcomes['7'][1]   # not listed: --mode
