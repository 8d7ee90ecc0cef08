# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet.dispatch.guard``: one step of the guarded dispatch path, on the controller.

Thin: every decision is a pure function of ``module_utils/_core/dispatch/plan.py``. The action validates
its options, turns Ansible's registered loop results into the plain answer records ``_core.dispatch.plan``
reads (``answers``), calls the step, and says every refusal on **stderr** as an Ansible warning:
a refusal writes nothing to the board, it is logged.

``stage=decide`` is play 3 of the guarded path in ONE call: the per-worker probe answers
become one answer per master (``_core.dispatch.fanout.probe_answers``), then the probe, place and batch steps
run in sequence exactly as their own stages do, and each worker with work gets its launch list
(``_core.dispatch.fanout.launch_work``). One task instead of six forked task runs inside the lease; the same
functions, so there is no second copy of any step (D15).

``plan: true`` (plan mode) is the same path with nothing held and nothing launched: ``stage=lease`` takes no
lease and names every worker to probe (a read-only, check-mode probe), and ``stage=decide`` reads a master that
did not answer as configured (``_core.dispatch.fanout.plan_answers``), names it in ``unprobed``, gives no worker
any work, and returns the table's input as ``plan``.
"""

from __future__ import annotations

import datetime
import json
import os
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.fleet.dispatch.plugins.module_utils._board.table import TableError, read_table
from ansible_collections.fleet.dispatch.plugins.plugin_utils.loop_results import answers
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.agent_env import secret_looking
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import parse_budget
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.announce import cycle as announce_cycle
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.fanout import (
    clock_warnings, configured_masters, launch_answers, launch_work, plan_answers, probe_answers, probe_workers, worker_clocks)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import UTC, format_time, parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.reaper import DEFAULT_FLOOR_S, reaping
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.reaper import decide as reap_decide
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.start import confirm
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import (
    batches, gate_fence, gate_leases, gate_place, gate_probe, launch_report, name_candidates, repairs, survey,
)

# What the cycle's other controller tasks import, imported here so that their forked task workers inherit it: the
# strategy loads this action's class in the controller's own process (to read its connection needs) before it forks
# the workers of the tasks after it, and a task whose template names one fleet.dispatch filter or the mutex lookup
# otherwise imports every filter file and these in its own worker - 0.1-0.2 s a task on a 2-core machine, about 1 s
# of an apply sweep (docs/dispatch.md, "What a sweep costs"). Not used here. tests/unit/repo/
# test_import_layers.py keeps this list the closure of what the filters and the lookups import.
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import explain as _warm_explain  # noqa: F401
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import run_host as _warm_run_host  # noqa: F401
from ansible_collections.fleet.dispatch.plugins.module_utils._store import lease as _warm_lease  # noqa: F401
from ansible_collections.fleet.dispatch.plugins.plugin_utils import lease_keeper as _warm_lease_keeper  # noqa: F401
from ansible_collections.fleet.dispatch.plugins.plugin_utils import page as _warm_page  # noqa: F401

STAGES = ('open', 'name', 'lease', 'probe', 'place', 'batch', 'decide', 'report', 'confirm', 'announce')

OPTIONS = dict(
    stage=dict(type='str', required=True, choices=list(STAGES)),
    candidates=dict(type='list', elements='dict', default=[]),
    # stage=lease: the mutex answers, required unless plan mode (which takes no lease)
    leases=dict(type='list', elements='dict'),
    lease_enabled=dict(type='bool', default=True),
    # stage=lease: probe every worker even with no candidate (the sweep repairs duplicates, D4)
    probe_always=dict(type='bool', default=False),
    # stage=lease and stage=decide: plan mode - no lease, a read-only probe of every worker, no work
    plan=dict(type='bool', default=False),
    probes=dict(type='list', elements='dict', default=[]),
    owner=dict(type='str', default=''),
    masters=dict(type='list', elements='dict', default=[]),
    capacity=dict(type='list', elements='dict', default=[]),
    survey=dict(type='dict', default={}),
    # omitted (null): the workspaces are made in the launch call (worker_launch), {workdir} is filled there
    workspaces=dict(type='list', elements='dict'),
    command=dict(type='list', elements='str', default=[]),
    setenv=dict(type='dict', default={}),
    launches=dict(type='list', elements='dict', default=[]),
    # stage=announce, confirm (None: confirm skips the board check), place and decide
    items=dict(type='list', elements='dict'),
    # stage=announce and stage=decide: the items from board_info's table file instead (a sweep's read)
    table=dict(type='path'),
    previous=dict(type='dict', default={}),
    # stage=announce: the announcer's record file, read here instead of a slurp task
    previous_path=dict(type='path'),
    unreaped=dict(type='list', elements='dict', default=[]),
    now=dict(type='str'),
    blind_cycles=dict(type='int', default=3),
    capacity_window=dict(type='int', default=21600),
    # stage=name (and stage=lease in plan mode): the board's id, the lease names' namespace
    board_id=dict(type='str', default=''),
    # stage=confirm (D20)
    launched=dict(type='list', elements='dict', default=[]),
    starts=dict(type='list', elements='dict', default=[]),
    wait=dict(type='float', default=0),
    # stage=decide: probe + place + batch + the launch lists in one call
    worker_probes=dict(type='dict'),
    board_offset_s=dict(type='float'),     # board_info's clock_offset_s: this controller's clock minus the board's
    probe_now=dict(type='bool', default=True),
    clones=dict(type='dict', default={}),
    clone=dict(type='str', default=''),
    branch=dict(type='str', default='main'),
    reap_floor=dict(type='float', default=DEFAULT_FLOOR_S),
    # stage=decide: the reaper's clock half taken before the probe (the due items' leases were taken with it);
    # the reaper's probe half is read from this cycle's probe answers (D14)
    reaping=dict(type='dict'),
    reap_leases=dict(type='list', elements='dict', default=[]),
    reap_lease_enabled=dict(type='bool', default=False),
    # stage=place and stage=decide: an agent account's daily budget {tokens, usd} (with items and now)
    account_budget=dict(type='dict'),
    timing=dict(type='dict', default={}),
    # stage=open: the inventory group of the workers (their masters are read from their host variables), and
    # whether the reaper's clock half runs (with items or table, now and reap_floor)
    workers_group=dict(type='str', default='workers'),
    reap=dict(type='bool', default=True),
    # stage=decide: what every worker_launch call of the launch play takes besides its items (returned as is)
    launch_args=dict(type='dict', default={}),
    # stage=decide: the lease store the leases were taken in (the mutex lookup's backend, path, dsn): each admitted
    # candidate's lease is checked there just before the launch (its fencing token); omitted, nothing is fenced
    lease_store=dict(type='dict', options=dict(backend=dict(type='str', default='sqlite'), path=dict(type='str', default=''),
                                               dsn=dict(type='str', default='', no_log=True))),
    # stage=report: the per-worker worker_launch results, read per batch in the same call
    worker_launches=dict(type='dict'),
    batches=dict(type='list', elements='dict'),
)
"""Every option once, with its type and default (``plugins/modules/guard.py`` documents them)."""

STAGE_SPECS = {
    'open': dict(options=('workers_group', 'reap', 'items', 'table', 'now', 'reap_floor'),
                 mutually_exclusive=[('items', 'table')]),
    'name': dict(options=('candidates', 'board_id')),
    'lease': dict(options=('candidates', 'leases', 'lease_enabled', 'probe_always', 'plan', 'board_id', 'masters', 'timing'),
                  required_if=[('plan', False, ('leases',))]),
    'probe': dict(options=('candidates', 'probes', 'owner')),
    'place': dict(options=('candidates', 'masters', 'capacity', 'survey', 'items', 'now', 'account_budget'),
                  required_by={'account_budget': ('items', 'now')}),
    'batch': dict(options=('candidates', 'workspaces', 'command', 'setenv', 'owner')),
    # the probe, place and batch steps' options, and the decide step's own
    'decide': dict(options=('candidates', 'masters', 'owner', 'items', 'table', 'now', 'account_budget', 'command', 'setenv',
                            'plan', 'worker_probes', 'probe_now', 'board_offset_s', 'clones', 'clone', 'branch', 'reap_floor',
                            'reaping', 'reap_leases', 'reap_lease_enabled', 'timing', 'launch_args', 'lease_store'),
                   mutually_exclusive=[('items', 'table'), ('reaping', 'reap_floor')],
                   required_if=[('probe_now', True, ('worker_probes',))]),
    'report': dict(options=('launches', 'worker_launches', 'batches', 'timing'),
                   mutually_exclusive=[('launches', 'worker_launches')], required_by={'worker_launches': ('batches',)}),
    'confirm': dict(options=('launched', 'starts', 'items', 'wait')),
    'announce': dict(options=('items', 'table', 'masters', 'capacity', 'survey', 'previous', 'previous_path', 'unreaped', 'now',
                              'blind_cycles', 'capacity_window'),
                     mutually_exclusive=[('items', 'table'), ('previous', 'previous_path')]),
}
"""Each stage's own options and their constraints: an option of another stage is refused, not ignored."""


