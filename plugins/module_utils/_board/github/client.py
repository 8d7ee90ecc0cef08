# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board's calls: one GraphQL document or one REST call, type-checked, and the token preflight.

Every answer is checked before use, and an HTTP 200 with an ``errors`` list is an error (D5, D20).
``GitHubClient`` holds only the calls; ``board.GitHubBoard`` sets up its state.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import tokens
from .documents import DOCUMENTS
from .transport import HttpFailure, NotJson, RateLimited, Transport, error_text, is_placed, one_error
from ..protocol import BoardError, BoardUnreadable, ItemNotFound
from ..._core.board.model import Item


class _AnswerError(BoardUnreadable):
    """GitHub answered one read with an error (a status, a body or an errors list), as opposed to a
    transport failure or a refused token: a batch read narrows it down to the items it concerns."""


class GitHubClient(object):
    """The calls of a GitHub board to its API; the state they use is set up by ``GitHubBoard``."""

    owner = ''
    project = 0
    owner_type = 'auto'
    status_field = 'Status'
    mention_mode = 'comments'
    _http = None  # type: Optional[Transport]
    _rate_limits = []  # type: List[Dict[str, Any]]
    _is_org = None  # type: Optional[bool]
    _field = None  # type: Optional[Dict[str, Any]]
    _project_id = None  # type: Optional[str]
    _token = ''
    _checked = None  # type: Optional[Dict[str, Any]]
    _login = ''
    _refused = frozenset()  # type: Any

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

    def _identity(self) -> str:
        if not self._login:
            self.preflight()
        return self._login

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
