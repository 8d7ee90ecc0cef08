# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What of a pull request's review and checks reaches the next run's brief.

Pure, no I/O. The review is untrusted text like a mention (D19), so the same trust rule applies:
an author whose association is in ``trusted_associations`` (``MEMBER`` only when the operator opted in) or who
is one of the fleet's identities.
Included: the comments of unresolved review threads and the ``CHANGES_REQUESTED`` reviews of trusted
authors; the failing required checks of the pull request's current head. Everything else is named
(``skipped``) for the close-out and explain, never briefed.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from .markers import identity
from .mentions import trusted_associations

FAILING = frozenset(('FAILURE', 'ERROR', 'TIMED_OUT', 'CANCELLED', 'ACTION_REQUIRED', 'STARTUP_FAILURE'))
"""Conclusions (GitHub's ``CheckConclusionState``; ``ERROR`` and ``FAILURE`` of a commit ``StatusState``)
that block a required check. ``NEUTRAL``, ``SKIPPED`` and ``SUCCESS`` pass; ``''`` still runs."""


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def trusted(note: Any, marker_authors: Iterable[str] = (), trust_members: bool = False) -> bool:
    """The mention rule: a standing in the repository, or one of the fleet's identities."""
    association = str(_get(note, 'association', '') or '').upper()
    if association in trusted_associations(trust_members):
        return True
    author = identity(_get(note, 'author', ''), _get(note, 'author_type', ''))
    return bool(author) and author in set(identity(a) for a in marker_authors or ())


def wanted(note: Any) -> bool:
    """A review note that asks for work: an unresolved thread's comment, or a changes-requested review."""
    kind = _get(note, 'kind', '')
    if kind == 'thread':
        return not _get(note, 'resolved', False)
    return kind == 'review' and str(_get(note, 'state', '') or '').upper() == 'CHANGES_REQUESTED'


def failing_checks(pull: Any) -> List[Any]:
    """The required checks of the pull request's head whose conclusion fails (a result for an older head,
    when both shas are known, says nothing about this one)."""
    head = str(_get(pull, 'head_sha', '') or '')
    out = []
    for check in _get(pull, 'checks', None) or ():
        sha = str(_get(check, 'head_sha', '') or '')
        if head and sha and sha != head:
            continue
        if _get(check, 'required', False) and str(_get(check, 'conclusion', '') or '').upper() in FAILING:
            out.append(check)
    return out


def feedback(pull: Any, marker_authors: Iterable[str] = (), trust_members: bool = False) -> Dict[str, List[Any]]:
    """``{'threads', 'reviews', 'checks', 'skipped'}``: what the brief carries, and the wanted notes of
    untrusted authors (``skipped``), oldest first. ``reviews``/``checks`` of None (not read) give nothing."""
    out = {'threads': [], 'reviews': [], 'checks': failing_checks(pull), 'skipped': []}  # type: Dict[str, List[Any]]
    notes = sorted((n for n in _get(pull, 'reviews', None) or () if wanted(n)),
                   key=lambda n: (_get(n, 'created_at') is not None, _get(n, 'created_at') or 0))
    for note in notes:
        if not trusted(note, marker_authors, trust_members):
            out['skipped'].append(note)
        else:
            out['threads' if _get(note, 'kind') == 'thread' else 'reviews'].append(note)
    return out


__all__ = ['FAILING', 'failing_checks', 'feedback', 'trusted', 'wanted']
