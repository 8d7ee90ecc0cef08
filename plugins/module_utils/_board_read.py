# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet.dispatch.board_info``'s read and decision, for its two callers: the module (``plugins/modules/board_info.py``) and
the action that runs it in the controller's own process when the task runs there (``plugins/action/board_info.py``: no
module payload, no interpreter started - most of a board read's task time on a small board). ``run(module)`` takes an
object with ``params``, ``warn`` and ``fail_json``/``exit_json`` (which do not return): an ``AnsibleModule``, or the
action's stand-in (``plugin_utils/in_process.py``).
"""

from __future__ import annotations

import datetime

from ._argspec import item_limits, board_argspec, board_spec, module_now
from ._board.protocol import BoardError, BoardUnreadable
from ._board.factory import board_identity, open_board
from ._board.table import TableError, write_table
from ._core.board.naming import board_id
from ._core.board.model import CLOCK_SKEW_WARN, UTC, format_time, skew_text
from ._core.dispatch.plan import assess, candidates
from ._core.dispatch.pr_loop import DEFAULT_MAX_ROUNDS, unread_pulls

ARGUMENT_SPEC = dict(
    board=board_argspec(),
    mode=dict(type='str', default='plan', choices=['plan', 'apply']),
    max_attempts=dict(type='int', default=3),
    max_rounds=dict(type='int', default=DEFAULT_MAX_ROUNDS),
    now=dict(type='str'),
    numbers=dict(type='list', elements='int'),
    warn_refusals=dict(type='bool', default=True),
    agents=dict(type='list', elements='str'),
    item_budget_tokens=dict(type='int', default=0, no_log=False),   # a count of tokens, not a secret
    item_budget_usd=dict(type='float', default=0),
    table=dict(type='path'),
)
"""The module's options (its DOCUMENTATION documents them)."""


def _board_clock(module, board):
    """The board's clock (None when unknown) and what board_info returns of it: the board's time and this
    controller's offset from it (a guard read: unknown when it fails, D5)."""
    try:
        told = board.board_time()
    except BoardError as exc:
        module.warn("the board's clock could not be read: worker clocks and ages are measured against this controller's (%s)"
                    % exc)
        return None, {'board_time': None, 'clock_offset_s': None}
    offset = round((datetime.datetime.now(UTC) - told).total_seconds(), 1)
    if abs(offset) > CLOCK_SKEW_WARN:
        module.warn(skew_text('this controller', offset, 'the board'))
    return told, {'board_time': format_time(told), 'clock_offset_s': offset}


def _warn_refusals(module, wanted, assessed):
    """A hand dispatch names items; say on stderr why each refused one would not run (never on the board)."""
    found = dict((entry['number'], entry) for entry in assessed)
    for number in wanted:
        entry = found.get(number)
        if entry is None:
            module.warn('#%s refused: it is not on the board' % number)
        elif not entry['eligible']:
            detail = ''
            if entry['reason'] == 'blocked':
                detail = ' by ' + ', '.join('#%s' % n for n in entry['open_blockers'])
            elif entry['reason'] == 'retry_wait':
                detail = ' until %s' % entry['not_before']
            elif entry['reason'] == 'parked':
                detail = ' after %s attempts' % entry['attempts']
            elif entry['reason'] == 'unreadable':
                detail = ': %s' % entry['unreadable']
            elif entry['reason'] == 'unroutable':
                detail = ': %s' % entry['unroutable']
            elif entry['reason'] == 'budget_spent':
                detail = ': %s' % entry['budget_spent']
            module.warn('#%s refused: %s%s' % (number, entry['reason'], detail))


def _assess(board, items, wanted, decide):
    """Every item with its verdict; an eligible one that continues a pull request whose review and checks the read left
    unread (GitHub reads them per candidate, D1: one call each) is read and decided again, so a round nothing has
    answered yet waits (``awaiting_review``). Returns the verdicts and how many items were read again."""
    assessed = assess(items, **decide)
    unread = set(unread_pulls(assessed, wanted))
    for pos, item in enumerate(items):
        if (item.number, item.repo or '') in unread:
            board.pull_details(item)
            assessed[pos] = assess([item], **decide)[0]
    return assessed, len(unread)


def run(module):
    """The board read and every decision, answered through ``module`` (exit_json or fail_json)."""
    spec = board_spec(module.params['board'])
    if module.params['numbers']:
        spec.pop('read_memory', None)  # a hand dispatch reads its items in full, never deferred
    now = module_now(module)
    result = dict(changed=False, readable=True, error='', board='', now=format_time(now), controller_now=format_time(now),
                  board_time=None, clock_offset_s=None,
                  cost=None, board_items=[],
                  candidates=[], counts={}, table='', board_id=board_id(*board_identity(spec)))
    if module.params['table']:
        result['table'] = module.params['table'].replace('{board_id}', result['board_id'])

    def write(assessed):
        if result['table']:
            try:
                write_table(result['table'], assessed, result['now'])
            except TableError as exc:
                module.fail_json(msg=str(exc), **result)
    cap, rounds = item_limits(module, result)
    wanted = module.params['numbers']
    decide = dict(now=now, ready=spec.get('ready', 'Ready'), max_attempts=module.params['max_attempts'],
                  agents=module.params['agents'], item_budget=cap, max_rounds=rounds)
    try:
        with open_board(spec) as board:
            result['board'] = board.location
            read = board.read(now=now)
            told, clock = _board_clock(module, board)
            result.update(clock)
            if told is not None and not module.params['now']:
                # D16: the markers are dated by the board, so their ages and waits are counted on its clock
                decide['now'] = told
                result['now'] = format_time(told)
            assessed, detailed = _assess(board, read.items, wanted, decide)
    except BoardUnreadable as exc:
        result.update(readable=False, error=str(exc))
        write([])
        if module.params['mode'] == 'apply':
            module.fail_json(msg='the queue cannot be read, so nothing can be decided: %s' % exc, **result)
        module.warn('the queue cannot be read; plan mode reports it and returns no candidates: %s' % exc)
        module.exit_json(**result)
    except BoardError as exc:
        module.fail_json(msg=str(exc), **result)

    cost = read.cost
    if isinstance(cost, dict):
        cost['pull_details'] = detailed
    del read     # the board's own objects: only the decisions go on (the module's peak memory)
    counts = {}
    for entry in assessed:
        counts[entry['reason']] = counts.get(entry['reason'], 0) + 1
    write(assessed)
    chosen = candidates(assessed)
    if module.params['table'] and not wanted:
        assessed = []
    if wanted:
        assessed = [entry for entry in assessed if entry['number'] in wanted]
        if module.params['warn_refusals']:
            _warn_refusals(module, wanted, assessed)
    result.update(cost=cost, board_items=assessed, candidates=[c for c in chosen if not wanted or c['number'] in wanted],
                  counts=counts)
    module.exit_json(**result)