def stage_spec(stage):
    """``validate_argument_spec``'s keywords for ``stage``: ``stage`` itself, the stage's options and constraints
    (an unknown stage gets ``stage`` alone, whose ``choices`` then name the stages)."""
    spec = STAGE_SPECS.get(stage, {}) if isinstance(stage, str) else {}
    return dict(argument_spec=dict((name, OPTIONS[name]) for name in ('stage',) + spec.get('options', ())),
                mutually_exclusive=spec.get('mutually_exclusive'), required_if=spec.get('required_if'),
                required_by=spec.get('required_by'))


# what Ansible adds to a module's answer; the rest is the module's own return values
def _account_budget(value):
    """The daily budget option as a ``Budget`` (figures templated as text are numbers; 0 or none: no limit)."""
    value = value or {}
    try:
        tokens = int(float(value.get('tokens') or 0))
        usd = float(value.get('usd') or 0)
    except (TypeError, ValueError):
        raise ValueError('account_budget must be {tokens: N, usd: X}, not %r' % (value,)) from None
    return parse_budget({'tokens': tokens or None, 'usd': usd or None})


def _refusal_text(ref):
    where = ref.get('repo') + '#' if ref.get('repo') else '#'
    return '%s%s refused (%s): %s' % (where, ref.get('number'), ref.get('stage'), ref.get('why'))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(**stage_spec(self._task.args.get('stage')))
        if args.get('table') and args.get('items') is None:
            try:
                args['items'] = read_table(args['table'])
            except TableError as exc:
                raise AnsibleActionFail(str(exc))
        if args.get('previous_path'):
            args['previous'] = read_record(args['previous_path'], self._display.warning)
        if args['stage'] == 'open':
            out = opening(args, inventory_workers(task_vars or {}, args['workers_group']))
            outs = [out]
        elif args['stage'] == 'decide':
            outs, out = decide(args)
        elif args['stage'] == 'lease':
            # the leases are held from here: stamped before the answers are read
            timing = dict(args['timing'] or {}, leased=time.time())
            if args['plan']:
                # plan mode names its candidates here too (with board_id): one step, one pass of the candidates
                named = step('name', args) if args['board_id'] else {'admitted': args['candidates'], 'refused': [], 'warnings': []}
                out = {'admitted': [dict(c, lease=None) for c in named['admitted']], 'refused': named['refused'],
                       'warnings': named['warnings']}
            else:
                out = step('lease', args)
            out.update(probe_workers(args['masters'], out['admitted'], always=args['probe_always'] or args['plan']))
            out['read_only'] = args['plan']
            out['timing'] = timing
            outs = [out]
        elif args['stage'] == 'report' and args['worker_launches'] is not None:
            # the launch answered: stamped before the answers are read
            timing = dict(args['timing'] or {}, launched=time.time())
            out = step('report', dict(args, launches=launch_answers(args['batches'], args['worker_launches'])))
            out['timing'] = timing
            outs = [out]
        else:
            out = step(args['stage'], args)
            outs = [out]
        for one in outs:
            for ref in one.get('refused', []):
                self._display.warning(_refusal_text(ref))
            for text in one.pop('warnings', []):
                self._display.warning(text)
        result.update(out)
        result['changed'] = False
        return result


