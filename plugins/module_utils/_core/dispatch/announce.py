# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The announcer: one report item per stall nobody is coming for (D14). Pure, no I/O.

Announce: a tombstone; an agent account dark with ``revoked``, or with ``update_failed`` for
N consecutive cycles; a master dark with ``agent_missing`` (its agent CLI is gone: a human must
install it); a worker whose probe failed N consecutive cycles; an orphan the reaper
held because a worker is blind; an item whose capacity deaths span several accounts. Never the
mechanism working (``NEVER``): an announcer that reports correct holds trains the human to
ignore the channel. Idempotent by title against the live reports; every text is defanged.

The rules in full, with their reasons: ``docs/dispatch.md``, section "The announcer".
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, List, Optional

from ..board.markers import TERMINAL, markers_of
from ..board.model import format_time, parse_time
from ..board.references import defang

TITLE_PREFIX = '[fleet] '
"""Every report title starts with this: the announcer only ever closes a report it could have filed."""

REPORT_LABEL = 'fleet-report'
"""GitHub: the label of a report issue (the issue is never added to the project: never a candidate)."""

SILENCED_LABEL = 'fleet-silenced'
"""GitHub: a closed report with this label silences its title (the ledger: status ``SILENCED_STATUS``)."""

REPORT_STATUS = 'Report'
"""Ledger: the status of a report item (never the ready value; the ledger also keeps reports out of its read)."""

SILENCED_STATUS = 'Silenced'

NEVER = ('eligible', 'not_ready', 'blocked', 'running', 'retry_wait', 'parked', 'closed', 'done', 'unreadable',
         'deferred', 'unroutable', 'budget_spent')
"""Reason codes that are the mechanism working (or a fact about the item): never announced (D14).
A rate limit with a stated reset, a refusal, a held lease are never inputs at all."""

# UNMEASURED GUESS: consecutive failed probes before a worker is announced. A sweep every 5
# minutes makes 3 cycles = 10-15 minutes of blindness: longer than a reboot of a test-bed host
# (boot to SSH 2 s, tests/testbed/README.md) or an SSH blip, short enough that a dead worker is
# reported within the quarter hour. Experiment that settles it: a month of sweeper journals,
# the distribution of blind streak lengths; set N above the 99th percentile of streaks that
# healed by themselves.
DEFAULT_BLIND_CYCLES = 3

# UNMEASURED GUESS: the window in which capacity deaths of one item on different accounts are
# one pattern (the item's own output tripping a limit signature) rather than two unrelated
# limits. 6 hours spans one provider session window (the 5-hour limits of the corpus).
# Experiment: over a month of capacity markers, how often do two accounts' limits coincide on
# one item by chance within W; take the W where that is under one a month.
DEFAULT_CAPACITY_WINDOW = _dt.timedelta(hours=6)
# Derived from the rule, not a guess: "different accounts" is two or more; one account's
# repeated deaths are that account's limit (the mechanism working: dark until its reset).
# A higher value would only re-measure the same pattern later; none is needed to settle it.
DEFAULT_CAPACITY_ACCOUNTS = 2


def _key(worker, master):
    return '%s/%s' % (worker, master)


def account_of(master: Dict[str, Any]) -> str:
    """The capacity account of a master: its ``account`` (``worker_agent_account``, else the fingerprint of its
    agent credentials, ``credential_account``), else the
    master itself (``worker/master``: a master with no declared account shares it with nobody)."""
    return str(master.get('account') or '') or _key(master.get('worker'), master.get('master'))


def _ref(entry: Dict[str, Any]) -> str:
    return '%s#%s' % (entry.get('repo') or '', entry.get('number'))


def capacity_deaths(markers) -> List[Dict[str, Any]]:
    """The capacity markers of an item since its last other close-out (a run that ended any other
    way breaks the pattern), as ``{at, host, master, source}``, oldest first."""
    out = []
    for marker in markers or []:
        if marker.kind == 'capacity':
            fields = marker.fields or {}
            out.append({'at': format_time(marker.at), 'host': fields.get('host') or '', 'master': fields.get('master') or '',
                        'source': fields.get('source') or ''})
        elif marker.kind in TERMINAL:
            out = []
    return out


