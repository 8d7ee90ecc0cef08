# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
""""Why not?" for one item: every hold, every marker with its author, every start and whether it
counted, the blockers, the placement it would get now, and what its last run read. Pure, no I/O.

It calls the same ``evaluate`` and ``place`` the dispatch path calls (D15), so the answer is the
decision the next sweep would make, not a second opinion. Reads only; it never writes a marker (D6).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .eligibility import UNCOUNTED_ENDINGS, evaluate, ignored_reopens, last_reopen
from ..board.markers import TERMINAL, authored_markers
from ..board.model import format_time, parse_time, to_jsonable
from .item_budget import held_by, remaining
from .plan import place
from .pr_loop import DEFAULT_MAX_ROUNDS
from .route import priority_rank, route_gaps, route_of


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _markers_with_authors(item) -> List[Dict[str, Any]]:
    """Every marker in time order (the order ``markers_of`` uses), with the comment's author; a
    glyph-led comment that is not a marker (``not_marker_author``) is not one here either."""
    return [{'kind': m.kind, 'at': m.at, 'author': author, 'comment_id': m.comment_id,
             'fields': to_jsonable(m.fields or {})} for m, author in authored_markers(item)]


def _starts(markers, reopen_at, uncounted) -> List[Dict[str, Any]]:
    """Each start, its ending, and whether it spent an attempt (the rule of ``count_attempts``)."""
    out = []
    for index, marker in enumerate(markers):
        if marker['kind'] != 'start':
            continue
        ending = markers[index + 1] if index + 1 < len(markers) else None
        end_kind = ending['kind'] if ending is not None and ending['kind'] != 'start' else None
        if reopen_at is not None and (marker['at'] is None or marker['at'] < reopen_at):
            counted, why = False, 'before the reopen at %s: a reopen starts the count again' % format_time(reopen_at)
        elif end_kind in uncounted:
            counted, why = False, 'its run ended in a %s marker, which does not spend an attempt' % end_kind
        elif end_kind is not None and (ending.get('fields') or {}).get('pr') and ending['fields'].get('head_moved') is True:
            counted, why = False, 'a round: it moved the head of %s, which the round cap bounds' % ending['fields']['pr']
        elif end_kind is None:
            counted = True
            why = ('no ending yet (a live run, or an orphan the reaper has not reset)' if ending is None
                   else 'followed by another start with no ending between them')
        else:
            counted, why = True, 'its run ended in a %s marker' % end_kind
        out.append({'at': format_time(marker['at']), 'author': marker['author'],
                    'unit': marker['fields'].get('unit'), 'host': marker['fields'].get('host'),
                    'master': marker['fields'].get('master'), 'ending': end_kind,
                    'counted': counted, 'why': why})
    return out


def chain_hold_text(hold: str, chain: Dict[str, Any]) -> str:
    """Why a handoff marker holds the item: the chain's last hop, in words."""
    session = chain.get('session') or '?'
    if not chain.get('known'):
        return ('its last marker is a handoff from session %s, and the board does not know how that chain went on: a '
                'session chain carries the item until a later marker of its own (or a reopen)' % session)
    where = 'session %s (hop %s) on %s/%s' % (chain.get('tail'), chain.get('depth'), chain.get('host') or '?',
                                              chain.get('master') or '?')
    if hold == 'chain_stopped':
        return ('the chain it handed off to was stopped: %s was refused (%s); reopen the item to dispatch it again'
                % (where, chain.get('reason') or 'no reason recorded'))
    if chain.get('state') == 'open':
        return 'a session chain carries it: %s runs' % where
    return 'a session chain carries it: %s closed and handed off to %s, waiting for a runner' % (where, chain.get('handoff'))


