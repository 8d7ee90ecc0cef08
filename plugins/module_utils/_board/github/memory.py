# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board's read memory: which items a cycle may skip re-reading, and nothing else (D1).

Opt-in (board option ``read_memory``: a file path). Kept per item: its node id and a fingerprint of
what the *page* showed for it when its details (or blocker edges) were last read -- the issue's
``updatedAt`` and its dependency summary counts -- plus a cycle counter. Never a status, a marker,
a verdict or any field of the item: the memory can say "this item's page row has not moved since
it was read", never what the item is.

An item is read again when it has no entry, when its fingerprint differs from this cycle's page
row, or when its turn comes: every item is read in full at least once every ``full_read_every``
cycles (its slice, a stable hash of its id, equals the cycle number modulo that). A skipped item is
*deferred*: returned with its page fields only and never dispatched, reaped or announced until a
cycle reads it (eligibility reason ``deferred``). So a lost, stale or wrong memory can only delay an
item by at most ``full_read_every`` cycles or cost points; it can never stand in for the board.
A missing, unreadable or foreign file is a full read (D5: fail open, here towards reading more).

The page itself (D1: read every cycle) leaves out the rows with an open blocker between two full
pages: a cycle whose number is a multiple of ``full_read_every`` (and one with no memory) reads the
whole Ready column and the blocker edges of every blocked row; the others read the unblocked rows
only (``unblocked_only``), and keep the entries of the rows they did not see. A blocked item cannot
run, and a blocker closing puts its row back on the next page (GitHub's ``is:blocked`` counts open
blockers): the unblocked item is read in full then, without waiting for a full page.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
import zlib
from typing import Any, Dict, Optional

MEMORY_FORMAT = 1
"""The memory file's format version: a file of another version is a full read."""

DEFAULT_FULL_READ_EVERY = 10
"""Cycles between two full reads of one item. At a 30 s cadence, 10 cycles = every item read in full
at least every 5 minutes: the longest an unchanged eligible item waits for dispatch, a retry wait
outlasts its ``not_before`` or the reaper sees an orphan (guess; the webhook is the fast path for a
changed item). Its price, read off ``benchmarks/github_cost.py``: on a 10,000-item board with 500
Ready, the detail pass falls from 20 points a poll to 2.6 (500 / 10 items, plus the 5 commented on
between two polls, at 25 per point). Experiment that settles it: on a production board, the time from
an item becoming eligible to its dispatch and the points a poll, over a week each at 5, 10 and 20;
take the largest whose p95 wait stays under the operators' tolerance."""


def fingerprint(content: Dict[str, Any]) -> str:
    """What the page row of an issue says that a change to it would move: ``updatedAt`` (comments,
    edits, close/reopen) and the dependency summary (a blocker closing does not touch the blocked
    issue's ``updatedAt``, but moves ``blockedBy``). Status and state are the page's own filter."""
    summary = content.get('issueDependenciesSummary') if isinstance(content.get('issueDependenciesSummary'), dict) else {}
    return '%s|%s|%s' % (content.get('updatedAt'), summary.get('blockedBy'), summary.get('totalBlockedBy'))


SETTLE_SECONDS = 60
"""An item updated less than this before GitHub answered the page is not remembered (read again next
cycle): ``updatedAt`` has whole seconds, so a second change within the second of the read would leave
the same page row (derived from the field's resolution); the rest of the minute covers the gap between
the page and the detail pass and GitHub's own write lag (guess; unmeasured. Experiment that settles
it: comment on an item in a loop against github.com and log ``updatedAt`` beside each page answer's
``Date``; the largest lag between a write and its ``updatedAt`` showing is the floor.)"""


def settled(updated_at: Optional[_dt.datetime], answered_at: Optional[_dt.datetime]) -> bool:
    """Whether an item updated at ``updated_at`` may be remembered by a read GitHub answered at
    ``answered_at``: both known, and the update older than ``SETTLE_SECONDS``."""
    if updated_at is None or answered_at is None:
        return False
    return (answered_at - updated_at).total_seconds() >= SETTLE_SECONDS


