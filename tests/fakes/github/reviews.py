# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake's pull-request review and checks: review threads, reviews, check runs and commit statuses.

GitHub's documented behaviour, as the fake reproduces it:

* ``PullRequest.reviewThreads``: every thread, resolved or not (``isResolved``), each with its comments.
* ``PullRequest.latestOpinionatedReviews``: the latest review per author among those that state an opinion
  (``APPROVED``, ``CHANGES_REQUESTED``; a ``COMMENTED`` review is no opinion), in submission order;
  ``writersOnly`` keeps authors with write access (docs.github.com/graphql/reference/objects#pullrequest).
* ``PullRequest.statusCheckRollup``: the check runs and commit statuses of the head commit only -- a push
  leaves the old results on the old commit; null when the head has none.
* ``isRequired(pullRequestId:)``: whether the base branch's protection requires that check (set per check
  here, as a branch protection rule would).

Builders take the store (``add_review`` ... ``push``); ``RESOLVERS`` is merged into the executor's table.
"""

from __future__ import annotations

from typing import Any, Dict, Optional


OPINIONS = ('APPROVED', 'CHANGES_REQUESTED')


def connection(seq, **args):
    from .executor import connection as _connection  # the executor imports this module
    return _connection(seq, **args)


def _actor(login: str) -> Dict[str, Any]:
    if login.endswith('[bot]'):
        return {'__typename': 'Bot', 'login': login[:-len('[bot]')]}
    return {'__typename': 'User', 'login': login}


def _ensure(pr: Dict[str, Any]) -> Dict[str, Any]:
    pr.setdefault('review_threads', [])
    pr.setdefault('reviews', [])
    pr.setdefault('checks', [])
    return pr


def add_review(store, pr: Dict[str, Any], author: str, state: str, body: str = '', at=None) -> Dict[str, Any]:
    """A submitted review (``state``: APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED)."""
    from .store import iso
    with store.lock:
        review = store._register('PRR', {'__typename': 'PullRequestReview', 'state': state, 'body': body,
                                         'submittedAt': iso(at) or store.now(), 'author': _actor(author),
                                         'authorAssociation': store.associations.get(author, 'NONE'), 'login': author})
        _ensure(pr)['reviews'].append(review)
        return review


def add_thread(store, pr: Dict[str, Any], author: str, body: str, *, path: str = 'README.md', line: Optional[int] = 1,
               resolved: bool = False, outdated: bool = False, at=None) -> Dict[str, Any]:
    """A review thread opened by ``author`` on ``path``:``line``."""
    with store.lock:
        thread = store._register('PRRT', {'__typename': 'PullRequestReviewThread', 'isResolved': resolved,
                                          'isOutdated': outdated, 'path': path, 'line': line, 'comments': []})
        _ensure(pr)['review_threads'].append(thread)
        reply(store, thread, author, body, at=at)
        return thread


def reply(store, thread: Dict[str, Any], author: str, body: str, at=None) -> Dict[str, Any]:
    from .store import iso
    with store.lock:
        comment = store._register('PRRC', {'__typename': 'PullRequestReviewComment', 'body': body,
                                           'createdAt': iso(at) or store.now(), 'author': _actor(author),
                                           'authorAssociation': store.associations.get(author, 'NONE')})
        thread['comments'].append(comment)
        return comment


def add_check(store, pr: Dict[str, Any], name: str, conclusion: Optional[str], *, required: bool = True,
              title: str = '', summary: str = '', status: str = 'COMPLETED', kind: str = 'CheckRun') -> Dict[str, Any]:
    """A check run (``kind`` CheckRun: ``conclusion`` once ``status`` is COMPLETED) or a commit status
    (``kind`` StatusContext: ``conclusion`` is its state, SUCCESS/FAILURE/ERROR/PENDING) on the PR's current head."""
    with store.lock:
        if kind == 'CheckRun':
            check = {'__typename': 'CheckRun', 'name': name, 'status': status,
                     'conclusion': conclusion if status == 'COMPLETED' else None, 'title': title, 'summary': summary,
                     'detailsUrl': 'https://github.com/checks/%s' % name}
        else:
            check = {'__typename': 'StatusContext', 'context': name, 'state': conclusion, 'description': summary,
                     'targetUrl': 'https://ci.example/%s' % name}
        check.update(required=required, sha=pr['headRefOid'])
        _ensure(pr)['checks'].append(check)
        return check


def push(store, pr: Dict[str, Any], oid: str) -> None:
    """A push to the PR's head branch: a new head commit (older check results stay on the older commit)."""
    with store.lock:
        pr['headRefOid'] = oid


def merge(store, pr: Dict[str, Any], at=None) -> None:
    """Merge an open PR into its base: closes its linked issues when the base is the default branch (as add_pr)."""
    from .store import iso
    with store.lock:
        when = iso(at) or store.now()
        pr.update(merged=True, mergedAt=when, state='MERGED')
        if pr['baseRefName'] == pr['repository']['defaultBranchRef']['name']:
            for issue in list(store.nodes.values()):
                if isinstance(issue, dict) and pr in (issue.get('closing_prs') or ()):
                    store.set_state(issue, 'closed', closer=pr, at=at)


# -- resolvers (PullRequest fields with arguments or derived values) ------------------------------------------

def _threads(resolvers, src, info, **a):
    resolvers._require('pull_requests', src.get('repository'))
    return connection(_ensure(src)['review_threads'], **a)


def _opinions(resolvers, src, info, writersOnly=False, **a):
    resolvers._require('pull_requests', src.get('repository'))
    latest = {}
    for review in _ensure(src)['reviews']:
        if review['state'] in OPINIONS:
            latest.pop(review['login'], None)
            latest[review['login']] = review
    found = [r for r in latest.values()
             if not writersOnly or resolvers.store.permissions.get(r['login']) in ('ADMIN', 'MAINTAIN', 'WRITE')]
    return connection(found, **a)


def _rollup(resolvers, src, info, **a):
    resolvers._require('pull_requests', src.get('repository'))
    head = [c for c in _ensure(src)['checks'] if c['sha'] == src['headRefOid']]
    if not head:
        return None
    failing = any((c.get('conclusion') or c.get('state')) in ('FAILURE', 'ERROR', 'TIMED_OUT', 'CANCELLED') for c in head)
    return {'__typename': 'StatusCheckRollup', 'state': 'FAILURE' if failing else 'SUCCESS', 'contexts_list': head}


RESOLVERS = {
    ('PullRequest', 'reviewThreads'): _threads,
    ('PullRequest', 'latestOpinionatedReviews'): _opinions,
    ('PullRequest', 'statusCheckRollup'): _rollup,
    ('PullRequestReviewThread', 'comments'): lambda r, src, info, **a: connection(src['comments'], **a),
    ('StatusCheckRollup', 'contexts'): lambda r, src, info, **a: connection(src['contexts_list'], **a),
    ('CheckRun', 'isRequired'): lambda r, src, info, **a: bool(src.get('required')),
    ('StatusContext', 'isRequired'): lambda r, src, info, **a: bool(src.get('required')),
}
"""(type, field) -> ``fn(resolvers, source, info, **args)``."""