def _hold_text(hold, verdict, item, max_attempts) -> str:
    last = verdict.last_marker
    if hold == 'unreadable':
        return 'the board could not read all of it (%s): every other reason would be judged on partial data' % (
            _get(item, 'unreadable', '') or 'no detail')
    if hold == 'deferred':
        return 'this read did not read its details (%s): it is judged on the cycle that does' % (
            _get(item, 'deferred', '') or 'no detail')
    if hold == 'done':
        return 'closed, and its last marker is a success'
    if hold == 'closed':
        return 'the item is closed (without a success marker after its last start)'
    if hold == 'running':
        fields = last.fields if last is not None else {}
        return 'its last marker is a start (%s on %s/%s at %s): a run is open' % (
            fields.get('unit') or 'a run', fields.get('host') or '?', fields.get('master') or '?', format_time(last.at))
    if hold in ('chained', 'chain_stopped'):
        return chain_hold_text(hold, verdict.chain or {})
    if hold == 'tombstone':
        return 'its last marker is a success but the item is still open: reopen it to run it again'
    if hold == 'retry_wait':
        return 'a retry marker holds it until %s' % format_time(verdict.not_before)
    if hold == 'parked':
        return '%s attempts reached the cap of %s: reopen the item (a reopen starts the count again) or raise the cap' % (
            verdict.attempts, max_attempts)
    if hold == 'budget_spent':
        return verdict.budget_spent
    if hold == 'rounds_spent':
        pull = verdict.pull or {}
        return ('%s had %s round(s) that moved its head, the cap is %s: review and merge it, close it (the next run starts '
                'fresh) or reopen the item' % (pull.get('ref'), pull.get('rounds'), pull.get('max_rounds')))
    if hold == 'awaiting_review':
        return (verdict.pull or {}).get('awaiting') or 'the last round is not answered yet'
    if hold == 'unroutable':
        return '%s: provision a worker with that profile (worker_runner_agent) or change the item\'s route' % verdict.unroutable
    if hold == 'blocked':
        return 'open blockers: %s' % ', '.join('#%s' % n for n in verdict.open_blockers)
    if hold == 'not_ready':
        return 'its status is %r, not the ready status' % (_get(item, 'status', '') or '')
    return hold


def masters_seen(masters: Optional[List[Dict[str, Any]]], record: Any, now: Any) -> Optional[List[Dict[str, Any]]]:
    """The configured ``masters`` as the last probing sweep saw them (``record``: its ``fleet.json``, ``{at,
    masters: [{worker, master, dark, source, reset_at, why, headroom}]}``), for placing one item by hand: a master
    the sweep saw dark stays dark with its source and why while its stated reset is ahead of ``now`` (a rate
    limit, an account's spent daily budget until the next day); one with no stated reset (revoked, unknown)
    stays dark; a master the record does not name is as configured (unprobed). ``record`` that is not a record:
    the masters as they are (D5)."""
    if masters is None or not isinstance(record, dict) or not isinstance(record.get('masters'), list):
        return masters
    when = parse_time(now)
    seen = dict(('%s/%s' % (r.get('worker'), r.get('master')), r) for r in record['masters'] if isinstance(r, dict))
    out = []
    for master in masters:
        entry = dict(master)
        got = seen.get('%s/%s' % (entry.get('worker'), entry.get('master')))
        if got is not None:
            if isinstance(got.get('headroom'), dict):
                entry['headroom'] = dict(got['headroom'])
            try:
                reset = parse_time(got.get('reset_at')) if got.get('reset_at') not in (None, 'unknown') else None
            except ValueError:
                reset = None    # a reset the record does not state readably: dark, as "unknown"
            if got.get('dark') and (reset is None or when is None or reset > when):
                why = got.get('why') or 'dark: %s' % (got.get('source') or 'unknown')
                entry.update(dark=True, source=got.get('source'), reset_at=got.get('reset_at') or 'unknown',
                             why='%s (the sweep at %s)' % (why, record.get('at') or 'an unknown time'))
        out.append(entry)
    return out


