# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's end (D7, D12, D16): read the capture once, re-read the item, decide, post the one terminal
marker; an external stop posts ``stopped``, which says nothing about the work.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Dict, Optional

from .._board.protocol import BoardError
from .._core.board.markers import format_marker
from .._core.board.model import format_time
from .._core.dispatch.pr_loop import round_fields, round_text
from .._core.outcome.capture import read_capture
from .._core.outcome.closeout import Decision, decide
from .._core.outcome.exits import EXIT_CLOSEOUT_LOST
from .._host import spool
from .._host.stops import take_stop_note
from . import posting
from .signals import Signalled
from .spawn import stop_group


class CloseoutMixin(object):
    """The ``Run``'s close-out: ``_finish`` (the normal end), ``_stopped`` (an external stop), ``_closeout``."""

    def _closeout(self, decision: Decision) -> int:
        """Post the one terminal marker (retry once, then loudly); returns the exit code."""
        self._enter_critical()
        try:
            self._apply_capacity(decision)
            if self.session is not None:   # the session closed with its handoff, one transaction, before the marker
                decision.fields.update(self.session.close(self.out_dir, decision.kind, self.clock()))
            fields = self._fields(ended_at=format_time(self.clock()), **decision.fields)
            if getattr(self, 'skipped_mentions', None):  # untrusted mentions are named, never briefed
                fields['mentions_skipped'] = [{'id': m.get('id'), 'author': m.get('author')} for m in self.skipped_mentions]
            if getattr(self, 'skipped_reviews', None):   # so are untrusted reviewers' notes
                fields['reviews_skipped'] = [{'author': n.author, 'kind': n.kind} for n in self.skipped_reviews]
            body = format_marker(decision.kind, fields, decision.text)
            error = self._post(decision.kind, body, close=decision.close)
            if error is not None:
                error = self._spool_and_retry(decision.kind, body, decision.close, error)
            self.closeout_posted = error is None
            record = {'kind': decision.kind, 'fields': fields, 'text': decision.text, 'close': decision.close,
                      'posted': error is None, 'error': error, 'exit_code': decision.exit_code if error is None else EXIT_CLOSEOUT_LOST}
            self.result = record
            try:
                self._write_json(os.path.join(self.run_dir, 'closeout.json'), record)
            except OSError as exc:
                self.log('WARNING: closeout.json not written: %s' % exc)
            if error is not None:
                self.log('ERROR: THE CLOSE-OUT WAS NOT POSTED (retried for %d s): %s\n'
                         'it stays spooled in %s for the next run of this master to deliver (the reaper leaves '
                         'item %s alone meanwhile); or post this by hand:\n%s'
                         % (2 + sum(posting.CLOSEOUT_RETRY_DELAYS), error, spool.spool_dir(self.config.state_dir),
                            self.config.number, body))
                return EXIT_CLOSEOUT_LOST
            self.log('close-out posted: %s (exit %d)' % (decision.kind, decision.exit_code))
            handoff = self.session.marker(self._fields()) if self.session is not None and not decision.close else None
            if handoff is not None and self._post('handoff', handoff) is not None:
                self.log('ERROR: the handoff marker was not posted (retried once): the sweep may dispatch item %s while '
                         'its chain runs' % self.config.number)
            return decision.exit_code
        finally:
            self._critical -= 1

    def _stop_note(self) -> Optional[Dict[str, Any]]:
        """The dispatcher's deliberate-stop note for THIS invocation, read once and deleted (docs/dispatch.md).

        ``<state_dir>/stops/<unit>.<INVOCATION_ID>.json`` with ``reason: duplicate``: the dispatcher
        stopped this run as the younger of two duplicates. A note for another invocation is stale
        and ignored (left for nobody: it names a run that is gone); anything that is not a JSON
        object naming this invocation is no evidence and is ignored.
        """
        return take_stop_note(self.config.state_dir, self.unit, self.environ.get('INVOCATION_ID', ''), log=self.log)

    def _stopped(self, signum: int) -> None:
        """The external-stop path: stop the agent, post ``stopped`` (no claim about the work).

        A stop the dispatcher made to repair a duplicate carries ``reason: duplicate`` and the
        kept run, from the dispatcher's note; it is still only a ``stopped`` marker and never closes.
        """
        self._enter_critical()
        try:
            name = signal.Signals(signum).name
            self.log('%s received: stopping the agent and posting the stopped marker' % name)
            rc = stop_group(self.proc, self.config.kill_grace, self.log) if self.proc is not None else None
            note = self._stop_note()
            fields = {'signal': name, 'exit_code': rc}
            text = 'run stopped by %s from outside; this says nothing about the work' % name
            if note is not None and note.get('reason') == 'operator':
                fields.update(reason='operator', by=note.get('by'), why=note.get('why'))
                text = ('run stopped by hand by %s%s; this says nothing about the work'
                        % (note.get('by') or 'an operator', ': %s' % note['why'] if note.get('why') else ''))
            elif note is not None:
                kept = note.get('kept') if isinstance(note.get('kept'), dict) else {}
                fields.update(reason='duplicate', kept=kept, by=note.get('by'))
                text = ('run stopped by the dispatcher as a duplicate; the run on %s/%s keeps the item; this says nothing about the work'
                        % (kept.get('worker', '?'), kept.get('master', '?')))
            if self.start_posted and not self.closeout_posted:
                self._closeout(Decision('stopped', text, fields))
        finally:
            self._critical -= 1

    def _finish(self, rc, timed_out) -> int:
        """Read the capture once, re-read the item, decide, close out (one parse for both)."""
        if (isinstance(rc, int) and -rc in (signal.SIGTERM, signal.SIGINT) and not timed_out and not self.stalled
                and self.budget_stop is None):
            # The agent died of a stop signal the runner did not send. When the unit is stopped,
            # systemd signals every process of the cgroup at once and the agent may be reaped
            # before the runner's own handler has run: give that signal a moment to arrive, so a
            # deliberate stop is never closed out as a failure (D12 item 3).
            for _dummy in range(20):  # 20 x 50 ms: unmeasured bound; the handler normally runs in microseconds
                if self._pending is not None:
                    break
                time.sleep(0.05)
            if self._pending is not None:
                self._stopping = True
                raise Signalled(self._pending)
            name = signal.Signals(-rc).name
            return self._closeout(Decision('stopped', 'the agent was stopped by %s from outside; this says nothing about the work'
                                           % name, {'signal': name, 'exit_code': rc, 'who': 'agent'}))
        try:
            with open(self.capture_path, 'r', encoding='utf-8', errors='replace') as handle:
                capture = handle.read()
        except OSError as exc:
            self.log('WARNING: the capture %s is unreadable: %s' % (self.capture_path, exc))
            capture = ''
        now = self.clock()
        reading = read_capture(capture, self.config.agent, exit_code=rc, now=now, tz=self.config.tz)
        outcome = reading.outcome(rc)
        item = None
        for attempt in (1, 2):
            try:
                item = self.board.get(self.ref)
                break
            except BoardError as exc:
                self.log('reading the item back failed (attempt %d of 2): %s' % (attempt, exc))
                self._reopen()
        if self.board_started_at is None and item is not None:   # the start marker as the board dated it, read back
            start = posting.marker_of(item, self.run_id, 'start')
            if start is not None:
                self._note_board_start(start)
        if self.board_started_at is None and item is not None:
            self.log('WARNING: the start marker\'s time on the board could not be read back: no merge is credited to '
                     'this run (D16: the worker\'s clock is not the board\'s)')
        rounded = None
        if self.pull is not None:   # a round: name the pull request and whether its head moved
            again = [a for a in (item.artifacts if item is not None else ()) if a.ref == self.pull.ref]
            rounded = round_fields(self.pull, again[0].head_sha if again else None)
        decision = decide(outcome, item, number=self.config.number, repo=self.config.repo,
                          pushed=self.pull.ref if rounded and rounded['head_moved'] is True else '',
                          started_at=self.board_started_at,
                          now=now, exit_code=rc, capture=capture, ladder=self.config.backoff, timed_out=timed_out,
                          unit=self.unit, stalled=self.config.stall_timeout if self.stalled else 0,
                          budget_stop=self.budget_stop)
        if item is None:
            decision.fields['board'] = 'unreadable at close-out: nothing could be credited'
        if rounded is not None:
            decision.fields.update(rounded)
            decision.text = '%s; %s' % (decision.text, round_text(rounded))
        decision.fields.update(run_cost(reading))
        decision.fields.update(self._budget_fields(reading))
        return self._closeout(decision)


def run_cost(reading) -> Dict[str, Any]:
    """The run's cost as the envelope states it, for the close-out marker: ``turns`` is already
    there; ``tokens`` (input + output, as stated) and ``cost_usd`` only when stated, never invented."""
    out = {}
    if reading.tokens is not None:
        out['tokens'] = reading.tokens
    if reading.cost_usd is not None:
        out['cost_usd'] = reading.cost_usd
    return out
