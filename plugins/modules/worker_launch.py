#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: worker_launch
short_description: Give each run its workspace and launch it, for every master of one worker in one call
version_added: 0.2.0
description:
  - Takes the runs placed on this worker, each with its master. For each master, as that master, it prepares each run's
    workspace (the code of M(fleet.dispatch.workspace)) and then launches the runs with the workspace as the working
    directory (the code of M(fleet.dispatch.launch), one implementation for both modules). The masters are served at the same
    time, each in a child process that switched to that master; run it as root (C(become=true)).
  - A C({workdir}) in O(items[].command) is replaced by the run's workspace path.
  - The run's C(PATH) is O(path) when given, otherwise the C(PATH) the C(fleet.dispatch.worker) role recorded for the master in
    C(~/.config/fleet-dispatch/path). A master with neither launches nothing and its runs are answered V(no-path).
  - A run whose workspace cannot be prepared is answered V(no-workspace) and launched nowhere; the other runs still launch.
    A configuration error of a master's call (a missing O(environment_file), a stale runner) fails that master's runs, as
    M(fleet.dispatch.launch) fails its call.
  - Paths beginning with C(~) (O(items[].clone), O(items[].root), O(environment_file)) are the master's home.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads each clone, worktree and unit; fetches, creates and starts nothing, and predicts V(would-launch) or the refusal.
  diff_mode:
    support: none
