# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The master's capacity file as a run and the self-update write it (D8, D11, D20): one reader, one writer.

A runner that cannot open the board darkens its master (``board_unreachable``); a start marker that landed
clears that; a close-out writes a limit or, after a clean run, deletes the state; a self-update that did not
verify darkens the master (``update_failed``) and a verified one clears it. Failures here are never fatal.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from .._core.board.model import format_time
from .._core.outcome.capacity import (board_unreachable_state, clears_after_clean_run, clears_after_start, clears_after_update,
                                      update_failed_state)
from .._core.outcome.closeout import Decision
from .._host.files import CAPACITY_FILE, read_capacity_file, write_capacity_file


class CapacityMixin(object):
    """The ``Run``'s capacity writes: ``_note_board`` (board reachable or not), ``_apply_capacity`` (a close-out's)."""

    def _note_board(self, reachable: bool, message: str = '') -> None:
        """D8 for the board: a runner that cannot open the board darkens its master (``board_unreachable``,
        tried again after a cooldown) so the dispatcher does not relaunch into the same failure; a start
        marker that landed deletes that state (self-healing). Never fatal."""
        try:
            existing, _why, _present = read_capacity_file(self.capacity_path)
            if reachable:
                if clears_after_start(existing):
                    os.unlink(self.capacity_path)
                    self.log('the board answered: capacity state %s (board_unreachable) deleted' % self.capacity_path)
                return
            state = board_unreachable_state(existing, now=self.clock(), message=message, unit=self.unit)
            if state is None:
                self.log('the master is already dark (%s): its capacity state is left as it is' % existing['source'])
                return
            write_capacity_file(self.capacity_path, state)
            self.log('capacity state %s written (board_unreachable): the dispatcher places nothing on this master until %s '
                     'or until a run here starts cleanly' % (self.capacity_path, format_time(state['reset_at'])))
        except OSError as exc:
            self.log('WARNING: the capacity state %s could not be updated: %s' % (self.capacity_path, exc))

    def _apply_capacity(self, decision: Decision) -> None:
        """Write the capacity state or, after a clean run, delete it. Failures are logged, never fatal."""
        try:
            if decision.capacity_state is not None:
                write_capacity_file(self.capacity_path, decision.capacity_state)
                self.log('capacity state written to %s (%s, reset %s)' % (
                    self.capacity_path, decision.capacity_state['source'],
                    format_time(decision.capacity_state.get('reset_at')) or 'unknown'))
            elif decision.clean and os.path.exists(self.capacity_path):
                existing, _why, _present = read_capacity_file(self.capacity_path)
                if clears_after_clean_run(existing, self.started_at):
                    os.unlink(self.capacity_path)
                    self.log('clean run: capacity state %s deleted (self-healing)' % self.capacity_path)
                else:
                    self.log('clean run: capacity state %s (%s) is kept: it was written at %s, after this run started, by '
                             'another run' % (self.capacity_path, existing.get('source'), format_time(existing.get('written_at'))))
        except OSError as exc:
            self.log('WARNING: the capacity state %s could not be updated: %s' % (self.capacity_path, exc))


def note_update_outcome(state_dir: str, *, failed: Optional[str], now: Any, unit: str, log) -> None:
    """D11 + D8: a self-update that did not verify darkens the master (``update_failed``) so the
    dispatcher stops placing work it would refuse; a verified one deletes that state. Never fatal."""
    path = os.path.join(state_dir, CAPACITY_FILE)
    try:
        existing, _why, _present = read_capacity_file(path)
        if failed is not None:
            state = update_failed_state(existing, now=now, message=failed, unit=unit)
            if state is None:
                log('fleet-runner: the master is already dark (%s): its capacity state is left as it is' % existing['source'])
                return
            write_capacity_file(path, state)
            log('fleet-runner: capacity state %s written (update_failed): the dispatcher places nothing here until the '
                'runner checkout is fixed (re-run fleet.dispatch.worker) or the cooldown ends' % path)
        elif clears_after_update(existing):
            os.unlink(path)
            log('fleet-runner: the self-update verified: capacity state %s (update_failed) deleted' % path)
    except OSError as exc:
        log('fleet-runner: WARNING: the capacity state %s could not be updated: %s' % (path, exc))
