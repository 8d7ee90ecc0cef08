# -*- coding: utf-8 -*-
"""One cycle as the page and the metrics get it: hostile board text, a dark master with a stated
reset, a revoked one with none, a master the probe could not read, live and closed runs."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Blocker, Comment, Item, format_time
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
HOSTILE = '<img src=x onerror=alert(1)><script>alert(2)</script> "quoted" & $(reboot)'
RESET = '2026-11-30T14:30:00Z'


def at(minutes):
    return NOW + dt.timedelta(minutes=minutes)


def items(extra=0):
    """Five fixed items (one per interesting state) and ``extra`` plain ready ones."""
    def c(i, kind, minute, **fields):
        return Comment(id='c%d' % i, body=format_marker(kind, fields), created_at=at(minute), author='fleet-bot')
    board = [
        Item(number=1, title=HOSTILE, state='open', status='Ready'),
        Item(number=2, title='running', state='open', status='Ready',
             comments=[c(1, 'start', -30, unit='task-2', host='w1', master='agent1')]),
        Item(number=3, title='done', state='closed', status='Done',
             comments=[c(2, 'start', -90, unit='task-3', host='w1', master='agent2'),
                       c(3, 'success', -60, unit='task-3', host='w1', master='agent2', started_at=format_time(at(-90)),
                         cost_usd=0.42)]),
        Item(number=4, title='blocked and backlog', state='open', status='Backlog', blockers=[Blocker(number=1, state='open')]),
        Item(number=5, title='retrying', state='open', status='Ready',
             comments=[c(4, 'start', -20, unit='task-5', host='w2', master='agent1'),
                       c(5, 'retry', -19, unit='task-5', started_at=format_time(at(-20)), not_before=format_time(at(10)))]),
    ]
    board.extend(Item(number=100 + n, title='item %d <b>' % n, state='open', status='Ready') for n in range(extra))
    return assess(board, now=NOW)


def cycle(extra=0):
    return {
        'mode': 'apply', 'board': 'ledger:/tmp/x.sqlite3', 'now': format_time(NOW), 'readable': True, 'error': '',
        'cost': {'cost': 1, 'remaining': 4321}, 'items': items(extra),
        'configured': [{'worker': 'w1', 'master': 'agent1'}, {'worker': 'w1', 'master': 'agent2'},
                       {'worker': 'w2', 'master': 'agent1'}, {'worker': 'w2', 'master': 'agent2'}],
        'masters': [
            {'worker': 'w1', 'master': 'agent1', 'dark': False, 'headroom': {'live_runs': 1, 'load1': 0.5, 'cpus': 2}},
            {'worker': 'w1', 'master': 'agent2', 'dark': True, 'source': 'rate_limit', 'reset_at': RESET,
             'why': 'rate limit until ' + RESET, 'headroom': {'live_runs': 0}},
            {'worker': 'w2', 'master': 'agent1', 'dark': True, 'source': 'revoked', 'reset_at': None, 'headroom': {}},
        ],
        'survey': {'masters': {'w1/agent1': 1, 'w1/agent2': 0, 'w2/agent1': 0},
                   'blind': [{'worker': 'w2', 'master': 'agent2', 'why': 'ssh: <unreachable>'}]},
        'leases': [{'name': 'task-1', 'acquired': True, 'degraded': False, 'expires_at': format_time(at(9))}],
        'lease_ttl': 600, 'finished_at': format_time(NOW + dt.timedelta(seconds=12)), 'started_at': format_time(NOW),
        'reaper': {'reap': [{'number': 9, 'unit': 'task-9', 'why': 'start is 7200s old <x>'}],
                   'held': [{'number': 2, 'why': 'a live unit runs this item'}]},
        'announcer': [{'title': 'stalled: <b>#5</b>', 'kind': 'blind'}],
        'cycle_text': '{"result": "failed", "task": "Read the board", "reason": "<unreadable> queue"}',
        'heartbeat_text': '{"time": "2026-11-30T11:55:00Z", "result": "success"}',
    }
