# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mentions of the fleet derived from an item's own comments: who may address it, and which are new.

A mention is a comment that names the fleet's identity (``@<login>`` or a configured handle), by
a trusted author, that no run has seen yet. "Seen" is derived from the board itself: a run that
started after a comment was briefed with it (D19), so a mention is new while no start marker
follows it. No read state is stored anywhere (D1: a second tracker); delivery stays
at-least-once, because the boundary is the start marker *before* the run now asking.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional

from .markers import identity, is_marker_author, parse_marker

TRUSTED_ASSOCIATIONS = frozenset(('OWNER', 'COLLABORATOR'))
"""GitHub's ``authorAssociation`` values whose text steers an agent (D19): the repository's owner and its
collaborators (an invitation to the repository or a team that grants it). ``MEMBER`` says only membership of
the owning organization -- on a large organization, anyone it hired, without access to this repository -- so
it is trusted only when the operator says so (``trusted_associations``, ``board.trust_members``).
``CONTRIBUTOR``, ``FIRST_TIMER``, ``FIRST_TIME_CONTRIBUTOR``, ``MANNEQUIN`` and ``NONE`` are anyone on the
internet for a public repository, so a comment from them never steers an agent."""

MEMBER = 'MEMBER'


def trusted_associations(trust_members: Any = False) -> frozenset:
    """The associations whose mentions, review notes and item text are briefed as trusted: ``TRUSTED_ASSOCIATIONS``,
    plus ``MEMBER`` when the operator opted in (``trust_members``: an organization whose members all may steer it)."""
    return TRUSTED_ASSOCIATIONS | (frozenset((MEMBER,)) if trust_members is True else frozenset())


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def handles_of(login: str, extra: Iterable[str] = ()) -> List[str]:
    """The handles that address the fleet, lower case without ``@``: the login, the login without an
    app's ``[bot]`` suffix (people write ``@my-app``), and the configured ones (``@org/team`` too)."""
    out = []
    for handle in [login or ''] + list(extra or ()):
        handle = str(handle).strip().lstrip('@').lower()
        for one in (handle, handle[:-len('[bot]')] if handle.endswith('[bot]') else ''):
            if one and one not in out:
                out.append(one)
    return out


def mentions_handle(body: str, handles: Iterable[str]) -> bool:
    """Whether ``body`` names one of ``handles`` as GitHub renders a mention: ``@`` not preceded by
    a word character (an e-mail address is not a mention) and the handle not continued by one
    (``@fleet-bot2`` is someone else). Text in code spans and fenced blocks does not count."""
    text = re.sub(r'```.*?```', ' ', body or '', flags=re.S)
    text = re.sub(r'`[^`\n]*`', ' ', text)
    for handle in handles:
        if re.search(r'(?<![\w@/.-])@%s(?![\w-]|/\w)' % re.escape(handle), text, flags=re.I):
            return True
    return False


