# -*- coding: utf-8 -*-
"""fleet.dispatch.worker_probe / worker_launch (actions): the call from the worker's runner code when it is
this collection's, the module otherwise (issue 13). The worker's side (``_runner.worker_call``) runs for
real here, in a child Python started from this checkout exactly as the action's command line starts it;
only systemctl is a script. The bed runs both paths on real hosts (tests/integration/test_worker_call.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from unittest import mock

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._runner.boot import BOOTSTRAP
from ansible.playbook.task import Task

from ansible_collections.fleet.dispatch.plugins.action import worker_launch, worker_probe
from ansible_collections.fleet.dispatch.plugins.plugin_utils import worker_call

UNIT = ('Id=task-3.service\nLoadState=loaded\nActiveState=active\nSubState=running\nInvocationID=a\nMainPID=7\n'
        'ExecMainStartTimestampMonotonic=100\nActiveEnterTimestampMonotonic=0\n')


def _action(mod, args, check=False):
    task = Task()
    task.args = args
    play_context = mock.MagicMock()
    play_context.check_mode = check
    templar = mock.MagicMock()
    templar.template.side_effect = lambda value: value
    action = mod.ActionModule(task, connection=mock.MagicMock(), play_context=play_context, loader=None,
                              templar=templar, shared_loader_obj=None)
    action._execute_module = mock.MagicMock(return_value={'changed': False, 'masters': ['from the module']})
    action._display = mock.MagicMock()
    return action


def _answers(*docs, rc=0, stderr=''):
    """A _low_level_execute_command that answers each call with the next document (or raw text)."""
    calls = []

    def run(cmd, sudoable=True, in_data=None, **_kw):
        # the local connection writes in_data to the child's stdin pipe as is: it must be bytes (the demo's user case)
        assert isinstance(in_data, bytes), type(in_data)
        calls.append({'cmd': cmd, 'sudoable': sudoable, 'request': json.loads(in_data)})
        doc = docs[len(calls) - 1]
        return {'rc': rc, 'stdout': doc if isinstance(doc, str) else json.dumps(doc), 'stderr': stderr}
    run.calls = calls
    return run


def test_without_a_runner_dir_the_module_runs_and_nothing_else():
    action = _action(worker_probe, {'masters': ['a']})
    action._low_level_execute_command = _answers()
    out = action.run(task_vars={})
    assert out['call_path'] == 'module' and out['call_path_reason'] == '' and out['masters'] == ['from the module']
    assert action._low_level_execute_command.calls == []
    assert action._execute_module.call_args.kwargs['module_name'] == 'fleet.dispatch.worker_probe'


def test_the_runner_call_carries_validated_options_on_stdin_and_its_answer_is_the_result():
    action = _action(worker_probe, {'masters': ['a', 'b'], 'runner_dir': '/opt/run ner'})
    action._low_level_execute_command = _answers({'result': {'changed': False, 'masters': [{'master': 'a'}]},
                                                  'warnings': ['a: odd unit'], 'masked': []})
    out = action.run(task_vars={'ansible_python_interpreter': '/usr/bin/python3.11'})
    (call,) = action._low_level_execute_command.calls
    # from /, isolated: nothing in the become user's home or a workspace is imported (_runner/boot.py)
    assert call['cmd'] == ("cd / && exec /usr/bin/python3.11 -I -B -c '%s' '/opt/run ner' "
                           "ansible_collections.fleet.dispatch.plugins.module_utils._runner.worker_call" % BOOTSTRAP)
    assert call['sudoable'] is True
    assert call['request']['call'] == 'probe' and call['request']['digest'] == worker_call.controller_digest()
    assert call['request']['params'] == {'masters': ['a', 'b'], 'capacity': True, 'now': None, 'controller_time': None, 'runner_dir': '/opt/run ner'}
    assert call['request']['check'] is False
    assert out['call_path'] == 'runner' and out['masters'] == [{'master': 'a'}]
    action._execute_module.assert_not_called()
    action._display.warning.assert_called_once_with('a: odd unit')


def test_a_masked_value_never_reaches_the_result():
    action = _action(worker_launch, {'items': [], 'runner_dir': '/r'}, check=True)
    action._low_level_execute_command = _answers({'result': {'changed': False, 'masters': [{'results': [{'stderr': 'env s3cr3t-v'}]}]},
                                                  'warnings': [], 'masked': ['s3cr3t-v']})
    out = action.run(task_vars={})
    assert 's3cr3t-v' not in json.dumps(out) and out['call_path'] == 'runner'
    assert action._low_level_execute_command.calls[0]['request']['check'] is True


def test_other_runner_code_makes_the_module_run_and_says_why():
    action = _action(worker_launch, {'items': [], 'runner_dir': '/r'})
    action._low_level_execute_command = _answers({'unavailable': 'the runner code in /r is not this controller\'s collection'})
    out = action.run(task_vars={})
    assert out['call_path'] == 'module' and 'not this controller' in out['call_path_reason']
    action._execute_module.assert_called_once()


def test_bad_options_are_left_to_the_module_to_report():
    action = _action(worker_probe, {'runner_dir': '/r'})      # masters is required
    action._low_level_execute_command = _answers()
    out = action.run(task_vars={})
    assert out['call_path'] == 'module' and action._low_level_execute_command.calls == []


@pytest.mark.parametrize('mod, rc, stderr, module_runs', [
    (worker_probe, 1, 'Traceback ... KeyError', True),       # a read: the module may read again
    (worker_launch, 1, 'Traceback ... KeyError', False),     # a launch that may have started runs is never repeated
    (worker_launch, 127, 'sh: 1: /usr/bin/python3: not found', True),
    (worker_launch, 1, "No module named 'ansible_collections.fleet'", True),
])
def test_a_call_without_an_answer(mod, rc, stderr, module_runs):
    action = _action(mod, {'masters': ['a'], 'items': [], 'runner_dir': '/r'})
    action._task.args.pop('items' if mod is worker_probe else 'masters')
    action._low_level_execute_command = _answers('', rc=rc, stderr=stderr)
    out = action.run(task_vars={})
    if module_runs:
        assert out['call_path'] == 'module' and 'answered no JSON (rc %d)' % rc in out['call_path_reason']
        action._execute_module.assert_called_once()
    else:
        assert out['failed'] is True and 'nothing was retried' in out['msg'] and out['call_path'] == 'runner'
        action._execute_module.assert_not_called()


def _worker_side(tmp_path, repo_root):
    """A _low_level_execute_command that runs the command line in a shell here, systemctl a script on PATH."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'systemctl').write_text("#!/bin/sh\nprintf '%s'\n" % UNIT.replace('\n', '\\n'))
    (bin_dir / 'systemctl').chmod(0o755)
    env = dict(os.environ, PATH='%s:%s' % (bin_dir, os.environ['PATH']), XDG_STATE_HOME=str(tmp_path / 'state'))

    def run(cmd, sudoable=True, in_data=None, **_kw):
        proc = subprocess.run(['/bin/sh', '-c', cmd], input=in_data, env=env, capture_output=True, check=False)
        return {'rc': proc.returncode, 'stdout': proc.stdout.decode(), 'stderr': proc.stderr.decode()}
    return run


