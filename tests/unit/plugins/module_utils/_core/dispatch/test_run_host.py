# -*- coding: utf-8 -*-
"""Which inventory worker runs a start marker's run: matched through the probe, never guessed."""
from __future__ import annotations

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.run_host import run_worker

MARKER = {'host': 'nc-w1', 'master': 'fleet1', 'unit': 'task-4'}


def probe(worker, hostname, live=(), failed=False, msg=''):
    if failed:
        return {'worker': worker, 'failed': True, 'msg': msg}
    return {'worker': worker, 'hostname': hostname, 'failed': False,
            'masters': [{'master': 'fleet1', 'failed': False, 'units': [{'name': u} for u in live]}]}


def test_the_worker_is_the_inventory_host_that_answers_with_the_markers_host_name():
    got = run_worker(MARKER, [probe('w1', 'nc-w1', live=['task-4']), probe('w2', 'nc-w2')])
    assert (got['worker'], got['master'], got['live'], got['why']) == ('w1', 'fleet1', True, '')
    # a fully qualified answer names the same host
    got = run_worker(MARKER, [probe('w2', 'nc-w2'), probe('w1', 'nc-w1.example.org', live=['task-4'])])
    assert got['worker'] == 'w1' and got['live']


def test_an_inventory_named_as_the_host_matches_and_an_ended_run_is_not_live():
    got = run_worker(MARKER, [probe('nc-w1', 'other', live=[])])
    assert (got['worker'], got['live']) == ('nc-w1', False)


def test_a_renamed_host_is_found_by_the_live_unit_alone():
    got = run_worker(MARKER, [probe('w1', 'renamed'), probe('w2', 'nc-w2b', live=['task-4'])])
    assert (got['worker'], got['live']) == ('w2', True)


def test_no_match_names_who_answered_and_who_was_not_reached():
    got = run_worker(MARKER, [probe('w1', 'a'), probe('w2', '', failed=True, msg='ssh: unreachable')])
    assert got['worker'] == '' and not got['live']
    assert 'no inventory worker answers as nc-w1' in got['why'] and 'w1 (a)' in got['why']
    assert 'not reached: w2: ssh: unreachable' in got['why']
    # two live copies and no name: no guess
    got = run_worker(MARKER, [probe('w1', 'a', live=['task-4']), probe('w2', 'b', live=['task-4'])])
    assert got['worker'] == ''


def test_two_answers_with_the_name_choose_the_one_running_the_unit():
    got = run_worker(MARKER, [probe('w1', 'nc-w1'), probe('w1b', 'nc-w1', live=['task-4.service'])])
    assert got['worker'] == 'w1b'
    got = run_worker(MARKER, [probe('w1', 'nc-w1'), probe('w1b', 'nc-w1')])
    assert got['worker'] == '' and 'several inventory workers answer as nc-w1' in got['why']
