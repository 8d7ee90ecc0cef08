# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the shared dispatch tasks use: placement (pure decision) and human tables.

Thin: ``place`` is ``module_utils._core.dispatch.plan.place`` (one implementation); the tables only
format what ``board_info`` returned.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.fleet.dispatch.plugins.filter.board_table import board_table
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import GLYPHS
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import pull_summary
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.pr_loop import continuing
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import dark_until, place as _place
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.run_host import run_worker as _run_worker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import credential_account as _credential_account
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.exits import NAMES as _EXIT_NAMES
from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import held_cell, spend_cell, text_table


def _cell(value, width):
    text = '' if value is None else str(value)
    text = text.replace('\n', ' ')
    return text if len(text) <= width else text[:width - 1] + '…'


def _table(header, rows):
    return text_table(header, rows)


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
    """item, status, reason, attempts, last marker and its age, glyph-led comments by humans (never markers), what
    its runs stated they spent since its last reopen against its item budget, which limits of that budget can hold
    it (tokens only when its runs state no cost), the stated cost of all its runs -- one line per item."""
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
            _last_kind(marker),
            _age(marker.get('age_s')) if marker else '',
            _humans(_ignored(it)),
            spend_cell(it),
            held_cell(it),
            _cost(it.get('run_cost')),
            _cell(pull_summary(it.get('pull')), 40),
        ])
    return _table(['item', 'title', 'state/status', 'reason', 'tries', 'last marker', 'age', 'human glyphs', 'spend',
                   'held by', 'cost', 'pull request'], rows)


def _ignored(item):
    """What people did that the queue does not obey: glyph-led comments that are not markers, then
    reopens that do not count (``reopen`` as their kind), oldest first within each."""
    humans = item.get('human_markers') if isinstance(item.get('human_markers'), list) else []
    reopens = item.get('ignored_reopens') if isinstance(item.get('ignored_reopens'), list) else []
    return list(humans) + [{'author': r.get('actor'), 'kind': 'reopen'} for r in reopens if isinstance(r, dict)]


def _humans(found):
    """Glyph-led comments by people who are not the fleet's identities (human comments, never markers):
    ``mallory:success`` for the newest, ``+N`` for the others, ``-`` for none."""
    if not isinstance(found, list) or not found:
        return '-'
    last = found[-1] if isinstance(found[-1], dict) else {}
    text = _cell('%s:%s' % (last.get('author') or '(nobody)', last.get('kind') or '?'), 24)
    return text + (' +%d' % (len(found) - 1) if len(found) > 1 else '')


def _last_kind(marker):
    """The last marker's kind; a reaper's reset reads ``reset (reaped)`` so an operator tells it from a run's own end (D14)."""
    if not marker:
        return '-'
    kind = marker.get('kind', '-')
    text = 'reset (reaped)' if kind == 'reset' else kind
    return '%s %s' % (GLYPHS[kind], text) if kind in GLYPHS else text


def _cost(cost):
    """``$0.66`` (the stated cost of the item's runs; ``+`` when some runs stated none), or ``-``."""
    if not isinstance(cost, dict) or cost.get('cost_usd') is None:
        return '-'
    partial = '+' if cost.get('priced_runs', 0) < cost.get('runs', 0) else ''
    return '$%.2f%s' % (cost['cost_usd'], partial)


