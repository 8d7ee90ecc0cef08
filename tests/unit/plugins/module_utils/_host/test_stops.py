# -*- coding: utf-8 -*-
"""_host.stops: the stop note's one writer and one reader (format: docs/dispatch.md)."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._host.stops import (
    default_state_dir, stop_note_path, take_stop_note, write_stop_note)

NOTE = {'reason': 'duplicate', 'unit': 'task-9', 'kept': {'worker': 'w2', 'master': 'd1'}}


def test_the_writer_and_the_reader_agree_and_the_note_is_read_once(tmp_path):
    path = write_stop_note(str(tmp_path), 'task-9.service', 'inv-1', NOTE)
    assert path == str(tmp_path / 'stops' / 'task-9.inv-1.json') == stop_note_path(str(tmp_path), 'task-9', 'inv-1')
    assert take_stop_note(str(tmp_path), 'task-9', 'inv-1') == dict(NOTE, invocation_id='inv-1')
    assert take_stop_note(str(tmp_path), 'task-9', 'inv-1') is None
    assert list((tmp_path / 'stops').iterdir()) == []     # no temporary file left behind


def test_another_invocations_note_is_not_this_runs(tmp_path):
    write_stop_note(str(tmp_path), 'task-9', 'inv-0', NOTE)
    assert take_stop_note(str(tmp_path), 'task-9', 'inv-1') is None
    assert (tmp_path / 'stops' / 'task-9.inv-0.json').exists()


@pytest.mark.parametrize('text', ['not json', '[1]', '{"reason": "other"}', '{"reason": "duplicate", "invocation_id": "x"}'])
def test_what_is_no_evidence_is_no_note(tmp_path, text):
    (tmp_path / 'stops').mkdir()
    (tmp_path / 'stops' / 'task-9.inv-1.json').write_text(text)
    assert take_stop_note(str(tmp_path), 'task-9', 'inv-1') is None


@pytest.mark.parametrize('inv', ['', '../x'])
def test_no_invocation_or_a_path_in_it_reads_nothing_and_writes_nothing(tmp_path, inv):
    assert take_stop_note(str(tmp_path), 'task-9', inv) is None
    with pytest.raises(ValueError):
        write_stop_note(str(tmp_path), 'task-9', inv, NOTE)


def test_the_writer_refuses_a_note_that_is_not_a_duplicate_stop(tmp_path):
    with pytest.raises(ValueError):
        write_stop_note(str(tmp_path), 'task-9', 'inv-1', dict(NOTE, reason='other'))
    assert not (tmp_path / 'stops').exists()


def test_the_default_state_dir_follows_xdg_state_home():
    assert default_state_dir({'XDG_STATE_HOME': '/s'}) == '/s/fleet-dispatch'
    assert default_state_dir({}).endswith('/.local/state/fleet-dispatch')
