# -*- coding: utf-8 -*-
"""The announcer's decisions (D14) and capacity per account (D8): pure functions, both boards alike."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import announce
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import share_by_account
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Item, format_time
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess, masters_from
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import closing_refs

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)


def ago(minutes):
    return NOW - dt.timedelta(minutes=minutes)


def item(number, *markers, state='open', status='Ready', events=()):
    comments = [Comment(id=str(i), body=format_marker(kind, fields), created_at=at)
                for i, (kind, fields, at) in enumerate(markers)]
    return Item(number=number, title='t%d' % number, state=state, status=status, comments=comments, events=list(events))


def assessed(*items):
    return assess(list(items), now=NOW)


MASTERS = [{'worker': 'w1', 'master': 'a', 'account': 'acct-1'}, {'worker': 'w1', 'master': 'b', 'account': 'acct-1'},
           {'worker': 'w2', 'master': 'c', 'account': 'acct-2'}, {'worker': 'w2', 'master': 'd', 'account': ''}]


def cap(host, master, minutes, source='rate_limit'):
    return ('capacity', {'host': host, 'master': master, 'source': source}, ago(minutes))


def start(host='w1', master='a', minutes=100):
    return ('start', {'host': host, 'master': master}, ago(minutes))


# --- what is announced, and what never is ---------------------------------------------------------

def test_a_tombstone_is_one_stall_whose_text_has_no_live_closing_keyword():
    found = announce.stalls(assessed(item(1, start(minutes=30), ('success', {}, ago(20)))), now=NOW)
    assert [(s['kind'], s['subject']) for s in found] == [('tombstone', '#1')]
    assert found[0]['title'].startswith(announce.TITLE_PREFIX)
    # the remedy says "close the item"; the defang rule keeps it from being a live reference
    assert closing_refs(found[0]['body']) == [] and closing_refs(found[0]['title']) == []


NEVER_CASES = [
    ('blocked', lambda: item(2)),           # status Ready, blocker open below
    ('running', lambda: item(3, start(minutes=5))),
    ('retry_wait', lambda: item(4, start(minutes=5), ('retry', {'not_before': format_time(NOW + dt.timedelta(minutes=9))},
                                                      ago(4)))),
    ('parked', lambda: item(5, start(minutes=50), ('failure', {}, ago(49)), start(minutes=40), ('failure', {}, ago(39)),
                            start(minutes=30), ('failure', {}, ago(29)))),
    ('not_ready', lambda: item(6, status='Backlog')),
    ('eligible', lambda: item(7)),
    ('a rate limit with a stated reset, on one account', lambda: item(8, start(minutes=5), cap('w1', 'a', 4))),
    ('capacity deaths on two masters of ONE account', lambda: item(9, start(minutes=9), cap('w1', 'a', 8),
                                                                   start('w1', 'b', 7), cap('w1', 'b', 6))),
]


@pytest.mark.parametrize('label,make', NEVER_CASES, ids=[c[0] for c in NEVER_CASES])
def test_the_mechanism_working_is_never_announced(label, make):
    it = make()
    if label == 'blocked':
        from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Blocker
        it.blockers.append(Blocker(number=99, state='open'))
    rows = assessed(it)
    assert rows[0]['reason'] in announce.NEVER
    rate = {'w1/a': {'source': 'rate_limit', 'dark': True, 'reset_at': format_time(NOW + dt.timedelta(hours=1))}}
    assert announce.stalls(rows, masters=MASTERS, capacity=rate, blind={}, unreaped=[], now=NOW) == []


def test_capacity_deaths_on_two_accounts_in_the_window_are_announced_and_spend_no_attempt():
    rows = assessed(item(10, start(minutes=20), cap('w1', 'a', 19), start('w2', 'c', 10), cap('w2', 'c', 9)))
    assert rows[0]['attempts'] == 0 and rows[0]['reason'] == 'eligible'     # never parked by attempts (D8)
    found = announce.stalls(rows, masters=MASTERS, now=NOW)
    assert [(s['kind'], s['subject']) for s in found] == [('capacity_accounts', '#10')]
    # outside the window, or broken by a run that ended otherwise: no pattern
    assert announce.stalls(rows, masters=MASTERS, now=NOW + dt.timedelta(hours=7)) == []
    broken = assessed(item(11, start(minutes=30), cap('w1', 'a', 29), start('w2', 'd', 20), ('failure', {}, ago(19)),
                           start('w2', 'c', 10), cap('w2', 'c', 9)))
    assert announce.stalls(broken, masters=MASTERS, now=NOW) == []


def test_revoked_is_one_stall_per_account_and_a_rate_limit_is_none():
    capacity = {'w1/a': {'source': 'revoked', 'dark': True, 'why': 'key revoked'},
                'w1/b': {'source': 'revoked', 'dark': True, 'why': 'key revoked'},
                'w2/c': {'source': 'rate_limit', 'dark': True, 'reset_at': None}}
    found = announce.stalls([], masters=MASTERS, capacity=capacity, now=NOW)
    assert [(s['kind'], s['subject']) for s in found] == [('revoked', 'acct-1')]
    assert 'w1/a, w1/b' in found[0]['body'] and found[0]['title'] == announce.revoked_title('acct-1')


def test_update_failed_only_after_n_consecutive_cycles():
    def once(cycles):
        failing = {'w2/d': {'source': 'update_failed', 'dark': True, 'cycles': cycles}}
        return announce.stalls([], masters=MASTERS, capacity=failing, now=NOW, blind_cycles=3)
    assert once(2) == []
    assert [s['kind'] for s in once(3)] == ['update_failed']


def test_a_master_whose_agent_cli_is_gone_is_one_report_at_once_and_cleared_when_it_is_back():
    """agent_missing needs a human (provision installs the CLI): one report per master from its first dark cycle, with
    the remedy; not an item's stall, and cleared (closed) once the master is no longer dark."""
    gone = {'w2/d': {'source': 'agent_missing', 'dark': True, 'why': "codex not found on PATH /usr/bin:/bin",
                     'written_at': format_time(ago(3))}}
    found = announce.stalls([], masters=MASTERS, capacity=gone, now=NOW, blind_cycles=3)
    assert [(s['kind'], s['subject']) for s in found] == [('agent_missing', 'w2/d')]
    assert found[0]['title'] == announce.agent_missing_title('w2/d')
    assert 'codex not found' in found[0]['body'] and 'fleet.dispatch.worker' in found[0]['body']
    filed = announce.reconcile(found, [], now=NOW)
    assert [f['title'] for f in filed['file']] == [found[0]['title']]
    # provision put it back: the master is not dark any more, so its report closes
    back = announce.stalls([], masters=MASTERS, capacity={}, now=NOW, blind_cycles=3)
    report = {'number': 60, 'title': found[0]['title'], 'state': 'open'}
    assert [c['number'] for c in announce.reconcile(back, [report], now=NOW)['close']] == [60]


