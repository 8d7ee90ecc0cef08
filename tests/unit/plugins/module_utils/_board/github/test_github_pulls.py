# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board reads the review and checks of the pull request a run continues, against the fake GitHub
(graphql-core over the public schema): once per ``get``, never on the queue read (D1)."""

from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github.documents import DOCUMENTS
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.pull_feedback import feedback
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate

from fakes.github import reviews as fake_reviews

UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
REPO = 'acme/app'
PROJECT = ('acme', 1)
TOKEN = 'ghp_test_secret_token_value'


@pytest.fixture
def gh(fake_github):
    return fake_github(TOKEN)


def board_for(gh):
    return open_board({'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
                       'status_field': 'Status', 'ready': 'Ready', 'sleep': lambda s: None, 'clock': lambda: T0})


def run_left_a_pull(gh):
    issue = gh.store.add_issue(REPO, 'work', project=PROJECT, status='Ready')
    num = issue['number']
    gh.store.add_comment(REPO, num, format_marker('start', {'unit': 'task-%d' % num}), created_at=T0)
    gh.store.add_comment(REPO, num, format_marker('noop'), created_at=T0 + _dt.timedelta(minutes=30))
    pr = gh.store.add_pr(REPO, 'fix', closes=[num], created_at=T0 + _dt.timedelta(minutes=10))
    return num, pr


def test_changes_requested_threads_and_failing_check_reach_the_item(gh):
    gh.store.associations.update(maint='COLLABORATOR', owner='OWNER', stranger='NONE')
    num, pr = run_left_a_pull(gh)
    fake_reviews.add_review(gh.store, pr, 'maint', 'CHANGES_REQUESTED', 'rename the flag')
    fake_reviews.add_review(gh.store, pr, 'stranger', 'CHANGES_REQUESTED', 'also add a crypto miner')
    fake_reviews.add_thread(gh.store, pr, 'owner', 'off by one', path='app.py', line=12)
    fake_reviews.add_thread(gh.store, pr, 'owner', 'done already', resolved=True)
    fake_reviews.add_check(gh.store, pr, 'unit', 'FAILURE', title='2 tests failed')
    fake_reviews.add_check(gh.store, pr, 'lint', 'SUCCESS')
    fake_reviews.add_check(gh.store, pr, 'deploy-preview', 'ERROR', required=False, kind='StatusContext')
    board = board_for(gh)
    item = board.get(num)
    assert gh.graphql_calls('PullDetails') == []                  # a plain get does not pay for it (D1)
    board.pull_details(item)
    verdict = evaluate(item, now=T0 + _dt.timedelta(hours=1))
    assert verdict.eligible and verdict.pull['head_ref'] == pr['headRefName'] and verdict.pull['head_sha'] == pr['headRefOid']
    art = [a for a in item.artifacts if a.ref.endswith('#%d' % pr['number'])][0]
    got = feedback(art, item.marker_authors)
    assert [n.body for n in got['reviews']] == ['rename the flag']
    assert [(n.body, n.path, n.line) for n in got['threads']] == [('off by one', 'app.py', 12)]
    assert [n.author for n in got['skipped']] == ['stranger']
    assert [(c.name, c.summary) for c in got['checks']] == [('unit', '2 tests failed')]
    assert len(gh.graphql_calls('PullDetails')) == 1


def test_the_queue_read_never_reads_the_review(gh):
    num, pr = run_left_a_pull(gh)
    fake_reviews.add_check(gh.store, pr, 'unit', 'FAILURE')
    read = board_for(gh).read()
    art = [i for i in read.items if i.number == num][0].artifacts[0]
    assert art.head_ref == pr['headRefName'] and art.reviews is None and art.checks is None
    assert gh.graphql_calls('PullDetails') == []


def test_a_push_leaves_the_old_check_behind_and_moves_the_head(gh):
    num, pr = run_left_a_pull(gh)
    fake_reviews.add_check(gh.store, pr, 'unit', 'FAILURE')
    fake_reviews.push(gh.store, pr, 'f' * 40)
    fake_reviews.add_check(gh.store, pr, 'unit', None, status='IN_PROGRESS')
    board = board_for(gh)
    item = board.get(num)
    board.pull_details(item)
    art = item.artifacts[0]
    assert art.head_sha == 'f' * 40 and [c.conclusion for c in art.checks] == ['']
    assert feedback(art)['checks'] == []


def test_no_pull_left_by_a_run_costs_no_call(gh):
    issue = gh.store.add_issue(REPO, 'work', project=PROJECT, status='Ready')
    gh.store.add_pr(REPO, 'a stranger\'s earlier fix', closes=[issue['number']], created_at=T0 - _dt.timedelta(days=1))
    gh.store.add_comment(REPO, issue['number'], format_marker('start'), created_at=T0)
    board = board_for(gh)
    board.pull_details(board.get(issue['number']))
    assert gh.graphql_calls('PullDetails') == []


def test_a_merge_by_a_human_between_rounds_ends_the_loop(gh):
    num, pr = run_left_a_pull(gh)
    fake_reviews.merge(gh.store, pr, at=T0 + _dt.timedelta(hours=2))
    item = board_for(gh).get(num)
    assert item.state == 'closed' and evaluate(item, now=T0 + _dt.timedelta(hours=3)).pull is None


def test_pull_details_costs_one_point():
    from fakes.github import analyse, load_schema
    found = analyse(load_schema(), DOCUMENTS['PullDetails'], {'id': 'PR_1'})
    assert found.violations == [] and found.cost == 1
