# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pull-request loop: does the next run continue the item's open pull request, and is its round cap spent.

Pure, no I/O. D2: an open pull request is not finished, so the next run continues it -- its workspace
detached at the pull request's head (D10), its brief carrying the review and the failing checks -- instead of
starting over on a fresh branch. A round is a run on that pull request that moved its head; a run that
pushed nothing is an attempt as any other (``_core.dispatch.eligibility.count_attempts``), not a round.
Everything is derived from the board: the pull request from the item's artifacts, the rounds from the
close-out markers' fields (``round_fields``) -- no counter is stored (D1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

from ..board.model import parse_time
from ..board.pull_feedback import feedback, trusted, wanted
from ..board.references import closes_item

DEFAULT_MAX_ROUNDS = 4
"""Rounds per pull request before the item is held (``rounds_spent``): the peers' trackers show review loops
that converge do so in two or three pushes and the ones that run on go to 10-12 against a cap of 5; 4 stops
those a round earlier (guess; the experiment is the distribution of rounds-to-merge from the close-out markers)."""

ROUNDS_ENV = 'FLEET_MAX_ROUNDS'
"""The run's environment: the round cap the dispatcher held the item to, so the brief names the same one."""

ROUND_FIELDS = ('pr', 'head_before', 'head_after', 'head_moved')
"""The close-out marker fields of a run that continued a pull request (``round_fields``)."""


def round_cap(value: Any) -> Optional[int]:
    """The round cap as an option states it (``dispatch_max_rounds``, ``board_info``'s ``max_rounds``): a positive
    number of rounds, 0 for no cap (None); anything else is refused."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError('the round cap must be a whole number of rounds, 0 for none, not %r' % (value,))
    return value or None


def rounds_env(view: Any) -> dict:
    """The environment a run that continues a pull request gets (``ROUNDS_ENV``: the cap, 0 for none), from its
    ``board_info`` row's ``pull``; nothing for a fresh start."""
    if not isinstance(view, dict):
        return {}
    return {ROUNDS_ENV: str(view.get('max_rounds') or 0)}


def rounds_from_env(environ: Any) -> Optional[int]:
    """The round cap a run was launched with (``rounds_env``); ``DEFAULT_MAX_ROUNDS`` when none or unreadable."""
    text = str((environ or {}).get(ROUNDS_ENV, '') or '').strip()
    try:
        return round_cap(int(text)) if text else DEFAULT_MAX_ROUNDS
    except ValueError:
        return DEFAULT_MAX_ROUNDS


@dataclass
class PullLoop:
    """The loop's answer for one item: the pull request the next run continues (None: start fresh)."""

    pull: Any = None
    rounds: int = 0
    max_rounds: Optional[int] = DEFAULT_MAX_ROUNDS
    why: str = ''
    marker_authors: Any = ()
    trust_members: bool = False

    @property
    def spent(self) -> bool:
        return self.pull is not None and self.max_rounds is not None and self.rounds >= self.max_rounds

    def view(self) -> Optional[dict]:
        """JSON-ready summary for board_info, explain and status; None without a pull request. ``read``: whether
        its review and checks were read (GitHub reads them in ``get`` only, D1; the ledger on every read); then
        the unresolved threads, changes-requested reviews and failing required checks that a brief would carry,
        one line of text each, and the authors left out as untrusted."""
        if self.pull is None:
            return None
        out = {'ref': _get(self.pull, 'ref', ''), 'url': _get(self.pull, 'url', ''),
               'head_ref': _get(self.pull, 'head_ref', ''), 'head_sha': _get(self.pull, 'head_sha', ''),
               'rounds': self.rounds, 'max_rounds': self.max_rounds, 'spent': self.spent,
               'read': _get(self.pull, 'reviews', None) is not None or _get(self.pull, 'checks', None) is not None,
               'threads': [], 'changes_requested': [], 'failing_checks': [], 'skipped': []}
        if out['read']:
            found = feedback(self.pull, self.marker_authors, self.trust_members)
            out['threads'] = [{'author': _get(n, 'author', ''), 'path': _get(n, 'path', ''), 'line': _get(n, 'line', None),
                               'text': _line(_get(n, 'body', ''))} for n in found['threads']]
            out['changes_requested'] = [{'author': _get(n, 'author', ''), 'text': _line(_get(n, 'body', ''))}
                                        for n in found['reviews']]
            out['failing_checks'] = [{'name': _get(c, 'name', ''), 'conclusion': _get(c, 'conclusion', ''),
                                      'summary': _line(_get(c, 'summary', ''))} for c in found['checks']]
            out['skipped'] = sorted(set(str(_get(n, 'author', '') or '?') for n in found['skipped']))
        return out


