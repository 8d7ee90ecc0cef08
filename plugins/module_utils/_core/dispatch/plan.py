# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From a board read to a plan: every item assessed, every candidate placed. Pure, no I/O.

This is the one place that turns the queue into decisions for *both* dispatch paths -- the
sweeper and the hand dispatch call the same functions through ``board_info`` and the shared
dispatch tasks (D15: a guard living only in one consumer cannot see the other path).

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/dispatch/plan.py``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .announce import capacity_deaths
from ..outcome.capacity import share_by_account
from ..board.cost import run_cost, spend_by_account_day, spend_by_master
from ..outcome.account_budget import ACCOUNT_ENV, account_key, darken as budget_darken
from .eligibility import evaluate, ignored_reopens, run_durations
from .item_budget import held_by, left_env, remaining
from .pr_loop import DEFAULT_MAX_ROUNDS, rounds_env
from ..board.markers import human_markers, markers_of
from ..board.model import format_time, to_jsonable
from ..board.naming import lease_name, oldest_wins, unit_name
from .route import PROFILE_ENV, offers, ordered, priority_rank, route_env, route_of


def _marker_dict(marker, now) -> Optional[Dict[str, Any]]:
    if marker is None:
        return None
    at = getattr(marker, 'at', None)
    age = None
    if at is not None and now is not None:
        age = int((now - at).total_seconds())
    return {
        'kind': marker.kind,
        'at': format_time(at),
        'age_s': age,
        'fields': to_jsonable(getattr(marker, 'fields', {}) or {}),
    }


def assess(items, *, now, ready='Ready', max_attempts=3, agents=None, item_budget=None,
           max_rounds=DEFAULT_MAX_ROUNDS) -> List[Dict[str, Any]]:
    """Every item with its verdict, as JSON-ready dicts (the ``items`` of ``board_info``). ``agents``:
    the agent profiles the fleet's masters offer (``_core.dispatch.route.unroutable``; None: not judged).
    ``item_budget``: the per-item cap (``_core.dispatch.item_budget``; None: none). ``max_rounds``: the round cap on
    a continued pull request (``_core.dispatch.pr_loop``; None: none)."""
    out = []
    for item in items:
        markers = markers_of(item)      # parsed once per item: every field below reads the same markers
        verdict = evaluate(item, now=now, ready=ready, max_attempts=max_attempts, markers=markers, agents=agents,
                           item_budget=item_budget, max_rounds=max_rounds)
        spend = verdict.spend
        out.append({
            'id': item.id,
            'number': item.number,
            'repo': item.repo,
            'title': item.title,
            'url': item.url,
            'state': item.state,
            'status': item.status,
            'eligible': bool(verdict.eligible),
            'reason': verdict.reason,
            'holds': list(verdict.holds),
            'reopened': bool(verdict.reopened),
            'attempts': verdict.attempts,
            'max_attempts': max_attempts,
            'not_before': format_time(getattr(verdict, 'not_before', None)),
            'last_marker': _marker_dict(verdict.last_marker, now),
            'blockers': [{'number': b.number, 'repo': b.repo, 'state': b.state} for b in item.blockers],
            'open_blockers': list(getattr(verdict, 'open_blockers', []) or []),
            'artifacts': to_jsonable(item.artifacts),
            'run_cost': run_cost(markers),
            'spend_by_master': spend_by_master(markers),   # every run, by the master its close-out names
            'spend_by_account_day': spend_by_account_day(markers),   # an account's daily budget
            'human_markers': human_markers(item),
            'ignored_reopens': [dict(r, at=format_time(r['at'])) for r in ignored_reopens(item)],
            'chain': getattr(verdict, 'chain', None),   # after a handoff marker: its chain's last hop
            'run_durations': run_durations(markers, exclude=('reset',)),   # the reaper's threshold (_core.dispatch.reaper)
            'unreadable': getattr(item, 'unreadable', '') or '',
            'capacity_deaths': capacity_deaths(markers),
            'route': route_of(item),
            'unroutable': verdict.unroutable,
            'spend': spend.fields() if spend is not None else None,
            'item_budget': verdict.item_budget.fields() if verdict.item_budget else {},
            'budget_left': remaining(verdict.item_budget, spend).fields() if verdict.item_budget else {},
            'budget_spent': verdict.budget_spent,
            'budget_held_by': held_by(verdict.item_budget, spend, route_of(item)['agent']),
            'budget_field': to_jsonable(getattr(item, 'budget', None)),
            'budget_note': verdict.budget_note,
            'pull': verdict.pull,   # the open pull request the next run continues (_core.dispatch.pr_loop)
            'priority': to_jsonable(getattr(item, 'priority', None)),
            'priority_rank': priority_rank(getattr(item, 'priority', None)),
            'created_at': format_time(getattr(item, 'created_at', None)),
        })
    return out


