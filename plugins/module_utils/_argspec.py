# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument specs shared by several modules, kept with their constraints (STYLE.md).

``board_argspec()`` is the ``board`` option of every board module; its documentation is the
``fleet.dispatch.board`` doc fragment, and the two must stay in step (ansible-test
validate-modules compares them).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict

from ._core.board.model import parse_time, UTC
from ._core.dispatch.item_budget import item_budget
from ._core.dispatch.pr_loop import round_cap


def board_argspec() -> Dict[str, Any]:
    """The ``board`` option: which board is the queue, and how to reach it."""
    return dict(
        type='dict',
        required=True,
        options=dict(
            kind=dict(type='str', default='ledger', choices=['ledger', 'github']),
            path=dict(type='path'),
            dsn=dict(type='str', no_log=True),
            owner=dict(type='str'),
            owner_type=dict(type='str', default='auto', choices=['auto', 'organization', 'user']),
            project=dict(type='int'),
            status_field=dict(type='str', default='Status'),
            ready=dict(type='str', default='Ready'),
            agent_field=dict(type='str', default='Agent'),
            model_field=dict(type='str', default='Model'),
            effort_field=dict(type='str', default='Effort'),
            priority_field=dict(type='str', default='Priority'),
            budget_field=dict(type='str', default='Budget'),
            token=dict(type='str', no_log=True),
            api_url=dict(type='str', default='https://api.github.com'),
            repo=dict(type='str'),
            base_branch=dict(type='str'),
            mentions=dict(type='str', default='comments', choices=['comments', 'notifications']),
            mention_handles=dict(type='list', elements='str'),
            marker_authors=dict(type='list', elements='str'),
            trust_members=dict(type='bool', default=False),
            read_memory=dict(type='path'),
            full_read_every=dict(type='int', default=10),
        ),
        mutually_exclusive=[('path', 'dsn')],
        required_if=[('kind', 'github', ('owner', 'project'))],
    )


def ledger_argspec() -> Dict[str, Any]:
    """The top-level ``path``/``dsn`` options of a module that talks to the ledger itself, not to a
    board (``handoff_claim``: claims live in the ledger even when the queue is GitHub). Documented
    by the ``fleet.dispatch.ledger`` doc fragment. Neither set: ``default_ledger_path()``, the same
    default as the ledger board's."""
    return dict(
        argument_spec=dict(
            path=dict(type='path'),
            dsn=dict(type='str', no_log=True),
        ),
        mutually_exclusive=[('path', 'dsn')],
    )


def board_spec(params: Dict[str, Any]) -> Dict[str, Any]:
    """The validated ``board`` option as the spec ``_board.open_board`` takes (unset keys dropped)."""
    spec = dict((k, v) for k, v in (params or {}).items() if v is not None)
    if spec.get('kind', 'ledger') == 'ledger' and not spec.get('path') and not spec.get('dsn'):
        spec['path'] = default_ledger_path()
    return spec


def default_ledger_path() -> str:
    """Where the embedded ledger lives when a board names neither ``path`` nor ``dsn``."""
    import os
    base = os.environ.get('XDG_DATA_HOME') or os.path.join(os.path.expanduser('~'), '.local', 'share')
    return os.path.join(base, 'fleet-dispatch', 'ledger.sqlite3')


def resolve_now(value) -> _dt.datetime:
    """The ``now`` option (ISO-8601, for reproducible plans and tests) or the clock, read once."""
    if value:
        return parse_time(value)
    return _dt.datetime.now(UTC)


def module_now(module) -> _dt.datetime:
    """``resolve_now`` of the module's ``now`` option; a bad one fails the module with the fix."""
    try:
        return resolve_now(module.params['now'])
    except ValueError as exc:
        module.fail_json(msg='now: %s; give an ISO-8601 time such as 2026-11-30T01:00:00Z' % exc)


def item_limits(module, result):
    """The item budget and the round cap a board module was given (``item_budget_tokens``,
    ``item_budget_usd``, ``max_rounds``), checked; a bad one fails the module naming the option."""
    try:
        cap = item_budget(module.params['item_budget_tokens'], module.params['item_budget_usd'])
    except ValueError as exc:
        module.fail_json(msg='item budget: %s' % exc, **result)
    try:
        rounds = round_cap(module.params['max_rounds'])
    except ValueError as exc:
        module.fail_json(msg='max_rounds: %s' % exc, **result)
    return cap, rounds
