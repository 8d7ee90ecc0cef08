# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GitHub's answers -> the board model: item references, comments, events, blockers, artifacts.

Pure functions over the GraphQL nodes the documents select (``documents.py``), type-checked so a
surprising answer never crashes a read (D5); time rules are ``_core.board.references``'s, not these.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, List, Optional, Tuple

from ..protocol import BoardError
from ..._core.board.model import Artifact, Blocker, Comment, Event, Item, UTC, parse_time
from ..._core.board.naming import item_number


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


def login_of(obj) -> str:
    login = obj.get('login', '') if isinstance(obj, dict) else ''
    return login if isinstance(login, str) else ''


def type_of(obj) -> str:
    """An ``Actor``'s GraphQL typename (``User``, ``Bot``, ...) or REST ``type``; ``''`` when absent."""
    if not isinstance(obj, dict):
        return ''
    kind = obj.get('__typename', obj.get('type'))
    return kind if isinstance(kind, str) else ''


def lower_text(value) -> str:
    return value.lower() if isinstance(value, str) else ''


def nodes_of(conn) -> List[Dict[str, Any]]:
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
                   author=login_of(node.get('author')),
                   association=association if isinstance(association, str) else '',
                   author_type=type_of(node.get('author')),
                   edited_at=_edited_at(node),
                   editor=login_of(node.get('editor')), editor_type=type_of(node.get('editor')))


def _edited_at(node: Dict[str, Any]) -> Optional[_dt.datetime]:
    try:
        return parse_time(node.get('lastEditedAt'))
    except (TypeError, ValueError):
        return _EPOCH  # an edit time that does not parse is still an edit


def provenance_into(item: Item, issue: Dict[str, Any]) -> None:
    """The issue's author, standing and last edit (what the ``Issue`` document selects) into ``item``."""
    item.author = login_of(issue.get('author'))
    item.author_type = type_of(issue.get('author'))
    association = issue.get('authorAssociation')
    item.author_association = association if isinstance(association, str) else ''
    item.edited_at = _edited_at(issue)
    item.editor = login_of(issue.get('editor'))
    item.editor_type = type_of(issue.get('editor'))


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
    are GitHub's; nothing here judges time -- ``_core.board.references`` does.
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
                    base=base, into_closing_branch=closing, state=_text(pr.get('state')),
                    head_ref=_text(pr.get('headRefName')), head_sha=_text(pr.get('headRefOid')),
                    cross_repo=pr['isCrossRepository'] if isinstance(pr.get('isCrossRepository'), bool) else None,
                    node_id=_text(pr.get('id')))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ''


def detail_into(item: Item, issue: Dict[str, Any], base_branch: str = '') -> List[str]:
    """Fill ``item`` from an ``IssueDetail``/``BlockerEdges`` selection (what was selected only).

    Returns the node ids of the commits whose ``ClosedEvent`` closed the issue (see
    ``COMMIT_PULLS``: the caller follows them to their merged pull requests).
    """
    commits = []  # type: List[str]
    if 'comments' in issue:
        item.comments = sorted((comment_of(n) for n in nodes_of(issue.get('comments'))), key=comment_time)
    artifacts = {}  # type: Dict[str, Artifact]
    if 'timelineItems' in issue:
        events = []
        for node in nodes_of(issue.get('timelineItems')):
            kind = {'ClosedEvent': 'closed', 'ReopenedEvent': 'reopened'}.get(node.get('__typename'))
            at = parse_time(node.get('createdAt'))
            if kind is None or at is None:
                continue
            events.append(Event(kind=kind, at=at, actor=login_of(node.get('actor')), actor_type=type_of(node.get('actor'))))
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
        for pr in nodes_of(issue.get('closedByPullRequestsReferences')):
            art = artifact_of(pr, item.number, base_branch)
            artifacts[art.ref] = art
    if 'timelineItems' in issue or 'closedByPullRequestsReferences' in issue:
        item.artifacts = _sorted_artifacts(artifacts.values())
    if 'blockedBy' in issue:
        item.blockers = [Blocker(number=int(n.get('number')), state=lower_text(n.get('state')),
                                 repo=(n.get('repository') or {}).get('nameWithOwner', ''))
                         for n in nodes_of(issue.get('blockedBy')) if isinstance(n.get('number'), int)]
    return commits


def commit_artifacts_into(item: Item, commit: Dict[str, Any], base_branch: str = '') -> None:
    """Add the merged pull requests of a closing commit (a ``CommitPulls`` node) to ``item``.

    Only a merged pull request into the closing branch can have brought the commit there (a PR
    into another branch, or an open one, did not close the issue); the time rule (D16) is
    ``_core.board.references.attribute``'s, as for every artifact.
    """
    known = dict((a.ref, a) for a in item.artifacts)
    for pr in nodes_of(commit.get('associatedPullRequests')):
        art = artifact_of(pr, item.number, base_branch)
        if art.merged and art.into_closing_branch is not False and art.ref not in known:
            known[art.ref] = art
    item.artifacts = _sorted_artifacts(known.values())


def _sorted_artifacts(artifacts) -> List[Artifact]:
    return sorted(artifacts, key=lambda a: (_EPOCH if a.created_at is None else a.created_at, a.ref))


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


def comment_time(comment: Comment) -> _dt.datetime:
    """Sort key: GitHub's own time; a comment without one sorts first (never crashes the read)."""
    return _EPOCH if comment.created_at is None else comment.created_at


def summary_open_blockers(issue: Dict[str, Any]) -> int:
    summary = issue.get('issueDependenciesSummary')
    if isinstance(summary, dict) and isinstance(summary.get('blockedBy'), int):
        return summary['blockedBy']
    return 0


ROUTE_FIELDS = (('agent', 'Agent'), ('model', 'Model'), ('effort', 'Effort'), ('priority', 'Priority'), ('budget', 'Budget'))
"""The project fields an item's route, priority and own budget are read from, with their default names (board
options ``agent_field``, ``model_field``, ``effort_field``, ``priority_field``, ``budget_field``)."""


def field_text(value: Any) -> Any:
    """A project field value as read: a single select's option name, a text, or a number; None for none."""
    if not isinstance(value, dict):
        return None
    for key in ('name', 'text'):
        if isinstance(value.get(key), str) and value[key].strip():
            return value[key].strip()
    number = value.get('number')
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        return int(number) if float(number).is_integer() else number
    return None


def route_into(item: Item, node: Dict[str, Any]) -> None:
    """The project item's route, priority and budget fields (``agentValue``... of the documents) into ``item``."""
    for key, _default in ROUTE_FIELDS:
        value = field_text(node.get(key + 'Value'))
        if key in ('priority', 'budget'):
            setattr(item, key, value)
        else:
            setattr(item, key, '' if value is None else str(value))