def candidates(assessed) -> List[Dict[str, Any]]:
    """The eligible items, by priority, then age, then board order (``_core.dispatch.route.ordered``)."""
    return ordered(entry for entry in assessed if entry['eligible'])


def _headroom_key(master):
    """Most headroom first: fewest live runs, then lowest load per CPU, then most memory.

    Unknown figures (a probe that did not answer) sort as if the master were idle: guards
    fail open, and a blind spot must not become a refusal.
    """
    head = master.get('headroom') or {}
    live = head.get('live_runs') or 0
    cpus = head.get('cpus') or 1
    load = head.get('load1')
    load = 0.0 if load is None else float(load) / float(cpus)
    mem = head.get('mem_available_kb')
    mem = 0 if mem is None else -int(mem)
    return (live, load, mem, master.get('worker', ''), master.get('master', ''))


def _no_master_why(agent, usable, dark) -> str:
    if not usable and not agent:
        return 'no usable master: every master is dark or none is configured'
    dark_ones = [m for m in dark if offers(m, agent)]
    return ('no usable master offers the agent profile %r (%d dark one(s) do; a routed item runs on no other agent)'
            % (agent, len(dark_ones)))


def place(cands, masters) -> Dict[str, Any]:
    """Place candidates on masters; returns ``{'assignments': [...], 'unplaced': [...], 'dark': [...]}``.

    ``masters`` are dicts ``{worker, master, dark, source, reset_at, agents, headroom: {live_runs,
    load1, cpus, mem_available_kb}}``. Candidates go in priority order, then age
    (``_core.dispatch.route.ordered``): when masters are short the highest are placed first, on the
    emptiest. An item with a route goes only to a master whose ``agents`` offer its profile, with
    the model and effort it asks for (``agent``, ``route``). Each placement counts as one more live
    run on the chosen master before the next candidate is placed, so a batch spreads across the
    fleet by headroom instead of piling onto one box -- without any cap (D13).
    """
    usable = []
    dark = []
    for m in masters:
        if m.get('dark'):
            dark.append({
                'worker': m.get('worker'), 'master': m.get('master'),
                'source': m.get('source'),
                'reset_at': m.get('reset_at') or 'unknown',
                'why': m.get('why', ''), 'agents': list(m.get('agents') or []),
            })
            continue
        entry = dict(m)
        entry['headroom'] = dict(m.get('headroom') or {})
        usable.append(entry)
    assignments = []
    unplaced = []
    for cand in ordered(cands):
        route = dict(cand.get('route') or {})
        agent = str(route.get('agent') or '').strip().lower()
        able = [m for m in usable if offers(m, agent)]
        if not able:
            unplaced.append({'number': cand['number'], 'repo': cand.get('repo', ''),
                             'why': _no_master_why(agent, usable, dark)})
            continue
        best = min(able, key=_headroom_key)
        assignments.append({'number': cand['number'], 'repo': cand.get('repo', ''),
                            'title': cand.get('title', ''),
                            'worker': best.get('worker'), 'master': best.get('master'),
                            'agent': agent or (list(best.get('agents') or []) or [''])[0], 'route': route,
                            'account': account_key(best)})
        head = best['headroom']
        head['live_runs'] = (head.get('live_runs') or 0) + 1
    return {'assignments': assignments, 'unplaced': unplaced, 'dark': dark}