def capacity_deaths_of(item) -> List[Dict[str, Any]]:
    """``capacity_deaths`` of an item (``board_info`` carries it per item)."""
    return capacity_deaths(markers_of(item))


def revoked_title(account):
    return defang(TITLE_PREFIX + 'agent account revoked: %s' % account)


def update_failed_title(key):
    return defang(TITLE_PREFIX + 'runner cannot update itself: %s' % key)


def agent_missing_title(key):
    return defang(TITLE_PREFIX + 'agent CLI missing: %s' % key)


def item_titles(item) -> List[str]:
    """The titles a stall of this board item would carry (tombstone, capacity deaths, an orphan not reaped)."""
    ref = _ref(item)
    return [defang(TITLE_PREFIX + 'tombstone: %s' % ref),
            defang(TITLE_PREFIX + 'capacity deaths on %d accounts: %s' % (DEFAULT_CAPACITY_ACCOUNTS, ref)),
            defang(TITLE_PREFIX + 'orphan not reaped (worker blind): %s' % ref),
            defang(TITLE_PREFIX + 'round cap spent: %s' % ref)]


def _stall(kind, subject, title, lines, since=None):
    return {'kind': kind, 'subject': subject, 'title': defang(TITLE_PREFIX + title),
            'body': defang('\n'.join(lines + ['', 'Filed by the fleet.dispatch announcer (D14). It is closed with a comment '
                                                  'when the stall clears; docs/dispatch.md says how to silence it.'])),
            'since': since}


def track(previous: Optional[Dict[str, Any]], observed: Optional[List[str]], *, now: Any) -> Dict[str, Dict[str, Any]]:
    """Consecutive-cycle counts: ``{key: {cycles, since}}`` from the previous cycle's counts and the
    keys observed this cycle. ``observed`` None means "not looked at this cycle": the counts stay.
    A key not observed this cycle is dropped (the streak is broken)."""
    previous = previous if isinstance(previous, dict) else {}
    if observed is None:
        return dict((k, v) for k, v in previous.items() if isinstance(v, dict))
    out = {}
    for key in observed:
        old = previous.get(key) if isinstance(previous.get(key), dict) else {}
        try:
            cycles = int(old.get('cycles') or 0) + 1
        except (TypeError, ValueError):
            cycles = 1
        out[key] = {'cycles': cycles, 'since': old.get('since') or format_time(parse_time(now))}
    return out


