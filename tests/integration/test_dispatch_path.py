# -*- coding: utf-8 -*-
"""The guarded dispatch path on real systemd hosts (issue 4): 3 test-bed workers x 2 masters.

Every dispatch here is the production playbook (playbooks/dispatch.yml or sweep.yml) in apply mode
(D15: a test of a copy proves nothing). The launched command is ``fleet-race-run``
(dispatch_fleet.py), a harmless long-running run that records its start and stop, so a duplicate is
observable even after a repair stopped it.
"""
from __future__ import annotations

import json
import pathlib
import re
import shlex
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / 'benchmarks'))

import dispatch_fleet as df  # noqa: E402
import guard_to_launch  # noqa: E402
import race  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker  # noqa: E402

pytestmark = pytest.mark.testbed
REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def fleet(bed_factory, tmp_path_factory):
    bed = bed_factory(3, block='10.88.220')     # the race harness's block (tests/testbed/README.md)
    f = df.Fleet(bed, tmp_path_factory.mktemp('fleet'))
    f.checked = f.provision_check()     # first, on hosts nobody provisioned yet
    f.provision()
    return f


def test_provision_check_diff_on_fresh_workers_is_clean(fleet):
    """`provision --check --diff` before the first real run: no template error for masters that do not
    exist yet, no warning, and it predicts changes (the real run then succeeds: the fixture's provision)."""
    res = fleet.checked
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert '[WARNING]' not in out and 'template error' not in out.lower() and '<< error' not in out, out[-4000:]
    recap = [line for line in res.stdout.splitlines() if ' : ok=' in line]
    assert len(recap) == 3 and all('changed=0 ' not in line for line in recap), recap


@pytest.fixture(autouse=True)
def clean(request):
    if 'fleet' in request.fixturenames:
        request.getfixturevalue('fleet').stop_all()
    yield


def comments(spec, numbers):
    with open_board(spec) as b:
        return [len(b.get(n).comments) for n in numbers]


def live_where(fleet, unit):
    return sorted(k for k, units in fleet.live_units().items() if unit in units)


def test_hand_dispatch_launches_the_item_and_again_while_live_launches_nothing_and_says_why(fleet, tmp_path):
    board = df.ledger_board(tmp_path / 'b.sqlite3', {41: 'hand dispatch'})
    res, rec = fleet.dispatch(board, issue=41, mode=None)      # `dispatch.yml -e issue=N` as an operator types it
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    # the start's read-back finds #41 running: that is the launch confirmed, not a refusal to say
    assert 'refused' not in res.stderr, res.stderr[-2000:]
    assert [u['unit'] for u in rec['launched']] == ['task-41']
    where = live_where(fleet, 'task-41')
    assert where == [(rec['launched'][0]['worker'], rec['launched'][0]['master'])]
    # the lease was released in always: (the next dispatcher is refused by the probe, not by a stale lease)
    assert all(le['acquired'] for le in rec['leases'])
    again, rec2 = fleet.dispatch(board, issue=41)
    assert again.returncode != 0, 'a refused hand dispatch fails, so a script can tell it from a launch'
    assert rec2['launched'] == [] and rec2['launch_calls'] == 0
    assert '#41 refused (probe): running elsewhere: task-41 is live on %s/%s' % where[0] in again.stderr
    assert live_where(fleet, 'task-41') == where
    assert comments(board, [41]) == [0], 'a refusal writes nothing to the board (D6)'


