#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: handoff_claim
short_description: Claim a dispatched successor (any-<topic>) on the ledger - the first runner with room takes it
version_added: 0.1.0
description:
  - A session that closes may hand off to a successor named C(any-<topic>), addressed to no machine. Every runner with
    room is eligible, so runners race; this module is the race's one atomic decision.
  - The claim is B(one) C(INSERT ... ON CONFLICT DO NOTHING RETURNING) on the ledger, on a unique id built from O(parent) and
    O(successor) and nothing else (zero entropy). The runner that gets a row back won (RV(won=true), C(changed=true)). Every
    other runner reads the holder and gets RV(won=false) and RV(holder); its RV(why) is the line to log, C(already claimed by <host>).
    Asking again gives the same answer; the row is never changed or removed.
  - The same O(host) asking again still holds its claim - RV(won=true), C(changed=false).
  - The winner's workspace (RV(workspace)) drops the C(any-) tag and takes the host's name, then the digest of the successor's session
    id - C(any-docs) of C(s-1842) claimed by C(desk-2) runs in C(desk-2-docs-fe87daf4), the name the successor's session row carries.
  - Fails B(closed), unlike the guards and the lease - when the ledger cannot be reached, read or written the module fails and
    says that no launch will happen. A claim that cannot be proven is not a claim - failing open would let every runner that lost the
    ledger start the same successor. The successor waits for the next tick instead.
  - Only dispatched successors are claimed. A successor name without the C(any-) tag is refused; an untagged successor follows its
    parent and needs no claim.
  - Claims live in their own table, C(handoffs), created on first use as its own schema component; the board's tables are untouched.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.ledger
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes nothing (not even the table) and reports what a claim would answer - RV(won=true) and C(changed=true) when nobody
        holds the successor yet.
      - An unreachable ledger does not fail a check-mode run (a dry run cannot launch anything) - it returns RV(won=false) with
        RV(error) and a warning.
  diff_mode:
    support: none
options:
  parent:
    description:
      - The parent session that closed and left the handoff (its ledger id), for example V(s-1842).
      - At most 200 characters, no control characters, no leading or trailing spaces.
    type: str
    required: true
  successor:
    description:
      - The successor's name from the handoff, C(any-<topic>). The topic is 1 to 100 letters, digits, C(.), C(_) or C(-), starting with
        a letter or digit. Used verbatim - every runner reads the same text from the ledger.
    type: str
    required: true
  host:
    description:
      - The claiming runner's host name, recorded as the holder and compared verbatim when the same host asks again.
      - Defaults to this machine's host name (Python's C(socket.gethostname)).
    type: str
  now:
    description: The claim time as ISO-8601 (for reproducible tests). Defaults to the clock, read once.
    type: str
seealso:
  - module: fleet.dispatch.board_item
'''

EXAMPLES = r'''
- name: Claim the dispatched successor of session s-1842
  fleet.dispatch.handoff_claim:
    dsn: "{{ fleet_ledger_dsn }}"
    parent: s-1842
    successor: any-docs
  register: claim

- name: The loser logs who won, and moves on
  ansible.builtin.debug:
    msg: "{{ claim.why }}"
  when: not claim.won

- name: The winner opens the successor's worktree under its own host's name (no hook or fsmonitor of the clone runs)
  ansible.builtin.command:
    argv: [git, -c, core.hooksPath=/dev/null, -c, core.fsmonitor=false, -C, "{{ clone }}", worktree, add, --detach,
           "{{ workspaces }}/{{ claim.workspace }}"]
    creates: "{{ workspaces }}/{{ claim.workspace }}"
  when: claim.won
'''

RETURN = r'''
won:
  description: Whether O(host) holds the claim (it just claimed it, or held it already). Only a winner launches.
  returned: always
  type: bool
  sample: false
holder:
  description: The host that holds the claim (O(host) when RV(won)). Empty only when a check-mode run could not read the ledger.
  returned: always
  type: str
  sample: desk-1
id:
  description: The claim's id, C(<parent>/<successor>) - a pure function of both.
  returned: always
  type: str
  sample: s-1842/any-docs
claimed_at:
  description: When the holder claimed it (ISO-8601 UTC), or in check mode when this host would. Null when the ledger was unreadable.
  returned: always
  type: str
  sample: '2026-11-30T09:27:00.000000Z'
workspace:
  description: The holder's workspace name - the C(any-) tag dropped, the holder's host name taken, the successor session id's digest
    added (the same name as the successor's session row).
  returned: always
  type: str
  sample: desk-1-docs-fe87daf4
why:
  description: One sentence for a human; a loser's reads C(already claimed by <holder> ...).
  returned: always
  type: str
error:
  description: Check mode only - why the ledger could not be read (password masked). No launch can happen.
  returned: when the ledger was unreachable in check mode
  type: str
'''

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import default_ledger_path, ledger_argspec, resolve_now
from ansible_collections.fleet.dispatch.plugins.module_utils._store.handoff import (
    ClaimUnproven, HandoffError, HandoffStore, check_successor, claim_id,
)
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import redact_dsn


def _fix(location):
    return ('fix: make the ledger at %s reachable and writable by this runner (server up, database and credentials right, '
            'or the SQLite file created by board_item), then the next tick claims again' % location)


def main():
    spec = ledger_argspec()
    spec['argument_spec'].update(
        parent=dict(type='str', required=True),
        successor=dict(type='str', required=True),
        host=dict(type='str'),
        now=dict(type='str'),
    )
    module = AnsibleModule(supports_check_mode=True, **spec)
    p = module.params
    host = p['host'] or socket.gethostname()
    try:
        now = resolve_now(p['now'])
    except ValueError as exc:
        module.fail_json(msg='now: %s; give ISO-8601 such as 2026-11-30T09:27:00Z' % exc)
    try:
        check_successor(p['successor'])
        ident = claim_id(p['parent'], p['successor'])
    except HandoffError as exc:
        module.fail_json(msg=str(exc))
    path = None if p['dsn'] else (p['path'] or default_ledger_path())
    location = path or redact_dsn(p['dsn'])
    try:
        with HandoffStore(path=path, dsn=p['dsn'], migrate=not module.check_mode, now=now) as store:
            if module.check_mode:
                found = store.peek(p['parent'], p['successor'], host, now=now)
            else:
                found = store.claim(p['parent'], p['successor'], host, now=now)
    except HandoffError as exc:
        module.fail_json(msg=str(exc), id=ident)
    except ClaimUnproven as exc:
        text = ('no launch: the claim %s for %s could not be proven, and a claim that cannot be proven is not a claim: '
                '%s; %s' % (ident, host, exc, _fix(location)))
        if module.check_mode:
            module.warn(text)
            module.exit_json(changed=False, won=False, holder='', id=ident, claimed_at=None, workspace='', why=text, error=str(exc))
        module.fail_json(msg=text, id=ident, won=False)
    module.exit_json(changed=found['inserted'], won=found['won'], holder=found['holder'], id=found['id'],
                     claimed_at=found['claimed_at'], workspace=found['workspace'], why=found['why'])


if __name__ == '__main__':
    main()
