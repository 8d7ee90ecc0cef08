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
import os
from typing import Any, Dict, List, Optional, Tuple

from .protocol import Board, BoardError, BoardRead, BoardUnreadable, ItemNotFound
from .._core.model import Artifact, Blocker, Comment, Event, Item, UTC, parse_time
from .._core.references import defang
from .github_documents import (
    BLOCKER_BATCH, DETAIL_BATCH, DOCUMENTS, project_query)
from .github_transport import (
    RATE_LIMIT_MAX_WAIT, HttpFailure, NotJson, RateLimited, Transport, error_text, one_error)


# -- small pure helpers (tested directly) -------------------------------------------------------

def split_ref(ref, default_repo: str = '') -> Tuple[str, int]:
    """``42`` / ``'42'`` / ``'#42'`` / ``'owner/name#42'`` -> (repo, number). Repo may be ''."""
    if isinstance(ref, bool):
        raise BoardError('an item number must be an integer, got %r' % (ref,))
    if isinstance(ref, int):
        return default_repo, ref
    text = str(ref).strip()
    repo = default_repo
    if '#' in text:
        head, _sep, text = text.rpartition('#')
        if head:
            repo = head
    try:
        number = int(text)
    except ValueError:
        raise BoardError('not an item reference: %r (use 42 or owner/name#42)' % (ref,))
    return repo, number


