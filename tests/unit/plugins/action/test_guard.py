# -*- coding: utf-8 -*-
"""fleet.dispatch.guard (action): Ansible's registered results become plain answer records here,
and the options are validated by their stage's own argument spec before any step runs."""
from __future__ import annotations

import json

import pathlib
from unittest import mock

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task

from ansible_collections.fleet.dispatch.plugins.action import guard
from ansible_collections.fleet.dispatch.plugins.modules import guard as guard_doc
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import credential_account


def test_answers_turn_registered_loop_results_into_plain_records():
    registered = [
        {'_m': {'worker': 'w1', 'master': 'a'}, 'ansible_loop_var': '_m', 'changed': False, 'units': [], 'invocation': {}},
        {'_m': {'worker': 'w2', 'master': 'b'}, 'ansible_loop_var': '_m', 'failed': True, 'msg': 'no bus'},
        {'_m': {'worker': 'w3', 'master': 'c'}, 'ansible_loop_var': '_m', 'unreachable': True, 'msg': 'ssh: timeout'},
        {'item': {'worker': 'w4', 'master': 'd'}, 'skipped': True, 'skip_reason': 'Conditional result was False'},
    ]
    records = guard.answers(registered)
    assert records[0] == {'target': {'worker': 'w1', 'master': 'a'}, 'status': 'ok', 'msg': '', 'units': []}
    assert [(r['target']['worker'], r['status'], r['msg']) for r in records[1:]] == [
        ('w2', 'failed', 'no bus'), ('w3', 'unreachable', 'ssh: timeout'), ('w4', 'skipped', '')]
    assert not [k for r in records for k in r if k.startswith('ansible_') or k in ('item', '_m', 'skip_reason')]


def _action(args):
    task = Task()
    task.args = args
    task.check_mode = False
    return guard.ActionModule(task, connection=mock.MagicMock(), play_context=mock.MagicMock(), loader=None,
                              templar=mock.MagicMock(), shared_loader_obj=None)


@pytest.mark.parametrize('args, words', [
    ({'stage': 'launch'}, 'stage'),
    ({}, 'stage'),
    ({'stage': 'name', 'candidates': 'task-1'}, 'candidates'),
])
def test_options_are_validated_by_the_argument_spec(args, words):
    with pytest.raises(AnsibleActionFail) as err:
        _action(args).run(task_vars={})
    assert words in str(err.value)


def _refused(args):
    with pytest.raises(AnsibleActionFail) as err:
        _action(args).run(task_vars={})
    return str(err.value)


LEASE = {'stage': 'lease', 'candidates': [], 'masters': []}
DECIDE = {'stage': 'decide', 'candidates': [], 'masters': [], 'worker_probes': {}}


@pytest.mark.parametrize('args, words', [
    (dict(LEASE), 'leases'),                                                      # apply mode holds leases
    ({'stage': 'report', 'launches': [], 'worker_launches': {}, 'batches': []}, 'mutually exclusive'),
    ({'stage': 'report', 'worker_launches': {}}, 'batches'),
    (dict(DECIDE, items=[], table='/nowhere'), 'mutually exclusive'),
    (dict(DECIDE, reaping={'threshold': None, 'due': []}, reap_floor=60), 'mutually exclusive'),
    ({'stage': 'decide', 'candidates': [], 'masters': []}, 'worker_probes'),     # probe_now needs the answers
    ({'stage': 'place', 'candidates': [], 'account_budget': {'usd': 1}}, 'items'),
    ({'stage': 'announce', 'items': [], 'table': '/nowhere'}, 'mutually exclusive'),
])
def test_each_stage_checks_its_own_constraints(args, words):
    assert words in _refused(args)


@pytest.mark.parametrize('args, option', [
    ({'stage': 'name', 'candidates': [], 'leases': []}, 'leases'),
    ({'stage': 'confirm', 'launched': [], 'candidates': []}, 'candidates'),
    ({'stage': 'probe', 'candidates': [], 'worker_probes': {}}, 'worker_probes'),
    (dict(LEASE, leases=[], table='/nowhere'), 'table'),
])
def test_an_option_of_another_stage_is_refused_not_ignored(args, option):
    text = _refused(args)
    assert 'Unsupported parameters' in text and option in text