def stalls(items, *, masters=None, capacity=None, blind=None, unreaped=None, now: Any,
           blind_cycles: int = DEFAULT_BLIND_CYCLES, capacity_window: _dt.timedelta = DEFAULT_CAPACITY_WINDOW,
           capacity_accounts: int = DEFAULT_CAPACITY_ACCOUNTS) -> List[Dict[str, Any]]:
    """Every stall nobody is coming for, one record each: ``{kind, subject, title, body, since}``.

    * ``items``: ``board_info`` items (``reason``, ``last_marker``, ``capacity_deaths``).
    * ``masters``: the fleet's masters ``{worker, master, account}``.
    * ``capacity``: ``{'worker/master': {source, dark, why, cycles}}`` for masters whose capacity
      was read; ``cycles`` counts consecutive cycles with that source (``track``).
    * ``blind``: ``{'worker/master': {cycles, since, why}}`` of masters whose probe failed this cycle.
    * ``unreaped``: orphans the reaper held because a master is blind: ``{number, repo, started_at, why}``.
    """
    now = parse_time(now)
    masters = list(masters or [])
    account = dict((_key(m.get('worker'), m.get('master')), account_of(m)) for m in masters)
    out = []
    for item in items or []:
        reason = item.get('reason')
        if reason == 'tombstone':
            last = item.get('last_marker') or {}
            out.append(_stall('tombstone', _ref(item), 'tombstone: %s' % _ref(item), [
                'Item %s is open, but its last marker is a success (posted %s): no sweep will dispatch it again, '
                'and everything that depends on it waits.' % (_ref(item), last.get('at') or 'unknown'),
                '',
                'Remedy (a human): reopen the item if the work is not finished (a reopen outranks the marker), '
                'close the item if it is finished, or post a left-open marker if it should stay open and dispatchable.'],
                since=last.get('at')))
        if reason == 'rounds_spent':
            pull = item.get('pull') or {}
            out.append(_stall('rounds_spent', _ref(item), 'round cap spent: %s' % _ref(item), [
                'Item %s is held: its pull request %s had %s round(s) that moved its head (the cap is %s) and is '
                'still not merged. A review loop that does not converge is not going to by itself.'
                % (_ref(item), pull.get('ref') or '?', pull.get('rounds'), pull.get('max_rounds')),
                '',
                'Remedy (a human): review and merge the pull request, close it (the next run starts fresh), '
                'or close and reopen the item (a reopen starts the count again).']))
        deaths = [d for d in item.get('capacity_deaths') or []
                  if item.get('state', 'open') == 'open' and parse_time(d.get('at')) is not None
                  and now - parse_time(d['at']) <= capacity_window]
        accounts = sorted(set(account.get(_key(d.get('host'), d.get('master'))) or _key(d.get('host'), d.get('master'))
                              for d in deaths))
        if len(accounts) >= capacity_accounts:
            out.append(_stall('capacity_accounts', _ref(item), 'capacity deaths on %d accounts: %s' % (capacity_accounts, _ref(item)), [
                'The runs of %s ended in a provider limit on %d different accounts within %s (%s): it may be the '
                "item's own output tripping a limit signature, not the accounts." % (
                    _ref(item), len(accounts), capacity_window, ', '.join(accounts)),
                '',
                'Each death is a capacity marker, not an attempt (D8), so the item is never parked for it. '
                'Remedy (a human): read the captures of those runs (fleet-runner classify) and fix the item or the '
                'signature.'], since=deaths[0]['at']))
    by_account = {}
    for key, cap in sorted((capacity or {}).items()):
        if not isinstance(cap, dict):
            continue
        source = cap.get('source')
        try:
            cycles = int(cap.get('cycles') or 0)
        except (TypeError, ValueError):
            cycles = 0
        if source == 'revoked' and cap.get('dark'):
            by_account.setdefault(('revoked', account.get(key, key)), []).append((key, cap))
        elif source == 'update_failed' and cycles >= blind_cycles:
            by_account.setdefault(('update_failed', key), []).append((key, cap))
        elif source == 'agent_missing' and cap.get('dark'):
            by_account.setdefault(('agent_missing', key), []).append((key, cap))
    for (source, subject), found in sorted(by_account.items()):
        where = ', '.join(k for k, _c in found)
        if source == 'revoked':
            out.append(_stall('revoked', subject, revoked_title(subject)[len(TITLE_PREFIX):], [
                'The agent account %s is dark with "revoked" on %s: %s' % (subject, where, found[0][1].get('why') or ''),
                '',
                'A revocation never clears by itself: no master of this account gets work until a human restores the '
                "entitlement and deletes the masters' capacity state (~/.local/state/fleet-dispatch/capacity.json)."],
                since=found[0][1].get('written_at')))
        elif source == 'agent_missing':
            out.append(_stall('agent_missing', subject, agent_missing_title(subject)[len(TITLE_PREFIX):], [
                'The agent CLI is not on the run PATH of %s: %s' % (subject, found[0][1].get('why') or ''),
                '',
                'No run starts there and no attempt is spent. Remedy (a human): re-run fleet.dispatch.worker on that '
                'worker (it installs the agent CLI: worker_agent_packages), or put the CLI on that PATH.'],
                since=found[0][1].get('written_at')))
        else:
            out.append(_stall('update_failed', subject, update_failed_title(subject)[len(TITLE_PREFIX):], [
                'The runner on %s failed its self-update for %d consecutive cycles: %s' % (
                    subject, int(found[0][1].get('cycles') or 0), found[0][1].get('why') or ''),
                '',
                'Remedy (a human): fix the runner checkout or re-run fleet.dispatch.worker on that worker.'],
                since=found[0][1].get('since')))
    long_blind = {}
    for key, seen in sorted((blind or {}).items()):
        if isinstance(seen, dict) and int(seen.get('cycles') or 0) >= blind_cycles:
            long_blind[key] = seen
    workers = {}
    for key, seen in long_blind.items():
        workers.setdefault(key.split('/', 1)[0], []).append((key, seen))
    for worker, found in sorted(workers.items()):
        since = min(s.get('since') or '' for _k, s in found) or None
        out.append(_stall('blind', worker, 'worker blind: %s' % worker, [
            'The probe of %s failed for %d consecutive sweeps (since %s): %s' % (
                ', '.join(k for k, _s in found), min(int(s.get('cycles') or 0) for _k, s in found), since or 'unknown',
                found[0][1].get('why') or ''),
            '',
            'Its masters get no work and its runs are neither probed nor reaped (blind is not dead). '
            'Remedy (a human): bring the worker back or take it out of the inventory.'], since=since))
    for orphan in unreaped or []:
        blamed = [k for k in long_blind if k in (orphan.get('why') or '')] or list(long_blind)
        if not long_blind:
            continue    # a blink: the next cycle's probe will likely answer and the reaper decide
        out.append(_stall('unreaped', _ref(orphan), 'orphan not reaped (worker blind): %s' % _ref(orphan), [
            'Item %s has a start marker from %s and no close-out; the reaper cannot reset it because %s '
            'did not answer the probe: %s' % (_ref(orphan), orphan.get('started_at') or 'unknown', ', '.join(blamed),
                                              orphan.get('why') or ''),
            '',
            'Remedy (a human): bring the worker back (the reaper then decides), or post a reset marker by hand if '
            'the run is known dead.'], since=orphan.get('started_at')))
    return out