WORKER_VARS = (('masters', 'worker_masters'), ('runner_agent', 'worker_runner_agent'), ('runner_agents', 'worker_runner_agents'),
               ('agent_account', 'worker_agent_account'), ('agent_credentials', 'worker_agent_credentials'))
"""What ``configured_masters`` reads of each worker: its name there, the host variable (set ones only)."""


def inventory_workers(task_vars, group):
    """Each host of ``group`` with the host variables ``configured_masters`` reads (templated by hostvars)."""
    hostvars = task_vars.get('hostvars') or {}
    out = []
    for host in (task_vars.get('groups') or {}).get(group) or []:
        have = hostvars[host] if host in hostvars else {}
        worker = {'worker': host}
        for key, var in WORKER_VARS:
            if var in have:
                worker[key] = have[var]
        out.append(worker)
    return out


def opening(args, workers):
    """``stage=open``: the cycle's first facts in one step - every configured master (``configured_masters``) and
    the reaper's clock half (D14: which starts are older than the threshold; none when ``reap`` is off or no
    board time is given)."""
    if args['reap'] and args['now'] and args['items'] is not None:
        try:
            clock = reaping(args['items'], now=args['now'], floor=args['reap_floor'])
        except (TypeError, ValueError) as exc:
            raise AnsibleActionFail('the reaper\'s clock half: %s' % exc)
    else:
        clock = {'threshold': None, 'due': []}
    return {'masters': configured_masters(workers), 'reaping': clock, 'refused': [], 'warnings': []}