def test_consecutive_cycles_are_tracked_and_a_streak_breaks():
    seen = None
    for minute in range(3):
        seen = announce.track(seen, ['w2/c', 'w2/d'] if minute < 2 else ['w2/c'], now=ago(10 - minute))
    assert seen == {'w2/c': {'cycles': 3, 'since': format_time(ago(10))}}
    # a cycle that did not look keeps the counts; garbage in the record restarts at one
    assert announce.track(seen, None, now=NOW) == seen
    assert announce.track({'w2/c': {'cycles': 'x'}, 'junk': 3}, ['w2/c'], now=NOW)['w2/c']['cycles'] == 1


def test_a_worker_blind_for_n_cycles_is_one_stall_and_its_held_orphan_another():
    blind = {'w2/c': {'cycles': 3, 'since': format_time(ago(15)), 'why': 'probe failed: unreachable'},
             'w2/d': {'cycles': 3, 'since': format_time(ago(15)), 'why': 'probe failed: unreachable'}}
    orphan = [{'number': 12, 'repo': '', 'started_at': format_time(ago(90)),
               'why': 'not reaped: the probe did not answer on w2/c, w2/d (blind is not dead)'}]
    found = announce.stalls([], masters=MASTERS, blind=blind, unreaped=orphan, now=NOW, blind_cycles=3)
    assert [(s['kind'], s['subject']) for s in found] == [('blind', 'w2'), ('unreaped', '#12')]
    # one cycle short: nothing at all (a blink is the mechanism working)
    short = dict((k, dict(v, cycles=2)) for k, v in blind.items())
    assert announce.stalls([], masters=MASTERS, blind=short, unreaped=orphan, now=NOW, blind_cycles=3) == []


