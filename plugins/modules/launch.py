#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: launch
short_description: Start runs as transient systemd user units task-<item> on one master
version_added: 0.1.0
description:
  - Starts each item's run with C(systemd-run --user --unit=task-<item> --collect) under the master's user manager. The run
    survives the SSH session, its whole process tree dies with the unit, and a failure starts the notifier template unit.
  - The unit name carries no entropy; it is the lock. Each item's unit is read first and a live one is refused without being
    touched. When C(systemd-run) fails, the unit is read again and the refusal is named from its state, never from the error text
    - V(live) (another start won the name), V(unloading) (still stopping, or stopped and not yet collected; retry later) or
    V(failed-to-launch) (with systemd-run's stderr).
  - The run gets the explicit O(path) (the unit does not inherit the caller's environment, so tools under C(~/.local/bin)
    are otherwise absent and the run dies with exit 127). Secrets reach the run only through O(environment_file); O(items[].setenv)
    is for non-secret values and refuses names that look like secrets.
  - The unit is C(Type=exec), so systemd-run returns only once the run's program has been executed; a missing working directory,
    credentials file or program is a V(failed-to-launch), not a run reported as started that dies a moment later.
  - One call takes the whole list of items for this master, so a dispatcher needs one call per worker per cycle.
  - A refusal writes nothing anywhere; it is reported in RV(refused) and RV(results).
  - Run it as the master (C(become_user)). C(XDG_RUNTIME_DIR) is set to C(/run/user/<uid>) when the become method left it unset.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads each unit's state and reports V(would-launch) or the refusal; starts nothing.
  diff_mode:
    support: none
options:
  items:
    description: The runs to start on this master, in order.
    type: list
    elements: dict
    required: true
    suboptions:
      number:
        description: The item number.
        type: int
        required: true
      repo:
        description: The item's repository as C(owner/name) on a multi-repo board (becomes part of the unit name); empty otherwise.
        type: str
        default: ''
      command:
        description:
          - The run's command as an argv list (the runner and its arguments). It is never passed through a shell.
          - The first element is resolved with O(path) when it is not absolute.
        type: list
        elements: str
        required: true
      workdir:
        description: The run's working directory, an absolute path (its own workspace, see M(fleet.dispatch.workspace)).
        type: path
        required: true
      setenv:
        description:
          - Non-secret environment variables for the run, passed as C(--setenv). They are visible in C(systemctl show) and in the
            process list.
          - Not C(no_log), so never put a secret here. A name that looks like a secret (containing TOKEN, SECRET, PASSW, CREDENTIAL,
            API_KEY, APIKEY or PRIVATE_KEY) gets a warning and its value is masked in this module's result and warnings; it is still
            passed, because a name is not proof and a false block stops the fleet. It is B(not) masked in the module invocation
            log Ansible writes to the worker's journal before the module runs, in C(systemctl show), in C(ps), nor in the
            C(guard stage=batch) result and the plan's C(batches) (they are this module's input, and masking them would launch the
            mask), which only name it in a warning - real secrets belong in O(environment_file).
          - The agent inherits a name given here only when it is neither C(FLEET_*) nor secret-looking (the runner's allow list,
            passed as C(FLEET_AGENT_SETENV)); no C(FLEET_*) name of the unit reaches it (the runner sets the run's own).
          - C(PATH) is refused here; it is O(path).
        type: dict
        default: {}
  path:
    description:
      - The explicit C(PATH) of every run, for example C(/home/m/.local/bin:/usr/local/bin:/usr/bin:/bin). Required.
    type: str
    required: true
  environment_file:
    description:
      - Absolute path of the master's credentials file, passed as C(-p EnvironmentFile=). The only way secrets reach a run.
      - It must exist. A warning is given when it is readable by group or others.
    type: path
  notifier:
    description:
      - The template unit started on failure, as C(OnFailure=<notifier><unit>.service) with the literal unit name (specifiers are not
        expanded in transient units). The notifier must always exit 0. An empty string disables it.
    type: str
    default: fleet-notify@
  success_exit_status:
    description:
      - Exit codes of the run that are not a failure of its unit, passed as C(-p SuccessExitStatus=), so the notifier named by
        O(notifier) does not fire for them.
      - The default is the runner's C(13) (a retry was scheduled), C(12) (the master hit its provider's limit) and C(15) (the
        run was stopped at its budget). All are the mechanism working, written on the board as markers, and an announcer that
        reports them trains the human to ignore the channel. Its C(10) (no-op), C(11) (failure), C(21) (self-update did not
        verify), C(22) (close-out spooled, not posted), C(23) (start marker lost) and C(26) (another run of the item is live on the board) still fire it. The
        runner's codes avoid 1-7 and 64-78, which systemd names after LSB and BSD (a runner exit would read as
        C(4/NOPERMISSION)); the table is docs/internals.md, "Exit codes".
      - An empty list makes every non-zero exit a failure.
    type: list
    elements: int
    default: [12, 13, 15]
  runner_version:
    description:
      - The runner version the dispatcher expects. When given, C(<command[0]> --version) of every item is run with O(path)
        before any unit is touched, and the call fails, naming both versions, when the installed runner reports another one - a
        stale runner is refused, never launched. The answer must be a JSON object with a string C(version).
      - It is also passed to each run as C(FLEET_RUNNER_EXPECTED_VERSION), so the runner's own self-update verifies the same version.
    type: str
  sandbox:
    description:
      - The systemd hardening of every run unit, as a dict of systemd property names to values, for example C(NoNewPrivileges)
        V(true), C(ProtectSystem) V(strict) and C(ReadWritePaths) a list of absolute paths.
        Overrides the master's C(~/.config/fleet-dispatch/sandbox.json), which the C(fleet.dispatch.worker) role writes from
        C(worker_sandbox_*); without either, runs are not hardened. V({}) turns the file's hardening off for this call.
      - Known keys only - C(NoNewPrivileges), C(PrivateUsers), C(PrivateTmp), C(ProtectSystem), C(ProtectHome), C(ReadWritePaths),
        C(ReadOnlyPaths), C(InaccessiblePaths), C(MemoryMax), C(TasksMax), C(CPUWeight) and C(IPAddressAllow) (a non-empty list
        also sets C(IPAddressDeny=any)); each is passed as one C(-p Key=value). Every item's O(items[].workdir) is added to
        C(ReadWritePaths) when a file-system key is set.
      - The file-system keys (C(PrivateTmp), C(ProtectSystem), C(ProtectHome), the C(*Paths)) are refused without
        C(PrivateUsers=yes), because a user manager ignores them silently otherwise. C(MemoryMax), C(TasksMax), C(CPUWeight) and
        C(IPAddressAllow) are accepted but only enforced where the user manager has the cgroup controllers (and, for the IP
        list, BPF); see the collection's C(docs/sandbox.md) for what was measured.
    type: dict
