# -*- coding: utf-8 -*-
"""fleet.dispatch.guard (action): Ansible's registered results become plain answer records here,
and the options are validated by their argument spec before any step runs."""
from __future__ import annotations

from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.fleet.dispatch.plugins.action import guard


def test_answers_turn_registered_loop_results_into_plain_records():
    registered = [
        {'_m': {'worker': 'w1', 'master': 'a'}, 'ansible_loop_var': '_m', 'changed': False, 'units': [], 'invocation': {}},
        {'_m': {'worker': 'w2', 'master': 'b'}, 'ansible_loop_var': '_m', 'failed': True, 'msg': 'no bus'},
        {'_m': {'worker': 'w3', 'master': 'c'}, 'ansible_loop_var': '_m', 'unreachable': True, 'msg': 'ssh: timeout'},
        {'item': {'worker': 'w4', 'master': 'd'}, 'skipped': True, 'skip_reason': 'Conditional result was False'},
    ]
    records = guard.answers(registered)
    assert records[0] == {'target': {'worker': 'w1', 'master': 'a'}, 'status': 'ok', 'msg': '', 'units': []}
    assert [(r['target']['worker'], r['status'], r['msg']) for r in records[1:]] == [
        ('w2', 'failed', 'no bus'), ('w3', 'unreachable', 'ssh: timeout'), ('w4', 'skipped', '')]
    assert not [k for r in records for k in r if k.startswith('ansible_') or k in ('item', '_m', 'skip_reason')]


def _action(args):
    task = Task()
    task.args = args
    task.check_mode = False
    return guard.ActionModule(task, connection=mock.MagicMock(), play_context=mock.MagicMock(), loader=None,
                              templar=mock.MagicMock(), shared_loader_obj=None)


@pytest.mark.parametrize('args, words', [
    ({'stage': 'launch'}, 'stage'),
    ({}, 'stage'),
    ({'stage': 'name', 'candidates': 'task-1'}, 'candidates'),
])
def test_options_are_validated_by_the_argument_spec(args, words):
    with pytest.raises(AnsibleActionFail) as err:
        _action(args).run(task_vars={})
    assert words in str(err.value)


def test_a_name_step_runs_on_validated_options():
    out = _action({'stage': 'name', 'candidates': [{'number': 42}]}).run(task_vars={})
    assert [c['unit'] for c in out['admitted']] == ['task-42'] and out['changed'] is False


def test_the_announce_step_reads_registered_capacity_results_and_the_previous_record():
    """stage=announce: a revoked account from the registered capacity_info results; a blind master counted
    on from the previous cycle's record; the cycle's time as given."""
    capacity = [{'_m': {'worker': 'w1', 'master': 'a'}, 'ansible_loop_var': '_m', 'dark': True, 'source': 'revoked',
                 'why': 'key revoked'},
                {'_m': {'worker': 'w2', 'master': 'b'}, 'ansible_loop_var': '_m', 'unreachable': True, 'msg': 'ssh'}]
    previous = {'blind': {'w2/b': {'cycles': 2, 'since': '2026-12-01T11:50:00.000000Z'}}}
    out = _action({'stage': 'announce', 'items': [], 'now': '2026-12-01T12:00:00Z',
                   'masters': [{'worker': 'w1', 'master': 'a', 'account': 'acct'}, {'worker': 'w2', 'master': 'b'}],
                   'capacity': capacity,
                   'survey': {'masters': {'w1/a': 0}, 'blind': [{'worker': 'w2', 'master': 'b', 'why': 'probe failed: ssh'}]},
                   'previous': previous, 'blind_cycles': 3}).run(task_vars={})
    assert sorted((s['kind'], s['subject']) for s in out['stalls']) == [('blind', 'w2'), ('revoked', 'acct')]
    assert out['record']['blind']['w2/b']['cycles'] == 3 and out['record']['time'] == '2026-12-01T12:00:00.000000Z'
