# -*- coding: utf-8 -*-
"""The announcer through the production sweep (apply mode) on the controller, with a ledger board.

The worker is unreachable on purpose (a closed port on loopback), so nothing launches: these check
the wiring of roles/dispatch/tasks/announce.yml -- one report per tombstone, none on re-runs, the
report closed when the tombstone clears; a worker blind for N sweeps announced once. The same rows
on real systemd hosts are tests/integration/test_announcer.py.
"""
from __future__ import annotations

import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker

from test_playbooks import playbook  # noqa: E402 - the same runner as the other playbook tests


def _board_file(tmp_path, name):
    """The one file of that name in the board's own state directory (<state>/fleet-dispatch/<board id>/, issue 18)."""
    found = sorted((tmp_path / 'state' / 'fleet-dispatch').glob('*/' + name))
    assert len(found) == 1, 'expected one %s under one board directory, found %s' % (name, found)
    return found[0]


@pytest.fixture
def setup(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='free', status='Backlog')
        b.upsert_item(number=4, title='tombstone', status='Ready')
        b.comment(4, format_marker('start', {'unit': 'task-4', 'host': 'w9', 'master': 'agent1'}))
        b.comment(4, format_marker('success', {'unit': 'task-4'}))
    inventory = tmp_path / 'inventory.json'
    inventory.write_text(json.dumps({'workers': {'hosts': {'w9': {'ansible_host': '127.0.0.1', 'ansible_port': 1}},
                                                 'vars': {'worker_masters': [{'name': 'agent1'}]}}}))
    return spec, inventory


def sweep(tmp_path, spec, inventory, *extra):
    res = playbook('sweep.yml', tmp_path, spec, '-e', 'dispatch_mode=apply', '-e', 'dispatch_lease_path=%s' % (tmp_path / 'leases'),
                   '-e', json.dumps({'dispatch_run_command': ['true']}), *extra, inventory=inventory)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return res


def reports(spec):
    with open_board(spec) as b:
        return b.reports()


def test_a_tombstone_is_one_report_reruns_file_none_and_clearing_closes_it(tmp_path, setup):
    spec, inventory = setup
    for _cycle in range(2):
        sweep(tmp_path, spec, inventory, '-e', 'dispatch_announce_blind_cycles=99')
    found = [r for r in reports(spec) if 'tombstone' in r['title']]
    assert [(r['title'], r['state']) for r in found] == [('[fleet] tombstone: #4', 'open')]
    status = playbook('status.yml', tmp_path, spec, inventory=inventory)
    assert status.returncode == 0, status.stdout[-3000:]
    assert 'announced (open reports): 1' in status.stdout
    assert 'report #%d [fleet] tombstone: #4' % found[0]['number'] in status.stdout
    written = json.loads(_board_file(tmp_path, 'status.json').read_text())
    assert [r['number'] for r in written['reports']] == [found[0]['number']]
    with open_board(spec) as b:
        assert [i.number for i in b.read().items] == [1, 4]            # the report is never a candidate
        b.upsert_item(number=4, state='closed')
        b.upsert_item(number=4, state='reopened')
    sweep(tmp_path, spec, inventory, '-e', 'dispatch_announce_blind_cycles=99')
    after = [r for r in reports(spec) if 'tombstone' in r['title']]
    assert [(r['number'], r['state']) for r in after] == [(found[0]['number'], 'closed')]
    with open_board(spec) as b:
        assert 'cleared' in b.get(found[0]['number']).comments[-1].body


def test_a_worker_blind_for_n_sweeps_is_announced_once(tmp_path, setup):
    spec, inventory = setup
    counts = []
    for _cycle in range(3):
        sweep(tmp_path, spec, inventory, '-e', 'dispatch_announce_blind_cycles=2')
        counts.append(len([r for r in reports(spec) if r['title'] == '[fleet] worker blind: w9']))
    assert counts == [0, 1, 1]
    record = json.loads(_board_file(tmp_path, 'announce.json').read_text())
    assert record['blind']['w9/agent1']['cycles'] == 3


def test_check_mode_files_nothing(tmp_path, setup):
    spec, inventory = setup
    sweep(tmp_path, spec, inventory, '--check')
    assert reports(spec) == []
