# -*- coding: utf-8 -*-
"""Following a run from the controller, the parts that need no worker: ``dispatch.yml -e wait=true``'s
wait (roles/dispatch tasks/wait.yml) against a real SQLite ledger, and ``logs.yml``'s answer when no
master has the run. The wait and the tail on real units are in tests/integration/test_first_fleet.py."""
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

WAIT_PLAY = '''
- name: The wait of a hand dispatch, after a dispatch whose board read was at NOW
  hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Stand in for the dispatch's own board read and its confirmed launch
      ansible.builtin.set_fact:
        _dispatch_board: {now: "{{ since }}", board_time: "{{ board_time | default(none) }}"}
        _dispatch_confirmed: {launched: "{{ confirmed | default([]) }}"}
    - name: Wait
      ansible.builtin.include_role:
        name: fleet.dispatch.dispatch
        tasks_from: wait
'''


def _env(tmp_path):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / 'state'), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    for var in ('ANSIBLE_CALLBACK_RESULT_FORMAT', 'ANSIBLE_STDOUT_CALLBACK', 'ANSIBLE_CONFIG'):
        env.pop(var, None)
    return env


@pytest.fixture
def board(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=3, title='running', status='Ready')
        b.comment(3, format_marker('start', {'unit': 'task-3'}))
        b.upsert_item(number=4, title='finished', status='Ready')
        b.comment(4, format_marker('start', {'unit': 'task-4'}))
        b.comment(4, format_marker('success', {'unit': 'task-4'}))
        b.upsert_item(number=5, title='finished by run r2', status='Ready')
        b.comment(5, format_marker('start', {'unit': 'task-5', 'run': 'r2'}))
        b.comment(5, format_marker('noop', {'unit': 'task-5', 'run': 'r2'}))
    return spec


def _wait(tmp_path, board, issue, since, *extra, confirmed=None, board_time=None):
    play = tmp_path / 'wait.yml'
    play.write_text(WAIT_PLAY)
    argv = [str(BIN / 'ansible-playbook'), '-i', 'localhost,', '-c', 'local', str(play), '-e',
            json.dumps({'dispatch_board': board, 'dispatch_issue': issue, 'since': since, 'confirmed': confirmed or [],
                        'board_time': board_time})] + list(extra)
    return subprocess.run(argv, env=_env(tmp_path), capture_output=True, text=True, check=False, timeout=300)


def test_the_wait_prints_the_close_out_newer_than_the_dispatch(tmp_path, board):
    proc = _wait(tmp_path, board, 4, '2000-01-01T00:00:00.000000Z')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'item 4 closed out: success' in proc.stdout


def test_the_wait_ends_failed_at_its_bound_while_only_the_start_marker_is_there(tmp_path, board):
    proc = _wait(tmp_path, board, 3, '2000-01-01T00:00:00.000000Z', '-e', 'dispatch_wait_timeout=2', '-e', 'dispatch_wait_delay=1')
    assert proc.returncode != 0
    assert 'item 3 has no close-out after 2 s' in proc.stdout and 'fleet.dispatch.logs -e issue=3 -e follow=true' in proc.stdout
    assert 'retries left' in proc.stdout   # the progress while waiting


def test_a_close_out_older_than_the_dispatch_is_not_this_runs(tmp_path, board):
    proc = _wait(tmp_path, board, 4, '2999-01-01T00:00:00.000000Z', '-e', 'dispatch_wait_timeout=1', '-e', 'dispatch_wait_delay=1')
    assert proc.returncode != 0 and 'item 4 has no close-out' in proc.stdout


def test_an_unconfirmed_run_is_waited_for_on_the_board_s_clock_not_the_controller_s(tmp_path, board):
    """The controller's clock is far ahead of the board's: the close-out is newer than the dispatch's read by the
    board's clock (board_time), older by the controller's. The wait reads it on the board's clock."""
    proc = _wait(tmp_path, board, 4, '2999-01-01T00:00:00.000000Z', board_time='2000-01-01T00:00:00.000000Z')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'item 4 closed out: success' in proc.stdout
    proc = _wait(tmp_path, board, 4, '2000-01-01T00:00:00.000000Z', '-e', 'dispatch_wait_timeout=1', '-e', 'dispatch_wait_delay=1',
                 board_time='2999-01-01T00:00:00.000000Z')
    assert proc.returncode != 0 and 'item 4 has no close-out' in proc.stdout, proc.stdout


def test_the_confirmed_runs_close_out_is_read_by_its_run_id_whatever_the_clocks(tmp_path, board):
    """D16: a worker clock behind the controller's stamps the close-out before the dispatch's read; the
    run id the runner confirmed still names it as this dispatch's close-out."""
    confirmed = [{'number': 5, 'unit': 'task-5', 'start': 'started', 'run': 'r2'}]
    proc = _wait(tmp_path, board, 5, '2999-01-01T00:00:00.000000Z', confirmed=confirmed)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'item 5 closed out: noop' in proc.stdout


def test_another_runs_close_out_is_not_this_dispatchs(tmp_path, board):
    confirmed = [{'number': 5, 'unit': 'task-5', 'start': 'started', 'run': 'r3'}]
    proc = _wait(tmp_path, board, 5, '2000-01-01T00:00:00.000000Z', '-e', 'dispatch_wait_timeout=1', '-e',
                 'dispatch_wait_delay=1', confirmed=confirmed)
    assert proc.returncode != 0 and 'item 5 has no close-out' in proc.stdout, proc.stdout


def test_logs_says_no_master_has_the_run_and_what_to_check(tmp_path):
    inventory = tmp_path / 'inventory.ini'
    inventory.write_text('[workers]\n')
    proc = subprocess.run([str(BIN / 'ansible-playbook'), '-i', str(inventory), str(REPO / 'playbooks' / 'logs.yml'),
                           '-e', 'issue=7'], env=_env(tmp_path), capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode != 0
    assert 'runs task-7 or has its run directory' in proc.stdout and 'fleet.dispatch.status' in proc.stdout


@pytest.mark.parametrize('issue', ['', 'x', '0'])
def test_logs_needs_an_item_number(tmp_path, issue):
    proc = subprocess.run([str(BIN / 'ansible-playbook'), '-i', 'localhost,', '-c', 'local', str(REPO / 'playbooks' / 'logs.yml'),
                           '-e', 'issue=%s' % issue], env=_env(tmp_path), capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode != 0 and 'fleet.dispatch.logs -e issue=N' in proc.stdout
