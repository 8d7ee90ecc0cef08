# -*- coding: utf-8 -*-
"""board_info on the controller runs the module's own body in the controller's process (plugin_utils/in_process.py):
the same options, the same answer, the same masking, and the module anywhere else."""
from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board_read import ARGUMENT_SPEC, run
from ansible_collections.fleet.dispatch.plugins.plugin_utils.in_process import local_controller_task, run_in_process

NOW = '2026-12-01T12:00:00Z'


def test_a_board_read_in_process_answers_as_the_module_does(tmp_path):
    path = str(tmp_path / 'ledger.sqlite3')
    with open_board({'kind': 'ledger', 'path': path, 'create': True}) as b:
        b.upsert_item(number=1, title='free', status='Ready')
        b.upsert_item(number=2, title='later', status='Backlog')
    out, warnings = run_in_process(run, ARGUMENT_SPEC, {'board': {'kind': 'ledger', 'path': path}, 'now': NOW, 'numbers': [1, 3]})
    assert not out.get('failed') and out['changed'] is False and out['readable'] is True
    assert [c['number'] for c in out['candidates']] == [1] and [i['number'] for i in out['board_items']] == [1]
    assert warnings == ['#3 refused: it is not on the board']


def test_options_are_validated_with_the_module_spec_and_secrets_masked(tmp_path):
    out, _warnings = run_in_process(run, ARGUMENT_SPEC, {'board': {'kind': 'ledger'}, 'colour': 'red'})
    assert out['failed'] and 'colour' in out['msg']
    dsn = 'postgresql://fleet:s3cret-pw@127.0.0.1:1/none?connect_timeout=1'
    out, warnings = run_in_process(run, ARGUMENT_SPEC, {'board': {'kind': 'ledger', 'dsn': dsn}, 'mode': 'plan'})
    assert out.get('readable') is False or out.get('failed'), out
    assert dsn not in repr(out) + repr(warnings)


def test_only_a_local_task_as_this_user_without_an_environment_runs_in_process():
    local, ssh = SimpleNamespace(transport='local'), SimpleNamespace(transport='ssh')
    quiet, become = SimpleNamespace(become=False), SimpleNamespace(become=True)
    assert local_controller_task(local, quiet, SimpleNamespace(environment=[{}]))
    assert not local_controller_task(ssh, quiet, SimpleNamespace(environment=[]))
    assert not local_controller_task(local, become, SimpleNamespace(environment=[]))
    assert not local_controller_task(local, quiet, SimpleNamespace(environment=[{'HTTPS_PROXY': 'http://proxy'}]))
