# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The brief's pull-request section: which pull request the run continues, where its workspace stands, and the
review and failing checks it must address (``_core.board.pull_feedback``), as untrusted text inside the brief's
fences (the reviewers' words and the checks' output are data, D19). Pure text; no I/O.

Three values for ``brief.render``: ``workspace_at`` (what the worktree is detached at), ``pull_intro`` (the
fleet's own instructions, outside the fences: only sanitised names and shas) and ``pull_review`` (fenced).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from .._core.board.pull_feedback import feedback

_SAFE = re.compile(r'[^A-Za-z0-9_./#+@\[\]-]')


def _safe(text: Any, limit: int = 200) -> str:
    """A branch, ref or sha as the brief prints it outside the fences: a name's characters only."""
    return _SAFE.sub('?', str(text or ''))[:limit] or '?'


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _when(value: Any) -> str:
    return value.strftime('%Y-%m-%dT%H:%M:%SZ') if hasattr(value, 'strftime') else 'a time not known'


def _quote(lines: List[str], text: Any) -> None:
    lines.extend('    ' + line for line in (str(text or '').rstrip().splitlines() or ['(no text)']))


def review_text(pull: Any, found: Dict[str, List[Any]]) -> str:
    """The fenced part: unresolved threads, changes-requested reviews, failing required checks."""
    if _get(pull, 'reviews', None) is None and _get(pull, 'checks', None) is None:
        return '(the review and the checks could not be read when this run started: read them on the pull request)'
    lines = []
    lines.append('Unresolved review threads (reviewers who may write to the repository, oldest first):')
    for index, note in enumerate(found['threads'], 1):
        where = _get(note, 'path', '') or 'the pull request'
        if _get(note, 'line', None):
            where += ':%s' % _get(note, 'line')
        lines.append('[%d] @%s on %s%s:' % (index, _get(note, 'author', '') or '?', where,
                                            ' (outdated: the code moved since)' if _get(note, 'outdated', False) else ''))
        _quote(lines, _get(note, 'body', ''))
    if not found['threads']:
        lines.append('(none)')
    lines.append('Changes requested:')
    for index, note in enumerate(found['reviews'], 1):
        lines.append('[%d] @%s at %s:' % (index, _get(note, 'author', '') or '?', _when(_get(note, 'created_at'))))
        _quote(lines, _get(note, 'body', ''))
    if not found['reviews']:
        lines.append('(none)')
    lines.append('Failing required checks on the head:')
    for index, check in enumerate(found['checks'], 1):
        summary = _get(check, 'summary', '') or ''
        url = _get(check, 'url', '') or ''
        lines.append('[%d] %s: %s%s%s' % (index, _get(check, 'name', '') or '?', _get(check, 'conclusion', ''),
                                          (' -- ' + summary.splitlines()[0]) if summary.strip() else '',
                                          (' (%s)' % url) if url else ''))
    if not found['checks']:
        lines.append('(none)')
    return '\n'.join(lines)


def section(pull: Any, branch: str, *, rounds: int = 0, max_rounds: Optional[int] = None,
            marker_authors: Any = (), trust_members: bool = False) -> Dict[str, Any]:
    """``{'workspace_at', 'pull_intro', 'pull_review', 'skipped'}`` for the brief; ``pull`` None: a fresh start."""
    if pull is None:
        return {'workspace_at': 'a freshly fetched origin/%s' % branch,
                'pull_intro': 'PULL REQUEST: none of this fleet\'s is open for this item; start fresh (step 1).',
                'pull_review': '(none)', 'skipped': []}
    found = feedback(pull, marker_authors, trust_members)
    ref, head, sha = _safe(_get(pull, 'ref', '')), _safe(_get(pull, 'head_ref', '')), _safe(_get(pull, 'head_sha', ''), 40)
    cap = ('of %d' % max_rounds) if max_rounds else '(no cap)'
    intro = [
        'PULL REQUEST %s is open and not merged: a previous run of this item opened it. This run CONTINUES it '
        '(round %d %s; a round is a run that pushes to it).' % (ref, rounds + 1, cap),
        'Your workspace is detached at its head branch %s (commit %s when this run started). If `git rev-parse HEAD` '
        'says otherwise, fetch origin %s and check it out detached before anything else.' % (head, sha, head),
        'Push to the same branch: commit on top of this head and `git push origin HEAD:refs/heads/%s`. Do NOT branch '
        'from %s and do NOT open another pull request (steps 1 and 2 are for a fresh start). Address the review and '
        'the failing checks below, answer on the pull request what you changed, and make the checks pass. The job '
        'still ends at MERGED (step 4).' % (head, _safe(branch)),
    ]
    return {'workspace_at': 'the head of pull request %s, branch %s, freshly fetched' % (ref, head),
            'pull_intro': '\n'.join(intro), 'pull_review': review_text(pull, found), 'skipped': found['skipped']}


__all__ = ['review_text', 'section']
