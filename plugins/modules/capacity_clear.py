#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: capacity_clear
short_description: Clear a master's dark state after a human fixed its cause (a revoked credential)
version_added: 0.1.0
description:
  - A master whose runs died on a revoked or invalid credential is dark with source V(revoked) and gets nothing until a human
    acts (D8). After fixing the credential, this is that act - it moves the master's capacity state file aside to
    C(<file>.cleared), so the next sweep places work on the master again.
  - It clears only the O(source) named (default V(revoked)); a state of another source is left alone and reported, so a clear
    meant for a fixed credential does not also wipe a rate limit whose reset is still ahead.
  - Run it as the master (C(become_user)).
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the state and reports whether it would clear it.
  diff_mode:
    support: full
options:
  path:
    description: The capacity state file. Defaults to C($XDG_STATE_HOME/fleet-dispatch/capacity.json), else under C(~/.local/state).
    type: path
  source:
    description: The dark source to clear; V(any) clears whatever state there is.
    type: str
    default: revoked
    choices: [revoked, rate_limit, update_failed, agent_missing, any]
seealso:
  - module: fleet.dispatch.capacity_info
'''

EXAMPLES = r'''
- name: The credential of agent1 on w1 was renewed; let it take work again
  fleet.dispatch.capacity_clear:
  delegate_to: w1
  become: true
  become_user: agent1
'''

RETURN = r'''
cleared:
  description: Whether the state was (in check mode, would be) cleared.
  returned: always
  type: bool
before:
  description: The capacity state found (source, reset_at, message, ...), or null when there was none.
  returned: always
  type: dict
moved_to:
  description: Where the cleared state was kept; empty when nothing was cleared or in check mode.
  returned: always
  type: str
msg:
  description: What happened.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import to_jsonable
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import (
    clear_capacity_file, default_state_path, read_capacity_file)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path'),
            source=dict(type='str', default='revoked', choices=['revoked', 'rate_limit', 'update_failed', 'agent_missing', 'any']),
        ),
        supports_check_mode=True,
    )
    path = module.params['path'] or default_state_path()
    want = module.params['source']
    state, why, present = read_capacity_file(path)
    state = to_jsonable(state) if state is not None else None
    result = dict(changed=False, cleared=False, before=state, moved_to='')
    if not present:
        module.exit_json(msg='no capacity state at %s: the master is not dark, nothing to clear' % path, **result)
    if state is not None and want != 'any' and state.get('source') != want:
        module.exit_json(msg='the state at %s is %s, not %s: left alone (source=any clears it)' % (
            path, state.get('source') or 'of no source', want), **result)
    if state is None and want != 'any':
        module.exit_json(msg='the state at %s does not parse (%s), so it darkens nothing: left alone (source=any moves it aside)'
                             % (path, why), **result)
    result.update(changed=True, cleared=True, diff=dict(before=state or {}, after={}))
    if module.check_mode:
        module.exit_json(msg='would clear the %s state at %s' % ((state or {}).get('source') or 'unparseable', path), **result)
    try:
        result['moved_to'] = clear_capacity_file(path)
    except OSError as exc:
        result.update(changed=False, cleared=False)
        module.fail_json(msg='cannot clear %s: %s' % (path, exc), **result)
    module.exit_json(msg='cleared the %s state at %s (kept as %s): the next sweep may place work on this master' % (
        (state or {}).get('source') or 'unparseable', path, result['moved_to']), **result)


if __name__ == '__main__':
    main()
