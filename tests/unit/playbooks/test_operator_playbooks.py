# -*- coding: utf-8 -*-
"""The operator's playbooks run as an operator runs them: explain (and the status page, metrics)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker

REPO = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent
HOSTILE = '<script>alert(1)</script> $(reboot) `id` & "q"'


def playbook(name, tmp_path, board, *extra):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / 'state'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    for var in ('ANSIBLE_CALLBACK_RESULT_FORMAT', 'ANSIBLE_STDOUT_CALLBACK', 'ANSIBLE_CONFIG'):
        env.pop(var, None)
    argv = [str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventory.example'), str(REPO / 'playbooks' / name),
            '-e', json.dumps({'dispatch_board': board})] + list(extra)
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=300)


@pytest.fixture
def board(tmp_path):
    # the markers below are written as fleet-bot: one of the fleet's identities, or explain lists no marker
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3'), 'marker_authors': ['fleet-bot']}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='blocker', status='Ready')
        b.upsert_item(number=2, title=HOSTILE, status='Backlog', blocked_by=[1])
        b.comment(2, format_marker('start', {'unit': 'task-2', 'host': 'w1', 'master': 'agent1'}), author='fleet-bot')
        b.comment(2, format_marker('capacity', {'unit': 'task-2', 'source': 'rate_limit'}), author='fleet-bot')
    return spec


def test_explain_prints_every_hold_marker_author_and_skipped_start(tmp_path, board):
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=2')
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert 'blocked: open blockers: #1' in out and "not_ready: its status is 'Backlog'" in out
    assert 'start by fleet-bot' in out and 'capacity by fleet-bot' in out
    assert 'skipped -- its run ended in a capacity marker' in out
    assert 'placement now: none -- not a candidate: blocked' in out


def test_explain_places_an_eligible_item_and_refuses_a_missing_one(tmp_path, board):
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=1')
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'holds: none' in res.stdout and 'placement now: ' in res.stdout
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=99')
    assert res.returncode != 0 and '#99 is not on the board' in res.stdout
    res = playbook('explain.yml', tmp_path, board)
    assert res.returncode != 0 and 'name the item to explain' in res.stdout


def test_explain_says_which_route_holds_an_item(tmp_path, board):
    """inventory.example provisions no agent profile (custom): an item asking for codex is held, and says so."""
    with open_board(board) as b:
        b.upsert_item(number=3, title='wants codex', status='Ready', agent='codex', model='gpt-5-codex', priority='P1')
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=3')
    assert res.returncode == 0, res.stdout + res.stderr
    assert "held: unroutable" in res.stdout
    assert "unroutable: it asks for the agent profile 'codex', and no configured master offers it (offered: custom)" in res.stdout
    assert 'route: agent codex, model gpt-5-codex' in res.stdout and 'priority: P1 (rank 1' in res.stdout


def test_explain_says_an_item_spent_its_item_budget_with_the_figures(tmp_path, board):
    """Two runs stated 5000 and 3000 tokens; with dispatch_item_budget_tokens=8000 the item is held (budget_spent)."""
    with open_board(board) as b:
        b.upsert_item(number=4, title='expensive', status='Ready')
        for tokens in (5000, 3000):
            b.comment(4, format_marker('start', {'unit': 'task-4'}), author='fleet-bot')
            b.comment(4, format_marker('budget', {'unit': 'task-4', 'tokens': tokens}), author='fleet-bot')
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=4', '-e', 'dispatch_item_budget_tokens=8000')
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'held: budget_spent' in res.stdout
    assert 'budget_spent: 8000 tokens over 2 run(s) reached its item budget of 8000 tokens' in res.stdout
    assert 'item budget 8000 tokens, left 0 tokens' in res.stdout
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=4', '-e', 'dispatch_item_budget_tokens=9000')
    assert res.returncode == 0 and 'holds: none' in res.stdout and 'left 1000 tokens' in res.stdout


@pytest.mark.parametrize('book', ['status.yml', 'sweep.yml'])
def test_status_and_sweep_write_the_page_and_the_metrics_beside_status_json(tmp_path, board, book):
    res = playbook(book, tmp_path, board)
    assert res.returncode == 0, res.stdout + res.stderr
    # the board's own state directory (<state>/fleet-dispatch/<board id>/, issue 18)
    state, = (tmp_path / 'state' / 'fleet-dispatch').glob('*/status.html')   # a sweep writes no status.json
    state = state.parent
    page = (state / 'status.html').read_text(encoding='utf-8')
    assert 'id="item-1"' in page and 'id="item-2"' in page
    assert '<script>' not in page and '&lt;script&gt;alert(1)&lt;/script&gt;' in page
    assert 'data-master="localhost/agent1"' in page and 'not probed' in page
    prom = (state / 'fleet-dispatch.prom').read_text(encoding='utf-8')
    assert 'fleet_dispatch_items{reason="blocked"} 1' in prom and 'fleet_dispatch_items{reason="eligible"} 1' in prom
    # the page's path is the last thing either says
    said = [line for line in res.stdout.splitlines() if '"msg"' in line]
    assert said and said[-1].strip().rstrip(',') == '"msg": "status page: %s"' % (state / 'status.html'), said[-3:]


def test_status_shows_spend_per_item_and_per_master_on_the_text_the_page_and_the_metrics(tmp_path, board):
    with open_board(board) as b:
        b.upsert_item(number=5, title='spent', status='Ready')
        b.comment(5, format_marker('start', {'unit': 'task-5', 'host': 'w7', 'master': 'agent1'}), author='fleet-bot')
        b.comment(5, format_marker('noop', {'unit': 'task-5', 'host': 'w7', 'master': 'agent1', 'tokens': 1200,
                                            'cost_usd': 0.3, 'account': 'acct-7'}), author='fleet-bot')
    res = playbook('status.yml', tmp_path, board, '-e', 'dispatch_item_budget_tokens=5000',
                   '-e', 'dispatch_account_budget_tokens=1000')
    assert res.returncode == 0, res.stdout + res.stderr
    assert '1200 tok, $0.3 / 5000 tok' in res.stdout          # the item, against its item budget
    assert 'w7/agent1' in res.stdout and 'master (as its runs name it)' in res.stdout
    # the account's day against its daily budget (the row is there whichever of the last seven UTC days it is)
    row = [line for line in res.stdout.splitlines() if 'acct-7' in line]
    assert len(row) == 1 and '1200 tok' in row[0] and '$0.3' in row[0] and '1000 tok' in row[0] and 'spent (tokens)' in row[0], row
    state, = (tmp_path / 'state' / 'fleet-dispatch').glob('*/status.html')
    page = state.read_text(encoding='utf-8')
    assert 'data-spend-master="w7/agent1"' in page and '1200 tok, $0.3 / 5000 tok' in page
    prom = (state.parent / 'fleet-dispatch.prom').read_text(encoding='utf-8')
    assert 'fleet_dispatch_item_spend_tokens{number="5",repo=""} 1200' in prom
    assert 'fleet_dispatch_master_spend_usd{host="w7",master="agent1"} 0.3' in prom
    assert 'fleet_dispatch_item_budget_tokens 5000' in prom


def test_stop_refuses_an_item_with_no_open_run_and_changes_nothing(tmp_path, board):
    with open_board(board) as b:
        before = [(c.body, c.author) for c in b.get(1).comments], b.get(1).status
    res = playbook('stop.yml', tmp_path, board, '-e', 'issue=1')
    assert res.returncode != 0 and '#1 has no open run to stop' in res.stdout and 'Nothing was changed' in res.stdout
    with open_board(board) as b:
        assert ([(c.body, c.author) for c in b.get(1).comments], b.get(1).status) == before
    res = playbook('stop.yml', tmp_path, board)
    assert res.returncode != 0 and 'name the item whose run to stop' in res.stdout


def test_stop_changes_nothing_when_no_inventory_worker_answers_as_the_runs_host(tmp_path, board):
    """The start marker names the worker's own host name; no inventory worker answers as it (the probe's
    hostname) nor runs the unit, so the stop refuses before it writes to the board."""
    with open_board(board) as b:
        b.upsert_item(number=3, title='running elsewhere', status='Ready')
        b.comment(3, format_marker('start', {'unit': 'task-3', 'host': 'nc-w9', 'master': 'agent1'}), author='fleet-bot')
        before = [(c.body, c.author) for c in b.get(3).comments], b.get(3).status
    res = playbook('stop.yml', tmp_path, board, '-e', 'issue=3')
    assert res.returncode != 0, res.stdout + res.stderr
    assert 'cannot reach the run of #3' in res.stdout and 'no inventory worker answers as nc-w9' in res.stdout, res.stdout
    assert 'Nothing was changed' in res.stdout
    with open_board(board) as b:
        assert ([(c.body, c.author) for c in b.get(3).comments], b.get(3).status) == before


def test_clear_capacity_needs_an_inventory_worker(tmp_path, board):
    res = playbook('clear_capacity.yml', tmp_path, board, '-e', 'worker=nowhere', '-e', 'master=agent1')
    assert res.returncode != 0 and 'name an inventory worker and its master' in res.stdout


@pytest.mark.parametrize('book', ['status.yml', 'sweep.yml'])
def test_a_cycle_that_probes_nothing_keeps_the_last_sweep_fleet_on_the_page(tmp_path, board, book):
    """status and a plan-mode sweep probe no master: the page shows the last probing sweep's record, dated,
    and they never overwrite it (fleet.json is written only by a cycle that probed)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import board_identity
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import board_id
    board_dir = tmp_path / 'state' / 'fleet-dispatch' / board_id(*board_identity(board))   # the board's own directory
    board_dir.mkdir(parents=True)
    record = {'at': '2026-11-30T12:00:00Z', 'masters': [
        {'worker': 'localhost', 'master': 'agent1', 'dark': True, 'source': 'rate_limit', 'reset_at': '2099-01-01T00:00:00Z',
         'why': 'limit', 'live_runs': 1, 'headroom': {}, 'probe': 'ok'}]}
    fleet_json = board_dir / 'fleet.json'
    fleet_json.write_text(json.dumps(record), encoding='utf-8')
    res = playbook(book, tmp_path, board)
    assert res.returncode == 0, res.stdout + res.stderr
    state, = (tmp_path / 'state' / 'fleet-dispatch').glob('*/status.html')
    assert state.parent == board_dir
    page = (state.parent / 'status.html').read_text(encoding='utf-8')
    assert 'class="master dark" data-master="localhost/agent1"' in page and '2099-01-01T00:00:00Z' in page
    assert 'not probed now; at 2026-11-30T12:00:00Z' in page
    if book == 'status.yml':   # status says the dark masters of the last sweep, with the source and the reset
        line, = [x for x in res.stdout.splitlines() if 'localhost/agent1' in x and 'dark: rate_limit' in x]
        assert 'until 2099-01-01T00:00:00Z' in line, line
    assert json.loads(fleet_json.read_text(encoding='utf-8')) == record
    prom = (state.parent / 'fleet-dispatch.prom').read_text(encoding='utf-8')
    assert 'fleet_dispatch_dark_masters{source="rate_limit"} 1' in prom and 'fleet_dispatch_live_runs{' not in prom


