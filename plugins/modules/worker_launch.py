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
  - fleet.dispatch.worker_call
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
    default: [12, 13, 15]
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
call_path:
  description:
    - V(runner) when the call ran from the worker's installed runner code (O(runner_dir)), V(module) when the module ran.
  returned: always
  type: str
call_path_reason:
  description: Why the module ran although O(runner_dir) was set (the runner code differs or could not be run); empty otherwise.
  returned: always
  type: str
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.worker_calls import LAUNCH_BINS, LAUNCH_SPEC, CallError, launch_worker


def main():
    module = AnsibleModule(argument_spec=LAUNCH_SPEC, supports_check_mode=True)
    bins = dict((name, module.get_bin_path(name, required=True)) for name in LAUNCH_BINS)
    try:
        result, masked = launch_worker(module.params, ModuleRunner(module), bins, module.check_mode, module.warn)
    except CallError as exc:
        module.fail_json(msg=str(exc))
    for value in masked:
        module.no_log_values.add(value)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