def explain(item: Any, *, now: Any, ready: Optional[str] = 'Ready', max_attempts: Optional[int] = 3,
            masters: Optional[List[Dict[str, Any]]] = None, uncounted: Any = UNCOUNTED_ENDINGS,
            agents: Any = None, item_budget: Any = None, max_rounds: Optional[int] = DEFAULT_MAX_ROUNDS) -> Dict[str, Any]:
    """Everything the dispatch path decides about ``item`` at ``now``, with the facts behind it.

    ``masters`` are the dicts ``place`` takes (``worker``, ``master``, ``dark``, ``agents``, ``headroom``);
    ``None`` means none were given, and the placement says so instead of guessing. ``agents``: the
    profiles the fleet offers (``evaluate``'s; ``None``: the route is judged by placement only).
    ``item_budget``: the per-item cap (``_core.dispatch.item_budget``; ``None``: none). ``max_rounds``: the round
    cap on a continued pull request (``_core.dispatch.pr_loop``; ``None``: none).
    """
    when = parse_time(now)
    verdict = evaluate(item, now=when, ready=ready, max_attempts=max_attempts, uncounted=uncounted, agents=agents,
                       item_budget=item_budget, max_rounds=max_rounds)
    route = route_of(item)
    markers = _markers_with_authors(item)
    reopen_at = last_reopen(item)
    holds = [{'reason': hold, 'why': _hold_text(hold, verdict, item, max_attempts)} for hold in verdict.holds]
    if verdict.reopened:
        holds_note = 'a reopen after the last marker outranks it: the last marker is not read'
    else:
        holds_note = ''

    number = _get(item, 'number')
    repo = _get(item, 'repo', '') or ''
    if not verdict.eligible:
        placement = {'placed': False, 'worker': None, 'master': None,
                     'why': 'not a candidate: %s' % verdict.reason}
    elif masters is None:
        placement = {'placed': False, 'worker': None, 'master': None,
                     'why': 'eligible; no masters were given, so no placement was computed'}
    else:
        plan = place([{'number': number, 'repo': repo, 'title': _get(item, 'title', ''), 'route': route}], masters)
        if plan['assignments']:
            got = plan['assignments'][0]
            live = [m for m in masters if not m.get('dark') and (not route['agent'] or route['agent'] in (m.get('agents') or ()))]
            chosen = [m for m in live if m.get('worker') == got['worker'] and m.get('master') == got['master']]
            head = (chosen[0].get('headroom') if chosen else None) or {}
            placement = {'placed': True, 'worker': got['worker'], 'master': got['master'],
                         'why': 'the most headroom of %d usable master(s) (%d dark): live runs %s, load %s over %s cpus, '
                                '%s kB memory available (unknown figures count as idle)' % (
                                    len(live), len(plan['dark']), head.get('live_runs', 'unknown'),
                                    head.get('load1', 'unknown'), head.get('cpus', 'unknown'),
                                    head.get('mem_available_kb', 'unknown'))}
            if route['agent']:
                placement['why'] += '; only masters offering the agent profile %r were considered' % route['agent']
            gaps = route_gaps(route, got.get('agent') or '')
            if gaps:
                placement['why'] += ('; its %s reaches the %s agent only as %s (its CLI reads no such variable)'
                                     % (' and '.join(gaps), got.get('agent') or 'unknown',
                                        ' and '.join('AGENT_' + g.upper() for g in gaps)))
        else:
            placement = {'placed': False, 'worker': None, 'master': None, 'why': plan['unplaced'][0]['why']}
        placement['dark'] = plan['dark']
        if plan['dark']:
            placement['why'] += '; dark: ' + '; '.join(
                '%s/%s %s' % (d['worker'], d['master'], d['why'] or d['source'] or 'dark') for d in plan['dark'])

    last_run = None
    for marker in reversed(markers):
        if marker['kind'] in TERMINAL:
            last_run = {'kind': marker['kind'], 'at': format_time(marker['at']), 'author': marker['author'],
                        'fields': marker['fields'],
                        'classify': 'on %s as %s: fleet-runner classify ~/.local/state/fleet-dispatch/runs/%s/capture.log' % (
                            marker['fields'].get('host') or 'its worker', marker['fields'].get('master') or 'its master',
                            marker['fields'].get('unit') or 'task-%s' % number)}
            break

    return {
        'number': number, 'repo': repo, 'title': _get(item, 'title', ''), 'url': _get(item, 'url', ''),
        'state': _get(item, 'state', ''), 'status': _get(item, 'status', ''),
        'eligible': bool(verdict.eligible), 'reason': verdict.reason,
        'holds': holds, 'reopened': bool(verdict.reopened), 'reopened_at': format_time(reopen_at), 'note': holds_note,
        'ignored_reopens': [dict(r, at=format_time(r['at'])) for r in ignored_reopens(item)],
        'markers': [dict(m, at=format_time(m['at'])) for m in markers],
        'attempts': verdict.attempts, 'max_attempts': max_attempts,
        'starts': _starts(markers, reopen_at, frozenset(uncounted or ())),
        'blockers': [{'number': _get(b, 'number'), 'repo': _get(b, 'repo', '') or '', 'state': _get(b, 'state'),
                      'blocks': _get(b, 'number') in verdict.open_blockers} for b in _get(item, 'blockers', None) or ()],
        'placement': placement,
        'route': route,
        'priority': to_jsonable(_get(item, 'priority', None)),
        'priority_rank': priority_rank(_get(item, 'priority', None)),
        'last_run': last_run,
        'chain': verdict.chain,
        'spend': verdict.spend.fields() if verdict.spend is not None else None,
        'item_budget': verdict.item_budget.fields() if verdict.item_budget else {},
        'budget_left': remaining(verdict.item_budget, verdict.spend).fields() if verdict.item_budget else {},
        'budget_held_by': held_by(verdict.item_budget, verdict.spend, route['agent']),
        'budget_field': to_jsonable(_get(item, 'budget', None)),
        'budget_note': verdict.budget_note,
        'pull': verdict.pull,
    }