def _line(text: Any, width: int = 120) -> str:
    lines = str(text or '').strip().splitlines()
    first = lines[0] if lines else ''
    return first if len(first) <= width and len(lines) <= 1 else first[:width].rstrip() + ' ...'


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _time(value: Any):
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        return None


def _is_open(artifact: Any) -> bool:
    state = str(_get(artifact, 'state', '') or '').upper()
    return not _get(artifact, 'merged', False) and state in ('', 'OPEN')


def continued_pull(artifacts: Any, markers: List[Any], number: int, repo: str = '') -> Any:
    """The open, unmerged pull request the next run continues, or None (start fresh).

    It must: close this item (the forge's closing rules, applied by the board that built the artifact);
    target the branch the forge closes items from (``into_closing_branch`` not False); name its head branch,
    from this repository (a fork's branch is not the fleet's to push); and have been created after the
    item's first start marker -- a run of the fleet left it, so a stranger's pull request is never adopted.
    The newest such one wins.
    """
    starts = [m.at for m in markers or () if m.kind == 'start' and m.at is not None]
    if not starts:
        return None
    first = min(starts)
    found = []
    for artifact in artifacts or ():
        if not _is_open(artifact) or _get(artifact, 'into_closing_branch', None) is False:
            continue
        if not _get(artifact, 'head_ref', '') or _get(artifact, 'cross_repo', None) is True:
            continue
        if not any(closes_item(entry, number, repo) for entry in (_get(artifact, 'closes') or ())):
            continue
        created = _time(_get(artifact, 'created_at'))
        if created is None or created <= first:
            continue
        found.append((created, str(_get(artifact, 'ref', '')), artifact))
    return max(found, key=lambda row: (row[0], row[1]))[2] if found else None


def is_round(ending: Any, ref: str = '') -> bool:
    """Whether a run's ending marker records a round (on ``ref`` when given): it continued a pull request
    and moved its head (``head_moved`` true). Unknown (null) is not a round: the attempt count bounds it."""
    fields = _get(ending, 'fields', None) or {}
    if not fields.get('pr') or fields.get('head_moved') is not True:
        return False
    return not ref or str(fields.get('pr')) == str(ref)


def count_rounds(markers: List[Any], ref: str) -> int:
    """Runs whose close-out says they continued ``ref`` and moved its head (``is_round``)."""
    markers = list(markers or ())
    rounds = 0
    for index, marker in enumerate(markers):
        if marker.kind != 'start' or index + 1 >= len(markers):
            continue
        ending = markers[index + 1]
        if ending.kind != 'start' and is_round(ending, ref):
            rounds += 1
    return rounds


def plan(item: Any, markers: List[Any], *, counted: Optional[List[Any]] = None, repo: str = '',
         max_rounds: Optional[int] = DEFAULT_MAX_ROUNDS) -> PullLoop:
    """The loop's answer for ``item``: ``markers`` are all its markers (which run left the pull request),
    ``counted`` those since its last counted reopen (the rounds, as the attempt count's; default ``markers``),
    ``max_rounds`` None for no cap. The rounds are counted on the continued pull request only: a
    pull request closed unmerged releases the item, whose next run starts fresh."""
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1):
        raise ValueError('max_rounds must be a positive integer or None, not %r' % (max_rounds,))
    all_markers = list(markers or ())
    pull = continued_pull(_get(item, 'artifacts') or (), all_markers, int(_get(item, 'number', 0) or 0),
                          repo or str(_get(item, 'repo', '') or ''))
    if pull is None:
        return PullLoop(None, 0, max_rounds, 'no open pull request of a run closes this item: start fresh')
    ref = str(_get(pull, 'ref', ''))
    rounds = count_rounds(all_markers if counted is None else counted, ref)
    loop = PullLoop(pull, rounds, max_rounds, '', list(_get(item, 'marker_authors', None) or ()),
                    _get(item, 'trust_members', False) is True)
    if loop.spent:
        loop.why = ('%s has had %d round(s) that moved its head, the cap is %d: a human decides (review and merge, '
                    'close it to start over, or reopen the item)' % (ref, rounds, max_rounds))
    else:
        loop.why = 'continue %s (branch %s), round %d of %s' % (
            ref, _get(pull, 'head_ref', ''), rounds + 1, max_rounds if max_rounds is not None else 'no cap')
    return loop


def _last_run(markers: List[Any]):
    """(start, ending) of the last finished run, or (None, None) while the last marker is a start or there is none."""
    markers = list(markers or ())
    for index in range(len(markers) - 2, -1, -1):
        if markers[index].kind == 'start':
            ending = markers[index + 1]
            return (None, None) if ending.kind == 'start' else (markers[index], ending)
    return None, None