def unseen_mentions(comments: Iterable[Any], *, handles: Iterable[str], me: str = '',
                    marker_authors: Iterable[str] = (), own_start_id: Optional[str] = None,
                    skipped: Optional[List[Any]] = None, trust_members: bool = False) -> List[Any]:
    """The comments that mention ``handles``, from trusted authors, that no run has seen, oldest first.

    Trusted: ``authorAssociation`` in ``trusted_associations(trust_members)`` or a login in ``marker_authors``;
    never the fleet itself (``me``). Seen: older than a start marker written by the fleet or a
    marker author. ``own_start_id`` is the start marker of the run now asking (it has not seen
    anything yet): the boundary is then the start before it, and only comments up to that start are
    returned -- a later one goes to the next run, so none is lost. ``skipped``, when a list, receives
    the unseen mentions whose author is not trusted (the close-out lists them).
    """
    handles = list(handles)
    # identities compared as markers compares them: an app's comments say "fleet-app", its viewer "fleet-app[bot]"
    writers = set(identity(a) for a in marker_authors or ()) | ({identity(me)} if me else set())
    trusted_logins = set(identity(a) for a in marker_authors or ())
    standing = trusted_associations(trust_members)
    ordered = sorted((c for c in comments or () if _get(c, 'created_at') is not None), key=lambda c: _get(c, 'created_at'))
    starts = []
    for comment in ordered:
        author = identity(_get(comment, 'author', ''), _get(comment, 'author_type', ''))
        marker = parse_marker(_get(comment, 'body', ''), at=_get(comment, 'created_at'), comment_id=_get(comment, 'id', ''))
        if marker is not None and marker.kind == 'start' and (not writers or author in writers):
            starts.append(comment)
    upto = None
    if own_start_id is not None and starts and str(_get(starts[-1], 'id', '')) == str(own_start_id):
        upto = _get(starts[-1], 'created_at')
        starts = starts[:-1]
    since = _get(starts[-1], 'created_at') if starts else None
    found = []
    for comment in ordered:
        at = _get(comment, 'created_at')
        if since is not None and at <= since:
            continue
        if upto is not None and at > upto:
            continue
        author = identity(_get(comment, 'author', ''), _get(comment, 'author_type', ''))
        if me and author == identity(me):
            continue
        if parse_marker(_get(comment, 'body', ''), at=at) is not None:
            continue
        association = str(_get(comment, 'association', '') or '').upper()
        if not mentions_handle(_get(comment, 'body', ''), handles):
            continue
        if association not in standing and author not in trusted_logins:
            if skipped is not None:
                skipped.append(comment)
            continue
        found.append(comment)
    return found


def provenance(item: Any) -> Dict[str, Any]:
    """Who wrote the item's title and text, and whether an untrusted account edited them after review.

    ``author_trusted``: the author's ``authorAssociation`` is in ``trusted_associations`` of the item's
    ``trust_members`` (the rule mentions use) or the author is one of the fleet's identities; ``None`` when the board does not
    say who wrote it (the ledger: only a holder of its DSN writes an item). ``untrusted_edit``: the
    text was edited (``edited_at``) after the status was last set (``status_set_at``, the review
    that made the item ready; unknown counts as after) by an editor who is neither one of the fleet's
    identities, nor someone other than the author (editing another account's issue needs write
    access on GitHub), nor a trusted author: the stranger who opened the item rewrote it after a
    maintainer made it ready, so the text the agent gets is one nobody reviewed.
    """
    authors = _get(item, 'marker_authors', None) or []
    author = str(_get(item, 'author', '') or '')
    author_type = str(_get(item, 'author_type', '') or '')
    association = str(_get(item, 'author_association', '') or '').upper()
    if not author and not association:
        trusted = None
    else:
        trusted = (association in trusted_associations(_get(item, 'trust_members', False))
                   or (bool(author) and is_marker_author(author, authors, author_type)))
    edited = _get(item, 'edited_at', None)
    editor = str(_get(item, 'editor', '') or '')
    editor_type = str(_get(item, 'editor_type', '') or '')
    reviewed = _get(item, 'status_set_at', None)
    untrusted_edit = False
    if edited is not None and (reviewed is None or edited > reviewed):
        if not editor:
            untrusted_edit = True                   # a deleted account: nobody vouches for it
        elif is_marker_author(editor, authors, editor_type):
            untrusted_edit = False
        elif identity(editor, editor_type) != identity(author, author_type):
            untrusted_edit = False                  # another account's issue: only a writer may edit it
        else:
            untrusted_edit = trusted is not True
    return {'author': author, 'author_association': association, 'author_trusted': trusted,
            'editor': editor, 'edited_at': edited, 'status_set_at': reviewed, 'untrusted_edit': untrusted_edit}


__all__ = ['MEMBER', 'TRUSTED_ASSOCIATIONS', 'handles_of', 'mentions_handle', 'provenance', 'trusted_associations',
           'unseen_mentions']
