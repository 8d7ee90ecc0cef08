# -*- coding: utf-8 -*-
"""guard stage=batch with a secret-looking setenv (issue 14): named in a warning, never its value; the batches
carry the value as given, because they are the launch's input (docs of launch/guard say exactly that)."""
from __future__ import annotations

from unittest import mock

from ansible.playbook.task import Task

from ansible_collections.fleet.dispatch.plugins.action import guard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import plan


def test_a_secret_looking_setenv_is_named_in_a_warning_and_never_its_value():
    task = Task()
    task.args = {'stage': 'batch', 'candidates': [{'number': 5, 'unit': 'task-5', 'worker': 'w1', 'master': 'a'}],
                 'setenv': {'ANTHROPIC_API_KEY': 'sk-ant-never-warned', 'EDITOR': 'true'}}
    task.check_mode = False
    action = guard.ActionModule(task, connection=mock.MagicMock(), play_context=mock.MagicMock(), loader=None,
                                templar=mock.MagicMock(), shared_loader_obj=None)
    warned = []
    with mock.patch.object(action, '_display') as display:
        display.warning.side_effect = warned.append
        out = action.run(task_vars={})
    named = [w for w in warned if 'ANTHROPIC_API_KEY' in w]
    assert len(named) == 1 and 'credentials file' in named[0]
    assert not [w for w in warned if 'EDITOR' in w or 'sk-ant-never-warned' in w]
    assert 'sk-ant-never-warned' not in repr(warned) and out['changed'] is False
    # the value itself is the launch's input, as given (the docs say so: a mask would be launched)
    batch = plan.batches([{'number': 5, 'unit': 'task-5', 'worker': 'w1', 'master': 'a'}], setenv=task.args['setenv'])
    assert batch['batches'][0]['launch'][0]['setenv']['ANTHROPIC_API_KEY'] == 'sk-ant-never-warned'
