# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared data model: what every board adapter returns and every decision reads.

Pure data, no I/O. Boards (the ledger over SQL, GitHub over GraphQL) build these objects;
the decision core (markers, eligibility, retry, attribution) only reads them. Keeping one
model is what lets the sweeper, the hand dispatch and the runner agree (one
implementation, two callers).

All times are timezone-aware UTC ``datetime`` objects. Text times cross module boundaries
as ISO-8601 with a ``Z`` suffix (``format_time``/``parse_time``).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

UTC = _dt.timezone.utc
CLOCK_SKEW_WARN = 60
"""Seconds between a worker's clock and the board's (the runner) or the controller's (the probe) above
which the difference is warned about (guess: NTP keeps hosts within a second and a probe call takes one
or two; the experiment is the spread of ``clock_skew_s`` over a week of probes on synced workers). Runs
are dated by the board whatever the difference (D16); this only names the worker to fix."""


def skew_text(who: str, skew: float, against: str) -> str:
    """The warning for a clock ``skew`` seconds ahead (negative: behind) of ``against``."""
    return ('%s\'s clock is %d s %s %s\'s: runs are dated by the board, but fix its time sync (timedatectl, chrony)'
            % (who, abs(round(skew)), 'ahead of' if skew > 0 else 'behind', against))


def parse_time(value: Any) -> Optional[_dt.datetime]:
    """Parse an ISO-8601 string (``Z`` or offset) or a datetime into an aware UTC datetime.

    ``None`` and ``''`` give ``None``. A naive datetime is taken to be UTC.
    Raises ``ValueError`` for anything else that does not parse.
    """
    if value is None or value == '':
        return None
    if isinstance(value, _dt.datetime):
        dt = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith('Z') or text.endswith('z'):
            text = text[:-1] + '+00:00'
        dt = _dt.datetime.fromisoformat(text)
    else:
        raise ValueError('not a time: %r' % (value,))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def format_time(value: Optional[_dt.datetime]) -> Optional[str]:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (sorts as text); None stays None."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


@dataclass
class Comment:
    """One comment on an item: a marker (when it starts with a marker glyph) or human text."""

    id: str
    body: str
    created_at: _dt.datetime
    author: str = ''
    association: str = ''
    """The author's standing in the repository where the board knows it (GitHub's
    ``authorAssociation``: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...); ``''`` otherwise."""
    author_type: str = ''
    """What kind of account the author is where the board knows it (GitHub's ``Actor`` typename:
    ``User``, ``Bot``, ...): a ``User`` named like the fleet's app is not the app; ``''`` otherwise."""
    edited_at: Optional[_dt.datetime] = None
    """When the body was last edited (GitHub's ``lastEditedAt``), None when never or not known."""
    editor: str = ''
    editor_type: str = ''
    """Who last edited the body, and the account type (GitHub's ``editor``): a marker edited by
    anyone but the fleet's identities is no longer a marker."""


@dataclass
class Event:
    """A state change of an item: ``kind`` is ``closed`` or ``reopened``."""

    kind: str
    at: _dt.datetime
    actor: str = ''
    actor_type: str = ''
    """What kind of account the actor is where the board knows it (GitHub's ``Actor`` typename:
    ``User``, ``Bot``, ...); ``''`` otherwise."""
    permission: str = ''
    """The actor's permission on the item's repository where the board read it (GitHub's
    ``RepositoryPermission``: ADMIN, MAINTAIN, WRITE, TRIAGE, READ; the ledger: WRITE, since only a
    holder of its DSN writes an event); ``''`` when not known. A reopen counts only from the fleet's
    identities or an actor with write access (``_core.dispatch.eligibility.reopen_ignored``)."""


@dataclass
class Blocker:
    """A dependency edge: ``number`` blocks the item while ``state`` is ``open``."""

    number: int
    state: str
    repo: str = ''


@dataclass
class ReviewNote:
    """A reviewer's word on a pull request: a comment of an unresolved review thread (``kind``
    ``thread``) or a submitted review (``kind`` ``review``, ``state`` GitHub's ``PullRequestReviewState``:
    ``CHANGES_REQUESTED``, ``APPROVED``, ``COMMENTED``, ``DISMISSED``). Author fields as ``Comment``'s."""

    kind: str
    body: str
    author: str = ''
    author_type: str = ''
    association: str = ''
    state: str = ''
    path: str = ''
    line: Optional[int] = None
    resolved: bool = False
    outdated: bool = False
    created_at: Optional[_dt.datetime] = None


@dataclass
class CheckResult:
    """One check on a pull request's head: ``conclusion`` upper case (GitHub's ``CheckConclusionState``,
    or a commit status's ``StatusState``), ``''`` while it runs; ``required`` whether the base branch's
    protection requires it; ``head_sha`` the commit it ran on (``''``: not known)."""

    name: str
    conclusion: str = ''
    required: bool = False
    summary: str = ''
    url: str = ''
    head_sha: str = ''


