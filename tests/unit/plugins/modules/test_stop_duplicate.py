# -*- coding: utf-8 -*-
"""fleet.dispatch.stop_duplicate: the duplicate repair's stop (D4, D12) over a scripted systemctl.

Stops only the duplicate invocation; the note is written (by _host.stops, the runner's reader's
writer) before the stop and removed again when systemd refuses; check mode predicts, writes nothing.
"""
from __future__ import annotations

import json

import pytest

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.stops import take_stop_note
from ansible_collections.fleet.dispatch.plugins.modules import stop_duplicate as mod

SHOW = ['systemctl', '--user', 'show', 'task-61.service', '--property=Id,LoadState,ActiveState,InvocationID',
        '--timestamp=us+utc']
STOP = ['systemctl', '--user', 'stop', 'task-61.service']
NOTE = {'reason': 'duplicate', 'unit': 'task-61', 'invocation_id': 'young',
        'kept': {'worker': 'w1', 'master': 'agent1', 'invocation_id': 'old', 'started_at': '2026-11-30T01:00:00Z'},
        'by': 'owner-1', 'at': '2026-11-30T01:05:00Z'}


def _show(inv, active='active'):
    return 'Id=task-61.service\nLoadState=loaded\nActiveState=%s\nInvocationID=%s\n' % (active, inv)


def _args(tmp_path, **kw):
    return dict({'unit': 'task-61', 'invocation_id': 'young', 'note': NOTE, 'state_dir': str(tmp_path)}, **kw)


def _notes(tmp_path):
    return sorted(p.name for p in (tmp_path / 'stops').glob('*')) if (tmp_path / 'stops').exists() else []


def test_stops_the_duplicate_after_writing_the_note_the_runner_reads(run_module, tmp_path):
    r = ScriptedRunner().add(SHOW, out=_show('young')).add(STOP)
    kind, res, warnings = run_module(mod, _args(tmp_path), runner=r)
    assert kind == 'exit' and r.remaining() == [] and warnings == []
    assert res['changed'] is True and res['stopped'] is True and res['reason'] == 'stopped'
    assert _notes(tmp_path) == ['task-61.young.json']
    assert json.loads((tmp_path / 'stops' / 'task-61.young.json').read_text()) == NOTE
    # the runner's reader takes exactly this note, once
    assert take_stop_note(str(tmp_path), 'task-61', 'young') == NOTE
    assert _notes(tmp_path) == []


@pytest.mark.parametrize('now', ['another', ''], ids=['a-new-run-holds-the-name', 'ended'])
def test_a_unit_that_moved_on_is_not_touched(run_module, tmp_path, now):
    r = ScriptedRunner().add(SHOW, out=_show(now, active='active' if now else 'inactive'))
    kind, res, warnings = run_module(mod, _args(tmp_path), runner=r)
    assert kind == 'exit' and r.remaining() == []          # no stop was run
    assert res['changed'] is False and res['stopped'] is False and res['reason'] == 'moved-on'
    assert res['current_invocation_id'] == (now or None)
    assert _notes(tmp_path) == [] and any('not stopped' in w for w in warnings)


@pytest.mark.parametrize('inv,reason,changed', [('young', 'would-stop', True), ('another', 'moved-on', False)])
def test_check_mode_predicts_and_changes_nothing(run_module, tmp_path, inv, reason, changed):
    r = ScriptedRunner().add(SHOW, out=_show(inv))
    kind, res, _w = run_module(mod, _args(tmp_path), runner=r, check=True)
    assert kind == 'exit' and r.remaining() == []          # read only: no stop
    assert res['reason'] == reason and res['changed'] is changed and res['stopped'] is False
    assert _notes(tmp_path) == []


def test_a_refused_stop_fails_and_takes_its_note_back(run_module, tmp_path):
    r = ScriptedRunner().add(SHOW, out=_show('young')).add(STOP, rc=1, err='Failed to stop task-61.service: Access denied\n')
    kind, res, _w = run_module(mod, _args(tmp_path), runner=r)
    assert kind == 'fail' and 'Access denied' in res['msg'] and 'removed again' in res['msg']
    assert _notes(tmp_path) == []     # a note left for a live run would make its next stop read as a duplicate's


def test_a_note_for_another_invocation_is_refused_before_anything_runs(run_module, tmp_path):
    r = ScriptedRunner().add(SHOW, out=_show('young'))
    kind, res, _w = run_module(mod, _args(tmp_path, note=dict(NOTE, invocation_id='other')), runner=r)
    assert kind == 'fail' and 'other' in res['msg'] and _notes(tmp_path) == []
