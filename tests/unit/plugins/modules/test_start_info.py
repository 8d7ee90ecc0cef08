# -*- coding: utf-8 -*-
"""fleet.dispatch.start_info: main() over a scripted systemctl and a real state directory (issue 18, D20)."""
from __future__ import annotations

import json

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.modules import start_info as mod

PROPS = '--property=' + ','.join(mod.PROPS)


def show(unit, text):
    return {'argv': ['systemctl', '--user', 'show', unit + '.service', PROPS, '--timestamp=us+utc'], 'out': text}


def record(state, unit, **data):
    run_dir = state / 'runs' / unit
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / 'start.json').write_text(json.dumps(data))


def test_started_failed_and_a_unit_gone_without_a_record(run_module, tmp_path):
    record(tmp_path, 'task-1', invocation_id='i1', started=True, run='r1')
    record(tmp_path, 'task-2', invocation_id='i2', started=False, cause='board_unreachable', reason='the runner on w/m cannot open the board')
    record(tmp_path, 'task-3', invocation_id='old', started=True, run='r0')     # a previous invocation's record
    r = ScriptedRunner([
        show('task-1', 'LoadState=not-found\nActiveState=inactive\nResult=success\nExecMainStatus=0\nInvocationID=\n'),
        show('task-2', 'LoadState=loaded\nActiveState=failed\nResult=exit-code\nExecMainStatus=23\nInvocationID=i2\n'),
        show('task-3', 'LoadState=loaded\nActiveState=failed\nResult=exit-code\nExecMainStatus=21\nInvocationID=i3\n'),
    ])
    runs = [{'unit': 'task-1', 'invocation_id': 'i1', 'number': 1}, {'unit': 'task-2', 'invocation_id': 'i2'},
            {'unit': 'task-3', 'invocation_id': 'i3'}]
    kind, res, _w = run_module(mod, {'runs': runs, 'wait': 5, 'state_dir': str(tmp_path)}, runner=r)
    assert kind == 'exit' and res['changed'] is False and r.remaining() == []
    by = dict((a['unit'], a) for a in res['runs'])
    assert by['task-1']['state'] == 'started' and by['task-1']['run'] == 'r1'
    assert by['task-2']['state'] == 'failed' and by['task-2']['cause'] == 'board_unreachable'
    assert 'cannot open the board' in by['task-2']['reason']
    assert by['task-3']['state'] == 'failed' and by['task-3']['cause'] == 'no_start_record' and 'exit status 21, update_failed' in by['task-3']['reason']


def test_a_run_still_without_a_record_is_pending_when_the_wait_ends(run_module, tmp_path):
    active = 'LoadState=loaded\nActiveState=active\nResult=success\nExecMainStatus=0\nInvocationID=i1\n'
    r = ScriptedRunner([show('task-1', active)] * 50)
    kind, res, _w = run_module(mod, {'runs': [{'unit': 'task-1', 'invocation_id': 'i1'}], 'wait': 0.2, 'interval': 0.1,
                                     'state_dir': str(tmp_path)}, runner=r)
    assert kind == 'exit' and res['runs'][0]['state'] == 'pending' and len(r.calls) >= 2


def test_a_run_without_a_unit_name_is_refused(run_module, tmp_path):
    kind, res, _w = run_module(mod, {'runs': [{'invocation_id': 'i1'}], 'state_dir': str(tmp_path)}, runner=ScriptedRunner([]))
    assert kind == 'fail' and 'unit' in res['msg']