def why_held(item):
    """The reason code of an ineligible board item with the fact behind it: blocked by whom, waiting until
    when, parked after how many attempts, running where and since when (its start marker)."""
    reason = item.get('reason', '')
    marker = item.get('last_marker') or {}
    fields = marker.get('fields') or {}
    if reason == 'blocked':
        return reason + ' by ' + ', '.join('#%s' % n for n in item.get('open_blockers') or [])
    if reason == 'retry_wait':
        return reason + ' until %s' % item.get('not_before')
    if reason == 'parked':
        return reason + ' after %s attempts' % item.get('attempts')
    if reason == 'rounds_spent':
        pull = item.get('pull') or {}
        return '%s: %s had %s rounds (cap %s)' % (reason, pull.get('ref'), pull.get('rounds'), pull.get('max_rounds'))
    if reason == 'awaiting_review':
        return '%s: %s, no review or failing check since its last round' % (reason, (item.get('pull') or {}).get('ref'))
    if reason == 'unreadable':
        return '%s: %s' % (reason, item.get('unreadable') or 'the board could not read all of it')
    if reason == 'unroutable':
        return '%s: %s' % (reason, item.get('unroutable') or 'no configured master offers its agent profile')
    if reason == 'budget_spent':
        return '%s: %s' % (reason, item.get('budget_spent') or 'its runs spent the item budget')
    if reason == 'running' and marker.get('kind') == 'start':
        where = '%s/%s' % (fields['host'], fields['master']) if fields.get('host') and fields.get('master') else 'a worker'
        return '%s: %s on %s since %s (%s ago, by its start marker)' % (
            reason, fields.get('unit') or 'its run', where, marker.get('at'), _age(marker.get('age_s')))
    if reason == 'done' and fields.get('artifact'):
        return '%s (%s)' % (reason, fields['artifact'])
    return reason


def dispatch_outcome(items, number, mode='apply', launched=None, refused=None, failed=None, assignments=None,
                     readable=True, error=''):
    """What a hand dispatch did with its one item: ``{ok, text}``. ``ok`` only when it launched (apply)
    or would launch (plan); otherwise ``text`` is the refusal with its reason."""
    number = int(number)
    mine = [r for r in (launched if mode == 'apply' else assignments) or [] if int(r.get('number') or 0) == number]
    if mine:
        r = mine[0]
        verb = 'launched' if mode == 'apply' else 'would launch'
        unit = r.get('unit') or 'task-%s' % number
        text = '#%s %s as %s on %s/%s' % (number, verb, unit, r.get('worker'), r.get('master'))
        if r.get('start') == 'failed':     # launched is not started (D20): a script must see it as a failure
            return {'ok': False, 'text': text + ', and it ' + r.get('start_text', 'failed to start')}
        return {'ok': True, 'text': text + (': ' + r['start_text'] if r.get('start_text') else '')}
    for r in failed or []:
        if int(r.get('number') or 0) == number:
            return {'ok': False, 'text': '#%s failed to launch on %s/%s: %s' % (number, r.get('worker'), r.get('master'), r.get('why'))}
    for r in refused or []:
        if int(r.get('number') or 0) == number:
            return {'ok': False, 'text': '#%s refused (%s): %s' % (number, r.get('stage'), r.get('why'))}
    entry = next((it for it in items or [] if int(it.get('number') or 0) == number), None)
    if entry is None and not readable:
        return {'ok': False, 'text': '#%s refused: the board could not be read: %s' % (number, error or 'no reason given')}
    if entry is None:
        return {'ok': False, 'text': '#%s refused: it is not on the board' % number}
    if not entry.get('eligible'):
        return {'ok': False, 'text': '#%s refused: %s' % (number, why_held(entry))}
    return {'ok': False, 'text': '#%s was not launched: no usable master (see the plan above)' % number}


def pull_items(items, ref):
    """The item numbers whose next run continues the pull request ``ref`` (``_core.dispatch.pr_loop.continuing``)."""
    if not isinstance(items, list):
        raise AnsibleFilterError('pull_items expects the board_items of board_info')
    if not isinstance(ref, str):
        raise AnsibleFilterError('pull_items expects the pull request as a string (owner/name#N)')
    return continuing(items, ref)


def start_line(row):
    """One launched run and whether it started: ``task-1 on w1/agent1: failed to start: <the runner's reason>``."""
    if not isinstance(row, dict):
        raise AnsibleFilterError('start_line expects a launched row of the dispatch report')
    return '%s on %s/%s: %s' % (row.get('unit'), row.get('worker'), row.get('master'), row.get('start_text') or 'launched')


