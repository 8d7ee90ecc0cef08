# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The board protocol: what every queue adapter (ledger, GitHub) offers the rest of the collection.

The board *is* the queue: nothing here caches it. Each adapter returns the shared model
(``_core.board.model.Item`` and friends) and leaves every decision (markers, eligibility) to the decision
core: a board returns data, it never judges it.

The rules in full, with their reasons: ``docs/internals.md``, section ``_board/protocol.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .._core.board.model import Comment, Item


class BoardError(Exception):
    """A board read or write failed; the message says what failed and how to fix it."""


class BoardUnreadable(BoardError):
    """The queue cannot be read at all (D5, D20): distinct from a queue that is empty.

    Fatal only for an applying dispatcher; a dry run reports it.
    """


class ItemNotFound(BoardError):
    """The board has no item with this number (a write or ``get`` named one that does not exist)."""


@dataclass
class BoardRead:
    """The result of one board read.

    ``items`` is every item the read returned, fully populated (comments, events, blockers with
    the blocker's state, artifacts). ``cost`` is what the read cost where the board meters it
    (GitHub: ``{'cost': n, 'remaining': n, 'reset_at': iso}``); ``None`` for the ledger.
    """

    items: List[Item] = field(default_factory=list)
    cost: Optional[Dict[str, Any]] = None


class Board(object):
    """The protocol every board implements (see docs/architecture.md).

    Subclasses implement ``read``, ``get``, ``comment``, ``set_state``, ``set_status`` and
    ``close``. ``post_marker`` is implemented here once, in terms of ``comment`` and
    ``set_state``, so the D12 ordering (comment first, then close) lives in one place for
    every board; an adapter overriding it must keep that order.

    A board is also a context manager: ``with open_board(spec) as board: ...`` closes it.
    """

    kind = ''
    location = ''
    """Where the board lives, safe to print (never a password or token)."""

    # -- reads ------------------------------------------------------------------------------
    def read(self, *, now=None) -> BoardRead:
        """Read the whole queue once. Raises ``BoardUnreadable`` when it cannot be read."""
        raise NotImplementedError

    def get(self, number) -> Item:
        """One item with comments, events, blockers and artifacts. ``ItemNotFound`` if absent."""
        raise NotImplementedError

    def board_time(self):
        """The board's clock now, as an aware UTC datetime: the clock its comment and merge times are on
        (D16). A worker's or a controller's clock is measured against it, never the other way round.
        ``BoardUnreadable`` when the board does not answer."""
        raise NotImplementedError

    def pull_details(self, item: Item) -> None:
        """Read into ``item``'s artifact the review and checks of the open pull request its next run continues
        (``_core.dispatch.pr_loop``), where ``get`` left them out. Asked for per candidate (the runner's brief,
        explain), never on every read (D1). A board whose reads already hold them (the ledger) does nothing."""
        return None

    def mentions(self, number) -> list:
        """Unread mentions on the item. Boards without mentions return ``[]``."""
        return []

    def skipped_mentions(self, number) -> list:
        """The mentions the last ``mentions(number)`` left out because their author may not steer a run
        (``{'id', 'author', ...}`` each); the runner lists them in its close-out. Default ``[]``."""
        return []

    def mark_read(self, ids) -> None:
        """Mark mentions read, *after* they were injected into the brief (at-least-once)."""
        return None

    def reports(self) -> list:
        """The announcer's report items, live (D14: never a search index): ``{number, title, state,
        silenced, created_at, updated_at, url}``. Reports are not work: ``read`` never returns them."""
        raise NotImplementedError

    # -- writes -----------------------------------------------------------------------------
    def create_report(self, title, body) -> Dict[str, Any]:
        """File one report item unless an open one has this title; ``{number, created}`` (D14)."""
        raise NotImplementedError

    def comment(self, number, body, *, author='') -> Comment:
        """Post one comment (human text or a marker); returns it with its id and time."""
        raise NotImplementedError

    def set_state(self, number, state) -> bool:
        """Set ``open`` or ``closed``; returns whether it changed. Closing a closed item is a no-op."""
        raise NotImplementedError

    def set_status(self, number, status) -> bool:
        """Set the board's status field (``Ready``, ``Backlog``...); returns whether it changed."""
        raise NotImplementedError

    def post_marker(self, number, body, *, close=False) -> Dict[str, Any]:
        """Post a marker comment, then (if ``close``) close the item -- in that order (D12).

        🔴 D12: closing an already-closed item *with a comment* once returned success and
        dropped the comment. So the comment is a write of its own, made first; the close is
        attempted after it and finding the item already closed is not an error.

        Returns ``{'comment': Comment, 'closed': bool, 'state': 'open'|'closed'|None}``:
        ``closed`` is true when this call changed the item to closed; ``state`` is the state
        after the call when known (``None`` when no close was asked for).
        """
        posted = self.comment(number, body)
        result = {'comment': posted, 'closed': False, 'state': None}
        if close:
            result['closed'] = bool(self.set_state(number, 'closed'))
            result['state'] = 'closed'
        return result

    def close(self) -> None:
        """Release connections. Idempotent."""
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False
