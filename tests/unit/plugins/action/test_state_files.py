# -*- coding: utf-8 -*-
"""fleet.dispatch.state_files (action): the cycle's files written whole, in the controller's process."""
from __future__ import annotations

import json
import os
import stat
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.fleet.dispatch.plugins.action import state_files


def _run(args, check=False):
    task = Task()
    task.args = args
    task.check_mode = check
    action = state_files.ActionModule(task, connection=mock.MagicMock(), play_context=mock.MagicMock(), loader=None,
                                      templar=mock.MagicMock(), shared_loader_obj=None)
    return action.run(task_vars={})


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_dirs_are_made_and_files_written_with_their_modes(tmp_path):
    state = tmp_path / 'state' / 'board'
    out = _run({'dirs': [str(state)], 'files': [
        {'path': str(state / 'plan.json'), 'data': {'b': [1, 2], 'a': 'é'}},
        {'path': str(state / 'status.html'), 'content': '<p>ok</p>\n', 'mode': '0644'},
    ]})
    assert out['changed'] is True and out['dirs_made'] == [str(state)]
    assert out['written'] == [str(state / 'plan.json'), str(state / 'status.html')]
    assert _mode(state) == 0o700 and _mode(state / 'plan.json') == 0o600 and _mode(state / 'status.html') == 0o644
    text = (state / 'plan.json').read_text(encoding='utf-8')
    assert json.loads(text) == {'a': 'é', 'b': [1, 2]} and text.endswith('\n') and text.index('"a"') < text.index('"b"')
    assert (state / 'status.html').read_text() == '<p>ok</p>\n'
    assert sorted(os.listdir(state)) == ['plan.json', 'status.html']   # no temporary file left behind


def test_the_same_content_and_mode_is_left_alone_and_a_new_mode_is_applied(tmp_path):
    path = tmp_path / 'cycle.json'
    args = {'files': [{'path': str(path), 'data': {'result': 'ok'}}]}
    assert _run(args)['changed'] is True
    inode = os.stat(path).st_ino
    again = _run(args)
    assert again['changed'] is False and again['unchanged'] == [str(path)] and os.stat(path).st_ino == inode
    moved = _run({'files': [{'path': str(path), 'data': {'result': 'ok'}, 'mode': '0640'}]})
    assert moved['written'] == [str(path)] and _mode(path) == 0o640


def test_a_file_is_replaced_whole_never_edited_in_place(tmp_path):
    """A reader holding the old file keeps reading the old bytes: the new file is renamed over it."""
    path = tmp_path / 'fleet-dispatch.prom'
    path.write_text('old 1\n')
    with open(path) as reader:
        _run({'files': [{'path': str(path), 'content': 'new 2\n'}]})
        assert reader.read() == 'old 1\n'
    assert path.read_text() == 'new 2\n'


def test_check_mode_writes_nothing_and_says_what_it_would_write(tmp_path):
    state = tmp_path / 'state'
    out = _run({'dirs': [str(state)], 'files': [{'path': str(tmp_path / 'plan.json'), 'content': 'x'}]}, check=True)
    assert out['changed'] is True and out['dirs_made'] == [str(state)] and out['written'] == [str(tmp_path / 'plan.json')]
    assert sorted(os.listdir(tmp_path)) == []


def test_an_unwritable_place_fails_naming_the_path_and_the_fix(tmp_path):
    out = _run({'files': [{'path': str(tmp_path / 'missing' / 'plan.json'), 'content': 'x'}]})
    assert out['failed'] is True and str(tmp_path / 'missing') in out['msg'] and 'dispatch_state_dir' in out['msg']


@pytest.mark.parametrize('files, words', [
    ([{'path': '/tmp/x'}], 'content'),
    ([{'path': '/tmp/x', 'content': 'a', 'data': {}}], 'mutually exclusive'),
    ([{'content': 'a'}], 'path'),
])
def test_bad_options_fail_before_anything_is_written(files, words):
    with pytest.raises(AnsibleActionFail) as err:
        _run({'files': files})
    assert words in str(err.value)


def test_a_bad_mode_is_named(tmp_path):
    out = _run({'files': [{'path': str(tmp_path / 'a'), 'content': 'x', 'mode': 'rw-'}]})
    assert out['failed'] is True and "'rw-'" in out['msg'] and not (tmp_path / 'a').exists()
