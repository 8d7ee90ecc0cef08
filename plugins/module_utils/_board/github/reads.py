# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board's reads: the queue read (D1) and one item in full.

One paginated GraphQL query a cycle with the status filter on the server, cheap fields on the page,
expensive ones (blockers, details, older comments, the pull requests of closing commits) per candidate
in batches. A read is whole or it is not a read (D5, D20): an error pinned on one item holds that item.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
from typing import Any, Dict, List, Optional, Tuple

from .client import GitHubClient
from .memory import ReadMemory, fingerprint, settled
from .documents import BLOCKER_BATCH, DETAIL_BATCH, project_query
from .nodes import (comment_of, comment_time, commit_artifacts_into, detail_into, login_of, lower_text, nodes_of,
                    provenance_into, route_into, split_ref, summary_open_blockers)
from .pulls import details_into
from .transport import cost_of, errors_by_index, one_error, unreadable_cause
from ..protocol import BoardError, BoardRead, BoardUnreadable, ItemNotFound
from ..._core.board.markers import markers_of
from ..._core.board.model import Comment, Item, parse_time
from ..._core.dispatch.eligibility import reopen_ignored
from ..._core.dispatch.pr_loop import continued_pull


class GitHubReads(GitHubClient):
    """``read``, ``get``, ``pull_details`` and the item references they resolve."""

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
