#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: sessions_info
short_description: Read the session chains of the ledger - each hop, who claimed it, and the handoffs still waiting
version_added: 0.1.0
description:
  - Reads the C(sessions) and C(handoffs) tables of the ledger in one pass and returns every chain from its first
    session, hop by hop - host, master, state, the reason of a stopped or failed hop, and which host claimed a dispatched
    (C(any-)) successor.
  - Also returns the handoffs no runner has started yet and how long each has waited (a successor waiting for room).
  - Writes nothing. A ledger without the session tables has no chains yet (empty lists).
  - Losses are recorded by each chain runner on its own master (C(~/.local/state/fleet-dispatch/chain/losses.json)), not in the
    ledger; O(source=local), run as that master on its worker, reads them (the status playbook does so for every master).
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.ledger
  - fleet.dispatch.attributes
  - fleet.dispatch.attributes.INFO_MODULE
options:
  source:
    description:
      - V(ledger) reads the chains from the ledger (O(path) or O(dsn)).
      - V(local) reads this master's own chain runner record instead (RV(losses)), and touches no ledger.
    type: str
    choices: [ledger, local]
    default: ledger
  state_dir:
    description: The master's state directory for O(source=local). Defaults to C($XDG_STATE_HOME/fleet-dispatch) (C(~/.local/state/...)).
    type: path
  now:
    description: The time the waits are measured to (ISO-8601, for reproducible tests). Defaults to the clock.
    type: str
seealso:
  - module: fleet.dispatch.handoff_claim
  - module: fleet.dispatch.session_handoff
'''

EXAMPLES = r'''
- name: Read the chains
  fleet.dispatch.sessions_info:
    dsn: "{{ fleet_ledger_dsn }}"
  register: chains

- name: Read what this master's chain runner lost (run it on the worker, as the master)
  fleet.dispatch.sessions_info:
    source: local
  become: true
  become_user: fleet1
  register: lost

- name: Show the handoffs waiting for room
  ansible.builtin.debug:
    msg: "{{ item.parent }} -> {{ item.successor }} waiting {{ item.waited_s }} s"
  loop: "{{ chains.waiting }}"
'''

RETURN = r'''
chains:
  description: Every chain, from its first session.
  returned: always
  type: list
  elements: dict
  contains:
    root:
      description: The id of the chain's first session.
      type: str
    hops:
      description: The sessions in order; each has C(hop), C(id), C(name), C(host), C(master), C(state), C(reason), C(handoff),
        C(claimed_by), C(claimed_at).
      type: list
      elements: dict
losses:
  description:
    - With O(source=local) only - each claim this master's chain runner lost, as C(parent), C(successor), C(holder) (the winner,
      "already claimed by" it), C(at) (the claim time, as the runner's C(lost) line gives it) and C(workspace) (the winner's
      worktree name; null in a record written without it); empty otherwise.
  returned: always
  type: list
  elements: dict
waiting:
  description: Closed sessions whose handoff no runner has started, each with C(parent), C(successor), C(host), C(since), C(waited_s).
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import default_ledger_path, ledger_argspec, resolve_now
from ansible_collections.fleet.dispatch.plugins.module_utils._core.chains.chain import chain_status
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import default_state_dir, read_chain_losses
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sessions import LedgerUnreachable, SessionStore


def main():
    spec = ledger_argspec()
    spec['argument_spec'].update(now=dict(type='str'), source=dict(type='str', choices=['ledger', 'local'], default='ledger'),
                                 state_dir=dict(type='path'))
    module = AnsibleModule(supports_check_mode=True, **spec)
    p = module.params
    try:
        now = resolve_now(p['now'])
    except ValueError as exc:
        module.fail_json(msg='now: %s; give ISO-8601 such as 2026-12-01T09:27:00Z' % exc)
    if p['source'] == 'local':
        found = read_chain_losses(p['state_dir'] or default_state_dir())
        losses = []
        for key in sorted(found):
            entry = found[key] if isinstance(found[key], dict) else {}
            parent, _sep, successor = key.rpartition('/')
            losses.append({'parent': parent, 'successor': successor, 'holder': entry.get('holder'), 'at': entry.get('at'),
                           'workspace': entry.get('workspace')})
        module.exit_json(changed=False, chains=[], waiting=[], losses=losses)
    path = None if p['dsn'] else (p['path'] or default_ledger_path())
    try:
        with SessionStore(path=path, dsn=p['dsn'], migrate=False) as store:
            found = chain_status(store.all(), store.claims(), now)
    except LedgerUnreachable as exc:
        module.fail_json(msg='the chains could not be read: %s; fix: make the ledger reachable (server up, credentials '
                             'right, or the SQLite path correct)' % exc)
    module.exit_json(changed=False, chains=found['chains'], waiting=found['waiting'], losses=[])


if __name__ == '__main__':
    main()
