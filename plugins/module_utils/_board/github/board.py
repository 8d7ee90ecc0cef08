# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub Projects v2 board: the ``Board`` protocol over GitHub's GraphQL and REST APIs.

The board *is* the queue, read live: one paginated GraphQL query a cycle with the status filter on
the server, cheap fields on the page, expensive ones per candidate. The documents it sends are in
``documents.py``, the HTTP in ``transport.py``, the reading of GitHub's nodes in ``nodes.py`` and
the token preflight in ``tokens.py``.

The rules in full, with their reasons: ``docs/internals.md``, section "The GitHub board".
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import os
from typing import Any, Dict, List, Optional, Tuple

from . import tokens
from .memory import DEFAULT_FULL_READ_EVERY, ReadMemory, fingerprint, settled
from .documents import BLOCKER_BATCH, DETAIL_BATCH, DOCUMENTS, project_query
from .nodes import (ROUTE_FIELDS, comment_of, comment_time, commit_artifacts_into, detail_into, login_of, lower_text, nodes_of,
                    provenance_into, route_into, split_ref, summary_open_blockers, type_of)
from .transport import (RATE_LIMIT_MAX_WAIT, SECONDARY_MAX_TOTAL, HttpFailure, NotJson, RateLimited, Transport,
                        cost_of, error_text, errors_by_index, is_placed, one_error, unreadable_cause)
from ..protocol import Board, BoardError, BoardRead, BoardUnreadable, ItemNotFound
from ..._core.dispatch.announce import REPORT_LABEL, SILENCED_LABEL
from ..._core.board.markers import markers_of
from ..._core.dispatch.eligibility import reopen_ignored
from ..._core.dispatch.pr_loop import continued_pull
from .pulls import details_into
from ..._core.board.mentions import handles_of, unseen_mentions
from ..._core.board.model import Comment, Item, format_time, parse_time
from ..._core.board.references import defang


class _AnswerError(BoardUnreadable):
    """GitHub answered one read with an error (a status, a body or an errors list), as opposed to a
    transport failure or a refused token: a batch read narrows it down to the items it concerns."""


# -- the board ----------------------------------------------------------------------------------