def read_record(path, warn):
    """The announcer's record of the previous cycle, read in this process (no slurp task): a missing file is ``{}``,
    an unreadable one ``{}`` and a warning - either restarts the consecutive counts, which only delays a report."""
    try:
        with open(path, 'r', encoding='utf-8') as fh:
            found = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        warn('the announcer\'s record %s is unreadable (%s): its counts restart' % (path, exc))
        return {}
    return found if isinstance(found, dict) else {}


def step(stage, args):
    """One step on validated options: its answer, with the refusals in ``refused`` and the other warnings in
    ``warnings`` (the action says both on stderr)."""
    cands = args.get('candidates')
    if stage == 'name':
        out = name_candidates(cands, board_id=args['board_id'])
    elif stage == 'lease':
        out = gate_leases(cands, args['leases'], enabled=args['lease_enabled'])
    elif stage == 'probe':
        surveyed = survey(answers(args['probes']))
        out = gate_probe(cands, surveyed)
        out['survey'] = surveyed
        out['duplicates'] = surveyed['duplicates']
        out['repairs'] = repairs(surveyed, owner=args['owner'], now=datetime.datetime.now(UTC))
        for dup in surveyed['duplicates']:
            keep = dup['keep']
            out['warnings'].append('%s is live on %d masters: keeping the oldest on %s/%s (started %s), stopping %s' % (
                dup['unit'], 1 + len(dup['stop']), keep.get('worker'), keep.get('master'), keep.get('started_at'),
                ', '.join('%s/%s' % (u.get('worker'), u.get('master')) for u in dup['stop'])))
    elif stage == 'place':
        budget = _account_budget(args['account_budget'])
        out = gate_place(cands, args['masters'], answers(args['capacity']), args['survey'], items=args['items'] or [],
                         now=parse_time(args['now']) if args['now'] else None, account_budget=budget)
    elif stage == 'batch':
        made = None if args['workspaces'] is None else answers(args['workspaces'])
        out = batches(cands, made, command=args['command'], setenv=args['setenv'], owner=args['owner'])
        for name in secret_looking(args['setenv'] or {}):   # named, never its value
            out['warnings'].append('setenv %s looks like a secret: its value is in this step\'s batches (and plan.json), '
                                   'the launch and the worker\'s journal unmasked; secrets belong in the credentials file' % name)
    elif stage == 'confirm':
        out = confirm(args['launched'], answers(args['starts']), args['items'], wait=args['wait'])
    elif stage == 'announce':
        now = parse_time(args['now']) if args['now'] else datetime.datetime.now(UTC)
        out = announce_cycle(args['items'] or [], masters=args['masters'], capacity=answers(args['capacity']),
                             surveyed=args['survey'] or None, previous=args['previous'], unreaped=args['unreaped'],
                             now=now, blind_cycles=args['blind_cycles'],
                             capacity_window=datetime.timedelta(seconds=args['capacity_window']))
    else:
        out = launch_report(answers(args['launches']))
    out.setdefault('refused', [])
    out.setdefault('warnings', [])
    return out


def plan_view(plan, probe_refused, unprobed):
    """The plan table's input (``fleet.dispatch.plan_table``): the placement, a candidate live elsewhere as a hold
    with its reason, the dark masters, and the masters not probed (their assignments marked ``probed: false``)."""
    gaps = set((g['worker'], g['master']) for g in unprobed)
    return {'assignments': [dict(a, probed=(a.get('worker'), a.get('master')) not in gaps) for a in plan['assignments']],
            'unplaced': [{'number': r['number'], 'repo': r['repo'], 'why': r['why']} for r in probe_refused] + list(plan['unplaced']),
            'dark': list(plan['dark']), 'unprobed': list(unprobed)}


