# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner's exit codes: one table for every ``fleet-runner`` program a unit runs (D20: two failures
that look alike get two codes).

No code of ours is in 1-7 or 64-78: systemd names those (LSB's ``4/NOPERMISSION``, BSD's ``69/UNAVAILABLE``),
and ``systemctl status`` would show a runner that lost its close-out as a permission error. 1 is left to
an uncaught Python exception, 200-255 to systemd itself. The close-out codes are 10-19, the runner's own
failures 20-29 (and the chain runner's 8, outside both named ranges); one constant per line, each in ``NAMES``.
"""

from __future__ import annotations

from typing import Optional

EXIT_SUCCESS = 0            # the success marker was posted
EXIT_NOOP = 10              # the no-op marker was posted
EXIT_FAILURE = 11           # the failure marker was posted (a chain session: its agent failed or was stopped)
EXIT_CAPACITY = 12          # the capacity marker was posted: not a failure of the unit
EXIT_RETRY = 13             # the retry marker was posted: not a failure of the unit
EXIT_STOPPED = 14           # the stopped marker was posted (the agent alone died of SIGTERM/SIGINT from outside)
EXIT_BUDGET = 15            # the budget marker was posted: the runner stopped the agent at the run's budget
EXIT_LEFT_OPEN = 16         # the left-open marker was posted: a merge closes the item, the run's board start is unknown
EXIT_LEDGER_UNREACHABLE = 8     # the chain runner could not read or write the ledger: nothing was launched
EXIT_USAGE = 20             # bad arguments or configuration; nothing was posted
EXIT_UPDATE_FAILED = 21     # the self-update did not verify; nothing was posted
EXIT_CLOSEOUT_LOST = 22     # the terminal marker could not be posted now; it is spooled and logged loudly
EXIT_START_LOST = 23        # the start marker could not be posted; the agent was not started
EXIT_START_FAILED = 24      # the chain runner claimed a successor whose worktree or unit did not start
EXIT_CLOSE_LOST = 25        # a chain session's close (and its handoff) could not be written
EXIT_RUNNING_ELSEWHERE = 26     # the board shows another run of the item live: nothing was posted, no agent started

# the close-out marker kind -> its exit code (_core.outcome.closeout.Decision.exit_code)
BY_MARKER = {
    'success': EXIT_SUCCESS,
    'noop': EXIT_NOOP,
    'failure': EXIT_FAILURE,
    'capacity': EXIT_CAPACITY,
    'retry': EXIT_RETRY,
    'stopped': EXIT_STOPPED,
    'budget': EXIT_BUDGET,
    'left_open': EXIT_LEFT_OPEN,
}

# exit code -> the word the docs, the notifier's line and the start check use for it
NAMES = {
    EXIT_SUCCESS: 'success',
    EXIT_NOOP: 'noop',
    EXIT_FAILURE: 'failure',
    EXIT_CAPACITY: 'capacity',
    EXIT_RETRY: 'retry',
    EXIT_STOPPED: 'stopped',
    EXIT_BUDGET: 'budget',
    EXIT_LEFT_OPEN: 'left_open',
    EXIT_LEDGER_UNREACHABLE: 'ledger_unreachable',
    EXIT_USAGE: 'usage',
    EXIT_UPDATE_FAILED: 'update_failed',
    EXIT_CLOSEOUT_LOST: 'closeout_lost',
    EXIT_START_LOST: 'start_lost',
    EXIT_START_FAILED: 'start_failed',
    EXIT_CLOSE_LOST: 'close_lost',
    EXIT_RUNNING_ELSEWHERE: 'running_elsewhere',
}

# the codes a task unit may end with that are not a failure of the unit (launch's success_exit_status):
# the item is dark or waits, so the OnFailure= notifier must not fire
NOT_UNIT_FAILURES = (EXIT_CAPACITY, EXIT_RETRY, EXIT_BUDGET)


def name_of(code: Optional[object]) -> str:
    """The table's word for an exit status (an int or its text, as ``ExecMainStatus`` gives it); '' for others."""
    try:
        return NAMES.get(int(str(code).strip()), '')
    except (TypeError, ValueError):
        return ''