# --------------------------------------------------------------------------------------------
# The guarded dispatch path: the pure steps between the lease, the
# probe, the capacity read and the launch. The role runs them through the ``fleet.dispatch.guard``
# action, so the sweep and the hand dispatch share exactly this code.
#
# Every step takes the candidates still admitted and returns ``{'admitted': [...], 'refused':
# [...]}``; a refusal is ``{number, repo, unit, stage, why}`` and is only ever *logged* (a
# refusal writes nothing to the board). A refusal needs positive evidence: a lease another
# owner holds, a unit the probe saw live. A blind spot (a probe that failed) is reported, never
# turned into a refusal.

def _refusal(cand, stage, why):
    """One refusal record. D6: a refusal writes nothing to the board -- the caller logs it on
    stderr -- because eligibility reads the last marker, so a refusal marker would be a latch."""
    return {'number': cand.get('number'), 'repo': cand.get('repo', '') or '', 'unit': cand.get('unit'),
            'stage': stage, 'why': why}


def name_candidates(cands, board_id='') -> Dict[str, Any]:
    """Give each candidate its unit name (``_core.board.naming.unit_name``, D4: zero entropy) and its lease
    name, the unit name in the board's namespace (``_core.board.naming.lease_name``: two boards on one
    controller never share a lock). A candidate whose identity does not make a unit name is refused."""
    admitted, refused = [], []
    for cand in cands or []:
        entry = dict(cand)
        try:
            entry['unit'] = unit_name(cand.get('number'), cand.get('repo', '') or '')
            entry['lease_name'] = lease_name(entry['unit'], board_id)
        except ValueError as exc:
            refused.append(_refusal(entry, 'name', 'no unit name: %s' % exc))
            continue
        admitted.append(entry)
    return {'admitted': admitted, 'refused': refused, 'warnings': []}


def gate_leases(cands, leases, enabled=True) -> Dict[str, Any]:
    """Keep the candidates whose lease this dispatcher holds (third layer).

    ``leases`` are the ``fleet.dispatch.mutex`` answers (one per candidate unit, any order).
    ``acquired: false`` is a refusal: another dispatcher holds the item from its probe to its
    launch. A degraded lease (the store failed open) is admitted; the lookup warned about it. A candidate
    with no answer at all is admitted with a warning (no positive evidence of a holder).
    ``enabled=False`` is the test flag of D15's corollary: the production path minus the lease.
    """
    warnings = []
    if not enabled:
        admitted = [dict(c, lease=None) for c in cands or []]
        if admitted:
            warnings.append('the lease is disabled (dispatch_lease_enabled=false): only the probe and the unit name '
                            'guard %s against a concurrent dispatcher' % ', '.join(c['unit'] for c in admitted))
        return {'admitted': admitted, 'refused': [], 'warnings': warnings}
    by_name = dict((lease.get('name'), lease) for lease in leases or [] if isinstance(lease, dict))
    admitted, refused = [], []
    for cand in cands or []:
        lease = by_name.get(cand.get('lease_name') or cand['unit'])
        if lease is None:
            warnings.append('%s: no lease answer; proceeding without one (a guard fails open)' % cand['unit'])
            admitted.append(dict(cand, lease=None))
        elif lease.get('acquired') is True:
            # a degraded lease is admitted without a word here: the mutex lookup that answered it
            # already warned once, with the failure and the fix (one warning per fact)
            admitted.append(dict(cand, lease=dict(lease)))
        else:
            refused.append(_refusal(cand, 'lease', 'another dispatcher holds its lease: %s' % (
                lease.get('why') or 'held by %s until %s' % (lease.get('holder'), lease.get('expires_at')))))
    return {'admitted': admitted, 'refused': refused, 'warnings': warnings}


def gate_fence(cands, lost) -> Dict[str, Any]:
    """The fencing check just before the launch (D4): a candidate whose lease this dispatcher no longer holds
    under its token (``lost``: unit -> why, from ``_store.lease.SqlLeaseStore.fence``) is refused and launched
    nowhere; every other one goes on. A candidate without a held token (the lease disabled or failed open) is not
    fenced: there is nothing to compare."""
    admitted, refused = [], []
    for cand in cands or []:
        why = (lost or {}).get(cand.get('unit'))
        if why:
            refused.append(_refusal(cand, 'lease', why))
        else:
            admitted.append(cand)
    return {'admitted': admitted, 'refused': refused, 'warnings': []}


