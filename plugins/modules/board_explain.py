#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: board_explain
short_description: Say why one board item would or would not run now, with every fact behind it
version_added: 0.1.0
description:
  - Reads one item whole (comments, events, blockers) and evaluates it with the same decision core the dispatch path uses,
    so the answer is what the next sweep would decide.
  - Returns every hold that applies (not only the deciding one), every marker in order with its author, each start and
    whether it spent an attempt (and why not), the blockers and their state, where the item would be placed now among the
    given O(masters) and why, and the last run's close-out with the command that classifies its capture on the worker.
  - Reads only; writes nothing to the board.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.board
  - fleet.dispatch.attributes
  - fleet.dispatch.attributes.info_module
options:
  number:
    description: The item to explain.
    type: int
    required: true
  max_attempts:
    description: The attempt cap the dispatcher uses (O(fleet.dispatch.board_info#module:max_attempts)).
    type: int
    default: 3
  max_rounds:
    description: The round cap the dispatcher uses (O(fleet.dispatch.board_info#module:max_rounds)); V(0) sets none.
    type: int
    default: 4
  now:
    description: The time to evaluate at, as ISO-8601. Defaults to the controller clock, read once.
    type: str
  masters:
    description:
      - The masters placement may choose from, as the dispatch path builds them (C(worker), C(master), C(dark), C(source),
        C(reset_at), C(agents) (the agent profiles it offers), C(headroom) with C(live_runs), C(load1), C(cpus),
        C(mem_available_kb)).
      - Omitted, the placement is not computed and says so.
    type: list
    elements: dict
  fleet_record:
    description:
      - The last probing sweep's record of the fleet (C(fleet.json) beside C(status.json), the
        P(fleet.dispatch.status_fleet#filter) record - C(at) and C(masters)). Each of O(masters) it names is placed as that
        sweep saw it - its headroom, and dark with its source, reset and why (a rate limit, an agent account whose daily budget
        is spent) while the stated reset is ahead of O(now) - so the placement says which dark master or spent account
        holds the item.
      - A dict or its JSON text (the file as read). Omitted, empty or not a record (a warning says so), the masters are
        placed as given.
    type: raw
    version_added: 0.1.0
  agents:
    description:
      - The agent profiles the fleet's masters offer (O(fleet.dispatch.board_info#module:agents)); an item whose route asks for
        another is held with C(unroutable), and the explanation says which route holds it.
    type: list
    elements: str
    version_added: 0.1.0
  item_budget_tokens:
    description:
      - The item budget in tokens the dispatcher uses (O(fleet.dispatch.board_info#module:item_budget_tokens)); an item whose runs
        since the last reopen reached it is held with C(budget_spent), and the explanation gives the figures. V(0) is no limit.
    type: int
    default: 0
    version_added: 0.1.0
  item_budget_usd:
    description: The item budget in US dollars the dispatcher uses (O(fleet.dispatch.board_info#module:item_budget_usd)). V(0) is no limit.
    type: float
    default: 0
    version_added: 0.1.0
seealso:
  - module: fleet.dispatch.board_info
'''

EXAMPLES = r'''
- name: Why does item 42 not run?
  fleet.dispatch.board_explain:
    board:
      kind: ledger
      path: /var/lib/fleet-dispatch/ledger.sqlite3
    number: 42
  register: why

- name: Print it
  ansible.builtin.debug:
    msg: "{{ why.lines }}"
'''

RETURN = r'''
board:
  description: Where the board lives (no password or token).
  returned: always
  type: str
now:
  description: The time the item was evaluated at.
  returned: always
  type: str
explanation:
  description: Everything decided about the item.
  returned: success
  type: dict
  contains:
    reason:
      description: The deciding reason code (as RV(fleet.dispatch.board_info#module:board_items[].reason)).
      type: str
    holds:
      description: Every hold that applies, highest precedence first, each C(reason) and C(why).
      type: list
      elements: dict
    reopened:
      description: Whether a reopen after the last marker outranks it.
      type: bool
    ignored_reopens:
      description:
        - Reopens that count for nothing, each C(actor), C(at) and C(why) - a reopen resets the attempt count only when the
          fleet's identities or an account with write access to the repository made it.
      type: list
      elements: dict
    markers:
      description: Every marker in order, each C(kind), C(at), C(author), C(comment_id) and C(fields).
      type: list
      elements: dict
    attempts:
      description: Attempts counted (capacity and retry endings excluded, starts before a reopen excluded).
      type: int
    starts:
      description: Each start with its C(ending), whether it C(counted), and C(why).
      type: list
      elements: dict
    blockers:
      description: Each dependency edge with the blocker's C(state) and whether it C(blocks).
      type: list
      elements: dict
    placement:
      description: C(placed), C(worker), C(master), C(why) (and C(dark), the masters left out).
      type: dict
    route:
      description: What the item asks for - C(agent), C(model), C(effort) - each empty when not asked.
      type: dict
    priority:
      description: The board's priority field value, or null.
      type: raw
    priority_rank:
      description: Its rank, lower first; null for none.
      type: float
    spend:
      description: What the runs since the last reopen stated they spent - C(runs), C(priced_runs), C(tokens), C(cost_usd) (null when none stated).
      type: dict
    item_budget:
      description: The item budget (C(tokens), C(usd)); empty when there is none.
      type: dict
    budget_left:
      description: What is left of the item budget for the next run (C(tokens), C(usd)); empty without an item budget.
      type: dict
    budget_held_by:
      description:
        - Which limits of the item budget can hold the item - C(limits) (C(tokens), C(usd)), C(short) and C(text), which says
          why a USD limit cannot (the agent profile it is routed to states no cost, or its runs stated none; a cost is never
          estimated) - so C(tokens only) or C(nothing); empty without an item budget.
      type: dict
      version_added: 0.1.0
    last_run:
      description: The last close-out marker (C(kind), C(at), C(author), C(fields)) and C(classify), the command that reads
        its capture on the worker; null when no run has closed.
      type: dict
    pull:
      description:
        - The open pull request the next run continues (as RV(fleet.dispatch.board_info#module:board_items[].pull)), with its
          review as the brief would carry it - C(threads), C(changes_requested), C(failing_checks), each one line of text, and
          C(skipped), the untrusted authors left out - when C(read); null when the next run starts fresh.
      type: dict
lines:
  description: The explanation as lines a human reads.
  returned: success
  type: list
  elements: str
'''

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import item_limits, board_argspec, board_spec, module_now
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError, ItemNotFound
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines, masters_seen
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.pr_loop import DEFAULT_MAX_ROUNDS
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import format_time


def main():
    module = AnsibleModule(
        argument_spec=dict(
            board=board_argspec(),
            number=dict(type='int', required=True),
            max_attempts=dict(type='int', default=3),
            max_rounds=dict(type='int', default=DEFAULT_MAX_ROUNDS),
            now=dict(type='str'),
            masters=dict(type='list', elements='dict'),
            fleet_record=dict(type='raw'),
            agents=dict(type='list', elements='str'),
            item_budget_tokens=dict(type='int', default=0, no_log=False),   # a count of tokens, not a secret
            item_budget_usd=dict(type='float', default=0),
        ),
        supports_check_mode=True,
    )
    spec = board_spec(module.params['board'])
    now = module_now(module)
    number = module.params['number']
    result = dict(changed=False, board='', now=format_time(now))
    cap, rounds = item_limits(module, result)
    try:
        with open_board(spec) as board:
            result['board'] = board.location
            item = board.get(number)
            board.pull_details(item)
    except ItemNotFound:
        module.fail_json(msg='#%s is not on the board %s: check the number' % (number, result['board']), **result)
    except BoardError as exc:
        module.fail_json(msg='#%s could not be read: %s' % (number, exc), **result)
    record = module.params['fleet_record']
    if isinstance(record, str):
        try:
            record = json.loads(record) if record.strip() else None
        except ValueError as exc:
            module.warn('fleet_record is not JSON (%s): the masters are placed as the inventory gives them' % exc)
            record = None
    if record is not None and not isinstance(record, dict):
        module.warn('fleet_record is not a record of the fleet: the masters are placed as the inventory gives them')
        record = None
    ex = explain(item, now=now, ready=spec.get('ready', 'Ready'), max_attempts=module.params['max_attempts'],
                 masters=masters_seen(module.params['masters'], record, now),
                 agents=module.params['agents'], item_budget=cap, max_rounds=rounds)
    result.update(explanation=ex, lines=explain_lines(ex))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
