# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board against the fake GitHub (graphql-core over the public schema, on loopback).

No network: the fake answers on 127.0.0.1 from a thread. Rate limits never really sleep: the
board takes an injected ``sleep`` that records what it was asked to wait.
"""

from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import documents as _documents
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import nodes as _nodes
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import transport as _transport
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError, BoardUnreadable, ItemNotFound
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github.board import GitHubBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github.transport import RateLimited
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import attribute, closing_refs

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


@pytest.fixture
def sleeps():
    return Sleeps()


def spec_for(gh, sleeps=None, **extra):
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
            'status_field': 'Status', 'ready': 'Ready', 'sleep': Sleeps() if sleeps is None else sleeps,
            'clock': lambda: T0}
    spec.update(extra)
    return spec


def board_for(gh, sleeps=None, **extra):
    return open_board(spec_for(gh, sleeps, **extra))


def ready(gh, title='work', repo=REPO, **kw):
    return gh.store.add_issue(repo, title, project=PROJECT, status='Ready', **kw)


def by_number(read):
    return dict((i.number, i) for i in read.items)


# -- the read (D1) -------------------------------------------------------------------------------

def test_read_filters_on_the_server_and_fills_candidates(gh):
    a = ready(gh, 'ready one')
    gh.store.add_comment(REPO, a['number'], 'a human note', author='alice')
    gh.store.add_issue(REPO, 'backlog', project=PROJECT, status='Backlog')
    gh.store.add_issue(REPO, 'closed ready', project=PROJECT, status='Ready', state='closed')
    gh.store.add_draft(PROJECT, 'a draft', status='Ready')
    with board_for(gh) as board:
        read = board.read()
    assert [(i.number, i.title, i.state, i.status, i.repo) for i in read.items] == [(a['number'], 'ready one', 'open', 'Ready', REPO)]
    item = read.items[0]
    assert item.id == a['id'] and item.url.endswith('/issues/%d' % a['number'])
    assert [(c.body, c.author) for c in item.comments] == [('a human note', 'alice')]
    assert read.cost['cost'] >= 1 and read.cost['remaining'] == gh.rate_limit['limit'] - gh.rate_limit['used']
    assert read.cost['reset_at'] == gh.rate_limit['resetAt']


def test_empty_queue_is_an_empty_read_not_an_error(gh):
    gh.store.add_issue(REPO, 'backlog', project=PROJECT, status='Backlog')
    with board_for(gh) as board:
        read = board.read()
    assert read.items == [] and read.cost['calls'] >= 1


def test_the_page_pass_reads_from_both_ends_and_each_call_costs_one_point(gh):
    for n in range(250):
        ready(gh, 'item %d' % n)
    with board_for(gh, owner_type='organization') as board:
        read = board.read()
    assert [i.title for i in read.items] == ['item %d' % n for n in range(250)], 'board order, each once'
    # 100 from the front and 100 from the back, then 100 more from each end (they meet): 2 calls
    assert len(gh.graphql_calls('BoardPage')) == 2
    assert read.cost['by_document']['BoardPage'] == 2
    assert read.cost['by_document']['Details'] == 10  # 250 candidates / 25 per 1-point batch


def _calls_for(n):
    """Calls of the two-ended page pass over ``n`` items: call k has read 100 k from the front and
    100 k from the back; it stops when the two ends share an item (or there is no next page)."""
    return n // 200 + 1


@pytest.mark.parametrize('size', [0, 1, 100, 101, 199, 200, 201, 300, 301, 400, 700])
def test_every_item_once_in_board_order_at_any_size(gh, size):
    for n in range(size):
        ready(gh, 'item %d' % n)
    with board_for(gh, owner_type='organization') as board:
        read = board.read()
    assert [i.title for i in read.items] == ['item %d' % n for n in range(size)]
    assert len(gh.graphql_calls('BoardPage')) == _calls_for(size)


def test_expensive_fields_only_for_items_passing_the_cheap_filter(gh):
    blocker = gh.store.add_issue(REPO, 'blocker', project=PROJECT, status='Backlog')
    blocked = ready(gh, 'blocked')
    gh.store.add_blocker(REPO, blocked['number'], REPO, blocker['number'])
    gh.store.add_comment(REPO, blocked['number'], 'not fetched for a blocked item')
    free = ready(gh, 'free')
    with board_for(gh) as board:
        read = board.read()
    items = by_number(read)
    assert [(b.number, b.state) for b in items[blocked['number']].blockers] == [(blocker['number'], 'open')]
    assert items[blocked['number']].comments == []
    assert items[free['number']].blockers == []
    assert read.cost['candidates'] == 1
    assert len(gh.graphql_calls('Details')) == 1 and len(gh.graphql_calls('Blockers')) == 1


def test_a_closed_blocker_does_not_block(gh):
    """D9: blockedBy returns closed blockers too; each carries its state and the item is a candidate."""
    done = gh.store.add_issue(REPO, 'done blocker', state='closed')
    item = ready(gh, 'was blocked')
    gh.store.add_blocker(REPO, item['number'], REPO, done['number'])
    gh.store.add_comment(REPO, item['number'], 'fetched: the item passed the cheap filter')
    with board_for(gh) as board:
        read = board.read()
    got = by_number(read)[item['number']]
    assert [(b.number, b.state) for b in got.blockers] == [(done['number'], 'closed')]
    assert len(got.comments) == 1
    assert gh.graphql_calls('Blockers') == []


def test_all_comments_are_read_even_past_one_page(gh):
    """D1/D6: the attempt count is derived from the comments every cycle, so none may be cut."""
    item = ready(gh, 'chatty')
    for n in range(230):
        gh.store.add_comment(REPO, item['number'], 'comment %03d' % n,
                             created_at=T0 + _dt.timedelta(minutes=n))
    with board_for(gh) as board:
        got = board.read().items[0]
    assert [c.body for c in got.comments] == ['comment %03d' % n for n in range(230)]
    assert len(gh.graphql_calls('MoreComments')) == 2


def test_owner_type_auto_finds_a_user_project(gh):
    gh.store.add_owner('solo', 'User')
    gh.store.add_project('solo', 3, kind='User')
    gh.store.add_issue('solo/tool', 'mine', project=('solo', 3), status='Ready')
    with board_for(gh, owner='solo', project=3) as board:
        read = board.read()
    assert [i.repo for i in read.items] == ['solo/tool']


def test_multi_repo_project_keeps_the_repo_on_each_item(gh):
    ready(gh, 'app one', repo='acme/app')
    ready(gh, 'lib one', repo='acme/lib')
    with board_for(gh) as board:
        read = board.read()
        assert sorted((i.repo, i.number) for i in read.items) == [('acme/app', 1), ('acme/lib', 1)]
        with pytest.raises(BoardError, match='ambiguous'):
            board.get(1)
        assert board.get('acme/lib#1').title == 'lib one'


# -- completion (D2, D16) ------------------------------------------------------------------------

def test_a_merged_pr_from_before_the_runs_start_is_not_credited(gh):
    """D16: a PR bound to the issue stays bound after a reopen; the next run must not earn it."""
    item = ready(gh, 'reopened work')
    old = gh.store.add_pr(REPO, 'old fix', closes=[item['number']], created_at=T0 - _dt.timedelta(days=2),
                          merged_at=T0 - _dt.timedelta(days=1))
    gh.store.set_state(gh.store.issue(REPO, item['number']), 'open', at=T0 - _dt.timedelta(hours=1))
    run_start = T0
    with board_for(gh) as board:
        got = board.read().items[0]
    assert [(a.ref, a.merged) for a in got.artifacts] == [('%s#%d' % (REPO, old['number']), True)]
    assert got.artifacts[0].merged_at == T0 - _dt.timedelta(days=1)
    assert [e.kind for e in got.events] == ['closed', 'reopened']
    assert attribute(got.artifacts, got.number, run_start, zero_turns=False) == []
    fresh = gh.store.add_pr(REPO, 'new fix', closes=[item['number']], created_at=T0 + _dt.timedelta(minutes=5),
                            merged_at=T0 + _dt.timedelta(minutes=30))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert [a.ref for a in attribute(got.artifacts, got.number, run_start, zero_turns=False)] == \
        ['%s#%d' % (REPO, fresh['number'])]


def test_an_open_pr_is_an_artifact_but_not_merged(gh):
    item = ready(gh)
    gh.store.add_pr(REPO, 'wip', closes=[item['number']], created_at=T0 + _dt.timedelta(minutes=1))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert [(a.merged, a.merged_at) for a in got.artifacts] == [(False, None)]
    assert attribute(got.artifacts, got.number, T0, zero_turns=False) == []


def test_an_issue_closed_by_a_commit_has_no_artifact(gh):
    item = ready(gh)
    gh.store.close_by_commit(REPO, item['number'], oid='abc123', at=T0 + _dt.timedelta(minutes=3))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert got.state == 'closed'
    assert [e.kind for e in got.events] == ['closed']
    assert got.artifacts == []


def test_a_closed_event_whose_closer_is_a_merged_pr_is_accepted(gh):
    """The PR closed the issue but is not in closedByPullRequestsReferences (e.g. a cross-repo
    link GitHub did not record there): the ClosedEvent's closer still proves the merge."""
    item = ready(gh)
    pr = gh.store.add_pr('acme/other', 'cross repo', closes=[(REPO, item['number'])], link=False,
                         created_at=T0 + _dt.timedelta(minutes=1), merged_at=T0 + _dt.timedelta(minutes=9))
    with board_for(gh) as board:
        got = board.get(item['number'])
    assert [(a.ref, a.merged, a.closes) for a in got.artifacts] == [('acme/other#%d' % pr['number'], True, [item['number']])]