def cycle(items, *, masters, capacity, surveyed, previous=None, unreaped=None, now: Any,
          blind_cycles: int = DEFAULT_BLIND_CYCLES, capacity_window: _dt.timedelta = DEFAULT_CAPACITY_WINDOW) -> Dict[str, Any]:
    """One sweep's announcer input, from the guarded path's own answers: ``{stalls, unsure, reconcile, record}``
    (``reconcile``: ``must_reconcile``).

    ``capacity`` are the ``capacity_info`` answer records (``target`` ``{worker, master}``,
    ``status``; a record that is not ``ok`` is not a reading); ``surveyed`` the probe's survey
    (``blind``: masters whose probe failed); ``previous`` the record of the previous cycle
    (``record`` here). The record carries ONLY the consecutive-cycle counts the board cannot hold
    (failed probes, ``update_failed`` readings): docs/dispatch.md says why."""
    previous = previous if isinstance(previous, dict) else {}
    probed = surveyed is not None and (bool((surveyed or {}).get('masters')) or bool((surveyed or {}).get('blind')))
    why = {}
    for b in (surveyed or {}).get('blind', []) or []:
        why[_key(b.get('worker'), b.get('master'))] = b.get('why') or ''
    blind = track(previous.get('blind'), sorted(why) if probed else None, now=now)
    for key in blind:
        blind[key]['why'] = why.get(key) or blind[key].get('why') or ''
    readings = {}
    for rec in capacity or []:
        where = rec.get('target') or {}
        if rec.get('status', 'ok') != 'ok':
            continue
        readings[_key(where.get('worker'), where.get('master'))] = {
            'source': rec.get('source'), 'dark': bool(rec.get('dark')), 'why': rec.get('why') or '',
            'reset_at': rec.get('reset_at')}
    failing = track(previous.get('update_failed'),
                    sorted(k for k, r in readings.items() if r['source'] == 'update_failed') if readings else None, now=now)
    for key, seen in failing.items():
        if key in readings:
            readings[key].update(cycles=seen['cycles'], since=seen['since'])
    found = stalls(items, masters=masters, capacity=readings, blind=blind, unreaped=unreaped, now=now,
                   blind_cycles=blind_cycles, capacity_window=capacity_window)
    # A master whose capacity was not read this cycle (blind, or the read failed) is unknown, and
    # unknown neither files nor clears: its reports stay as they are (D5: no evidence, no change).
    unsure = []
    # An item this read deferred (its details not read: _board/github/memory.py) is unknown too.
    for item in items or []:
        if item.get('reason') == 'deferred':
            unsure.extend(item_titles(item))
    for m in masters or []:
        key = _key(m.get('worker'), m.get('master'))
        if key not in readings:
            unsure.extend([revoked_title(account_of(m)), update_failed_title(key), agent_missing_title(key)])
    return {'stalls': found, 'unsure': sorted(set(unsure)), 'reconcile': must_reconcile(found, previous),
            'record': {'time': format_time(parse_time(now)), 'blind': blind, 'update_failed': failing}}