def test_what_the_constraints_allow_runs():
    assert _action(dict(LEASE, plan=True)).run(task_vars={})['read_only'] is True
    assert _action(dict(DECIDE, probe_now=False, worker_probes=None)).run(task_vars={})['admitted'] == []
    out = _action({'stage': 'place', 'candidates': [], 'account_budget': {'usd': 1}, 'items': [],
                   'now': '2026-12-01T12:00:00Z'}).run(task_vars={})
    assert out['admitted'] == []


def test_the_stage_specs_name_documented_options_and_their_constraints_their_own():
    documented = yaml.safe_load(guard_doc.DOCUMENTATION)['options']
    assert set(documented) == set(guard.OPTIONS)
    for name, spec in guard.OPTIONS.items():
        doc = documented[name]
        assert (doc.get('type'), doc.get('elements'), doc.get('default'), doc.get('choices')) == \
            (spec.get('type'), spec.get('elements'), spec.get('default'), spec.get('choices')), name
    assert set(guard.STAGE_SPECS) == set(guard.STAGES)
    for stage, spec in guard.STAGE_SPECS.items():
        own = set(spec['options'])
        assert own <= set(guard.OPTIONS) and 'stage' not in own, stage
        named = [n for pair in spec.get('mutually_exclusive') or [] for n in pair]
        named += [n for key, _value, needs in spec.get('required_if') or [] for n in (key,) + tuple(needs)]
        named += [n for key, needs in (spec.get('required_by') or {}).items() for n in (key,) + tuple(needs)]
        assert set(named) <= own, stage
    assert set(o for spec in guard.STAGE_SPECS.values() for o in spec['options']) == set(guard.OPTIONS) - {'stage'}


def test_the_roles_guard_calls_pass_only_their_stages_options():
    tasks = pathlib.Path(__file__).resolve().parents[4] / 'roles' / 'dispatch' / 'tasks'
    calls = []

    def walk(node):
        if isinstance(node, list):
            for one in node:
                walk(one)
        elif isinstance(node, dict):
            if isinstance(node.get('fleet.dispatch.guard'), dict):
                calls.append(node['fleet.dispatch.guard'])
            for key in ('block', 'rescue', 'always'):
                walk(node.get(key))
    for path in sorted(tasks.glob('*.yml')):
        walk(yaml.safe_load(path.read_text(encoding='utf-8')))
    assert len(calls) >= 8
    for args in calls:
        assert set(args) - {'stage'} <= set(guard.STAGE_SPECS[args['stage']]['options']), args['stage']


def test_a_name_step_runs_on_validated_options():
    out = _action({'stage': 'name', 'candidates': [{'number': 42}]}).run(task_vars={})
    assert [c['unit'] for c in out['admitted']] == ['task-42'] and out['changed'] is False