def _target(record):
    return record.get('target') or {}


def _failed(record):
    return record.get('status', 'ok') != 'ok'


def survey(probes) -> Dict[str, Any]:
    """The fleet's live runs from the ``units_info`` answers, one per master.

    ``probes`` are the ``units_info`` answer records, ``target`` ``{worker, master}``. Returns
    ``{live: {unit: [units...]}, duplicates: [{unit, number, repo, keep, stop}], blind: [...],
    masters: {'worker/master': live count}, spooled: {unit: [close-outs waiting on a master]}}``. Each unit carries ``worker`` and ``host`` (the worker)
    and ``master``. Duplicates -- one unit name live on more than one master -- are resolved by
    ``_core.board.naming.oldest_wins`` (wall-clock start across workers, monotonic within one). A unit
    whose name does not parse as an item is still counted as live for its master.
    """
    live, blind, counts, spooled = {}, [], {}, {}
    for res in probes or []:
        where = _target(res)
        worker, master = where.get('worker'), where.get('master')
        if res.get('status') == 'skipped':
            continue    # not probed on purpose (nothing was left to launch): not a blind master
        if _failed(res):
            blind.append({'worker': worker, 'master': master,
                          'why': 'probe failed: %s' % (res.get('msg') or res.get('status'))})
            continue
        units = res.get('units') or []
        counts['%s/%s' % (worker, master)] = len(units)
        for row in res.get('spooled') or []:
            if isinstance(row, dict) and row.get('unit'):
                spooled.setdefault(row['unit'], []).append(dict(row, worker=worker, master=master))
        for unit in units:
            entry = dict(unit, worker=worker, host=worker, master=master)
            live.setdefault(entry.get('name'), []).append(entry)
    duplicates = []
    for name in sorted(live):
        units = live[name]
        if len(units) < 2:
            continue
        keep, stop = oldest_wins(units)
        item = keep.get('item') or {}
        duplicates.append({'unit': name, 'number': item.get('number'), 'repo': item.get('repo', ''),
                           'keep': keep, 'stop': stop})
    return {'live': live, 'duplicates': duplicates, 'blind': blind, 'masters': counts, 'spooled': spooled}


def _where(unit):
    return '%s/%s' % (unit.get('worker'), unit.get('master'))


def gate_probe(cands, surveyed) -> Dict[str, Any]:
    """Drop the candidates already live anywhere (D4: the check inside the lock sees the winner's unit).

    A master whose probe failed is a blind spot: it is warned about and excluded from placement
    (``masters_from``), but it refuses nothing (D5: a refusal needs positive evidence)."""
    warnings = ['%s/%s: %s; it gets no work this cycle and its live runs are unknown' % (b['worker'], b['master'], b['why'])
                for b in surveyed.get('blind', [])]
    admitted, refused = [], []
    for cand in cands or []:
        units = surveyed.get('live', {}).get(cand['unit']) or []
        if units:
            where = ', '.join('%s since %s' % (_where(u), u.get('started_at') or 'unknown') for u in units)
            refused.append(_refusal(cand, 'probe', 'running elsewhere: %s is live on %s' % (cand['unit'], where)))
        else:
            admitted.append(cand)
    return {'admitted': admitted, 'refused': refused, 'warnings': warnings}


def repairs(surveyed, owner='', now=None) -> List[Dict[str, Any]]:
    """The stops that repair coexisting duplicates, one per unit to stop, with the note the
    runner reads to know the stop was deliberate (format in docs/dispatch.md)."""
    out = []
    for dup in surveyed.get('duplicates', []):
        keep = dup['keep']
        for unit in dup['stop']:
            out.append({
                'worker': unit.get('worker'), 'master': unit.get('master'), 'unit': dup['unit'],
                'invocation_id': unit.get('invocation_id'),
                'note': {
                    'reason': 'duplicate',
                    'unit': dup['unit'],
                    'invocation_id': unit.get('invocation_id'),
                    'kept': {'worker': keep.get('worker'), 'master': keep.get('master'),
                             'invocation_id': keep.get('invocation_id'), 'started_at': keep.get('started_at')},
                    'stopped_started_at': unit.get('started_at'),
                    'by': owner,
                    'at': format_time(now) if now is not None else None,
                },
            })
    return out