@dataclass
class Artifact:
    """A change that may prove work done: a pull request, or a ledger change.

    ``closes`` lists the item numbers whose closing reference it carries (D16 adjacency
    already applied by whoever built it). ``created_at`` is when the artifact first existed,
    ``merged_at`` when it merged (``None`` while not merged).

    ``base`` is the branch a pull request merges into, and ``into_closing_branch`` whether that
    is the branch the forge closes issues from (GitHub: the repository's default branch, unless
    the board names another): ``False`` means a merge that the forge itself would not count as
    closing the item, which is never credited; ``None`` means unknown or not applicable (ledger).
    """

    ref: str
    created_at: _dt.datetime
    merged: bool = False
    merged_at: Optional[_dt.datetime] = None
    closes: List[int] = field(default_factory=list)
    url: str = ''
    title: str = ''
    base: str = ''
    into_closing_branch: Optional[bool] = None
    state: str = ''
    """``OPEN``, ``CLOSED`` or ``MERGED`` (GitHub's ``PullRequestState``; the ledger's recorded one); ``''``: not known."""
    head_ref: str = ''
    head_sha: str = ''
    cross_repo: Optional[bool] = None
    """The branch the pull request merges from, its tip, and whether it lives in another repository (a
    fork, which a run cannot push to): ``''``/``None`` when not known."""
    node_id: str = ''
    """The forge's id of the pull request (GitHub's node ``id``), ``''`` when none: how its details are read."""
    reviews: Optional[List[ReviewNote]] = None
    checks: Optional[List[CheckResult]] = None
    """Its review notes and check results, read per candidate (D1); ``None``: not read."""


@dataclass
class Item:
    """One unit of work on the board.

    ``state`` is ``open`` or ``closed``; ``status`` is the board's status field value
    (``Ready``, ``Backlog``, ...). ``comments`` and ``events`` are in time order.
    """

    number: int
    title: str
    state: str
    status: str = ''
    body: str = ''
    id: str = ''
    repo: str = ''
    url: str = ''
    comments: List[Comment] = field(default_factory=list)
    events: List[Event] = field(default_factory=list)
    blockers: List[Blocker] = field(default_factory=list)
    artifacts: List[Artifact] = field(default_factory=list)
    created_at: Optional[_dt.datetime] = None
    updated_at: Optional[_dt.datetime] = None
    marker_authors: Optional[List[str]] = None
    """The fleet's identities on this board (set by the board that read the item): only their
    glyph-led comments are markers (``_core.board.markers.markers_of``). ``None``: an item built by hand,
    nothing enforced -- every board adapter sets it."""
    trust_members: bool = False
    """Whether ``MEMBER`` (membership of the owning organization) is trusted standing on this board, as the
    operator set it (``board.trust_members``; ``_core.board.mentions.trusted_associations``)."""
    sessions: Optional[List[Dict[str, Any]]] = None
    """The ledger's session rows of this item (``_store/sessions.py`` columns), set by a board
    that shares its store with the sessions; ``None``: not known (a ``handoff`` marker then holds the
    item until a later marker or a reopen, ``_core/dispatch/eligibility.py``)."""
    author: str = ''
    author_type: str = ''
    author_association: str = ''
    """Who opened the item and their standing, where the board knows it (GitHub: the issue's ``author``
    and ``authorAssociation``, read by ``get``); ``''`` otherwise."""
    edited_at: Optional[_dt.datetime] = None
    editor: str = ''
    editor_type: str = ''
    """When the title or text was last edited and by whom (GitHub's ``lastEditedAt`` and ``editor``)."""
    status_set_at: Optional[_dt.datetime] = None
    """When the status field was last set (GitHub: the field value's ``updatedAt``): the review that
    made the item ready. An edit after it was not reviewed (``_core.board.mentions.provenance``)."""
    unreadable: str = ''
    """Why part of this item could not be read (the board's own words), ``''`` when it was read whole:
    such an item is shown, never dispatched (eligibility reason ``unreadable``)."""
    deferred: str = ''
    """Why this read did not read the item's details, ``''`` when it did: a GitHub board with a read
    memory skips items whose page row has not moved since their last read, for at most a bounded
    number of cycles (``_board/github/memory.py``). Such an item carries its page fields only and is
    shown, never dispatched (eligibility reason ``deferred``)."""
    agent: str = ''
    model: str = ''
    effort: str = ''
    """The item's route, as the board's route fields give it (``''``: not asked): the agent profile it
    must run with, and the model and effort its agent is given (``_core.dispatch.route``)."""
    priority: Any = None
    """The board's priority field value as read (``P1``, ``high``, a number); ``None``: none. Candidates
    go by its rank, then age (``_core.dispatch.route.priority_rank``)."""
    budget: Any = None
    """The board's budget field value as read (``50k tokens``, ``$2``, a number of tokens, ``none``); ``None``:
    none. Each limit it names replaces the dispatcher's item budget for this item (``_core.dispatch.item_budget``)."""


def to_jsonable(obj: Any) -> Any:
    """Turn model objects (dataclasses, datetimes, lists, dicts) into JSON-ready data."""
    if hasattr(obj, '__dataclass_fields__'):
        return to_jsonable(asdict(obj))
    if isinstance(obj, _dt.datetime):
        return format_time(obj)
    if isinstance(obj, dict):
        return dict((str(k), to_jsonable(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


JsonDict = Dict[str, Any]