def test_check_mode_launches_nothing(fleet, tmp_path):
    board = df.ledger_board(tmp_path / 'b.sqlite3', {42: 'check mode'})
    res, rec = fleet.dispatch(board, issue=42, check=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert [(u['unit'], u['reason']) for u in rec['launched']] == [('task-42', 'would-launch')]
    assert live_where(fleet, 'task-42') == []
    assert not [r for r in fleet.records() if r['item'] == 42]


@pytest.mark.parametrize('number,reason', [(2, 'blocked by #1'), (3, 'running'), (4, 'tombstone')])
def test_hand_dispatch_of_an_ineligible_item_is_refused_by_the_sweepers_code(fleet, tmp_path, number, reason):
    """D15: the hand path runs the same tasks in apply mode; D6: nothing written, nothing launched."""
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'b.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='free', status='Ready')
        b.upsert_item(number=2, title='blocked', status='Ready', blocked_by=[1])
        b.upsert_item(number=3, title='running', status='Ready')
        b.comment(3, format_marker('start', {'unit': 'task-3'}))
        b.upsert_item(number=4, title='tombstone', status='Ready')
        b.comment(4, format_marker('start', {'unit': 'task-4'}))
        b.comment(4, format_marker('success', {'unit': 'task-4'}))
    before = comments(spec, [1, 2, 3, 4])
    res, rec = fleet.dispatch(spec, issue=number)
    assert res.returncode != 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert '#%d refused: %s' % (number, reason) in res.stderr
    assert res.stdout.count('#%d refused: %s' % (number, reason)) >= 1, 'the failed task carries the reason'
    assert rec['launched'] == [] and rec['leases'] == []
    assert comments(spec, [1, 2, 3, 4]) == before
    assert live_where(fleet, 'task-%d' % number) == []


def test_sweep_launches_every_eligible_demo_item_with_one_launch_call_per_worker(fleet, tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'demo.sqlite3')}
    made = fleet.playbook(REPO / 'playbooks' / 'demo.yml', {'dispatch_board': spec})
    assert made.returncode == 0, made.stdout[-3000:]
    res, rec = fleet.dispatch(spec)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    launched = sorted(u['number'] for u in rec['launched'])
    assert launched == [1, 5, 10, 12, 13]
    # one launch batch per master with work, never one per item, and ONE call per worker with work
    # (worker_launch serves all its masters, issue 13); together they carry every item
    pairs = set((a['worker'], a['master']) for a in rec['assignments'])
    assert len(rec['batches']) == len(pairs)
    assert rec['launch_calls'] == len(set(w for w, _m in pairs))
    # and one probe call per worker, for all its masters
    assert rec['probe_calls'] == len(fleet.bed.hosts)
    assert sorted(i['number'] for b in rec['batches'] for i in b['items']) == launched
    # D13: no cap -- five items over six idle masters spread one per master
    assert len(pairs) == 5
    # both calls ran from the runner code the worker role installed, not through the module wrapper (issue 13)
    assert dict((w, p['probe']) for w, p in rec['call_paths'].items()) == dict((h, 'runner') for h in fleet.bed.hosts), rec['call_paths']
    assert set(rec['call_paths'][w]['launch'] for w, _m in pairs) == {'runner'}, rec['call_paths']
    live = fleet.live_units()
    for u in rec['launched']:
        assert [k for k, units in live.items() if u['unit'] in units] == [(u['worker'], u['master'])]


def test_a_worker_whose_runner_code_differs_is_served_by_the_modules_and_says_why(fleet, tmp_path):
    """One byte changed in one worker's installed runner code: that worker's calls run the modules (the code
    the controller ships), the others' the runner code, and the item launches either way (issue 13)."""
    host = fleet.bed.hosts[0]
    naming = '/usr/local/lib/fleet-dispatch/runner/ansible_collections/fleet/dispatch/plugins/module_utils/_core/board/naming.py'
    fleet.bed.ssh(host, 'sudo cp -p %s /tmp/naming.py.orig && echo "# a local edit" | sudo tee -a %s >/dev/null' % (naming, naming))
    try:
        board = df.ledger_board(tmp_path / 'b.sqlite3', {45: 'stale runner code'})
        res, rec = fleet.dispatch(board, issue=45)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
        assert [u['unit'] for u in rec['launched']] == ['task-45']
        paths = rec['call_paths']
        assert paths[host]['probe'] == 'module' and 'is not this controller' in paths[host]['why'], paths
        assert [p['probe'] for w, p in sorted(paths.items()) if w != host] == ['runner', 'runner'], paths
    finally:
        fleet.bed.ssh(host, 'sudo cp -p /tmp/naming.py.orig %s' % naming)