def test_explain_places_on_the_fleet_the_last_sweep_saw_and_names_a_spent_account(tmp_path, board):
    """fleet.json says localhost/agent1's account spent its daily budget until the next day: explain places nothing there."""
    state = tmp_path / 'board-dir'
    state.mkdir()
    why = 'the agent account spent its daily budget (budget): gets nothing until 2026-12-07T00:00:00Z, the next day'
    (state / 'fleet.json').write_text(json.dumps({'at': '2026-12-06T14:50:00Z', 'masters': [
        {'worker': 'localhost', 'master': 'agent1', 'dark': True, 'source': 'budget', 'reset_at': '2026-12-07T00:00:00Z',
         'why': why, 'headroom': {}, 'probe': 'ok'}]}), encoding='utf-8')
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_board_dir=%s' % state,
                   '-e', 'dispatch_now=2026-12-06T15:00:00Z')
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'localhost/agent1 %s (the sweep at 2026-12-06T14:50:00Z)' % why in res.stdout
    assert 'placement now: localhost/agent1' not in res.stdout
    # after the day boundary the same record darkens nothing: the clock cleared it
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_board_dir=%s' % state,
                   '-e', 'dispatch_now=2026-12-07T00:00:01Z')
    assert res.returncode == 0 and 'localhost/agent1 %s' % why not in res.stdout
    (state / 'fleet.json').write_text('{not json', encoding='utf-8')
    res = playbook('explain.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_board_dir=%s' % state)
    assert res.returncode == 0 and 'fleet_record is not JSON' in res.stdout + res.stderr