def test_a_closed_event_by_an_unmerged_pr_is_not_an_artifact(gh):
    item = ready(gh)
    pr = gh.store.add_pr(REPO, 'closed unmerged', state='CLOSED', link=False)
    gh.store.set_state(gh.store.issue(REPO, item['number']), 'closed', closer=pr)
    with board_for(gh) as board:
        assert board.get(item['number']).artifacts == []


# -- writes (D12, D14) ---------------------------------------------------------------------------

def test_post_marker_comments_first_then_closes(gh):
    item = ready(gh)
    with board_for(gh) as board:
        result = board.post_marker(item['number'], 'success marker', close=True)
    writes = [(e['method'], e['path']) for e in gh.log if e['method'] in ('POST', 'PATCH') and e['path'] != '/graphql']
    assert writes == [('POST', '/repos/%s/issues/%d/comments' % (REPO, item['number'])),
                      ('PATCH', '/repos/%s/issues/%d' % (REPO, item['number']))]
    assert result['closed'] is True and result['comment'].body == 'success marker'
    assert gh.store.issue(REPO, item['number'])['state'] == 'CLOSED'


def test_marker_on_an_already_closed_issue_keeps_the_comment(gh):
    """🔴 D12: the merged PR's Closes had already closed it; `close --comment` dropped the comment."""
    item = ready(gh)
    gh.store.add_pr(REPO, 'fix', closes=[item['number']], merged_at=T0)
    with board_for(gh) as board:
        result = board.post_marker(item['number'], 'close-out marker', close=True)
    assert result['closed'] is False
    assert [c['body'] for c in gh.store.issue(REPO, item['number'])['comments']] == ['close-out marker']
    assert [e['method'] for e in gh.log if e['path'].endswith('/issues/%d' % item['number'])] == ['GET']


