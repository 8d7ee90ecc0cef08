#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: worker_probe
short_description: Probe every master of one worker in one call - live task units, capacity state and headroom
version_added: 0.2.0
description:
  - For every master in O(masters), lists the loaded C(task-*) units (one C(systemctl --user show) each, the answer of
    M(fleet.dispatch.units_info)) and reads the capacity state (the answer of M(fleet.dispatch.capacity_info)); the worker's
    headroom (load, memory, CPUs) is measured once and each master's C(live_runs) in RV(masters[].headroom) is its own live count.
  - The masters are read at the same time, each in a child process that switched to that master (groups, gid, uid, C(HOME),
    C(XDG_RUNTIME_DIR), C(DBUS_SESSION_BUS_ADDRESS)), so the dispatcher needs one call per worker, not one per master. Run it
    as root (C(become=true)); a master the call runs as is read in-process, and a call that can switch to no other master
    answers each of those with the fix.
  - A master that cannot be read fails alone (RV(masters[].failed) with RV(masters[].msg)); the call itself fails only on
    bad arguments.
  - It writes one thing only - a spooled close-out claimed by a runner that is gone is given back, so the master's next run
    delivers it - and in check mode (the dispatch role's plan mode probes with it) not even that.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
  - fleet.dispatch.worker_call
  - fleet.dispatch.attributes.INFO_MODULE
options:
  masters:
    description: The master accounts of this worker.
    type: list
    elements: str
    required: true
  capacity:
    description: Whether to read each master's capacity state as well (without it only the units are read).
    type: bool
    default: true
  now:
    description: The current time as ISO-8601 (for reproducible plans and tests). Defaults to the clock, read once.
    type: str
  controller_time:
    description:
      - The controller's clock when it sent the call, as ISO-8601; the answer's RV(clock_skew_s) is this worker's clock
        against it. The dispatch role sends it and warns when a worker differs by more than a minute.
    type: str
    version_added: 0.1.0
seealso:
  - module: fleet.dispatch.units_info
  - module: fleet.dispatch.capacity_info
  - module: fleet.dispatch.worker_launch
'''

EXAMPLES = r'''
- name: Probe every master of each worker, the workers in parallel
  fleet.dispatch.worker_probe:
    masters: "{{ worker_masters | map(attribute='name') }}"
  become: true
  register: probe
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
  description: One answer per master, in the order of O(masters).
  returned: always
  type: list
  elements: dict
  contains:
    master:
      description: The master account.
      type: str
    failed:
      description: Whether this master could not be read (its units are then unknown; the dispatcher leaves it out).
      type: bool
    msg:
      description: Why it could not be read ('' when it was).
      type: str
    units:
      description: The live C(task-*) units, the fields of M(fleet.dispatch.units_info)'s RV(fleet.dispatch.units_info#module:units).
      type: list
      elements: dict
    unloading:
      description: The C(task-*) units that hold their name but are not live.
      type: list
      elements: dict
    live_runs:
      description: The number of live units.
      type: int
    live_items:
      description: The item numbers of the live units whose names parse.
      type: list
      elements: int
    spooled:
      description:
        - The close-outs this master's runs could not post when they ended, kept in its state directory's C(spool) until
          its next run delivers them (C(unit), C(item), C(repo), C(run), C(kind), C(spooled_at)). The reaper leaves their
          items alone.
      type: list
      elements: dict
      version_added: 0.1.0
    spool_problems:
      description: Files in the spool that are not a spooled close-out (each is also a warning).
      type: list
      elements: str
      version_added: 0.1.0
    dark:
      description: Whether the master must not get new work now (as M(fleet.dispatch.capacity_info)).
      type: bool
    source:
      description: What made it dark, or null.
      type: str
    reset_at:
      description: The stated reset time, or null.
      type: str
    why:
      description: The reason, in words.
      type: str
    state_file:
      description: The capacity state file read.
      type: str
    state_present:
      description: Whether a readable state was found.
      type: bool
    message:
      description: The provider's own words from the state file.
      type: str
    headroom:
      description: The worker's measured headroom with this master's RV(fleet.dispatch.capacity_info#module:headroom.live_runs).
      type: dict
headroom:
  description: The worker's headroom (load, memory, CPUs), measured once; its C(live_runs) is null here.
  returned: always
  type: dict
clock:
  description: This worker's clock (UTC, ISO-8601) when it answered.
  returned: always
  type: str
  version_added: 0.1.0
clock_skew_s:
  description:
    - Seconds this worker's clock is ahead of the controller's (negative when behind), from O(controller_time); the
      call's own latency (about a second) is included. Null without O(controller_time).
  returned: always
  type: float
  version_added: 0.1.0
hostname:
  description:
    - This worker's own host name, the one its runners write in their start markers as C(host); an inventory may name
      the worker otherwise (C(fleet.dispatch.stop) finds a run's worker by it).
  returned: always
  type: str
  version_added: 0.1.0
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.worker_calls import PROBE_BINS, PROBE_SPEC, CallError, probe_worker


def main():
    module = AnsibleModule(argument_spec=PROBE_SPEC, supports_check_mode=True)
    bins = dict((name, module.get_bin_path(name, required=True)) for name in PROBE_BINS)
    try:
        result = probe_worker(module.params, ModuleRunner(module), bins, module.warn, check=module.check_mode)
    except CallError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
