# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""In-memory GitHub data for the fake: owners, repositories, issues, pull requests, comments,
timelines, dependency edges, Projects v2 boards and notifications.

Objects are plain dicts shaped like GitHub's GraphQL types (``__typename`` plus the schema's
field names), so graphql-core's default resolver reads most fields directly; the executor adds
resolvers only for fields with arguments. Builder methods are the test-facing API.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import threading
from typing import Any, Dict, List, Optional

UTC = _dt.timezone.utc


def iso(value: Optional[_dt.datetime]) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


class Store(object):
    """The fake's world. Every mutation goes through ``lock`` (the server is threaded)."""

    def __init__(self, viewer: str = 'fleet-bot', clock=None):
        self.lock = threading.RLock()
        self.viewer = viewer
        self.clock = clock or (lambda: _dt.datetime.now(UTC))
        self.owners = {}  # type: Dict[str, Dict[str, Any]]
        self.repos = {}  # type: Dict[str, Dict[str, Any]]
        self.nodes = {}  # type: Dict[str, Dict[str, Any]]
        self.db_ids = {}  # type: Dict[int, Dict[str, Any]]
        self.notifications = []  # type: List[Dict[str, Any]]
        self.renamed = {}  # type: Dict[str, str]
        self.deleted = set()  # type: set
        self.associations = {}  # type: Dict[str, str]
        """login -> authorAssociation (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE ...); others NONE."""
        self.permissions = {}  # type: Dict[str, str]
        """login -> RepositoryPermission (ADMIN, MAINTAIN, WRITE, TRIAGE, READ) on every repository;
        a login not here is no collaborator (``Repository.collaborators(login:)`` answers no edge)."""
        self._ids = itertools.count(1001)

    # -- ids ----------------------------------------------------------------------------------
    def _register(self, prefix: str, obj: Dict[str, Any]) -> Dict[str, Any]:
        db = next(self._ids)
        obj['id'] = '%s_%d' % (prefix, db)
        obj['databaseId'] = db
        self.nodes[obj['id']] = obj
        self.db_ids[db] = obj
        return obj

    def now(self) -> str:
        return iso(self.clock())

    # -- owners, repositories, projects -------------------------------------------------------
    def add_owner(self, login: str, kind: str = 'Organization') -> Dict[str, Any]:
        with self.lock:
            if login not in self.owners:
                self.owners[login] = self._register('O' if kind == 'Organization' else 'U', {
                    '__typename': kind, 'login': login, 'name': login, 'projects': {}})
            return self.owners[login]

    def add_repo(self, name_with_owner: str) -> Dict[str, Any]:
        with self.lock:
            if name_with_owner in self.repos:
                return self.repos[name_with_owner]
            owner, _sep, name = name_with_owner.partition('/')
            owner_obj = self.owners.get(owner) or self.add_owner(owner)
            repo = self._register('R', {'__typename': 'Repository', 'name': name, 'nameWithOwner': name_with_owner,
                                        'owner': owner_obj, 'issues': {}, 'next_number': 1,
                                        'url': 'https://github.com/%s' % name_with_owner})
            repo['defaultBranchRef'] = self._register('REF', {'__typename': 'Ref', 'name': 'main', 'prefix': 'refs/heads/',
                                                              'repository': repo})
            self.repos[name_with_owner] = repo
            return repo

    def add_project(self, owner: str, number: int, *, kind: str = 'Organization', title: str = 'Fleet',
                    status_field: str = 'Status', options=('Backlog', 'Ready', 'In progress', 'Done')) -> Dict[str, Any]:
        with self.lock:
            owner_obj = self.owners.get(owner) or self.add_owner(owner, kind)
            project = self._register('PVT', {'__typename': 'ProjectV2', 'number': number, 'title': title,
                                             'owner': owner_obj, 'fields': [], 'items': [], 'closed': False})
            field = self._register('PVTSSF', {'__typename': 'ProjectV2SingleSelectField', 'name': status_field,
                                              'dataType': 'SINGLE_SELECT', 'project': project, 'options': []})
            for name in options:
                field['options'].append({'id': 'opt_%s' % next(self._ids), 'name': name, 'nameHTML': name,
                                         'color': 'GRAY', 'description': '', 'descriptionHTML': ''})
            project['fields'].append(field)
            owner_obj['projects'][number] = project
            return project

    def add_field(self, project, name: str, data_type: str = 'SINGLE_SELECT', options=()) -> Dict[str, Any]:
        """Add a project field: ``SINGLE_SELECT`` (with ``options``), ``TEXT`` or ``NUMBER``."""
        with self.lock:
            proj = self.project(*project) if isinstance(project, tuple) else project
            if data_type == 'SINGLE_SELECT':
                field = self._register('PVTSSF', {'__typename': 'ProjectV2SingleSelectField', 'name': name,
                                                  'dataType': data_type, 'project': proj, 'options': []})
                for option in options:
                    field['options'].append({'id': 'opt_%s' % next(self._ids), 'name': option, 'nameHTML': option,
                                             'color': 'GRAY', 'description': '', 'descriptionHTML': ''})
            else:
                field = self._register('PVTF', {'__typename': 'ProjectV2Field', 'name': name, 'dataType': data_type,
                                                'project': proj})
            proj['fields'].append(field)
            return field

    def set_item_field(self, item: Dict[str, Any], name: str, value, at=None) -> None:
        """Set a project field of ``item`` by name: an option name, a text or a number (None clears it)."""
        field = [f for f in item['project']['fields'] if f['name'] == name][0]
        if value is None:
            item['values'].pop(field['id'], None)
        elif field['dataType'] == 'SINGLE_SELECT':
            item['values'][field['id']] = [o for o in field['options'] if o['name'] == value][0]['id']
        else:
            item['values'][field['id']] = value
        item['updatedAt'] = iso(at) or self.now()

    def project(self, owner: str, number: int) -> Dict[str, Any]:
        return self.owners[owner]['projects'][number]

    # -- issues -------------------------------------------------------------------------------
    def _next_number(self, repo: Dict[str, Any]) -> int:
        n = repo['next_number']
        repo['next_number'] += 1
        return n

    def add_issue(self, repo: str, title: str = '', *, body: str = '', state: str = 'open', project=None,
                  status: Optional[str] = None, created_at=None, number: Optional[int] = None,
                  labels=(), author: str = 'human') -> Dict[str, Any]:
        """Add an issue (and put it on ``project`` = ``(owner, number)`` with ``status``)."""
        with self.lock:
            r = self.add_repo(repo)
            n = number if number is not None else self._next_number(r)
            r['next_number'] = max(r['next_number'], n + 1)
            when = iso(created_at) or self.now()
            issue = self._register('I', {
                '__typename': 'Issue', 'number': n, 'title': title or 'issue %d' % n, 'body': body,
                'state': 'CLOSED' if state == 'closed' else 'OPEN', 'createdAt': when, 'updatedAt': when,
                'closedAt': None, 'url': 'https://github.com/%s/issues/%d' % (repo, n), 'repository': r,
                'author': {'__typename': 'User', 'login': author}, 'labels': list(labels),
                'authorAssociation': self.associations.get(author, 'NONE'), 'lastEditedAt': None, 'editor': None,
                'comments': [], 'timeline': [], 'closing_prs': [], 'blocked_by': [], 'project_items': []})
            r['issues'][n] = issue
            if project is not None:
                self.add_to_project(project, issue, status)
            return issue

    def issue(self, repo: str, number: int) -> Dict[str, Any]:
        return self.repos[repo]['issues'][number]

    def add_to_project(self, project, content: Dict[str, Any], status: Optional[str] = None) -> Dict[str, Any]:
        with self.lock:
            proj = self.project(*project) if isinstance(project, tuple) else project
            item = self._register('PVTI', {'__typename': 'ProjectV2Item', 'project': proj, 'content': content,
                                           'type': 'ISSUE' if content.get('__typename') == 'Issue' else 'PULL_REQUEST',
                                           'isArchived': False, 'values': {}, 'createdAt': self.now(),
                                           'updatedAt': self.now()})
            proj['items'].append(item)
            content.setdefault('project_items', []).append(item)
            if status is not None:
                self.set_item_status(item, status)
            return item

    def add_draft(self, project, title: str, status: Optional[str] = None) -> Dict[str, Any]:
        with self.lock:
            proj = self.project(*project) if isinstance(project, tuple) else project
            draft = self._register('DI', {'__typename': 'DraftIssue', 'title': title, 'body': ''})
            item = self._register('PVTI', {'__typename': 'ProjectV2Item', 'project': proj, 'content': draft,
                                           'type': 'DRAFT_ISSUE', 'isArchived': False, 'values': {},
                                           'createdAt': self.now(), 'updatedAt': self.now()})
            proj['items'].append(item)
            if status is not None:
                self.set_item_status(item, status)
            return item

    def edit_issue(self, issue: Dict[str, Any], body: str, *, editor: str, at=None) -> Dict[str, Any]:
        """Edit an issue's body as ``editor``: GitHub then answers ``lastEditedAt`` and ``editor`` on it."""
        with self.lock:
            issue['body'] = body
            issue['lastEditedAt'] = iso(at) or self.now()
            issue['updatedAt'] = issue['lastEditedAt']
            issue['editor'] = {'__typename': 'User', 'login': editor}
            return issue

    def set_item_status(self, item: Dict[str, Any], status: str, field_name: Optional[str] = None, at=None) -> None:
        field = item['project']['fields'][0] if field_name is None else \
            [f for f in item['project']['fields'] if f['name'] == field_name][0]
        option = [o for o in field['options'] if o['name'] == status]
        if not option:
            raise KeyError('no option %r on field %r' % (status, field['name']))
        item['values'][field['id']] = option[0]['id']
        item['updatedAt'] = iso(at) or self.now()   # the field value's updatedAt: when the status was set

    def status_of(self, repo: str, number: int) -> Optional[str]:
        issue = self.issue(repo, number)
        for item in issue['project_items']:
            field = item['project']['fields'][0]
            oid = item['values'].get(field['id'])
            for o in field['options']:
                if o['id'] == oid:
                    return o['name']
        return None

    def add_comment(self, repo: str, number: int, body: str, *, author: Optional[str] = None,
                    created_at=None) -> Dict[str, Any]:
        with self.lock:
            issue = self.issue(repo, number)
            login = author or self.viewer
            # GitHub's GraphQL names an app's comments by the Bot's login WITHOUT the "[bot]" that
            # its ``viewer`` (and REST) carry: the board must compare them as one identity.
            actor = {'__typename': 'Bot', 'login': login[:-len('[bot]')]} if login.endswith('[bot]') else \
                {'__typename': 'User', 'login': login}
            comment = self._register('IC', {'__typename': 'IssueComment', 'body': body,
                                            'createdAt': iso(created_at) or self.now(),
                                            'author': actor,
                                            'authorAssociation': self.associations.get(login, 'NONE'),
                                            'issue': issue})
            comment['url'] = '%s#issuecomment-%d' % (issue['url'], comment['databaseId'])
            issue['comments'].append(comment)
            issue['comments'].sort(key=lambda c: c['createdAt'])
            issue['updatedAt'] = comment['createdAt']
            return comment

    def edit_comment(self, comment: Dict[str, Any], body: str, *, editor: str, at=None) -> Dict[str, Any]:
        """Edit a comment's body as ``editor`` (a maintainer may edit anyone's comment): GitHub then
        answers ``lastEditedAt`` and ``editor`` on it (``Comment`` interface)."""
        with self.lock:
            comment['body'] = body
            comment['lastEditedAt'] = iso(at) or self.now()
            comment['editor'] = {'__typename': 'Bot', 'login': editor[:-len('[bot]')]} if editor.endswith('[bot]') else \
                {'__typename': 'User', 'login': editor}
            return comment

    def add_blocker(self, repo: str, number: int, blocker_repo: str, blocker_number: int) -> None:
        with self.lock:
            issue = self.issue(repo, number)
            blocker = self.issue(blocker_repo, blocker_number)
            if blocker not in issue['blocked_by']:
                issue['blocked_by'].append(blocker)

    def remove_blocker(self, repo: str, number: int, blocker: Dict[str, Any]) -> bool:
        with self.lock:
            issue = self.issue(repo, number)
            if blocker in issue['blocked_by']:
                issue['blocked_by'].remove(blocker)
                return True
            return False

    def set_state(self, issue: Dict[str, Any], state: str, *, actor: Optional[str] = None, closer=None, at=None) -> bool:
        """Close or reopen, recording the timeline event GitHub would (``closer``: PR or Commit)."""
        with self.lock:
            want = 'CLOSED' if state == 'closed' else 'OPEN'
            if issue['state'] == want:
                return False
            when = iso(at) or self.now()
            issue['state'] = want
            issue['updatedAt'] = when
            if want == 'CLOSED':
                issue['closedAt'] = when
                event = {'__typename': 'ClosedEvent', 'createdAt': when, 'closer': closer,
                         'actor': {'__typename': 'User', 'login': actor or self.viewer}, 'closable': issue,
                         'url': issue['url'], 'resourcePath': '/'}
            else:
                issue['closedAt'] = None
                event = {'__typename': 'ReopenedEvent', 'createdAt': when, 'closable': issue,
                         'actor': {'__typename': 'User', 'login': actor or self.viewer}}
            self._register('E', event)
            issue['timeline'].append(event)
            return True

    def commit(self, repo: str, oid: str, *, pulls=()) -> Dict[str, Any]:
        """A commit object (``pulls``: its ``associatedPullRequests``)."""
        with self.lock:
            commit = {'__typename': 'Commit', 'oid': oid, 'abbreviatedOid': oid[:7], 'repository': self.add_repo(repo),
                      'pulls': list(pulls)}
            commit['id'] = 'C_%s' % oid
            self.nodes[commit['id']] = commit
            return commit

    def close_by_commit(self, repo: str, number: int, oid: str = 'deadbeef', at=None, pulls=()) -> Dict[str, Any]:
        """A commit whose message says ``Fixes #number`` reached the default branch: GitHub closes
        the issue with that commit as the closer and links no pull request
        (docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue:
        a keyword in a commit message closes the issue when the commit is merged into the default branch).
        ``pulls``: the pull requests the commit belongs to (``associatedPullRequests``)."""
        commit = self.commit(repo, oid, pulls=pulls)
        self.set_state(self.issue(repo, number), 'closed', closer=commit, at=at)
        return commit

    def add_pr(self, repo: str, title: str = '', *, closes=(), created_at=None, merged_at=None, state: Optional[str] = None,
               close_issues: bool = True, link=True, base: Optional[str] = None) -> Dict[str, Any]:
        """A pull request into ``base`` (default: the repository's default branch).

        ``closes``: issue numbers (this repo) or ``(repo, n)`` it refers to. ``link``: ``True`` -- a
        closing keyword in the body, which GitHub honours only when the PR targets the default
        branch ("If you want to link a pull request to an issue using a keyword, the PR must be on the
        default branch": docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/
        linking-a-pull-request-to-an-issue), so into another branch it links nothing; ``'manual'`` --
        linked by hand in the sidebar, listed whatever the base; ``False`` -- not listed (a closer
        GitHub did not record there). A merged PR closes those issues (``close_issues``) only when it
        merged into the default branch, as GitHub does."""
        with self.lock:
            r = self.add_repo(repo)
            n = self._next_number(r)
            merged = merged_at is not None
            default = r['defaultBranchRef']['name']
            base = base or default
            pr = self._register('PR', {
                '__typename': 'PullRequest', 'number': n, 'title': title or 'pr %d' % n,
                'url': 'https://github.com/%s/pull/%d' % (repo, n), 'repository': r,
                'createdAt': iso(created_at) or self.now(), 'merged': merged, 'mergedAt': iso(merged_at),
                'state': state or ('MERGED' if merged else 'OPEN'), 'baseRefName': base, 'headRefName': 'topic-%d' % n,
                'headRefOid': '%040x' % n, 'isCrossRepository': False,
                'review_threads': [], 'reviews': [], 'checks': []})
            for ref in closes:
                issue = self.issue(*(ref if isinstance(ref, tuple) else (repo, ref)))
                if link == 'manual' or (link and base == default):
                    issue['closing_prs'].append(pr)
                if merged and close_issues and base == default:
                    self.set_state(issue, 'closed', closer=pr, at=merged_at)
            return pr

    # -- notifications ------------------------------------------------------------------------
    def mention(self, repo: str, number: int, body: str, *, author: str = 'human', reason: str = 'mention',
                created_at=None) -> Dict[str, Any]:
        """A comment mentioning the viewer, and its notification thread: ONE thread per issue
        (docs.github.com/en/rest/activity/notifications: a thread is per subject), marked unread again
        by new activity, whose ``reason`` is sticky (the first reason stays) and whose
        ``latest_comment_url`` is the newest comment -- not necessarily the mention."""
        with self.lock:
            comment = self.add_comment(repo, number, body, author=author, created_at=created_at)
            for thread in self.notifications:
                if (thread['repo'], thread['number']) == (repo, number):
                    thread.update(unread=True, updated_at=comment['createdAt'], comment=comment)
                    return thread
            thread = {'id': str(next(self._ids)), 'unread': True, 'reason': reason, 'updated_at': comment['createdAt'],
                      'repo': repo, 'number': number, 'comment': comment,
                      'title': self.issue(repo, number)['title']}
            self.notifications.append(thread)
            return thread

    def delete_issue(self, repo: str, number: int) -> None:
        """Delete an issue: REST answers 410 Gone, GraphQL no longer resolves it."""
        with self.lock:
            issue = self.repos[repo]['issues'].pop(number)
            self.nodes.pop(issue['id'], None)
            self.deleted.add((repo, number))

    def rename_repo(self, old: str, new: str) -> None:
        """Rename (or transfer) a repository: the old REST URLs answer 301 to the new ones."""
        with self.lock:
            repo = self.repos.pop(old)
            owner, _sep, name = new.partition('/')
            repo.update(name=name, nameWithOwner=new, url='https://github.com/%s' % new,
                        owner=self.owners.get(owner) or self.add_owner(owner))
            self.repos[new] = repo
            self.renamed[old] = new
            for issue in repo['issues'].values():
                issue['url'] = 'https://github.com/%s/issues/%d' % (new, issue['number'])
