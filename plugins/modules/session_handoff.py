#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: session_handoff
short_description: Close a session with its handoff and stop - asking for work without carrying it
version_added: 0.1.0
description:
  - The dispatch from a machine that should not carry the work (the laptop). Validates the handoff - the successor's
    topic and the five brief fields - applies O(dispatch_by_default), and closes the session's ledger row with it, in one
    transaction. It opens no worktree and starts nothing.
  - The successor is recorded by the chains' one rule for names (C(docs/chains.md), "Successor names") - C(any-<topic>) is
    claimed by the first chain runner with room; C(<topic>@<host>) is kept and runs on that host, unclaimed; an untagged
    C(<topic>) becomes C(any-<topic>) when O(dispatch_by_default) is true, and otherwise is kept and follows the session's host.
  - A session the ledger does not know yet is recorded first (as the chain's first session, hop 0, on O(host)).
  - A session already closed is not closed again - the task fails and says so.
  - The same rules as the C(handoff.json) a run's agent writes (C(fleet-runner handoff) does the same from a shell).
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.ledger
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Validates the handoff and reads the session; writes nothing.
  diff_mode:
    support: none
options:
  session:
    description: The id of the session that hands off.
    type: str
    required: true
  successor:
    description: The successor's name - C(<topic>) or C(any-<topic>) (1-100 of letters, digits, C(.), C(_), C(-)).
    type: str
    required: true
  brief:
    description: The successor's opening brief - all five keys, each a non-empty string.
    type: dict
    required: true
    suboptions:
      asked:
        description: What was asked.
        type: str
        required: true
      done_when:
        description: What counts as done.
        type: str
        required: true
      start_at:
        description: Where to start.
        type: str
        required: true
      verify:
        description: How to verify.
        type: str
        required: true
      if_landed:
        description: What to do if the work already landed.
        type: str
        required: true
  host:
    description: The host the session ran on, when the ledger has no row for it yet. Defaults to this machine's host name.
    type: str
  master:
    description: The user the session ran as, when the ledger has no row for it yet. Defaults to the user running the module.
    type: str
  dispatch_by_default:
    description:
      - Turn an untagged successor (C(<topic>)) into C(any-<topic>). Addressed and C(any-) names are never changed.
      - The playbook C(fleet.dispatch.handoff) passes the host variable C(chain_dispatch_by_default), the same switch the
        worker's chain runner reads for its own sessions.
    type: bool
    default: false
seealso:
  - module: fleet.dispatch.sessions_info
  - module: fleet.dispatch.handoff_claim
'''

EXAMPLES = r'''
- name: Hand the work to the first machine with room, and stop
  fleet.dispatch.session_handoff:
    dsn: "{{ fleet_ledger_dsn }}"
    session: lap-7
    successor: docs
    dispatch_by_default: true   # docs is recorded as any-docs
    brief:
      asked: Document the chain runner
      done_when: docs/chains.md is merged
      start_at: docs/
      verify: read the rendered page
      if_landed: write no handoff and stop
'''

RETURN = r'''
session:
  description: The session's id.
  returned: always
  type: str
handoff:
  description:
    - The successor's name as recorded - C(any-<topic>) and C(<topic>@<host>) as given; an untagged C(<topic>) as C(any-<topic>)
      when O(dispatch_by_default) is true, else as given.
  returned: always
  type: str
  sample: any-docs
state:
  description: The session's state after the call (C(closed); in check mode what it is now, or C(absent)).
  returned: always
  type: str
'''

import getpass
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import default_ledger_path, ledger_argspec
from ansible_collections.fleet.dispatch.plugins.module_utils._core.chains.chain import HandoffInvalid, dispatch_by_default, parse_handoff
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sessions import LedgerUnreachable, SessionError, SessionStore


def main():
    spec = ledger_argspec()
    text = dict(type='str', required=True)
    spec['argument_spec'].update(
        session=dict(type='str', required=True),
        successor=dict(type='str', required=True),
        brief=dict(type='dict', required=True, options=dict(asked=text, done_when=text, start_at=text, verify=text,
                                                            if_landed=text)),
        host=dict(type='str'),
        master=dict(type='str'),
        dispatch_by_default=dict(type='bool', default=False),
    )
    module = AnsibleModule(supports_check_mode=True, **spec)
    p = module.params
    try:
        found = parse_handoff({'successor': p['successor'], 'brief': p['brief']})
    except HandoffInvalid as exc:
        module.fail_json(msg='the handoff is not valid, nothing written: %s' % exc)
    found['successor'] = dispatch_by_default(found['successor'], p['dispatch_by_default'])
    path = None if p['dsn'] else (p['path'] or default_ledger_path())
    create = {'name': p['session'], 'host': p['host'] or socket.gethostname(), 'master': p['master'] or getpass.getuser()}
    try:
        with SessionStore(path=path, dsn=p['dsn'], migrate=not module.check_mode) as store:
            if module.check_mode:
                row = store.get(p['session']) if store.has() else None
                if row is not None and row['state'] != 'open':
                    module.fail_json(msg='session %s is already %s; it is not closed again' % (p['session'], row['state']))
                module.exit_json(changed=True, session=p['session'], handoff=found['successor'],
                                 state=row['state'] if row else 'absent')
            row = store.close(p['session'], found, reason='handed off to %s and stopped' % found['successor'], create=create)
    except SessionError as exc:
        module.fail_json(msg=str(exc))
    except LedgerUnreachable as exc:
        module.fail_json(msg='nothing written: %s; fix: make the ledger reachable, then run again' % exc)
    module.exit_json(changed=True, session=row['id'], handoff=row['handoff'], state=row['state'])


if __name__ == '__main__':
    main()
