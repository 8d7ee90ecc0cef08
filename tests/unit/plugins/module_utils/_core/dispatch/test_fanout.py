# -*- coding: utf-8 -*-
"""_core/dispatch/fanout.py: per-worker calls in, one answer per master out (issue 13)."""
from __future__ import annotations

from ansible_collections.fleet.dispatch.plugins.plugin_utils.loop_results import answers
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.fanout import (
    clock_warnings, launch_answers, launch_work, phase_timings, probe_answers, worker_clocks)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import launch_report, survey

MASTERS = [{'worker': 'w1', 'master': 'a'}, {'worker': 'w1', 'master': 'b'}, {'worker': 'w2', 'master': 'a'},
           {'worker': 'w3', 'master': 'a'}]


def unit(name, inv):
    return {'name': name, 'item': {'number': int(name.split('-')[1]), 'repo': ''}, 'invocation_id': inv, 'start_us': 1,
            'start_wall_us': 1, 'started_at': 'x'}


def test_probe_answers_make_one_record_per_master_and_blind_masters_of_a_lost_worker():
    probes = {
        'w1': {'changed': False, 'masters': [{'master': 'a', 'failed': False, 'msg': '', 'units': [unit('task-1', 'i1')]},
                                             {'master': 'b', 'failed': True, 'msg': 'cannot read master b: boom'}]},
        'w2': {'unreachable': True, 'msg': 'ssh: connect refused'},
        'w3': None,
    }
    records = answers(probe_answers(MASTERS, probes))
    by = dict(('%s/%s' % (r['target']['worker'], r['target']['master']), r) for r in records)
    assert [by[k]['status'] for k in ('w1/a', 'w1/b', 'w2/a', 'w3/a')] == ['ok', 'failed', 'unreachable', 'skipped']
    assert 'boom' in by['w1/b']['msg'] and 'refused' in by['w2/a']['msg']
    surveyed = survey(records)
    assert list(surveyed['live']) == ['task-1'] and surveyed['masters'] == {'w1/a': 1}
    # a master the probe did not answer for is blind, a worker not probed on purpose is not
    assert sorted('%s/%s' % (b['worker'], b['master']) for b in surveyed['blind']) == ['w1/b', 'w2/a']


def test_a_worker_that_answers_without_a_master_leaves_it_blind():
    records = answers(probe_answers([{'worker': 'w1', 'master': 'z'}], {'w1': {'masters': []}}))
    assert records[0]['status'] == 'failed' and 'master z' in records[0]['msg']


def test_launch_work_is_one_list_per_worker_with_master_clone_and_branch():
    batches = [{'worker': 'w1', 'master': 'a', 'launch': [{'number': 1, 'repo': '', 'command': ['r', '{workdir}'], 'setenv': {}}]},
               {'worker': 'w1', 'master': 'b', 'launch': [{'number': 2, 'repo': 'o/x', 'command': ['r'], 'setenv': {'K': 'v'}}]},
               {'worker': 'w2', 'master': 'a', 'launch': [{'number': 3, 'repo': '', 'command': ['r'], 'setenv': {}}]}]
    work = launch_work(batches, {'o/x': '~/clones/x'}, '~/clones/main', 'trunk')
    assert sorted(work) == ['w1', 'w2'] and len(work['w1']) == 2
    assert work['w1'][0] == {'master': 'a', 'number': 1, 'repo': '', 'clone': '~/clones/main', 'branch': 'trunk', 'host': 'w1',
                             'command': ['r', '{workdir}'], 'setenv': {}}
    assert work['w1'][1]['clone'] == '~/clones/x' and work['w1'][1]['master'] == 'b'


def test_launch_work_gives_a_continued_item_its_pull_request_head_branch():
    batches = [{'worker': 'w1', 'master': 'a', 'launch': [{'number': 1, 'repo': ''}, {'number': 2, 'repo': ''}]}]
    items = [{'number': 1, 'repo': '', 'pull': {'ref': 'o/r#7', 'head_ref': 'fleet/1', 'head_sha': 'a' * 40}},
             {'number': 2, 'repo': '', 'pull': None}, {'number': 2, 'repo': 'o/other', 'pull': {'head_ref': 'not-mine'}}]
    work = launch_work(batches, {}, '~/clones/main', 'main', items)
    assert [w['branch'] for w in work['w1']] == ['fleet/1', 'main']