def test_the_open_step_lists_every_master_from_the_inventory_and_reads_the_reaper_clock(tmp_path):
    """stage=open: the masters of the workers group from their host variables (profiles lower case and once, the
    account from the master, the worker, else the credentials' fingerprint - never the credentials), and the
    reaper's clock half from the board's table; reap=false gives nothing due."""
    hostvars = {'w1': {'worker_masters': [{'name': 'a'}, {'name': 'b', 'agent_account': 'acct-b'}],
                       'worker_runner_agent': 'Codex', 'worker_runner_agents': ['codex', 'gemini'],
                       'worker_agent_credentials': {'KEY': 'secret'}},
                'w2': {'worker_masters': [{'name': 'a', 'agent_credentials': {'KEY': 'other'}}], 'worker_agent_account': 'team'},
                'w3': {}}
    task_vars = {'groups': {'workers': ['w1', 'w2', 'w3'], 'all': ['w1', 'w2', 'w3']}, 'hostvars': hostvars}
    table = tmp_path / 'board_table.json'
    table.write_text(json.dumps({'now': '2026-12-01T12:00:00Z', 'items': [
        {'number': 7, 'repo': '', 'reason': 'running', 'last_marker': {'kind': 'start', 'at': '2026-12-01T11:00:00.000000Z'},
         'run_durations': [600.0]}]}))
    out = _action({'stage': 'open', 'table': str(table), 'now': '2026-12-01T12:00:00Z', 'reap_floor': 60}).run(task_vars=task_vars)
    fingerprint = credential_account({'KEY': 'secret'})
    assert out['masters'] == [
        {'worker': 'w1', 'master': 'a', 'dark': False, 'headroom': {}, 'agents': ['codex', 'gemini'], 'account': fingerprint},
        {'worker': 'w1', 'master': 'b', 'dark': False, 'headroom': {}, 'agents': ['codex', 'gemini'], 'account': 'acct-b'},
        {'worker': 'w2', 'master': 'a', 'dark': False, 'headroom': {}, 'agents': ['custom'], 'account': 'team'}]
    assert 'secret' not in json.dumps(out)
    assert [d['number'] for d in out['reaping']['due']] == [7]
    off = _action({'stage': 'open', 'table': str(table), 'now': '2026-12-01T12:00:00Z', 'reap': False}).run(task_vars=task_vars)
    assert off['reaping'] == {'threshold': None, 'due': []} and off['masters'] == out['masters']


def test_the_announce_step_reads_registered_capacity_results_and_the_previous_record():
    """stage=announce: a revoked account from the registered capacity_info results; a blind master counted
    on from the previous cycle's record; the cycle's time as given."""
    capacity = [{'_m': {'worker': 'w1', 'master': 'a'}, 'ansible_loop_var': '_m', 'dark': True, 'source': 'revoked',
                 'why': 'key revoked'},
                {'_m': {'worker': 'w2', 'master': 'b'}, 'ansible_loop_var': '_m', 'unreachable': True, 'msg': 'ssh'}]
    previous = {'blind': {'w2/b': {'cycles': 2, 'since': '2026-12-01T11:50:00.000000Z'}}}
    out = _action({'stage': 'announce', 'items': [], 'now': '2026-12-01T12:00:00Z',
                   'masters': [{'worker': 'w1', 'master': 'a', 'account': 'acct'}, {'worker': 'w2', 'master': 'b'}],
                   'capacity': capacity,
                   'survey': {'masters': {'w1/a': 0}, 'blind': [{'worker': 'w2', 'master': 'b', 'why': 'probe failed: ssh'}]},
                   'previous': previous, 'blind_cycles': 3}).run(task_vars={})
    assert sorted((s['kind'], s['subject']) for s in out['stalls']) == [('blind', 'w2'), ('revoked', 'acct')]
    assert out['record']['blind']['w2/b']['cycles'] == 3 and out['record']['time'] == '2026-12-01T12:00:00.000000Z'


def test_the_announce_step_reads_the_previous_record_from_its_file_and_says_whether_to_reconcile(tmp_path):
    """stage=announce with previous_path: the record read in the action (no slurp task); a missing file, or an
    unreadable one (with a warning), restarts the counts; no stall and no report open -> nothing to reconcile."""
    record = tmp_path / 'announce.json'
    args = {'stage': 'announce', 'items': [], 'now': '2026-12-01T12:00:00Z', 'masters': [{'worker': 'w2', 'master': 'b'}],
            'survey': {'masters': {}, 'blind': [{'worker': 'w2', 'master': 'b', 'why': 'probe failed: ssh'}]},
            'previous_path': str(record), 'blind_cycles': 3}
    out = _action(dict(args)).run(task_vars={})
    assert out['record']['blind']['w2/b']['cycles'] == 1 and out['reconcile'] is True     # no record: read the board
    record.write_text(json.dumps({'blind': {'w2/b': {'cycles': 1, 'since': '2026-12-01T11:55:00.000000Z'}},
                                  'open': [], 'filed': [], 'reports_known': True}))
    out = _action(dict(args)).run(task_vars={})
    assert out['record']['blind']['w2/b']['cycles'] == 2 and out['stalls'] == [] and out['reconcile'] is False
    record.write_text(json.dumps(dict(out['record'], open=[], filed=[], reports_known=True)))   # what the write step keeps
    out = _action(dict(args)).run(task_vars={})
    assert out['stalls'][0]['kind'] == 'blind' and out['reconcile'] is True       # the third cycle: a stall to file
    record.write_text('{not json')
    action = _action(dict(args))
    with mock.patch.object(action, '_display') as display:
        out = action.run(task_vars={})
    assert out['record']['blind']['w2/b']['cycles'] == 1 and 'unreadable' in display.warning.call_args[0][0]


