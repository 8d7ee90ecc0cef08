# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The announcer's rows of the fault matrix on real systemd hosts (D8, D14), through the production
sweep in apply mode (tests/integration/dispatch_fleet.py: every bed host a worker with masters d1, d2).

* a tombstone -> exactly one report item; re-runs file no second one; clearing it closes the report;
* a rate limit on one account shared by two masters -> both masters dark after the run that hit it;
  the items go to the masters of the other account; none of those goes dark; an item whose runs
  died on both accounts is announced, never parked;
* a worker unreachable during the sweep -> after N sweeps one announcement (its sshd is stopped:
  the host is up, the probe cannot reach it -- blind, not dead). Last in this file: the host stays
  unreachable until the bed is torn down.

The capacity state of the run that hit the limit is written in the runner's own format (the runner's
write in a real unit is tests/integration/test_runner_units.py's capacity test); this file tests what
the sweep does with it.
"""
from __future__ import annotations

import json
import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import dispatch_fleet as df  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker  # noqa: E402

pytestmark = pytest.mark.testbed


@pytest.fixture(scope='module')
def fleet(bed_factory, tmp_path_factory):
    bed = bed_factory(2)
    f = df.Fleet(bed, tmp_path_factory.mktemp('announce'))
    f.provision()
    # accounts across workers: d1 of every worker shares acct-a, d2 shares acct-b (host_vars beside the inventory)
    hv = pathlib.Path(f.inventory).parent / 'host_vars'
    hv.mkdir(exist_ok=True)
    for host in bed.hosts:
        (hv / ('%s.json' % host)).write_text(json.dumps({'worker_masters': [
            {'name': 'd1', 'agent_account': 'acct-a'}, {'name': 'd2', 'agent_account': 'acct-b'}]}))
    return f


@pytest.fixture(autouse=True)
def clean(fleet):
    fleet.stop_all()
    yield


def sweep(fleet, board, state, **extra):
    res, rec = fleet.dispatch(board, state_dir=str(state), **extra)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return res, rec


def reports(board):
    with open_board(board) as b:
        return b.reports()


def test_a_tombstone_is_exactly_one_report_reruns_file_none_and_clearing_closes_it(fleet, tmp_path):
    board = df.ledger_board(tmp_path / 'tomb.sqlite3', {61: 'tombstone', 62: 'free'})
    with open_board(board) as b:
        b.comment(61, format_marker('start', {'unit': 'task-61', 'host': fleet.bed.hosts[0], 'master': 'd1'}))
        b.comment(61, format_marker('success', {'unit': 'task-61'}))
    state = tmp_path / 'state'
    counts = []
    for _cycle in range(3):
        _res, rec = sweep(fleet, board, state)
        counts.append(len([r for r in reports(board) if r['title'] == '[fleet] tombstone: #61' and r['state'] == 'open']))
    assert counts == [1, 1, 1]
    assert len(reports(board)) == 1, 'one report, and no other'
    assert 61 not in [u['number'] for u in rec['launched']], 'a tombstone is never dispatched'
    report = reports(board)[0]['number']
    with open_board(board) as b:
        assert report not in [i.number for i in b.read().items], 'the report is never a candidate'
        b.upsert_item(number=61, state='closed')            # the human's remedy: the work was finished
    sweep(fleet, board, state)
    assert [(r['number'], r['state']) for r in reports(board)] == [(report, 'closed')]
    with open_board(board) as b:
        assert 'cleared' in b.get(report).comments[-1].body
    sweep(fleet, board, state)
    assert len(reports(board)) == 1, 'a cleared stall files nothing more'


def _write_state(fleet, host, master, state):
    fleet.bed.ssh(host, "sudo -u %s sh -c 'mkdir -p ~/.local/state/fleet-dispatch && cat > ~/.local/state/fleet-dispatch/capacity.json'"
                  % master, input=json.dumps(state))


def test_a_rate_limit_on_one_account_darkens_both_its_masters_and_no_other(fleet, tmp_path):
    h1, h2 = fleet.bed.hosts[:2]
    reset = time.strftime('%Y-%m-%dT%H:%M:%S.000000Z', time.gmtime(time.time() + 7200))
    now = time.strftime('%Y-%m-%dT%H:%M:%S.000000Z', time.gmtime())
    _write_state(fleet, h1, 'd1', {'source': 'rate_limit', 'reset_at': reset, 'written_at': now,
                                   'message': 'Claude usage limit reached', 'unit': 'task-71'})
    try:
        board = df.ledger_board(tmp_path / 'cap.sqlite3', dict((n, 'item %d' % n) for n in (71, 72, 73, 74, 75)))
        with open_board(board) as b:
            # 71: the run that hit acct-a's limit on h1/d1 (a capacity marker: not an attempt)
            b.comment(71, format_marker('start', {'unit': 'task-71', 'host': h1, 'master': 'd1'}))
            b.comment(71, format_marker('capacity', {'unit': 'task-71', 'host': h1, 'master': 'd1', 'source': 'rate_limit',
                                                     'reset_at': reset}))
            # 75: runs that died on BOTH accounts' limits in the window: its own output may trip the signature
            for master in ('d1', 'd2'):
                b.comment(75, format_marker('start', {'unit': 'task-75', 'host': h2, 'master': master}))
                b.comment(75, format_marker('capacity', {'unit': 'task-75', 'host': h2, 'master': master,
                                                         'source': 'rate_limit'}))
        res, rec = sweep(fleet, board, tmp_path / 'state')
        dark = sorted((d['worker'], d['master'], d['source'], d['reset_at']) for d in rec['dark'])
        assert dark == [(h1, 'd1', 'rate_limit', reset), (h2, 'd1', 'rate_limit', reset)], 'both acct-a masters, no other'
        launched = rec['launched']
        assert sorted(u['number'] for u in launched) == [71, 72, 73, 74, 75]
        assert set(u['master'] for u in launched) == {'d2'}, 'the items go to the other account'
        assert '%s/d1 is dark, rate-limited: gets nothing until %s (account acct-a, as on %s/d1)' % (h2, reset, h1) in res.stderr
        assert not [m for m in rec['masters'] if m['master'] == 'd2' and m['dark']], 'no master of acct-b went dark'
        items = dict((i['number'], i) for i in json.loads(pathlib.Path(rec['table']).read_text())['items'])  # the read's table
        assert items[71]['attempts'] == 0 and items[75]['attempts'] == 0, 'capacity deaths spend no attempt (D8)'
        titles = sorted(r['title'] for r in reports(board))
        assert titles == ['[fleet] capacity deaths on 2 accounts: #75'], 'the rate limit itself is never announced'
    finally:
        fleet.bed.ssh(h1, 'sudo rm -f /home/d1/.local/state/fleet-dispatch/capacity.json')


def test_a_worker_unreachable_during_the_sweep_is_announced_once_after_n_sweeps(fleet, tmp_path):
    """Last in the file: h2's sshd stays stopped (the bed is torn down after this module)."""
    h2 = fleet.bed.hosts[1]
    board = df.ledger_board(tmp_path / 'blind.sqlite3', {81: 'free'})
    fleet.bed.ssh(h2, 'sudo systemctl stop ssh.socket ssh.service 2>/dev/null; true', check=False)
    # new connections only: a ControlPersist master opened before the stop would still reach the host
    env = fleet.env(ANSIBLE_SSH_CONTROL_PATH_DIR=str(tmp_path / 'cp'))
    counts = []
    for _cycle in range(3):
        _res, rec = sweep(fleet, board, tmp_path / 'state', env=env, dispatch_announce_blind_cycles=2)
        counts.append(len([r for r in reports(board) if r['title'] == '[fleet] worker blind: %s' % h2]))
    assert counts == [0, 1, 1], 'one announcement after N=2 sweeps, and only one'
    assert len(reports(board)) == 1
    assert h2 not in [u['worker'] for u in rec['launched']]
    record = json.loads((tmp_path / 'state' / 'announce.json').read_text())
    assert sorted(record['blind']) == ['%s/d1' % h2, '%s/d2' % h2]
