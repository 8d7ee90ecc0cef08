#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: start_info
short_description: Did each launched run of this master start - or why not
version_added: 0.1.0
description:
  - A launch that C(systemd-run) accepted is not a run that started (D20). For each launched C(task-<item>) unit this reads,
    until each is decided or O(wait) seconds have passed, the runner's start record
    C(<state_dir>/runs/<unit>/start.json) for the launched invocation and the unit's state and result
    (C(systemctl --user show)).
  - The runner writes the record only after its start marker reached the board (V(started)), or when it could not start,
    with its reason and cause (V(failed); cause V(board_unreachable) when it could not open the board, which also darkens the
    master - see M(fleet.dispatch.capacity_info)). A unit that ended or was collected without a record is V(failed) with its
    result; one still running without a record when the wait ends is V(pending).
  - The dispatcher then checks the board for a marker of each started run (C(roles/dispatch/tasks/confirm.yml)).
  - Run it as the master (C(become_user)). C(XDG_RUNTIME_DIR) is set to C(/run/user/<uid>) when the become method left it unset.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
  - fleet.dispatch.attributes.INFO_MODULE
options:
  runs:
    description:
      - The launched runs of this master, as the launch reported them - each a dict with C(unit) (for example V(task-42))
        and C(invocation_id), the invocation the launch started (a record or unit of another invocation is not this
        run's). Other keys are ignored, so the launch report's rows can be passed as they are.
    type: list
    elements: dict
    required: true
  wait:
    description:
      - Seconds to wait, at most, for every run to be decided. The runner records its start after one board write, so on a
        reachable board it takes about as long as one marker post; the bound is for a slow board or a slow master.
    type: float
    default: 60
  interval:
    description: Seconds between two looks.
    type: float
    default: 1
  state_dir:
    description:
      - The master's state directory. Defaults to C($XDG_STATE_HOME/fleet-dispatch), that is C(~/.local/state/fleet-dispatch)
        when E(XDG_STATE_HOME) is unset (the runner's default).
    type: path
seealso:
  - module: fleet.dispatch.launch
  - module: fleet.dispatch.capacity_info
'''

EXAMPLES = r'''
- name: Confirm that the runs launched on agent1 started
  fleet.dispatch.start_info:
    runs:
      - unit: task-42
        invocation_id: 0f6c1c1b6d8e4a3c9b5f2a7e1d0c4b8a
    wait: 60
  become: true
  become_user: agent1
  register: started
'''

RETURN = r'''
runs:
  description: One answer per run, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    unit:
      description: The unit name.
      type: str
    state:
      description: V(started), V(failed) or V(pending) (still running without a start record when the wait ended).
      type: str
    cause:
      description:
        - Why it failed to start - V(board_unreachable), V(board_unwritable), V(start_marker_lost) (from the runner), or
          V(no_start_record) (the unit ended without one). Empty when started or pending.
      type: str
    reason:
      description: The runner's reason, in its words, or the unit's result.
      type: str
    run:
      description: The runner's run id (the C(run) field of its markers), empty when unknown.
      type: str
    unit_state:
      description: The unit's C(LoadState), C(ActiveState), C(Result), C(ExecMainStatus) and C(InvocationID) at the last look.
      type: dict
waited:
  description: Seconds spent waiting.
  returned: always
  type: float
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.start import judge
from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import default_state_dir, read_start_record
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdError, SystemdUser

PROPS = ('LoadState', 'ActiveState', 'SubState', 'Result', 'ExecMainStatus', 'InvocationID')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runs=dict(type='list', elements='dict', required=True),
            wait=dict(type='float', default=60),
            interval=dict(type='float', default=1),
            state_dir=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    runs = [{'unit': str(r.get('unit') or ''), 'invocation_id': str(r.get('invocation_id') or '')} for r in p['runs']]
    if not all(r['unit'] for r in runs):
        module.fail_json(msg='runs: every run needs its unit name (unit), as the launch reported it')
    state_dir = p['state_dir'] or default_state_dir()
    sd = SystemdUser(ModuleRunner(module), systemctl=module.get_bin_path('systemctl', required=True))
    began = time.monotonic()
    answers = dict((r['unit'], {'unit': r['unit'], 'state': 'pending', 'cause': '', 'reason': '', 'run': '', 'unit_state': {}})
                   for r in runs)
    while True:
        for r in runs:
            answer = answers[r['unit']]
            if answer['state'] != 'pending':
                continue
            name = r['unit'] if r['unit'].endswith('.service') else r['unit'] + '.service'
            try:
                unit = sd.show(name, props=PROPS)
            except SystemdError as exc:
                module.warn('%s: unit state not read: %s' % (r['unit'], exc))
                unit = None
            answer.update(judge(unit, read_start_record(state_dir, r['unit']), r['invocation_id']))
            answer['unit_state'] = unit or {}
        waited = time.monotonic() - began
        if all(a['state'] != 'pending' for a in answers.values()) or waited >= p['wait']:
            break
        time.sleep(max(0.05, min(p['interval'], p['wait'] - waited)))
    module.exit_json(changed=False, runs=[answers[r['unit']] for r in runs], waited=round(time.monotonic() - began, 3))


if __name__ == '__main__':
    main()
