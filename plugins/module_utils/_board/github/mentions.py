# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board's mentions of the fleet (D19): from the item's comments, or unread notification threads.

"Seen" is derived from the board (``_core.board.mentions``): a mention newer than the last start marker,
by a trusted author. Nothing is marked read until the run that injected it asks (``mark_read``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, List

from . import tokens
from .reads import GitHubReads
from .transport import HttpFailure, RateLimited, error_text
from ..protocol import BoardError
from ..._core.board.markers import markers_of
from ..._core.board.mentions import handles_of, unseen_mentions
from ..._core.board.model import Item, format_time


class GitHubMentions(GitHubReads):
    """``mentions``, ``skipped_mentions`` and ``mark_read``."""

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
