#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: units_info
short_description: List the live task-<item> runs of one master in one call
version_added: 0.1.0
description:
  - Reads every loaded C(task-*) service of the master's systemd user manager with one C(systemctl --user show 'task-*.service')
    and returns the live ones (ActiveState V(active), V(activating) or V(reloading)) with the item each belongs to.
  - This is the probe of the dispatch path - run it inside the lease, so a second dispatcher sees the first one's unit - and
    the reaper's signal.
  - A C(task-*) unit whose name does not parse as an item is still returned, with RV(units[].item) null, and named in a warning (
    a parser that silently stopped matching once emptied the live set and let one item run on two workers).
  - Run it as the master (C(become_user)). C(XDG_RUNTIME_DIR) is set to C(/run/user/<uid>) when the become method left it unset.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
  - fleet.dispatch.attributes.INFO_MODULE
options: {}
seealso:
  - module: fleet.dispatch.launch
'''

EXAMPLES = r'''
- name: Probe the live runs of each master
  fleet.dispatch.units_info:
  become: true
  become_user: "{{ item }}"
  loop: "{{ fleet_masters }}"
  register: probe
'''

RETURN = r'''
units:
  description: The live C(task-*) units, oldest first.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The unit name without C(.service).
      type: str
      sample: task-42
    item:
      description: The item of the unit (C(number), C(repo)), or null when the name is not one the collection makes.
      type: dict
      sample: {number: 42, repo: ''}
    active_state:
      description: ActiveState.
      type: str
    sub_state:
      description: SubState.
      type: str
    invocation_id:
      description: InvocationID of this run of the unit.
      type: str
    start_us:
      description: ExecMainStartTimestampMonotonic (ActiveEnterTimestampMonotonic when that is 0), microseconds since this worker booted.
      type: int
    start_wall_us:
      description: ExecMainStartTimestamp as microseconds since the epoch, for ordering runs across workers.
      type: int
    started_at:
      description: The same start as ISO-8601 UTC text.
      type: str
    main_pid:
      description: MainPID.
      type: int
unloading:
  description: C(task-*) units that still hold their name but are not live (stopping, or stopped and not yet collected), same fields.
  returned: always
  type: list
  elements: dict
live_runs:
  description: The number of live units.
  returned: always
  type: int
live_items:
  description:
    - The item numbers of the live units whose names parse.
  returned: always
  type: list
  elements: int
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.probe import read_units
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdError, SystemdUser


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    sd = SystemdUser(ModuleRunner(module), systemctl=module.get_bin_path('systemctl', required=True))
    try:
        result = dict(changed=False, **read_units(sd, module.warn))
    except SystemdError as exc:
        module.fail_json(msg='cannot read the task units of this master: %s' % exc)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
