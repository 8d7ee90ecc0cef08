# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's board writes (D12): each marker posted exactly once, retried once at once, a close-out then
spooled and retried while the unit lives; close-outs earlier runs could not post are delivered first.
"""

from __future__ import annotations

import datetime as _dt
from typing import Optional

from .._core.board.markers import parse_marker
from .._core.board.model import CLOCK_SKEW_WARN, format_time, skew_text
from .._host import spool

CLOSEOUT_RETRY_DELAYS = (10, 30, 60, 120, 300)
"""Seconds between the spooled close-out's further tries while the unit stays live (after the two
immediate ones): 520 s in all (guess: covers a database restart or a short GitHub outage; the
experiment is the length of board outages seen by the fleet's runners). What outlasts them is
delivered by the master's next run."""


def marker_of(item, run: str, kind: str):
    """The comment holding the marker of ``kind`` from ``run`` on ``item``, or None."""
    for comment in item.comments:
        marker = parse_marker(comment.body, at=comment.created_at, comment_id=comment.id)
        if marker is not None and marker.kind == kind and marker.fields.get('run') == run:
            return comment
    return None


class PostingMixin(object):
    """The ``Run``'s marker writes: ``_post`` (retried once), ``_spool_and_retry``, ``_flush_spool``."""

    def _landed(self, kind: str) -> Optional[bool]:
        """Did a marker of ``kind`` from this run reach the board? None when the board cannot say."""
        try:
            item = self.board.get(self.ref)
        except Exception:  # noqa: BLE001 - an unreadable board cannot say; the caller retries the write
            return None
        comment = marker_of(item, self.run_id, kind)
        if comment is not None and kind == 'start':
            self._note_board_start(comment)
        return comment is not None

    def _deliver(self, ref, run: str, kind: str, body: str, close: bool) -> None:
        """Post a marker exactly once: read the item first and post only when no marker of ``run`` and
        ``kind`` is there (a close asked for and not made is made). Raises what the board raised."""
        item = self.board.get(ref)
        if marker_of(item, run, kind) is None:
            self.board.post_marker(ref, body, close=close)
        elif close and item.state != 'closed':
            self.board.set_state(ref, 'closed')

    def _spool_and_retry(self, kind: str, body: str, close: bool, error: str) -> Optional[str]:
        """D12: the close-out could not be posted. Keep it in the spool, then keep trying while this unit is
        live (the probe sees the item running, so nothing else acts on it); None once it is on the board,
        else the last error, and the spool keeps it for the master's next run (``_flush_spool``)."""
        entry = {'run': self.run_id, 'unit': self.unit, 'item': self.config.number, 'repo': self.config.repo or '',
                 'kind': kind, 'body': body, 'close': bool(close), 'spooled_at': format_time(self.clock())}
        path = None
        try:
            path = spool.write(self.config.state_dir, entry, claimed=True)
            self.log('the close-out is spooled (%s): retried while this unit lives, then delivered by the next '
                     'run of this master' % path)
        except (OSError, ValueError) as exc:
            self.log('ERROR: the close-out could not be spooled either: %s' % exc)
        for delay in CLOSEOUT_RETRY_DELAYS:
            self.sleep(delay)
            self._reopen()
            try:
                self._deliver(self.ref, self.run_id, kind, body, close)
            except Exception as exc:  # noqa: BLE001 - every board failure is retried until the bound, then spooled
                self.last_error = exc
                error = '%s: %s' % (type(exc).__name__, exc)
                self.log('posting the %s marker failed again (after %d s more): %s' % (kind, delay, error))
                continue
            if path is not None:
                spool.delivered(path)
            self.log('the spooled %s marker is posted' % kind)
            return None
        if path is not None:
            try:
                spool.release(path)
            except OSError as exc:
                self.log('ERROR: the spooled close-out %s could not be released for the next run: %s' % (path, exc))
        return error

    def _flush_spool(self) -> None:
        """Deliver the close-outs earlier runs of this master could not post (D12), each exactly once:
        claimed by a rename, posted unless the board already has it, then deleted. Never fatal."""
        entries, problems = spool.pending(self.config.state_dir)
        for text in problems:
            self.log('WARNING: close-out spool: %s' % text)
        for path, entry in entries:
            claimed = spool.claim(path)
            if claimed is None:
                continue    # another deliverer has it
            ref = entry['item']
            if entry.get('repo') and getattr(self.board, 'kind', '') == 'github':
                ref = '%s#%s' % (entry['repo'], entry['item'])
            try:
                self._deliver(ref, entry['run'], entry['kind'], entry['body'], bool(entry['close']))
            except Exception as exc:  # noqa: BLE001 - it stays spooled for the next run
                spool.release(claimed)
                self.log('WARNING: the spooled %s close-out of %s (run %s) is still not posted: %s'
                         % (entry['kind'], entry['unit'], entry['run'], exc))
                continue
            spool.delivered(claimed)
            self.log('delivered the spooled %s close-out of %s (run %s, spooled %s)'
                     % (entry['kind'], entry['unit'], entry['run'], entry['spooled_at']))

    def _note_board_start(self, comment) -> None:
        """Keep the start marker's time as the board recorded it: D16's attribution compares it with
        the forge's merge time, both on the board's clock, so a worker clock that lags or leads
        cannot credit an older merge or miss a newer one."""
        when = getattr(comment, 'created_at', None)
        if isinstance(when, _dt.datetime):
            self.board_started_at = when
            skew = (self.started_at - when).total_seconds()
            if abs(skew) > CLOCK_SKEW_WARN:
                self.log('WARNING: %s (by %+.0f s: the start marker is dated %s by the board, %s here)'
                         % (skew_text('this worker', skew, 'the board'), skew, format_time(when),
                            format_time(self.started_at)))

    def _post(self, kind: str, body: str, close: bool = False) -> Optional[str]:
        """Post ``body`` (then close when asked), retrying once; None when done, else the last error.

        Before the retry the board is read back: when the first attempt's comment landed and only
        the close failed, only the close is retried -- the marker is not doubled.
        """
        error = None
        for attempt in (1, 2):
            try:
                if attempt == 2:
                    self._reopen()
                if attempt == 2 and self._landed(kind):
                    if close:
                        self.board.set_state(self.ref, 'closed')
                    return None
                posted = self.board.post_marker(self.ref, body, close=close)
                if kind == 'start' and isinstance(posted, dict):
                    self._note_board_start(posted.get('comment'))
                return None
            except Exception as exc:  # noqa: BLE001 - every board failure is retried once, then reported
                self.last_error = exc
                error = '%s: %s' % (type(exc).__name__, exc)
                self.log('posting the %s marker failed (attempt %d of 2): %s' % (kind, attempt, error))
        return error