def test_generated_text_never_carries_a_live_closing_keyword(gh):
    """D14: a PR quoting a remedy verbatim closed the issue it existed to protect."""
    item = ready(gh)
    with board_for(gh) as board:
        posted = board.comment(item['number'], 'Remedy: Close #12 and fixes acme/app#3')
    stored = gh.store.issue(REPO, item['number'])['comments'][0]['body']
    assert closing_refs(stored) == [] and posted.body == stored
    assert '#12' in stored and 'acme/app#3' in stored


def test_set_state_reopens_and_reports_change(gh):
    item = gh.store.add_issue(REPO, 'closed', state='closed', project=PROJECT, status='Done')
    with board_for(gh) as board:
        assert board.set_state(item['number'], 'open') is True
        assert board.set_state(item['number'], 'open') is False
    assert gh.store.issue(REPO, item['number'])['timeline'][-1]['__typename'] == 'ReopenedEvent'


def test_set_status_resolves_ids_once_and_is_idempotent(gh):
    a = ready(gh)
    b = gh.store.add_issue(REPO, 'b', project=PROJECT, status='Backlog')
    with board_for(gh, repo=REPO) as board:
        assert board.set_status(a['number'], 'In progress') is True
        assert board.set_status(a['number'], 'In progress') is False
        assert board.set_status(b['number'], 'Ready') is True
        with pytest.raises(BoardError, match="no option 'Shipped'"):
            board.set_status(b['number'], 'Shipped')
    assert gh.store.status_of(REPO, a['number']) == 'In progress'
    assert gh.store.status_of(REPO, b['number']) == 'Ready'
    assert len(gh.graphql_calls('ProjectField')) == 1
    assert len(gh.graphql_calls('SetStatus')) == 2


