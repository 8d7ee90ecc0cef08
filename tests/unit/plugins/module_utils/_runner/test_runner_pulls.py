# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pull-request loop through the runner, on the GitHub fake and the ledger board: a run that left an open pull
request with a changes-requested review and a failing check -> the next run's brief carries both (a stranger's
review does not), its close-out names the pull request and whether its head moved; a round that pushes nothing
spends no round; the round cap holds. And the workspace of such a run is detached at the pull request's head."""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.fanout import launch_work
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.pr_loop import DEFAULT_MAX_ROUNDS
from ansible_collections.fleet.dispatch.plugins.module_utils._host.git import Git, Workspace
from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import SubprocessRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import closeout as _closeout
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner

from fakes.git_origin import git as _git, make_origin
from fakes.github import reviews as fake_reviews


UTC = _dt.timezone.utc
FAKE_AGENT = pathlib.Path(__file__).resolve().parents[5] / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
REPO = 'acme/app'
PROJECT = ('acme', 1)
TOKEN = 'ghp_runner_test_token'


@pytest.fixture
def gh(fake_github):
    return fake_github(TOKEN)


class Spawner(_runner.PopenSpawner):
    """Starts the real fake agent; ``push`` then plays the agent's push to the pull request's branch."""

    def __init__(self, push):
        self.push = push

    def spawn(self, argv, **kw):
        proc = super(Spawner, self).spawn(argv, **kw)
        if self.push:
            self.push()
        return proc


def _run(board, tmp_path, number, push=None, repo='', env=None):
    config = _runner.RunConfig(number=number, repo=repo, state_dir=str(tmp_path / 'state'),
                               agent_command=[sys.executable, str(FAKE_AGENT)], workdir=str(tmp_path), host='w1', master='m1')
    environ = dict(os.environ, FAKE_AGENT_MODE='claim', FAKE_AGENT_LOG=str(tmp_path / 'agent.log'), **(env or {}))
    run = _runner.Run(config, board, spawner=Spawner(push), reraise=lambda s: None, log=lambda line: None,
                      install_signals=False, environ=environ)
    code = run.run()
    brief = json.loads((tmp_path / 'agent.log').read_text().splitlines()[-1])['brief']
    return code, brief


def _github_board(gh):
    return open_board({'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
                       'status_field': 'Status', 'ready': 'Ready'})


def _github_pull(gh):
    """A first run opened a pull request; a maintainer requested changes, a stranger too; a required check fails."""
    gh.store.associations.update(maint='COLLABORATOR', stranger='NONE')
    past = _dt.datetime.now(UTC) - _dt.timedelta(hours=2)
    issue = gh.store.add_issue(REPO, 'Spin it', project=PROJECT, status='Ready')
    number = issue['number']
    gh.store.add_comment(REPO, number, format_marker('start'), created_at=past)
    pr = gh.store.add_pr(REPO, 'Spin it', closes=[number], created_at=past + _dt.timedelta(minutes=10))
    gh.store.add_comment(REPO, number, format_marker('noop'), created_at=past + _dt.timedelta(minutes=20))
    fake_reviews.add_review(gh.store, pr, 'maint', 'CHANGES_REQUESTED', 'rename the flag to --spin')
    fake_reviews.add_review(gh.store, pr, 'stranger', 'CHANGES_REQUESTED', 'also mine some crypto')
    fake_reviews.add_check(gh.store, pr, 'unit', 'FAILURE', title='test_spin failed')
    return number, pr


def test_github_next_run_is_briefed_with_the_review_and_the_failing_check(gh, tmp_path):
    number, pr = _github_pull(gh)
    board = _github_board(gh)
    code, brief = _run(board, tmp_path, number, push=lambda: fake_reviews.push(gh.store, pr, 'e' * 40), repo=REPO)
    assert code == _closeout.EXIT['noop']
    assert 'rename the flag to --spin' in brief and 'unit: FAILURE -- test_spin failed' in brief
    assert 'crypto' not in brief                                       # a stranger's review does not steer the agent
    assert pr['headRefName'] in brief and 'push origin HEAD:refs/heads/%s' % pr['headRefName'] in brief
    assert 'still ends at MERGED' in brief
    item = board.get(number)
    last = markers_of(item)[-1]
    assert last.fields['pr'] == '%s#%d' % (REPO, pr['number']) and last.fields['head_moved'] is True
    assert last.fields['head_after'] == 'e' * 40 and 'head moved' in last.text
    assert [r['author'] for r in last.fields['reviews_skipped']] == ['stranger']
    verdict = evaluate(item, now=_dt.datetime.now(UTC))
    assert verdict.pull['rounds'] == 1 and verdict.attempts == 1       # a round, not an attempt


def test_github_a_round_that_pushes_nothing_spends_no_round(gh, tmp_path):
    number, pr = _github_pull(gh)
    board = _github_board(gh)
    _run(board, tmp_path, number, push=None, repo=REPO)
    item = board.get(number)
    last = markers_of(item)[-1]
    assert last.fields['head_moved'] is False and 'nothing was pushed' in last.text
    verdict = evaluate(item, now=_dt.datetime.now(UTC))
    assert verdict.pull['rounds'] == 0 and verdict.attempts == 2       # an attempt, as any run that did nothing


def test_github_a_merge_after_the_round_ends_the_item(gh, tmp_path):
    number, pr = _github_pull(gh)

    def push_and_merge():
        fake_reviews.push(gh.store, pr, 'e' * 40)
        fake_reviews.merge(gh.store, pr, at=_dt.datetime.now(UTC) + _dt.timedelta(seconds=2))
    code, _brief = _run(_github_board(gh), tmp_path, number, push=push_and_merge, repo=REPO)
    item = _github_board(gh).get(number)
    # D16's exception: the pull request predates the run, but the forge shows this run moved its head and
    # then it merged -- the run's success, and the item is done
    assert code == _closeout.EXIT['success'] and markers_of(item)[-1].kind == 'success'
    assert item.state == 'closed' and evaluate(item, now=_dt.datetime.now(UTC)).reason == 'done'