# -- stage=decide and stage=report with worker_launches: one call, the same steps (issue 13, D15) ----------------
DECIDE_MASTERS = [{'worker': 'w1', 'master': 'a', 'account': ''}, {'worker': 'w1', 'master': 'b', 'account': ''},
                  {'worker': 'w2', 'master': 'a', 'account': ''}]


def _unit(number, inv):
    return {'name': 'task-%d' % number, 'item': {'number': number, 'repo': ''}, 'invocation_id': inv, 'start_us': 1,
            'start_wall_us': 1, 'started_at': '2026-12-01T11:00:00Z'}


def _decide_args():
    # w1/a runs task-7 already; w1/b is free; w2 never answered (its master is blind)
    probes = {'w1': {'changed': False, 'masters': [
        {'master': 'a', 'failed': False, 'msg': '', 'units': [_unit(7, 'i7')], 'dark': False, 'headroom': {'live_runs': 1}},
        {'master': 'b', 'failed': False, 'msg': '', 'units': [], 'dark': False, 'headroom': {'live_runs': 0}}]},
        'w2': {'failed': True, 'msg': 'no answer from this worker'}}
    cands = [{'number': 7, 'repo': '', 'unit': 'task-7'}, {'number': 8, 'repo': '', 'unit': 'task-8'}]
    return {'stage': 'decide', 'candidates': cands, 'masters': DECIDE_MASTERS, 'worker_probes': probes, 'owner': 'me',
            'command': ['run', '{number}', '{workdir}'], 'clone': '~/clones/main', 'branch': 'trunk',
            'timing': {'start': 1.0, 'leased': 2.0}}


def _warned(args):
    action = _action(args)
    with mock.patch.object(action, '_display') as display:
        out = action.run(task_vars={})
    return out, [c.args[0] for c in display.warning.call_args_list]


