# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two calls a worker gets inside the lease: probe every master, launch every placed run.

One implementation, two callers (D15): the modules ``worker_probe``/``worker_launch`` (Ansible's module
wrapper, ``ModuleRunner``) and the worker's installed runner code (``_runner.worker_call``: a plain
``python3`` start on byte-compiled files, the runner's own command runner), which the action plugins of the same
names call when that code is this collection's module_utils byte for byte (``code_digest``). Each call
takes validated options (``PROBE_SPEC``/``LAUNCH_SPEC``, the modules' argument specs), a runner, the
paths of the programs it runs and a ``warn``; a bad option raises ``CallError`` before anything runs.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import socket
from typing import Any, Callable, Dict, List, Tuple

from .._core.board.model import parse_time, UTC
from .._core.board.naming import worktree_name
from .._core.outcome.exits import NOT_UNIT_FAILURES
from .files import home_dir
from .git import Git, GitError, Workspace
from .headroom import measure
from .identity import for_each_master, in_home
from .launcher import call_problems, launch_items, recorded_path, sandbox_settings, stale_runners, unit_names
from .probe import read_capacity, read_spool, read_units
from .systemd import SystemdError, SystemdUser

RUNNER_DIR_OPTION = dict(type='str', default='')

PROBE_SPEC = dict(
    masters=dict(type='list', elements='str', required=True),
    capacity=dict(type='bool', default=True),
    now=dict(type='str'),
    controller_time=dict(type='str'),
    runner_dir=RUNNER_DIR_OPTION,
)

ITEM_SPEC = dict(
    master=dict(type='str', required=True),
    number=dict(type='int', required=True),
    repo=dict(type='str', default=''),
    clone=dict(type='str', required=True),
    branch=dict(type='str', default='main'),
    remote=dict(type='str', default='origin'),
    host=dict(type='str'),
    root=dict(type='str'),
    command=dict(type='list', elements='str', required=True),
    setenv=dict(type='dict', default={}),
)

LAUNCH_SPEC = dict(
    items=dict(type='list', elements='dict', required=True, options=ITEM_SPEC),
    path=dict(type='str', default=''),
    environment_file=dict(type='str'),
    notifier=dict(type='str', default='fleet-notify@'),
    success_exit_status=dict(type='list', elements='int', default=list(NOT_UNIT_FAILURES)),
    runner_version=dict(type='str'),
    sandbox=dict(type='dict'),
    runner_dir=RUNNER_DIR_OPTION,
)

PROBE_BINS = ('systemctl',)
LAUNCH_BINS = ('git', 'systemctl', 'systemd-run')


class CallError(Exception):
    """A bad option: the call fails as a whole, before anything runs."""


def code_digest(module_utils: str) -> str:
    """sha256 over the relative path and bytes of every ``*.py`` below ``module_utils`` (byte code caches
    left out): the controller's collection and a worker's runner copy agree exactly when the code does."""
    digest = hashlib.sha256()
    files = []
    for top, dirs, names in os.walk(module_utils):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        files.extend(os.path.join(top, n) for n in names if n.endswith('.py'))
    for path in sorted(files):
        rel = os.path.relpath(path, module_utils).replace(os.sep, '/')
        with open(path, 'rb') as handle:
            body = handle.read()
        digest.update(('%s\0%d\0' % (rel, len(body))).encode('utf-8'))
        digest.update(body)
    return digest.hexdigest()


def probe_worker(params: Dict[str, Any], runner, bins: Dict[str, str], warn: Callable[[str], Any],
                 check: bool = False) -> Dict[str, Any]:
    """``worker_probe``'s answer: every master's live units and capacity state, the worker's headroom.
    ``check`` (check mode; a plan-mode probe): it writes nothing, not even a dead runner's spool claim given back."""
    try:
        now = parse_time(params['now']) if params['now'] else None
    except ValueError as exc:
        raise CallError('now: %s' % exc)
    try:
        sent = parse_time(params.get('controller_time')) if params.get('controller_time') else None
    except ValueError as exc:
        raise CallError('controller_time: %s' % exc)
    clock = _dt.datetime.now(UTC)
    if now is None:
        now = clock
    head = measure(warn=warn)

    def one(_name, child_warn):
        # runs as the master (a child that switched to it, or this process when it already is that master)
        out = read_units(SystemdUser(runner, systemctl=bins['systemctl']), child_warn)
        out.update(read_spool(child_warn, check=check))
        if params['capacity']:
            out.update(read_capacity(now, child_warn))
        return out

    masters = []
    answers = for_each_master(list(dict.fromkeys(params['masters'])), one)
    for name in params['masters']:
        answer = answers[name]
        for text in answer.get('warnings') or []:
            warn('%s: %s' % (name, text))
        if answer.get('ok'):
            entry = dict(answer['value'], master=name, failed=False, msg='')
            entry['headroom'] = dict(head, live_runs=entry['live_runs'])
        else:
            entry = dict(master=name, failed=True, msg='cannot read master %s: %s' % (name, answer.get('msg')))
        masters.append(entry)
    # this worker's clock against the controller's, as sent with the call (the call's own latency, a second
    # or two, is counted in it): runs are dated by the board, but a drifting clock is the operator's to fix
    skew = round((clock - sent).total_seconds(), 1) if sent is not None else None
    # the name this worker's runners write in their start markers (an inventory may call it otherwise)
    return dict(changed=False, masters=masters, headroom=head, clock=clock.strftime('%Y-%m-%dT%H:%M:%S.%fZ'),
                clock_skew_s=skew, hostname=socket.gethostname())


def _answer(item, unit, reason, why, workdir=None):
    return dict(number=item['number'], repo=item['repo'] or '', unit=unit, launched=False, reason=reason, invocation_id=None,
                start_us=None, active_state=None, stderr=why, workdir=workdir)


def _unit_live(runner, bins, unit, path, check):
    """Whether the item's unit may still run in ``path`` (an earlier run's tree): then it is never replaced. Asked
    only when the tree exists; a unit whose state cannot be read counts as live (the tree is kept, not removed)."""
    if check or not os.path.lexists(path):
        return False
    try:
        return SystemdUser(runner, systemctl=bins['systemctl'], systemd_run=bins['systemd-run']).state(unit)['state'] == 'live'
    except SystemdError:
        return True


def serve_master(params, runner, bins, items, check, masked, warn):
    """As the master: each run's workspace, then one launch of the runs that have one."""
    units, _notifiers = unit_names(items, params['notifier'])
    home = home_dir()
    path = params['path'] or recorded_path(home)
    if not path:
        why = ('no PATH recorded for this master (%s): run the worker role (fleet.dispatch.worker), or set dispatch_run_path'
               % os.path.join(home, '.config', 'fleet-dispatch', 'path'))
        return dict(failed=False, msg='', path=None, results=[_answer(i, u, 'no-path', why) for i, u in zip(items, units)],
                    launched=[], refused=[], failed_to_launch=list(units))
    answers, ready, created = {}, [], []
    for item, unit in zip(items, units):
        root = in_home(item['root'], home) if item['root'] else os.path.join(home, 'fleet', 'workspaces')
        try:
            name = worktree_name(item['number'], item['host'] or socket.gethostname(), item['repo'])
            ws = Workspace(Git(runner, git=bins['git'], remote=item['remote']), in_home(item['clone'], home),
                           os.path.join(root, name), branch=item['branch'])
            res = ws.for_run(check=check, replace=not _unit_live(runner, bins, unit, os.path.join(root, name), check))
        except (GitError, ValueError) as exc:
            answers[unit] = _answer(item, unit, 'no-workspace', str(exc))
            continue
        workdir = res['path']
        if res['created'] or res['pruned']:
            created.append(workdir)
        ready.append(dict(item, workdir=workdir, command=[part.replace('{workdir}', workdir) for part in item['command']]))
    env_file = in_home(params['environment_file'], home) if params['environment_file'] else None
    problems = call_problems(ready, path, env_file, params['success_exit_status'], warn=warn, mask=masked.append)
    try:
        sandbox = sandbox_settings(params['sandbox'])
    except ValueError as exc:
        problems.append('%s; nothing was launched' % exc)
    if not problems and params['runner_version'] and ready:
        problems = stale_runners(runner, ready, path, params['runner_version'])
    out = dict(results=[], launched=[], refused=[], failed_to_launch=[], workspaces_created=created)
    if problems:
        return dict(out, failed=True, msg='; '.join(problems), path=path,
                    results=[answers.get(u) or _answer(i, u, 'failed-to-launch', '; '.join(problems)) for i, u in zip(items, units)],
                    failed_to_launch=list(units))
    sd = SystemdUser(runner, systemctl=bins['systemctl'], systemd_run=bins['systemd-run'])
    if ready:
        try:
            out = launch_items(sd, ready, path, environment_file=env_file, notifier=params['notifier'],
                               runner_version=params['runner_version'], success_exit_status=params['success_exit_status'],
                               check=check, warn=warn, sandbox=sandbox)
            out['workspaces_created'] = created
        except SystemdError as exc:
            return dict(exc.partial, failed=True, msg='%s: %s' % (exc.unit, exc), path=path, workspaces_created=created)
    by_unit = dict((r['unit'], dict(r, workdir=i['workdir'])) for r, i in zip(out['results'], ready))
    results = [by_unit.get(u) or answers[u] for u in units]
    return dict(out, failed=False, msg='', path=path, results=results,
                failed_to_launch=out['failed_to_launch'] + [u for u in units if u in answers])


def launch_worker(params: Dict[str, Any], runner, bins: Dict[str, str], check: bool,
                  warn: Callable[[str], Any]) -> Tuple[Dict[str, Any], List[str]]:
    """``worker_launch``'s answer and the values to mask in it (secret-looking ``setenv`` values)."""
    try:
        unit_names(params['items'], params['notifier'])
    except ValueError as exc:
        raise CallError(str(exc))
    by_master = {}   # type: Dict[str, List[Dict[str, Any]]]
    for item in params['items']:
        by_master.setdefault(item['master'], []).append(item)

    def one(name, child_warn):
        masked = []
        out = serve_master(params, runner, bins, by_master[name], check, masked, child_warn)
        out['masked'] = masked
        return out

    answers = for_each_master(list(by_master), one)
    masters, masked = [], []
    for name in by_master:
        answer = answers[name]
        for text in answer.get('warnings') or []:
            warn('%s: %s' % (name, text))
        if answer.get('ok'):
            entry = dict(answer['value'])
            masked.extend(entry.pop('masked', []))
        else:
            why = 'cannot serve master %s: %s' % (name, answer.get('msg'))
            units, _n = unit_names(by_master[name], params['notifier'])
            entry = dict(failed=True, msg=why, path=None, launched=[], refused=[], failed_to_launch=list(units), workspaces_created=[],
                         results=[_answer(i, u, 'failed-to-launch', why) for i, u in zip(by_master[name], units)])
        entry['master'] = name
        masters.append(entry)
    changed = any(m['launched'] or m.get('workspaces_created') for m in masters)
    return dict(changed=bool(changed), masters=masters), masked