class GitHubBoard(Board):
    """The GitHub Projects v2 board (see the module docstring for D1, D2, D5, D9, D12, D16, D19).

    Spec keys: ``owner``, ``project`` (number), ``status_field`` (``Status``), ``ready``
    (``Ready``), ``agent_field``/``model_field``/``effort_field``/``priority_field``/``budget_field`` (the route,
    priority and item budget fields, ``Agent``/``Model``/``Effort``/``Priority``/``Budget``), ``token`` (else the
    first of ``tokens.TOKEN_ENV`` set), ``api_url``
    (``https://api.github.com``), ``owner_type`` (``organization``/``user``/``auto``), ``repo``
    (optional ``owner/name`` for bare item numbers), ``read_memory`` (a file path: skip re-reading
    items whose page row has not moved, ``memory.py``) and ``full_read_every`` (cycles, default
    ``memory.DEFAULT_FULL_READ_EVERY``). For tests and the runner: ``session`` (a
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
        # the route and priority fields (docs/usage.md "Routing and priority"); a project without one reads no route
        self.route_fields = dict((key, str(spec.get(key + '_field') or default)) for key, default in ROUTE_FIELDS)
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
        # MEMBER (organization membership) is trusted standing only when the operator says so (_core.board.mentions)
        self.trust_members = spec.get('trust_members') is True
        api_url = spec.get('api_url') or 'https://api.github.com'
        self.location = '%s %s/projects/%s' % (api_url.rstrip('/'), self.owner, self.project)
        self.read_memory = spec.get('read_memory') or ''
        every = spec.get('full_read_every')
        self.full_read_every = DEFAULT_FULL_READ_EVERY if every is None else every
        if isinstance(self.full_read_every, bool) or not isinstance(self.full_read_every, int) or self.full_read_every < 1:
            raise BoardError('full_read_every must be a positive number of cycles, got %r' % (every,))
        token = spec.get('token') or next((os.environ[n] for n in tokens.TOKEN_ENV if os.environ.get(n)), '')
        if not token:
            raise BoardUnreadable('no GitHub token: set the board option "token" (no_log) or one of the '
                                  'environment variables %s on the machine that reads the board' % ', '.join(tokens.TOKEN_ENV))
        self._http = Transport(api_url, token, session=spec.get('session'), sleep=spec.get('sleep'),
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
        self._permissions = {}  # type: Dict[Tuple[str, str], str]
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
        answer_fail = _AnswerError if reading else BoardError
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
            raise answer_fail('GitHub GraphQL %s: %s' % (name, error_text(status, data)))
        if not isinstance(data, dict):
            raise answer_fail('GitHub GraphQL %s: %s' % (name, error_text(status, data)))
        errors = data.get('errors')
        if partial and errors and isinstance(errors, list) and isinstance(data.get('data'), dict) \
                and all(is_placed(e) for e in errors):
            payload = data['data']
            self._note_rate_limit(name, payload)
            return payload, errors
        if errors:  # 🔴 D5/D20: HTTP 200 with an errors array is an error, whatever data says
            fail = answer_fail
            if not reading and isinstance(errors, list) and all(isinstance(e, dict) and e.get('type') == 'NOT_FOUND' for e in errors):
                fail = ItemNotFound
            raise fail('GitHub GraphQL %s answered HTTP %s with errors: %s'
                       % (name, status, '; '.join(one_error(e) for e in (errors if isinstance(errors, list) else [errors]))))
        payload = data.get('data')
        if not isinstance(payload, dict):
            raise answer_fail('GitHub GraphQL %s: no "data" object in the answer (%s)' % (name, error_text(status, data)))
        self._note_rate_limit(name, payload)
        return (payload, []) if partial else payload

    def _per_item(self, name: str, ids: List[str], issues: Dict[str, Item], batch_size: int, what: str):
        """``name`` over ``ids`` in batches: ``(batch, data, errors)`` for each part GitHub answered.

        D5: the queue read fails closed, a per-candidate read fails for that candidate only. A batch
        GitHub answers with an error is halved until the error is pinned on single items; each such
        item is held unreadable with the cause and the others read on (log2 of the batch more
        requests). A transport failure or a refused token is the whole read's, and so is an error
        that every item of a read of several gets: that is the endpoint, not an item.
        """
        parts, failed, first = [], [], []

        def attempt(batch):
            try:
                data, errors = self._graphql(name, {'ids': batch}, reading=True, partial=True)
            except _AnswerError as exc:
                if len(batch) > 1:
                    half = len(batch) // 2
                    attempt(batch[:half])
                    attempt(batch[half:])
                    return
                first.append(exc)
                failed.append(batch[0])
                return
            parts.append((batch, data, errors))
        for start in range(0, len(ids), batch_size):
            attempt(ids[start:start + batch_size])
        if failed and len(ids) > 1 and len(failed) == len(ids):
            raise BoardUnreadable('%s (every one of the %d items failed alike)' % (first[0], len(ids)))
        for want, exc in zip(failed, first):
            item = issues[want]
            item.unreadable = item.unreadable or 'its %s could not be read: %s' % (what, exc)
        return parts

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
        is_org = self._owner_is_org()
        memory = None
        if self.read_memory:
            memory = ReadMemory(self.read_memory, '%s %s=%s' % (self.location, self.status_field, self.ready),
                                self.full_read_every).load()
        unblocked_only = memory is not None and memory.unblocked_only()
        pages, page_errors = self._pages(is_org, project_query(self.status_field, self.ready, unblocked=unblocked_only))
        answered_at = self._answered_at()
        items = []  # type: List[Item]
        issues = {}  # type: Dict[str, Item]
        candidates = []  # type: List[str]
        blocked = []  # type: List[str]
        unreadable = []  # type: List[Dict[str, Any]]
        prints = {}  # type: Dict[str, str]
        deferred = 0
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
            prints[item.id] = fingerprint(content)
            blocking = summary_open_blockers(content)
            if memory is not None and memory.due(item.id, prints[item.id], blocked=blocking > 0) is None:
                # D1: the memory only skips work; the item is held, never judged on its page row
                item.deferred = ('unchanged since its last read (page row %s); read in full at least every %d cycles'
                                 % (prints[item.id], self.full_read_every))
                memory.keep(item.id)
                deferred += 1
                continue
            if blocking > 0:
                blocked.append(item.id)
            else:
                candidates.append(item.id)
        promoted = self._fetch_blockers(blocked, issues)
        self._fetch_details(candidates + promoted, issues)
        cost = cost_of(self._rate_limits)
        cost['items'] = len(items)
        cost['candidates'] = len(candidates) + len(promoted)
        cost['deferred'] = deferred
        if memory is not None:
            for item_id in blocked + candidates:
                # an unreadable item, or one updated too close to this read, is read again next cycle
                if not issues[item_id].unreadable and settled(issues[item_id].updated_at, answered_at):
                    memory.record(item_id, prints[item_id])
            error = memory.save()
            cost['read_memory'] = {'cycle': memory.cycle, 'full_read_every': self.full_read_every,
                                   'page': 'unblocked rows' if unblocked_only else 'full',
                                   'read': len(blocked) + len(candidates), 'deferred': deferred,
                                   'note': '; '.join(t for t in (memory.note, error) if t)}
        cost['rate_limit_waits'] = list(self._http.waits)
        unreadable.extend({'item': '%s#%s' % (i.repo, i.number), 'cause': i.unreadable} for i in items if i.unreadable)
        cost['unreadable'] = unreadable
        for entry in unreadable:
            self._refused.update(p for p in ('Pull requests: read', 'Issues: read') if p in entry['cause'])
        cost['token'] = self.preflight()
        return BoardRead(items=items, cost=cost)

    def _answered_at(self) -> _dt.datetime:
        """GitHub's time of the last answer (its ``Date`` header), else this machine's clock."""
        text = (self._http.last_headers or {}).get('date')
        if text:
            try:
                when = email.utils.parsedate_to_datetime(text)
                if when is not None and when.tzinfo is not None:
                    return when
            except (TypeError, ValueError, IndexError):
                pass
        return self._http.clock()

    def _pages(self, is_org: bool, query: str) -> Tuple[List[Dict[str, Any]], Dict[int, List[Dict[str, Any]]]]:
        """Every item node of the project (filtered by ``query``), and the placed errors by node index.

        Each call reads the next page from the front and the next from the back (``tail``: 1 point
        for both, ``documents.PAGE_SIZE``), until the front has no next page, the back no previous
        one, or the two have met (a node id read from both ends). Nodes come in board order, each once. An error under one item node
        (``...items.nodes[i]``, ``...tail.nodes[i]``) is that item's; any other error (the project,
        its field, the page itself) means the queue was not read: ``BoardUnreadable``.
        """
        owner = 'organization' if is_org else 'user'
        front = []  # type: List[Tuple[Dict[str, Any], List[Dict[str, Any]]]]
        back = []  # type: List[Tuple[Dict[str, Any], List[Dict[str, Any]]]]
        after = before = None
        seen_after, seen_before = set(), set()
        while True:
            data, errors = self._graphql('BoardPage', {'owner': self.owner, 'isOrg': is_org, 'number': self.project,
                                                       'query': query, 'statusField': self.status_field,
                                                       'after': after, 'before': before,
                                                       **self._route_variables()},
                                         reading=True, partial=True)
            mine, rest = errors_by_index(errors, [owner, 'projectV2', 'items', 'nodes'])
            mine_tail, rest = errors_by_index(rest, [owner, 'projectV2', 'tail', 'nodes'])
            if rest:
                raise BoardUnreadable('GitHub GraphQL BoardPage answered with errors: %s'
                                      % '; '.join(one_error(e) for e in rest))
            project = self._project_of(data)
            if after is None and before is None:
                self._remember_viewer(data)
                self._remember_field(project)
                if self.ready not in self._field['options']:
                    raise BoardUnreadable('the status field %r of project %s has no option %r (options: %s): '
                                          'fix the board option "ready"'
                                          % (self.status_field, self.project, self.ready,
                                             ', '.join(sorted(str(k) for k in self._field['options']))))
            head_page, head_info = self._page_nodes(project.get('items'), mine)
            front.extend(head_page)
            tail_page, tail_info = self._page_nodes(project.get('tail'), mine_tail)
            back[:0] = tail_page
            # met: one project item id read from both ends (a node without an id, e.g. one
            # GitHub answered with an error, proves nothing)
            front_ids = set(n.get('id') for n, _e in front if n.get('id'))
            met = any(n.get('id') in front_ids for n, _e in back if n.get('id'))
            if met or head_info.get('hasNextPage') is not True or tail_info.get('hasPreviousPage') is not True:
                break
            after = head_info.get('endCursor')
            if not after or after in seen_after:
                raise BoardUnreadable('GitHub paginated the board without a new cursor (%r): the read is incomplete' % (after,))
            seen_after.add(after)
            before = tail_info.get('startCursor')
            if not before or before in seen_before:
                raise BoardUnreadable('GitHub paginated the board from its end without a new cursor (%r): the read '
                                      'is incomplete' % (before,))
            seen_before.add(before)
        nodes = []  # type: List[Dict[str, Any]]
        by_index = {}  # type: Dict[int, List[Dict[str, Any]]]
        ids = set()
        for node, errs in front + back:
            key = node.get('id')
            if key and key in ids:
                continue  # read from both ends where they met
            ids.add(key)
            if errs:
                by_index[len(nodes)] = errs
            nodes.append(node)
        return nodes, by_index

    @staticmethod
    def _page_nodes(conn, mine) -> Tuple[List[Tuple[Dict[str, Any], List[Dict[str, Any]]]], Dict[str, Any]]:
        """One page's ``(node, its placed errors)`` pairs and its ``pageInfo``, type-checked."""
        if not isinstance(conn, dict) or not isinstance(conn.get('nodes'), list):
            raise BoardUnreadable('GitHub answered the board page without an items list')
        out = []
        for i, node in enumerate(conn['nodes']):
            if i in mine:
                out.append((node if isinstance(node, dict) else {}, mine[i]))
            elif isinstance(node, dict):
                out.append((node, []))
        info = conn.get('pageInfo') if isinstance(conn.get('pageInfo'), dict) else {}
        return out, info

    def _item_of(self, content: Dict[str, Any], node: Optional[Dict[str, Any]]) -> Item:
        repo = (content.get('repository') or {}).get('nameWithOwner', '') if isinstance(content.get('repository'), dict) else ''
        status = ''
        if node is not None:
            value = node.get('fieldValueByName')
            if isinstance(value, dict) and isinstance(value.get('name'), str):
                status = value['name']
            self._project_items[(repo, content.get('number'))] = (node.get('id'), status)
        item = Item(number=int(content.get('number')), title=content.get('title') or '',
                    state=lower_text(content.get('state')), status=status, body=content.get('body') or '',
                    id=content.get('id') or '', repo=repo, url=content.get('url') or '',
                    created_at=parse_time(content.get('createdAt')),
                    updated_at=parse_time(content.get('updatedAt')),
                    marker_authors=self.marker_identities(), trust_members=self.trust_members)
        if node is not None:
            route_into(item, node)
        return item

    def _route_variables(self) -> Dict[str, str]:
        return {'agentField': self.route_fields['agent'], 'modelField': self.route_fields['model'],
                'effortField': self.route_fields['effort'], 'priorityField': self.route_fields['priority'],
                'budgetField': self.route_fields['budget']}

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
        # an item whose blockers cannot be read stays blocked (the page counted open blockers: that is
        # the evidence) and is held with the cause; the others read on
        for batch, data, errors in self._per_item('Blockers', ids, issues, BLOCKER_BATCH, 'blockers'):
            for node in self._batch_nodes(data, errors, batch, issues):
                item = issues[node['id']]
                detail_into(item, node)
                if not item.unreadable and not any(b.state == 'open' for b in item.blockers):
                    promoted.append(item.id)
        return promoted

    def _fetch_details(self, ids: List[str], issues: Dict[str, Item]) -> None:
        commits = []  # type: List[Tuple[Item, str]]
        # a candidate whose details (its markers, its pull requests) cannot be read is held with the
        # cause: without its markers nothing says it is not running or done; the others read on
        for batch, data, errors in self._per_item('Details', ids, issues, DETAIL_BATCH, 'details'):
            for node in self._batch_nodes(data, errors, batch, issues):
                item = issues[node['id']]
                commits.extend((item, c) for c in detail_into(item, node, self.base_branch))
                if not item.unreadable:
                    self._older_comments(item, node, reading=True)
                    self._reopen_permissions(item)
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
                    'GitHub GraphQL CommitPulls answered with errors: %s' % '; '.join(one_error(e) for e in rest))
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
            raise BoardUnreadable('GitHub answered a batch of issues with errors: %s' % '; '.join(one_error(e) for e in rest))
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
                                     % (item.repo, item.number, '; '.join(one_error(e) for e in errors)))
                item.unreadable = 'its older comments: ' + unreadable_cause(errors, item.repo)
                return
            node = data.get('node') if isinstance(data.get('node'), dict) else {}
            conn = node.get('comments') if isinstance(node.get('comments'), dict) else {}
            older.extend(comment_of(n) for n in nodes_of(conn))
            new_info = conn.get('pageInfo') if isinstance(conn.get('pageInfo'), dict) else {}
            if new_info.get('startCursor') == info.get('startCursor'):
                break
            info = new_info
        if older:
            item.comments = sorted(older + item.comments, key=comment_time)

    def _reopen_permissions(self, item: Item) -> None:
        """Fill ``permission`` on the item's reopens by someone who is not the fleet (``PERMISSION``),
        newest first, stopping at the first that counts: an older reopen is outranked by it anyway.
        An account that is not a ``User`` (another app's bot) is never a collaborator: not asked."""
        for event in sorted((e for e in item.events if e.kind == 'reopened'), key=lambda e: e.at, reverse=True):
            if reopen_ignored(item, event) is None:
                return
            if not event.actor or event.actor_type not in ('User', ''):
                continue
            key = (item.repo, event.actor.lower())
            if key not in self._permissions:
                self._permissions[key] = self._permission(item.repo, event.actor)
            event.permission = self._permissions[key]
            if reopen_ignored(item, event) is None:
                return

    def _permission(self, repo: str, login: str) -> str:
        """``RepositoryPermission`` of ``login`` on ``repo``, ``''`` when GitHub does not say (no
        collaborator by that login, no access to the list, or any error: the reopen then does not count)."""
        owner, _sep, name = repo.partition('/')
        try:
            data, _errors = self._graphql('Permission', {'owner': owner, 'name': name, 'login': login},
                                          reading=False, partial=True)
        except BoardError:
            return ''
        repository = data.get('repository') if isinstance(data.get('repository'), dict) else {}
        conn = repository.get('collaborators') if isinstance(repository.get('collaborators'), dict) else {}
        for edge in conn.get('edges') or []:
            if isinstance(edge, dict) and isinstance(edge.get('permission'), str) \
                    and login_of(edge.get('node')).lower() == login.lower():
                return edge['permission']
        return ''

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
                                       'statusField': self.status_field, **self._route_variables()}, reading=False)
        repository = data.get('repository')
        issue = repository.get('issue') if isinstance(repository, dict) else None
        if not isinstance(issue, dict):
            raise ItemNotFound('GitHub has no issue %s#%s visible to this token' % (repo, num))
        item = self._item_of(issue, None)
        for node in nodes_of(issue.get('projectItems')):
            project = node.get('project') if isinstance(node.get('project'), dict) else {}
            if project.get('number') == self.project and (self._project_id is None or project.get('id') == self._project_id):
                value = node.get('fieldValueByName')
                item.status = value.get('name') or '' if isinstance(value, dict) else ''
                try:
                    item.status_set_at = parse_time(value.get('updatedAt')) if isinstance(value, dict) else None
                except (TypeError, ValueError):
                    item.status_set_at = None
                self._project_items[(item.repo, item.number)] = (node.get('id'), item.status)
                route_into(item, node)
                break
        provenance_into(item, issue)
        commits = detail_into(item, issue, self.base_branch)
        self._older_comments(item, issue, reading=False)
        self._reopen_permissions(item)
        self._follow_commits([(item, c) for c in commits], reading=False)
        return item

    def pull_details(self, item: Item) -> None:
        """The review and checks of the open pull request the next run of ``item`` continues
        (``_core.dispatch.pr_loop``): one ``PullDetails`` call (1 point), for that pull request only, when asked --
        the runner's brief, explain -- never on the queue read nor on the runner's other reads (D1). A call that
        fails leaves them ``None`` (not read), which the brief says, rather than failing the caller."""
        pull = continued_pull(item.artifacts, markers_of(item), item.number, item.repo)
        if pull is None or not pull.node_id:
            return
        try:
            data = self._graphql('PullDetails', {'id': pull.node_id}, reading=False)
        except BoardError:
            return
        node = data.get('node')
        if isinstance(node, dict) and node.get('__typename') == 'PullRequest':
            details_into(pull, node)

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
    def _remember_viewer(self, data: Dict[str, Any]) -> None:
        """The preflight's answer from the board page's first call (its ``viewer`` and its headers):
        a read needs no ``Preflight`` call of its own (1 point a poll saved). Without a login there,
        the preflight asks on its own when the login is needed."""
        viewer = data.get('viewer') if isinstance(data.get('viewer'), dict) else {}
        if self._checked is None and isinstance(viewer.get('login'), str) and viewer['login']:
            self._login = viewer['login']
            self._checked = {'headers': dict(self._http.last_headers)}

    def preflight(self) -> Dict[str, Any]:
        """Token kind, identity, what each operation needs, what is missing and the fix (once per
        board instance, 1 point, or none after a board read, whose first page carries it: see
        ``_board/tokens.py``). Fails open: a preflight that could not be read is reported as such
        and the board goes on (D5), except a rate limit."""
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
        result = tokens.preflight(self._token, self._checked.get('headers') or {}, login=self._login,
                                  mentions=self.mention_mode, refused=sorted(self._refused))
        if self._checked.get('error'):
            result['error'] = self._checked['error']
        return result

    def _refusal(self, headers) -> None:
        """Remember what a 403 said it needed (``X-Accepted-GitHub-Permissions``) for the preflight."""
        names = {'issues': 'Issues', 'pull_requests': 'Pull requests', 'organization_projects': 'Projects',
                 'repository_projects': 'Projects'}
        for one in tokens.accepted_permissions(headers)[:1]:
            for perm in one:
                name, _sep, level = perm.partition('=')
                if name in names:
                    self._refused.add('%s: %s' % (names[name], level or 'read'))

    # -- mentions (D19) ---------------------------------------------------------------------
    def mentions(self, number) -> list:
        """Mentions of the fleet on this item that no run has seen yet, oldest first (D19).

        Default (``mentions: comments``): from the item's own comments -- those naming
        ``@<viewer login>`` or a ``mention_handles`` entry, by a trusted author (authorAssociation
        OWNER/COLLABORATOR, MEMBER with ``trust_members``, or a ``marker_authors`` login), newer than the last start
        marker. Works with every token kind; "seen" is derived from the board (``_core.board.mentions``).
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
                                marker_authors=self.marker_authors, own_start_id=own, skipped=skipped,
                                trust_members=self.trust_members)
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
        kind = tokens.kind_of(self._token)['kind']
        if kind not in tokens.SCOPED and kind != 'unknown':
            raise BoardError('mentions: notifications needs a classic or OAuth token (GET /notifications refuses a %s); '
                             'use the default, mentions: comments' % tokens.kind_of(self._token)['name'])
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
            except (RateLimited, HttpFailure) as exc:
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
                raise BoardError('could not read notifications: %s' % error_text(status, data))
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
            raise BoardError('GitHub accepted a report in %s but answered without its number: %s' % (repo, error_text(201, data)))
        return {'number': data['number'], 'repo': repo, 'created': True, 'url': data.get('html_url') or ''}

    # -- writes -----------------------------------------------------------------------------
    def comment(self, number, body, *, author='') -> Comment:
        """Post a comment through REST (``author`` is ignored: GitHub posts as the token's user).

        D14: the body passes through ``_core.board.references.defang`` so generated text never carries a
        live closing keyword.
        """
        repo, num = self._resolve(number)
        data = self._rest('POST', '/repos/%s/issues/%s/comments' % (repo, num), body={'body': defang(body)},
                          expect=dict, what='comment on %s#%s' % (repo, num))
        if not isinstance(data.get('id'), int):
            raise BoardError('GitHub accepted a comment on %s#%s but answered without its id: %s'
                             % (repo, num, error_text(201, data)))
        self._posted.add(str(data['id']))
        return Comment(id=str(data['id']), body=data.get('body') or '', created_at=parse_time(data.get('created_at')),
                       author=login_of(data.get('user')), author_type=type_of(data.get('user')))

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

    def board_time(self):
        """GitHub's clock: the Date header of its last answer to this board, carried forward on this
        machine's clock; ``GET /rate_limit`` (free of every limit) when nothing was asked yet. To the second."""
        if self._http.date_offset is None:
            try:
                self._rest('GET', '/rate_limit', what="read GitHub's clock")
            except BoardError as exc:
                if self._http.date_offset is None:     # an error answer is dated all the same
                    raise BoardUnreadable(str(exc))
        if self._http.date_offset is None:
            raise BoardUnreadable("GitHub's answer had no Date header: its clock is unknown")
        return self._http.clock() + self._http.date_offset

    # -- REST -------------------------------------------------------------------------------
    def _rest(self, method, path, *, body=None, params=None, expect=dict, what=''):
        """One REST call; the answer is type-checked against ``expect`` before use (🔴 D5)."""
        try:
            status, headers, data = self._http.request(method, self._http.api_url + path, body=body, params=params)
        except RateLimited as exc:
            raise BoardError('could not %s: %s' % (what, exc))
        except HttpFailure as exc:
            raise BoardError('could not %s: %s' % (what, exc))
        if status == 403:
            self._refusal(headers)
        if status == 404:
            raise ItemNotFound('could not %s: %s (no such item, or the token cannot see it)' % (what, error_text(status, data)))
        if status == 410:  # Gone: a deleted issue (@octokit/openapi lists 410 for the issue endpoints)
            raise ItemNotFound('could not %s: %s (the item was deleted)' % (what, error_text(status, data)))
        if status >= 300:
            raise BoardError('could not %s: %s' % (what, error_text(status, data)))
        if expect is None:
            return data
        if not isinstance(data, expect) or isinstance(data, NotJson):
            raise BoardError('could not %s: GitHub answered HTTP %s with %s where a JSON %s was expected'
                             % (what, status, error_text(status, data), expect.__name__))
        return data