def test_the_decide_step_is_the_probe_place_and_batch_steps_in_one_call():
    """stage=decide answers exactly what the three stages answer when called one after another on the same
    probe answers (one implementation), gives the worker with work its launch list and stamps the step."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.fanout import launch_work, probe_answers
    args = _decide_args()
    out, warnings = _warned(args)
    results = probe_answers(DECIDE_MASTERS, args['worker_probes'])
    probed = _action({'stage': 'probe', 'candidates': args['candidates'], 'probes': results, 'owner': 'me'}).run(task_vars={})
    placed = _action({'stage': 'place', 'candidates': probed['admitted'], 'masters': DECIDE_MASTERS, 'capacity': results,
                      'survey': probed['survey']}).run(task_vars={})
    batched = _action({'stage': 'batch', 'candidates': placed['admitted'], 'command': args['command'],
                       'owner': 'me'}).run(task_vars={})
    assert out['probe'] == {'results': results}
    for key in ('admitted', 'refused', 'survey', 'duplicates'):
        assert out['probed'][key] == probed[key], key
    for key in ('admitted', 'refused', 'plan', 'masters'):
        assert out['placed'][key] == placed[key], key
    assert out['batched']['batches'] == batched['batches'] and out['batched']['refused'] == batched['refused']
    assert out['work'] == launch_work(batched['batches'], {}, '~/clones/main', 'trunk')
    # task-7 is live on w1/a: refused at the probe; task-8 goes to w1/b (w2/a is blind and gets nothing)
    assert [(r['number'], r['stage']) for r in out['refused']] == [(7, 'probe')]
    assert [(a['number'], a['worker'], a['master']) for a in out['admitted']] == [(8, 'w1', 'b')]
    assert [(i['number'], i['master'], i['branch']) for i in out['work']['w1']] == [(8, 'b', 'trunk')] and 'w2' not in out['work']
    assert out['timing']['leased'] == 2.0 and out['timing']['placed'] >= out['timing']['probed'] > 2.0
    assert out['changed'] is False and 'warnings' not in out['probed']
    # every refusal is said on stderr (a warning), once (D6)
    assert [w for w in warnings if 'refused' in w] == ['#7 refused (probe): %s' % out['refused'][0]['why']]


def test_the_decide_step_fences_out_a_candidate_whose_lease_was_taken_over_and_launches_the_rest(tmp_path):
    """D4: a dispatcher that stalled inside its leases (a suspended controller) decides on a stale probe; just before
    the launch each admitted candidate's lease is read in its store, and one another dispatcher took over under a
    larger token is refused and launched nowhere, while one still held goes on. Without lease_store, nothing is
    fenced."""
    import dataclasses
    import datetime as dt
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import open_store
    path = str(tmp_path / 'leases.sqlite3')
    store = open_store('sqlite', path=path)
    mine = store.acquire('task-8', 'me', 600)
    an_hour_ago = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
    lost = store.acquire('task-9', 'me', 60, now=an_hour_ago)     # long expired: this dispatcher stalled
    store.acquire('task-9', 'other-dispatcher', 600)              # took it over, a larger token
    store.close()
    args = _decide_args()
    args['candidates'] = [{'number': 8, 'repo': '', 'unit': 'task-8', 'lease': dataclasses.asdict(mine)},
                          {'number': 9, 'repo': '', 'unit': 'task-9', 'lease': dataclasses.asdict(lost)}]
    out, warnings = _warned(dict(args, lease_store={'backend': 'sqlite', 'path': path}))
    assert [(a['number'], a['master']) for a in out['admitted']] == [(8, 'b')]
    (refused,) = out['refused']
    assert (refused['number'], refused['stage']) == (9, 'lease') and 'taken over' in refused['why'], refused
    assert [i['number'] for i in out['work']['w1']] == [8]
    assert any(w.startswith('#9 refused (lease)') for w in warnings), warnings
    unfenced, _warnings = _warned(args)
    assert sorted(a['number'] for a in unfenced['admitted']) == [8, 9]
    # a store it cannot open fences nothing (D5) and says so
    with mock.patch.dict('os.environ', {'FLEET_DISPATCH_LEASE_DSN': ''}):
        opened, warned = _warned(dict(args, lease_store={'backend': 'postgres'}))
    assert sorted(a['number'] for a in opened['admitted']) == [8, 9]
    assert any('could not open the lease store' in w and 'fail open' in w for w in warned), warned


def test_the_decide_step_of_a_cycle_that_probed_nobody_places_nothing_and_reads_the_reaper_clock():
    args = dict(_decide_args(), probe_now=False, worker_probes={}, items=[], now='2026-12-01T12:00:00Z', reap_floor=600)
    out, _w = _warned(args)
    assert out['probe'] == {'results': []} and out['admitted'] == [] and out['work'] == {}
    assert out['reaping']['due'] == [] and out['reaping']['threshold']['seconds'] == 600


def test_the_report_step_reads_each_workers_launch_answer_and_stamps_the_launch():
    batches = [{'worker': 'w1', 'master': 'a', 'items': [{'number': 1, 'unit': 'task-1'}]},
               {'worker': 'w2', 'master': 'a', 'items': [{'number': 3, 'unit': 'task-3'}]}]
    launches = {'w1': {'masters': [{'master': 'a', 'failed': False, 'msg': '', 'results': [
        {'number': 1, 'repo': '', 'unit': 'task-1', 'reason': 'launched', 'invocation_id': 'i'}]}]},
        'w2': {'unreachable': True, 'msg': 'ssh: connect refused'}}
    out, _w = _warned({'stage': 'report', 'worker_launches': launches, 'batches': batches, 'timing': {'leased': 2.0}})
    assert [r['unit'] for r in out['launched']] == ['task-1']
    assert [(r['unit'], r['why']) for r in out['failed']] == [('task-3', 'ssh: connect refused')]
    assert out['timing']['launched'] > out['timing']['leased'] == 2.0


def test_the_lease_step_names_the_workers_to_probe_and_stamps_the_lease():
    """stage=lease is play 1's last step (issue 13): the candidates holding their lease, the workers the probe
    play calls (all of them when a candidate holds its lease), and `leased` stamped as it starts."""
    cands = [{'number': 1, 'unit': 'task-1', 'lease_name': 'task-1'}, {'number': 2, 'unit': 'task-2', 'lease_name': 'task-2'}]
    leases = [{'name': 'task-1', 'acquired': True}, {'name': 'task-2', 'acquired': False, 'holder': 'other'}]
    out, warnings = _warned({'stage': 'lease', 'candidates': cands, 'leases': leases, 'masters': DECIDE_MASTERS,
                             'timing': {'start': 1.0}})
    assert [c['number'] for c in out['admitted']] == [1] and [r['number'] for r in out['refused']] == [2]
    assert out['probe_now'] is True and out['probe_hosts'] == ['w1', 'w2']
    assert out['probe_masters'] == {'w1': ['a', 'b'], 'w2': ['a']}
    assert out['timing']['start'] == 1.0 and out['timing']['leased'] > 1.0
    assert [w for w in warnings if 'refused' in w] == ['#2 refused (lease): %s' % out['refused'][0]['why']]


@pytest.mark.parametrize('leases, always, probed', [
    ([{'name': 'task-1', 'acquired': False, 'holder': 'other'}], False, []),      # a hand dispatch that lost its lease
    ([{'name': 'task-1', 'acquired': False, 'holder': 'other'}], True, ['w1', 'w2']),   # the sweep repairs anyway (D4)
])
def test_the_lease_step_probes_nobody_without_a_candidate_unless_told_to(leases, always, probed):
    cands = [{'number': 1, 'unit': 'task-1', 'lease_name': 'task-1'}]
    out, _w = _warned({'stage': 'lease', 'candidates': cands, 'leases': leases, 'masters': DECIDE_MASTERS,
                       'probe_always': always})
    assert out['admitted'] == [] and out['probe_hosts'] == probed and out['probe_now'] is bool(probed)
    assert out['probe_masters'] == {'w1': ['a', 'b'], 'w2': ['a']}


def test_the_decide_step_measures_each_worker_against_the_board_s_clock():
    """board_info found this controller 10 s behind the board; w1 answered 610 s behind this controller."""
    args = _decide_args()
    args['worker_probes']['w1']['clock_skew_s'] = -610.0
    out, warnings = _warned(dict(args, board_offset_s=-10.0))
    assert out['probed']['clocks'] == {'w1': {'controller_skew_s': -610.0, 'board_skew_s': -620.0}}
    assert [w for w in warnings if 'clock' in w] == [
        "worker w1's clock is 620 s behind the board's: runs are dated by the board, but fix its time sync (timedatectl, chrony)"]
    out, warnings = _warned(args)      # no board figure: against this controller's
    assert out['probed']['clocks'] == {'w1': {'controller_skew_s': -610.0, 'board_skew_s': None}}
    assert [w for w in warnings if 'clock' in w][0].startswith("worker w1's clock is 610 s behind this controller's")


def test_the_decide_step_returns_the_launch_options_it_was_given():
    launch = {'path': '/usr/bin', 'environment_file': '', 'notifier': 'fleet-notify@', 'runner_version': ''}
    out, _w = _warned(dict(_decide_args(), launch_args=launch))
    assert out['launch_args'] == launch and out['launch_args'] is not launch


# -- plan mode: a read-only probe, the same decide step, nothing held and no work -----------------------------------
def test_plan_mode_takes_no_lease_and_names_every_worker_for_a_read_only_probe():
    cands = [{'number': 1, 'unit': 'task-1', 'lease_name': 'task-1'}]
    out, warnings = _warned({'stage': 'lease', 'plan': True, 'candidates': cands, 'masters': DECIDE_MASTERS})
    assert [c['number'] for c in out['admitted']] == [1] and out['admitted'][0]['lease'] is None
    assert out['read_only'] is True and out['probe_now'] is True and out['probe_hosts'] == ['w1', 'w2']
    assert warnings == [], 'no lease is asked for, so none is "disabled" either'
    # no candidate at all: the plan still probes, to show the dark masters
    out, _w = _warned({'stage': 'lease', 'plan': True, 'candidates': [], 'masters': DECIDE_MASTERS})
    assert out['probe_hosts'] == ['w1', 'w2']
    # with the board's id it names the candidates as the name step does, in the same step
    named, _w = _warned({'stage': 'lease', 'plan': True, 'candidates': [{'number': 1, 'repo': ''}], 'masters': DECIDE_MASTERS,
                         'board_id': 'b1'})
    alone = _action({'stage': 'name', 'candidates': [{'number': 1, 'repo': ''}], 'board_id': 'b1'}).run(task_vars={})
    assert named['admitted'] == [dict(c, lease=None) for c in alone['admitted']] and named['admitted'][0]['unit'] == 'task-1'
    # apply's lease step says it does not probe read-only
    out, _w = _warned({'stage': 'lease', 'candidates': cands, 'leases': [{'name': 'task-1', 'acquired': True}],
                       'masters': DECIDE_MASTERS})
    assert out['read_only'] is False


def _dark(args):
    """w1/b is dark (rate limited until 13:00); w1/a runs task-7; w2 never answered."""
    probes = dict(args['worker_probes'])
    w1 = dict(probes['w1'])
    w1['masters'] = [w1['masters'][0], dict(w1['masters'][1], dark=True, source='rate_limit', reset_at='2026-12-01T13:00:00Z')]
    probes['w1'] = w1
    return dict(args, worker_probes=probes, plan=True)


def test_plan_mode_shows_the_dark_masters_holds_what_is_live_and_marks_what_was_not_probed():
    """The plan reads the probe as apply does - task-7 live on w1/a is held, w1/b is dark and gets nothing - and a
    master that did not answer (w2/a) is placed as configured, marked not probed; no worker gets work."""
    out, warnings = _warned(_dark(_decide_args()))
    plan = out['plan']
    assert [(d['worker'], d['master'], d['source'], d['reset_at']) for d in plan['dark']] == [('w1', 'b', 'rate_limit', '2026-12-01T13:00:00Z')]
    assert [(a['number'], a['worker'], a['master'], a['probed']) for a in plan['assignments']] == [(8, 'w2', 'a', False)]
    assert [(u['number'], 'live' in u['why']) for u in plan['unplaced']] == [(7, True)]
    assert [(g['worker'], g['master']) for g in plan['unprobed']] == [('w2', 'a')] == [(g['worker'], g['master']) for g in out['unprobed']]
    assert out['work'] == {}, 'plan mode launches nothing'
    assert any('w2/a was not probed' in w and 'apply gives it none' in w for w in warnings), warnings
    # the table shows each of them
    from ansible.plugins.loader import filter_loader
    table = getattr(filter_loader.get('fleet.dispatch.plan_table'), 'j2_function', None) or filter_loader.get('fleet.dispatch.plan_table')
    text = table(plan, [])
    rows = [line.split() for line in text.splitlines()]
    assert ['dark', 'w1/b', 'rate_limit', 'until', '2026-12-01T13:00:00Z'] in rows, text
    assert ['#8', 'launch', 'w2/a', '(not', 'probed)'] in [r[:5] for r in rows], text
    assert ['unprobed', 'w2/a'] in [r[:2] for r in rows] and '#7' in [r[0] for r in rows if r and r[1:2] == ['hold']], text


def test_plan_mode_with_no_candidate_still_names_the_dark_masters():
    out, _w = _warned(dict(_dark(_decide_args()), candidates=[]))
    assert [(d['worker'], d['master']) for d in out['plan']['dark']] == [('w1', 'b')] and out['plan']['assignments'] == []
    # apply's decide step with no candidate still warns nothing about the masters, and has no plan view
    out, warnings = _warned(dict(_decide_args(), candidates=[]))
    assert 'plan' not in out and [w for w in warnings if 'dark' in w] == []


def test_the_decide_step_reads_the_board_from_its_table(tmp_path):
    """A sweep's read wrote its table (board_info table): the decide step reads the reaper's clock half and the items
    that may not run from that file, exactly as from the items given inline; a table that is gone fails the step."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.table import write_table
    items = [{'number': 5, 'repo': '', 'eligible': False, 'reason': 'running', 'run_durations': [],
              'last_marker': {'kind': 'start', 'at': '2026-12-01T10:00:00.000000Z'}},
             {'number': 8, 'repo': '', 'eligible': True, 'reason': 'eligible', 'run_durations': [120.0], 'last_marker': None}]
    write_table(str(tmp_path / 'board_table.json'), items, '2026-12-01T12:00:00.000000Z')
    base = dict(_decide_args(), now='2026-12-01T12:00:00Z', reap_floor=600)
    inline, _w = _warned(dict(base, items=items))
    filed, _w = _warned(dict(base, table=str(tmp_path / 'board_table.json')))
    assert [d['number'] for d in filed['reaping']['due']] == [5] and filed['reaping'] == inline['reaping']
    assert filed['ineligible'] == inline['ineligible'] == [5]
    with pytest.raises(AnsibleActionFail, match='cannot read the board table'):
        _action(dict(base, table=str(tmp_path / 'gone.json'))).run(task_vars={})