# the reasons of finished work: the plan table says each in one line, however many items
FINISHED = ('done', 'closed')


def plan_table(plan, items=None):
    """Which item would go where, and why each other item would not."""
    if not isinstance(plan, dict):
        raise AnsibleFilterError('plan_table expects the result of fleet.dispatch.place')
    rows = []
    for a in plan.get('assignments', []):
        route = a.get('route') or {}
        asked = ' '.join('%s=%s' % (k, route[k]) for k in ('agent', 'model', 'effort') if route.get(k))
        where = '%s/%s%s' % (a.get('worker'), a.get('master'), ' (not probed)' if a.get('probed') is False else '')
        rows.append(['#%s' % a['number'], 'launch', where + (' (%s)' % asked if asked else ''), _cell(a.get('title'), 40)])
    for u in plan.get('unplaced', []):
        rows.append(['#%s' % u['number'], 'hold', '-', u.get('why', '')])
    if isinstance(items, dict):
        items = board_table(items)
    finished = {}
    for it in items or []:
        if it.get('eligible'):
            continue
        if it.get('reason') in FINISHED:
            finished.setdefault(it['reason'], []).append(it)
        else:
            rows.append(['#%s' % it.get('number'), 'skip', '-', why_held(it)])
    for reason in FINISHED:             # finished work holds no decision: one line a reason, not one an item
        done = finished.get(reason) or []
        if len(done) == 1:
            rows.append(['#%s' % done[0].get('number'), 'skip', '-', why_held(done[0])])
        elif done:
            rows.append(['', 'skip', '-', '%s: %d items (finished; each in the board table)' % (reason, len(done))])
    for d in plan.get('dark', []):
        rows.append(['', 'dark', '%s/%s' % (d.get('worker'), d.get('master')),
                     '%s %s' % (d.get('source'), dark_until(d.get('source'), d.get('reset_at')))])
    for g in plan.get('unprobed', []):
        rows.append(['', 'unprobed', '%s/%s' % (g.get('worker'), g.get('master')), _cell(g.get('why'), 80)])
    return _table(['item', 'decision', 'where', 'why'], rows)


def place(candidates, masters):
    """Place candidates on the masters with the most headroom (``_core.dispatch.plan.place``)."""
    if not isinstance(candidates, list) or not isinstance(masters, list):
        raise AnsibleFilterError('place expects a list of candidates and a list of masters')
    return _place(candidates, masters)


def run_worker(marker, probes):
    """The inventory worker of a start marker's run, through the probe (``_core.dispatch.run_host.run_worker``)."""
    if not isinstance(marker, dict) or not isinstance(probes, list):
        raise AnsibleFilterError('run_worker expects the start marker fields and a list of probe answers')
    return _run_worker(marker, probes)


def credential_account(credentials):
    """A master's default capacity account: a short fingerprint of its agent credentials (``_core.outcome.capacity``)."""
    if credentials is None:
        return ''
    if not isinstance(credentials, dict):
        raise AnsibleFilterError('credential_account expects the agent credentials as a dict of NAME: value')
    return _credential_account(dict((str(k), str(v)) for k, v in credentials.items()))


def runner_exit_names(codes):
    """The runner's word for each of ``codes`` that it exits with (``_core.outcome.exits``), code -> word."""
    if not isinstance(codes, (list, tuple, range)):
        raise AnsibleFilterError('runner_exit_names expects a list of exit codes')
    wanted = set(int(c) for c in codes)
    return dict((code, word) for code, word in sorted(_EXIT_NAMES.items()) if code in wanted)


class FilterModule(object):
    def filters(self):
        return {
            'status_table': status_table,
            'plan_table': plan_table,
            'place': place,
            'runner_exit_names': runner_exit_names,
            'dispatch_outcome': dispatch_outcome,
            'start_line': start_line,
            'pull_items': pull_items,
            'run_worker': run_worker,
            'credential_account': credential_account,
        }