def test_set_status_after_a_read_needs_no_lookup(gh):
    a = ready(gh)
    with board_for(gh) as board:
        board.read()
        assert board.set_status(a['number'], 'Done') is True
    assert [e['operation'] for e in gh.graphql_calls()][-1] == 'SetStatus'
    assert gh.graphql_calls('ProjectField') == [] and gh.graphql_calls('Issue') == []


def test_writes_to_a_missing_issue_name_it(gh):
    ready(gh)
    with board_for(gh, repo=REPO) as board:
        with pytest.raises(ItemNotFound):
            board.comment(999, 'x')
        with pytest.raises(ItemNotFound):
            board.get(999)


# -- mentions (D19) ------------------------------------------------------------------------------

def test_mentions_are_read_without_marking_them_read(gh):
    """The notifications option (classic tokens): an unread thread gates, mark_read marks it read."""
    item = ready(gh)
    other = ready(gh, 'other')
    gh.store.associations.update(alice='COLLABORATOR', human='COLLABORATOR')
    gh.store.mention(REPO, item['number'], '@fleet-bot please also update the docs', author='alice')
    gh.store.mention(REPO, other['number'], '@fleet-bot not this one')
    with board_for(gh, mentions='notifications') as board:
        first = board.mentions(item['number'])
        again = board.mentions(item['number'])
        assert [(m['body'], m['author']) for m in first] == [('@fleet-bot please also update the docs', 'alice')]
        assert again == first  # at-least-once: still unread until mark_read
        board.mark_read([m['id'] for m in first])
        assert board.mentions(item['number']) == []
        assert len(board.mentions(other['number'])) == 1


# -- failures have names (D5, D20) ---------------------------------------------------------------

def test_a_404_json_body_is_an_error_not_data(gh):
    """🔴 D5: an error *object* read as "non-empty" once blocked the fleet. For the one candidate it
    concerns it is a cause (the item is held), never data."""
    item = ready(gh)
    gh.inject(404, {'message': 'Not Found', 'documentation_url': 'https://docs.github.com'}, path='/graphql',
              operation='Details')
    with board_for(gh) as board:
        read = board.read()
    (got,) = read.items
    assert 'details could not be read' in got.unreadable and 'Not Found' in got.unreadable, got.unreadable
    assert read.cost['unreadable'] == [{'item': '%s#%s' % (REPO, item['number']), 'cause': got.unreadable}]
    gh.inject(404, {'message': 'Not Found'}, path='/notifications')
    with board_for(gh, mentions='notifications') as board:
        with pytest.raises(BoardError, match='Not Found'):
            board.mentions(item['number'])