def cost_of(rate_limits: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Fold the ``rateLimit`` objects of a read's calls into ``BoardRead.cost``."""
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
    return Comment(id=str(cid) if cid is not None else str(node.get('id', '')),
                   body=node.get('body') or '',
                   created_at=parse_time(node.get('createdAt')),
                   author=_login(node.get('author')))


def artifact_of(pr: Dict[str, Any], issue_number: int) -> Artifact:
    """A ``PullRequest`` linked to an issue as closing it -> ``Artifact``.

    ``closes`` is the issue: GitHub itself made the link (its own keyword-adjacency parser, or a
    human linking it), which is the D16 "real closing reference". ``merged`` and ``merged_at``
    are GitHub's; nothing here judges time -- ``_core.references`` does.
    """
    repo = (pr.get('repository') or {}).get('nameWithOwner', '') if isinstance(pr.get('repository'), dict) else ''
    return Artifact(ref='%s#%s' % (repo, pr.get('number')),
                    created_at=parse_time(pr.get('createdAt')),
                    merged=pr.get('merged') is True,
                    merged_at=parse_time(pr.get('mergedAt')),
                    closes=[issue_number],
                    url=pr.get('url') or '',
                    title=pr.get('title') or '')


def detail_into(item: Item, issue: Dict[str, Any]) -> None:
    """Fill ``item`` from an ``IssueDetail``/``BlockerEdges`` selection (what was selected only)."""
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
            # A ClosedEvent whose closer is a *merged* pull request is proof; a commit
            # (or a hand close, closer null) is not an artifact.
            if kind == 'closed' and isinstance(closer, dict) and closer.get('__typename') == 'PullRequest':
                art = artifact_of(closer, item.number)
                if art.merged:
                    artifacts[art.ref] = art
        item.events = sorted(events, key=lambda e: e.at)
    if 'closedByPullRequestsReferences' in issue:
        for pr in _nodes(issue.get('closedByPullRequestsReferences')):
            art = artifact_of(pr, item.number)
            artifacts[art.ref] = art
    if 'timelineItems' in issue or 'closedByPullRequestsReferences' in issue:
        item.artifacts = sorted(artifacts.values(), key=lambda a: (_EPOCH if a.created_at is None else a.created_at, a.ref))
    if 'blockedBy' in issue:
        item.blockers = [Blocker(number=int(n.get('number')), state=_lower(n.get('state')),
                                 repo=(n.get('repository') or {}).get('nameWithOwner', ''))
                         for n in _nodes(issue.get('blockedBy')) if isinstance(n.get('number'), int)]


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


def _when(comment: Comment) -> _dt.datetime:
    """Sort key: GitHub's own time; a comment without one sorts first (never crashes the read)."""
    return _EPOCH if comment.created_at is None else comment.created_at


def _summary_open_blockers(issue: Dict[str, Any]) -> int:
    summary = issue.get('issueDependenciesSummary')
    if isinstance(summary, dict) and isinstance(summary.get('blockedBy'), int):
        return summary['blockedBy']
    return 0


# -- the board ----------------------------------------------------------------------------------

class GitHubBoard(Board):
    """The GitHub Projects v2 board (its design notes: ``docs/internals.md``).

    Spec keys: ``owner``, ``project`` (number), ``status_field`` (``Status``), ``ready``
    (``Ready``), ``token`` (else ``GITHUB_TOKEN``/``GH_TOKEN``), ``api_url``
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
        api_url = spec.get('api_url') or 'https://api.github.com'
        self.location = '%s %s/projects/%s' % (api_url.rstrip('/'), self.owner, self.project)
        token = spec.get('token') or os.environ.get('GITHUB_TOKEN') or os.environ.get('GH_TOKEN')
        if not token:
            raise BoardUnreadable('no GitHub token: set the board option "token" (no_log) or the '
                                  'environment variable GITHUB_TOKEN on the machine that reads the board')
        self._http = Transport(api_url, token, session=spec.get('session'), sleep=spec.get('sleep'),
                               clock=spec.get('clock'),
                               max_wait=spec.get('rate_limit_max_wait', RATE_LIMIT_MAX_WAIT))
        self._rate_limits = []  # type: List[Dict[str, Any]]
        self._is_org = None  # type: Optional[bool]
        self._field = None  # type: Optional[Dict[str, Any]]
        self._project_id = None  # type: Optional[str]
        # (repo, number) -> (project item id, status): filled by reads of this instance only.
        self._project_items = {}  # type: Dict[Tuple[str, int], Tuple[str, str]]

    # -- GraphQL ----------------------------------------------------------------------------
    def _graphql(self, name: str, variables: Dict[str, Any], *, reading: bool) -> Dict[str, Any]:
        """Send ``DOCUMENTS[name]``; return its ``data`` after every D5 type check.

        ``reading`` picks the failure's name: ``BoardUnreadable`` for the queue read,
        ``BoardError`` for anything else.
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
        except HttpFailure as exc:
            raise fail('GitHub GraphQL %s: %s' % (name, exc))
        if status == 401:
            raise fail('GitHub GraphQL %s: %s -- the token is missing, expired or revoked' % (name, error_text(status, data)))
        if status >= 300:
            raise fail('GitHub GraphQL %s: %s' % (name, error_text(status, data)))
        if not isinstance(data, dict):
            raise fail('GitHub GraphQL %s: %s' % (name, error_text(status, data)))
        errors = data.get('errors')
        if errors:  # HTTP 200 with an errors array is an error, whatever data says
            if not reading and isinstance(errors, list) and all(isinstance(e, dict) and e.get('type') == 'NOT_FOUND' for e in errors):
                fail = ItemNotFound
            raise fail('GitHub GraphQL %s answered HTTP %s with errors: %s'
                       % (name, status, '; '.join(one_error(e) for e in (errors if isinstance(errors, list) else [errors]))))
        payload = data.get('data')
        if not isinstance(payload, dict):
            raise fail('GitHub GraphQL %s: no "data" object in the answer (%s)' % (name, error_text(status, data)))
        rl = payload.get('rateLimit')
        if isinstance(rl, dict):
            entry = dict(rl)
            entry['document'] = name
            self._rate_limits.append(entry)
        return payload

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
        is_org = self._owner_is_org()
        query = project_query(self.status_field, self.ready)
        pages = self._pages(is_org, query)
        items = []  # type: List[Item]
        issues = {}  # type: Dict[str, Item]
        candidates = []  # type: List[str]
        blocked = []  # type: List[str]
        for node in pages:
            content = node.get('content')
            if node.get('type') != 'ISSUE' or not isinstance(content, dict) or content.get('__typename') != 'Issue':
                continue  # drafts, pull requests, redacted items: not work this fleet can run
            if node.get('isArchived') is True:
                continue
            item = self._item_of(content, node)
            if item.id in issues:
                continue
            issues[item.id] = item
            items.append(item)
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
        return BoardRead(items=items, cost=cost)

    def _pages(self, is_org: bool, query: str) -> List[Dict[str, Any]]:
        nodes = []  # type: List[Dict[str, Any]]
        after = None
        seen = set()
        while True:
            data = self._graphql('BoardPage', {'owner': self.owner, 'isOrg': is_org, 'number': self.project,
                                               'query': query, 'statusField': self.status_field,
                                               'after': after}, reading=True)
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
            nodes.extend(n for n in conn['nodes'] if isinstance(n, dict))
            info = conn.get('pageInfo') if isinstance(conn.get('pageInfo'), dict) else {}
            if info.get('hasNextPage') is not True:
                return nodes
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
                    updated_at=parse_time(content.get('updatedAt')))

    def _fetch_blockers(self, ids: List[str], issues: Dict[str, Item]) -> List[str]:
        """Fill blocker edges; return the ids whose edges show no open blocker after all."""
        promoted = []
        for start in range(0, len(ids), BLOCKER_BATCH):
            batch = ids[start:start + BLOCKER_BATCH]
            data = self._graphql('Blockers', {'ids': batch}, reading=True)
            for node in self._batch_nodes(data, batch):
                item = issues[node['id']]
                detail_into(item, node)
                if not any(b.state == 'open' for b in item.blockers):
                    promoted.append(item.id)
        return promoted

    def _fetch_details(self, ids: List[str], issues: Dict[str, Item]) -> None:
        for start in range(0, len(ids), DETAIL_BATCH):
            batch = ids[start:start + DETAIL_BATCH]
            data = self._graphql('Details', {'ids': batch}, reading=True)
            for node in self._batch_nodes(data, batch):
                item = issues[node['id']]
                detail_into(item, node)
                self._older_comments(item, node, reading=True)

    def _batch_nodes(self, data, batch):
        nodes = data.get('nodes')
        if not isinstance(nodes, list) or len(nodes) != len(batch):
            raise BoardUnreadable('GitHub answered a batch of %d issues with %r' % (len(batch), type(nodes).__name__))
        out = []
        for want, node in zip(batch, nodes):
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
            data = self._graphql('MoreComments', {'id': item.id, 'before': info['startCursor']}, reading=reading)
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
        detail_into(item, issue)
        self._older_comments(item, issue, reading=False)
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
            nodes = self._pages(is_org, 'is:issue')
        except BoardUnreadable as exc:
            raise BoardError(str(exc))
        for node in nodes:
            content = node.get('content')
            if isinstance(content, dict) and content.get('__typename') == 'Issue':
                self._item_of(content, node)

    def mentions(self, number) -> list:
        """Unread mentions of the token's user on this item (D19), oldest first.

        Each is ``{'id': thread id, 'reason', 'title', 'body', 'author', 'url', 'updated_at'}``;
        ``body`` is the latest comment of the thread (the mention). Nothing is marked read here.
        """
        repo, num = self._resolve(number)
        subject = '/repos/%s/issues/%s' % (repo, num)
        found = []
        page = 1
        while True:
            data = self._rest('GET', '/notifications', params={'participating': 'true', 'per_page': 50, 'page': page},
                              expect=list, what='read notifications')
            for thread in data:
                if not isinstance(thread, dict) or thread.get('unread') is False:
                    continue
                if thread.get('reason') not in ('mention', 'team_mention'):
                    continue
                subj = thread.get('subject') if isinstance(thread.get('subject'), dict) else {}
                if not str(subj.get('url') or '').endswith(subject):
                    continue
                found.append(self._mention_of(thread, subj))
            if len(data) < 50:
                break
            page += 1
        return sorted(found, key=lambda m: m['updated_at'] or '')

    def _mention_of(self, thread, subj):
        body, author, url = '', '', ''
        latest = subj.get('latest_comment_url')
        if isinstance(latest, str) and latest.startswith(self._http.api_url):
            comment = self._rest('GET', latest[len(self._http.api_url):], expect=dict, what='read a mentioning comment')
            body = comment.get('body') or ''
            author = _login(comment.get('user'))
            url = comment.get('html_url') or ''
        return {'id': str(thread.get('id')), 'reason': thread.get('reason'), 'title': subj.get('title') or '',
                'body': body, 'author': author, 'url': url, 'updated_at': thread.get('updated_at')}

    def mark_read(self, ids) -> None:
        """Mark notification threads read -- call only *after* injecting them."""
        for tid in ids or []:
            self._rest('PATCH', '/notifications/threads/%s' % (tid,), expect=None, what='mark a mention read')

    # -- writes -----------------------------------------------------------------------------
    def comment(self, number, body, *, author='') -> Comment:
        """Post a comment through REST (``author`` is ignored: GitHub posts as the token's user).

        The body passes through ``_core.references.defang`` so generated text never carries a
        live closing keyword.
        """
        repo, num = self._resolve(number)
        data = self._rest('POST', '/repos/%s/issues/%s/comments' % (repo, num), body={'body': defang(body)},
                          expect=dict, what='comment on %s#%s' % (repo, num))
        if not isinstance(data.get('id'), int):
            raise BoardError('GitHub accepted a comment on %s#%s but answered without its id: %s'
                             % (repo, num, error_text(201, data)))
        return Comment(id=str(data['id']), body=data.get('body') or '', created_at=parse_time(data.get('created_at')),
                       author=_login(data.get('user')))

    def set_state(self, number, state) -> bool:
        """Open or close the issue; closing a closed one is a no-op that returns False."""
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
            status, _headers, data = self._http.request(method, self._http.api_url + path, body=body, params=params)
        except RateLimited as exc:
            raise BoardError('could not %s: %s' % (what, exc))
        except HttpFailure as exc:
            raise BoardError('could not %s: %s' % (what, exc))
        if status == 404:
            raise ItemNotFound('could not %s: %s (no such item, or the token cannot see it)' % (what, error_text(status, data)))
        if status >= 300:
            raise BoardError('could not %s: %s' % (what, error_text(status, data)))
        if expect is None:
            return data
        if not isinstance(data, expect) or isinstance(data, NotJson):
            raise BoardError('could not %s: GitHub answered HTTP %s with %s where a JSON %s was expected'
                             % (what, status, error_text(status, data), expect.__name__))
        return data