def dark_until(source, reset_at) -> str:
    """How long a dark master stays dark, short, for a table row (the long words are ``dark_why``): the stated
    reset; ``revoked`` never clears by itself; the others without a stated reset clear after their cooldown."""
    if reset_at not in (None, '', 'unknown'):
        return 'until %s' % reset_at
    if source == 'revoked':
        return 'until a human clears it (fleet.dispatch.clear_capacity)'
    return 'no reset stated: looked at again after the cooldown'


def dark_why(source, reset_at) -> str:
    """The words for a dark master (two kinds of dark, opposite remedies)."""
    if source == 'revoked':
        return 'revoked: gets nothing until a human clears the capacity state (reset time %s)' % (reset_at or 'unknown')
    if source == 'rate_limit':
        return 'rate-limited: gets nothing until %s' % (reset_at or 'unknown')
    if source == 'board_unreachable':
        return ('the runner here could not open the board (board_unreachable): gets nothing until %s, then the next '
                'run that starts cleanly clears it; fix the runner\'s board (worker_runner_board, FLEET_BOARD_DSN)'
                % (reset_at or 'unknown'))
    if source == 'update_failed':
        return ('runner could not update itself: gets nothing until the cooldown ends or fleet.dispatch.worker '
                'reinstalls it')
    if source == 'budget':
        return 'the agent account spent its daily budget (budget): gets nothing until %s, the next day' % (reset_at or 'unknown')
    if source == 'agent_missing':
        return ('the agent CLI is not on this master\'s run PATH (agent_missing): gets nothing until fleet.dispatch.worker '
                'installs it (worker_agent_packages) or the cooldown ends')
    return 'dark (%s) until %s' % (source or 'unknown source', reset_at or 'unknown')


def masters_from(masters, capacity, surveyed=None) -> Dict[str, Any]:
    """The placement input: every configured master with its capacity answer and its probed
    live-run count (the probe's count wins: it was read inside the lease).

    ``capacity`` are the ``capacity_info`` answer records (``target`` ``{worker, master}``).
    A master whose capacity read or probe failed is left out of placement and warned about; it is
    not dark (no positive evidence), just unusable this cycle.
    """
    by_key = dict(('%s/%s' % (_target(r).get('worker'), _target(r).get('master')), r) for r in capacity or [])
    blind = set('%s/%s' % (b['worker'], b['master']) for b in (surveyed or {}).get('blind', []))
    counts = (surveyed or {}).get('masters', {})
    usable, warnings = [], []
    for m in masters or []:
        key = '%s/%s' % (m.get('worker'), m.get('master'))
        if key in blind:
            continue
        res = by_key.get(key)
        if res is None or _failed(res):
            warnings.append('%s: capacity not read (%s); it gets no work this cycle'
                            % (key, (res or {}).get('msg') or 'no answer'))
            continue
        head = dict(res.get('headroom') or {})
        if key in counts:
            head['live_runs'] = counts[key]
        entry = {'worker': m.get('worker'), 'master': m.get('master'), 'dark': bool(res.get('dark')),
                 'source': res.get('source'), 'reset_at': res.get('reset_at'), 'headroom': head}
        if m.get('account'):
            entry['account'] = m['account']
        if m.get('agents') is not None:
            entry['agents'] = list(m['agents'])
        usable.append(entry)
    # D8: a provider limit belongs to the account, so every master sharing it is dark with it
    usable = share_by_account(usable)
    for entry in usable:
        if entry['dark']:
            entry['why'] = dark_why(entry['source'], entry['reset_at'])
            if entry.get('dark_via'):
                entry['why'] += ' (account %s, as on %s)' % (entry.get('account'), entry['dark_via'])
            warnings.append('%s/%s is dark, %s' % (entry['worker'], entry['master'], entry['why']))
    return {'masters': usable, 'warnings': warnings}


