# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The announcer's writes on either board (D14): read the live reports, decide, file, close.

The decision is ``_core.dispatch.announce.reconcile``; this file only reads the board's reports through its
normal read (``Board.reports``: the ledger's table, GitHub's issue list -- never a search index)
and carries out the answer: ``create_report`` for each new stall, a comment THEN a close for each
report whose stall cleared (the comment is the record of why, so it goes first, as D12's markers do).
"""

from __future__ import annotations

from typing import Any, Dict, List

from .protocol import BoardError
from .._core.dispatch.announce import reconcile
from .._core.board.references import defang


def _ref(board, report):
    """How this board names a report in ``comment``/``set_state``."""
    if getattr(board, 'kind', '') == 'github':
        return '%s#%s' % (report.get('repo') or board._report_repo(), report['number'])
    return report['number']


def announce(board, stalls: List[Dict[str, Any]], *, now: Any, dry_run: bool = False, unsure=()) -> Dict[str, Any]:
    """File one report per new stall and close the reports whose stall cleared.

    Returns ``reconcile``'s answer plus ``filed``/``closed`` (what was written: ``{number, title}``)
    and ``errors`` (a write that failed: the next cycle tries again; nothing else is affected).
    ``dry_run`` decides against the live reports and writes nothing (plan and check mode); titles in
    ``unsure`` are neither filed nor closed (their evidence was not read this cycle).
    """
    # D14: every text defanged, titles too -- before the comparison, so idempotence compares what is stored
    stalls = [dict(s, title=defang(s.get('title')), body=defang(s.get('body'))) for s in stalls or []]
    unsure = [defang(t) for t in unsure or ()]
    reports = board.reports()
    plan = reconcile(stalls, reports, now=now, unsure=unsure)
    by_number = dict((r['number'], r) for r in reports)
    filed, closed, errors = [], [], []
    if not dry_run:
        for stall in plan['file']:
            try:
                made = board.create_report(stall['title'], stall['body'])
            except BoardError as exc:
                errors.append('could not file the report %r: %s' % (stall['title'], exc))
                continue
            if made.get('created'):
                filed.append({'number': made['number'], 'title': stall['title'], 'kind': stall['kind'],
                              'url': made.get('url') or ''})
        for done in plan['close']:
            report = by_number.get(done['number']) or done
            try:
                board.comment(_ref(board, report), done['comment'])
                board.set_state(_ref(board, report), 'closed')
            except BoardError as exc:
                errors.append('could not close the report #%s %r: %s' % (done['number'], done['title'], exc))
                continue
            closed.append({'number': done['number'], 'title': done['title']})
    out = dict(plan)
    out.update(filed=filed, closed=closed, errors=errors, reports=reports)
    return out


__all__ = ['announce']
