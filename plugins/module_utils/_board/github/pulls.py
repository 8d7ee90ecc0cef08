# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A ``PullDetails`` answer -> the review notes and check results of an ``Artifact``. Pure; no I/O.

Threads: every comment of an unresolved thread (``isResolved`` false), outdated or not, as ``thread`` notes
(the decision keeps the trusted ones). Reviews: each reviewer's latest opinion (``latestOpinionatedReviews``)
as ``review`` notes with their state. Checks: the head's check runs (``conclusion``; ``''`` while not
completed) and commit statuses (``state``: ``FAILURE``/``ERROR`` fail, ``PENDING``/``EXPECTED`` run) with
``isRequired``, all on ``headRefOid``.
"""

from __future__ import annotations

from typing import Any, Dict

from ..._core.board.model import Artifact, CheckResult, ReviewNote, parse_time
from .nodes import login_of, nodes_of, type_of

_STATUS_RUNNING = ('PENDING', 'EXPECTED')


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ''


def _time(value: Any):
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        return None


def details_into(artifact: Artifact, node: Dict[str, Any]) -> None:
    """Fill ``artifact`` from a ``PullRequest`` node of ``PULL_DETAILS`` (head, state, reviews, checks)."""
    if _text(node.get('state')):
        artifact.state = node['state']
    if _text(node.get('headRefName')):
        artifact.head_ref = node['headRefName']
    if _text(node.get('headRefOid')):
        artifact.head_sha = node['headRefOid']
    if isinstance(node.get('isCrossRepository'), bool):
        artifact.cross_repo = node['isCrossRepository']
    reviews = []
    for thread in nodes_of(node.get('reviewThreads')):
        if thread.get('isResolved') is not False:
            continue
        line = thread.get('line') if isinstance(thread.get('line'), int) else None
        for comment in nodes_of(thread.get('comments')):
            reviews.append(ReviewNote(kind='thread', body=_text(comment.get('body')), author=login_of(comment.get('author')),
                                      author_type=type_of(comment.get('author')),
                                      association=_text(comment.get('authorAssociation')), path=_text(thread.get('path')),
                                      line=line, resolved=False, outdated=thread.get('isOutdated') is True,
                                      created_at=_time(comment.get('createdAt'))))
    for review in nodes_of(node.get('latestOpinionatedReviews')):
        reviews.append(ReviewNote(kind='review', body=_text(review.get('body')), author=login_of(review.get('author')),
                                  author_type=type_of(review.get('author')), association=_text(review.get('authorAssociation')),
                                  state=_text(review.get('state')), created_at=_time(review.get('submittedAt'))))
    artifact.reviews = reviews
    rollup = node.get('statusCheckRollup') if isinstance(node.get('statusCheckRollup'), dict) else {}
    checks = []
    for ctx in nodes_of(rollup.get('contexts')):
        required = ctx.get('isRequired') is True
        if ctx.get('__typename') == 'CheckRun':
            done = _text(ctx.get('status')) == 'COMPLETED'
            summary = _text(ctx.get('title')) or _text(ctx.get('summary'))
            checks.append(CheckResult(name=_text(ctx.get('name')), conclusion=_text(ctx.get('conclusion')) if done else '',
                                      required=required, summary=summary, url=_text(ctx.get('detailsUrl')),
                                      head_sha=artifact.head_sha))
        elif ctx.get('__typename') == 'StatusContext':
            state = _text(ctx.get('state'))
            checks.append(CheckResult(name=_text(ctx.get('context')), conclusion='' if state in _STATUS_RUNNING else state,
                                      required=required, summary=_text(ctx.get('description')),
                                      url=_text(ctx.get('targetUrl')), head_sha=artifact.head_sha))
    artifact.checks = checks


__all__ = ['details_into']