def gate_place(cands, masters, capacity, surveyed=None, items=None, now=None, account_budget=None) -> Dict[str, Any]:
    """Place the admitted candidates on the master with the most measured headroom (no cap);
    dark masters get nothing. A candidate no master can take is refused (logged). With no candidate the plan
    still names the dark masters (plan mode's table shows them), without a warning per master.
    ``account_budget`` (a ``Budget``) with the board's ``items`` and ``now``: an account whose runs today spent it
    is dark, source ``budget``, until the next day (``_core.outcome.account_budget``)."""
    found = masters_from(masters, capacity, surveyed)
    if account_budget and now is not None:
        found['masters'] = budget_darken(found['masters'], items or [], account_budget, now)
        for entry in found['masters']:
            if entry.get('budget_why'):
                entry['why'] = dark_why('budget', entry['reset_at']) + ': ' + entry['budget_why']
                found['warnings'].append('%s/%s is dark, %s' % (entry['worker'], entry['master'], entry['why']))
    if not cands:
        return {'admitted': [], 'refused': [], 'warnings': [], 'plan': place([], found['masters']), 'masters': found['masters']}
    plan = place(cands, found['masters'])
    by_number = dict(((c.get('number'), c.get('repo', '') or ''), c) for c in cands or [])
    admitted, refused = [], []
    for a in plan['assignments']:
        cand = by_number[(a['number'], a.get('repo', '') or '')]
        admitted.append(dict(cand, worker=a['worker'], master=a['master'], agent=a['agent'], account=a['account']))
    for u in plan['unplaced']:
        cand = by_number[(u['number'], u.get('repo', '') or '')]
        refused.append(_refusal(cand, 'place', u['why']))
    return {'admitted': admitted, 'refused': refused, 'warnings': found['warnings'], 'plan': plan,
            'masters': found['masters']}


def _workdirs(workspaces):
    """unit -> workspace path from the ``workspace`` answer records (``target``: a placed candidate)."""
    out, why = {}, {}
    for res in workspaces or []:
        cand = _target(res)
        unit = cand.get('unit')
        if _failed(res) or not res.get('path'):
            why[unit] = res.get('msg') or ('unreachable' if res.get('status') == 'unreachable' else 'no workspace path')
        else:
            out[unit] = res['path']
    return out, why


def _fill(text, cand, workdir):
    # workdir None: the workspace is made in the same call as the launch (worker_launch fills {workdir} there)
    text = (str(text).replace('{number}', str(cand.get('number'))).replace('{repo}', cand.get('repo', '') or '')
            .replace('{unit}', cand.get('unit') or ''))
    return text if workdir is None else text.replace('{workdir}', workdir)


