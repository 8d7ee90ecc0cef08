# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""board_info with a GitHub board's ``read_memory``: a sweep defers unchanged items, a hand dispatch
(``numbers``) reads its items in full and leaves the memory alone; the review of a continued pull request is read
per candidate, after the page."""

from __future__ import annotations

import datetime as _dt
import json

import pytest

from fakes.github import FakeGitHub
from fakes.github import reviews as fake_reviews
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.pr_loop import continuing
from ansible_collections.fleet.dispatch.plugins.modules import board_info

TOKEN = 'ghp_test_secret_token_value'
PAST = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=_dt.timezone.utc)


@pytest.fixture
def gh(shared_dir):
    path = shared_dir / 'github-schema' / 'schema.graphql'
    if not path.is_file():
        pytest.skip('%s is absent: the fake GitHub executes that schema' % path)
    with FakeGitHub(token=TOKEN, schema_path=str(path), clock=lambda: PAST) as fake:
        fake.store.add_project('acme', 1)
        yield fake


def test_a_hand_dispatch_reads_in_full_and_a_sweep_defers(run_module, gh, tmp_path):
    numbers = []
    for k in range(12):
        issue = gh.store.add_issue('acme/app', 'item %d' % k, project=('acme', 1), status='Ready')
        numbers.append(issue['number'])
    memory = tmp_path / 'read-memory.json'
    board = dict(kind='github', owner='acme', owner_type='organization', project=1, token=TOKEN, api_url=gh.url,
                 read_memory=str(memory), full_read_every=50)

    kind, first, _warns = run_module(board_info, dict(board=board))
    assert kind == 'exit' and len(first['candidates']) == 12, 'no memory yet: a full read'
    written = memory.read_text()

    kind, second, _warns = run_module(board_info, dict(board=board))
    reasons = [entry['reason'] for entry in second['board_items']]
    assert kind == 'exit' and reasons.count('deferred') >= 10, reasons
    assert second['cost']['deferred'] == reasons.count('deferred')

    kind, hand, warns = run_module(board_info, dict(board=board, numbers=numbers))
    assert kind == 'exit'
    assert [entry['reason'] for entry in hand['board_items']] == ['eligible'] * 12, 'a hand dispatch never defers'
    assert not any('deferred' in w for w in warns)
    assert 'read_memory' not in hand['cost'], 'a hand dispatch neither reads nor writes the memory'
    assert json.loads(memory.read_text())['cycle'] == json.loads(written)['cycle'] + 1


def test_a_sweep_reads_the_review_of_a_continued_pull_request_and_waits_for_one(run_module, gh):
    """D1: the page never reads a pull request's review; board_info reads it (one PullDetails call) only for an eligible
    item whose next run would continue one, and holds that item awaiting_review until a review or a failing check comes."""
    gh.store.associations.update(maint='COLLABORATOR')
    plain = gh.store.add_issue('acme/app', 'no pull request', project=('acme', 1), status='Ready')
    issue = gh.store.add_issue('acme/app', 'left one open', project=('acme', 1), status='Ready')
    num = issue['number']
    gh.store.add_comment('acme/app', num, format_marker('start'), created_at=PAST - _dt.timedelta(hours=3))
    pr = gh.store.add_pr('acme/app', 'fix', closes=[num], created_at=PAST - _dt.timedelta(hours=2, minutes=50))
    gh.store.add_comment('acme/app', num, format_marker('noop'), created_at=PAST - _dt.timedelta(hours=2, minutes=40))
    board = dict(kind='github', owner='acme', owner_type='organization', project=1, token=TOKEN, api_url=gh.url)
    now = '2026-03-01T12:00:00Z'

    kind, res, _warns = run_module(board_info, dict(board=board, now=now))
    rows = dict((e['number'], e) for e in res['board_items'])
    assert kind == 'exit' and rows[plain['number']]['reason'] == 'eligible'
    assert rows[num]['reason'] == 'awaiting_review' and rows[num]['pull']['read'] is True, rows[num]
    assert len(gh.graphql_calls('PullDetails')) == 1 and res['cost']['pull_details'] == 1

    fake_reviews.add_review(gh.store, pr, 'maint', 'CHANGES_REQUESTED', 'rename the flag', at=PAST - _dt.timedelta(hours=1))
    kind, res, _warns = run_module(board_info, dict(board=board, now=now))
    rows = dict((e['number'], e) for e in res['board_items'])
    assert rows[num]['reason'] == 'eligible' and [c['number'] for c in res['candidates']].count(num) == 1
    assert rows[num]['pull']['changes_requested'][0]['text'] == 'rename the flag'
    # the webhook names the pull request as GitHub's payload does (repository.full_name#number): it finds the item
    assert continuing(res['board_items'], 'acme/app#%d' % pr['number']) == [num]
    assert continuing(res['board_items'], 'acme/app#%d' % plain['number']) == []
