#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: stop_duplicate
short_description: Stop the younger of two live runs of one item, noting the stop as deliberate
version_added: 0.1.0
description:
  - The duplicate repair of the dispatch path (D4). When the probe finds one C(task-<item>) unit live on two masters, the
    dispatcher keeps the oldest and runs this, as the master of each younger one, with the stop the guard returned
    (C(fleet.dispatch.guard) RV(fleet.dispatch.guard#module:repairs)).
  - Stops only the duplicate invocation - reads the unit's C(InvocationID) first; when another run now holds the name, or
    the unit has ended, it stops nothing (RV(reason=moved-on)).
  - Before the stop it writes the note the runner reads in its SIGTERM handler
    (C($XDG_STATE_HOME/fleet-dispatch/stops/<unit>.<InvocationID>.json)), so the stopped run posts a C(stopped) marker
    naming the kept run, never a failure (D12). If systemd refuses the stop, the note is removed again and the task fails.
  - Writes nothing to the board (D6).
  - Run it as the master (C(become_user)). C(XDG_RUNTIME_DIR) is set to C(/run/user/<uid>) when the become method left it unset.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the unit's InvocationID and reports V(would-stop) or V(moved-on); writes no note and stops nothing.
  diff_mode:
    support: none
options:
  unit:
    description: The unit to stop, C(task-<item>) (with or without C(.service)).
    type: str
    required: true
  invocation_id:
    description: The InvocationID of the duplicate run, as the probe read it. Only that invocation is stopped.
    type: str
    required: true
  note:
    description:
      - The deliberate-stop note the runner reads (format in docs/dispatch.md), as the guard returned it. Its C(reason) must
        be V(duplicate); its C(invocation_id), when given, must be O(invocation_id).
    type: dict
    required: true
  state_dir:
    description:
      - The master's fleet-dispatch state directory, where the runner looks for C(stops/).
      - When unset, C($XDG_STATE_HOME/fleet-dispatch), else C(~/.local/state/fleet-dispatch) of the master.
    type: path
seealso:
  - module: fleet.dispatch.units_info
  - module: fleet.dispatch.guard
'''

EXAMPLES = r'''
- name: Repair duplicates - note the stop as deliberate, then stop the younger unit
  fleet.dispatch.stop_duplicate:
    unit: "{{ repair.unit }}"
    invocation_id: "{{ repair.invocation_id }}"
    note: "{{ repair.note }}"
  delegate_to: "{{ repair.worker }}"
  become: true
  become_user: "{{ repair.master }}"
  loop: "{{ probed.repairs }}"
  loop_control:
    loop_var: repair
'''

RETURN = r'''
unit:
  description: The unit, without C(.service).
  returned: always
  type: str
  sample: task-42
invocation_id:
  description: The duplicate invocation this call was asked to stop.
  returned: always
  type: str
current_invocation_id:
  description: The unit's InvocationID when this call read it (null when the unit is not running).
  returned: always
  type: str
stopped:
  description: Whether the unit was stopped by this call.
  returned: always
  type: bool
reason:
  description:
    - V(stopped); V(would-stop) in check mode; V(moved-on) when the unit is no longer that invocation (nothing touched).
  returned: always
  type: str
  sample: stopped
note_path:
  description: Where the note for this invocation is (written only when RV(reason=stopped)).
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.stops import default_state_dir, stop_duplicate
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdError, SystemdUser


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type='str', required=True),
            invocation_id=dict(type='str', required=True),
            note=dict(type='dict', required=True),
            state_dir=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    sd = SystemdUser(ModuleRunner(module), systemctl=module.get_bin_path('systemctl', required=True))
    try:
        res = stop_duplicate(sd, p['state_dir'] or default_state_dir(), p['unit'], p['invocation_id'], p['note'],
                             check=module.check_mode)
    except ValueError as exc:
        module.fail_json(msg='the stop was not made: %s' % exc)
    except SystemdError as exc:
        module.fail_json(msg='%s could not be stopped (its stop note was removed again): %s' % (p['unit'], exc))
    if res['reason'] == 'moved-on':
        module.warn('not stopped: %s is now invocation %s, not the duplicate %s'
                    % (res['unit'], res['current_invocation_id'], p['invocation_id']))
    module.exit_json(**res)


if __name__ == '__main__':
    main()
