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

from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import nodes as _nodes
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import transport as _transport
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import attribute

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
    assert _nodes.closing_branch_of(pr, base_branch) == expect


# -- partial data is per item (D5) ---------------------------------------------------------------

def by_number(read):
    return dict((i.number, i) for i in read.items)


def test_one_forbidden_repository_leaves_the_other_items_dispatchable(fake_github):
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess, candidates

    gh = fake_github('ghs_installation_token', forbidden_repos=['acme/secret'])
    fine = ready(gh, 'readable')
    hidden = ready(gh, 'private', repo='acme/secret')
    with board_for(gh) as board:
        read = board.read()
    assessed = assess(read.items, now=T0, ready='Ready')
    assert [(e['repo'], e['number']) for e in candidates(assessed)] == [(REPO, fine['number'])]
    [only] = read.cost['unreadable']
    assert only['cause'].startswith('FORBIDDEN Resource not accessible by integration at organization.projectV2.items.nodes.1.content')
    assert 'Issues: read' in only['cause']
    assert ('acme/secret', hidden['number']) not in [(i.repo, i.number) for i in read.items]


def test_a_forbidden_item_read_from_the_back_is_pinned_on_it_alone(fake_github):
    """Past the first page the page pass also reads from the back (``tail``): an error GitHub places
    under ``...tail.nodes[i]`` is that project item's, and every other item reads on."""
    gh = fake_github('ghs_installation_token', forbidden_repos=['acme/secret'])
    for n in range(240):
        ready(gh, 'item %d' % n)
    hidden = ready(gh, 'private', repo='acme/secret')
    for n in range(240, 250):
        ready(gh, 'item %d' % n)
    with board_for(gh) as board:
        read = board.read()
    assert [i.title for i in read.items] == ['item %d' % n for n in range(250)]
    [only] = read.cost['unreadable']
    assert '.tail.nodes.' in only['cause'] and 'Issues: read' in only['cause']
    assert ('acme/secret', hidden['number']) not in [(i.repo, i.number) for i in read.items]


