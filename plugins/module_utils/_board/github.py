# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub Projects v2 board: the ``Board`` protocol over GitHub's GraphQL and REST APIs.

The board *is* the queue, read live: one paginated GraphQL query a cycle with the status filter on
the server, cheap fields on the page, expensive ones per candidate.

The rules in full, with their reasons: ``docs/internals.md``, section ``_board/github.py``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import time
from typing import Any, Dict, List, Optional, Tuple

from . import github_tokens
from .protocol import Board, BoardError, BoardRead, BoardUnreadable, ItemNotFound
from .._core.announce import REPORT_LABEL, SILENCED_LABEL
from .._core.markers import markers_of
from .._core.naming import item_number
from .._core.mentions import handles_of, unseen_mentions
from .._core.model import Artifact, Blocker, Comment, Event, Item, UTC, format_time, parse_time
from .._core.references import defang

try:
    import requests
    HAS_REQUESTS = True
    REQUESTS_IMPORT_ERROR = None
except ImportError as _exc:  # pragma: no cover - environment dependent
    requests = None
    HAS_REQUESTS = False
    REQUESTS_IMPORT_ERROR = _exc


# -- sizes and thresholds, each with the cost figure that chose it ------------------------------
#
# The figures are GitHub's published formula applied to the documents below (the fake GitHub in
# tests/fakes/github computes the same formula; benchmarks/github_cost.py prints the totals):
# a connection costs one request per parent object, whatever its first/last, so every page size
# is the maximum GitHub allows (100) unless the batch's nested connections push it past 1 point.

PAGE_SIZE = 100
"""Items per page pass call. Derived from GitHub's published cost formula: the page has no nested connection, so a page of 100 is 1 request =
1 point, the same as a page of 10: 100 is GitHub's maximum and the cheapest per item
(0.01 point/item; 5,000 items = 50 points, printed by benchmarks/github_cost.py)."""

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

RATE_LIMIT_MAX_WAIT = 90.0
"""Longest wait (seconds) the client sleeps for a rate limit before giving up with the reset time.
Unmeasured guess: a sweep runs every few minutes (the sweeper's timer), so waiting longer than
about a minute and a half only delays the next cycle's fresh read; GitHub's secondary limit
asks for ``retry-after`` values of 60 s in its documentation. Settle it by logging the
``retry-after`` values a real fleet receives for a week."""

RATE_LIMIT_RETRIES = 3
"""Attempts per call when GitHub answers with a rate limit (unmeasured guess: one wait usually
clears a secondary limit; three bounds a call at 3 x RATE_LIMIT_MAX_WAIT). Experiment that settles it:
count, over a week of a real fleet's logs, how many waits each rate-limited call needed."""

SECONDARY_DEFAULT_WAIT = 60.0
"""Derived from GitHub's documented advice when a secondary rate limit names no ``retry-after``:
wait at least one minute."""

SECONDARY_MAX_TOTAL = 300.0
"""Most seconds one call sleeps for *repeated* secondary limits. GitHub: "If your request continues
to fail due to a secondary rate limit, wait for an exponentially increasing amount of time between
retries, and throw an error after a specific number of retries"
(docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit).
Each repeat waits at least twice the one before (60, 120, ...); a wait that would take the total
past this bound is not slept: the call fails with the time it would clear. Unmeasured guess: five
minutes is about one sweeper period; a week of a real fleet's secondary waits would settle it."""

MAX_REDIRECTS = 3
"""Redirects followed per call. Unmeasured guess: a renamed or transferred repository answers 301
once, so three hops allow a rename of a transfer and still stop a loop; logging the redirect
chains a real fleet meets (``_Transport.redirects``) for a week would settle it."""

HTTP_TIMEOUT = (10.0, 60.0)
"""(connect, read) seconds. Unmeasured guess: GitHub ends a GraphQL query at 10 s server side,
so a 60 s read timeout only triggers on a broken connection. Experiment that settles it: log each
board read's slowest response for a week and keep the read timeout at 3x the p99 or more."""

USER_AGENT = 'fleet.dispatch-github-board'


# -- the GraphQL documents: every document this module can send (tests validate each one) -------

RATE_LIMIT_FIELDS = 'rateLimit { cost remaining resetAt limit used nodeCount }'

_STATUS_VALUE = '''
      fieldValueByName(name: $statusField) {
        __typename
        ... on ProjectV2ItemFieldSingleSelectValue { name optionId }
      }'''

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
    nodes { id databaseId body createdAt author { login } authorAssociation }
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
      ... on ReopenedEvent { createdAt actor { login } }
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
  number url title state merged mergedAt createdAt baseRefName
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
                $statusField: String!, $after: String) {
  %s
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
  items(first: 100, after: $after, query: $query) {
    totalCount
    pageInfo { hasNextPage endCursor }
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
}
''' % (RATE_LIMIT_FIELDS, _STATUS_VALUE)
"""The page pass: server-side status filter, cheap fields only; 1 point per 100 items."""

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
        nodes { id databaseId body createdAt author { login } authorAssociation }
      }
    }
  }
}
''' % RATE_LIMIT_FIELDS
"""Older comments of an issue with more than one page of them (markers are never truncated)."""

ISSUE = '''
query Issue($owner: String!, $name: String!, $number: Int!, $statusField: String!) {
  %s
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      id number title state body url createdAt updatedAt
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
''' % (RATE_LIMIT_FIELDS, _STATUS_VALUE) + _ISSUE_DETAIL_FRAGMENT + _PULL_FRAGMENT + _BLOCKER_FRAGMENT
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
}
"""Every GraphQL document this module can send, by operation name. ``_graphql`` refuses any
other, so this dict *is* the list tests/unit/github/test_documents.py validates."""


# -- errors -------------------------------------------------------------------------------------

class RateLimited(BoardUnreadable):
    """GitHub's rate limit outlasts ``RATE_LIMIT_MAX_WAIT``; ``reset_at`` says when it clears.

    A subclass of ``BoardUnreadable`` because a read that hits it has not read the queue; a
    write that hits it is re-raised as a plain ``BoardError`` by the write paths.
    """

    def __init__(self, message, reset_at=None, kind='primary'):
        super(RateLimited, self).__init__(message)
        self.reset_at = reset_at
        self.kind = kind


class _HttpFailure(Exception):
    """Internal: one HTTP exchange failed; the board methods give it its public name."""

    def __init__(self, message, status=None):
        super(_HttpFailure, self).__init__(message)
        self.status = status


# -- small pure helpers (tested directly) -------------------------------------------------------

def project_query(status_field: str, ready: str) -> str:
    """The server-side filter of the page pass: open issues whose status field is ``ready``.

    GitHub's project filter syntax is ``field:value``, the field name in lower case; a value or
    field name with spaces is quoted. (Field names with spaces: quoting is how GitHub's filter bar
    writes them; verified only against the fake, which parses the same syntax.)
    """
    return 'is:issue is:open %s:%s' % (_quote_filter(status_field.lower()), _quote_filter(ready))


def _quote_filter(text: str) -> str:
    text = str(text)
    if any(ch.isspace() for ch in text) or ':' in text or '"' in text:
        return '"%s"' % text.replace('"', '')
    return text


TOKEN_ENV = ('FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN')
"""Where the token comes from when the board option ``token`` is unset, first set wins: the fleet's own name
(what roles/sweeper and roles/worker put in their 0600 credentials files), then the names ``gh`` and
Actions use."""


def split_ref(ref, default_repo: str = '') -> Tuple[str, int]:
    """``42`` / ``'42'`` / ``'#42'`` / ``'owner/name#42'`` -> (repo, number). Repo may be ''."""
    if isinstance(ref, bool):
        raise BoardError('an item number must be an integer, got %r' % (ref,))
    if isinstance(ref, int):
        try:
            return default_repo, item_number(ref)
        except ValueError as exc:
            raise BoardError(str(exc))
    text = str(ref).strip()
    repo = default_repo
    if '#' in text:
        head, _sep, text = text.rpartition('#')
        if head:
            repo = head
    try:
        number = item_number(text)
    except ValueError as exc:
        raise BoardError('not an item reference: %r (use 42 or owner/name#42): %s' % (ref, exc))
    return repo, number


