# -*- coding: utf-8 -*-
"""What every case of ``make demo`` must end with (test_demo.py: the test-bed case; test_demo_user.py:
the user-manager case): the merged items done and closed, the no-op, the retry in its wait, the limit's
capacity death, and a last sweep that finds the only master dark until the reset the agent stated."""
from __future__ import annotations

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time


def items_of(doc):
    return dict((item['number'], item) for item in doc['items'])


def check_runs_closed_out(status, host):
    """status.json after the runs: #1 and #12 merged (closed, done), #5 a no-op, #10 a retry, #13 dark."""
    items = items_of(status)
    for number in (1, 12):          # merge mode: the fake agent's merged change closed them (D2)
        item = items[number]
        assert item['state'] == 'closed' and item['reason'] == 'done', item
        assert item['last_marker']['kind'] == 'success' and item['last_marker']['fields']['host'] == host, item
        assert any(a['merged'] and number in a['closes'] for a in item['artifacts']), item
    noop = items[5]                 # claim mode: success claimed, nothing merged
    assert noop['state'] == 'open' and noop['last_marker']['kind'] == 'noop', noop
    retry = items[10]               # die503: provably did nothing, eligible again later (D7)
    assert retry['reason'] == 'retry_wait' and retry['last_marker']['kind'] == 'retry' and retry['not_before'], retry
    dark = items[13]                # ratelimit: a capacity death, not an attempt (D8)
    assert dark['last_marker']['kind'] == 'capacity' and dark['last_marker']['fields']['source'] == 'rate_limit', dark


def check_last_sweep_dark(plan, out, worker, master_name, stated_reset):
    """The last sweep's plan.json: the one master dark (rate_limit) until the stated reset, nothing launched,
    the unblocked dependant (#4) and the no-op (#5) held; the sweep said so on its output."""
    (master,) = plan['masters']
    assert master['worker'] == worker and master['master'] == master_name, master
    assert master['dark'] is True and master['source'] == 'rate_limit', master
    assert parse_time(master['reset_at']) == parse_time(stated_reset), (master, stated_reset)
    assert plan['mode'] == 'apply' and not plan['launched'], plan['launched']
    held = sorted(int(u['number']) for u in plan['unplaced'])
    assert 4 in held and 5 in held, plan['unplaced']     # the unblocked dependant and the no-op wait
    assert 'master %s/%s: dark (rate_limit) until %s' % (worker, master_name, master['reset_at']) in out, out[-3000:]


def check_printed_runs(out):
    """demo/wait.py's progress: each run's close-out as it happened, then the summary of all of them."""
    for line in ('task-1 (item 1) closed out: \u2705 success; the item is closed',
                 'task-5 (item 5) closed out: \u26aa noop; the item is open',
                 'task-10 (item 10) closed out: \U0001f501 retry, eligible again at ',
                 'item 13 closed out: capacity'):
        assert line in out, (line, out[-6000:])
    assert 'every run the sweep launched has closed out: #1 success, #5 noop, #10 retry, #12 success' in out, out[-4000:]