def test_dark_masters_get_nothing_and_the_sweep_says_which_and_until_when(fleet, tmp_path):
    """D8: rate-limited until T gets nothing until T; revoked gets nothing until cleared; never an invented time."""
    host = fleet.bed.hosts[0]
    reset = time.strftime('%Y-%m-%dT%H:%M:%S.000000Z', time.gmtime(time.time() + 7200))
    states = {'d1': {'source': 'rate_limit', 'reset_at': reset, 'written_at': reset, 'message': 'limit', 'unit': 'task-1'},
              'd2': {'source': 'revoked', 'reset_at': None, 'written_at': reset, 'message': 'revoked', 'unit': 'task-1'}}
    for master, state in states.items():
        fleet.bed.ssh(host, "sudo -u %s sh -c 'mkdir -p ~/.local/state/fleet-dispatch && cat > ~/.local/state/fleet-dispatch/capacity.json'"
                      % master, input=json.dumps(state))
    try:
        board = df.ledger_board(tmp_path / 'b.sqlite3', dict((n, 'dark %d' % n) for n in (51, 52, 53, 54, 55)))
        res, rec = fleet.dispatch(board)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
        assert sorted(u['number'] for u in rec['launched']) == [51, 52, 53, 54, 55]
        assert not [u for u in rec['launched'] if u['worker'] == host]
        assert '%s/d1 is dark, rate-limited: gets nothing until %s' % (host, reset) in res.stderr
        assert '%s/d2 is dark, revoked: gets nothing until a human clears the capacity state (reset time unknown)' % host in res.stderr
        assert sorted((d['master'], d['source'], d['reset_at']) for d in rec['dark']) == [
            ('d1', 'rate_limit', reset), ('d2', 'revoked', 'unknown')]
    finally:
        fleet.bed.ssh(host, 'sudo rm -f /home/d1/.local/state/fleet-dispatch/capacity.json /home/d2/.local/state/fleet-dispatch/capacity.json')


def test_duplicate_repair_keeps_the_oldest_and_notes_the_stop_as_deliberate(fleet, tmp_path):
    """D4: the same item live on two workers -> keep the oldest, stop the other; D12: the stop is noted as deliberate."""
    h1, h2 = fleet.bed.hosts[0], fleet.bed.hosts[1]
    start = "systemd-run --user --unit=task-61 --collect -p Type=exec --setenv=PATH=/usr/local/bin:/usr/bin:/bin -- fleet-race-run 61"
    fleet.bed.ssh(h1, start, user='d1')
    time.sleep(1.5)
    fleet.bed.ssh(h2, start, user='d2')
    old_inv = fleet.bed.ssh(h1, 'systemctl --user show -p InvocationID --value task-61', user='d1').stdout.strip()
    young_inv = fleet.bed.ssh(h2, 'systemctl --user show -p InvocationID --value task-61', user='d2').stdout.strip()
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'b.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=61, title='duplicated', status='Ready')
        b.comment(61, format_marker('start', {'unit': 'task-61'}))
    res, rec = fleet.dispatch(spec)      # the sweep probes (and repairs) even with no candidate
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert 'task-61 is live on 2 masters: keeping the oldest on %s/d1' % h1 in res.stderr
    assert live_where(fleet, 'task-61') == [(h1, 'd1')]
    assert fleet.bed.ssh(h1, 'systemctl --user show -p InvocationID --value task-61', user='d1').stdout.strip() == old_inv
    note = fleet.bed.ssh(h2, 'cat ~/.local/state/fleet-dispatch/stops/task-61.%s.json' % shlex.quote(young_inv), user='d2').stdout
    note = json.loads(note)
    assert note['reason'] == 'duplicate' and note['invocation_id'] == young_inv
    assert note['kept'] == {'worker': h1, 'master': 'd1', 'invocation_id': old_inv, 'started_at': note['kept']['started_at']}
    assert note['by'] == rec['owner']
    stops = [(r['host'], r['master'], r['inv']) for r in fleet.records() if r['kind'] == 'stop' and r['inv'] in (old_inv, young_inv)]
    assert stops == [(h2, 'd2', young_inv)], 'the younger run was stopped, the survivor never (D4 aftermath): %s' % stops
    assert comments(spec, [61]) == [1], 'the repair writes nothing to the board (D6)'


