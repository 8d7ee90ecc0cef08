#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: board_marker
short_description: Post one status marker on a board item (comment first, then any close)
version_added: 0.1.0
description:
  - Posts one marker comment in the single marker grammar of the collection. Every marker starts with its own glyph, so a human
    sees it in the thread and the eligibility rule sees it too (a marker without a glyph is invisible and leaves the previous
    marker as the last word).
  - When O(close=true), the comment is written first and the close is attempted after it (closing an already-closed item
    with a comment once returned success and silently dropped the comment). Finding the item already closed is not an error.
  - The human text is stripped of live closing keywords next to references before it is posted (a quoted remedy once
    closed the issue it protected).
  - B(Every writer of a marker is a writer of the queue's eligibility). Refusals must not post markers; they log to stderr.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.board
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Renders the marker and returns it in RV(body) without posting anything.
  diff_mode:
    support: full
    details:
      - The diff shows the item's last marker before and after.
options:
  number:
    description: The item number.
    type: int
    required: true
  kind:
    description:
      - The marker kind. V(stopped) is for an external stop and makes no claim about the work; V(capacity) is excluded from
        the attempt count; V(retry) must carry C(not_before) in O(fields); V(left_open) keeps the item dispatchable;
        V(handoff) holds it while the session chain it names lives (docs/chains.md); V(budget) says the runner stopped the run
        at its budget, not a failure of the work, and counts as an attempt.
    type: str
    required: true
    choices: [start, success, noop, failure, stopped, capacity, retry, reset, left_open, handoff, budget]
  fields:
    description: Machine-readable fields carried by the marker (for example C(unit), C(worker), C(not_before), C(reset_at)).
    type: dict
    default: {}
  text:
    description: Human text after the marker's first line. Board text is data here; it is never passed to a shell.
    type: str
    default: ''
  close:
    description: Close the item after the comment is posted (comment first, then the close).
    type: bool
    default: false
seealso:
  - module: fleet.dispatch.board_info
'''

EXAMPLES = r'''
- name: Announce a run's start before anything that can fail
  fleet.dispatch.board_marker:
    board: "{{ fleet_board }}"
    number: 42
    kind: start
    fields:
      unit: task-42
      worker: "{{ inventory_hostname }}"

- name: Record success and close the item, comment first
  fleet.dispatch.board_marker:
    board: "{{ fleet_board }}"
    number: 42
    kind: success
    fields:
      artifact: PR 17
    close: true
'''

RETURN = r'''
posted:
  description: Whether a marker was posted (false in check mode).
  returned: always
  type: bool
body:
  description: The marker text as posted (or as it would be posted in check mode).
  returned: always
  type: str
  sample: "✅ success · task-42"
comment_id:
  description: The board's id of the new comment.
  returned: when posted
  type: str
closed:
  description: Whether this call changed the item to closed.
  returned: always
  type: bool
state:
  description: The item's state after the call when known.
  returned: always
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import board_argspec, board_spec
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import KINDS, format_marker, markers_of


def _last_kind(item):
    markers = markers_of(item)
    return markers[-1].kind if markers else None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            board=board_argspec(),
            number=dict(type='int', required=True),
            kind=dict(type='str', required=True, choices=list(KINDS)),
            fields=dict(type='dict', default={}),
            text=dict(type='str', default=''),
            close=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        body = format_marker(p['kind'], p['fields'], p['text'])
    except ValueError as exc:
        module.fail_json(msg='%s marker: %s' % (p['kind'], exc))
    result = dict(changed=False, posted=False, body=body, closed=False, state=None)
    try:
        with open_board(board_spec(p['board'])) as board:
            item = board.get(p['number'])
            before = _last_kind(item)
            result['state'] = item.state
            result['diff'] = dict(before='last marker: %s\n' % before, after='last marker: %s\n' % p['kind'])
            if module.check_mode:
                result['changed'] = True
                module.exit_json(**result)
            posted = board.post_marker(p['number'], body, close=p['close'])
    except BoardError as exc:
        module.fail_json(msg=str(exc), **result)
    comment = posted['comment']
    result.update(changed=True, posted=True, comment_id=str(comment.id), closed=bool(posted['closed']),
                  state=posted['state'] or result['state'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
