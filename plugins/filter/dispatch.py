# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the shared dispatch tasks use: placement (pure decision) and human tables.

Thin: ``place`` is ``module_utils._core.plan.place`` (one implementation); the tables only
format what ``board_info`` returned.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.fleet.dispatch.plugins.module_utils._core.plan import place as _place


def _cell(value, width):
    text = '' if value is None else str(value)
    text = text.replace('\n', ' ')
    return text if len(text) <= width else text[:width - 1] + '…'


def _table(header, rows):
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    line = '  '.join('%-*s' % (w, h) for w, h in zip(widths, header)).rstrip()
    out = [line, '  '.join('-' * w for w in widths)]
    for row in rows:
        out.append('  '.join('%-*s' % (w, c) for w, c in zip(widths, row)).rstrip())
    return '\n'.join(out)


def _age(seconds):
    if seconds is None:
        return ''
    seconds = int(seconds)
    if seconds < 0:
        return 'in %s' % _age(-seconds)
    for unit, size in (('d', 86400), ('h', 3600), ('m', 60)):
        if seconds >= size:
            return '%d%s' % (seconds // size, unit)
    return '%ds' % seconds


def status_table(items):
    """item, status, reason, attempts, last marker and its age -- one line per item."""
    if not isinstance(items, list):
        raise AnsibleFilterError('status_table expects the items list of fleet.dispatch.board_info')
    rows = []
    for it in items:
        marker = it.get('last_marker') or {}
        rows.append([
            '#%s' % it.get('number'),
            _cell(it.get('title'), 40),
            _cell('%s/%s' % (it.get('state', ''), it.get('status', '')), 16),
            it.get('reason', ''),
            '%s/%s' % (it.get('attempts', 0), it.get('max_attempts', '')),
            marker.get('kind', '-') if marker else '-',
            _age(marker.get('age_s')) if marker else '',
        ])
    return _table(['item', 'title', 'state/status', 'reason', 'tries', 'last marker', 'age'], rows)


def plan_table(plan, items=None):
    """Which item would go where, and why each other item would not."""
    if not isinstance(plan, dict):
        raise AnsibleFilterError('plan_table expects the result of fleet.dispatch.place')
    rows = []
    for a in plan.get('assignments', []):
        rows.append(['#%s' % a['number'], 'launch', '%s/%s' % (a.get('worker'), a.get('master')), _cell(a.get('title'), 40)])
    for u in plan.get('unplaced', []):
        rows.append(['#%s' % u['number'], 'hold', '-', u.get('why', '')])
    for it in items or []:
        if not it.get('eligible'):
            why = it.get('reason', '')
            if it.get('reason') == 'blocked':
                why += ' by ' + ', '.join('#%s' % n for n in it.get('open_blockers') or [])
            elif it.get('reason') == 'retry_wait':
                why += ' until %s' % it.get('not_before')
            elif it.get('reason') == 'parked':
                why += ' after %s attempts' % it.get('attempts')
            rows.append(['#%s' % it.get('number'), 'skip', '-', why])
    for d in plan.get('dark', []):
        rows.append(['', 'dark', '%s/%s' % (d.get('worker'), d.get('master')),
                     '%s until %s' % (d.get('source'), d.get('reset_at') or 'unknown')])
    return _table(['item', 'decision', 'where', 'why'], rows)


def place(candidates, masters):
    """Place candidates on the masters with the most headroom (``_core.plan.place``)."""
    if not isinstance(candidates, list) or not isinstance(masters, list):
        raise AnsibleFilterError('place expects a list of candidates and a list of masters')
    return _place(candidates, masters)


class FilterModule(object):
    def filters(self):
        return {
            'status_table': status_table,
            'plan_table': plan_table,
            'place': place,
        }