def test_the_worker_side_answers_the_request_the_action_builds(tmp_path):
    """The real entry point, started by the action's own command line from this checkout's code."""
    import pwd
    root = pathlib_root()
    me = pwd.getpwuid(os.getuid()).pw_name
    action = _action(worker_probe, {'masters': [me], 'runner_dir': root})
    action._low_level_execute_command = _worker_side(tmp_path, root)
    out = action.run(task_vars={'ansible_python_interpreter': sys.executable})
    assert out['call_path'] == 'runner', out
    (mine,) = out['masters']
    assert mine['master'] == me and mine['failed'] is False and [u['name'] for u in mine['units']] == ['task-3']
    assert mine['dark'] is False and out['headroom']['cpus'] >= 1


def test_the_worker_side_refuses_code_that_is_not_the_controllers(tmp_path):
    """A copy of module_utils with one byte changed: the entry point says so and runs nothing; the module runs."""
    import shutil
    root = pathlib_root()
    copy = tmp_path / 'runner'
    src = os.path.join(root, 'ansible_collections', 'fleet', 'dispatch', 'plugins', 'module_utils')
    dest = copy / 'ansible_collections' / 'fleet' / 'dispatch' / 'plugins' / 'module_utils'
    shutil.copytree(src, str(dest), ignore=shutil.ignore_patterns('__pycache__'))
    with open(str(dest / '_core' / 'board' / 'naming.py'), 'a') as handle:
        handle.write('\n# a local edit\n')
    action = _action(worker_probe, {'masters': ['root'], 'runner_dir': str(copy)})
    action._low_level_execute_command = _worker_side(tmp_path, str(copy))
    out = action.run(task_vars={'ansible_python_interpreter': sys.executable})
    assert out['call_path'] == 'module' and 'is not this controller' in out['call_path_reason']
    assert out['masters'] == ['from the module']


def pathlib_root():
    """The directory holding ansible_collections/fleet/dispatch for this checkout (tests/collection_path.py)."""
    from collection_path import collection_root
    return str(collection_root(os.path.realpath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))))


@pytest.mark.parametrize('request_doc', [None, [], {'call': 'stop', 'params': {}}, {'call': 'probe', 'params': 'masters'}])
def test_the_worker_side_says_what_is_wrong_with_a_request_and_runs_nothing(request_doc):
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner import worker_call as entry
    doc = entry.answer(request_doc)
    assert list(doc) == ['unavailable'] and 'not a worker call request' in doc['unavailable']


def test_the_local_connection_gets_bytes_and_a_send_that_breaks_runs_the_module(tmp_path):
    """The demo's user case (worker localhost, connection local): a str request made the local connection's pipe
    write fail ('memoryview: a bytes-like object is required') and the probe with it; now the request is bytes, and
    a send that raises before anything ran leaves the call to the module."""
    action = _action(worker_probe, {'masters': ['a'], 'runner_dir': '/r'})

    def broken(cmd, sudoable=True, in_data=None, **_kw):
        raise TypeError('memoryview: a bytes-like object is required, not %r' % type(in_data).__name__)
    action._low_level_execute_command = broken
    out = action.run(task_vars={})
    assert out['call_path'] == 'module' and 'could not be sent' in out['call_path_reason'] and "'bytes'" in out['call_path_reason']
    action._execute_module.assert_called_once()