def must_reconcile(found, previous) -> bool:
    """Whether this cycle's reports need the board's read and writes (``board_report``) at all (D14).

    Not when there is no stall to file and the previous cycle's record says, for certain, that it left no
    report of ours open: then there is nothing to file and nothing to close. ``reports_known`` is only set
    by a cycle whose reconcile answered without an error (or that skipped it by this rule), so a lost or
    failed reconcile, a missing record or an older one always reads the board. A report filed by another
    dispatcher for a stall this one does not see is closed by that dispatcher's cycle (or this one's first
    stall)."""
    previous = previous if isinstance(previous, dict) else {}
    if found or previous.get('reports_known') is not True:
        return True
    return bool(previous.get('open') or previous.get('filed'))


def reconcile(found, reports, *, now: Any, unsure=()) -> Dict[str, List[Dict[str, Any]]]:
    """What to write: ``{file: [stall], close: [{number, title, comment}], keep: [...], silenced: [...]}``.

    Idempotent by title against the live reports (``{number, title, state, silenced}``): a stall
    whose title has an open report is kept, one whose title a silenced report carries is not
    filed, an open report of ours whose stall is gone is closed with a comment. Titles in ``unsure`` (their
    evidence was not read this cycle) are neither filed nor closed."""
    when = format_time(parse_time(now))
    open_titles, silenced = {}, set()
    for rep in reports or []:
        title = rep.get('title') or ''
        if rep.get('silenced'):
            silenced.add(title)
        elif rep.get('state') == 'open' and title.startswith(TITLE_PREFIX):
            open_titles.setdefault(title, rep)
    titles = set(s['title'] for s in found or [])
    out = {'file': [], 'close': [], 'keep': [], 'silenced': []}
    filed = set()
    for stall in found or []:
        if stall['title'] in filed:
            continue
        filed.add(stall['title'])
        if stall['title'] in open_titles:
            out['keep'].append(dict(stall, number=open_titles[stall['title']].get('number')))
        elif stall['title'] in silenced:
            out['silenced'].append(stall)
        else:
            out['file'].append(stall)
    for title, rep in sorted(open_titles.items()):
        if title not in titles and title not in set(unsure or ()):
            out['close'].append({'number': rep.get('number'), 'title': title, 'comment': defang(
                'The stall cleared: the sweep at %s no longer finds it. Closed by the fleet.dispatch announcer.' % when)})
    return out


__all__ = ['TITLE_PREFIX', 'REPORT_LABEL', 'SILENCED_LABEL', 'REPORT_STATUS', 'SILENCED_STATUS', 'NEVER',
           'DEFAULT_BLIND_CYCLES', 'DEFAULT_CAPACITY_WINDOW', 'DEFAULT_CAPACITY_ACCOUNTS', 'account_of',
           'capacity_deaths', 'capacity_deaths_of', 'track', 'stalls', 'cycle', 'must_reconcile', 'reconcile', 'revoked_title',
           'update_failed_title', 'agent_missing_title']
