# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger board's pull-request details: an artifact's head, review notes and check results (board version 5).

The ledger stands in for the forge: whoever records artifacts (a CI hook, an operator, a test) records the
review and the checks here, and the ledger's read hands them to the same decisions GitHub's do
(``_core.board.pull_feedback``, ``_core.dispatch.pr_loop``). A review note's ``association`` is the
recorder's statement of the author's standing (GitHub's words: ``OWNER``, ``MEMBER``, ``COLLABORATOR``, ...):
``''`` is not trusted, as on GitHub (D19). A check result is kept per (name, head): a push makes the old
results about an older head, which the decisions ignore.
"""

from __future__ import annotations

from .._core.board.model import CheckResult, ReviewNote, parse_time

PULLS_VERSION = 5
"""The board schema version that added these tables and the artifacts' head columns."""

MIGRATION = (PULLS_VERSION, 'pull request heads, review notes and check results on artifacts', [
    "ALTER TABLE artifacts ADD COLUMN state TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE artifacts ADD COLUMN head_ref TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE artifacts ADD COLUMN head_sha TEXT NOT NULL DEFAULT ''",
    "CREATE TABLE artifact_reviews (id {id}, artifact BIGINT NOT NULL REFERENCES artifacts (id), "
    "kind TEXT NOT NULL CHECK (kind IN ('thread', 'review')), author TEXT NOT NULL DEFAULT '', "
    "association TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT '', body TEXT NOT NULL, "
    "path TEXT NOT NULL DEFAULT '', line INTEGER, resolved INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)",
    "CREATE INDEX artifact_reviews_artifact ON artifact_reviews (artifact, created_at)",
    "CREATE TABLE artifact_checks (artifact BIGINT NOT NULL REFERENCES artifacts (id), name TEXT NOT NULL, "
    "head_sha TEXT NOT NULL DEFAULT '', conclusion TEXT NOT NULL DEFAULT '', required INTEGER NOT NULL DEFAULT 1, "
    "summary TEXT NOT NULL DEFAULT '', url TEXT NOT NULL DEFAULT '', at TEXT NOT NULL, PRIMARY KEY (artifact, name, head_sha))",
])

KINDS = ('thread', 'review')
STATES = ('', 'OPEN', 'CLOSED', 'MERGED')


def attach(tx, artifacts_by_id, number=None):
    """Fill ``reviews`` and ``checks`` of ``{artifact id: [Artifact, ...]}``: one query per table whatever the
    number of artifacts (the read's cost does not grow with the board), narrowed to item ``number`` when given."""
    where, args = '', ()
    if number is not None:
        where, args = ' WHERE artifact IN (SELECT artifact FROM artifact_closes WHERE item = ?)', (number,)
    for arts in artifacts_by_id.values():
        for art in arts:
            art.reviews, art.checks = [], []
    for aid, kind, author, association, state, body, path, line, resolved, created in tx.all(
            'SELECT artifact, kind, author, association, state, body, path, line, resolved, created_at FROM artifact_reviews'
            + where + ' ORDER BY created_at, id', args):
        for art in artifacts_by_id.get(aid, ()):
            art.reviews.append(ReviewNote(kind=kind, body=body, author=author, association=association, state=state,
                                          path=path, line=line, resolved=bool(resolved), created_at=parse_time(created)))
    for aid, name, sha, conclusion, required, summary, url in tx.all(
            'SELECT artifact, name, head_sha, conclusion, required, summary, url FROM artifact_checks'
            + where + ' ORDER BY at, name', args):
        for art in artifacts_by_id.get(aid, ()):
            art.checks.append(CheckResult(name=name, conclusion=conclusion, required=bool(required), summary=summary,
                                          url=url, head_sha=sha))


def artifact_id(tx, ref, error):
    row = tx.one('SELECT id FROM artifacts WHERE ref = ?', (ref,))
    if row is None:
        raise error('the ledger has no artifact %r: record it first (add_artifact)' % (ref,))
    return row[0]


def add_review(tx, aid, *, kind, body, author, association, state, path, line, at):
    """One review note; returns its id."""
    return tx.insert('INSERT INTO artifact_reviews (artifact, kind, author, association, state, body, path, line, created_at) '
                     'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                     (aid, kind, author or '', (association or '').upper(), (state or '').upper(), body, path or '', line, at))


def note_key(kind, body, author='', state='', path='', line=None):
    """What makes two review notes one: the same kind, author, state, text and place. A recorder that states a note
    again (an operator re-running a task, a hook delivering twice) records nothing new; the association is the
    recorder's statement about the author, not part of the note."""
    return (str(kind or ''), str(author or ''), str(state or '').upper(), str(body or ''), str(path or ''),
            None if line is None else int(line))


def find_review(tx, aid, key):
    """``(id, resolved)`` of the note of artifact ``aid`` whose ``note_key`` is ``key`` (the oldest), or None."""
    for nid, kind, author, state, body, path, line, resolved in tx.all(
            'SELECT id, kind, author, state, body, path, line, resolved FROM artifact_reviews WHERE artifact = ? ORDER BY id',
            (aid,)):
        if note_key(kind, body, author, state, path, line) == key:
            return nid, bool(resolved)
    return None


def resolve_review(tx, note_id, resolved=True):
    """Mark a thread resolved (or not); returns whether the note exists."""
    return bool(tx.run('UPDATE artifact_reviews SET resolved = ? WHERE id = ?', (int(bool(resolved)), note_id)))


def set_check(tx, aid, *, name, head_sha, conclusion, required, summary, url, at):
    """Record the latest result of check ``name`` on ``head_sha`` (one row per name and head)."""
    tx.run('INSERT INTO artifact_checks (artifact, name, head_sha, conclusion, required, summary, url, at) '
           'VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (artifact, name, head_sha) DO UPDATE SET '
           'conclusion = excluded.conclusion, required = excluded.required, summary = excluded.summary, '
           'url = excluded.url, at = excluded.at',
           (aid, name, head_sha or '', (conclusion or '').upper(), int(bool(required)), summary or '', url or '', at))


__all__ = ['KINDS', 'MIGRATION', 'PULLS_VERSION', 'STATES', 'add_review', 'artifact_id', 'attach', 'find_review', 'note_key',
           'resolve_review', 'set_check']