def cost_of(rate_limits: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Fold the ``rateLimit`` objects of a read's calls into ``BoardRead.cost`` (D1)."""
    total = 0
    remaining = None
    reset_at = None
    by_document = {}  # type: Dict[str, int]
    for entry in rate_limits:
        c = entry.get('cost') if isinstance(entry.get('cost'), int) else 0
        total += c
        by_document[entry['document']] = by_document.get(entry['document'], 0) + c
        if isinstance(entry.get('remaining'), int):
            remaining = entry['remaining']
        if entry.get('resetAt'):
            reset_at = entry['resetAt']
    return {'cost': total, 'remaining': remaining, 'reset_at': reset_at,
            'calls': len(rate_limits), 'by_document': by_document}


def _login(obj) -> str:
    return obj.get('login', '') if isinstance(obj, dict) else ''


def _lower(value) -> str:
    return value.lower() if isinstance(value, str) else ''


def _nodes(conn) -> List[Dict[str, Any]]:
    """The ``nodes`` of a connection object, type-checked: anything else is an empty list."""
    if not isinstance(conn, dict) or not isinstance(conn.get('nodes'), list):
        return []
    return [n for n in conn['nodes'] if isinstance(n, dict)]


def comment_of(node: Dict[str, Any]) -> Comment:
    """A GraphQL ``IssueComment`` node -> ``Comment`` (id: the REST/database id when known)."""
    cid = node.get('databaseId')
    association = node.get('authorAssociation')
    return Comment(id=str(cid) if cid is not None else str(node.get('id', '')),
                   body=node.get('body') or '',
                   created_at=parse_time(node.get('createdAt')),
                   author=_login(node.get('author')),
                   association=association if isinstance(association, str) else '')


def closing_branch_of(pr: Dict[str, Any], base_branch: str = '') -> Tuple[str, Optional[bool]]:
    """(base branch, whether a merge into it closes issues) for a ``PullFields`` node.

    GitHub's rule: a merge closes the issues it references or is linked to only when it lands on
    the repository's default branch (docs.github.com/en/issues/tracking-your-work-with-issues/
    using-issues/linking-a-pull-request-to-an-issue). ``base_branch`` (the board option) names
    another branch that counts instead. Unknown (no base or no default in the answer): ``None``.
    """
    base = pr.get('baseRefName') if isinstance(pr.get('baseRefName'), str) else ''
    if not base:
        return '', None
    if base_branch:
        return base, base == base_branch
    repo = pr.get('repository') if isinstance(pr.get('repository'), dict) else {}
    default = repo.get('defaultBranchRef') if isinstance(repo.get('defaultBranchRef'), dict) else {}
    name = default.get('name') if isinstance(default.get('name'), str) else ''
    if not name:
        return base, None
    return base, base == name


def artifact_of(pr: Dict[str, Any], issue_number: int, base_branch: str = '') -> Artifact:
    """A ``PullRequest`` linked to an issue as closing it -> ``Artifact`` (D2, D16).

    ``closes`` is the issue: GitHub itself made the link (its own keyword-adjacency parser, or a
    human linking it), which is the D16 "real closing reference". ``merged`` and ``merged_at``
    are GitHub's; nothing here judges time -- ``_core.references`` does.
    """
    repo = (pr.get('repository') or {}).get('nameWithOwner', '') if isinstance(pr.get('repository'), dict) else ''
    base, closing = closing_branch_of(pr, base_branch)
    return Artifact(ref='%s#%s' % (repo, pr.get('number')),
                    created_at=parse_time(pr.get('createdAt')),
                    merged=pr.get('merged') is True,
                    merged_at=parse_time(pr.get('mergedAt')),
                    closes=[issue_number],
                    url=pr.get('url') or '',
                    title=pr.get('title') or '',
                    base=base, into_closing_branch=closing)


def detail_into(item: Item, issue: Dict[str, Any], base_branch: str = '') -> List[str]:
    """Fill ``item`` from an ``IssueDetail``/``BlockerEdges`` selection (what was selected only).

    Returns the node ids of the commits whose ``ClosedEvent`` closed the issue (see
    ``COMMIT_PULLS``: the caller follows them to their merged pull requests).
    """
    commits = []  # type: List[str]
    if 'comments' in issue:
        item.comments = sorted((comment_of(n) for n in _nodes(issue.get('comments'))), key=_when)
    artifacts = {}  # type: Dict[str, Artifact]
    if 'timelineItems' in issue:
        events = []
        for node in _nodes(issue.get('timelineItems')):
            kind = {'ClosedEvent': 'closed', 'ReopenedEvent': 'reopened'}.get(node.get('__typename'))
            at = parse_time(node.get('createdAt'))
            if kind is None or at is None:
                continue
            events.append(Event(kind=kind, at=at, actor=_login(node.get('actor'))))
            closer = node.get('closer')
            # D2: a ClosedEvent whose closer is a *merged* pull request is proof; a commit closer
            # is followed to its merged pull request by the caller (COMMIT_PULLS); a hand close
            # (closer null) is not an artifact.
            if kind == 'closed' and isinstance(closer, dict) and closer.get('__typename') == 'PullRequest':
                art = artifact_of(closer, item.number, base_branch)
                if art.merged:
                    artifacts[art.ref] = art
            elif kind == 'closed' and isinstance(closer, dict) and closer.get('__typename') == 'Commit':
                if isinstance(closer.get('id'), str) and closer['id'] not in commits:
                    commits.append(closer['id'])
        item.events = sorted(events, key=lambda e: e.at)
    if 'closedByPullRequestsReferences' in issue:
        for pr in _nodes(issue.get('closedByPullRequestsReferences')):
            art = artifact_of(pr, item.number, base_branch)
            artifacts[art.ref] = art
    if 'timelineItems' in issue or 'closedByPullRequestsReferences' in issue:
        item.artifacts = _sorted_artifacts(artifacts.values())
    if 'blockedBy' in issue:
        item.blockers = [Blocker(number=int(n.get('number')), state=_lower(n.get('state')),
                                 repo=(n.get('repository') or {}).get('nameWithOwner', ''))
                         for n in _nodes(issue.get('blockedBy')) if isinstance(n.get('number'), int)]
    return commits


def commit_artifacts_into(item: Item, commit: Dict[str, Any], base_branch: str = '') -> None:
    """Add the merged pull requests of a closing commit (a ``CommitPulls`` node) to ``item``.

    Only a merged pull request into the closing branch can have brought the commit there (a PR
    into another branch, or an open one, did not close the issue); the time rule (D16) is
    ``_core.references.attribute``'s, as for every artifact.
    """
    known = dict((a.ref, a) for a in item.artifacts)
    for pr in _nodes(commit.get('associatedPullRequests')):
        art = artifact_of(pr, item.number, base_branch)
        if art.merged and art.into_closing_branch is not False and art.ref not in known:
            known[art.ref] = art
    item.artifacts = _sorted_artifacts(known.values())


def _sorted_artifacts(artifacts) -> List[Artifact]:
    return sorted(artifacts, key=lambda a: (_EPOCH if a.created_at is None else a.created_at, a.ref))


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


def _when(comment: Comment) -> _dt.datetime:
    """Sort key: GitHub's own time; a comment without one sorts first (never crashes the read)."""
    return _EPOCH if comment.created_at is None else comment.created_at


def _summary_open_blockers(issue: Dict[str, Any]) -> int:
    summary = issue.get('issueDependenciesSummary')
    if isinstance(summary, dict) and isinstance(summary.get('blockedBy'), int):
        return summary['blockedBy']
    return 0


# -- the transport: one place for HTTP, rate limits and the D5 type checks ----------------------

class _Transport(object):
    """HTTP to GitHub through an injectable ``requests``-like session; no decisions."""

    def __init__(self, api_url, token, session=None, sleep=None, clock=None,
                 max_wait=RATE_LIMIT_MAX_WAIT, retries=RATE_LIMIT_RETRIES, max_total=SECONDARY_MAX_TOTAL):
        self.api_url = api_url.rstrip('/')
        self._token = token
        self._own_session = session is None
        if session is None:
            if not HAS_REQUESTS:
                raise BoardUnreadable('the GitHub board needs the Python library "requests" '
                                      '(pip install requests): %s' % (REQUESTS_IMPORT_ERROR,))
            session = requests.Session()
        self.session = session
        self.sleep = time.sleep if sleep is None else sleep
        self.clock = (lambda: _dt.datetime.now(UTC)) if clock is None else clock
        self.max_wait = float(max_wait)
        self.max_total = float(max_total)
        self.retries = int(retries)
        self.redirects = []  # type: List[str]
        self.last_headers = {}  # type: Dict[str, str]
        self.waits = []  # type: List[float]
        """Every rate-limit wait this transport slept, in seconds (reported, never hidden)."""

    @property
    def graphql_url(self):
        # GitHub Enterprise serves REST at /api/v3 and GraphQL at /api/graphql.
        if self.api_url.endswith('/api/v3'):
            return self.api_url[:-len('/v3')] + '/graphql'
        return self.api_url + '/graphql'

    def close(self):
        if self._own_session and hasattr(self.session, 'close'):
            self.session.close()

    def _headers(self):
        return {'Authorization': 'bearer %s' % self._token,
                'Accept': 'application/vnd.github+json',
                'X-GitHub-Api-Version': '2022-11-28',
                'User-Agent': USER_AGENT}

    def request(self, method, url, *, body=None, params=None, headers=None):
        """One HTTP exchange with rate-limit waits; returns (status, headers, parsed JSON or None)."""
        attempt = 0
        secondary = []  # type: List[float]
        extra = headers
        while True:
            attempt += 1
            status, headers, data = self._exchange(method, url, body, params, extra)
            wait = self._rate_limit_wait(status, headers, data)
            if wait is None:
                self.last_headers = headers
                return status, headers, data
            seconds, kind, reset_at = wait
            if kind == 'secondary' and secondary:
                # Repeated: exponentially longer each time, bounded in total (SECONDARY_MAX_TOTAL).
                seconds = max(seconds, 2.0 * secondary[-1])
                reset_at = self.clock() + _dt.timedelta(seconds=seconds)
            over = (sum(secondary) + seconds > self.max_total) if kind == 'secondary' else (seconds > self.max_wait)
            if attempt >= self.retries or over:
                raise RateLimited('GitHub %s rate limit on %s %s: clears %s (waited %d time(s) already; '
                                  'a wait of %.0f s is over the %.0f s this client sleeps)'
                                  % (kind, method, self._safe(url),
                                     format_time(reset_at) if reset_at else 'in %.0f s' % seconds,
                                     attempt - 1, seconds, self.max_wait),
                                  reset_at=reset_at, kind=kind)
            if kind == 'secondary':
                secondary.append(seconds)
            self.waits.append(seconds)
            self.sleep(seconds)

    def _exchange(self, method, url, body, params, extra=None):
        """One request, following redirects with the same method and body: GitHub answers 301 for a
        renamed or transferred repository and asks clients to follow it, and 307 to repeat the
        request verbatim (docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api
        #follow-redirects). ``requests`` itself would turn a redirected POST or PATCH into a GET."""
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                resp = self.session.request(method, url, headers=dict(self._headers(), **(extra or {})), json=body,
                                            params=params, timeout=HTTP_TIMEOUT, allow_redirects=False)
            except Exception as exc:  # requests.RequestException and anything a session raises
                raise _HttpFailure('%s %s did not answer: %s' % (method, self._safe(url), type(exc).__name__ + ': ' + str(exc)))
            status = int(resp.status_code)
            headers = dict((str(k).lower(), v) for k, v in (resp.headers or {}).items())
            location = headers.get('location')
            if status in (301, 302, 307, 308) and isinstance(location, str) and location:
                if not location.startswith(('http://', 'https://')):
                    location = self.api_url + location
                url = location
                self.redirects.append(self._safe(location))
                continue
            return status, headers, self._parse(resp)
        raise _HttpFailure('%s %s: more than %d redirects' % (method, self._safe(url), MAX_REDIRECTS))

    def _safe(self, url):
        return url.replace(self.api_url, '') or '/'

    @staticmethod
    def _parse(resp):
        text = resp.text if hasattr(resp, 'text') else resp.content.decode('utf-8', 'replace')
        if text is None or not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            return _NotJson(text)

    def _rate_limit_wait(self, status, headers, data):
        """(seconds, kind, reset_at) when this answer is a rate limit, else None.

        GitHub's rules: a ``retry-after`` header means wait that long (secondary limit, or a
        primary one on some endpoints); ``x-ratelimit-remaining: 0`` means wait until
        ``x-ratelimit-reset`` (epoch seconds); a secondary limit with neither header means wait
        at least a minute. GraphQL reports an exhausted primary limit as HTTP 200 with an
        ``errors`` entry of type ``RATE_LIMITED``.
        """
        errors = data.get('errors') if isinstance(data, dict) and isinstance(data.get('errors'), list) else []
        # GraphQL names an exhausted primary limit RATE_LIMITED (docs.github.com/en/graphql/overview/
        # rate-limits-and-query-limits-for-the-graphql-api#exceeding-the-rate-limit); clients report
        # RATE_LIMIT with code graphql_rate_limit too (yanyongyu/githubkit#271).
        graphql_limited = any(isinstance(e, dict) and e.get('type') in ('RATE_LIMITED', 'RATE_LIMIT') for e in errors)
        # A secondary limit is named by its message ("You have exceeded a secondary rate limit"), on
        # a 403/429 or inside a GraphQL errors list of an HTTP 200 (octokit/plugin-throttling.js#636).
        graphql_secondary = any(isinstance(e, dict) and 'secondary rate limit' in str(e.get('message', '')).lower()
                                for e in errors)
        if status not in (403, 429) and not graphql_limited and not graphql_secondary:
            return None
        now = self.clock()
        retry_after = headers.get('retry-after')
        if retry_after is not None:
            try:
                seconds = max(0.0, float(retry_after))
            except ValueError:
                when = _http_date(retry_after)
                seconds = max(0.0, (when - now).total_seconds()) if when else SECONDARY_DEFAULT_WAIT
            return seconds, 'secondary', now + _dt.timedelta(seconds=seconds)
        if headers.get('x-ratelimit-remaining') == '0' and headers.get('x-ratelimit-reset'):
            try:
                reset_at = _dt.datetime.fromtimestamp(int(headers['x-ratelimit-reset']), UTC)
            except ValueError:
                reset_at = None
            if reset_at is not None:
                # +1 s: the reset epoch is whole seconds, rounded down by GitHub.
                return max(0.0, (reset_at - now).total_seconds()) + 1.0, 'primary', reset_at
        message = data.get('message', '') if isinstance(data, dict) else ''
        if graphql_limited or graphql_secondary or 'rate limit' in str(message).lower():
            return (SECONDARY_DEFAULT_WAIT, 'primary' if graphql_limited and not graphql_secondary else 'secondary',
                    now + _dt.timedelta(seconds=SECONDARY_DEFAULT_WAIT))
        return None  # a plain 403: permissions, not a rate limit


class _NotJson(str):
    """A body that did not parse as JSON (kept, to quote in the error)."""


def _http_date(text):
    try:
        from email.utils import parsedate_to_datetime
        value = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _error_text(status, data) -> str:
    """What GitHub said, from a body of any JSON type (D5: never assume a type)."""
    if isinstance(data, dict):
        msg = data.get('message')
        if isinstance(msg, str) and msg:
            return 'HTTP %s: %s' % (status, msg)
        errors = data.get('errors')
        if isinstance(errors, list) and errors:
            return 'HTTP %s: %s' % (status, '; '.join(_one_error(e) for e in errors[:5]))
        return 'HTTP %s: %s' % (status, json.dumps(data)[:200])
    if isinstance(data, _NotJson):
        return 'HTTP %s: a body that is not JSON: %r' % (status, str(data)[:200])
    if data is None:
        return 'HTTP %s with an empty body' % status
    return 'HTTP %s: unexpected %s body' % (status, type(data).__name__)


def _placed(err) -> bool:
    """An error GitHub placed under a path of the data (partial data), not a rate limit."""
    return (isinstance(err, dict) and isinstance(err.get('path'), list) and len(err['path']) > 0
            and err.get('type') not in ('RATE_LIMITED', 'RATE_LIMIT'))


def errors_by_index(errors, prefix) -> Tuple[Dict[int, List[Dict[str, Any]]], List[Dict[str, Any]]]:
    """Split placed errors into those under ``prefix + [i]`` (by ``i``) and the rest."""
    mine = {}  # type: Dict[int, List[Dict[str, Any]]]
    rest = []
    n = len(prefix)
    for err in errors or []:
        path = err.get('path') if isinstance(err, dict) else None
        if isinstance(path, list) and len(path) > n and list(path[:n]) == list(prefix) and isinstance(path[n], int) \
                and not isinstance(path[n], bool):
            mine.setdefault(path[n], []).append(err)
        else:
            rest.append(err)
    return mine, rest


_PERMISSION_OF_FIELD = (
    (('closedByPullRequestsReferences', 'closer', 'associatedPullRequests'), 'Pull requests: read'),
    (('comments', 'timelineItems', 'content', 'blockedBy', 'issueDependenciesSummary'), 'Issues: read'),
)


def unreadable_cause(errors, repo: str = '') -> str:
    """What could not be read of one item, in GitHub's words, with the fix for a FORBIDDEN."""
    text = '; '.join(_one_error(e) for e in errors[:3])
    needs = []
    for err in errors:
        if not isinstance(err, dict) or err.get('type') != 'FORBIDDEN':
            continue
        fields = [p for p in err.get('path') or [] if isinstance(p, str)]
        for names, permission in _PERMISSION_OF_FIELD:
            if any(f in names for f in fields) and permission not in needs:
                needs.append(permission)
                break
    if needs:
        text += ' -- the token may not read this%s: a fine-grained or app token needs %s there (a classic token: scope repo)' % (
            ' on %s' % repo if repo else '', ' and '.join(needs))
    return text


def _one_error(err) -> str:
    if isinstance(err, dict):
        parts = [str(err.get('type') or '').strip(), str(err.get('message') or '').strip()]
        path = err.get('path')
        if isinstance(path, list) and path:
            parts.append('at ' + '.'.join(str(p) for p in path))
        return ' '.join(p for p in parts if p) or json.dumps(err)[:200]
    return repr(err)[:200]


# -- the board ----------------------------------------------------------------------------------

class GitHubBoard(Board):
    """The GitHub Projects v2 board (see the module docstring for D1, D2, D5, D9, D12, D16, D19).

    Spec keys: ``owner``, ``project`` (number), ``status_field`` (``Status``), ``ready``
    (``Ready``), ``token`` (else the first of ``TOKEN_ENV`` set), ``api_url``
    (``https://api.github.com``), ``owner_type`` (``organization``/``user``/``auto``), ``repo``
    (optional ``owner/name`` for bare item numbers). For tests and the runner: ``session`` (a
    ``requests.Session``-like object), ``sleep`` (callable), ``clock`` (callable -> aware datetime),
    ``rate_limit_max_wait`` (seconds).
    """

    kind = 'github'

    def __init__(self, spec: Dict[str, Any]):
        spec = dict(spec or {})
        self.owner = spec.get('owner') or ''
        try:
            self.project = int(spec.get('project'))
        except (TypeError, ValueError):
            raise BoardError('a github board needs "project": the project number (the N in '
                             '/orgs/OWNER/projects/N), got %r' % (spec.get('project'),))
        if not self.owner:
            raise BoardError('a github board needs "owner": the organization or user that owns the project')
        self.status_field = spec.get('status_field') or 'Status'
        self.ready = spec.get('ready') or 'Ready'
        self.owner_type = spec.get('owner_type') or 'auto'
        if self.owner_type not in ('auto', 'organization', 'user'):
            raise BoardError('owner_type must be auto, organization or user, got %r' % (self.owner_type,))
        self.default_repo = spec.get('repo') or ''
        self.base_branch = spec.get('base_branch') or ''
        self.mention_mode = spec.get('mentions') or 'comments'
        if self.mention_mode not in ('comments', 'notifications'):
            raise BoardError('mentions must be comments or notifications, got %r' % (self.mention_mode,))
        self.mention_handles = [str(h) for h in spec.get('mention_handles') or []]
        self.marker_authors = [str(a) for a in spec.get('marker_authors') or []]
        api_url = spec.get('api_url') or 'https://api.github.com'
        self.location = '%s %s/projects/%s' % (api_url.rstrip('/'), self.owner, self.project)
        token = spec.get('token') or next((os.environ[n] for n in TOKEN_ENV if os.environ.get(n)), '')
        if not token:
            raise BoardUnreadable('no GitHub token: set the board option "token" (no_log) or one of the '
                                  'environment variables %s on the machine that reads the board' % ', '.join(TOKEN_ENV))
        self._http = _Transport(api_url, token, session=spec.get('session'), sleep=spec.get('sleep'),
                                clock=spec.get('clock'),
                                max_wait=spec.get('rate_limit_max_wait', RATE_LIMIT_MAX_WAIT),
                                max_total=spec.get('rate_limit_max_total', SECONDARY_MAX_TOTAL))
        self._rate_limits = []  # type: List[Dict[str, Any]]
        self._is_org = None  # type: Optional[bool]
        self._field = None  # type: Optional[Dict[str, Any]]
        self._project_id = None  # type: Optional[str]
        # (repo, number) -> (project item id, status): filled by reads of this instance only.
        self._project_items = {}  # type: Dict[Tuple[str, int], Tuple[str, str]]
        self._token = token
        self._checked = None  # type: Optional[Dict[str, Any]]
        self._login = ''
        self._refused = set()  # type: set
        self._posted = set()  # type: set
        self._skipped = {}  # type: Dict[str, List[Dict[str, Any]]]
        # GET /notifications polling state, this instance only (no state file): Last-Modified,
        # the time X-Poll-Interval allows the next poll, and the threads of the last 200.
        self._last_modified = None  # type: Optional[str]
        self._poll_after = None  # type: Optional[_dt.datetime]
        self._threads = None  # type: Optional[List[Dict[str, Any]]]

    # -- GraphQL ----------------------------------------------------------------------------
    def _graphql(self, name: str, variables: Dict[str, Any], *, reading: bool, partial: bool = False):
        """Send ``DOCUMENTS[name]``; return its ``data`` after every D5 type check.

        ``reading`` picks the failure's name: ``BoardUnreadable`` for the queue read,
        ``BoardError`` for anything else. ``partial``: return ``(data, errors)`` instead, where
        ``errors`` are the ones GitHub placed under a ``path`` of ``data`` (partial data: the
        GraphQL spec's "Errors and Non-Null Fields"; GitHub answers FORBIDDEN there for a field
        the token may not read), for the caller to pin on the item they belong to. An error
        without a path, or any answer without a ``data`` object, still fails the call.
        """
        if name not in DOCUMENTS:
            raise BoardError('internal: %r is not one of the validated GraphQL documents' % (name,))
        fail = BoardUnreadable if reading else BoardError
        try:
            status, _headers, data = self._http.request(
                'POST', self._http.graphql_url, body={'query': DOCUMENTS[name], 'variables': variables,
                                                      'operationName': name})
        except RateLimited as exc:
            if reading:
                raise
            raise BoardError(str(exc))
        except _HttpFailure as exc:
            raise fail('GitHub GraphQL %s: %s' % (name, exc))
        if status == 401:
            raise fail('GitHub GraphQL %s: %s -- the token is missing, expired or revoked' % (name, _error_text(status, data)))
        if status >= 300:
            raise fail('GitHub GraphQL %s: %s' % (name, _error_text(status, data)))
        if not isinstance(data, dict):
            raise fail('GitHub GraphQL %s: %s' % (name, _error_text(status, data)))
        errors = data.get('errors')
        if partial and errors and isinstance(errors, list) and isinstance(data.get('data'), dict) \
                and all(_placed(e) for e in errors):
            payload = data['data']
            self._note_rate_limit(name, payload)
            return payload, errors
        if errors:  # 🔴 D5/D20: HTTP 200 with an errors array is an error, whatever data says
            if not reading and isinstance(errors, list) and all(isinstance(e, dict) and e.get('type') == 'NOT_FOUND' for e in errors):
                fail = ItemNotFound
            raise fail('GitHub GraphQL %s answered HTTP %s with errors: %s'
                       % (name, status, '; '.join(_one_error(e) for e in (errors if isinstance(errors, list) else [errors]))))
        payload = data.get('data')
        if not isinstance(payload, dict):
            raise fail('GitHub GraphQL %s: no "data" object in the answer (%s)' % (name, _error_text(status, data)))
        self._note_rate_limit(name, payload)
        return (payload, []) if partial else payload

    def _note_rate_limit(self, name, payload):
        rl = payload.get('rateLimit')
        if isinstance(rl, dict):
            entry = dict(rl)
            entry['document'] = name
            self._rate_limits.append(entry)

    def _owner_is_org(self) -> bool:
        if self._is_org is None:
            if self.owner_type != 'auto':
                self._is_org = self.owner_type == 'organization'
            else:
                data = self._graphql('OwnerType', {'owner': self.owner}, reading=True)
                owner = data.get('repositoryOwner')
                if not isinstance(owner, dict):
                    raise BoardUnreadable('GitHub has no user or organization %r (board option "owner")' % (self.owner,))
                self._is_org = owner.get('__typename') == 'Organization'
        return self._is_org

    def _project_of(self, data: Dict[str, Any]) -> Dict[str, Any]:
        owner = data.get('organization' if self._is_org else 'user')
        project = owner.get('projectV2') if isinstance(owner, dict) else None
        if not isinstance(project, dict):
            raise BoardUnreadable('GitHub: %s %r has no project number %s visible to this token'
                                  % ('organization' if self._is_org else 'user', self.owner, self.project))
        return project

    def _remember_field(self, project: Dict[str, Any]) -> None:
        self._project_id = project.get('id')
        field = project.get('field')
        if not isinstance(field, dict) or field.get('__typename') != 'ProjectV2SingleSelectField':
            raise BoardUnreadable('project %s has no single-select field named %r (board option '
                                  '"status_field")' % (self.project, self.status_field))
        options = [o for o in field.get('options') or [] if isinstance(o, dict)]
        self._field = {'id': field.get('id'), 'options': dict((o.get('name'), o.get('id')) for o in options)}

    # -- reads ------------------------------------------------------------------------------
    def read(self, *, now=None) -> BoardRead:
        """One board read (D1): the page pass, the cheap filter, then batched detail passes.

        Raises ``BoardUnreadable`` when any part of the queue cannot be read or parsed: a read
        is whole or it is not a read (D5, D20). ``now`` is accepted for the protocol; GitHub's
        own timestamps are what the items carry.
        """
        try:
            return self._read()
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise BoardUnreadable('GitHub answered the board read with data this board cannot parse (%s: %s)'
                                  % (type(exc).__name__, exc))

    def _read(self) -> BoardRead:
        self._rate_limits = []
        self._http.waits = []
        self.preflight()
        is_org = self._owner_is_org()
        query = project_query(self.status_field, self.ready)
        pages, page_errors = self._pages(is_org, query)
        items = []  # type: List[Item]
        issues = {}  # type: Dict[str, Item]
        candidates = []  # type: List[str]
        blocked = []  # type: List[str]
        unreadable = []  # type: List[Dict[str, Any]]
        for index, node in enumerate(pages):
            content = node.get('content')
            errs = page_errors.get(index)
            is_issue = isinstance(content, dict) and content.get('__typename') == 'Issue' and isinstance(content.get('number'), int)
            if errs and not is_issue:
                # Partial data with no issue to pin it on: shown with its project item id, not an item.
                unreadable.append({'project_item': node.get('id') or '', 'cause': unreadable_cause(errs)})
                continue
            if node.get('type') != 'ISSUE' or not is_issue:
                continue  # drafts, pull requests, redacted items: not work this fleet can run
            if node.get('isArchived') is True:
                continue
            item = self._item_of(content, node)
            if item.id in issues:
                continue
            issues[item.id] = item
            items.append(item)
            if errs:
                item.unreadable = unreadable_cause(errs, item.repo)
                continue
            if item.state != 'open' or item.status.casefold() != self.ready.casefold():
                continue  # cheap filter: the server filter should already have done this
            if _summary_open_blockers(content) > 0:
                blocked.append(item.id)
            else:
                candidates.append(item.id)
        promoted = self._fetch_blockers(blocked, issues)
        self._fetch_details(candidates + promoted, issues)
        cost = cost_of(self._rate_limits)
        cost['items'] = len(items)
        cost['candidates'] = len(candidates) + len(promoted)
        cost['rate_limit_waits'] = list(self._http.waits)
        unreadable.extend({'item': '%s#%s' % (i.repo, i.number), 'cause': i.unreadable} for i in items if i.unreadable)
        cost['unreadable'] = unreadable
        for entry in unreadable:
            self._refused.update(p for p in ('Pull requests: read', 'Issues: read') if p in entry['cause'])
        cost['token'] = self.preflight()
        return BoardRead(items=items, cost=cost)

    def _pages(self, is_org: bool, query: str) -> Tuple[List[Dict[str, Any]], Dict[int, List[Dict[str, Any]]]]:
        """Every item node of the project (filtered by ``query``), and the placed errors by node index.

        An error under one item node (``...items.nodes[i]``) is that item's; any other error (the
        project, its field, the page itself) means the queue was not read: ``BoardUnreadable``.
        """
        nodes = []  # type: List[Dict[str, Any]]
        by_index = {}  # type: Dict[int, List[Dict[str, Any]]]
        after = None
        seen = set()
        while True:
            data, errors = self._graphql('BoardPage', {'owner': self.owner, 'isOrg': is_org, 'number': self.project,
                                                       'query': query, 'statusField': self.status_field,
                                                       'after': after}, reading=True, partial=True)
            mine, rest = errors_by_index(errors, ['organization' if is_org else 'user', 'projectV2', 'items', 'nodes'])
            if rest:
                raise BoardUnreadable('GitHub GraphQL BoardPage answered with errors: %s'
                                      % '; '.join(_one_error(e) for e in rest))
            project = self._project_of(data)
            if after is None:
                self._remember_field(project)
                if self.ready not in self._field['options']:
                    raise BoardUnreadable('the status field %r of project %s has no option %r (options: %s): '
                                          'fix the board option "ready"'
                                          % (self.status_field, self.project, self.ready,
                                             ', '.join(sorted(str(k) for k in self._field['options']))))
            conn = project.get('items')
            if not isinstance(conn, dict) or not isinstance(conn.get('nodes'), list):
                raise BoardUnreadable('GitHub answered the board page without an items list')
            for i, node in enumerate(conn['nodes']):
                if i in mine:
                    by_index[len(nodes)] = mine[i]
                    nodes.append(node if isinstance(node, dict) else {})
                elif isinstance(node, dict):
                    nodes.append(node)
            info = conn.get('pageInfo') if isinstance(conn.get('pageInfo'), dict) else {}
            if info.get('hasNextPage') is not True:
                return nodes, by_index
            after = info.get('endCursor')
            if not after or after in seen:
                raise BoardUnreadable('GitHub paginated the board without a new cursor (%r): the read is incomplete' % (after,))
            seen.add(after)

    def _item_of(self, content: Dict[str, Any], node: Optional[Dict[str, Any]]) -> Item:
        repo = (content.get('repository') or {}).get('nameWithOwner', '') if isinstance(content.get('repository'), dict) else ''
        status = ''
        if node is not None:
            value = node.get('fieldValueByName')
            if isinstance(value, dict) and isinstance(value.get('name'), str):
                status = value['name']
            self._project_items[(repo, content.get('number'))] = (node.get('id'), status)
        return Item(number=int(content.get('number')), title=content.get('title') or '',
                    state=_lower(content.get('state')), status=status, body=content.get('body') or '',
                    id=content.get('id') or '', repo=repo, url=content.get('url') or '',
                    created_at=parse_time(content.get('createdAt')),
                    updated_at=parse_time(content.get('updatedAt')),
                    marker_authors=self.marker_identities())

    def marker_identities(self) -> List[str]:
        """The fleet's identities on this board: the token's own login (``viewer { login }``, read once
        per board instance by the preflight) and ``marker_authors``. Only their glyph-led comments are
        markers. A token whose login cannot be read leaves every marker unattributable, so the item
        is not judged at all: ``BoardUnreadable`` (a read that cannot tell a start marker from a
        passer-by's "🚀" would launch a second run)."""
        me = self._identity()
        if not me:
            raise BoardUnreadable('GitHub did not say who the token is (viewer { login }: %s), so the fleet\'s own '
                                  'markers cannot be told from anyone else\'s: check the token and the API URL'
                                  % ((self._checked or {}).get('error') or 'no login in the answer'))
        return [me] + [a for a in self.marker_authors if a]

    def _fetch_blockers(self, ids: List[str], issues: Dict[str, Item]) -> List[str]:
        """Fill blocker edges; return the ids whose edges show no open blocker after all."""
        promoted = []
        for start in range(0, len(ids), BLOCKER_BATCH):
            batch = ids[start:start + BLOCKER_BATCH]
            data, errors = self._graphql('Blockers', {'ids': batch}, reading=True, partial=True)
            for node in self._batch_nodes(data, errors, batch, issues):
                item = issues[node['id']]
                detail_into(item, node)
                if not item.unreadable and not any(b.state == 'open' for b in item.blockers):
                    promoted.append(item.id)
        return promoted

    def _fetch_details(self, ids: List[str], issues: Dict[str, Item]) -> None:
        commits = []  # type: List[Tuple[Item, str]]
        for start in range(0, len(ids), DETAIL_BATCH):
            batch = ids[start:start + DETAIL_BATCH]
            data, errors = self._graphql('Details', {'ids': batch}, reading=True, partial=True)
            for node in self._batch_nodes(data, errors, batch, issues):
                item = issues[node['id']]
                commits.extend((item, c) for c in detail_into(item, node, self.base_branch))
                if not item.unreadable:
                    self._older_comments(item, node, reading=True)
        self._follow_commits(commits, reading=True)

    def _follow_commits(self, pairs: List[Tuple[Item, str]], *, reading: bool) -> None:
        """Credit the merged pull request of each commit that closed an item (``COMMIT_PULLS``)."""
        ids = sorted(set(c for _item, c in pairs))
        found = {}  # type: Dict[str, Dict[str, Any]]
        failed = {}  # type: Dict[str, List[Dict[str, Any]]]
        for start in range(0, len(ids), BLOCKER_BATCH):
            batch = ids[start:start + BLOCKER_BATCH]
            data, errors = self._graphql('CommitPulls', {'ids': batch}, reading=reading, partial=True)
            mine, rest = errors_by_index(errors, ['nodes'])
            if rest:
                raise (BoardUnreadable if reading else BoardError)(
                    'GitHub GraphQL CommitPulls answered with errors: %s' % '; '.join(_one_error(e) for e in rest))
            nodes = data.get('nodes') if isinstance(data.get('nodes'), list) else []
            for i, want in enumerate(batch):
                if i in mine:
                    failed[want] = mine[i]
                elif i < len(nodes) and isinstance(nodes[i], dict) and nodes[i].get('id') == want:
                    found[want] = nodes[i]
        for item, commit in pairs:
            if commit in found:
                commit_artifacts_into(item, found[commit], self.base_branch)
            elif commit in failed:
                cause = 'the pull request of the commit that closed it: ' + unreadable_cause(failed[commit], item.repo)
                if not reading:
                    raise BoardError('GitHub could not return %s of %s#%s' % (cause, item.repo, item.number))
                item.unreadable = item.unreadable or cause

    def _batch_nodes(self, data, errors, batch, issues):
        """The nodes of a ``nodes(ids:)`` batch answer that can be read; an error placed under one
        node makes that item ``unreadable`` (its cause kept), the others read on. An error elsewhere,
        or a missing node GitHub gave no reason for, means the queue was not read."""
        nodes = data.get('nodes')
        if not isinstance(nodes, list) or len(nodes) != len(batch):
            raise BoardUnreadable('GitHub answered a batch of %d issues with %r' % (len(batch), type(nodes).__name__))
        mine, rest = errors_by_index(errors, ['nodes'])
        if rest:
            raise BoardUnreadable('GitHub answered a batch of issues with errors: %s' % '; '.join(_one_error(e) for e in rest))
        out = []
        for index, (want, node) in enumerate(zip(batch, nodes)):
            if index in mine:
                item = issues[want]
                item.unreadable = unreadable_cause(mine[index], item.repo)
                if isinstance(node, dict) and node.get('id') == want:
                    out.append(node)
                continue
            if not isinstance(node, dict) or node.get('id') != want:
                raise BoardUnreadable('GitHub could not return issue %s in a batch (deleted or no access)' % (want,))
            out.append(node)
        return out

    def _older_comments(self, item: Item, issue: Dict[str, Any], *, reading: bool) -> None:
        """Page backwards while GitHub says there are older comments (markers are never cut)."""
        conn = issue.get('comments') if isinstance(issue.get('comments'), dict) else {}
        info = conn.get('pageInfo') if isinstance(conn.get('pageInfo'), dict) else {}
        older = []  # type: List[Comment]
        while info.get('hasPreviousPage') is True and info.get('startCursor'):
            data, errors = self._graphql('MoreComments', {'id': item.id, 'before': info['startCursor']},
                                         reading=reading, partial=True)
            if errors:
                if not reading:
                    raise BoardError('GitHub could not return the older comments of %s#%s: %s'
                                     % (item.repo, item.number, '; '.join(_one_error(e) for e in errors)))
                item.unreadable = 'its older comments: ' + unreadable_cause(errors, item.repo)
                return
            node = data.get('node') if isinstance(data.get('node'), dict) else {}
            conn = node.get('comments') if isinstance(node.get('comments'), dict) else {}
            older.extend(comment_of(n) for n in _nodes(conn))
            new_info = conn.get('pageInfo') if isinstance(conn.get('pageInfo'), dict) else {}
            if new_info.get('startCursor') == info.get('startCursor'):
                break
            info = new_info
        if older:
            item.comments = sorted(older + item.comments, key=_when)

    def get(self, number) -> Item:
        """One item in full: comments, events, blockers, artifacts and its status on this project."""
        try:
            return self._get(number)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise BoardError('GitHub answered for item %s with data this board cannot parse (%s: %s)'
                             % (number, type(exc).__name__, exc))

    def _get(self, number) -> Item:
        repo, num = self._resolve(number)
        owner, _sep, name = repo.partition('/')
        data = self._graphql('Issue', {'owner': owner, 'name': name, 'number': num,
                                       'statusField': self.status_field}, reading=False)
        repository = data.get('repository')
        issue = repository.get('issue') if isinstance(repository, dict) else None
        if not isinstance(issue, dict):
            raise ItemNotFound('GitHub has no issue %s#%s visible to this token' % (repo, num))
        item = self._item_of(issue, None)
        for node in _nodes(issue.get('projectItems')):
            project = node.get('project') if isinstance(node.get('project'), dict) else {}
            if project.get('number') == self.project and (self._project_id is None or project.get('id') == self._project_id):
                value = node.get('fieldValueByName')
                item.status = value.get('name') or '' if isinstance(value, dict) else ''
                self._project_items[(item.repo, item.number)] = (node.get('id'), item.status)
                break
        commits = detail_into(item, issue, self.base_branch)
        self._older_comments(item, issue, reading=False)
        self._follow_commits([(item, c) for c in commits], reading=False)
        return item

    def _resolve(self, number) -> Tuple[str, int]:
        """An item reference -> (owner/name, number), using the spec's ``repo`` or this project."""
        repo, num = split_ref(number, self.default_repo)
        if repo:
            if repo.count('/') != 1:
                raise BoardError('a repository is owner/name, got %r' % (repo,))
            return repo, num
        repos = sorted(set(r for (r, n) in self._project_items if n == num))
        if not repos:
            # Not seen by a read of this instance: index the whole project once (cheap pass).
            self._index_project()
            repos = sorted(set(r for (r, n) in self._project_items if n == num))
        if not repos:
            raise ItemNotFound('project %s has no issue number %s' % (self.project, num))
        if len(repos) > 1:
            raise BoardError('issue number %s is ambiguous on project %s (repositories %s): name it as '
                             'owner/name#%s' % (num, self.project, ', '.join(repos), num))
        return repos[0], num

    def _index_project(self) -> None:
        is_org = self._owner_is_org()
        try:
            nodes, _errors = self._pages(is_org, 'is:issue')
        except BoardUnreadable as exc:
            raise BoardError(str(exc))
        for node in nodes:
            content = node.get('content')
            if isinstance(content, dict) and content.get('__typename') == 'Issue':
                self._item_of(content, node)

    # -- the token preflight ---------------------------------------------------------------
    def preflight(self) -> Dict[str, Any]:
        """Token kind, identity, what each operation needs, what is missing and the fix (once per
        board instance, 1 point; see ``_board/github_tokens.py``). Fails open: a preflight that
        could not be read is reported as such and the board goes on (D5), except a rate limit."""
        if self._checked is None:
            self._checked = {}
            try:
                data, _errors = self._graphql('Preflight', {}, reading=True, partial=True)
                viewer = data.get('viewer') if isinstance(data.get('viewer'), dict) else {}
                self._login = viewer.get('login') if isinstance(viewer.get('login'), str) else ''
                self._checked['headers'] = dict(self._http.last_headers)
            except RateLimited:
                self._checked = None
                raise
            except BoardError as exc:
                self._checked['error'] = str(exc)
        result = github_tokens.preflight(self._token, self._checked.get('headers') or {}, login=self._login,
                                         mentions=self.mention_mode, refused=sorted(self._refused))
        if self._checked.get('error'):
            result['error'] = self._checked['error']
        return result

    def _refusal(self, headers) -> None:
        """Remember what a 403 said it needed (``X-Accepted-GitHub-Permissions``) for the preflight."""
        names = {'issues': 'Issues', 'pull_requests': 'Pull requests', 'organization_projects': 'Projects',
                 'repository_projects': 'Projects'}
        for one in github_tokens.accepted_permissions(headers)[:1]:
            for perm in one:
                name, _sep, level = perm.partition('=')
                if name in names:
                    self._refused.add('%s: %s' % (names[name], level or 'read'))

    # -- mentions (D19) ---------------------------------------------------------------------
    def mentions(self, number) -> list:
        """Mentions of the fleet on this item that no run has seen yet, oldest first (D19).

        Default (``mentions: comments``): from the item's own comments -- those naming
        ``@<viewer login>`` or a ``mention_handles`` entry, by a trusted author (authorAssociation
        OWNER/MEMBER/COLLABORATOR, or a ``marker_authors`` login), newer than the last start
        marker. Works with every token kind; "seen" is derived from the board (``_core.mentions``).
        ``mentions: notifications`` (classic tokens only) also requires an unread mention thread.
        Each is ``{'id', 'reason', 'title', 'body', 'author', 'url', 'updated_at'}``; nothing is
        marked read here.
        """
        item = self.get(number)
        if self.mention_mode == 'notifications':
            threads = self._mention_threads(item)
            if not threads:
                return []
            ids = 'thread:' + ','.join(threads)
        else:
            ids = None
        me = self._identity()
        own = None
        starts = [m for m in markers_of(item) if m.kind == 'start']
        if starts and str(starts[-1].comment_id) in self._posted:
            own = str(starts[-1].comment_id)
        skipped = []  # type: List[Any]
        found = unseen_mentions(item.comments, handles=handles_of(me, self.mention_handles), me=me,
                                marker_authors=self.marker_authors, own_start_id=own, skipped=skipped)
        self._skipped[str(number)] = [{'id': 'comment:%s' % c.id, 'author': c.author, 'association': c.association,
                                       'updated_at': format_time(c.created_at)} for c in skipped]
        return [{'id': ids or 'comment:%s' % c.id, 'reason': 'mention', 'title': item.title, 'body': c.body,
                 'author': c.author, 'url': '%s#issuecomment-%s' % (item.url, c.id) if item.url else '',
                 'updated_at': format_time(c.created_at)} for c in found]

    def skipped_mentions(self, number) -> list:
        """The untrusted mentions the last ``mentions(number)`` of this instance left out (author, id)."""
        return list(self._skipped.get(str(number), []))

    def _identity(self) -> str:
        if not self._login:
            self.preflight()
        return self._login

    def _mention_threads(self, item: Item) -> List[str]:
        """Unread mention threads of this item's subject, from ``GET /notifications`` (classic
        tokens only: @octokit/openapi marks it ``enabledForGitHubApps: false``).

        GitHub's polling contract (docs.github.com/en/rest/activity/notifications): send
        ``If-Modified-Since`` with the last ``Last-Modified`` and take a 304 as "nothing new";
        do not poll again before ``X-Poll-Interval`` seconds. The thread's ``reason`` is sticky
        (a thread that once had a mention says ``mention`` for all later activity) and its
        ``latest_comment_url`` is the newest comment, not the mention -- so the thread is used only
        as "there is something unread here", and the text comes from the comments themselves.
        """
        kind = github_tokens.kind_of(self._token)['kind']
        if kind not in github_tokens.SCOPED and kind != 'unknown':
            raise BoardError('mentions: notifications needs a classic or OAuth token (GET /notifications refuses a %s); '
                             'use the default, mentions: comments' % github_tokens.kind_of(self._token)['name'])
        now = self._http.clock()
        if self._threads is None or self._poll_after is None or now >= self._poll_after:
            self._threads = self._poll_notifications(now)
        subject = '/repos/%s/issues/%s' % (item.repo, item.number)
        out = []
        for thread in self._threads:
            subj = thread.get('subject') if isinstance(thread.get('subject'), dict) else {}
            if thread.get('unread') is False or thread.get('reason') not in ('mention', 'team_mention'):
                continue
            if str(subj.get('url') or '').endswith(subject) and thread.get('id') is not None:
                out.append(str(thread['id']))
        return out

    def _poll_notifications(self, now) -> List[Dict[str, Any]]:
        threads = []  # type: List[Dict[str, Any]]
        page = 1
        while True:
            extra = {'If-Modified-Since': self._last_modified} if self._last_modified and page == 1 else None
            try:
                status, headers, data = self._http.request(
                    'GET', self._http.api_url + '/notifications', params={'participating': 'true', 'per_page': 50, 'page': page},
                    headers=extra)
            except (RateLimited, _HttpFailure) as exc:
                raise BoardError('could not read notifications: %s' % exc)
            try:
                interval = float(headers.get('x-poll-interval') or 0)
            except ValueError:
                interval = 0.0
            self._poll_after = now + _dt.timedelta(seconds=max(interval, 0.0))
            if status == 304:
                return self._threads or []
            if status == 403:
                self._refusal(headers)
            if status >= 300 or not isinstance(data, list):
                raise BoardError('could not read notifications: %s' % _error_text(status, data))
            if page == 1 and headers.get('last-modified'):
                self._last_modified = headers['last-modified']
            threads.extend(t for t in data if isinstance(t, dict))
            if len(data) < 50:
                return threads
            page += 1

    def mark_read(self, ids) -> None:
        """Mark notification threads read -- call only *after* injecting them (D19). Mentions from
        comments need nothing: the run's own start marker is what makes them seen."""
        done = set()
        for mid in ids or []:
            text = str(mid)
            if not text.startswith('thread:'):
                continue
            for tid in text[len('thread:'):].split(','):
                if tid and tid not in done:
                    done.add(tid)
                    self._rest('PATCH', '/notifications/threads/%s' % (tid,), expect=None, what='mark a mention read')
                    for thread in self._threads or []:  # the cached poll (X-Poll-Interval) learns it too
                        if str(thread.get('id')) == tid:
                            thread['unread'] = False

    # -- the announcer's reports (D14) --------------------------------------------------------
    def _report_repo(self) -> str:
        """The board's repository: the spec's ``repo``, else the one repository of the project's items."""
        if self.default_repo:
            return self.default_repo
        if not self._project_items:
            self._index_project()
        repos = sorted(set(r for (r, _n) in self._project_items))
        if len(repos) != 1:
            raise BoardError('the announcer files its reports in the board\'s repository, and project %s has %s: '
                             'name it with the board option "repo" (owner/name)'
                             % (self.project, 'items in %s' % ', '.join(repos) if repos else 'no items'))
        return repos[0]

    def reports(self) -> List[Dict[str, Any]]:
        """The announcer's report issues, read live through REST ``GET /repos/{owner}/{repo}/issues``
        (never the search API, whose index lags: D14): the open ones labelled ``fleet-report``, and the
        closed ones also labelled ``fleet-silenced`` (a human silenced that title). Pull requests,
        which this endpoint also lists, are left out."""
        repo = self._report_repo()
        out = []
        for state, labels in (('open', REPORT_LABEL), ('closed', '%s,%s' % (REPORT_LABEL, SILENCED_LABEL))):
            page = 1
            while True:
                data = self._rest('GET', '/repos/%s/issues' % repo,
                                  params={'state': state, 'labels': labels, 'per_page': 100, 'page': page},
                                  expect=list, what='list the reports of %s' % repo)
                for issue in data:
                    if not isinstance(issue, dict) or 'pull_request' in issue or not isinstance(issue.get('number'), int):
                        continue
                    names = [lb.get('name') for lb in issue.get('labels') or [] if isinstance(lb, dict)]
                    out.append({'number': issue['number'], 'repo': repo, 'title': issue.get('title') or '',
                                'state': issue.get('state'), 'silenced': issue.get('state') == 'closed' and SILENCED_LABEL in names,
                                'created_at': issue.get('created_at'), 'updated_at': issue.get('updated_at'),
                                'url': issue.get('html_url') or ''})
                if len(data) < 100:
                    break
                page += 1
        return out

    def create_report(self, title, body) -> Dict[str, Any]:
        """Open one report issue (label ``fleet-report``, never added to the project, so never a
        candidate), unless an open report with this exact title exists: the check reads the live list
        just before the write. Returns ``{'number', 'repo', 'created', 'url'}``. D14: the title and the
        body pass through ``defang``."""
        title = defang(title)
        for rep in self.reports():
            if rep['state'] == 'open' and rep['title'] == title:
                return {'number': rep['number'], 'repo': rep['repo'], 'created': False, 'url': rep['url']}
        repo = self._report_repo()
        data = self._rest('POST', '/repos/%s/issues' % repo, body={'title': title, 'body': defang(body), 'labels': [REPORT_LABEL]},
                          expect=dict, what='file a report in %s' % repo)
        if not isinstance(data.get('number'), int):
            raise BoardError('GitHub accepted a report in %s but answered without its number: %s' % (repo, _error_text(201, data)))
        return {'number': data['number'], 'repo': repo, 'created': True, 'url': data.get('html_url') or ''}

    # -- writes -----------------------------------------------------------------------------
    def comment(self, number, body, *, author='') -> Comment:
        """Post a comment through REST (``author`` is ignored: GitHub posts as the token's user).

        D14: the body passes through ``_core.references.defang`` so generated text never carries a
        live closing keyword.
        """
        repo, num = self._resolve(number)
        data = self._rest('POST', '/repos/%s/issues/%s/comments' % (repo, num), body={'body': defang(body)},
                          expect=dict, what='comment on %s#%s' % (repo, num))
        if not isinstance(data.get('id'), int):
            raise BoardError('GitHub accepted a comment on %s#%s but answered without its id: %s'
                             % (repo, num, _error_text(201, data)))
        self._posted.add(str(data['id']))
        return Comment(id=str(data['id']), body=data.get('body') or '', created_at=parse_time(data.get('created_at')),
                       author=_login(data.get('user')))

    def set_state(self, number, state) -> bool:
        """Open or close the issue; closing a closed one is a no-op that returns False (D12)."""
        if state not in ('open', 'closed'):
            raise BoardError('an item state is open or closed, got %r' % (state,))
        repo, num = self._resolve(number)
        path = '/repos/%s/issues/%s' % (repo, num)
        current = self._rest('GET', path, expect=dict, what='read %s#%s' % (repo, num))
        if current.get('state') == state:
            return False
        after = self._rest('PATCH', path, body={'state': state}, expect=dict, what='set %s#%s %s' % (repo, num, state))
        if after.get('state') != state:
            raise BoardError('GitHub answered the %s of %s#%s with state %r' % (state, repo, num, after.get('state')))
        return True

    def set_status(self, number, status) -> bool:
        """Set the status field of the issue's project item (ids resolved by name, once)."""
        repo, num = self._resolve(number)
        if self._field is None:
            is_org = self._owner_is_org()
            data = self._graphql('ProjectField', {'owner': self.owner, 'isOrg': is_org, 'number': self.project,
                                                  'statusField': self.status_field}, reading=False)
            try:
                self._remember_field(self._project_of(data))
            except BoardUnreadable as exc:
                raise BoardError(str(exc))
        option = self._field['options'].get(status)
        if option is None:
            raise BoardError('the status field %r of project %s has no option %r (options: %s)'
                             % (self.status_field, self.project, status, ', '.join(sorted(str(k) for k in self._field['options']))))
        known = self._project_items.get((repo, num))
        if known is None:
            self.get('%s#%s' % (repo, num))
            known = self._project_items.get((repo, num))
        if known is None or not known[0]:
            raise BoardError('issue %s#%s is not on project %s: add it to the project first' % (repo, num, self.project))
        item_id, current = known
        if current == status:
            return False
        data = self._graphql('SetStatus', {'projectId': self._project_id, 'itemId': item_id,
                                           'fieldId': self._field['id'], 'optionId': option}, reading=False)
        result = data.get('updateProjectV2ItemFieldValue')
        if not isinstance(result, dict) or not isinstance(result.get('projectV2Item'), dict):
            raise BoardError('GitHub did not confirm the status of %s#%s' % (repo, num))
        self._project_items[(repo, num)] = (item_id, status)
        return True

    def close(self) -> None:
        self._http.close()

    # -- REST -------------------------------------------------------------------------------
    def _rest(self, method, path, *, body=None, params=None, expect=dict, what=''):
        """One REST call; the answer is type-checked against ``expect`` before use (🔴 D5)."""
        try:
            status, headers, data = self._http.request(method, self._http.api_url + path, body=body, params=params)
        except RateLimited as exc:
            raise BoardError('could not %s: %s' % (what, exc))
        except _HttpFailure as exc:
            raise BoardError('could not %s: %s' % (what, exc))
        if status == 403:
            self._refusal(headers)
        if status == 404:
            raise ItemNotFound('could not %s: %s (no such item, or the token cannot see it)' % (what, _error_text(status, data)))
        if status == 410:  # Gone: a deleted issue (@octokit/openapi lists 410 for the issue endpoints)
            raise ItemNotFound('could not %s: %s (the item was deleted)' % (what, _error_text(status, data)))
        if status >= 300:
            raise BoardError('could not %s: %s' % (what, _error_text(status, data)))
        if expect is None:
            return data
        if not isinstance(data, expect) or isinstance(data, _NotJson):
            raise BoardError('could not %s: GitHub answered HTTP %s with %s where a JSON %s was expected'
                             % (what, status, _error_text(status, data), expect.__name__))
        return data
