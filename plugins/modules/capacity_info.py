#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: capacity_info
short_description: Is this master dark, why, until when - and how much headroom it has
version_added: 0.1.0
description:
  - Reads the master's capacity state file, written by the runner when a run dies on a provider limit, and says whether the
    master is dark, the RV(source) (V(rate_limit) clears by the clock, V(revoked) needs a human, V(update_failed) - the
    runner could not update itself and clears after a cooldown or when the C(fleet.dispatch.worker) role reinstalls the
    runner), V(board_unreachable) - the runner on this master could not open the board to post a start marker and
    the master is tried again at RV(reset_at) or as soon as a run starts cleanly), V(agent_missing) - the agent CLI is
    not on the run's PATH, so no run can start there; cleared when the C(fleet.dispatch.worker) role installs it, or one
    run looks again after a cooldown), the provider's stated
    RV(reset_at) (null when none was stated - never invented) and why. The meaning of the file is the collection's one
    implementation in C(_core.outcome.capacity), shared with the runner that writes it.
  - A missing, empty or unparseable file means B(not dark), and RV(why) says so (a guard fails open; a refusal needs positive
    evidence).
  - Also measures the master's headroom for placement (measured headroom, never a cap) - load averages from C(/proc/loadavg),
    C(MemAvailable) and C(MemTotal) from C(/proc/meminfo), usable CPUs, and the number of live C(task-*) runs of this master
    (one C(systemctl --user show) call). A figure that cannot be read is null and a warning says why.
  - Run it as the master (C(become_user)).
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
  - fleet.dispatch.attributes.INFO_MODULE
options:
  path:
    description:
      - The capacity state file. Defaults to C($XDG_STATE_HOME/fleet-dispatch/capacity.json), that is
        C(~/.local/state/fleet-dispatch/capacity.json) when E(XDG_STATE_HOME) is unset.
    type: path
  now:
    description: The current time as ISO-8601 (for reproducible plans and tests). Defaults to the clock, read once.
    type: str
  units:
    description: Whether to count the master's live runs (RV(headroom.live_runs)). Without it that figure is null.
    type: bool
    default: true
seealso:
  - module: fleet.dispatch.units_info
'''

EXAMPLES = r'''
- name: Drop dark masters before placing work
  fleet.dispatch.capacity_info:
  become: true
  become_user: "{{ item }}"
  loop: "{{ fleet_masters }}"
  register: capacity
'''

RETURN = r'''
dark:
  description: Whether the master must not get new work now.
  returned: always
  type: bool
source:
  description: V(rate_limit), V(revoked), V(update_failed), V(board_unreachable), V(agent_missing), or null when there
    is no (readable) state.
  returned: always
  type: str
reset_at:
  description: The provider's stated reset time as ISO-8601 UTC, or null when none was stated (never invented). For
    V(board_unreachable), the time the dispatcher tries this master again (the runner wrote it; not a provider's).
  returned: always
  type: str
  sample: '2026-11-30T17:00:00.000000Z'
why:
  description: The reason, in words, including why a file was ignored.
  returned: always
  type: str
state_file:
  description: The state file read.
  returned: always
  type: str
state_present:
  description: Whether a readable state was found in the file.
  returned: always
  type: bool
message:
  description: The provider's own words from the state file ('' when none).
  returned: always
  type: str
headroom:
  description: Measured headroom; each figure is null when it could not be read.
  returned: always
  type: dict
  contains:
    load1:
      description: 1-minute load average.
      type: float
    load5:
      description: 5-minute load average.
      type: float
    load15:
      description: 15-minute load average.
      type: float
    mem_available_kb:
      description: MemAvailable in kB.
      type: int
    mem_total_kb:
      description: MemTotal in kB.
      type: int
    cpus:
      description: CPUs this process may run on.
      type: int
    live_runs:
      description: Live C(task-*) units of this master.
      type: int
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import resolve_now
from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.headroom import measure
from ansible_collections.fleet.dispatch.plugins.module_utils._host.probe import read_capacity
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdError, SystemdUser


def _headroom(module, count_units=True):
    """Headroom figures; a figure that cannot be read is None and a warning says why (fail open)."""
    head = measure(warn=module.warn)
    if count_units:
        try:
            sd = SystemdUser(ModuleRunner(module), systemctl=module.get_bin_path('systemctl', required=True))
            head['live_runs'] = len(sd.live_units())
        except SystemdError as exc:
            module.warn('live runs not counted: %s' % exc)
    return head


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path'),
            now=dict(type='str'),
            units=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        now = resolve_now(p['now'])
    except ValueError as exc:
        module.fail_json(msg='now: %s' % exc)
    module.exit_json(changed=False, headroom=_headroom(module, count_units=p['units']),
                     **read_capacity(now, module.warn, p['path']))


if __name__ == '__main__':
    main()
