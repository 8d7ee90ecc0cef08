# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board by GitHub's own rules (issue 19), against the fake GitHub.

Completion by the forge's closing rules (default branch, commit-message closes), partial data per
item, secondary rate limits, 410, mentions from the comments already read, the token preflight.
Each rule the fake plays cites the GitHub doc it follows (tests/fakes/github).
"""

from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board import github as _github
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.references import attribute

UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
REPO = 'acme/app'
PROJECT = ('acme', 1)
TOKEN = 'ghp_test_secret_token_value'


class Sleeps(list):
    def __call__(self, seconds):
        self.append(seconds)


@pytest.fixture
def gh(fake_github):
    return fake_github(TOKEN)


def spec_for(gh, **extra):
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': gh.token, 'api_url': gh.url,
            'owner_type': 'organization', 'sleep': Sleeps(), 'clock': lambda: T0}
    spec.update(extra)
    return spec


def board_for(gh, **extra):
    return open_board(spec_for(gh, **extra))


def ready(gh, title='work', repo=REPO, **kw):
    return gh.store.add_issue(repo, title, project=PROJECT, status='Ready', **kw)


def minutes(n):
    return T0 + _dt.timedelta(minutes=n)


def credited(item, start=T0):
    return [a.ref for a in attribute(item.artifacts, item.number, start, zero_turns=False)]


# -- completion by the forge's rules (D2, D16) ---------------------------------------------------

def test_a_commit_message_close_is_credited_to_its_merged_pr(gh):
    """A keyword in a commit message closes the issue when the commit reaches the default branch;
    the issue links no PR. The ClosedEvent's closer is the Commit: follow it to the merged PR."""
    item = ready(gh)
    pr = gh.store.add_pr(REPO, 'squashed work', created_at=minutes(5), merged_at=minutes(30))
    gh.store.close_by_commit(REPO, item['number'], oid='c0ffee1', at=minutes(30), pulls=[pr])
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert got.state == 'closed'
    assert [(a.ref, a.merged, a.base, a.into_closing_branch) for a in got.artifacts] == \
        [('%s#%d' % (REPO, pr['number']), True, 'main', True)]
    assert credited(got) == ['%s#%d' % (REPO, pr['number'])]
    assert len(gh.graphql_calls('CommitPulls')) == 1


def test_a_commit_close_is_time_attributed(gh):
    """D16: the PR behind a commit close merged before this run started is not this run's."""
    item = ready(gh)
    pr = gh.store.add_pr(REPO, 'old work', created_at=minutes(-90), merged_at=minutes(-60))
    gh.store.close_by_commit(REPO, item['number'], oid='0ld', at=minutes(-60), pulls=[pr])
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert [a.ref for a in got.artifacts] == ['%s#%d' % (REPO, pr['number'])]
    assert credited(got) == []


def test_a_commit_close_without_a_pull_request_has_no_artifact(gh):
    """A commit pushed straight to the default branch: closed, nothing to credit (a noop, honestly)."""
    item = ready(gh)
    gh.store.close_by_commit(REPO, item['number'], oid='d1rect', at=minutes(3))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert got.state == 'closed' and got.artifacts == []


def test_the_commit_close_is_followed_in_the_board_read_too(gh):
    item = ready(gh)
    pr = gh.store.add_pr(REPO, 'work', created_at=minutes(5), merged_at=minutes(30))
    gh.store.close_by_commit(REPO, item['number'], oid='abc', at=minutes(30), pulls=[pr])
    gh.store.add_to_project(PROJECT, gh.store.issue(REPO, item['number']))  # stays Ready on the board
    issue = gh.store.issue(REPO, item['number'])
    issue['state'] = 'OPEN'  # a reopened issue still carries its closed event
    with board_for(gh) as board:
        got = [i for i in board.read().items if i.number == item['number']][0]
    assert credited(got) == ['%s#%d' % (REPO, pr['number'])]


def test_a_pr_merged_into_a_release_branch_is_not_credited(gh):
    """A manually linked PR merged into a non-default branch: GitHub leaves the issue open, and so
    must the close-out (no success, no close)."""
    item = ready(gh)
    pr = gh.store.add_pr(REPO, 'backport', closes=[item['number']], link='manual', base='release-1.2',
                         created_at=minutes(5), merged_at=minutes(20))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert gh.store.issue(REPO, item['number'])['state'] == 'OPEN'
    assert [(a.ref, a.merged, a.base, a.into_closing_branch) for a in got.artifacts] == \
        [('%s#%d' % (REPO, pr['number']), True, 'release-1.2', False)]
    assert credited(got) == []


def test_a_keyword_pr_into_another_branch_links_nothing(gh):
    item = ready(gh)
    gh.store.add_pr(REPO, 'Fixes #1 on dev', closes=[item['number']], base='dev',
                    created_at=minutes(5), merged_at=minutes(20))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert got.state == 'open' and got.artifacts == []


def test_a_board_configured_with_another_base_credits_that_branch(gh):
    item = ready(gh)
    pr = gh.store.add_pr(REPO, 'into develop', closes=[item['number']], link='manual', base='develop',
                         created_at=minutes(5), merged_at=minutes(20))
    with board_for(gh, base_branch='develop') as board:
        got = board.get(item['number'])
    assert credited(got) == ['%s#%d' % (REPO, pr['number'])]


def test_a_pr_into_the_default_branch_is_credited(gh):
    item = ready(gh)
    pr = gh.store.add_pr(REPO, 'Fixes it', closes=[item['number']], created_at=minutes(5), merged_at=minutes(20))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert got.state == 'closed' and credited(got) == ['%s#%d' % (REPO, pr['number'])]


@pytest.mark.parametrize('pr,base_branch,expect', [
    ({'baseRefName': 'main', 'repository': {'defaultBranchRef': {'name': 'main'}}}, '', ('main', True)),
    ({'baseRefName': 'rel', 'repository': {'defaultBranchRef': {'name': 'main'}}}, '', ('rel', False)),
    ({'baseRefName': 'rel', 'repository': {'defaultBranchRef': {'name': 'main'}}}, 'rel', ('rel', True)),
    ({'baseRefName': 'main', 'repository': {'defaultBranchRef': None}}, '', ('main', None)),
    ({'repository': {'defaultBranchRef': {'name': 'main'}}}, '', ('', None)),
    ({'baseRefName': {'message': 'Not Found'}}, '', ('', None)),
])
def test_closing_branch_of(pr, base_branch, expect):
    """D5: an answer without the facts is unknown (None), which the credit rule does not refuse."""
    assert _github.closing_branch_of(pr, base_branch) == expect