def lost_leases(spec, owner, cands, warnings):
    """``{unit: why}`` for each candidate whose lease (taken by this ``owner`` with a fencing token) is no longer its
    own in the store ``spec``: read once per candidate in one open store, just before the launch. A lease that
    failed open or was never taken has no token to check; a store that cannot be read fences nothing (D5) and
    says so in ``warnings``."""
    held = [(c['unit'], c['lease']) for c in cands if (c.get('lease') or {}).get('token') is not None
            and not c['lease'].get('degraded')]
    if not held:
        return {}
    from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import LeaseError, open_store, scrub
    lost = {}
    # the mutex lookup's own sources: its dsn option, else FLEET_DISPATCH_LEASE_DSN
    dsn = spec.get('dsn') or os.environ.get('FLEET_DISPATCH_LEASE_DSN', '')
    try:
        store = open_store(spec.get('backend') or 'sqlite', path=spec.get('path') or '', dsn=dsn)
    except LeaseError as exc:
        warnings.append('the fencing check before the launch could not open the lease store, so it proceeds (fail '
                        'open): %s' % scrub(str(exc), dsn))
        return {}
    try:
        for unit, lease in held:
            why, failure = store.fence(lease.get('name') or unit, owner, int(lease['token']))
            if failure:
                warnings.append('%s: the fencing check before the launch could not read the lease store, so it '
                                'proceeds (fail open): %s' % (unit, failure))
                break
            if why:
                lost[unit] = why
    finally:
        store.close()
    return lost


def decide(args):
    """``stage=decide``: play 3 of the guarded path in one call - the per-worker probe answers read per master,
    then the probe, place and batch steps (each as its own stage returns it), the workers' launch lists, the
    reaper's two halves (``_core.dispatch.reaper``: its clock half as given or computed, its probe half on this
    probe) and the ``probed``/``placed`` stamps. Returns (the three
    steps' answers, to warn in order; the combined answer)."""
    timing = dict(args['timing'] or {}, probed=time.time())
    results = probe_answers(args['masters'], args['worker_probes']) if args['probe_now'] else []
    raw = list(results)
    unprobed = []
    if args['plan']:
        results, unprobed = plan_answers(results)
    probed = step('probe', dict(args, probes=results))
    for gap in unprobed:
        probed['warnings'].append('%s/%s was not probed (%s): the plan places work there as configured; apply gives it '
                                  'none until it answers' % (gap['worker'], gap['master'], gap['why']))
    surveyed = args['worker_probes'] if args['probe_now'] else {}
    probed['warnings'].extend(clock_warnings(surveyed, controller_offset_s=args['board_offset_s']))
    probed['clocks'] = worker_clocks(surveyed, args['board_offset_s'])   # the page's fleet table and metrics
    placed = step('place', dict(args, candidates=probed['admitted'], capacity=results, survey=probed['survey']))
    if not args['plan'] and args['lease_store']:
        fenced = gate_fence(placed['admitted'], lost_leases(args['lease_store'], args['owner'], placed['admitted'], placed['warnings']))
        placed = dict(placed, admitted=fenced['admitted'], refused=placed['refused'] + fenced['refused'])
    batched = step('batch', dict(args, candidates=placed['admitted'], workspaces=None))
    # plan mode: no worker gets work (the launch play reads ``work``)
    work = {} if args['plan'] else launch_work(batched['batches'], args['clones'], args['clone'], args['branch'], args['items'])
    if args['reaping'] is not None:
        clock = args['reaping']
    else:
        clock = reaping(args['items'] or [], now=args['now'], floor=args['reap_floor']) if args['now'] else {'threshold': None, 'due': []}
    # the probe half: a master that did not answer this probe (raw, before plan mode reads it as configured) is blind
    reaped = reap_decide(clock.get('due') or [], survey(answers(raw)), args['masters'],
                         now=args['now'] or format_time(datetime.datetime.now(UTC)),
                         limit=clock.get('threshold'), leases=args['reap_leases'], lease_enabled=args['reap_lease_enabled'])
    out = {'probe': {'results': results}, 'probed': probed, 'placed': placed, 'batched': batched, 'work': work,
           'reaping': clock, 'reaped': reaped, 'admitted': placed['admitted'], 'launch_args': dict(args['launch_args'] or {}),
           'ineligible': [it.get('number') for it in args['items'] or [] if not it.get('eligible')],
           'refused': probed['refused'] + placed['refused'] + batched['refused']}
    if args['plan']:
        out['plan'] = plan_view(placed['plan'], probed['refused'], unprobed)
        out['unprobed'] = unprobed
    outs = [probed, placed, batched]
    timing['placed'] = time.time()
    out['timing'] = timing
    return outs, out
