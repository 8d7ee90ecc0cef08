#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: board_report
short_description: File one report item per stall nobody is coming for, and close the reports whose stall cleared
version_added: 0.1.0
description:
  - The announcer's writes. Takes the stalls the announcer found this cycle (RV(fleet.dispatch.guard#module:stalls)), reads the
    board's live report items through the board's normal read (the ledger's own table; on GitHub the repository's issues
    labelled C(fleet-report), never the search index, whose lag once filed a report twice), and makes the board agree - one
    report per stall title, none twice; a report whose stall is gone gets a comment saying so, then is closed.
  - A report is never a dispatch candidate. On the ledger it is an item with status C(Report) that the queue read leaves out; on
    GitHub it is an issue labelled C(fleet-report) in the board's repository (the board option C(repo), or the project's one
    repository) that is never added to the project.
  - A human silences a title by closing its report with status C(Silenced) (ledger) or the label C(fleet-silenced) (GitHub);
    acknowledging needs nothing (an open report is filed once and never posted to again until its stall clears).
  - Every title, body and comment has no live closing keyword next to a reference (a quoted remedy once closed the issue it
    protected).
  - With O(reconcile=false) the module only lists the reports (the status playbook).
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.board
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the live reports and returns what it would file and close (RV(file), RV(close)); writes nothing.
  diff_mode:
    support: none
options:
  stalls:
    description: The stalls of this cycle, each C({kind, subject, title, body}), as RV(fleet.dispatch.guard#module:stalls) returns them.
    type: list
    elements: dict
    default: []
  unsure:
    description:
      - Report titles whose evidence was not read this cycle (a master whose capacity could not be read), as
        RV(fleet.dispatch.guard#module:unsure) returns them. Their reports are neither filed nor closed - unknown is no change.
    type: list
    elements: str
    default: []
  reconcile:
    description: V(false) only lists the reports (RV(reports)) and writes nothing.
    type: bool
    default: true
  now:
    description: The cycle's time as ISO-8601 (named in the closing comment). Defaults to the clock, read once.
    type: str
seealso:
  - module: fleet.dispatch.guard
  - module: fleet.dispatch.board_info
'''

EXAMPLES = r'''
- name: Find the stalls nobody is coming for
  fleet.dispatch.guard:
    stage: announce
    items: "{{ board.board_items }}"
    masters: "{{ masters }}"
  register: announcer

- name: File one report per stall; close the cleared ones
  fleet.dispatch.board_report:
    board: "{{ dispatch_board }}"
    stalls: "{{ announcer.stalls }}"
'''

RETURN = r'''
reports:
  description: The board's report items as read before any write, each C({number, title, state, silenced, created_at, url}).
  returned: always
  type: list
  elements: dict
file:
  description: The stalls with no open report (filed now, or in check mode would be).
  returned: when O(reconcile=true)
  type: list
  elements: dict
close:
  description: The open reports whose stall is gone, each C({number, title, comment}).
  returned: when O(reconcile=true)
  type: list
  elements: dict
keep:
  description: The stalls that already have their open report (C(number)).
  returned: when O(reconcile=true)
  type: list
  elements: dict
silenced:
  description: The stalls whose title a human silenced.
  returned: when O(reconcile=true)
  type: list
  elements: dict
filed:
  description: The reports filed by this call, each C({number, title, kind, url}).
  returned: when O(reconcile=true)
  type: list
  elements: dict
closed:
  description: The reports closed by this call.
  returned: when O(reconcile=true)
  type: list
  elements: dict
errors:
  description: Writes that failed (warned too); the next cycle tries again.
  returned: when O(reconcile=true)
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import board_argspec, board_spec, module_now
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
from ansible_collections.fleet.dispatch.plugins.module_utils._board.report import announce


def main():
    module = AnsibleModule(
        argument_spec=dict(
            board=board_argspec(),
            stalls=dict(type='list', elements='dict', default=[]),
            unsure=dict(type='list', elements='str', default=[]),
            reconcile=dict(type='bool', default=True),
            now=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    now = module_now(module)
    for stall in p['stalls']:
        if not stall.get('title') or not stall.get('kind'):
            module.fail_json(msg='every stall needs a kind and a title (from fleet.dispatch.guard stage=announce), got %r' % (stall,))
    try:
        with open_board(board_spec(p['board'])) as board:
            if not p['reconcile']:
                module.exit_json(changed=False, reports=board.reports())
            out = announce(board, p['stalls'], now=now, dry_run=module.check_mode, unsure=p['unsure'])
    except BoardError as exc:
        module.fail_json(msg='the announcer could not read the reports: %s' % exc)
    for text in out['errors']:
        module.warn(text)
    changed = bool(out['file'] or out['close']) if module.check_mode else bool(out['filed'] or out['closed'])
    module.exit_json(changed=changed, **out)


if __name__ == '__main__':
    main()