def test_an_error_object_where_blocker_edges_belong_does_not_block():
    """D5 fails open: an edge list that is an error object yields no blocker, not a blocker."""
    item = _nodes.Item(number=1, title='t', state='open')
    _nodes.detail_into(item, {'blockedBy': {'message': 'Not Found'}})
    assert item.blockers == []


def test_http_200_with_errors_is_an_error(gh):
    ready(gh)
    gh.inject(200, {'data': {'organization': None}, 'errors': [{'type': 'FORBIDDEN', 'message': 'Resource not accessible by integration'}]},
              path='/graphql', operation='BoardPage')
    with board_for(gh, owner_type='organization') as board:
        with pytest.raises(BoardUnreadable, match='FORBIDDEN Resource not accessible'):
            board.read()


def test_secondary_rate_limit_honours_retry_after(gh, sleeps):
    ready(gh)
    gh.inject(403, {'message': 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.'},
              headers={'retry-after': '7'}, path='/graphql', operation='BoardPage')
    with board_for(gh, sleeps, owner_type='organization') as board:
        read = board.read()
    assert sleeps == [7.0]
    assert len(read.items) == 1 and read.cost['rate_limit_waits'] == [7.0]
    assert [e['status'] for e in gh.graphql_calls('BoardPage')] == [403, 200]


def test_a_secondary_limit_without_retry_after_waits_a_minute(gh, sleeps):
    ready(gh)
    gh.inject(429, {'message': 'You have exceeded a secondary rate limit.'}, path='/graphql', operation='BoardPage')
    with board_for(gh, sleeps, owner_type='organization') as board:
        board.read()
    assert sleeps == [_transport.SECONDARY_DEFAULT_WAIT]


def test_primary_rate_limit_waits_until_the_reset(gh, sleeps):
    ready(gh)
    reset = int((T0 + _dt.timedelta(seconds=30)).timestamp())
    gh.inject(403, {'message': 'API rate limit exceeded'}, path='/graphql', operation='BoardPage',
              headers={'x-ratelimit-remaining': '0', 'x-ratelimit-reset': str(reset)})
    with board_for(gh, sleeps, owner_type='organization') as board:
        board.read()
    assert sleeps == [31.0]


def test_a_rate_limit_longer_than_the_wait_budget_is_unreadable_with_its_reset(gh, sleeps):
    ready(gh)
    reset = int((T0 + _dt.timedelta(minutes=40)).timestamp())
    gh.inject(200, {'errors': [{'type': 'RATE_LIMITED', 'message': 'API rate limit exceeded for user.'}]},
              path='/graphql', operation='BoardPage', headers={'x-ratelimit-remaining': '0', 'x-ratelimit-reset': str(reset)})
    with board_for(gh, sleeps, owner_type='organization') as board:
        with pytest.raises(RateLimited) as caught:
            board.read()
    assert sleeps == [] and caught.value.kind == 'primary'
    assert caught.value.reset_at == T0 + _dt.timedelta(minutes=40)
    assert isinstance(caught.value, BoardUnreadable)


def test_rate_limit_retries_are_bounded(gh, sleeps):
    ready(gh)
    gh.inject(403, {'message': 'secondary rate limit'}, headers={'retry-after': '1'}, path='/graphql', times=10)
    with board_for(gh, sleeps, owner_type='organization') as board:
        with pytest.raises(RateLimited):
            board.read()
    assert len(sleeps) == _transport.RATE_LIMIT_RETRIES - 1


@pytest.mark.parametrize('status,body,match', [
    (502, '<html>Bad gateway</html>', 'not JSON'),
    (200, [], 'unexpected list body'),
    (200, {'data': None}, 'no "data" object'),
    (200, 'null', 'empty body|unexpected|no "data"'),
])
def test_unreadable_answers_are_named(gh, status, body, match):
    ready(gh)
    gh.inject(status, body, path='/graphql', operation='BoardPage')
    with board_for(gh, owner_type='organization') as board:
        with pytest.raises(BoardUnreadable, match=match):
            board.read()


@pytest.mark.parametrize('spec_change,match', [
    ({'owner': 'nobody'}, 'no user or organization'),
    ({'project': 9}, 'ProjectV2 with the number 9'),
    ({'status_field': 'Stage'}, "no single-select field named 'Stage'"),
    ({'ready': 'Go'}, "no option 'Go'"),
    ({'token': 'wrong'}, 'token is missing, expired or revoked'),
])
def test_misconfiguration_is_unreadable_and_says_what_to_fix(gh, spec_change, match):
    ready(gh)
    with board_for(gh, **spec_change) as board:
        with pytest.raises(BoardUnreadable, match=match) as caught:
            board.read()
    assert TOKEN not in str(caught.value)


def test_a_dead_server_is_unreadable(gh):
    url = gh.url
    gh.stop()
    board = GitHubBoard(dict(spec_for_url(url), owner_type='organization'))
    with pytest.raises(BoardUnreadable, match='did not answer'):
        board.read()


def spec_for_url(url):
    return {'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': url, 'sleep': Sleeps()}


# -- the token (only no_log option or environment) -----------------------------------------------

def test_token_from_the_environment(gh, monkeypatch):
    ready(gh)
    monkeypatch.delenv('GH_TOKEN', raising=False)
    monkeypatch.delenv('FLEET_GITHUB_TOKEN', raising=False)
    monkeypatch.setenv('GITHUB_TOKEN', TOKEN)
    spec = spec_for(gh)
    del spec['token']
    with open_board(spec) as board:
        assert len(board.read().items) == 1


def test_the_documented_fleet_github_token_is_read(gh, monkeypatch):
    """Issue 14: roles/sweeper's README names FLEET_GITHUB_TOKEN; the board read only GITHUB_TOKEN/GH_TOKEN."""
    ready(gh)
    for name in ('GITHUB_TOKEN', 'GH_TOKEN'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('FLEET_GITHUB_TOKEN', TOKEN)
    spec = spec_for(gh)
    del spec['token']
    with open_board(spec) as board:
        assert len(board.read().items) == 1


def test_no_token_is_unreadable(monkeypatch):
    monkeypatch.delenv('FLEET_GITHUB_TOKEN', raising=False)
    monkeypatch.delenv('GITHUB_TOKEN', raising=False)
    monkeypatch.delenv('GH_TOKEN', raising=False)
    with pytest.raises(BoardUnreadable, match='GITHUB_TOKEN'):
        GitHubBoard({'owner': 'acme', 'project': 1})


# -- pure helpers --------------------------------------------------------------------------------

@pytest.mark.parametrize('field,value,expect', [
    ('Status', 'Ready', 'is:issue is:open status:Ready'),
    ('Status', 'In progress', 'is:issue is:open status:"In progress"'),
    ('Work Stage', 'Ready', 'is:issue is:open "work stage":Ready'),
])
def test_project_query(field, value, expect):
    assert _documents.project_query(field, value) == expect
    assert _documents.project_query(field, value, unblocked=True) == expect + ' -is:blocked'


@pytest.mark.parametrize('ref,default,expect', [
    (42, '', ('', 42)), ('42', '', ('', 42)), ('#42', 'a/b', ('a/b', 42)),
    ('acme/app#7', 'x/y', ('acme/app', 7)), (3, 'a/b', ('a/b', 3)),
])
def test_split_ref(ref, default, expect):
    assert _nodes.split_ref(ref, default) == expect


@pytest.mark.parametrize('ref', [True, 'abc', 'a/b#x'])
def test_split_ref_refuses(ref):
    with pytest.raises(BoardError):
        _nodes.split_ref(ref)


def test_status_filter_with_a_spaced_value_reaches_the_right_items(gh):
    gh.store.add_issue(REPO, 'moving', project=PROJECT, status='In progress')
    ready(gh, 'waiting')
    with board_for(gh, ready='In progress') as board:
        assert [i.title for i in board.read().items] == ['moving']


def test_garbage_in_a_well_formed_answer_is_unreadable_not_a_crash(gh):
    ready(gh)
    page = {'data': {'rateLimit': {'cost': 1, 'remaining': 1, 'resetAt': '2026-01-01T00:00:00Z'},
                     'organization': {'projectV2': {
                         'id': 'P', 'title': 't',
                         'field': {'__typename': 'ProjectV2SingleSelectField', 'id': 'F', 'name': 'Status',
                                   'options': [{'id': 'o', 'name': 'Ready'}]},
                         'items': {'totalCount': 1, 'pageInfo': {'hasNextPage': False, 'endCursor': None},
                                   'nodes': [{'id': 'PVTI', 'type': 'ISSUE', 'isArchived': False,
                                              'fieldValueByName': {'__typename': 'ProjectV2ItemFieldSingleSelectValue',
                                                                   'name': 'Ready', 'optionId': 'o'},
                                              'content': {'__typename': 'Issue', 'id': 'I', 'number': 1, 'title': 't',
                                                          'state': 'OPEN', 'url': '', 'createdAt': 'yesterday',
                                                          'updatedAt': None, 'repository': {'nameWithOwner': REPO},
                                                          'issueDependenciesSummary': {'blockedBy': 0, 'totalBlockedBy': 0}}}]}}}}}
    project = page['data']['organization']['projectV2']
    project['tail'] = dict(project['items'], pageInfo={'hasPreviousPage': False, 'startCursor': None})
    gh.inject(200, page, path='/graphql', operation='BoardPage')
    with board_for(gh, owner_type='organization') as board:
        with pytest.raises(BoardUnreadable, match='cannot parse'):
            board.read()


@pytest.mark.parametrize('timeline,expect', [
    ([{'__typename': 'ClosedEvent', 'createdAt': '2026-03-01T12:10:00Z', 'actor': {'login': 'merger'},
       'closer': {'__typename': 'PullRequest', 'number': 5, 'merged': True, 'mergedAt': '2026-03-01T12:10:00Z',
                  'createdAt': '2026-03-01T12:01:00Z', 'repository': {'nameWithOwner': 'acme/app'}}}], ['acme/app#5']),
    ([{'__typename': 'ClosedEvent', 'createdAt': '2026-03-01T12:10:00Z', 'actor': None,
       'closer': {'__typename': 'Commit', 'oid': 'abc'}}], []),
    ([{'__typename': 'ClosedEvent', 'createdAt': '2026-03-01T12:10:00Z', 'closer': None}], []),
    ([{'__typename': 'ClosedEvent', 'createdAt': '2026-03-01T12:10:00Z',
       'closer': {'__typename': 'PullRequest', 'number': 6, 'merged': False, 'mergedAt': None,
                  'createdAt': '2026-03-01T12:01:00Z', 'repository': {'nameWithOwner': 'acme/app'}}}], []),
])
def test_closed_event_closers(timeline, expect):
    """D2: only a merged pull request that closed the issue is an artifact; a commit or a hand
    close is a closed event and nothing more."""
    item = _nodes.Item(number=1, title='t', state='closed')
    _nodes.detail_into(item, {'timelineItems': {'nodes': timeline}})
    assert [a.ref for a in item.artifacts] == expect
    assert [e.kind for e in item.events] == ['closed']


def test_a_runs_board_sequence_against_github(gh):
    """What the runner does on the board (D12, D16, D19), through the shipped decision core: the
    start marker first, mentions injected then marked read, the artifact attributed by time, the
    close-out comment before the close -- and the next read says the item is done."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of

    gh.store.clock = lambda: T0  # the fake's comments and events are stamped at T0
    item = ready(gh, 'run me')
    number = item['number']
    gh.store.associations.update(alice='COLLABORATOR')
    gh.store.mention(REPO, number, '@fleet-bot mind the migration', author='alice', created_at=T0 - _dt.timedelta(minutes=1))
    with board_for(gh) as board:
        verdict = evaluate(by_number(board.read())[number], now=T0, ready='Ready', max_attempts=3)
        assert (verdict.eligible, verdict.reason, verdict.attempts) == (True, 'eligible', 0)
    with board_for(gh) as board:  # the runner: a fresh board, a bare item number
        started = board.post_marker(number, format_marker('start', {'unit': 'task-%d' % number}))['comment']
        brief = [m['body'] for m in board.mentions(number)]
        board.mark_read([m['id'] for m in board.mentions(number)])
        assert brief == ['@fleet-bot mind the migration']
        with board_for(gh) as later:  # anyone else (a status read, the next run): the start marker made it seen
            assert later.mentions(number) == []
        pr = gh.store.add_pr(REPO, 'the work', closes=[number], merged_at=T0 + _dt.timedelta(hours=1),
                             created_at=T0 + _dt.timedelta(minutes=10), close_issues=False)
        run = board.get(number)
        credited = attribute(run.artifacts, number, started.created_at, zero_turns=False)
        assert [a.ref for a in credited] == ['%s#%d' % (REPO, pr['number'])]
        board.post_marker(number, format_marker('success', {'pr': credited[0].ref}, 'Merged the work'), close=True)
    issue = gh.store.issue(REPO, number)
    assert issue['state'] == 'CLOSED'
    with board_for(gh) as board:
        got = board.get(number)
    assert [m.kind for m in markers_of(got)] == ['start', 'success']
    assert evaluate(got, now=T0 + _dt.timedelta(hours=2), ready='Ready', max_attempts=3).eligible is False


@pytest.mark.parametrize('operation', ['Details', 'Blockers'])
def test_one_items_failed_read_holds_that_item_and_the_others_read_on(gh, operation):
    """D5: only the queue read fails closed. An error body answering one candidate's details (or one
    blocked item's blockers) holds that item with the cause; every other item is read and stays a
    candidate, and the board read as a whole succeeds."""
    blocker = gh.store.add_issue(REPO, 'blocker', project=PROJECT, status='Backlog')
    blocked = ready(gh, 'blocked')
    gh.store.add_blocker(REPO, blocked['number'], REPO, blocker['number'])
    good = [ready(gh, 'good %d' % i) for i in range(5)]
    bad = blocked if operation == 'Blockers' else ready(gh, 'bad')
    gh.inject(404, {'message': 'Not Found'}, path='/graphql', operation=operation, node=bad['id'], times=99)
    with board_for(gh) as board:
        read = board.read()
    items = by_number(read)
    assert 'Not Found' in items[bad['number']].unreadable, items[bad['number']]
    assert all(not items[g['number']].unreadable for g in good)
    assert [u['item'] for u in read.cost['unreadable']] == ['%s#%s' % (REPO, bad['number'])]


def test_every_item_failing_alike_is_the_queue_failing(gh):
    """An error every candidate's read gets is the endpoint's, not the items': the read fails closed."""
    for i in range(3):
        ready(gh, 'w%d' % i)
    gh.inject(502, {'message': 'Server Error'}, path='/graphql', operation='Details', times=99)
    with board_for(gh) as board:
        with pytest.raises(BoardUnreadable, match='every one of the 3 items failed alike'):
            board.read()