def test_launch_answers_feed_the_report_and_a_lost_worker_fails_its_runs():
    b1 = {'worker': 'w1', 'master': 'a', 'items': [{'number': 1, 'unit': 'task-1'}, {'number': 4, 'unit': 'task-4'}]}
    b2 = {'worker': 'w2', 'master': 'a', 'items': [{'number': 3, 'unit': 'task-3'}]}
    launches = {'w1': {'masters': [{'master': 'a', 'failed': False, 'msg': '', 'results': [
        {'number': 1, 'repo': '', 'unit': 'task-1', 'reason': 'launched', 'invocation_id': 'i'},
        {'number': 4, 'repo': '', 'unit': 'task-4', 'reason': 'no-workspace', 'stderr': 'fetch failed'}]}]},
        'w2': {'failed': True, 'msg': 'MODULE FAILURE'}}
    report = launch_report(answers(launch_answers([b1, b2], launches)))
    assert [r['unit'] for r in report['launched']] == ['task-1']
    assert [(r['unit'], r['stage']) for r in report['refused']] == [('task-4', 'workspace')]
    assert 'fetch failed' in report['refused'][0]['why']
    assert [(r['unit'], r['why']) for r in report['failed']] == [('task-3', 'MODULE FAILURE')]


def test_phase_timings_measure_each_phase_and_leave_missing_ones_null():
    stamps = {'start': 10.0, 'leased': 10.5, 'probed': 11.0, 'placed': 11.25, 'launched': 12.0, 'released': 12.125}
    out = phase_timings(stamps)
    assert out == {'lease': 0.5, 'probe': 0.5, 'place': 0.25, 'workspace_launch': 0.75, 'release': 0.125,
                   'guard_to_launch': 1.5}
    partial = phase_timings({'start': 1.0, 'leased': 2.0, 'released': 3.0})
    assert partial['probe'] is None and partial['release'] == 1.0 and partial['guard_to_launch'] is None


def test_probe_workers_lists_every_worker_once_with_its_masters_in_order():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.fanout import probe_workers
    out = probe_workers(MASTERS, [{'number': 1}])
    assert out == {'probe_masters': {'w1': ['a', 'b'], 'w2': ['a'], 'w3': ['a']}, 'probe_now': True,
                   'probe_hosts': ['w1', 'w2', 'w3']}
    assert probe_workers(MASTERS, [])['probe_hosts'] == [] and probe_workers(MASTERS, [], always=True)['probe_now'] is True
    assert probe_workers([], [{'number': 1}]) == {'probe_masters': {}, 'probe_now': True, 'probe_hosts': []}


def test_a_worker_whose_clock_drifts_past_a_minute_is_named_and_others_are_not():
    probes = {'w1': {'clock_skew_s': -600.4}, 'w2': {'clock_skew_s': 1.2}, 'w3': {'clock_skew_s': None},
              'w4': {'failed': True}, 'w5': {'clock_skew_s': 75}}
    assert clock_warnings(probes) == [
        "worker w1's clock is 600 s behind this controller's: runs are dated by the board, but fix its time sync "
        "(timedatectl, chrony)",
        "worker w5's clock is 75 s ahead of this controller's: runs are dated by the board, but fix its time sync "
        "(timedatectl, chrony)"]


def test_a_worker_is_measured_against_the_board_s_clock_when_the_controller_knows_its_own_offset():
    """The controller is 600 s ahead of the board: a worker in step with the controller is 600 s off the board's
    clock (the one runs are dated by) and is named; one 600 s behind the controller is in step with the board."""
    probes = {'w1': {'clock_skew_s': 0.4}, 'w2': {'clock_skew_s': -600.0}, 'w3': {'failed': True}, 'w4': {'clock_skew_s': True}}
    assert worker_clocks(probes, 600.0) == {'w1': {'controller_skew_s': 0.4, 'board_skew_s': 600.4},
                                            'w2': {'controller_skew_s': -600.0, 'board_skew_s': 0.0}}
    assert clock_warnings(probes, controller_offset_s=600.0) == [
        "worker w1's clock is 600 s ahead of the board's: runs are dated by the board, but fix its time sync "
        "(timedatectl, chrony)"]
    # the board's clock unknown: against the controller's, as before, and no board figure is made up
    assert worker_clocks(probes, None)['w2'] == {'controller_skew_s': -600.0, 'board_skew_s': None}
    assert [w.split("'")[0] for w in clock_warnings(probes, controller_offset_s=None)] == ['worker w2']
