# -*- coding: utf-8 -*-
"""The sweep's task count, read from a real run (never its times): few, fat controller tasks.

Every task of a cycle - a skipped one too - is a forked task run on the controller, so what a sweep costs
follows its task count (docs/dispatch.md, "What a sweep costs"; benchmarks/sweep_cost.py prints both). These
run the shipped ``playbooks/sweep.yml`` on ``inventory.example`` (one localhost worker, two masters that do not
exist here: the probe finds them blind) against a ledger board of five Ready items, one orphaned start and
finished items, in apply mode (twice: the second is the timer's usual cycle, with the announcer's record
of the first) and in plan mode, and count the ``TASK [`` headers Ansible prints.

A new step of the cycle either fits under these numbers (fold it into a step that runs anyway) or raises
them here, with its reason in the commit.
"""
from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker

from test_playbooks import playbook  # noqa: E402 - the same runner as the other playbook tests

APPLY_TASKS = 36
"""TASK headers of an apply sweep of this board (51 before the cycle's controller steps were folded: the opening facts
in the guard action, one lease step, one release step, one stop for a failed cycle, imports for the steps that always run,
confirm.yml skipped with nothing launched)."""
PLAN_TASKS = 35
"""TASK headers of a plan sweep of this board (37 before; plan mode still skips apply_finish.yml's steps one by one, which
keeps the launch answered stamped by the first task of play 5 in apply mode)."""
REPORTS = 'File one report per stall, close the reports whose stall cleared'


@pytest.fixture
def board(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    old = (_dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(days=3)).strftime('%Y-%m-%dT%H:%M:%SZ')
    with open_board(dict(spec, create=True)) as b:
        for n in range(1, 6):
            b.upsert_item(number=n, title='ready %d' % n, status='Ready')
        b.upsert_item(number=6, title='orphan', status='Ready')
        b.post_marker(6, format_marker('start', {'unit': 'task-6', 'host': 'localhost', 'master': 'agent1'}), at=old)
        for n in range(7, 10):
            b.upsert_item(number=n, title='done %d' % n, status='Ready')
            b.post_marker(n, format_marker('start', {'unit': 'task-%d' % n}), at=old)
            b.post_marker(n, format_marker('success', {'unit': 'task-%d' % n}), close=True, at=old)
    return spec


def _tasks(res):
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return [line for line in res.stdout.splitlines() if line.startswith('TASK [')]


def _said(res, name):
    return res.stdout.split(name, 1)[1].split('TASK [', 1)[0]


def test_an_apply_sweep_runs_at_most_its_stated_tasks_and_skips_the_reports_with_nothing_to_file(tmp_path, board):
    extra = ('-e', 'dispatch_mode=apply', '-e', 'dispatch_lease_path=%s' % (tmp_path / 'leases'))
    first = playbook('sweep.yml', tmp_path, board, *extra)
    assert len(_tasks(first)) <= APPLY_TASKS, '\n'.join(_tasks(first))
    assert 'skipping' not in _said(first, REPORTS), 'no record yet: the first sweep reads the reports'
    steady = playbook('sweep.yml', tmp_path, board, *extra)
    assert len(_tasks(steady)) <= APPLY_TASKS, '\n'.join(_tasks(steady))
    # nothing to file (the masters were blind for two sweeps, under the three that make a report) and none open
    assert 'skipping' in _said(steady, REPORTS)
    assert 'Say what the reaper holds back and why' in steady.stdout      # the orphan: held, its master blind


def test_a_plan_sweep_runs_at_most_its_stated_tasks(tmp_path, board):
    res = playbook('sweep.yml', tmp_path, board)
    assert len(_tasks(res)) <= PLAN_TASKS, '\n'.join(_tasks(res))
    assert 'Show the plan' in res.stdout