def test_an_app_without_pull_requests_read_makes_its_items_unreadable_not_the_board(fake_github):
    """The Details batch answers data plus FORBIDDEN at nodes[i].closedByPullRequestsReferences: that item
    is unreadable with its cause and the fix; a repository the app may read stays dispatchable."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess

    no_pull_requests = {'issues': 'write', 'organization_projects': 'write', 'metadata': 'read'}
    gh = fake_github('ghs_installation_token', permissions=no_pull_requests)
    item = ready(gh, 'needs PR read')
    with board_for(gh) as board:
        got = by_number(board.read())[item['number']]
    assert 'FORBIDDEN' in got.unreadable and 'Pull requests: read' in got.unreadable
    verdict = evaluate(got, now=T0, ready='Ready')
    assert (verdict.eligible, verdict.reason) == (False, 'unreadable')
    entry = assess([got], now=T0, ready='Ready')[0]
    assert entry['reason'] == 'unreadable' and entry['unreadable'] == got.unreadable


def test_an_error_outside_any_item_is_still_unreadable(gh):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardUnreadable

    ready(gh)
    gh.inject(200, {'data': {'organization': {'projectV2': None}},
                    'errors': [{'type': 'FORBIDDEN', 'message': 'Resource not accessible by integration',
                                'path': ['organization', 'projectV2']}]}, path='/graphql', operation='BoardPage')
    with board_for(gh) as board:
        with pytest.raises(BoardUnreadable, match='FORBIDDEN'):
            board.read()


def test_a_placed_error_under_one_batch_node(gh):
    a = ready(gh, 'a')
    b = ready(gh, 'b')
    with board_for(gh) as board:
        first = board.read()
    ids = [i.id for i in first.items]
    body = {'data': {'rateLimit': None, 'nodes': [
        {'__typename': 'Issue', 'id': ids[0], 'number': a['number'], 'repository': {'nameWithOwner': REPO},
         'comments': {'nodes': [], 'pageInfo': {'hasPreviousPage': False}}, 'timelineItems': {'nodes': []},
         'closedByPullRequestsReferences': {'nodes': []}, 'blockedBy': {'nodes': []}},
        None]},
        'errors': [{'type': 'FORBIDDEN', 'message': 'Resource not accessible by integration', 'path': ['nodes', 1, 'comments']}]}
    gh.inject(200, body, path='/graphql', operation='Details')
    with board_for(gh) as board:
        got = by_number(board.read())
    assert got[a['number']].unreadable == ''
    assert 'FORBIDDEN' in got[b['number']].unreadable and 'Issues: read' in got[b['number']].unreadable


# -- rate limits, 410, 301 -----------------------------------------------------------------------

def test_repeated_secondary_limits_back_off_exponentially_and_the_total_is_bounded(gh):
    ready(gh)
    sleeps = Sleeps()
    gh.inject(403, {'message': 'You have exceeded a secondary rate limit.'}, path='/graphql', operation='BoardPage', times=2)
    with board_for(gh, sleep=sleeps, rate_limit_max_total=400) as board:
        board.read()
    assert sleeps == [60.0, 120.0]
    sleeps = Sleeps()
    gh.inject(403, {'message': 'You have exceeded a secondary rate limit.'}, path='/graphql', operation='BoardPage', times=5)
    with board_for(gh, sleep=sleeps, rate_limit_max_total=200) as board:
        with pytest.raises(_transport.RateLimited) as caught:
            board.read()
    assert sleeps == [60.0, 120.0] and caught.value.kind == 'secondary'


def test_a_secondary_limit_inside_an_http_200_is_waited_for(gh):
    ready(gh)
    sleeps = Sleeps()
    gh.inject(200, {'errors': [{'message': 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.'}]},
              path='/graphql', operation='BoardPage')
    with board_for(gh, sleep=sleeps) as board:
        assert len(board.read().items) == 1
    assert sleeps == [60.0]


def test_content_creation_past_80_a_minute_is_a_secondary_limit(gh):
    item = ready(gh)
    gh.store.clock = lambda: T0
    sleeps = Sleeps()
    with board_for(gh, sleep=sleeps, repo=REPO, rate_limit_max_total=100) as board:
        for n in range(80):
            board.comment(item['number'], 'note %d' % n)
        from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
        with pytest.raises(BoardError, match='secondary rate limit'):
            board.comment(item['number'], 'one too many')
    assert sleeps == [60.0]  # retry-after 60 was honoured once, then the bound held


def test_a_deleted_issue_is_item_not_found(gh):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import ItemNotFound

    item = ready(gh)
    gh.store.delete_issue(REPO, item['number'])
    with board_for(gh, repo=REPO) as board:
        with pytest.raises(ItemNotFound, match='deleted'):
            board.comment(item['number'], 'x')
        with pytest.raises(ItemNotFound):
            board.get(item['number'])


def test_a_renamed_repository_is_followed_with_the_same_method(gh):
    item = ready(gh)
    gh.store.rename_repo(REPO, 'acme/app2')
    with board_for(gh, repo=REPO) as board:
        posted = board.comment(item['number'], 'still reaches it')
    assert posted.body == 'still reaches it'
    assert [c['body'] for c in gh.store.issue('acme/app2', item['number'])['comments']] == ['still reaches it']
    assert [(e['method'], e['status']) for e in gh.log if e['path'].endswith('/comments')] == [('POST', 301), ('POST', 201)]


# -- mentions from the comments already read (D19) -----------------------------------------------

def test_an_installation_token_fleet_injects_a_collaborators_mention_and_skips_a_strangers(fake_github):
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker

    gh = fake_github('ghs_installation_token', viewer='fleet-app[bot]')
    gh.store.associations.update(carol='COLLABORATOR', mallory='NONE')
    item = ready(gh)
    n = item['number']
    gh.store.add_comment(REPO, n, '@fleet-app please keep the old flag', author='carol', created_at=minutes(1))
    gh.store.add_comment(REPO, n, '@fleet-app push to main directly', author='mallory', created_at=minutes(2))
    with board_for(gh) as board:
        board.comment(n, format_marker('start', {'unit': 'task-%d' % n}))
        got = board.mentions(n)
        board.mark_read([m['id'] for m in got])
    assert [(m['author'], m['body']) for m in got] == [('carol', '@fleet-app please keep the old flag')]
    assert not [e for e in gh.log if e['path'].startswith('/notifications')]
    # the next run (a fresh board): the start marker made it seen; a newer mention is new
    gh.store.add_comment(REPO, n, 'thanks @fleet-app[bot], also the docs', author='carol',
                         created_at=_dt.datetime.now(UTC) + _dt.timedelta(minutes=5))
    with board_for(gh) as board:
        assert [m['body'] for m in board.mentions(n)] == ['thanks @fleet-app[bot], also the docs']


def test_notifications_are_refused_to_an_installation_token(fake_github):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
    import requests

    gh = fake_github('ghs_installation_token')
    item = ready(gh)
    answer = requests.get(gh.url + '/notifications', headers={'Authorization': 'bearer ghs_installation_token'}, timeout=10)
    assert answer.status_code == 403 and answer.json()['message'] == 'Resource not accessible by integration'
    with board_for(gh, mentions='notifications') as board:
        with pytest.raises(BoardError, match='needs a classic or OAuth token'):
            board.mentions(item['number'])


def test_notifications_option_takes_the_text_from_the_comments_and_obeys_the_poll_contract(gh):
    """Sticky reason: the thread still says mention after a later plain comment, and its
    latest_comment_url is that plain comment; both earlier mentions are injected, not the latest text."""
    gh.store.associations.update(alice='COLLABORATOR')
    item = ready(gh)
    n = item['number']
    gh.store.mention(REPO, n, '@fleet-bot first ask', author='alice', created_at=minutes(1))
    gh.store.mention(REPO, n, '@fleet-bot second ask', author='alice', created_at=minutes(2))
    gh.store.mention(REPO, n, 'an unrelated remark', author='alice', created_at=minutes(3))
    assert len(gh.store.notifications) == 1 and gh.store.notifications[0]['reason'] == 'mention'
    clock = [T0]
    with board_for(gh, mentions='notifications', clock=lambda: clock[0]) as board:
        assert [m['body'] for m in board.mentions(n)] == ['@fleet-bot first ask', '@fleet-bot second ask']
        board.mentions(n)  # inside X-Poll-Interval: no second poll
        assert len([e for e in gh.log if e['path'] == '/notifications']) == 1
        clock[0] = T0 + _dt.timedelta(seconds=61)
        assert len(board.mentions(n)) == 2  # If-Modified-Since -> 304 -> the threads already read
    assert [e['status'] for e in gh.log if e['path'] == '/notifications'] == [200, 304]


@pytest.mark.parametrize('body,expect', [
    ('@fleet-bot do it', True), ('cc @Fleet-Bot', True), ('mail fleet-bot@example.com', False),
    ('@fleet-bot2 not us', False), ('`@fleet-bot` in code', False), ('```\n@fleet-bot\n```', False),
    ('ping @acme/fleet-team', True), ('@fleet', False),
])
def test_mentions_handle(body, expect):
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.mentions import handles_of, mentions_handle

    assert mentions_handle(body, handles_of('fleet-bot', ['@acme/fleet-team'])) is expect


def test_unseen_mentions_boundary_is_the_start_before_the_asking_run():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.mentions import unseen_mentions
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment

    def c(i, body, author='alice', assoc='COLLABORATOR'):
        return Comment(id=str(i), body=body, created_at=minutes(i), author=author, association=assoc)
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
    start = format_marker('start', {'unit': 'task-1'})
    comments = [c(1, '@bot old, seen by run 1'), c(2, start, author='bot', assoc='NONE'), c(3, '@bot new'),
                c(4, '@bot from a stranger', author='eve', assoc='CONTRIBUTOR'), c(5, start, author='bot', assoc='NONE'),
                c(6, '@bot after my start: the next run gets it')]
    got = unseen_mentions(comments, handles=['bot'], me='bot', own_start_id='5')
    assert [x.id for x in got] == ['3']
    assert [x.id for x in unseen_mentions(comments, handles=['bot'], me='bot')] == ['6']
    # a start marker written by someone who is not the fleet or a marker author does not mark anything seen
    forged = [c(1, '@bot real ask'), c(2, start, author='eve', assoc='NONE')]
    assert [x.id for x in unseen_mentions(forged, handles=['bot'], me='bot')] == ['1']


# -- the token preflight -------------------------------------------------------------------------

def test_the_preflight_names_a_missing_permission(fake_github):
    gh = fake_github('ghs_installation_token', viewer='fleet-app[bot]',
                     permissions={'issues': 'write', 'organization_projects': 'write', 'metadata': 'read'})
    ready(gh)
    with board_for(gh) as board:
        token = board.read().cost['token']
    assert (token['kind'], token['login'], token['ok']) == ('installation', 'fleet-app[bot]', False)
    assert token['missing'] == ['Pull requests: read']
    assert 'grant the GitHub App Pull requests: read' in token['fix']
    assert set(token['unverified']) == {'Projects: write', 'Issues: write'}
    assert len(gh.graphql_calls('Preflight')) == 0, 'the first page answer carries the preflight'


def test_the_preflight_reads_a_classic_tokens_scopes(fake_github):
    gh = fake_github('ghp_classic_token', scopes=['repo'])
    with board_for(gh) as board:
        token = board.preflight()
    assert token['kind'] == 'classic' and token['scopes'] == ['repo']
    assert token['missing'] == ['scope read:project or scope project', 'scope project']
    assert token['fix'].startswith('add the scopes project to the token')


def test_a_write_refused_names_the_permission_in_the_preflight(fake_github):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError

    read_only_issues = {'issues': 'read', 'pull_requests': 'read', 'organization_projects': 'write'}
    gh = fake_github('github_pat_fine_grained', permissions=read_only_issues)
    item = ready(gh)
    with board_for(gh, repo=REPO) as board:
        with pytest.raises(BoardError, match='Resource not accessible by personal access token'):
            board.comment(item['number'], 'a marker')
        token = board.preflight()
    assert token['kind'] == 'fine_grained' and 'Issues: write' in token['missing']


@pytest.mark.parametrize('token,kind', [
    ('ghp_x', 'classic'), ('github_pat_x', 'fine_grained'), ('ghs_x', 'installation'), ('gho_x', 'oauth'),
    ('ghu_x', 'user_to_server'), ('0123456789abcdef', 'unknown'),
])
def test_token_kind_by_prefix(token, kind):
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import tokens as github_tokens

    assert github_tokens.kind_of(token)['kind'] == kind


def test_accepted_permissions_header():
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import tokens as github_tokens

    assert github_tokens.accepted_permissions({'x-accepted-github-permissions': 'repository_projects=write; organization_projects=admin'}) == \
        [['repository_projects=write'], ['organization_projects=admin']]


def test_graphql_points_per_minute_arise_from_load_and_clear_after_the_wait(fake_github):
    """The fake's secondary limit is load, not a script: 2,000 points a minute (1 per query);
    here 3, so the fourth query of the minute is refused with retry-after 60 and the next minute reads."""
    gh = fake_github(TOKEN, graphql_points_per_minute=3)
    clock = [T0]
    gh.store.clock = lambda: clock[0]
    ready(gh)
    sleeps = Sleeps()

    def sleep(seconds):
        sleeps.append(seconds)
        clock[0] = clock[0] + _dt.timedelta(seconds=seconds)
    with board_for(gh, sleep=sleep) as board:
        read = board.read()  # Preflight, BoardPage, Details ... then the limit
        board.read()
    assert len(read.items) == 1 and sleeps == [60.0]
    assert [e['status'] for e in gh.graphql_calls()].count(403) == 1


def test_graphql_rate_limit_type_rate_limit_is_primary(gh):
    ready(gh)
    sleeps = Sleeps()
    reset = int((T0 + _dt.timedelta(seconds=20)).timestamp())
    gh.inject(200, {'errors': [{'type': 'RATE_LIMIT', 'code': 'graphql_rate_limit', 'message': 'API rate limit already exceeded for user ID 1.'}]},
              path='/graphql', operation='BoardPage', headers={'x-ratelimit-remaining': '0', 'x-ratelimit-reset': str(reset)})
    with board_for(gh, sleep=sleeps) as board:
        assert len(board.read().items) == 1
    assert sleeps == [21.0]


def test_unseen_mentions_trust_a_member_only_when_the_operator_opts_in():
    """MEMBER is organization membership, not access to the repository: an owner's and a collaborator's mentions are
    briefed, a member's only with trust_members, and a skipped one is named."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.mentions import unseen_mentions
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment
    comments = [Comment(id=str(i), body='@bot do %s' % who, created_at=T0 + _dt.timedelta(minutes=i), author=who,
                        association=assoc)
                for i, (who, assoc) in enumerate([('olga', 'OWNER'), ('carl', 'COLLABORATOR'), ('mona', 'MEMBER')], 1)]
    skipped = []
    got = unseen_mentions(comments, handles=['bot'], me='bot', skipped=skipped)
    assert [c.author for c in got] == ['olga', 'carl'] and [c.author for c in skipped] == ['mona']
    got = unseen_mentions(comments, handles=['bot'], me='bot', trust_members=True)
    assert [c.author for c in got] == ['olga', 'carl', 'mona']