def test_race_short_zero_duplicates_with_the_lease_and_some_without(fleet, pg_dsn, tmp_path):
    """The harness (benchmarks/race.py) in short: 4 dispatchers at once per trial (sweep, two hand
    dispatches, a second controller's sweep), all on the PostgreSQL lease store."""
    lines = []
    with_lease = race.race(fleet, df, 2, lease=True, dsn=pg_dsn, workdir=tmp_path / 'on', log=lines.append)
    assert with_lease['duplicate_items'] == 0, '\n'.join(lines)
    assert with_lease['failed_playbooks'] == 0, '\n'.join(lines)
    assert with_lease['runs_started'] == with_lease['items'], 'every item ran exactly once\n' + '\n'.join(lines)
    without = race.race(fleet, df, 2, lease=False, dsn=pg_dsn, workdir=tmp_path / 'off', log=lines.append)
    print('\n'.join(lines))
    assert without['duplicate_items'] > 0, 'the harness must see what it counts (D15)\n' + '\n'.join(lines)


def test_guard_to_launch_median_is_printed(fleet, tmp_path, capsys):
    """Both call paths, alternated: the worker's runner code (the default) and the modules (issue 13)."""
    lines = []
    both = guard_to_launch.measure(fleet, df, 2, tmp_path, log=lines.append, paths=('runner', 'module'))
    print('\n'.join(lines))
    for path, figures in sorted(both.items()):
        starts = figures['lease_to_start']
        assert len(starts) == 2 and all(f > 0 for f in starts), 'the lease is acquired before the unit starts (D4)\n' + '\n'.join(lines)
        # plan.json's phase timings (issue 13): every dispatch stamped each phase, in order
        assert len(figures['guard_to_launch']) == 2 and all(f > 0 for f in figures['guard_to_launch'])
        assert all(len(figures[p]) == 2 for p in ('lease', 'probe', 'place', 'workspace_launch', 'release')), path
    assert any(line.startswith('guard_to_launch') and ' median ' in line for line in lines)
    assert any('the module path' in line for line in lines), lines


def test_a_github_board_read_failing_for_two_candidates_launches_every_other(fleet, tmp_path, shared_dir):
    """D5 through the production sweep on a GitHub board (the fake over GitHub's public schema): an
    error body answering one candidate's details read and one blocked candidate's blockers read holds
    those two with the cause; every other candidate is launched, and the sweep succeeds."""
    from fakes.github import FakeGitHub
    schema = shared_dir / 'github-schema' / 'schema.graphql'
    if not schema.is_file():
        pytest.skip('%s is absent: the fake GitHub executes that schema' % schema)
    token = 'ghp_bed_sweep_token_value'
    repo = 'acme/app'
    with FakeGitHub(token=token, schema_path=str(schema)) as gh:
        gh.store.add_project('acme', 1)

        def ready(title):
            return gh.store.add_issue(repo, title, project=('acme', 1), status='Ready')
        good = [ready('good %d' % i) for i in range(4)]
        bad = ready('details fail')
        blocker = gh.store.add_issue(repo, 'blocker', project=('acme', 1), status='Backlog')
        blocked = ready('blockers fail')
        gh.store.add_blocker(repo, blocked['number'], repo, blocker['number'])
        for operation, item in (('Details', bad), ('Blockers', blocked)):
            gh.inject(404, {'message': 'Not Found'}, path='/graphql', operation=operation, node=item['id'], times=99)
        # the token reaches the sweep by its environment, never on the command line
        spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'api_url': gh.url, 'status_field': 'Status', 'ready': 'Ready'}
        res, rec = fleet.dispatch(spec, env=fleet.env(FLEET_GITHUB_TOKEN=token))
        out = res.stdout + res.stderr
        assert res.returncode == 0, out[-4000:]
        assert token not in out
        launched = sorted(u['number'] for u in rec['launched'])
        assert launched == sorted(g['number'] for g in good), (launched, out[-3000:])
        # each fault was served, and the sweep said which item it held and why
        assert set(e['operation'] for e in gh.log if e['status'] == 404) == {'Details', 'Blockers'}, gh.log
        for item in (bad, blocked):
            assert re.search(r'#%d\b[^\n]*Not Found' % item['number'], out), out[-3000:]
        live = fleet.live_units()
        for u in rec['launched']:
            assert [k for k, units in live.items() if u['unit'] in units] == [(u['worker'], u['master'])]
        held = set((bad['number'], blocked['number']))
        assert not [u for units in live.values() for u in units if int(u.rsplit('-', 1)[1]) in held], live