seealso:
  - module: fleet.dispatch.units_info
  - module: fleet.dispatch.workspace
'''

EXAMPLES = r'''
- name: Launch this cycle's runs on one master (one call per worker)
  fleet.dispatch.launch:
    path: "/home/{{ master }}/.local/bin:/usr/local/bin:/usr/bin:/bin"
    environment_file: "/home/{{ master }}/.config/fleet-dispatch/credentials.env"
    items:
      - number: 42
        command: [fleet-dispatch-runner, --item, "42"]
        workdir: "/home/{{ master }}/fleet/workspaces/task-42@w1"
        setenv:
          FLEET_BOARD: ledger
  become: true
  become_user: "{{ master }}"
  register: launched

- name: Show what was refused
  ansible.builtin.debug:
    var: launched.refused
'''

RETURN = r'''
results:
  description: One entry per item, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    number:
      description: The item number.
      type: int
    repo:
      description: The item's repository ('' on a single-repo board).
      type: str
    unit:
      description: The unit name.
      type: str
      sample: task-42
    launched:
      description: Whether this call started the unit.
      type: bool
    reason:
      description: V(launched), V(would-launch) (check mode), V(live), V(unloading) or V(failed-to-launch).
      type: str
    invocation_id:
      description: The unit's InvocationID after the call (the launched run's, or the live one that refused us); null when unknown.
      type: str
    start_us:
      description: The unit's ExecMainStartTimestampMonotonic in microseconds; null when not running.
      type: int
    active_state:
      description: The unit's ActiveState after the call.
      type: str
    stderr:
      description: systemd-run's stderr when it failed.
      type: str
launched:
  description: Units started by this call (would be started, in check mode).
  returned: always
  type: list
  elements: str
refused:
  description: Units refused because the name is held (V(live) or V(unloading)).
  returned: always
  type: list
  elements: str
failed_to_launch:
  description:
    - Units that could not be started for another reason (see RV(results[].stderr)).
    - Not named C(failed), which Ansible reads as the task's own failure - a refusal or a failed start of one item is reported, it does
      not fail the call for the other items.
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.exits import NOT_UNIT_FAILURES
from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.launcher import (
    call_problems, launch_items, sandbox_settings, stale_runners, unit_names)
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdError, SystemdUser


def argument_spec():
    return dict(
        items=dict(type='list', elements='dict', required=True, options=dict(
            number=dict(type='int', required=True),
            repo=dict(type='str', default=''),
            command=dict(type='list', elements='str', required=True),
            workdir=dict(type='path', required=True),
            setenv=dict(type='dict', default={}),
        )),
        path=dict(type='str', required=True),
        environment_file=dict(type='path'),
        notifier=dict(type='str', default='fleet-notify@'),
        runner_version=dict(type='str'),
        success_exit_status=dict(type='list', elements='int', default=list(NOT_UNIT_FAILURES)),
        sandbox=dict(type='dict'),
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    problems = call_problems(p['items'], p['path'], p['environment_file'], p['success_exit_status'],
                             warn=module.warn, mask=module.no_log_values.add)
    if not problems and p['runner_version']:
        problems = stale_runners(ModuleRunner(module), p['items'], p['path'], p['runner_version'])
    if problems:
        module.fail_json(msg='; '.join(problems))
    try:
        unit_names(p['items'], p['notifier'])
        sandbox = sandbox_settings(p['sandbox'])
    except ValueError as exc:
        module.fail_json(msg='%s; nothing was launched' % exc)
    sd = SystemdUser(ModuleRunner(module), systemctl=module.get_bin_path('systemctl', required=True),
                     systemd_run=module.get_bin_path('systemd-run', required=True))
    try:
        out = launch_items(sd, p['items'], p['path'], environment_file=p['environment_file'], notifier=p['notifier'],
                           runner_version=p['runner_version'], success_exit_status=p['success_exit_status'],
                           check=module.check_mode, warn=module.warn, sandbox=sandbox)
    except SystemdError as exc:
        module.fail_json(msg='%s: %s' % (exc.unit, exc), **exc.partial)
    module.exit_json(changed=bool(out['launched']), **out)


if __name__ == '__main__':
    main()