def batches(admitted, workspaces=None, command=None, setenv=None, owner='') -> Dict[str, Any]:
    """One launch call per master with work (a user manager is per master, so a worker with two
    busy masters gets two calls -- never one per item), each with the launch-ready items.

    ``workspaces`` are the ``workspace`` answer records (one per run); a candidate whose
    workspace failed is refused here and launched nowhere. ``command`` is the run's argv with
    ``{number}``, ``{repo}``, ``{unit}`` and ``{workdir}`` filled in per item. Each run also gets
    ``FLEET_ITEM``, ``FLEET_REPO``, ``FLEET_UNIT``, ``FLEET_DISPATCH_OWNER`` and the lease's fencing
    token ``FLEET_LEASE_FENCE`` (empty without a lease) as non-secret environment, and an item with a
    route the names its agent reads the model and effort from (``_core.dispatch.route.route_env``;
    they win over ``setenv``: the item asked) and the agent profile it was placed for (``PROFILE_ENV``),
    and an item with an item budget what is left of it
    (``budget_left``, ``_core.dispatch.item_budget.left_env``), and an item that continues a pull request the round
    cap it was held to (``_core.dispatch.pr_loop.rounds_env``).
    """
    workdirs, broken = _workdirs(workspaces) if workspaces is not None else ({}, {})
    groups, index, refused = [], {}, []
    for cand in admitted or []:
        unit = cand.get('unit')
        if workspaces is not None and unit not in workdirs:
            refused.append(_refusal(cand, 'workspace', 'no workspace on %s/%s: %s' % (
                cand.get('worker'), cand.get('master'), broken.get(unit, 'not prepared'))))
            continue
        workdir = workdirs.get(unit)
        key = (cand['worker'], cand['master'])
        if key not in index:
            index[key] = len(groups)
            groups.append({'worker': cand['worker'], 'master': cand['master'], 'items': [], 'launch': []})
        lease = cand.get('lease') or {}
        env = dict(setenv or {})
        env.update({'FLEET_ITEM': str(cand.get('number')), 'FLEET_REPO': cand.get('repo', '') or '', 'FLEET_UNIT': unit,
                    'FLEET_DISPATCH_OWNER': owner or '',
                    'FLEET_LEASE_FENCE': '' if lease.get('token') is None else str(lease.get('token'))})
        env.update(route_env(cand.get('route') or {}, cand.get('agent') or ''))
        if cand.get('agent'):
            env[PROFILE_ENV] = str(cand['agent'])   # the profile it was placed for: its worker may offer several
        if cand.get('account'):
            env[ACCOUNT_ENV] = str(cand['account'])   # the run names its account in its markers (its daily budget)
        env.update(left_env(cand.get('budget_left')))   # what is left of the item's budget (_core.dispatch.item_budget)
        env.update(rounds_env(cand.get('pull')))   # the round cap it was held to (_core.dispatch.pr_loop)
        groups[index[key]]['items'].append(dict(cand, workdir=workdir))
        groups[index[key]]['launch'].append({
            'number': cand.get('number'), 'repo': cand.get('repo', '') or '',
            'command': [_fill(part, cand, workdir) for part in (command or [])],
            'workdir': workdir, 'setenv': env,
        })
    return {'batches': groups, 'refused': refused, 'warnings': []}


def launch_report(launches) -> Dict[str, Any]:
    """The ``launch`` answer records (``target``: a batch, one per master): launched, refused by the
    unit name (the second layer of D4 caught a race the lease did not cover), failed.

    A skipped launch had no recorded PATH for its master (the run's PATH is explicit). A run whose
    workspace ``worker_launch`` could not prepare (``no-workspace``) is refused at the workspace step.
    """
    launched, refused, failed, warnings = [], [], [], []
    for res in launches or []:
        where = _target(res)
        label = '%s/%s' % (where.get('worker'), where.get('master'))
        status = res.get('status', 'ok')
        if status == 'skipped':
            for cand in where.get('items') or []:
                failed.append({'number': cand.get('number'), 'unit': cand.get('unit'), 'worker': where.get('worker'),
                               'master': where.get('master'), 'why': 'no PATH recorded for this master'})
                warnings.append('%s on %s: not launched: the master has no recorded PATH (~/.config/fleet-dispatch/path; '
                                'run the worker role, or set dispatch_run_path)' % (cand.get('unit'), label))
            continue
        if status != 'ok':
            why = res.get('msg') or 'unreachable'
            for cand in where.get('items') or []:
                failed.append({'number': cand.get('number'), 'unit': cand.get('unit'), 'worker': where.get('worker'),
                               'master': where.get('master'), 'why': why})
                warnings.append('%s on %s: launch failed: %s' % (cand.get('unit'), label, why))
            continue
        for entry in res.get('results') or []:
            row = {'number': entry.get('number'), 'repo': entry.get('repo'), 'unit': entry.get('unit'),
                   'worker': where.get('worker'), 'master': where.get('master'), 'reason': entry.get('reason'),
                   'invocation_id': entry.get('invocation_id')}
            if entry.get('reason') in ('launched', 'would-launch'):
                launched.append(row)
            elif entry.get('reason') in ('live', 'unloading'):
                refused.append(dict(row, stage='launch', why='the unit name %s is held on %s (%s)' % (
                    entry.get('unit'), label, entry.get('reason'))))
            elif entry.get('reason') == 'no-workspace':
                refused.append(dict(row, stage='workspace', why='no workspace on %s: %s' % (label, entry.get('stderr'))))
            else:
                failed.append(dict(row, why=entry.get('stderr') or 'failed to launch'))
    return {'launched': launched, 'refused': refused, 'failed': failed, 'warnings': warnings}
