# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board's writes: a comment, an issue's state, its project status field.

A comment's body passes through ``defang`` so generated text never carries a live closing keyword (D14);
closing an issue that is closed already is a no-op (D12).
"""

from __future__ import annotations

from .reads import GitHubReads
from .nodes import login_of, type_of
from .transport import error_text
from ..protocol import BoardError, BoardUnreadable
from ..._core.board.model import Comment, parse_time
from ..._core.board.references import defang


class GitHubWrites(GitHubReads):
    """``comment``, ``set_state`` and ``set_status``."""

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
