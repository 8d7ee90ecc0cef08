# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GraphQL documents the GitHub board sends, and the sizes that shaped them.

Every document is here, by operation name, in ``DOCUMENTS``: the board refuses to send any other,
and the tests validate each one against GitHub's public schema. Pure text; no I/O.
"""

from __future__ import annotations

# -- sizes and thresholds, each with the cost figure that chose it ------------------------------
#
# The figures are GitHub's published formula applied to the documents below (the fake GitHub in
# tests/fakes/github computes the same formula; benchmarks/github_cost.py prints the totals):
# a connection costs one request per parent object, whatever its first/last, so every page size
# is the maximum GitHub allows (100) unless the batch's nested connections push it past 1 point.

PAGE_SIZE = 100
"""Items per page. Derived from GitHub's published cost formula: the page has no nested connection, so a page of 100 is 1 request =
1 point, the same as a page of 10: 100 is GitHub's maximum and the cheapest per item
(0.01 point/item). Each call also reads a page from the back (``tail`` in ``BOARD_PAGE``): two
connections are 2 requests, still 1 point, so 200 items a point (10,000 Ready items = 50 calls,
printed by benchmarks/github_cost.py). Only two ends exist (``ProjectV2ItemOrderField`` has
only ``POSITION``) and a cursor is only ever one GitHub returned, so two pages is the most one call
can read."""

DETAIL_BATCH = 25
"""Issues per ``DETAILS`` call. Each issue carries 4 nested connections (comments, timeline,
closing PRs, blockers) = 4 requests, so 25 issues = 100 requests = exactly 1 point; 100 issues
would be 4 points for the same 0.04 point/issue, in a response four times the size (up to 40,000
nodes). Same price, smaller answers: 25. (Unmeasured: the response time of a 100-issue batch
against GitHub's own 10 s query timeout; a timing run against github.com would settle it.)"""

BLOCKER_BATCH = 100
"""Issues per ``BLOCKERS`` call. Derived from GitHub's published cost formula: one nested connection each, so 100 issues = 100 requests =
1 point, GitHub's maximum ``nodes(ids:)`` length."""

COMMENTS_PER_PAGE = 100
"""``comments(last: 100)``. Derived from GitHub's published cost formula: the cost is per parent, not per node, so the maximum is free; an
issue with more comments is paged backwards with ``MORE_COMMENTS`` (1 point per extra page)."""


# -- the GraphQL documents: every document the board can send (tests validate each one) ---------

RATE_LIMIT_FIELDS = 'rateLimit { cost remaining resetAt limit used nodeCount }'

_STATUS_VALUE = '''
      fieldValueByName(name: $statusField) {
        __typename
        ... on ProjectV2ItemFieldSingleSelectValue { name optionId updatedAt }
      }
      agentValue: fieldValueByName(name: $agentField) { ...RouteValue }
      modelValue: fieldValueByName(name: $modelField) { ...RouteValue }
      effortValue: fieldValueByName(name: $effortField) { ...RouteValue }
      priorityValue: fieldValueByName(name: $priorityField) { ...RouteValue }
      budgetValue: fieldValueByName(name: $budgetField) { ...RouteValue }'''
# The route, priority and budget fields (_core/dispatch/route.py, item_budget.py) ride on the status field's page: a field value
# by name is not a connection, so they cost nothing (the page stays 1 request). A single select, a text
# or a number field each reads as its value; a project without the field answers null (no route).

_ROUTE_FRAGMENT = '''
fragment RouteValue on ProjectV2ItemFieldValue {
  __typename
  ... on ProjectV2ItemFieldSingleSelectValue { name }
  ... on ProjectV2ItemFieldTextValue { text }
  ... on ProjectV2ItemFieldNumberValue { number }
}
'''

ROUTE_FIELD_VARIABLES = ('$agentField: String!, $modelField: String!, $effortField: String!, $priorityField: String!, '
                         '$budgetField: String!')

# The nested connections below each cost one request per parent issue whatever their size, so
# each asks for GitHub's maximum of 100: a Details batch of DETAIL_BATCH (25) issues is
# 25 x 4 = 100 requests = 1 point and at most 25 x 4 x 100 = 10,000 nodes (GitHub's cap: 500,000).
# Comments and closing PRs are read from the newest end (last:), where this run's own are.
# Comments past the first 100 are paged with MORE_COMMENTS; timeline events (closed/reopened
# only), closing PRs and blockers past 100 are not read (unmeasured: no issue in a real fleet is
# known to carry more; a count of these per issue on a production board would settle it).
_ISSUE_DETAIL_FRAGMENT = '''
fragment IssueDetail on Issue {
  comments(last: 100) {
    pageInfo { hasPreviousPage startCursor }
    nodes { id databaseId body createdAt author { __typename login } authorAssociation
                lastEditedAt editor { __typename login } }
  }
  timelineItems(last: 100, itemTypes: [CLOSED_EVENT, REOPENED_EVENT]) {
    nodes {
      __typename
      ... on ClosedEvent {
        createdAt
        actor { login }
        closer {
          __typename
          ... on PullRequest { ...PullFields }
          ... on Commit { id oid }
        }
      }
      ... on ReopenedEvent { createdAt actor { __typename login } }
    }
  }
  closedByPullRequestsReferences(last: 100, includeClosedPrs: true) {
    nodes { ...PullFields }
  }
  ...BlockerEdges
}
'''

_PULL_FRAGMENT = '''
fragment PullFields on PullRequest {
  id number url title state merged mergedAt createdAt baseRefName headRefName headRefOid isCrossRepository
  repository { nameWithOwner defaultBranchRef { name } }
}
'''
# baseRefName and the repository's defaultBranchRef: GitHub closes an issue from a closing
# keyword only when the pull request targets the default branch, and a linked pull request closes
# its issue only when merged into the default branch
# (docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue).


_BLOCKER_FRAGMENT = '''
fragment BlockerEdges on Issue {
  issueDependenciesSummary { blockedBy totalBlockedBy }
  blockedBy(first: 100) {
    nodes { number state repository { nameWithOwner } }
  }
}
'''

OWNER_TYPE = '''
query OwnerType($owner: String!) {
  %s
  repositoryOwner(login: $owner) { __typename login }
}
''' % RATE_LIMIT_FIELDS
"""``owner_type: auto``: is the owner an organization or a user? (1 point, once per instance)"""

BOARD_PAGE = '''
query BoardPage($owner: String!, $isOrg: Boolean!, $number: Int!, $query: String!,
                $statusField: String!, %s,
                $after: String, $before: String) {
  %s
  viewer { login }
  organization(login: $owner) @include(if: $isOrg) { projectV2(number: $number) { ...ProjectPage } }
  user(login: $owner) @skip(if: $isOrg) { projectV2(number: $number) { ...ProjectPage } }
}

fragment ProjectPage on ProjectV2 {
  id
  title
  field(name: $statusField) {
    __typename
    ... on ProjectV2SingleSelectField { id name options { id name } }
  }
  items(first: 100, after: $after, query: $query) { ...ItemPage }
  tail: items(last: 100, before: $before, query: $query) { ...ItemPage }
}

fragment ItemPage on ProjectV2ItemConnection {
  totalCount
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  nodes {
    id
    type
    isArchived%s
    content {
      __typename
      ... on Issue {
        id number title state url createdAt updatedAt
        repository { nameWithOwner }
        issueDependenciesSummary { blockedBy totalBlockedBy }
      }
    }
  }
}
''' % (ROUTE_FIELD_VARIABLES, RATE_LIMIT_FIELDS, _STATUS_VALUE) + _ROUTE_FRAGMENT
"""The page pass: server-side status filter, cheap fields only. Each call reads the next page from the
front (``items``) and the next from the back (``tail``) until they meet: two connections are 2
requests, still 1 point, so 200 items a point (``PAGE_SIZE``). ``viewer`` is not a connection (no
request): the first call answers the preflight too."""

DETAILS = '''
query Details($ids: [ID!]!) {
  %s
  nodes(ids: $ids) {
    __typename
    ... on Issue { id number repository { nameWithOwner } ...IssueDetail }
  }
}
''' % RATE_LIMIT_FIELDS + _ISSUE_DETAIL_FRAGMENT + _PULL_FRAGMENT + _BLOCKER_FRAGMENT
"""The detail pass for items that passed the cheap filter: 4 requests per issue."""

BLOCKERS = '''
query Blockers($ids: [ID!]!) {
  %s
  nodes(ids: $ids) {
    __typename
    ... on Issue { id number repository { nameWithOwner } ...BlockerEdges }
  }
}
''' % RATE_LIMIT_FIELDS + _BLOCKER_FRAGMENT
"""Dependency edges only, for items whose summary shows an open blocker: 1 request per issue."""

MORE_COMMENTS = '''
query MoreComments($id: ID!, $before: String) {
  %s
  node(id: $id) {
    __typename
    ... on Issue {
      comments(last: 100, before: $before) {
        pageInfo { hasPreviousPage startCursor }
        nodes { id databaseId body createdAt author { __typename login } authorAssociation
                lastEditedAt editor { __typename login } }
      }
    }
  }
}
''' % RATE_LIMIT_FIELDS
"""Older comments of an issue with more than one page of them (markers are never truncated)."""

ISSUE = '''
query Issue($owner: String!, $name: String!, $number: Int!, $statusField: String!, %s) {
  %s
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      id number title state body url createdAt updatedAt
      author { __typename login } authorAssociation lastEditedAt editor { __typename login }
      repository { nameWithOwner }
      projectItems(first: 100) {
        nodes {
          id
          project { id number }%s
        }
      }
      ...IssueDetail
    }
  }
}
''' % (ROUTE_FIELD_VARIABLES, RATE_LIMIT_FIELDS, _STATUS_VALUE) + _ISSUE_DETAIL_FRAGMENT + _PULL_FRAGMENT + \
    _BLOCKER_FRAGMENT + _ROUTE_FRAGMENT
"""One item in full (``get``), with its project item (for ``set_status``)."""

PROJECT_FIELD = '''
query ProjectField($owner: String!, $isOrg: Boolean!, $number: Int!, $statusField: String!) {
  %s
  organization(login: $owner) @include(if: $isOrg) { projectV2(number: $number) { ...ProjectField } }
  user(login: $owner) @skip(if: $isOrg) { projectV2(number: $number) { ...ProjectField } }
}

fragment ProjectField on ProjectV2 {
  id
  field(name: $statusField) {
    __typename
    ... on ProjectV2SingleSelectField { id name options { id name } }
  }
}
''' % RATE_LIMIT_FIELDS
"""The project, status field and option ids by name, when no read resolved them this cycle."""

SET_STATUS = '''
mutation SetStatus($projectId: ID!, $itemId: ID!, $fieldId: ID!, $optionId: String!) {
  updateProjectV2ItemFieldValue(input: {projectId: $projectId, itemId: $itemId, fieldId: $fieldId,
                                        value: {singleSelectOptionId: $optionId}}) {
    projectV2Item { id }
  }
}
'''
"""Set the single-select status field of one project item."""

PREFLIGHT = '''
query Preflight {
  %s
  viewer { login }
}
''' % RATE_LIMIT_FIELDS
"""Who the token is (1 point, once per board instance): the fleet's identity for mentions, and the
answer whose headers say what a classic token may do (``X-OAuth-Scopes``). ``viewer`` answers for
an installation token too, as ``<app-slug>[bot]``, where REST ``GET /user`` is refused
(fullsend-ai/fullsend#1953 observed it; D18: the app cannot log in interactively)."""

COMMIT_PULLS = '''
query CommitPulls($ids: [ID!]!) {
  %s
  nodes(ids: $ids) {
    __typename
    ... on Commit {
      id oid
      associatedPullRequests(first: 10) { nodes { ...PullFields } }
    }
  }
}
''' % RATE_LIMIT_FIELDS + _PULL_FRAGMENT
"""The pull requests of the commits that closed an issue (a ``ClosedEvent`` whose closer is a
``Commit``): GitHub closes an issue from a keyword in a commit message once that commit reaches the
default branch, with no linked pull request; the merged pull request that brought the commit in is
the artifact (D16 time attribution applies to it as to any other). One request per commit, only
for issues a commit closed (a nested ``associatedPullRequests`` under the timeline would cost one
request per timeline event of every issue in a Details batch)."""

PERMISSION = '''
query Permission($owner: String!, $name: String!, $login: String!) {
  %s
  repository(owner: $owner, name: $name) {
    collaborators(login: $login, first: 1) { edges { permission node { login } } }
  }
}
''' % RATE_LIMIT_FIELDS
"""The permission on a repository of the account that reopened one of its issues (a reopen counts
only from the fleet's identities or an account with write access: ``_core.dispatch.eligibility``).
An event's actor carries no ``authorAssociation`` (comments do), and ``MEMBER`` there is
organization membership, not write access: ``RepositoryCollaboratorEdge.permission`` is the one
field that says it. Asked only for reopens by someone who is not the fleet, once per repository and
login per board instance (1 point each); reading collaborators needs push access, which the fleet's
token has. No answer, or an error, leaves the permission unknown and the reopen does not count."""

REVIEW_THREADS = 50
"""``reviewThreads(last: 50)`` of the one pull request a run continues. With ``THREAD_COMMENTS`` (20) under
each, the ``PULL_DETAILS`` call is 1 + 50 + 1 + 1 = 53 requests = 1 point (GitHub's formula), read once per
continued candidate in ``get`` (D1: after the cheap filter, never on the page). 100 threads would be 2 points for
a review no agent could address in one round (a guess; settle it: the thread count of real review rounds, set the page
above their p95)."""

THREAD_COMMENTS = 20
"""``comments(first: 20)`` of each review thread: the opening comment and its replies; a longer thread is cut (a guess;
settle it: the comment count of real review threads, set it above their p95 while the call stays 1 point)."""

PULL_DETAILS = '''
query PullDetails($id: ID!) {
  %s
  node(id: $id) {
    __typename
    ... on PullRequest {
      number state headRefName headRefOid isCrossRepository
      reviewThreads(last: %d) {
        nodes {
          isResolved isOutdated path line
          comments(first: %d) { nodes { body createdAt author { __typename login } authorAssociation } }
        }
      }
      latestOpinionatedReviews(first: 100) {
        nodes { state body submittedAt author { __typename login } authorAssociation }
      }
      statusCheckRollup {
        contexts(first: 100) {
          nodes {
            __typename
            ... on CheckRun { name status conclusion title summary detailsUrl isRequired(pullRequestId: $id) }
            ... on StatusContext { context state description targetUrl isRequired(pullRequestId: $id) }
          }
        }
      }
    }
  }
}
''' % (RATE_LIMIT_FIELDS, REVIEW_THREADS, THREAD_COMMENTS)
"""The review and checks of the pull request a run continues (``_core.dispatch.pr_loop``): unresolved threads,
each reviewer's latest opinion, and the head's check runs and commit statuses with whether the base branch's
protection requires them (``isRequired``)."""

DOCUMENTS = {
    'OwnerType': OWNER_TYPE,
    'BoardPage': BOARD_PAGE,
    'Details': DETAILS,
    'Blockers': BLOCKERS,
    'MoreComments': MORE_COMMENTS,
    'Issue': ISSUE,
    'ProjectField': PROJECT_FIELD,
    'SetStatus': SET_STATUS,
    'CommitPulls': COMMIT_PULLS,
    'Preflight': PREFLIGHT,
    'Permission': PERMISSION,
    'PullDetails': PULL_DETAILS,
}
"""Every GraphQL document the board can send, by operation name. ``GitHubBoard._graphql`` refuses any
other, so this dict *is* the list tests/unit/plugins/module_utils/_board/github/test_documents.py
validates."""


# -- the page pass's server-side filter ---------------------------------------------------------

def project_query(status_field: str, ready: str, *, unblocked: bool = False) -> str:
    """The server-side filter of the page pass: open issues whose status field is ``ready``, and with
    ``unblocked`` only those with no open blocker (``-is:blocked``).

    GitHub's project filter syntax is ``field:value``, the field name in lower case; a value or
    field name with spaces is quoted. (Field names with spaces, and ``is:blocked``: verified only
    against the fake, which parses the same syntax. A server that ignored ``-is:blocked`` would only
    cost the points it saves: the board still sorts each row by its open-blocker count.)
    """
    query = 'is:issue is:open %s:%s' % (_quote_filter(status_field.lower()), _quote_filter(ready))
    return query + ' -is:blocked' if unblocked else query


def _quote_filter(text: str) -> str:
    text = str(text)
    if any(ch.isspace() for ch in text) or ':' in text or '"' in text:
        return '"%s"' % text.replace('"', '')
    return text
