#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: run_stop
short_description: Stop one run by hand, as a deliberate stop the runner does not post as a failure
version_added: 0.1.0
description:
  - Reads the run's unit on this master; when it is live, writes the deliberate-stop note for that very invocation
    (C(stops/<unit>.<InvocationID>.json), C(reason=operator)) and then runs C(systemctl --user stop).
  - The runner reads the note on SIGTERM and posts a C(stopped) marker that says who stopped it and why, never a failure
    (D12). A plain C(systemctl --user stop) would post C(stopped) with no such record.
  - Keeping the item from being relaunched is the board's job, not this module's - the C(fleet.dispatch.stop) playbook moves
    the item out of the ready status first.
  - Run it as the master (C(become_user)).
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the unit and reports whether it would stop it; writes no note and stops nothing.
  diff_mode:
    support: none
options:
  unit:
    description: The run's unit name, C(task-<item>) (with or without C(.service)).
    type: str
    required: true
  by:
    description: Who stops it (recorded in the note and the stopped marker).
    type: str
    default: operator
  why:
    description: Why (recorded in the note and the stopped marker).
    type: str
    default: ''
  state_dir:
    description: The master's fleet-dispatch state directory. Defaults to C($XDG_STATE_HOME/fleet-dispatch), else
      C(~/.local/state/fleet-dispatch).
    type: path
  now:
    description: The time written in the note, ISO-8601. Defaults to the clock.
    type: str
seealso:
  - module: fleet.dispatch.units_info
'''

EXAMPLES = r'''
- name: Stop task-42 on its master, deliberately
  fleet.dispatch.run_stop:
    unit: task-42
    by: alice
    why: the brief was wrong
  become: true
  become_user: agent1
'''

RETURN = r'''
stopped:
  description: Whether this call stopped the run (in check mode, whether it would).
  returned: always
  type: bool
invocation_id:
  description: The InvocationID of the run stopped, or null when none was live.
  returned: always
  type: str
note:
  description: The path of the note written (empty when none was).
  returned: always
  type: str
msg:
  description: What happened.
  returned: always
  type: str
'''


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import resolve_now
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import format_time
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import item_of_unit
from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.stops import default_state_dir, stop_duplicate
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdError, SystemdUser


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type='str', required=True),
            by=dict(type='str', default='operator'),
            why=dict(type='str', default=''),
            state_dir=dict(type='path'),
            now=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    unit = p['unit'][:-len('.service')] if p['unit'].endswith('.service') else p['unit']
    if not unit.startswith('task-') or item_of_unit(unit) is None:
        module.fail_json(msg='%s is not a run unit name (task-<item>): name the run to stop' % p['unit'])
    try:
        now = resolve_now(p['now'])
    except ValueError as exc:
        module.fail_json(msg='now: %s' % exc)
    result = dict(changed=False, stopped=False, invocation_id=None, note='')
    sd = SystemdUser(ModuleRunner(module), systemctl=module.get_bin_path('systemctl', required=True))
    try:
        rec = sd.state(unit)
        if rec['state'] != 'live' or not rec['invocation_id']:
            module.exit_json(msg='%s is not live on this master (%s): nothing to stop' % (unit, rec['active_state'] or 'not loaded'),
                             **result)
        invocation = rec['invocation_id']
        result.update(invocation_id=invocation)
        if module.check_mode:
            module.exit_json(changed=True, stopped=True, invocation_id=invocation, note='',
                             msg='would note and stop %s (%s)' % (unit, invocation))
        state_dir = p['state_dir'] or default_state_dir()
        note = {'reason': 'operator', 'unit': unit, 'invocation_id': invocation, 'by': p['by'], 'why': p['why'],
                'at': format_time(now)}
        # the same invocation-checked stop as the duplicate repair: the unit may have ended and been
        # relaunched since the read, and only the run read above is noted and stopped
        res = stop_duplicate(sd, state_dir, unit, invocation, note)
        if not res['stopped']:
            module.exit_json(msg='%s changed while stopping (now %s): nothing stopped' % (
                unit, res['current_invocation_id'] or 'no invocation'), **result)
        path = res['note_path']
    except SystemdError as exc:
        module.fail_json(msg='cannot stop %s: %s' % (unit, exc), **result)
    except OSError as exc:
        module.fail_json(msg='cannot write the stop note for %s: %s; nothing was stopped' % (unit, exc), **result)
    module.exit_json(changed=True, stopped=True, invocation_id=invocation, note=path,
                     msg='noted and stopped %s (%s)' % (unit, invocation))


if __name__ == '__main__':
    main()