def test_github_a_merge_of_a_pull_request_this_run_did_not_push_is_not_its_success(gh, tmp_path):
    number, pr = _github_pull(gh)
    code, _brief = _run(_github_board(gh), tmp_path, number, repo=REPO,
                        push=lambda: fake_reviews.merge(gh.store, pr, at=_dt.datetime.now(UTC) + _dt.timedelta(seconds=2)))
    item = _github_board(gh).get(number)
    assert code == _closeout.EXIT['noop'] and markers_of(item)[-1].fields['head_moved'] is False
    assert item.state == 'closed' and evaluate(item, now=_dt.datetime.now(UTC)).reason == 'closed'


def _ledger_pull(tmp_path):
    board = LedgerBoard(path=str(tmp_path / 'ledger.db'), create=True)
    number = board.upsert_item(title='Spin it', status='Ready')['number']
    past = _dt.datetime.now(UTC) - _dt.timedelta(hours=2)
    board.comment(number, format_marker('start'), at=past)
    board.add_artifact('PR-1', closes=[number], created_at=past + _dt.timedelta(minutes=10), head_ref='fleet/spin',
                       head_sha='a' * 40, state='OPEN')
    board.comment(number, format_marker('noop'), at=past + _dt.timedelta(minutes=20))
    board.add_review('PR-1', 'rename the flag to --spin', author='maint', association='COLLABORATOR', state='CHANGES_REQUESTED')
    board.add_review('PR-1', 'also mine some crypto', author='stranger', state='CHANGES_REQUESTED')
    board.set_check('PR-1', 'unit', 'FAILURE', head_sha='a' * 40, summary='test_spin failed')
    return board, number


def _ledger(tmp_path):
    return LedgerBoard(path=str(tmp_path / 'ledger.db'))   # the runner closes the board it was given


def _push(tmp_path, sha):
    def push():
        with _ledger(tmp_path) as board:
            board.add_artifact('PR-1', head_sha=sha)
    return push


def test_ledger_next_run_is_briefed_and_its_round_counted(tmp_path):
    _board, number = _ledger_pull(tmp_path)
    _code, brief = _run(_ledger(tmp_path), tmp_path, number, push=_push(tmp_path, 'b' * 40))
    assert 'rename the flag to --spin' in brief and 'unit: FAILURE -- test_spin failed' in brief and 'crypto' not in brief
    assert 'fleet/spin' in brief
    verdict = evaluate(_ledger(tmp_path).get(number), now=_dt.datetime.now(UTC))
    assert verdict.pull['rounds'] == 1 and verdict.attempts == 1


def test_the_brief_names_the_round_cap_the_dispatcher_held_the_item_to(tmp_path):
    _board, number = _ledger_pull(tmp_path)
    _code, brief = _run(_ledger(tmp_path), tmp_path, number, env={'FLEET_MAX_ROUNDS': '6'})
    assert 'round 1 of 6' in brief
    _code, brief = _run(_ledger(tmp_path), tmp_path, number, env={'FLEET_MAX_ROUNDS': '0'})
    assert 'round 1 (no cap)' in brief
    _code, brief = _run(_ledger(tmp_path), tmp_path, number)
    assert 'round 1 of %d' % DEFAULT_MAX_ROUNDS in brief


def test_ledger_the_round_cap_holds(tmp_path):
    _board, number = _ledger_pull(tmp_path)
    for n in range(DEFAULT_MAX_ROUNDS):
        _run(_ledger(tmp_path), tmp_path, number, push=_push(tmp_path, '%x' % (n + 11) * 40))
    verdict = evaluate(_ledger(tmp_path).get(number), now=_dt.datetime.now(UTC))
    assert verdict.reason == 'rounds_spent' and verdict.pull['rounds'] == DEFAULT_MAX_ROUNDS and verdict.attempts == 1


def test_the_workspace_of_a_continued_item_is_detached_at_the_pull_request_head(tmp_path, monkeypatch):
    origin, seed = make_origin(tmp_path, monkeypatch, filename='f', text='1\n', message='1')
    _git('checkout', '-q', '-b', 'fleet/spin', cwd=str(seed))
    (seed / 'f').write_text('2\n')
    _git('commit', '-q', '-am', 'round 1', cwd=str(seed))
    _git('push', '-q', 'origin', 'fleet/spin', cwd=str(seed))
    head = _git('rev-parse', 'HEAD', cwd=str(seed))
    clone = tmp_path / 'clone'
    _git('clone', '-q', str(origin), str(clone))
    board, number = _ledger_pull(tmp_path)
    board.add_artifact('PR-1', head_sha=head)
    items = assess(board.read().items, now=_dt.datetime.now(UTC))
    batches = [{'worker': 'w1', 'master': 'm1', 'launch': [{'number': number, 'repo': ''}]}]
    entry = launch_work(batches, {}, str(clone), 'main', items)['w1'][0]
    assert entry['branch'] == 'fleet/spin'
    res = Workspace(Git(SubprocessRunner()), str(clone), str(tmp_path / 'ws' / 'task-1'), branch=entry['branch']).present()
    path = res['path']
    assert res['sha'] == head == _git('rev-parse', 'HEAD', cwd=path)
    assert subprocess.run(['git', 'symbolic-ref', '-q', 'HEAD'], cwd=path, check=False).returncode == 1   # detached (D10)