def spend_line(ex: Dict[str, Any]) -> str:
    """What the item's runs since the last reopen stated they spent, against its item budget."""
    spend = ex.get('spend') or {}
    figures = '%s tokens, %s over %s run(s) (%s priced; a cost is never estimated)' % (
        spend.get('tokens') if spend.get('tokens') is not None else 'no',
        '$%s' % _money(spend['cost_usd']) if spend.get('cost_usd') is not None else 'no cost stated',
        spend.get('runs', 0), spend.get('priced_runs', 0))
    cap = ex.get('item_budget') or {}
    if not cap:
        return 'spend since the last reopen: %s; no item budget' % figures
    left = ex.get('budget_left') or {}
    limits = ', '.join(('%s tokens' % cap['tokens']) if k == 'tokens' else ('$%s' % _money(cap['usd']))
                       for k in ('tokens', 'usd') if k in cap)
    lefts = ', '.join(('%s tokens' % left['tokens']) if k == 'tokens' else ('$%s' % _money(left['usd']))
                      for k in ('tokens', 'usd') if k in left)
    held = (ex.get('budget_held_by') or {}).get('text')
    tail = '; held by %s' % held if held else ''
    return 'spend since the last reopen: %s; item budget %s, left %s%s' % (figures, limits, lefts, tail)


def _money(value: Any) -> str:
    return ('%.4f' % float(value or 0)).rstrip('0').rstrip('.') or '0'