# --- idempotence by title, clearing -------------------------------------------------------------------

def _tomb():
    return announce.stalls(assessed(item(1, start(minutes=30), ('success', {}, ago(20)))), now=NOW)


def test_reconcile_files_once_keeps_an_open_report_and_closes_a_cleared_one():
    found = _tomb()
    first = announce.reconcile(found + found, [], now=NOW)
    assert len(first['file']) == 1 and first['close'] == []
    report = {'number': 50, 'title': found[0]['title'], 'state': 'open'}
    again = announce.reconcile(found, [report], now=NOW)
    assert again['file'] == [] and [k['number'] for k in again['keep']] == [50]
    cleared = announce.reconcile([], [report, {'number': 51, 'title': 'a human issue', 'state': 'open'}], now=NOW)
    assert [c['number'] for c in cleared['close']] == [50]          # never a report that is not ours
    assert closing_refs(cleared['close'][0]['comment']) == []
    # a closed report (stall came back later) files a new one; a silenced one does not
    assert len(announce.reconcile(found, [dict(report, state='closed')], now=NOW)['file']) == 1
    silenced = announce.reconcile(found, [dict(report, state='closed', silenced=True)], now=NOW)
    assert silenced['file'] == [] and len(silenced['silenced']) == 1


# --- capacity per account (D8) -------------------------------------------------------------------------

def _capacity(worker, master, dark=False, source=None, reset_at=None):
    return {'target': {'worker': worker, 'master': master}, 'status': 'ok', 'dark': dark, 'source': source,
            'reset_at': reset_at, 'headroom': {}}


def test_a_rate_limit_darkens_every_master_of_its_account_and_no_other():
    reset = format_time(NOW + dt.timedelta(hours=1))
    found = masters_from(MASTERS, [_capacity('w1', 'a', True, 'rate_limit', reset), _capacity('w1', 'b'),
                                   _capacity('w2', 'c'), _capacity('w2', 'd')])
    dark = dict(('%s/%s' % (m['worker'], m['master']), (m['dark'], m.get('source'), m.get('reset_at')))
                for m in found['masters'])
    assert dark == {'w1/a': (True, 'rate_limit', reset), 'w1/b': (True, 'rate_limit', reset),
                    'w2/c': (False, None, None), 'w2/d': (False, None, None)}
    assert any('account acct-1, as on w1/a' in w for w in found['warnings'])


def test_revoked_outranks_a_rate_limit_and_update_failed_stays_the_masters_own():
    masters = share_by_account([
        {'worker': 'w', 'master': 'a', 'account': 'x', 'dark': True, 'source': 'rate_limit', 'reset_at': None},
        {'worker': 'w', 'master': 'b', 'account': 'x', 'dark': True, 'source': 'revoked', 'reset_at': None},
        {'worker': 'w', 'master': 'c', 'account': 'x', 'dark': False},
        {'worker': 'v', 'master': 'd', 'account': 'y', 'dark': True, 'source': 'update_failed', 'reset_at': None},
        {'worker': 'v', 'master': 'e', 'account': 'y', 'dark': False},
        {'worker': 'v', 'master': 'f', 'dark': True, 'source': 'rate_limit', 'reset_at': None},
        {'worker': 'v', 'master': 'g', 'dark': False}])   # no account: each master is its own
    got = dict((m['master'], (m['dark'], m.get('source'))) for m in masters)
    assert got == {'a': (True, 'revoked'), 'b': (True, 'revoked'), 'c': (True, 'revoked'),
                   'd': (True, 'update_failed'), 'e': (False, None), 'f': (True, 'rate_limit'), 'g': (False, None)}


