# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake GitHub itself: if it lies, every board test above it proves nothing.

Checked here: GitHub's limits enforced at run time, the cost returned in ``rateLimit``, the
``includeClosedPrs`` default, the project filter, the REST endpoints (dependencies, 404 bodies,
bad credentials) and an exhausted primary limit.
"""

from __future__ import annotations

import pytest
import requests

from fakes.github.executor import parse_filter

TOKEN = 't0ken'
AUTH = {'Authorization': 'bearer %s' % TOKEN}


@pytest.fixture
def gh(fake_github):
    return fake_github(TOKEN, rate_limit=100)


def gql(gh, query, variables=None, name=None):
    r = requests.post(gh.url + '/graphql', json={'query': query, 'variables': variables or {}, 'operationName': name},
                      headers=AUTH, timeout=30)
    return r.status_code, r.json(), r.headers


PAGE = '''query P($after: String) { rateLimit { cost remaining }
  organization(login: "acme") { projectV2(number: 1) {
    items(first: 100, after: $after, query: "is:issue status:Ready") { totalCount pageInfo { hasNextPage endCursor }
      nodes { id content { ... on Issue { number %s } } } } } } }'''


def test_cost_in_rate_limit_follows_the_formula(gh):
    for n in range(3):
        gh.store.add_issue('acme/app', 'i%d' % n, project=('acme', 1), status='Ready')
    status, body, _h = gql(gh, PAGE % '')
    assert status == 200 and body['data']['rateLimit'] == {'cost': 1, 'remaining': 99}
    _s, body, _h = gql(gh, PAGE % 'comments(last: 100) { totalCount } labels(first: 10) { totalCount }')
    assert body['data']['rateLimit']['cost'] == 2  # 1 + 100 + 100 requests = 201 -> 2 points
    assert body['data']['rateLimit']['remaining'] == 97


@pytest.mark.parametrize('selection,kind', [
    ('comments { totalCount }', 'MISSING_PAGINATION_BOUNDARIES'),
    ('comments(first: 101) { totalCount }', 'EXCESSIVE_PAGINATION'),
])
def test_githubs_limits_are_enforced_at_run_time(gh, selection, kind):
    status, body, _h = gql(gh, PAGE % selection)
    assert status == 200 and 'data' not in body
    assert [e['type'] for e in body['errors']] == [kind]


def test_an_invalid_document_is_refused(gh):
    _s, body, _h = gql(gh, '{ organization(login: "acme") { projectV3 } }')
    assert body['errors'][0]['type'] == 'INVALID'


def test_closing_prs_default_hides_merged_ones(gh):
    issue = gh.store.add_issue('acme/app', 'x', project=('acme', 1), status='Ready')
    gh.store.add_pr('acme/app', 'merged', closes=[issue['number']], merged_at='2026-01-01T00:00:00Z')
    gh.store.add_pr('acme/app', 'open', closes=[issue['number']])
    q = '''query { repository(owner: "acme", name: "app") { issue(number: %d) {
             d: closedByPullRequestsReferences(first: 10) { nodes { title } }
             a: closedByPullRequestsReferences(first: 10, includeClosedPrs: true) { nodes { title merged } } } } }'''
    _s, body, _h = gql(gh, q % issue['number'])
    got = body['data']['repository']['issue']
    assert [n['title'] for n in got['d']['nodes']] == ['open']
    assert [(n['title'], n['merged']) for n in got['a']['nodes']] == [('merged', True), ('open', False)]


@pytest.mark.parametrize('text,expect', [
    ('is:issue is:open status:Ready', [(False, 'is', ['issue']), (False, 'is', ['open']), (False, 'status', ['Ready'])]),
    ('status:"In progress",Ready -is:closed', [(False, 'status', ['In progress', 'Ready']), (True, 'is', ['closed'])]),
    ('"work stage":Ready bug', [(False, 'work stage', ['Ready']), (False, None, ['bug'])]),
    ('status:Ready -is:blocked', [(False, 'status', ['Ready']), (True, 'is', ['blocked'])]),
])
def test_parse_filter(text, expect):
    assert parse_filter(text) == expect


def test_paging_walks_every_item_once(gh):
    for n in range(205):
        gh.store.add_issue('acme/app', 'i%d' % n, project=('acme', 1), status='Ready')
    seen, after = [], None
    while True:
        _s, body, _h = gql(gh, PAGE % '', {'after': after})
        conn = body['data']['organization']['projectV2']['items']
        seen.extend(n['content']['number'] for n in conn['nodes'])
        if not conn['pageInfo']['hasNextPage']:
            break
        after = conn['pageInfo']['endCursor']
    assert seen == list(range(1, 206))


def test_the_project_filter_leaves_out_issues_with_an_open_blocker_on_is_blocked(gh):
    blocker = gh.store.add_issue('acme/app', 'blocker', project=('acme', 1), status='Backlog')
    free = gh.store.add_issue('acme/app', 'free', project=('acme', 1), status='Ready')
    held = gh.store.add_issue('acme/app', 'held', project=('acme', 1), status='Ready')
    gh.store.add_blocker('acme/app', held['number'], 'acme/app', blocker['number'])
    query = PAGE.replace('"is:issue status:Ready"', '"is:issue status:Ready -is:blocked"')
    _s, body, _h = gql(gh, query % '')
    assert [n['content']['number'] for n in body['data']['organization']['projectV2']['items']['nodes']] == [free['number']]
    gh.store.set_state(blocker, 'closed')
    _s, body, _h = gql(gh, query % '')
    assert [n['content']['number'] for n in body['data']['organization']['projectV2']['items']['nodes']] \
        == [free['number'], held['number']], 'a closed blocker blocks nothing'


def test_rest_dependencies_round_trip(gh):
    a = gh.store.add_issue('acme/app', 'a')
    b = gh.store.add_issue('acme/app', 'b')
    url = gh.url + '/repos/acme/app/issues/%d/dependencies/blocked_by' % a['number']
    assert requests.post(url, json={'issue_id': b['databaseId']}, headers=AUTH, timeout=10).status_code == 201
    listed = requests.get(url, headers=AUTH, timeout=10).json()
    assert [(i['number'], i['state']) for i in listed] == [(b['number'], 'open')]
    assert requests.delete(url + '/%d' % b['databaseId'], headers=AUTH, timeout=10).status_code == 200
    assert requests.get(url, headers=AUTH, timeout=10).json() == []


def test_rest_404_and_401_bodies_are_githubs(gh):
    r = requests.get(gh.url + '/repos/acme/app/issues/999', headers=AUTH, timeout=10)
    assert r.status_code == 404 and r.json()['message'] == 'Not Found'
    r = requests.get(gh.url + '/notifications', headers={'Authorization': 'bearer nope'}, timeout=10)
    assert r.status_code == 401 and r.json()['message'] == 'Bad credentials'


def test_an_exhausted_primary_limit_is_rate_limited(gh):
    gh.rate_limit['used'] = gh.rate_limit['limit']
    _s, body, headers = gql(gh, PAGE % '')
    assert [e['type'] for e in body['errors']] == ['RATE_LIMITED']
    assert headers['x-ratelimit-remaining'] == '0' and int(headers['x-ratelimit-reset']) > 0
