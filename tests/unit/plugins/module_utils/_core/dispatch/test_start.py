# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launched is not started (D20, issue 18): the pure start decision and its join with the board."""
from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import (
    BOARD_UNREACHABLE_COOLDOWN, board_unreachable_state, clears_after_start, dump_state, is_dark, load_state, make_state,
)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import dark_why
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.start import confirm, judge, not_checked

UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ACTIVE = {'LoadState': 'loaded', 'ActiveState': 'active', 'Result': 'success', 'ExecMainStatus': '0', 'InvocationID': 'inv1'}
ENDED = {'LoadState': 'loaded', 'ActiveState': 'failed', 'Result': 'exit-code', 'ExecMainStatus': '23', 'InvocationID': 'inv1'}
GONE = {'LoadState': 'not-found', 'ActiveState': 'inactive', 'Result': 'success', 'ExecMainStatus': '0', 'InvocationID': ''}

JUDGE_CASES = [
    # (name, unit, record, state, cause)
    ('started: the record of this invocation', ACTIVE, {'invocation_id': 'inv1', 'started': True, 'run': 'r1'}, 'started', ''),
    ('a fast run already collected still started', GONE, {'invocation_id': 'inv1', 'started': True, 'run': 'r1'}, 'started', ''),
    ('the runner says why it could not start', ENDED,
     {'invocation_id': 'inv1', 'started': False, 'cause': 'board_unreachable', 'reason': 'no ledger'}, 'failed', 'board_unreachable'),
    ('still running, no record yet: look again', ACTIVE, None, 'pending', ''),
    ('a record of an older invocation is not this run', ACTIVE, {'invocation_id': 'old', 'started': True, 'run': 'r0'}, 'pending', ''),
    ('ended without a record: the unit result says it', ENDED, None, 'failed', 'no_start_record'),
    ('collected without a record', GONE, {'invocation_id': 'old', 'started': True}, 'failed', 'no_start_record'),
    ('another invocation holds the name', dict(ACTIVE, InvocationID='inv2'), None, 'failed', 'no_start_record'),
]


@pytest.mark.parametrize('name,unit,record,state,cause', JUDGE_CASES, ids=[c[0] for c in JUDGE_CASES])
def test_judge(name, unit, record, state, cause):
    out = judge(unit, record, 'inv1')
    assert (out['state'], out['cause']) == (state, cause)
    if state == 'failed':
        assert out['reason']


def test_an_ended_unit_names_its_result_and_the_runner_word_for_its_exit():
    assert 'exit status 23, start_lost' in judge(ENDED, None, 'inv1')['reason']
    # an exit the table does not know (a Python traceback's 1) is shown bare
    assert 'exit status 1)' in judge(dict(ENDED, ExecMainStatus='1'), None, 'inv1')['reason']


def row(number, worker='w1', master='a1', inv='inv%d'):
    return {'number': number, 'repo': '', 'unit': 'task-%d' % number, 'worker': worker, 'master': master,
            'invocation_id': inv % number, 'reason': 'launched'}


def answer(worker, master, *runs, status='ok'):
    return {'target': {'worker': worker, 'master': master}, 'status': status, 'msg': '', 'runs': list(runs)}


def item(number, run):
    return {'number': number, 'repo': '', 'last_marker': {'kind': 'start', 'fields': {'run': run}}}


def test_confirm_says_started_failed_and_unconfirmed_with_the_runners_reason():
    launched = [row(1), row(2), row(3), row(4, worker='w2')]
    answers = [answer('w1', 'a1', {'unit': 'task-1', 'state': 'started', 'run': 'r1'},
                      {'unit': 'task-2', 'state': 'failed', 'cause': 'board_unreachable', 'reason': 'cannot open the board: X'},
                      {'unit': 'task-3', 'state': 'pending'}),
               answer('w2', 'a1', status='unreachable')]
    out = confirm(launched, answers, [item(1, 'r1')], wait=60)
    by = dict((r['number'], r) for r in out['launched'])
    assert by[1]['start_text'] == 'started'
    assert by[2]['start_text'] == 'failed to start: cannot open the board: X' and by[2]['start_cause'] == 'board_unreachable'
    assert by[3]['start'] == 'unconfirmed' and '60' in by[3]['start_text']
    assert by[4]['start'] == 'unconfirmed' and by[4]['start_cause'] == 'no_answer'
    assert [r['number'] for r in out['started']] == [1]
    assert [r['number'] for r in out['failed_to_start']] == [2]
    assert sorted(r['number'] for r in out['unconfirmed']) == [3, 4]
    assert len(out['warnings']) == 3, 'every run that did not start is warned about once'


def test_a_start_marker_on_another_board_is_not_a_start():
    """The runner says it started, but this dispatcher's board has no marker of that run: it posted elsewhere."""
    answers = [answer('w1', 'a1', {'unit': 'task-1', 'state': 'started', 'run': 'r1'})]
    out = confirm([row(1)], answers, [item(1, 'somebody-else')])
    assert out['failed_to_start'][0]['start_cause'] == 'other_board'
    assert 'another board' in out['failed_to_start'][0]['start_text']
    # the board not read (None) checks nothing
    assert confirm([row(1)], answers, None)['started'][0]['number'] == 1


def test_not_checked_says_why():
    out = not_checked([row(1)], 'the run command is not fleet-runner')
    assert out[0]['start'] == 'not_checked' and 'not fleet-runner' in out[0]['start_text']


# --- board_unreachable: a capacity-like state (D8) ------------------------------------------------

def test_board_unreachable_darkens_until_its_retry_time_and_survives_the_file():
    state = board_unreachable_state(None, now=T0, message='no ledger at /x', unit='task-1')
    loaded, why = load_state(dump_state(state))
    assert why == '' and loaded['source'] == 'board_unreachable' and loaded['reset_at'] == T0 + BOARD_UNREACHABLE_COOLDOWN
    dark, source, until, text = is_dark(loaded, T0 + _dt.timedelta(minutes=1))
    assert dark and source == 'board_unreachable' and until == T0 + BOARD_UNREACHABLE_COOLDOWN and 'board' in text
    assert not is_dark(loaded, T0 + BOARD_UNREACHABLE_COOLDOWN)[0], 'after the retry time the master gets a chance again'
    assert 'board_unreachable' in dark_why('board_unreachable', '2026-12-01T12:15:00Z')


def test_board_unreachable_never_overwrites_stronger_evidence_and_only_a_clean_start_clears_it():
    revoked = make_state('revoked', written_at=T0, message='key revoked')
    limited = make_state('rate_limit', written_at=T0, reset_at=T0 + _dt.timedelta(hours=2))
    assert board_unreachable_state(revoked, now=T0, message='x') is None
    assert board_unreachable_state(limited, now=T0, message='x') is None
    assert board_unreachable_state(limited, now=T0 + _dt.timedelta(hours=3), message='x')['source'] == 'board_unreachable'
    assert clears_after_start(board_unreachable_state(None, now=T0, message='x'))
    assert not clears_after_start(revoked) and not clears_after_start(limited) and not clears_after_start(None)
