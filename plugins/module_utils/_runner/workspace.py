# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's directory and its brief: ``run.json``, ``start.json`` (D20 "launched is not started"), the brief
rendered from the item, its mentions and the pull request it continues.

The start record is ``<run dir>/start.json``, written once per invocation -- after the start marker reached
the board, or when the run could not start -- and read (``_host/files.py`` ``read_start_record``) by
fleet.dispatch.start_info.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Dict, Optional

from .._core.board.markers import markers_of
from .._core.board.mentions import provenance
from .._core.board.model import format_time
from .._core.dispatch.eligibility import last_reopen
from .._core.dispatch.pr_loop import plan as pull_plan, rounds_from_env
from .._host.files import START_FILE
from .brief import BRIEF_VERSION, render
from .brief_pull import section as pull_section


class WorkspaceMixin(object):
    """The ``Run``'s files: the run directory, the start record, the brief."""

    def _write_json(self, path: str, data: Dict[str, Any]) -> None:
        tmp = '%s.%s.tmp' % (path, os.getpid())
        with open(tmp, 'w', encoding='utf-8') as handle:
            json.dump(data, handle, indent=1, sort_keys=True, default=str)
            handle.write('\n')
        os.replace(tmp, path)

    def _prepare_run_dir(self) -> None:
        """Clear and recreate the run directory (a prior run's state cannot leak)."""
        if os.path.lexists(self.run_dir):
            if os.path.isdir(self.run_dir) and not os.path.islink(self.run_dir):
                shutil.rmtree(self.run_dir)
            else:
                os.unlink(self.run_dir)
        os.makedirs(self.out_dir, mode=0o750)
        self._write_json(os.path.join(self.run_dir, 'run.json'), {
            'run': self.run_id, 'unit': self.unit, 'item': self.config.number, 'repo': self.config.repo,
            'started_at': format_time(self.started_at), 'brief_version': BRIEF_VERSION, 'pid': os.getpid(),
            'runner_version': self.config.runner_version, 'host': self.config.host, 'master': self.config.master})

    def _start_record(self, started: bool, cause: str = '', reason: str = '', exit_code: Optional[int] = None) -> None:
        """``start.json`` for this invocation: did the run start (its start marker is on the board), or why
        not. Never fatal: the dispatcher falls back to the unit's result when it is missing."""
        try:
            os.makedirs(self.run_dir, mode=0o750, exist_ok=True)
            self._write_json(os.path.join(self.run_dir, START_FILE), {
                'invocation_id': self.environ.get('INVOCATION_ID', ''), 'run': self.run_id, 'unit': self.unit,
                'started': bool(started), 'cause': cause, 'reason': reason[:1000], 'exit_code': exit_code,
                'at': format_time(self.clock()), 'host': self.config.host, 'master': self.config.master})
        except OSError as exc:
            self.log('WARNING: the start record %s was not written: %s' % (START_FILE, exc))

    def _pull_details(self, item) -> None:
        """The review and checks of the pull request this run would continue (the board's ``pull_details``; a
        failure leaves them unread, which the brief says, and never costs the brief the item's own text)."""
        details = getattr(self.board, 'pull_details', None)
        if not callable(details):
            return
        try:
            details(item)
        except Exception as exc:  # noqa: BLE001 - the brief says the review was not read
            self.log('WARNING: the review of the pull request could not be read for the brief: %s' % exc)

    def _brief(self, mentions) -> str:
        found = None
        pull = pull_section(None, self.config.branch)
        try:
            item = self.board.get(self.ref)
            title, body = item.title, item.body
            found = provenance(item)
            self._pull_details(item)
            markers, reopen_at = markers_of(item), last_reopen(item)
            counted = markers if reopen_at is None else [m for m in markers if m.at is not None and m.at >= reopen_at]
            loop = pull_plan(item, markers, counted=counted, repo=self.config.repo,   # the rounds as eligibility counts them
                             max_rounds=rounds_from_env(self.environ))   # and the cap the dispatcher held it to
            self.pull = loop.pull   # the open pull request this run continues (_core.dispatch.pr_loop), for the close-out
            pull = pull_section(loop.pull, self.config.branch, rounds=loop.rounds, max_rounds=loop.max_rounds,
                                marker_authors=item.marker_authors or (), trust_members=item.trust_members is True)
        except Exception as exc:  # noqa: BLE001 - the brief says so; the run proceeds
            self.log('WARNING: the item could not be read for the brief: %s' % exc)
            title, body = '(unreadable)', '(the item could not be read when this run started: %s)' % exc
        self.skipped_reviews = pull.pop('skipped')
        if found and found.get('untrusted_edit'):
            self.log('WARNING: the item\'s text was edited after review by %s, who may not write to the repository; '
                     'the brief says so' % (found.get('editor') or 'an unknown account'))
        ref = ('%s#%d' % (self.config.repo, self.config.number)) if self.config.repo else '#%d' % self.config.number
        return render({'unit': self.unit, 'host': self.config.host, 'master': self.config.master, 'item_ref': ref,
                       'provenance': found, 'item_title': title, 'item_body': body, 'mentions': mentions,
                       'workdir': self.config.workdir or os.getcwd(), 'branch': self.config.branch, 'output_dir': self.out_dir,
                       **pull})