def _due(number, started='2026-12-01T10:00:00Z'):
    return {'number': number, 'repo': '', 'unit': 'task-%d' % number, 'started_at': started, 'age_s': 7200}


REAPING = {'threshold': {'seconds': 600, 'source': 'floor'}, 'due': [_due(5), _due(7)]}


def test_the_decide_step_decides_the_resets_on_this_cycles_probe():
    """The reaper's probe half is the cycle's probe: with every master answering, an orphaned start live nowhere is reset
    (task-5) and one live on a master is held (task-7, live on w1/a); the lease this run holds is required."""
    probes = dict(_decide_args()['worker_probes'], w2={'changed': False, 'masters': [
        {'master': 'a', 'failed': False, 'msg': '', 'units': [], 'dark': False, 'headroom': {'live_runs': 0}}]})
    leases = [{'name': 'task-5', 'acquired': True}, {'name': 'task-7', 'acquired': True}]
    args = dict(_decide_args(), worker_probes=probes, now='2026-12-01T12:00:00Z', reaping=REAPING, reap_leases=leases,
                reap_lease_enabled=True)
    out, _w = _warned(args)
    assert out['reaping'] == REAPING, 'the clock half taken before the probe, not computed again'
    assert [r['number'] for r in out['reaped']['reap']] == [5] and out['reaped']['reap'][0]['fields']['masters_probed'] == 3
    assert [h['number'] for h in out['reaped']['held']] == [7]
    unleased, _w = _warned(dict(args, reap_leases=[{'name': 'task-5', 'acquired': False, 'owner': 'other'}]))
    assert unleased['reaped']['reap'] == [] and 'held by other' in unleased['reaped']['held'][0]['why']


@pytest.mark.parametrize('plan', [False, True])
def test_a_master_that_did_not_answer_the_probe_keeps_every_orphan_from_the_reaper(plan):
    """w2 did not answer: blind is not dead (D5, D14) - in plan mode too, where the placement reads it as configured."""
    args = dict(_decide_args(), now='2026-12-01T12:00:00Z', reaping=REAPING, plan=plan)
    out, _w = _warned(args)
    assert out['reaped']['reap'] == []
    assert [(h['number'], h['blind']) for h in out['reaped']['held'] if 'blind' in h] == [(5, ['w2/a']), (7, ['w2/a'])]
    nobody, _w = _warned(dict(args, probe_now=False, worker_probes={}))
    assert nobody['reaped']['reap'] == [] and len(nobody['reaped']['held']) == 2, 'no probe, no evidence'
