# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator's view of one cycle: the fleet table, the recent runs, the status page (HTML) and
the Prometheus textfile. Pure: the data in, text out; the clock is the cycle's ``now``.

Board text is hostile (titles, marker fields and reasons come from anyone who can comment), so
every value reaches the page through ``html.escape`` and the page forbids scripts outright with
its Content-Security-Policy; metric label values are escaped as the exposition format says. The
page is one file a web server serves as it is: no resident process (D3), no CDN, no script.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
import unicodedata
from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.cost import fleet_spend
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import GLYPHS
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import CLOCK_SKEW_WARN, parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import pull_summary
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import dark_until
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.account_budget import account_days
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import Budget, parse_budget

RECENT_RUNS = 50  # unmeasured guess: a screenful. Experiment: ask operators which rows they scroll to; the board lists every item anyway


def _time(value):
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        return None


def _seconds(later, earlier) -> Optional[float]:
    a, b = _time(later), _time(earlier)
    if a is None or b is None:
        return None
    return (a - b).total_seconds()


def age_text(seconds) -> str:
    """``3h``, ``in 20m``: the largest whole unit, as the status table prints it."""
    if seconds is None:
        return ''
    seconds = int(seconds)
    if seconds < 0:
        return 'in ' + age_text(-seconds)
    for unit, size in (('d', 86400), ('h', 3600), ('m', 60)):
        if seconds >= size:
            return '%d%s' % (seconds // size, unit)
    return '%ds' % seconds


def fleet(configured: Iterable[Dict[str, Any]], placed: Optional[Iterable[Dict[str, Any]]] = None,
          survey: Optional[Dict[str, Any]] = None, now: Any = None,
          previous: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Every configured master with what this cycle learnt of it.

    ``configured``: ``{worker, master}`` from the inventory. ``placed``: the masters the capacity read
    answered for (``guard`` stage ``place``: dark, source, reset_at, headroom). ``survey``: the probe
    (``masters`` live counts by ``worker/master``, ``blind`` the ones it could not read). ``probe`` is
    ``ok``, ``blind: why`` or ``not probed`` (status and plan mode read no master). ``previous``: the
    last probing cycle's record (:func:`fleet_record`); a cycle that probed nothing shows it, dated,
    instead of "not probed" - a hand ``status`` must not blank the sweep's view of the fleet.
    """
    if placed is None and survey is None and isinstance(previous, dict) and previous.get('masters'):
        return _previous_fleet(configured, previous, now)
    by_key = dict(('%s/%s' % (m.get('worker'), m.get('master')), m) for m in placed or [])
    counts = (survey or {}).get('masters') or {}
    clocks = (survey or {}).get('clocks') or {}
    blind = dict(('%s/%s' % (b.get('worker'), b.get('master')), b.get('why') or 'no answer')
                 for b in (survey or {}).get('blind') or [])
    out = []
    seen = set()
    for m in list(configured or []) + list(placed or []):
        key = '%s/%s' % (m.get('worker'), m.get('master'))
        if key in seen:
            continue
        seen.add(key)
        got = by_key.get(key) or {}
        head = dict(got.get('headroom') or {})
        live = counts.get(key, head.get('live_runs'))
        if key in blind:
            probe = 'blind: %s' % blind[key]
        elif key in counts or got:
            probe = 'ok'
        else:
            probe = 'not probed'
        dark = bool(got.get('dark'))
        reset = got.get('reset_at') if dark else None
        out.append({'worker': m.get('worker'), 'master': m.get('master'), 'live_runs': live, 'dark': dark,
                    'source': got.get('source') if dark else None,
                    'reset_at': (reset or 'unknown') if dark else None,
                    'reset_in_s': _seconds(reset, now) if dark and reset else None,
                    'why': got.get('why', '') if dark else '',
                    'headroom': head, 'probe': probe,
                    'board_skew_s': (clocks.get(m.get('worker')) or {}).get('board_skew_s')})
    return out


def clock_text(skew) -> str:
    """A worker's clock against the board's, as the fleet tables print it: ``+0 s``, ``-600 s: fix time sync``."""
    if skew is None:
        return '?'
    return '%+.0f s%s' % (skew, ': fix time sync' if abs(skew) > CLOCK_SKEW_WARN else '')


def fleet_record(rows: Iterable[Dict[str, Any]], at: Any) -> Dict[str, Any]:
    """What a probing cycle learnt of the fleet (``fleet()`` rows it probed), kept as ``fleet.json`` for
    the cycles that probe nothing; ``at`` is when it was learnt."""
    return {'at': at, 'masters': [dict(r) for r in rows or [] if r.get('probe') != 'not probed']}


def _previous_fleet(configured, previous, now) -> List[Dict[str, Any]]:
    """The configured masters as the last probe saw them: ``probe`` says when, the live count is
    that probe's (``live_runs_at``), and the time to a stated reset is counted from ``now``."""
    at = previous.get('at')
    ago = age_text(_seconds(now, at))
    by_key = dict(('%s/%s' % (m.get('worker'), m.get('master')), m) for m in previous.get('masters') or []
                  if isinstance(m, dict))
    out, seen = [], set()
    for m in list(configured or []) + list(by_key.values()):
        key = '%s/%s' % (m.get('worker'), m.get('master'))
        if key in seen:
            continue
        seen.add(key)
        got = by_key.get(key)
        if got is None:
            out.append({'worker': m.get('worker'), 'master': m.get('master'), 'live_runs': None, 'dark': False,
                        'source': None, 'reset_at': None, 'reset_in_s': None, 'why': '', 'headroom': {},
                        'probe': 'not probed', 'board_skew_s': None})
            continue
        row = dict(got)
        row['dark'] = bool(row.get('dark'))
        reset = row.get('reset_at') if row['dark'] else None
        row['reset_in_s'] = _seconds(reset, now) if reset and reset != 'unknown' else None
        row['live_runs_at'] = at
        row['probe'] = 'not probed now; at %s%s: %s' % (at, ' (%s ago)' % ago if ago else '', got.get('probe') or 'ok')
        out.append(row)
    return out


def text_width(text) -> int:
    """Terminal columns: a wide character (the marker glyphs) takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ('W', 'F') else 0 if unicodedata.combining(ch) or ch == '\ufe0f' else 1
               for ch in text)


def _pad(text, width):
    return text + ' ' * (width - text_width(text))


def text_table(header, rows) -> str:
    """Rows of text cells as aligned columns under a header and a rule (terminal columns, glyphs counted two)."""
    widths = [text_width(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], text_width(cell))
    line = '  '.join(_pad(h, w) for w, h in zip(widths, header)).rstrip()
    out = [line, '  '.join('-' * w for w in widths)]
    for row in rows:
        out.append('  '.join(_pad(c, w) for w, c in zip(widths, row)).rstrip())
    return '\n'.join(out)


def fleet_text(data: Dict[str, Any]) -> str:
    """The fleet as a text table for ``status``: every configured master, usable or dark with its source and
    how long (the page's Fleet table; a cycle that probes nothing shows the last sweep's probe, dated)."""
    rows = []
    for m in fleet(data.get('configured') or [], data.get('masters'), data.get('survey'), data.get('now'),
                   _record(data, 'previous_fleet')):
        if m['dark']:
            state = 'dark: %s' % (m.get('source') or 'unknown source')
            until = dark_until(m.get('source'), m.get('reset_at'))
        else:
            state, until = ('unknown' if m.get('probe') == 'not probed' else 'usable'), '-'
        rows.append(['%s/%s' % (m.get('worker'), m.get('master')), state, until,
                     '?' if m.get('live_runs') is None else str(m['live_runs']), clock_text(m.get('board_skew_s')),
                     str(m.get('probe') or '')])
    return text_table(['master', 'state', 'dark', 'live runs', 'clock vs board', 'probe'], rows)


def recent_runs(items: Iterable[Dict[str, Any]], now: Any = None, limit: int = RECENT_RUNS) -> List[Dict[str, Any]]:
    """One row per item whose last marker is a start (live) or a close-out naming its start, newest first."""
    rows = []
    for it in items or []:
        marker = it.get('last_marker') or {}
        fields = marker.get('fields') or {}
        kind = marker.get('kind')
        if not kind:
            continue
        if kind == 'start':
            start, outcome, duration = marker.get('at'), 'running', _seconds(now, marker.get('at'))
        elif fields.get('started_at'):
            start, outcome, duration = fields['started_at'], kind, _seconds(marker.get('at'), fields['started_at'])
        else:
            continue
        rows.append({'number': it.get('number'), 'repo': it.get('repo') or '', 'unit': fields.get('unit') or '',
                     'where': '%s/%s' % (fields['host'], fields['master']) if fields.get('host') and fields.get('master') else '',
                     'start': start, 'duration_s': duration, 'outcome': outcome, 'cost_usd': fields.get('cost_usd')})
    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    rows.sort(key=lambda r: _time(r['start']) or epoch, reverse=True)
    return rows[:limit]


def _money(value) -> str:
    return ('%.4f' % float(value or 0)).rstrip('0').rstrip('.') or '0'


def _figures(tokens, usd, priced=None, runs=None) -> str:
    """``8000 tok, $0.75`` as stated; ``+`` after the dollars when some runs stated no cost; ``-`` when nothing was stated."""
    words = []
    if tokens is not None:
        words.append('%s tok' % _num(tokens))
    if usd is not None:
        words.append('$%s%s' % (_money(usd), '+' if priced is not None and runs is not None and priced < runs else ''))
    return ', '.join(words) or '-'


def spend_cell(it: Dict[str, Any]) -> str:
    """An item's spend since its last reopen, against its item budget when it has one: ``3000 tok / 8000 tok``
    (``board_info``'s ``spend``, ``item_budget``); ``-`` for none stated. One cell for the text table and the page."""
    spend = it.get('spend') if isinstance(it.get('spend'), dict) else {}
    cap = it.get('item_budget') if isinstance(it.get('item_budget'), dict) else {}
    text = _figures(spend.get('tokens'), spend.get('cost_usd'), spend.get('priced_runs'), spend.get('runs'))
    if cap:
        text += ' / ' + _figures(cap.get('tokens'), cap.get('usd'))
    return text


def held_cell(it: Dict[str, Any]) -> str:
    """Which limits of its item budget can hold the item (``board_info``'s ``budget_held_by``): ``tokens and usd``,
    ``tokens only`` when its runs state no cost, ``nothing``; ``-`` without an item budget."""
    held = it.get('budget_held_by') if isinstance(it.get('budget_held_by'), dict) else {}
    return str(held.get('short') or '-')


def master_spend(items: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """What each master's runs stated they spent, over every item on the board (``spend_by_master`` of each item,
    folded by ``_core.board.cost.fleet_spend``); a master is named as its runs' close-out markers name it (host/master)."""
    rows = []
    for it in items or []:
        rows.extend(it.get('spend_by_master') or [])
    return fleet_spend(rows)


def spend_text(data: Dict[str, Any]) -> str:
    """Spend per master as a text table for ``status`` (the page's Spend table)."""
    rows = [['%s/%s' % (m['host'] or '?', m['master'] or '?'), str(m['runs']), str(m['priced_runs']),
             _figures(m['tokens'], None), _figures(None, m['cost_usd'], m['priced_runs'], m['runs'])]
            for m in master_spend(data.get('items') or [])]
    return text_table(['master (as its runs name it)', 'runs', 'priced', 'tokens', 'cost'], rows)


def account_budget(data: Dict[str, Any]) -> Budget:
    """The daily budget of an agent account the cycle's data carries (``account_budget``: ``{tokens, usd}``, 0 or
    missing: no limit); one that does not parse is no limit here (the dispatcher's guard refuses it first)."""
    value = data.get('account_budget') if isinstance(data.get('account_budget'), dict) else {}
    try:
        return parse_budget(dict((k, value.get(k) or None) for k in ('tokens', 'usd')))
    except ValueError:
        return Budget()


def account_rows(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Spend per agent account and UTC day, newest first, against the daily budget (``_core.outcome.account_budget``)."""
    if data.get('now') is None:
        return []
    return account_days(data.get('items') or [], data['now'], account_budget(data))


def account_state(row: Dict[str, Any], budget: Budget) -> str:
    """What the daily budget says of one account's day: over it (dark until the next day, for today), or within."""
    if not budget:
        return 'no daily budget'
    if row.get('limit'):
        return 'spent (%s)%s' % (row['limit'], ': dark until %s' % row['reset_at'] if row.get('reset_at') else '')
    return 'within'


def account_text(data: Dict[str, Any]) -> str:
    """Spend per agent account and UTC day against the daily budget, as a text table for ``status``."""
    budget = account_budget(data)
    limit = _figures(budget.tokens, budget.usd) if budget else '-'
    rows = [[r['account'], r['day'], str(r['runs']), str(r['priced_runs']), _figures(r['tokens'], None),
             _figures(None, r['cost_usd'], r['priced_runs'], r['runs']), limit, account_state(r, budget)]
            for r in account_rows(data)]
    return text_table(['account', 'day (UTC)', 'runs', 'priced', 'tokens', 'cost', 'daily budget', 'state'], rows)


# -- the page --------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.6em 0 .4em}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#eee}.meta{color:#555}.num{text-align:right;white-space:nowrap}
tr.eligible td.reason{color:#075;font-weight:bold}tr.held td.reason{color:#555}
tr.dark{background:#fde8e8}tr.dark td.state{color:#a00;font-weight:bold}
.bad{color:#a00;font-weight:bold}.ok{color:#075}
"""


def _e(value) -> str:
    return html.escape('' if value is None else str(value), quote=True)


def _table(cls, header, rows) -> str:
    out = ['<table class="%s"><thead><tr>' % _e(cls)]
    out.extend('<th>%s</th>' % _e(h) for h in header)
    out.append('</tr></thead><tbody>')
    out.extend(rows)
    if not rows:
        out.append('<tr><td colspan="%d" class="meta">none</td></tr>' % len(header))
    out.append('</tbody></table>')
    return ''.join(out)


def _cost(cost) -> str:
    if not isinstance(cost, dict) or cost.get('cost_usd') is None:
        return '-'
    partial = '+' if (cost.get('priced_runs') or 0) < (cost.get('runs') or 0) else ''
    return '$%.2f%s' % (float(cost['cost_usd']), partial)


def _glyphed(kind) -> str:
    """A marker kind led by its glyph (``✅ success``), as the board shows it; other words as they are."""
    if not kind:
        return '-'
    return '%s %s' % (GLYPHS[kind], kind) if kind in GLYPHS else str(kind)


def _item_row(it) -> str:
    marker = it.get('last_marker') or {}
    blockers = ', '.join('#%s %s' % (b.get('number'), b.get('state')) for b in it.get('blockers') or [])
    holds = it.get('holds') or []
    reason = it.get('reason', '')
    title = it.get('title') or ''
    url = it.get('url') or ''
    if url.startswith('https://') or url.startswith('http://'):
        title_cell = '<a href="%s" rel="noreferrer">%s</a>' % (_e(url), _e(title))
    else:
        title_cell = _e(title)
    return ('<tr id="item-%s" class="item %s" data-number="%s" data-reason="%s">'
            '<td class="num">#%s</td><td class="title">%s</td><td>%s/%s</td>'
            '<td class="reason" title="%s">%s</td><td class="num">%s/%s</td><td>%s</td><td class="num">%s</td>'
            '<td>%s</td><td class="num spend">%s</td><td class="held" title="%s">%s</td><td class="num">%s</td>'
            '<td class="pull">%s</td></tr>') % (
        _e(it.get('number')), 'eligible' if it.get('eligible') else 'held', _e(it.get('number')), _e(reason),
        _e(it.get('number')), title_cell, _e(it.get('state')), _e(it.get('status')),
        _e(', '.join(holds)), _e(reason + (' (+%s)' % ', '.join(holds[1:]) if len(holds) > 1 else '')),
        _e(it.get('attempts', 0)), _e(it.get('max_attempts', '')),
        _e(_glyphed(marker.get('kind'))), _e(age_text(marker.get('age_s'))), _e(blockers or '-'), _e(spend_cell(it)),
        _e((it.get('budget_held_by') or {}).get('text') or ''), _e(held_cell(it)),
        _e(_cost(it.get('run_cost'))), _e(pull_summary(it.get('pull'))))


def _master_row(m) -> str:
    head = m.get('headroom') or {}
    if m['dark']:
        state = 'dark: %s' % (m.get('source') or 'unknown source')
        stated = m.get('reset_at') not in (None, '', 'unknown')
        reset = m['reset_at'] if stated else dark_until(m.get('source'), None)
        if m.get('reset_in_s') is not None:
            reset = '%s (%s)' % (reset, age_text(-m['reset_in_s']))
    else:
        state, reset = 'usable', '-'
    headroom = 'load %s / %s cpus, %s kB free' % (head.get('load1', '?'), head.get('cpus', '?'),
                                                  head.get('mem_available_kb', '?')) if head else 'unknown'
    return ('<tr class="master %s" data-master="%s/%s"><td>%s</td><td>%s</td><td class="num">%s</td>'
            '<td class="state">%s</td><td class="reset">%s</td><td>%s</td><td class="clock">%s</td><td class="probe">%s</td></tr>') % (
        'dark' if m['dark'] else 'usable', _e(m.get('worker')), _e(m.get('master')), _e(m.get('worker')), _e(m.get('master')),
        _e('?' if m.get('live_runs') is None else m.get('live_runs')), _e(state), _e(reset), _e(headroom),
        _e(clock_text(m.get('board_skew_s'))), _e(m.get('probe')))


def _run_row(r) -> str:
    duration = age_text(r['duration_s']) if r['duration_s'] is not None else ''
    cost = '-' if r.get('cost_usd') is None else '$%.2f' % float(r['cost_usd'])
    return ('<tr class="run %s"><td class="num">#%s</td><td>%s</td><td>%s</td><td>%s</td><td class="num">%s</td>'
            '<td class="outcome">%s</td><td class="num">%s</td></tr>') % (
        _e(r['outcome']), _e(r['number']), _e(r['unit']), _e(r['where']), _e(r['start']), _e(duration),
        _e(_glyphed(r['outcome'])), _e(cost))


def _record_rows(records) -> List[str]:
    """Reaper or announcer actions, whatever their shape: a list of records, or a dict of such lists
    (the reaper's ``{reap, held}``, the announcer's ``{filed, closed, open}``); one row each, its fields as text."""
    if isinstance(records, dict):
        groups = [(key, records[key]) for key in sorted(records)]
    else:
        groups = [('', records)]
    rows = []
    for group, entries in groups:
        if not isinstance(entries, list):
            entries = [entries]
        for rec in entries:
            if isinstance(rec, dict):
                text = ', '.join('%s=%s' % (k, rec[k]) for k in sorted(rec))
            else:
                text = str(rec)
            rows.append('<tr class="action"><td class="group">%s</td><td>%s</td></tr>' % (_e(group), _e(text)))
    return rows


def _words(value) -> str:
    """A record's value as a reader writes it: lists joined, mappings as ``key value``, nothing as ``-``."""
    if value is None or value == '' or value == [] or value == {}:
        return '-'
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, (list, tuple)):
        return ', '.join(_words(v) for v in value)
    if isinstance(value, dict):
        return ', '.join('%s %s' % (k, _words(value[k])) for k in sorted(value))
    return str(value)


# The previous cycle's record (last_cycle.json) as a few lines: what it did and when, not every field.
_CYCLE_KEYS = (('result', 'result'), ('reason', 'reason'), ('failed_task', 'failed task'), ('at', 'at'),
               ('dispatcher', 'by'), ('mode', 'mode'), ('launched', 'launched'), ('reaped', 'reaped'))


def _kv(record, keys=None) -> str:
    if not isinstance(record, dict) or not record:
        return '<p class="meta">none recorded</p>'
    if keys is None:
        keys = [(k, k) for k in sorted(record)]
    rows = [(label, record[k]) for k, label in keys if k in record and (k not in ('reason', 'failed_task') or record[k])]
    return '<dl>%s</dl>' % ''.join('<dt>%s</dt><dd>%s</dd>' % (_e(label), _e(_words(v))) for label, v in rows)


def _record(data, key):
    """A JSON record as given (``key``) or as its file's text (``key_text``): the sweeper's heartbeat.json,
    the previous cycle's last_cycle.json. Missing is none; unparseable is shown as such."""
    if isinstance(data.get(key), dict):
        return data[key]
    text = data.get(key + '_text') or ''
    try:
        got = json.loads(text or 'null')
    except ValueError:
        return {'unreadable': text[:200]}
    return got if isinstance(got, dict) else None


def render_page(data: Dict[str, Any]) -> str:
    """The whole status page as one HTML document (see the module docstring for what is escaped)."""
    items = list(data.get('items') or [])
    now = data.get('now')
    masters = fleet(data.get('configured') or [], data.get('masters'), data.get('survey'), now, _record(data, 'previous_fleet'))
    runs = recent_runs(items, now)
    cost = data.get('cost') if isinstance(data.get('cost'), dict) else {}
    counts = {}
    for it in items:
        counts[it.get('reason')] = counts.get(it.get('reason'), 0) + 1
    summary = ', '.join('%s %s' % (counts[k], k) for k in sorted(counts)) or 'empty'
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        '<title>fleet.dispatch status</title><style>%s</style></head><body>' % _CSS,
        '<h1>fleet.dispatch status</h1>',
        '<p class="meta" id="summary">board <b>%s</b> read at <time id="now">%s</time> (%s); %d items: %s; '
        'GitHub points remaining: %s</p>' % (
            _e(data.get('board')), _e(now), _e(data.get('mode') or 'status'), len(items), _e(summary),
            _e(cost.get('remaining', 'n/a'))),
    ]
    if data.get('readable') is False:
        parts.append('<p class="bad" id="unreadable">the queue could not be read: %s</p>' % _e(data.get('error')))
    parts.append('<h2>Board</h2>')
    parts.append(_table('board', ['item', 'title', 'state/status', 'reason', 'tries', 'last marker', 'age', 'blockers',
                                  'spend since reopen / item budget', 'budget held by', 'cost', 'pull request'],
                        [_item_row(it) for it in items]))
    parts.append('<h2>Fleet</h2>')
    parts.append(_table('fleet', ['worker', 'master', 'live runs', 'state', 'reset', 'headroom', 'clock vs board', 'last probe'],
                        [_master_row(m) for m in masters]))
    parts.append('<h2>Spend</h2>')
    parts.append(_table('spend', ['master (as its runs name it)', 'runs', 'priced runs', 'tokens', 'cost'], [
        '<tr class="spend" data-spend-master="%s/%s"><td>%s/%s</td><td class="num">%s</td><td class="num">%s</td>'
        '<td class="num">%s</td><td class="num">%s</td></tr>' % (
            _e(m['host']), _e(m['master']), _e(m['host'] or '?'), _e(m['master'] or '?'), _e(m['runs']), _e(m['priced_runs']),
            _e(_figures(m['tokens'], None)), _e(_figures(None, m['cost_usd'], m['priced_runs'], m['runs'])))
        for m in master_spend(items)]))
    budget = account_budget(data)
    parts.append('<h2>Spend per account and day</h2>')
    parts.append(_table('accounts', ['account', 'day (UTC)', 'runs', 'priced runs', 'tokens', 'cost', 'daily budget', 'state'], [
        '<tr class="account%s" data-account="%s" data-day="%s"><td>%s</td><td>%s</td><td class="num">%s</td><td class="num">%s</td>'
        '<td class="num">%s</td><td class="num">%s</td><td class="num">%s</td><td class="state">%s</td></tr>' % (
            ' dark' if r.get('reset_at') else '', _e(r['account']), _e(r['day']), _e(r['account']), _e(r['day']), _e(r['runs']),
            _e(r['priced_runs']), _e(_figures(r['tokens'], None)), _e(_figures(None, r['cost_usd'], r['priced_runs'], r['runs'])),
            _e(_figures(budget.tokens, budget.usd) if budget else '-'), _e(account_state(r, budget)))
        for r in account_rows(data)]))
    parts.append('<h2>Recent runs</h2>')
    parts.append(_table('runs', ['item', 'unit', 'where', 'start', 'duration', 'outcome', 'cost'], [_run_row(r) for r in runs]))
    parts.append('<h2>Heartbeat</h2><div id="heartbeat"><h3>previous cycle</h3>%s<h3>sweeper heartbeat</h3>%s</div>' % (
        _kv(_record(data, 'cycle'), _CYCLE_KEYS), _kv(_record(data, 'heartbeat'))))
    for key, title in (('reaper', 'Reaper'), ('announcer', 'Announcer')):
        if data.get(key) is not None:
            parts.append('<h2>%s</h2>' % title)
            parts.append(_table(key, ['kind', 'action'], _record_rows(data.get(key))))
    parts.append('</body></html>\n')
    return ''.join(parts)


# -- the Prometheus textfile --------------------------------------------------------------------

def _label(value) -> str:
    """A label value as the text exposition format escapes it (backslash, quote, newline)."""
    return str('' if value is None else value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _num(value) -> str:
    if isinstance(value, bool):
        return '1' if value else '0'
    value = float(value)
    if math.isnan(value):
        return 'NaN'
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


METRICS = (
    ('fleet_dispatch_items', 'gauge', 'Board items by the reason that decides them.'),
    ('fleet_dispatch_live_runs', 'gauge', 'Live task units per master, as the probe counted them.'),
    ('fleet_dispatch_worker_clock_skew_seconds', 'gauge',
     'Seconds each worker\'s clock is ahead of the board\'s (negative: behind), as this cycle\'s probe measured it.'),
    ('fleet_dispatch_dark_masters', 'gauge', 'Masters that are dark, by source (rate_limit, revoked).'),
    ('fleet_dispatch_reset_seconds', 'gauge', 'Seconds until a dark master\'s stated reset (negative: passed).'),
    ('fleet_dispatch_lease_hold_seconds', 'gauge', 'Seconds this cycle held each lease it acquired.'),
    ('fleet_dispatch_cycle_duration_seconds', 'gauge', 'Seconds the last cycle took.'),
    ('fleet_dispatch_github_points_remaining', 'gauge', 'GitHub GraphQL rate-limit points remaining after the read.'),
    ('fleet_dispatch_runs', 'gauge', 'Runs closed, by outcome (from the items\' close-out markers).'),
    ('fleet_dispatch_run_cost_usd', 'gauge', 'Stated cost of the runs in USD, by outcome (never estimated).'),
    ('fleet_dispatch_item_spend_tokens', 'gauge',
     'Tokens an item\'s runs stated since its last reopen (the figure its item budget holds), for items with one stated.'),
    ('fleet_dispatch_item_spend_usd', 'gauge',
     'Cost in USD an item\'s runs stated since its last reopen (never estimated), for items with one stated.'),
    ('fleet_dispatch_item_budget_tokens', 'gauge', 'The item budget in tokens (dispatch_item_budget_tokens), when set.'),
    ('fleet_dispatch_item_budget_usd', 'gauge', 'The item budget in USD (dispatch_item_budget_usd), when set.'),
    ('fleet_dispatch_master_spend_tokens', 'gauge', 'Tokens the runs of each master stated, over the board\'s items.'),
    ('fleet_dispatch_master_spend_usd', 'gauge', 'Cost in USD the runs of each master stated (never estimated).'),
    ('fleet_dispatch_account_spend_tokens', 'gauge',
     'Tokens the runs of each agent account stated today (UTC), the figure its daily budget holds.'),
    ('fleet_dispatch_account_spend_usd', 'gauge', 'Cost in USD the runs of each agent account stated today (UTC; never estimated).'),
    ('fleet_dispatch_account_budget_tokens', 'gauge', 'The daily budget of an agent account in tokens (dispatch_account_budget_tokens), when set.'),
    ('fleet_dispatch_account_budget_usd', 'gauge', 'The daily budget of an agent account in USD (dispatch_account_budget_usd), when set.'),
    ('fleet_dispatch_board_readable', 'gauge', '1 when the queue was read, 0 when it was not.'),
    ('fleet_dispatch_cycle_timestamp_seconds', 'gauge', 'When the cycle read the board, as a Unix time.'),
    ('fleet_dispatch_fleet_probe_timestamp_seconds', 'gauge',
     'When the dark states and resets above were probed, as a Unix time (a status or plan cycle shows the last sweep\'s).'),
)


def render_metrics(data: Dict[str, Any]) -> str:
    """The cycle as a Prometheus textfile (node_exporter's textfile collector); names in docs/operator.md."""
    samples = dict((name, []) for name, _t, _h in METRICS)
    items = list(data.get('items') or [])
    now = data.get('now')
    by_reason = {}
    for it in items:
        by_reason[it.get('reason')] = by_reason.get(it.get('reason'), 0) + 1
    for reason in sorted(by_reason, key=str):
        samples['fleet_dispatch_items'].append(({'reason': reason}, by_reason[reason]))
    masters = fleet(data.get('configured') or [], data.get('masters'), data.get('survey'), now, _record(data, 'previous_fleet'))
    dark = {}
    probed_at = None
    skewed = {}
    for m in masters:
        labels = {'worker': m['worker'], 'master': m['master']}
        if m.get('live_runs_at'):
            probed_at = m['live_runs_at']   # a count of an earlier probe is not this cycle's: left out
        else:
            if m['live_runs'] is not None:
                samples['fleet_dispatch_live_runs'].append((labels, m['live_runs']))
            if m.get('board_skew_s') is not None:
                skewed[m['worker']] = m['board_skew_s']
        if m['dark']:
            dark[m['source'] or 'unknown'] = dark.get(m['source'] or 'unknown', 0) + 1
            if m['reset_in_s'] is not None:
                samples['fleet_dispatch_reset_seconds'].append((dict(labels, source=m['source'] or 'unknown'), m['reset_in_s']))
    for worker in sorted(skewed, key=str):
        samples['fleet_dispatch_worker_clock_skew_seconds'].append(({'worker': worker}, skewed[worker]))
    for source in ('rate_limit', 'revoked'):
        dark.setdefault(source, 0)
    for source in sorted(dark):
        samples['fleet_dispatch_dark_masters'].append(({'source': source}, dark[source]))
    for lease in data.get('leases') or []:
        if not (isinstance(lease, dict) and lease.get('acquired') and lease.get('name')) or lease.get('degraded'):
            continue
        # the store states the expiry (acquired + ttl), not the acquisition: subtract the ttl back out
        expires = _time(lease.get('expires_at'))
        if expires is not None and data.get('lease_ttl'):
            held = _seconds(data.get('finished_at') or now, expires - _dt.timedelta(seconds=float(data['lease_ttl'])))
            if held is not None:
                samples['fleet_dispatch_lease_hold_seconds'].append(({'lease': lease['name']}, max(held, 0.0)))
    duration = None
    if data.get('started_at'):
        duration = _seconds(data.get('finished_at'), data.get('started_at'))
    if duration is not None:
        samples['fleet_dispatch_cycle_duration_seconds'].append(({}, duration))
    cost = data.get('cost') if isinstance(data.get('cost'), dict) else {}
    if cost.get('remaining') is not None:
        samples['fleet_dispatch_github_points_remaining'].append(({}, cost['remaining']))
    runs, spent = {}, {}
    for it in items:
        marker = it.get('last_marker') or {}
        kind = marker.get('kind')
        if not kind or kind == 'start':
            continue
        runs[kind] = runs.get(kind, 0) + 1
        fields = marker.get('fields') or {}
        if fields.get('cost_usd') is not None:
            spent[kind] = spent.get(kind, 0.0) + float(fields['cost_usd'])
    for kind in sorted(runs):
        samples['fleet_dispatch_runs'].append(({'outcome': kind}, runs[kind]))
        samples['fleet_dispatch_run_cost_usd'].append(({'outcome': kind}, spent.get(kind, 0.0)))
    cap = {}
    for it in items:
        labels = {'number': it.get('number'), 'repo': it.get('repo') or ''}
        spend = it.get('spend') if isinstance(it.get('spend'), dict) else {}
        if spend.get('tokens') is not None:
            samples['fleet_dispatch_item_spend_tokens'].append((labels, spend['tokens']))
        if spend.get('cost_usd') is not None:
            samples['fleet_dispatch_item_spend_usd'].append((labels, spend['cost_usd']))
        if it.get('budget_field') in (None, '') or it.get('budget_note'):   # its own budget field is not the dispatcher's
            cap = cap or (it.get('item_budget') if isinstance(it.get('item_budget'), dict) else {})
    if cap.get('tokens') is not None:
        samples['fleet_dispatch_item_budget_tokens'].append(({}, cap['tokens']))
    if cap.get('usd') is not None:
        samples['fleet_dispatch_item_budget_usd'].append(({}, cap['usd']))
    for m in master_spend(items):
        labels = {'host': m['host'], 'master': m['master']}
        if m['tokens'] is not None:
            samples['fleet_dispatch_master_spend_tokens'].append((labels, m['tokens']))
        if m['cost_usd'] is not None:
            samples['fleet_dispatch_master_spend_usd'].append((labels, m['cost_usd']))
    for row in account_rows(data):
        if not row['today']:
            continue
        if row['tokens'] is not None:
            samples['fleet_dispatch_account_spend_tokens'].append(({'account': row['account']}, row['tokens']))
        if row['cost_usd'] is not None:
            samples['fleet_dispatch_account_spend_usd'].append(({'account': row['account']}, row['cost_usd']))
    daily = account_budget(data)
    if daily.tokens is not None:
        samples['fleet_dispatch_account_budget_tokens'].append(({}, daily.tokens))
    if daily.usd is not None:
        samples['fleet_dispatch_account_budget_usd'].append(({}, daily.usd))
    samples['fleet_dispatch_board_readable'].append(({}, data.get('readable') is not False))
    when = _time(now)
    if when is not None:
        samples['fleet_dispatch_cycle_timestamp_seconds'].append(({}, when.timestamp()))
    probed = _time(probed_at) if probed_at else (when if any(m['probe'] != 'not probed' for m in masters) else None)
    if probed is not None:
        samples['fleet_dispatch_fleet_probe_timestamp_seconds'].append(({}, probed.timestamp()))
    lines = []
    for name, kind, help_text in METRICS:
        lines.append('# HELP %s %s' % (name, help_text.replace('\\', '\\\\').replace('\n', '\\n')))
        lines.append('# TYPE %s %s' % (name, kind))
        for labels, value in samples[name]:
            text = ','.join('%s="%s"' % (k, _label(labels[k])) for k in sorted(labels))
            lines.append('%s%s %s' % (name, '{%s}' % text if text else '', _num(value)))
    return '\n'.join(lines) + '\n'