options:
  items:
    description: The runs to start on this worker, in order.
    type: list
    elements: dict
    required: true
    suboptions:
      master:
        description: The master account that runs it.
        type: str
        required: true
      number:
        description: The item number.
        type: int
        required: true
      repo:
        description: The item's repository as C(owner/name) on a multi-repo board; empty otherwise.
        type: str
        default: ''
      clone:
        description: The master's clone the workspace is added to (as M(fleet.dispatch.workspace)'s O(fleet.dispatch.workspace#module:clone)).
        type: str
        required: true
      branch:
        description: The branch fetched for the workspace.
        type: str
        default: main
      remote:
        description: The remote fetched from.
        type: str
        default: origin
      host:
        description: The worker name in the workspace's directory name. Defaults to this host's name.
        type: str
      root:
        description: The directory the workspaces are made in. Defaults to C(~/fleet/workspaces) of the master.
        type: str
      command:
        description: The run's command as an argv list, never passed through a shell; C({workdir}) is filled in.
        type: list
        elements: str
        required: true
      setenv:
        description: Non-secret environment variables for the run, as M(fleet.dispatch.launch)'s O(fleet.dispatch.launch#module:items[].setenv).
        type: dict
        default: {}
  path:
    description: The explicit C(PATH) of every run. Empty (the default) reads each master's recorded C(PATH).
    type: str
    default: ''
  environment_file:
    description: The master's credentials file, passed as C(-p EnvironmentFile=) (as M(fleet.dispatch.launch)).
    type: str
  notifier:
    description: The template unit started on failure (as M(fleet.dispatch.launch)); an empty string disables it.
    type: str
    default: fleet-notify@
  success_exit_status:
    description: Exit codes of the run that are not a failure of its unit (as M(fleet.dispatch.launch)).
    type: list
    elements: int
    default: [12, 13]
  runner_version:
    description: The runner version the dispatcher expects (as M(fleet.dispatch.launch)); omitted, no version check.
    type: str
  sandbox:
    description:
      - The systemd hardening of every run unit, as M(fleet.dispatch.launch)'s O(fleet.dispatch.launch#module:sandbox); omitted,
        each master's own C(~/.config/fleet-dispatch/sandbox.json) (written by the C(fleet.dispatch.worker) role) applies.
    type: dict
seealso:
  - module: fleet.dispatch.launch
  - module: fleet.dispatch.workspace
  - module: fleet.dispatch.worker_probe
'''

EXAMPLES = r'''
- name: Workspace and launch for every master of this worker in one call
  fleet.dispatch.worker_launch:
    items:
      - master: agent1
        number: 42
        clone: ~/fleet/clones/main
        command: [fleet-runner, --item, "42"]
        setenv: {FLEET_ITEM: "42"}
    environment_file: ~/.config/fleet-dispatch/credentials.env
  become: true
  register: launched
'''

RETURN = r'''
masters:
  description: One answer per master with runs, in the order the masters first appear in O(items).
  returned: always
  type: list
  elements: dict
  contains:
    master:
      description: The master account.
      type: str
    failed:
      description: Whether this master's call failed as a whole (RV(masters[].msg) says why; none of its runs launched).
      type: bool
    msg:
      description: Why ('' when it did not).
      type: str
    path:
      description: The C(PATH) the runs got (null when none was recorded).
      type: str
    results:
      description:
        - One entry per run, as M(fleet.dispatch.launch)'s RV(fleet.dispatch.launch#module:results), with C(workdir) (the workspace);
          C(reason) is also V(no-workspace) or V(no-path), with the reason in C(stderr).
      type: list
      elements: dict
    launched:
      description: The units started (check mode - would start).
      type: list
      elements: str
    refused:
      description: The units refused because their name is held.
      type: list
      elements: str
    failed_to_launch:
      description: The units that were not started for another reason.
      type: list
      elements: str
    workspaces_created:
      description: The workspaces this call created (check mode - would create).
      type: list
      elements: str
'''

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import home_dir
from ansible_collections.fleet.dispatch.plugins.module_utils._host.git import Git, GitError, Workspace
from ansible_collections.fleet.dispatch.plugins.module_utils._host.identity import for_each_master, in_home
from ansible_collections.fleet.dispatch.plugins.module_utils._host.launcher import (
    call_problems, launch_items, recorded_path, sandbox_settings, stale_runners, unit_names)
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdError, SystemdUser
from ansible_collections.fleet.dispatch.plugins.module_utils._core.naming import worktree_name


def _answer(item, unit, reason, why, workdir=None):
    return dict(number=item['number'], repo=item['repo'] or '', unit=unit, launched=False, reason=reason, invocation_id=None,
                start_us=None, active_state=None, stderr=why, workdir=workdir)


def serve_master(module, bins, items, masked, warn):
    """As the master: each run's workspace, then one launch of the runs that have one."""
    p = module.params
    check = module.check_mode
    units, _notifiers = unit_names(items, p['notifier'])
    path = p['path'] or recorded_path(home_dir())
    if not path:
        why = ('no PATH recorded for this master (%s): run the worker role (fleet.dispatch.worker), or set dispatch_run_path'
               % os.path.join(home_dir(), '.config', 'fleet-dispatch', 'path'))
        return dict(failed=False, msg='', path=None, results=[_answer(i, u, 'no-path', why) for i, u in zip(items, units)],
                    launched=[], refused=[], failed_to_launch=list(units))
    answers, ready, created = {}, [], []
    for item, unit in zip(items, units):
        root = in_home(item['root'], home_dir()) if item['root'] else os.path.join(home_dir(), 'fleet', 'workspaces')
        try:
            name = worktree_name(item['number'], item['host'] or socket.gethostname(), item['repo'])
            ws = Workspace(Git(ModuleRunner(module), git=bins['git'], remote=item['remote']), in_home(item['clone'], home_dir()),
                           os.path.join(root, name), branch=item['branch'])
            res = ws.present(check=check)
        except (GitError, ValueError) as exc:
            answers[unit] = _answer(item, unit, 'no-workspace', str(exc))
            continue
        workdir = res['path']
        if res['created'] or res['pruned']:
            created.append(workdir)
        ready.append(dict(item, workdir=workdir, command=[part.replace('{workdir}', workdir) for part in item['command']]))
    env_file = in_home(p['environment_file'], home_dir()) if p['environment_file'] else None
    problems = call_problems(ready, path, env_file, p['success_exit_status'], warn=warn, mask=masked.append)
    try:
        sandbox = sandbox_settings(p['sandbox'])
    except ValueError as exc:
        problems.append('%s; nothing was launched' % exc)
    if not problems and p['runner_version'] and ready:
        problems = stale_runners(ModuleRunner(module), ready, path, p['runner_version'])
    out = dict(results=[], launched=[], refused=[], failed_to_launch=[], workspaces_created=created)
    if problems:
        return dict(out, failed=True, msg='; '.join(problems), path=path,
                    results=[answers.get(u) or _answer(i, u, 'failed-to-launch', '; '.join(problems)) for i, u in zip(items, units)],
                    failed_to_launch=list(units))
    sd = SystemdUser(ModuleRunner(module), systemctl=bins['systemctl'], systemd_run=bins['systemd-run'])
    if ready:
        try:
            out = launch_items(sd, ready, path, environment_file=env_file, notifier=p['notifier'],
                               runner_version=p['runner_version'], success_exit_status=p['success_exit_status'],
                               check=check, warn=warn, sandbox=sandbox)
            out['workspaces_created'] = created
        except SystemdError as exc:
            return dict(exc.partial, failed=True, msg='%s: %s' % (exc.unit, exc), path=path, workspaces_created=created)
    by_unit = dict((r['unit'], dict(r, workdir=i['workdir'])) for r, i in zip(out['results'], ready))
    results = [by_unit.get(u) or answers[u] for u in units]
    return dict(out, failed=False, msg='', path=path, results=results,
                failed_to_launch=out['failed_to_launch'] + [u for u in units if u in answers])


def main():
    item_spec = dict(
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
    module = AnsibleModule(
        argument_spec=dict(
            items=dict(type='list', elements='dict', required=True, options=item_spec),
            path=dict(type='str', default=''),
            environment_file=dict(type='str'),
            notifier=dict(type='str', default='fleet-notify@'),
            success_exit_status=dict(type='list', elements='int', default=[12, 13]),
            runner_version=dict(type='str'),
            sandbox=dict(type='dict'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        unit_names(p['items'], p['notifier'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    bins = dict((name, module.get_bin_path(name, required=True)) for name in ('git', 'systemctl', 'systemd-run'))
    by_master = {}
    for item in p['items']:
        by_master.setdefault(item['master'], []).append(item)

    def one(name, warn):
        masked = []
        out = serve_master(module, bins, by_master[name], masked, warn)
        out['masked'] = masked
        return out

    answers = for_each_master(list(by_master), one)
    masters = []
    for name in by_master:
        answer = answers[name]
        for text in answer.get('warnings') or []:
            module.warn('%s: %s' % (name, text))
        if answer.get('ok'):
            entry = dict(answer['value'])
            for value in entry.pop('masked', []):
                module.no_log_values.add(value)
        else:
            why = 'cannot serve master %s: %s' % (name, answer.get('msg'))
            units, _n = unit_names(by_master[name], p['notifier'])
            entry = dict(failed=True, msg=why, path=None, launched=[], refused=[], failed_to_launch=list(units), workspaces_created=[],
                         results=[_answer(i, u, 'failed-to-launch', why) for i, u in zip(by_master[name], units)])
        entry['master'] = name
        masters.append(entry)
    changed = any(m['launched'] or m.get('workspaces_created') for m in masters)
    module.exit_json(changed=bool(changed), masters=masters)


if __name__ == '__main__':
    main()