def test_of_two_rate_limits_on_one_account_the_later_reset_wins():
    early, late = format_time(NOW + dt.timedelta(hours=1)), format_time(NOW + dt.timedelta(hours=3))
    masters = share_by_account([
        {'worker': 'w', 'master': 'a', 'account': 'x', 'dark': True, 'source': 'rate_limit', 'reset_at': late},
        {'worker': 'w', 'master': 'b', 'account': 'x', 'dark': True, 'source': 'rate_limit', 'reset_at': early},
        {'worker': 'w', 'master': 'c', 'account': 'x', 'dark': False}])
    assert [m['reset_at'] for m in masters] == [late, late, late]


def test_a_master_whose_capacity_was_not_read_neither_files_nor_clears_its_reports():
    """D5: unknown is no change. A revoked account's report stays open while its masters are blind."""
    answers = [{'target': {'worker': 'w1', 'master': 'a'}, 'status': 'unreachable'},
               {'target': {'worker': 'w1', 'master': 'b'}, 'status': 'ok', 'dark': False, 'source': None}]
    out = announce.cycle([], masters=MASTERS[:2], capacity=answers, surveyed={'masters': {'w1/b': 0},
                         'blind': [{'worker': 'w1', 'master': 'a', 'why': 'probe failed: unreachable'}]}, now=NOW)
    assert out['stalls'] == []
    assert announce.revoked_title('acct-1') in out['unsure']
    report = {'number': 7, 'title': announce.revoked_title('acct-1'), 'state': 'open'}
    assert announce.reconcile(out['stalls'], [report], now=NOW, unsure=out['unsure'])['close'] == []
    assert [c['number'] for c in announce.reconcile(out['stalls'], [report], now=NOW)['close']] == [7]
    # the record counts the blind master, one cycle so far
    assert out['record']['blind'] == {'w1/a': {'cycles': 1, 'since': format_time(NOW), 'why': 'probe failed: unreachable'}}


def test_an_item_the_read_deferred_neither_files_nor_clears_its_reports():
    """A deferred item's details were not read this cycle: its tombstone report stays open until a
    cycle reads it (D5: no evidence, no change), and closes only when a read finds it cleared."""
    deferred = {'number': 4, 'repo': 'acme/app', 'reason': 'deferred', 'state': 'open', 'last_marker': None}
    out = announce.cycle([deferred], masters=[], capacity=[], surveyed=None, now=NOW)
    title = announce.item_titles(deferred)[0]
    assert title == announce.defang(announce.TITLE_PREFIX + 'tombstone: acme/app#4') and title in out['unsure']
    report = {'number': 9, 'title': title, 'state': 'open'}
    assert announce.reconcile(out['stalls'], [report], now=NOW, unsure=out['unsure'])['close'] == []
    read = dict(deferred, reason='eligible')
    out = announce.cycle([read], masters=[], capacity=[], surveyed=None, now=NOW)
    assert [c['number'] for c in announce.reconcile(out['stalls'], [report], now=NOW, unsure=out['unsure'])['close']] == [9]
    # the titles item_titles names are the ones stalls() files
    tomb = dict(deferred, reason='tombstone', last_marker={'at': format_time(NOW)})
    [stall] = announce.stalls([tomb], now=NOW)
    assert stall['title'] in announce.item_titles(tomb)


@pytest.mark.parametrize('found, previous, needed', [
    ([], {'reports_known': True, 'open': [], 'filed': []}, False),        # nothing to file, nothing open: no board read
    ([{'title': '[fleet] x'}], {'reports_known': True, 'open': [], 'filed': []}, True),   # a stall to file
    ([], {'reports_known': True, 'open': ['[fleet] x'], 'filed': []}, True),             # a report to close
    ([], {'reports_known': True, 'open': [], 'filed': [{'title': '[fleet] x'}]}, True),  # filed last cycle
    ([], {'open': [], 'filed': []}, True),                                # an older record: not known
    ([], {'reports_known': False, 'open': [], 'filed': []}, True),        # the last reconcile failed
    ([], {}, True),                                                       # no record
])
def test_the_board_s_reports_are_read_unless_nothing_can_be_filed_or_closed(found, previous, needed):
    assert announce.must_reconcile(found, previous) is needed