def explain_lines(ex: Dict[str, Any]) -> List[str]:
    """The explanation as lines a human reads (the playbook prints these)."""
    lines = ['#%s %s -- %s (%s/%s)' % (ex['number'], ex['title'], 'ELIGIBLE' if ex['eligible'] else 'held: %s' % ex['reason'],
                                       ex['state'], ex['status'])]
    lines.append('holds (every one that applies, highest first):' if ex['holds'] else 'holds: none')
    lines.extend('  %s: %s' % (h['reason'], h['why']) for h in ex['holds'])
    if ex['note']:
        lines.append('  note: ' + ex['note'])
    lines.extend('  reopen at %s by %s ignored: %s' % (r['at'], r['actor'] or 'unknown', r['why'])
                 for r in ex.get('ignored_reopens') or ())
    lines.append('markers (%d, in order):' % len(ex['markers']))
    lines.extend('  %s %s by %s' % (m['at'], m['kind'], m['author'] or 'unknown') for m in ex['markers'])
    lines.append('attempts: %s of %s' % (ex['attempts'], ex['max_attempts']))
    lines.extend('  start %s by %s: %s -- %s' % (s['at'], s['author'] or 'unknown', 'counted' if s['counted'] else 'skipped', s['why'])
                 for s in ex['starts'])
    lines.append('blockers:' if ex['blockers'] else 'blockers: none')
    lines.extend('  #%s %s%s' % (b['number'], b['state'], ' (blocks)' if b['blocks'] else '') for b in ex['blockers'])
    lines.append(spend_line(ex))
    if ex.get('budget_note'):
        lines.append('budget field: %r -- %s' % (ex.get('budget_field'), ex['budget_note']))
    elif ex.get('budget_field') not in (None, ''):
        lines.append('budget field: %r -- each limit it names replaces the dispatcher\'s item budget' % (ex['budget_field'],))
    route = ex.get('route') or {}
    asked = ', '.join('%s %s' % (k, route[k]) for k in ('agent', 'model', 'effort') if route.get(k))
    lines.append('route: %s' % (asked or 'none asked (any master, the agent as provisioned)'))
    lines.append('priority: %s' % ('none (after every item with one, then by age)' if ex.get('priority_rank') is None
                                   else '%s (rank %g, lower first)' % (ex.get('priority'), ex['priority_rank'])))
    place_ = ex['placement']
    lines.append('placement now: %s -- %s' % ('%s/%s' % (place_['worker'], place_['master']) if place_['placed'] else 'none',
                                              place_['why']))
    chain = ex.get('chain')
    if chain and chain.get('known'):
        lines.append('chain after its last handoff: session %s -> %s (hop %s, %s)%s' % (
            chain.get('session'), chain.get('tail'), chain.get('depth'), chain.get('state'),
            '' if chain.get('alive') or chain.get('stopped') else ': it ended without a marker of its own, so the item is '
            'back in the queue'))
    lines.extend(pull_lines(ex.get('pull')))
    run = ex['last_run']
    if run:
        lines.append('last run: %s at %s (%s)' % (run['kind'], run['at'],
                                                  ', '.join('%s=%s' % (k, run['fields'][k]) for k in sorted(run['fields']))))
        lines.append('  classify its capture: ' + run['classify'])
    else:
        lines.append('last run: none closed')
    return lines


def pull_lines(pull: Optional[Dict[str, Any]]) -> List[str]:
    """The open pull request the next run continues, its round, threads and failing checks, as lines."""
    if not pull:
        return ['pull request: none of a run is open (the next run starts fresh)']
    lines = ['pull request: %s (branch %s at %s), %s round(s) of %s%s' % (
        pull.get('ref'), pull.get('head_ref'), (pull.get('head_sha') or '?')[:12], pull.get('rounds'),
        pull.get('max_rounds') or 'no cap', ' -- the cap is spent' if pull.get('spent') else '')]
    if not pull.get('read'):
        lines.append('  its review and checks were not read')
        return lines
    for thread in pull.get('threads') or ():
        where = (thread['path'] or 'the pull request') + (':%s' % thread['line'] if thread.get('line') else '')
        lines.append('  thread by %s on %s: %s' % (thread['author'], where, thread['text']))
    lines.extend('  changes requested by %s: %s' % (r['author'], r['text']) for r in pull.get('changes_requested') or ())
    lines.extend('  failing check %s: %s%s' % (c['name'], c['conclusion'], ' -- ' + c['summary'] if c['summary'] else '')
                 for c in pull.get('failing_checks') or ())
    if not (pull.get('threads') or pull.get('changes_requested') or pull.get('failing_checks')):
        lines.append('  no unresolved thread, no changes requested, no failing required check')
    if pull.get('skipped'):
        lines.append('  left out (not trusted): %s' % ', '.join(pull['skipped']))
    return lines


def pull_summary(pull: Optional[Dict[str, Any]]) -> str:
    """One cell for the status table and page: the pull request, its round, and what its review asks."""
    if not pull:
        return '-'
    text = '%s r%s/%s' % (pull.get('ref'), pull.get('rounds'), pull.get('max_rounds') or '-')
    if pull.get('read'):
        text += ': %d thread(s), %d change request(s), %d failing check(s)' % (
            len(pull.get('threads') or ()), len(pull.get('changes_requested') or ()), len(pull.get('failing_checks') or ()))
    return text