def slice_of(item_id: str, every: int) -> int:
    """The item's turn among ``every`` cycles: a stable hash (crc32) of its node id."""
    return zlib.crc32(str(item_id).encode('utf-8')) % every


class ReadMemory(object):
    """One cycle's use of the memory file: ``load``, then ``due`` for each item, ``record`` or
    ``keep`` for each, then ``save``. ``board`` names the board; a file of another board is ignored."""

    def __init__(self, path: str, board: str, every: int = DEFAULT_FULL_READ_EVERY):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError('full_read_every must be a positive integer, got %r' % (every,))
        self.path = path
        self.board = board
        self.every = every
        self.cycle = 0
        self.note = ''
        self._seen = {}  # type: Dict[str, str]
        self._next = {}  # type: Dict[str, str]

    def load(self) -> 'ReadMemory':
        """Read the file; anything but this board's memory in this format leaves it empty (a full read)."""
        try:
            with open(self.path, 'r') as handle:
                data = json.load(handle)
        except FileNotFoundError:
            self.note = 'no memory yet: a full read'
            return self
        except (OSError, ValueError) as exc:
            self.note = 'memory unreadable (%s): a full read' % (exc,)
            return self
        if not isinstance(data, dict) or data.get('version') != MEMORY_FORMAT or data.get('board') != self.board \
                or isinstance(data.get('cycle'), bool) or not isinstance(data.get('cycle'), int) \
                or not isinstance(data.get('read'), dict):
            self.note = 'memory of another board or format: a full read'
            return self
        self.cycle = data['cycle'] + 1
        self._seen = dict((str(k), v) for k, v in data['read'].items() if isinstance(v, str))
        return self

    def unblocked_only(self) -> bool:
        """Whether this cycle's page may leave out the rows with an open blocker: a memory was loaded
        and this is not a full page's cycle (every ``every`` cycles)."""
        return bool(self._seen) and self.cycle % self.every != 0

    def due(self, item_id: str, print_: str, *, blocked: bool = False) -> Optional[str]:
        """Why this item must be read this cycle, or None when it may be deferred. A ``blocked`` row
        is on the page only on a full page's cycle, so each of those is its turn."""
        last = self._seen.get(item_id)
        if last is None:
            return 'not read before'
        if last != print_:
            return 'its page row changed'
        if slice_of(item_id, self.every) == self.cycle % self.every:
            return 'its turn (every %d cycles)' % self.every
        if blocked and not self.unblocked_only():
            return 'its turn (a blocked row is on a full page every %d cycles)' % self.every
        return None

    def record(self, item_id: str, print_: str) -> None:
        """This cycle read the item: remember the page row it was read under."""
        self._next[item_id] = print_

    def keep(self, item_id: str) -> None:
        """This cycle deferred the item: keep the page row of its last read."""
        if item_id in self._seen:
            self._next[item_id] = self._seen[item_id]

    def save(self) -> str:
        """Write this cycle's memory atomically (after a full page, only the items recorded or kept
        this cycle, so an item that left the Ready column is forgotten; after a page of unblocked rows,
        the rows it left out too). Returns '' or why it could not be written: the next cycle then
        reads in full (D5: the failure costs points, never a decision)."""
        read = dict(self._seen, **self._next) if self.unblocked_only() else self._next
        data = {'version': MEMORY_FORMAT, 'board': self.board, 'cycle': self.cycle, 'read': read}
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix='.read-memory.', dir=directory)
            try:
                with os.fdopen(fd, 'w') as handle:
                    json.dump(data, handle, separators=(',', ':'), sort_keys=True)
                os.replace(tmp, self.path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            return 'could not write the read memory %s (%s): the next cycle reads in full' % (self.path, exc)
        return ''
