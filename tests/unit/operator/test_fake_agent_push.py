# -*- coding: utf-8 -*-
"""The pull-request loop with the fake agent's ``push`` mode as the forge, on a ledger board.

The fake runs as the runner runs it (a process, the brief on stdin): a fresh brief opens a pull request that
closes the item; a brief that continues one pushes a new head to it. Between the runs the decisions hold the
item while nobody has answered the round (``awaiting_review``), release it on a trusted review, count a round
only when the head moved, and hold it at the cap (``rounds_spent``).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

from ansible_collections.fleet.dispatch.plugins.module_utils._board import ledger as _ledger
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.pr_loop import plan, round_fields
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.brief_pull import section

REPO = pathlib.Path(__file__).resolve().parents[3]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_ledger.__file__)).parents[6]
UTC = _dt.timezone.utc


def agent(spec, brief, tmp_path):
    out = tmp_path / 'out'
    out.mkdir(exist_ok=True)
    env = {'PATH': os.environ.get('PATH', ''), 'HOME': str(tmp_path), 'FLEET_ITEM': '5', 'FLEET_OUTPUT_DIR': str(out),
           'PYTHONPATH': str(COLLECTIONS_ROOT), 'FAKE_AGENT_BOARD': json.dumps(spec)}
    done = subprocess.run([sys.executable, str(FAKE_AGENT), '--mode', 'push'], env=env, input=brief,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads((out / 'result.json').read_text())


def item_of(spec):
    with open_board(spec) as board:
        return board.get(5)


def decide(spec):
    return evaluate(item_of(spec), now=_dt.datetime.now(UTC), max_attempts=10, max_rounds=2)


def run(spec, tmp_path):
    """One run as the runner frames it: start marker, the brief's pull request section, the agent, the close-out.
    Every time is the ledger's clock as it goes (the agent's pull request is created between the two markers)."""
    item = item_of(spec)
    loop = plan(item, markers_of(item))
    with open_board(spec) as board:
        board.comment(5, format_marker('start', {'unit': 'task-5'}))
    brief = section(loop.pull, 'main', rounds=loop.rounds, max_rounds=loop.max_rounds)['pull_intro']
    result = agent(spec, brief, tmp_path)
    fields = {}
    if loop.pull is not None:
        again = [a for a in item_of(spec).artifacts if a.ref == loop.pull.ref]
        fields = round_fields(loop.pull, again[0].head_sha if again else None)
    with open_board(spec) as board:
        board.comment(5, format_marker('noop', dict(fields, unit='task-5')))
    return result, decide(spec)


def test_the_fake_opens_then_pushes_and_the_loop_waits_counts_and_holds(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as board:
        board.upsert_item(number=5, title='work', status='Ready')

    opened, verdict = run(spec, tmp_path)
    ref = opened['pull_request']
    assert ref.startswith('fake-pr/5/') and verdict.pull['ref'] == ref and verdict.pull['rounds'] == 0
    assert verdict.reason == 'awaiting_review', verdict.holds   # nobody has answered the pull request it opened

    for n in (1, 2):
        with open_board(spec) as board:   # a collaborator asks for changes after the last close-out
            board.add_review(ref, 'rename it (%d)' % n, kind='review', author='maint', association='COLLABORATOR',
                             state='CHANGES_REQUESTED')
        assert decide(spec).reason == 'eligible'
        pushed, verdict = run(spec, tmp_path)
        assert pushed['pull_request'] == ref and verdict.pull['rounds'] == n
        assert verdict.attempts == 1, 'a round that moved the head is not an attempt'
        if n == 1:
            assert verdict.reason == 'awaiting_review', verdict.holds   # the round waits for its answer
    assert verdict.reason == 'rounds_spent' and 'awaiting_review' not in verdict.holds