def awaiting(loop: PullLoop, markers: List[Any]) -> str:
    """Why the next round waits (the ``awaiting_review`` hold), or ``''``.

    The last run left the pull request's head as it is now -- it moved it (a round whose ``head_after`` is the
    head) or opened the pull request -- and nothing has answered it since: no trusted review note that asks for
    work (``pull_feedback.wanted``) newer than that run's close-out, and no failing required check on the head.
    A next round then would only read the review the last one already had, so it waits for a reviewer or the
    checks; a new review, a failing check or a push by someone else releases it, and a merge ends the item (D2).
    Review and checks not read (``None``: GitHub reads them per candidate) do not hold (D5: fail open); nor does
    a run that pushed nothing (the attempt count bounds those).
    """
    pull = loop.pull
    if pull is None or (_get(pull, 'reviews', None) is None and _get(pull, 'checks', None) is None):
        return ''
    start, ending = _last_run(markers)
    if ending is None or ending.at is None or start.at is None:
        return ''
    ref, head = str(_get(pull, 'ref', '')), str(_get(pull, 'head_sha', '') or '')
    fields = _get(ending, 'fields', None) or {}
    if fields.get('pr'):
        left = is_round(ending, ref) and bool(head) and fields.get('head_after') == head
    else:
        created = _time(_get(pull, 'created_at'))
        left = created is not None and start.at <= created <= ending.at
    if not left:
        return ''
    found = feedback(pull, loop.marker_authors, loop.trust_members)
    if found['checks']:
        return ''
    for note in _get(pull, 'reviews', None) or ():
        if wanted(note) and trusted(note, loop.marker_authors, loop.trust_members):
            at = _time(_get(note, 'created_at'))
            if at is None or at > ending.at:
                return ''
    return ('the last run left %s at %s (%s); no review asking for work and no failing required check since: the next '
            'round waits for a reviewer or the checks' % (ref, (head or '?')[:12], ending.at.isoformat()))


def unread_pulls(rows: Any, numbers: Any = None) -> List[Any]:
    """The (number, repo) of the eligible board rows (of ``numbers``, when given) whose continued pull request's review
    and checks were not read: a board that reads them per candidate (GitHub, D1: after the cheap filter) reads these,
    so ``awaiting`` can judge them."""
    wanted = set(numbers or ())
    return [(_get(r, 'number'), _get(r, 'repo', '') or '') for r in rows or ()
            if _get(r, 'eligible') and _get(r, 'pull') and not _get(_get(r, 'pull'), 'read', False)
            and (not wanted or _get(r, 'number') in wanted)]


def _same_ref(ref: str) -> str:
    repo, sep, number = str(ref or '').strip().rpartition('#')
    return '%s#%s' % (repo.casefold(), number) if sep else number


def continuing(rows: Any, ref: str) -> List[int]:
    """The numbers of the board rows (``board_info`` items) whose next run continues the pull request ``ref``:
    the items a pull request's webhook event (a review, a finished check) dispatches. Matched on each row's
    ``pull`` (``PullLoop.view``), so only an open pull request a run of the fleet left, and that closes the
    item, names one; a pull request whose cap is spent still names its item (the hand dispatch then refuses it
    with ``rounds_spent``, writing nothing). GitHub's ``owner/name`` is matched case-insensitively."""
    want = _same_ref(ref)
    if not want or want.endswith('#'):
        return []
    found = []
    for row in rows or ():
        view = _get(row, 'pull', None)
        if view and _same_ref(_get(view, 'ref', '')) == want:
            found.append(int(_get(row, 'number', 0) or 0))
    return sorted(n for n in set(found) if n > 0)


def round_fields(pull: Any, head_after: Optional[str]) -> dict:
    """The close-out fields of a run that started on ``pull``: ``head_after`` is its head as re-read after the
    agent ended (None: not read). ``head_moved`` is None when either end is not known."""
    before = str(_get(pull, 'head_sha', '') or '') or None
    after = head_after or None
    moved = None if before is None or after is None else before != after
    return {'pr': str(_get(pull, 'ref', '')), 'head_before': before, 'head_after': after, 'head_moved': moved}


def round_text(fields: dict) -> str:
    """One close-out sentence naming the pull request and whether its head moved."""
    moved = fields.get('head_moved')
    if moved is True:
        what = 'its head moved %s -> %s (a round)' % ((fields.get('head_before') or '?')[:12], (fields.get('head_after') or '?')[:12])
    elif moved is False:
        what = 'nothing was pushed, its head stays %s (no round; an attempt)' % (fields.get('head_before') or '?')[:12]
    else:
        what = 'whether its head moved is not known (not a round; an attempt)'
    return 'continued %s: %s' % (fields.get('pr'), what)


__all__ = ['DEFAULT_MAX_ROUNDS', 'ROUNDS_ENV', 'ROUND_FIELDS', 'awaiting', 'continued_pull', 'continuing', 'count_rounds',
           'is_round', 'plan', 'PullLoop', 'round_cap', 'round_fields', 'round_text', 'rounds_env', 'rounds_from_env',
           'unread_pulls']
