# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run program: what a ``task-<item>`` unit executes -- it IS the run.

``fleet-runner --item N`` (``cli.py`` reads the command line; the worker role installs a
``fleet-runner`` wrapper that starts ``ansible_collections.fleet.dispatch.plugins.module_utils._runner``
isolated from ``/``, the workspace given as ``--workdir``: ``boot.py``).
It imports the same board adapters and decisions as the modules -- one implementation, two
callers. The close-out decision is ``_core.outcome.closeout.decide``, the self-update
``update.self_update``.

The rules in full, with their reasons: ``docs/internals.md``, section "The run".
"""

from __future__ import annotations

import codecs
import datetime as _dt
import json
import os
import shutil
import signal
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .._board.protocol import BoardError, BoardUnreadable
from .._core.outcome.agent_env import BOARD_SECRET_ENV, agent_environment
from .._core.outcome.capture import read_capture
from .._core.outcome.envelope import ENVELOPE_TYPE
from .._core.outcome.profiles import DEFAULT_PROFILE, agent_argv, profile as agent_profile, route_argv
from .._core.outcome.usage import UsageMeter
from .._core.outcome.budget import Budget, describe as describe_budget, enforceable, parse_budget, reached, stop_for
from .._core.outcome.capacity import (board_unreachable_state, clears_after_agent_found, clears_after_clean_run, clears_after_start,
                                      clears_after_update, update_failed_state)
from .._core.outcome.closeout import Decision, agent_missing, decide
# the exit codes (one table, _core.outcome.exits): the unit's ExecMainStatus
from .._core.outcome.exits import (EXIT_CLOSEOUT_LOST, EXIT_RUNNING_ELSEWHERE, EXIT_START_LOST, EXIT_UPDATE_FAILED,  # noqa: F401
                                   EXIT_USAGE)
from .._core.dispatch.agent_sandbox import MODES as AGENT_SANDBOX_MODES
from .._core.dispatch.eligibility import last_reopen, live_start
from .._core.dispatch.item_budget import from_env as item_budget_from_env, tighter
from .._core.dispatch.pr_loop import plan as pull_plan, round_fields, round_text
from .._core.outcome.account_budget import ACCOUNT_ENV
from .._core.dispatch.route import GENERIC_ENV, ROUTE_ENV
from .._core.board.markers import format_marker, markers_of, parse_marker
from .._core.board.mentions import provenance
from .._core.board.model import CLOCK_SKEW_WARN, format_time, parse_time, skew_text
from .._core.board.naming import unit_name
from .._core.outcome.retry import DEFAULT_BACKOFF
from .._store.sql import dsn_passwords
from .._host.files import CAPACITY_FILE, START_FILE, read_capacity_file, write_capacity_file
from .._host import spool
from .._host.stops import take_stop_note
# PopenSpawner: main()'s default, and the tests'
from .spawn import (DEFAULT_AGENT_CREDENTIALS, KILL_GRACE, PopenSpawner, confined_argv, find_agent, missing_agent, missing_agent_message,  # noqa: F401
                    note_agent, read_agent_credentials, stop_group, wait_agent)
from .brief import BRIEF_VERSION, render
from .brief_pull import section as pull_section
from .config import (DEFAULT_BOARD_SPEC, DEFAULT_CONFIG, DEFAULT_STATE_DIR, Parser, board_spec, expand, open_runner_board,
                     runner_conf, user)
from .chain.items import ItemSession, item_chain_config, ledger_secrets
from .classify import local_zone
from .update import EXPECTED_VERSION_ENV, REEXEC_ENV, STARTED_ENV, UpdateFailed, code_root, installed_version, self_update

ARGV_BRIEF_MAX = 131072 - 1
"""Linux's MAX_ARG_STRLEN (32 pages of 4 KiB) less the NUL: one argv string longer than this makes
execve fail with E2BIG, so a ``{brief}`` argv-mode brief over it is refused before the start marker."""
DEFAULT_AGENT = ['claude', '-p', '--output-format', 'json']
CLOSEOUT_RETRY_DELAYS = (10, 30, 60, 120, 300)
"""Seconds between the spooled close-out's further tries while the unit stays live (after the two
immediate ones): 520 s in all (guess: covers a database restart or a short GitHub outage; the
experiment is the length of board outages seen by the fleet's runners). What outlasts them is
delivered by the master's next run."""
# The run's start record (D20 "launched is not started"): ``<run dir>/start.json``, written
# once per invocation -- after the start marker reached the board, or when the run could not start --
# and read (``_host/files.py`` ``read_start_record``) by fleet.dispatch.start_info (docs/dispatch.md).


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class _Signalled(BaseException):
    """An external SIGTERM/SIGINT arrived (BaseException: no ``except Exception`` may swallow it)."""

    def __init__(self, signum):
        super(_Signalled, self).__init__(signum)
        self.signum = signum


# --- the process spawner (injected): _runner/spawn.py, shared with the chain runner ------------

# --- the run -------------------------------------------------------------------------------------

@dataclass
class RunConfig:
    """What one run needs; ``main`` builds it from argv, the config file and the environment."""

    number: int
    state_dir: str
    agent_command: List[str] = field(default_factory=lambda: list(DEFAULT_AGENT))
    repo: str = ''
    workdir: str = ''
    branch: str = 'main'
    host: str = ''
    master: str = ''
    envelope_type: Optional[str] = ENVELOPE_TYPE
    backoff: tuple = DEFAULT_BACKOFF
    timeout: Optional[float] = None    # seconds; None: no limit here (systemd's RuntimeMaxSec= can bound a unit)
    stall_timeout: Optional[float] = None   # seconds the agent may print nothing new; None: no limit
    kill_grace: float = KILL_GRACE
    agent_env: Dict[str, str] = field(default_factory=dict)
    agent_credentials: str = ''        # the agent's own credentials file (0600); '' or absent: none
    run_id: str = ''
    runner_version: str = ''
    agent: str = DEFAULT_PROFILE       # the agent profile that reads the capture (_core.outcome.profiles)
    tz: Any = None                     # the zone of reset times the agent printed without one
    chain_ledger: Optional[Dict[str, Any]] = None   # the ledger this run's session goes in (None: no chain here)
    chain_dispatch_by_default: bool = False
    budget: Budget = field(default_factory=Budget)   # the run's budget as configured (_core.outcome.budget)
    item_budget: Optional[Budget] = None             # what is left of its item's budget (_core.dispatch.item_budget)
    agent_sandbox: str = 'none'        # the agent's own confinement (_core.dispatch.agent_sandbox.MODES)
    config_dir: str = ''               # the runner's configuration directory, hidden from a confined agent


def _default_reraise(signum):
    """Die of ``signum`` with the default action, so systemd records the signal."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    time.sleep(5)  # the default action of SIGTERM/SIGINT terminates before this returns
    os._exit(128 + signum)


class Run(object):
    """One run of the runner, with everything that touches the world injected.

    ``board``: an open ``Board`` (or a zero-argument factory returning one); ``clock``: returns an
    aware UTC datetime; ``spawner``: ``PopenSpawner``-like; ``reraise(signum)``: what to do with a
    stop signal after the close-out (default: die of it); ``log``: one line to stderr/journal.
    """

    def __init__(self, config: RunConfig, board, *, started_at: Optional[_dt.datetime] = None, clock=None, spawner=None,
                 reraise=None, log=None, install_signals: bool = True, environ=None, sleep=None):
        self.config = config
        self.sleep = sleep or time.sleep
        self._board = board
        # a factory (not an open board) lets a retry reconnect: a long run's idle database
        # connection may be gone by the close-out, and retrying on the dead one cannot succeed
        self._factory = board if callable(board) and not hasattr(board, 'post_marker') else None
        self.clock = clock or _utcnow
        self.started_at = started_at or self.clock()
        # the start as the board dated its start marker (None until posted, or when it gave no time)
        self.board_started_at: Optional[_dt.datetime] = None
        self.spawner = spawner or PopenSpawner()
        self.reraise = reraise or _default_reraise
        self._log = log
        self.install_signals = install_signals
        self.environ = dict(os.environ if environ is None else environ)
        self.unit = unit_name(config.number, config.repo)
        self.run_id = config.run_id or uuid.uuid4().hex
        self.run_dir = os.path.join(config.state_dir, 'runs', self.unit)
        self.out_dir = os.path.join(self.run_dir, 'out')
        self.capture_path = os.path.join(self.run_dir, 'capture.log')
        self.brief_path = os.path.join(self.run_dir, 'brief.md')
        self.skipped_mentions = []  # type: List[Dict[str, Any]]
        self.pull = None            # the open pull request this run continues, read with the brief
        self.skipped_reviews = []   # type: List[Any]
        self.capacity_path = os.path.join(config.state_dir, CAPACITY_FILE)
        self.proc = None
        self.stalled = False
        self.budget = enforceable(tighter(config.budget, config.item_budget), agent_profile(config.agent).states_cost)
        self.budget_stop = None    # set when the agent is stopped at its budget: {'limit', 'budget', 'spend', 'text'}
        self._meter = None
        self._read_at = 0
        self._decoder = None
        self.start_posted = False
        self.closeout_posted = False
        self._critical = 0
        self._pending = None
        self._stopping = False
        self._old_handlers = {}
        self.result = {}
        self.last_error = None     # the exception of the last failed board write (what a start failure was)
        # this run is a session of its own (a chain's first), so it can hand off (_runner/chain/items.py)
        self.session = ItemSession(config.chain_ledger, '%s.%s' % (self.unit, self.run_id), self.unit, config.host,
                                   config.master, config.number, config.chain_dispatch_by_default,
                                   log=self.log) if config.chain_ledger else None

    # -- plumbing -------------------------------------------------------------------------------
    def log(self, message: str) -> None:
        line = 'fleet-runner[%s]: %s' % (self.unit, message)
        if self._log is not None:
            self._log(line)
        else:
            sys.stderr.write(line + '\n')
            sys.stderr.flush()

    @property
    def board(self):
        if callable(self._board) and not hasattr(self._board, 'post_marker'):
            self._board = self._board()
        return self._board

    @property
    def ref(self):
        """How the board names this item: ``owner/repo#N`` on a multi-repo GitHub board, else the number."""
        if self.config.repo and getattr(self.board, 'kind', '') == 'github':
            return '%s#%d' % (self.config.repo, self.config.number)
        return self.config.number

    def _reopen(self) -> None:
        """Before a retry: drop the board and open a fresh one, when it came from a factory."""
        if self._factory is None or self._board is self._factory:
            return
        old, self._board = self._board, self._factory
        try:
            old.close()
        except Exception:  # noqa: BLE001 - the old connection is being dropped because it failed
            pass

    def _fields(self, **more) -> Dict[str, Any]:
        # a close-out names the start as the board dated it, so its duration is on one clock
        fields = {'run': self.run_id, 'unit': self.unit, 'host': self.config.host, 'master': self.config.master,
                  'started_at': format_time(self.board_started_at or self.started_at), 'brief_version': BRIEF_VERSION}
        if self.config.runner_version:
            fields['runner_version'] = self.config.runner_version
        account = str(self.environ.get(ACCOUNT_ENV, '') or '').strip()
        if account:
            fields['account'] = account[:120]   # the agent account the dispatcher placed the run on (its daily budget)
        fields.update(more)
        return fields

    # -- signals --------------------------------------------------------------------------
    def _on_signal(self, signum, _frame):
        if self._pending is None:
            self._pending = signum
        if self._critical or self._stopping:
            return  # recorded; raised when the critical section ends, or already stopping
        self._stopping = True
        raise _Signalled(signum)

    def _install(self):
        if not self.install_signals:
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _restore(self):
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers = {}

    def _enter_critical(self):
        self._critical += 1

    def _leave_critical(self):
        self._critical -= 1
        if not self._critical and self._pending is not None and not self._stopping and not self.closeout_posted:
            self._stopping = True
            raise _Signalled(self._pending)

    # -- board writes with one retry ------------------------------------------------------
    def _landed(self, kind: str) -> Optional[bool]:
        """Did a marker of ``kind`` from this run reach the board? None when the board cannot say."""
        try:
            item = self.board.get(self.ref)
        except Exception:  # noqa: BLE001 - an unreadable board cannot say; the caller retries the write
            return None
        comment = _marker_of(item, self.run_id, kind)
        if comment is not None and kind == 'start':
            self._note_board_start(comment)
        return comment is not None

    def _deliver(self, ref, run: str, kind: str, body: str, close: bool) -> None:
        """Post a marker exactly once: read the item first and post only when no marker of ``run`` and
        ``kind`` is there (a close asked for and not made is made). Raises what the board raised."""
        item = self.board.get(ref)
        if _marker_of(item, run, kind) is None:
            self.board.post_marker(ref, body, close=close)
        elif close and item.state != 'closed':
            self.board.set_state(ref, 'closed')

    def _spool_and_retry(self, kind: str, body: str, close: bool, error: str) -> Optional[str]:
        """D12: the close-out could not be posted. Keep it in the spool, then keep trying while this unit is
        live (the probe sees the item running, so nothing else acts on it); None once it is on the board,
        else the last error, and the spool keeps it for the master's next run (``_flush_spool``)."""
        entry = {'run': self.run_id, 'unit': self.unit, 'item': self.config.number, 'repo': self.config.repo or '',
                 'kind': kind, 'body': body, 'close': bool(close), 'spooled_at': format_time(self.clock())}
        path = None
        try:
            path = spool.write(self.config.state_dir, entry, claimed=True)
            self.log('the close-out is spooled (%s): retried while this unit lives, then delivered by the next '
                     'run of this master' % path)
        except (OSError, ValueError) as exc:
            self.log('ERROR: the close-out could not be spooled either: %s' % exc)
        for delay in CLOSEOUT_RETRY_DELAYS:
            self.sleep(delay)
            self._reopen()
            try:
                self._deliver(self.ref, self.run_id, kind, body, close)
            except Exception as exc:  # noqa: BLE001 - every board failure is retried until the bound, then spooled
                self.last_error = exc
                error = '%s: %s' % (type(exc).__name__, exc)
                self.log('posting the %s marker failed again (after %d s more): %s' % (kind, delay, error))
                continue
            if path is not None:
                spool.delivered(path)
            self.log('the spooled %s marker is posted' % kind)
            return None
        if path is not None:
            try:
                spool.release(path)
            except OSError as exc:
                self.log('ERROR: the spooled close-out %s could not be released for the next run: %s' % (path, exc))
        return error

    def _flush_spool(self) -> None:
        """Deliver the close-outs earlier runs of this master could not post (D12), each exactly once:
        claimed by a rename, posted unless the board already has it, then deleted. Never fatal."""
        entries, problems = spool.pending(self.config.state_dir)
        for text in problems:
            self.log('WARNING: close-out spool: %s' % text)
        for path, entry in entries:
            claimed = spool.claim(path)
            if claimed is None:
                continue    # another deliverer has it
            ref = entry['item']
            if entry.get('repo') and getattr(self.board, 'kind', '') == 'github':
                ref = '%s#%s' % (entry['repo'], entry['item'])
            try:
                self._deliver(ref, entry['run'], entry['kind'], entry['body'], bool(entry['close']))
            except Exception as exc:  # noqa: BLE001 - it stays spooled for the next run
                spool.release(claimed)
                self.log('WARNING: the spooled %s close-out of %s (run %s) is still not posted: %s'
                         % (entry['kind'], entry['unit'], entry['run'], exc))
                continue
            spool.delivered(claimed)
            self.log('delivered the spooled %s close-out of %s (run %s, spooled %s)'
                     % (entry['kind'], entry['unit'], entry['run'], entry['spooled_at']))

    def _note_board_start(self, comment) -> None:
        """Keep the start marker's time as the board recorded it: D16's attribution compares it with
        the forge's merge time, both on the board's clock, so a worker clock that lags or leads
        cannot credit an older merge or miss a newer one."""
        when = getattr(comment, 'created_at', None)
        if isinstance(when, _dt.datetime):
            self.board_started_at = when
            skew = (self.started_at - when).total_seconds()
            if abs(skew) > CLOCK_SKEW_WARN:
                self.log('WARNING: %s (by %+.0f s: the start marker is dated %s by the board, %s here)'
                         % (skew_text('this worker', skew, 'the board'), skew, format_time(when),
                            format_time(self.started_at)))

    def _post(self, kind: str, body: str, close: bool = False) -> Optional[str]:
        """Post ``body`` (then close when asked), retrying once; None when done, else the last error.

        Before the retry the board is read back: when the first attempt's comment landed and only
        the close failed, only the close is retried -- the marker is not doubled.
        """
        error = None
        for attempt in (1, 2):
            try:
                if attempt == 2:
                    self._reopen()
                if attempt == 2 and self._landed(kind):
                    if close:
                        self.board.set_state(self.ref, 'closed')
                    return None
                posted = self.board.post_marker(self.ref, body, close=close)
                if kind == 'start' and isinstance(posted, dict):
                    self._note_board_start(posted.get('comment'))
                return None
            except Exception as exc:  # noqa: BLE001 - every board failure is retried once, then reported
                self.last_error = exc
                error = '%s: %s' % (type(exc).__name__, exc)
                self.log('posting the %s marker failed (attempt %d of 2): %s' % (kind, attempt, error))
        return error

    # -- files ----------------------------------------------------------------------------------
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

    # -- the agent ------------------------------------------------------------------------------
    def _agent_argv(self, brief: str):
        argv, uses = [], False
        for part in self.config.agent_command:
            if part == '{brief_file}':
                argv.append(self.brief_path)
                uses = True
            elif part == '{brief}':
                argv.append(brief)
                uses = True
            else:
                argv.append(part)
        return argv, (None if uses else self.brief_path)

    def _confined(self, argv: List[str]) -> List[str]:
        """``argv`` under the agent's own sandbox (``_core.dispatch.agent_sandbox``): the state and configuration
        directories hidden, the run's output directory writable, its brief readable, the workspace kept."""
        return confined_argv(self.config.agent_sandbox, argv, path=self._agent_env().get('PATH'), state_dir=self.config.state_dir,
                             config_dir=self.config.config_dir, out_dir=self.out_dir, brief_path=self.brief_path,
                             workdir=self.config.workdir)

    def _agent_credentials(self) -> Dict[str, str]:
        """The agent credentials file's ``NAME=value`` lines; ``ValueError`` when it is not a regular file of
        this user's with mode 0600 or stricter (it holds the agent's own key: never group- or world-readable)."""
        return read_agent_credentials(self.config.agent_credentials)

    def _argv_brief_refusal(self) -> str:
        """Why the brief cannot be passed as one argv string (``{brief}``), judged on the item's own text
        before anything is spent: a NUL cannot be in argv, and over ``ARGV_BRIEF_MAX`` execve fails."""
        if '{brief}' not in (self.config.agent_command or []):
            return ''
        text = self._brief([])
        if '\x00' in text:
            return 'item %s holds a NUL character, which an argv-mode agent ({brief}) cannot be given' % self.config.number
        size = len(text.encode('utf-8'))
        if size > ARGV_BRIEF_MAX - 8192:   # 8 KiB left for the mentions, read only after the start
            return ('the brief of item %s is %d bytes: an argv-mode agent ({brief}) takes at most %d in one argument '
                    '(Linux MAX_ARG_STRLEN, less room for mentions); give the agent {brief_file} or stdin instead'
                    % (self.config.number, size, ARGV_BRIEF_MAX - 8192))
        return ''

    def _agent_env(self) -> Dict[str, str]:
        # the board token and the ledger DSN stay with the runner (_core.outcome.agent_env)
        secrets = []
        for name in BOARD_SECRET_ENV:
            if self.environ.get(name):
                secrets.append(self.environ[name])
                secrets.extend(dsn_passwords(self.environ[name]))
        secrets.extend(ledger_secrets(self.environ))   # the chain ledger's DSN too (FLEET_LEDGER_DSN)
        env = agent_environment(self.environ, secrets=secrets, agent_env=self.config.agent_env,
                                credentials=self._agent_credentials())
        env.pop(REEXEC_ENV, None)
        env.update({'FLEET_ITEM': str(self.config.number), 'FLEET_REPO': self.config.repo, 'FLEET_UNIT': self.unit,
                    'FLEET_RUN_ID': self.run_id, 'FLEET_RUN_DIR': self.run_dir, 'FLEET_OUTPUT_DIR': self.out_dir,
                    'FLEET_BRIEF_FILE': self.brief_path, 'FLEET_BRIEF_VERSION': BRIEF_VERSION,
                    'FLEET_RUN_STARTED_AT': format_time(self.started_at)})
        return env

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
            loop = pull_plan(item, markers, counted=counted, repo=self.config.repo)   # the rounds as eligibility counts them
            self.pull = loop.pull   # the open pull request this run continues (_core.dispatch.pr_loop), for the close-out
            pull = pull_section(loop.pull, self.config.branch, rounds=loop.rounds, max_rounds=loop.max_rounds,
                                marker_authors=item.marker_authors or ())
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

    def _wait(self):
        """Wait for the agent; ``(rc, timed_out)``; a stall sets ``self.stalled``, a stop at the run's budget
        ``self.budget_stop`` (_runner/spawn.py ``wait_agent``)."""
        watch = None
        if self.budget:
            self._meter, self._read_at = UsageMeter(), 0
            self._decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
            watch = self._over_budget
        rc, why = wait_agent(self.proc, capture_path=self.capture_path, timeout=self.config.timeout,
                             stall_timeout=self.config.stall_timeout, grace=self.config.kill_grace, log=self.log, watch=watch)
        self.stalled = why == 'stall'
        return rc, why == 'timeout'

    def _over_budget(self) -> bool:
        """Read what the agent printed since the last look and check each usage event in it, in order: True (stop
        the agent) at the first that reaches the budget while the agent goes on (``_core.outcome.budget.stop_for``)."""
        try:
            with open(self.capture_path, 'rb') as handle:
                handle.seek(self._read_at)
                data = handle.read()
        except OSError:
            return False
        self._read_at += len(data)
        for event, spend in self._meter.feed(self._decoder.decode(data)):
            limit = stop_for(self.budget, event, spend)
            if limit:
                self.budget_stop = {'limit': limit, 'budget': self.budget.fields(), 'spend': spend.fields(),
                                    'text': describe_budget(self.budget, spend, limit)}
                self.log('%s (%s usage event %d); stopping its process group' % (
                    self.budget_stop['text'], event, spend.events))
                return True
        return False

    def _budget_fields(self, reading) -> Dict[str, Any]:
        """What a close-out records of the budget: the limits, what the agent stated it spent in all (``spend``;
        the run's ``tokens``/``cost_usd`` where its envelope stated none), and ``over_budget`` when a limit was
        reached without a stop (the CLI stated it in its last word). Nothing when the run has no budget."""
        if not self.budget:
            return {}
        spend = reading.spend
        out = {'budget': self.budget.fields(), 'spend': spend.fields() if spend is not None else {}}
        for key, value in out['spend'].items():
            if getattr(reading, key, None) is None:
                out[key] = value
        limit = reached(self.budget, spend) if spend is not None else None
        if limit and self.budget_stop is None:
            out['over_budget'] = limit
        return out

    def _agent_missing(self) -> str:
        """Why the agent cannot start: its executable (or the runtime its ``#!`` asks the PATH for) is not on
        the PATH it is given; '' when it is. A found agent clears an ``agent_missing`` state."""
        argv0 = (self.config.agent_command or [''])[0]
        path = self._agent_env().get('PATH')
        what = missing_agent(argv0, path)
        message = missing_agent_message(argv0, what, path, self.config.host, self.config.master) if what else ''
        if not message and self.config.agent_sandbox == 'bwrap' and find_agent('bwrap', path) is None:
            message = ('the agent sandbox bwrap is not on the run PATH on %s/%s (%s): install bubblewrap (fleet.dispatch.worker '
                       'does with worker_packages_install) or set worker_runner_agent_sandbox: none'
                       % (self.config.host, self.config.master, path or '(no PATH)'))
        note_agent(self.capacity_path, missing=message, now=self.clock(), unit=self.unit, log=self.log)
        return message

    # -- close-out --------------------------------------------------------------------------------
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
                         % (2 + sum(CLOSEOUT_RETRY_DELAYS), error, spool.spool_dir(self.config.state_dir),
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

    # -- the whole run --------------------------------------------------------------------------
    def run(self) -> int:
        """Run once; returns the exit code. A stop signal is re-raised after the close-out instead (D12)."""
        self._install()
        code, stop = None, None
        try:
            code = self._run()
        except _Signalled as sig:
            stop = sig.signum
            try:
                self._stopped(sig.signum)
            except Exception as exc:  # noqa: BLE001 - the signal must still be re-raised below
                self.log('ERROR: the stopped close-out broke: %s: %s' % (type(exc).__name__, exc))
        finally:
            self._restore()
            try:
                if hasattr(self._board, 'close'):
                    self._board.close()
            except Exception:  # noqa: BLE001 - closing a connection at exit cannot change the outcome
                pass
        # A stop (or a signal that arrived during a normal close-out) is re-raised, after the
        # close-out, so the unit's result says "signal" -- honest, never a made-up exit code.
        signum = stop if stop is not None else self._pending
        if signum is not None:
            self.reraise(signum)
            return 128 + signum
        return code

    def _closeout_unwritable(self) -> str:
        """Why this run's markers could not be written, on positive evidence only (D5): the board's token
        preflight (GitHub) says the token may not post comments or close items. A board without a
        preflight, a preflight that fails, or a permission it cannot check: ``''`` (proceed)."""
        try:
            check = getattr(self.board, 'preflight', None)
            result = check() if callable(check) else None
        except Exception:  # noqa: BLE001 - fails open: the start marker's own post is the real test
            return ''
        for op in (result.get('operations') or []) if isinstance(result, dict) else []:
            if isinstance(op, dict) and op.get('operation') == 'post markers and close items' and op.get('ok') is False:
                return 'the board token (%s) cannot post markers or close the item: it needs %s (%s)' % (
                    result.get('name', '?'), op.get('needs', '?'), result.get('fix') or 'see docs/github-tokens.md')
        return ''

    def _running_elsewhere(self) -> str:
        """D4 at the resource: the board already shows a live start of this item (``live_start``) -- a dispatcher
        whose lease was taken over while it stood still launched on its stale probe, after the taker's run
        started -- so this run must not start: that run's words, else ''. An unreadable board says nothing here
        (D5: the start marker's own post is the test). Two runners reading before either posts both start: the
        lease and the probe keep that window to the launch of one dispatcher."""
        try:
            item = self.board.get(self.ref)
        except Exception:  # noqa: BLE001 - fails open: the start marker's post decides
            return ''
        start = live_start(item)
        if start is None:
            return ''
        f = start.fields
        return ('the board shows run %s of this item live (%s on %s/%s, started %s)' % (
            f.get('run') or '?', f.get('unit') or '?', f.get('host') or '?', f.get('master') or '?',
            format_time(start.at) if start.at else f.get('started_at') or '?'))

    def _run(self) -> int:
        """Start marker, run directory, brief, agent, close-out. D19: the mentions are injected into
        the brief and marked read only after the agent was started with it (at-least-once)."""
        refusal = self._closeout_unwritable() or self._argv_brief_refusal()
        if not refusal:
            try:
                self._agent_credentials()
            except (OSError, ValueError) as exc:
                refusal = str(exc)
        if refusal:
            self.log('ERROR: %s; the agent is NOT started and no start marker is posted (no attempt is spent)' % refusal)
            self._start_record(False, 'board_unwritable', refusal, EXIT_START_LOST)
            return EXIT_START_LOST
        missing = self._agent_missing()
        if missing:   # D8: the master is dark (agent_missing), the item untouched
            self.log('ERROR: %s; the agent is NOT started and no start marker is posted (no attempt is spent)' % missing)
            self._start_record(False, 'agent_missing', missing, EXIT_START_LOST)
            return EXIT_START_LOST
        try:   # a sandbox that cannot be built refuses before the start marker, as a configuration error
            self._confined([])
        except ValueError as exc:
            self.log('ERROR: %s; the agent is NOT started and no start marker is posted (no attempt is spent)' % exc)
            self._start_record(False, 'agent_sandbox', str(exc), EXIT_START_LOST)
            return EXIT_START_LOST
        running = self._running_elsewhere()
        if running:
            self.log('ERROR: %s; the agent is NOT started and no start marker is posted (D4: one run per item)' % running)
            self._start_record(False, 'running_elsewhere', running, EXIT_RUNNING_ELSEWHERE)
            return EXIT_RUNNING_ELSEWHERE
        # The start marker before anything that can fail (it is itself retried once).
        self._enter_critical()
        try:
            more = {'budget': self.budget.fields()} if self.budget else {}
            body = format_marker('start', self._fields(**more), 'run started on %s/%s' % (self.config.host, self.config.master))
            error = self._post('start', body)
            self.start_posted = error is None
        finally:
            self._leave_critical()
        if error is not None:
            self.log('ERROR: the start marker could not be posted (retried once): %s; the agent is NOT started '
                     '(a run without a start marker is invisible to the reaper)' % error)
            unreachable = isinstance(self.last_error, BoardUnreadable)
            reason = str(self.last_error) if unreachable else 'the start marker could not be posted: %s' % error
            self._start_record(False, 'board_unreachable' if unreachable else 'start_marker_lost', reason, EXIT_START_LOST)
            if unreachable:
                self._note_board(False, reason)
            return EXIT_START_LOST
        try:
            self._prepare_run_dir()
            self._start_record(True)
            if self.session is not None:
                self.session.open(self.started_at)
            self._note_board(True)
            self._flush_spool()
            mentions = []
            try:
                mentions = list(self.board.mentions(self.ref) or [])
                skipped = getattr(self.board, 'skipped_mentions', None)
                self.skipped_mentions = list(skipped(self.ref) or []) if callable(skipped) else []
            except Exception as exc:  # noqa: BLE001 - D19: unread mentions stay unread for the next run
                self.log('WARNING: mentions could not be read (they stay unread for the next run): %s' % exc)
            if self.skipped_mentions:
                self.log('mentions not injected (their authors may not write to the repository): %s'
                         % ', '.join('%s by %s' % (m.get('id'), m.get('author')) for m in self.skipped_mentions))
            brief = self._brief(mentions)
            with open(self.brief_path, 'w', encoding='utf-8') as handle:
                handle.write(brief)
            argv, stdin_path = self._agent_argv(brief)
            argv = self._confined(argv)
            self.log('starting the agent: %s (brief %s, capture %s)' % (argv[0], BRIEF_VERSION, self.capture_path))
            if self.config.budget or self.config.item_budget:
                self.log(budget_note(tighter(self.config.budget, self.config.item_budget), self.budget, self.config.agent))
            if self.config.item_budget:
                self.log('what is left of the item budget: %s (the run stops at the smaller of it and its own budget)'
                         % ', '.join('%s %s' % (k, v) for k, v in sorted(self.config.item_budget.fields().items())))
            try:
                self.proc = self.spawner.spawn(argv, stdin_path=stdin_path, capture_path=self.capture_path,
                                               env=self._agent_env(), cwd=self.config.workdir or None)
            except OSError as exc:   # it vanished since the look above: dark, not an attempt
                if getattr(exc, 'filename', None) != argv[0]:
                    raise
                return self._closeout(agent_missing(missing_agent_message(argv[0], argv[0], self._agent_env().get('PATH')),
                                                    agent=argv[0], now=self.clock(), unit=self.unit))
            ids = [m.get('id') for m in mentions if isinstance(m, dict) and m.get('id') is not None]
            if ids:
                try:  # only now, after injection, are they marked read (at-least-once)
                    self.board.mark_read(ids)
                except Exception as exc:  # noqa: BLE001 - they will be delivered again: at-least-once
                    self.log('WARNING: mentions were injected but not marked read (delivered again next run): %s' % exc)
            rc, timed_out = self._wait()
        except _Signalled:
            raise
        except Exception as exc:  # noqa: BLE001 - a runner error after the start still earns a close-out
            self.log('ERROR: the run broke after its start: %s: %s' % (type(exc).__name__, exc))
            if self.proc is not None and self.proc.poll() is None:
                stop_group(self.proc, self.config.kill_grace, self.log)
            return self._closeout(Decision('failure', 'run failed: the runner itself broke (%s)' % type(exc).__name__,
                                           {'cause': 'runner_error', 'error': str(exc)[:300]}))
        return self._finish(rc, timed_out)

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
                raise _Signalled(self._pending)
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
        rounded = None
        if self.pull is not None:   # a round: name the pull request and whether its head moved
            again = [a for a in (item.artifacts if item is not None else ()) if a.ref == self.pull.ref]
            rounded = round_fields(self.pull, again[0].head_sha if again else None)
        decision = decide(outcome, item, number=self.config.number, repo=self.config.repo,
                          pushed=self.pull.ref if rounded and rounded['head_moved'] is True else '',
                          started_at=self.board_started_at or self.started_at,
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


def _marker_of(item, run: str, kind: str):
    """The comment holding the marker of ``kind`` from ``run`` on ``item``, or None."""
    for comment in item.comments:
        marker = parse_marker(comment.body, at=comment.created_at, comment_id=comment.id)
        if marker is not None and marker.kind == kind and marker.fields.get('run') == run:
            return comment
    return None


# --- the master's capacity file: one reader, one writer --------------------------------------

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


# --- main --------------------------------------------------------------------------------------------

def _parser():
    p = Parser(prog='fleet-runner', description='Run one item as the program of its task-<item> unit.',
               epilog='fleet-runner classify [--agent NAME] FILE|- : print what the runner reads in a '
                      'capture (kind, signature, reset_at, usage, cost) and the close-out it would post, '
                      'as one JSON object (fleet-runner classify --help; docs/classify.md). '
                      'fleet-runner check-board [--credentials FILE] : open and read the board as a run '
                      'would, print one JSON object with the fix when it cannot (exit 1).')
    p.add_argument('--item', type=int, help='the item number')
    p.add_argument('--repo', default=None, help='owner/name on a multi-repo board')
    p.add_argument('--config', default=None, help='runner config JSON (default %s)' % DEFAULT_CONFIG)
    p.add_argument('--board-spec', default=None, help='board spec JSON (default %s); secrets come from the environment' % DEFAULT_BOARD_SPEC)
    p.add_argument('--state-dir', default=None, help='the master\'s state directory (default %s)' % DEFAULT_STATE_DIR)
    p.add_argument('--agent-command', default=None, help='the agent argv as a JSON list (overrides the config)')
    p.add_argument('--workdir', default=None, help='the agent\'s working directory (the wrapper passes the one it was started in)')
    p.add_argument('--timeout', type=float, default=None, help='seconds before the agent is stopped (default: none)')
    p.add_argument('--stall-timeout', type=float, default=None,
                   help='seconds the agent may print nothing new before it is stopped (default: none)')
    p.add_argument('--code-dir', default=None, help='the runner\'s own checkout to self-update')
    p.add_argument('--branch', default=None, help='the branch to self-update from and to brief (default main)')
    p.add_argument('--no-self-update', action='store_true', help='skip the self-update')
    p.add_argument('--version', action='store_true', help='print the installed version as JSON and exit')
    p.add_argument('--installed', action='store_true',
                   help='the installer verified this runner: delete an update_failed capacity state, print JSON and exit')
    return p


def budget_note(configured: Budget, held: Budget, agent: str) -> str:
    """The log line saying how a run's budget is held for its agent profile: a USD limit on a CLI that states no
    cost is not held (budgeted by tokens only), and a profile whose output states usage only at its end is
    checked there, which stops nothing."""
    prof = agent_profile(agent)
    words = ['budget %s' % ', '.join('%s %s' % (k, v) for k, v in sorted(configured.fields().items()))]
    if configured.usd is not None and held.usd is None:
        words.append('the %s CLI states no cost: budgeted by tokens only' % prof.name)
    if prof.usage == 'result':
        words.append('the %s CLI states its usage only in its final result: checked there, after the work' % prof.name)
    elif prof.usage == 'turn':
        words.append('the %s CLI states its usage at each turn it reports: checked there' % prof.name)
    elif prof.usage == 'message':
        words.append('checked at every model response the %s CLI reports' % prof.name)
    return '; '.join(words)


def item_route(environ, agent_env: Dict[str, str], agent: str) -> Dict[str, str]:
    """The item's model and effort for its CLI's arguments: what the launch set (``AGENT_MODEL``, ``AGENT_EFFORT``:
    ``_core.dispatch.route.route_env``), unless the worker's own ``agent_env`` names the model or effort itself -- in
    the profile's own variable (``ROUTE_ENV``: the CLI reads it) or the generic one -- which wins, as it does for
    the environment."""
    native = ROUTE_ENV.get(agent, {})
    out = {}
    for key, generic in GENERIC_ENV.items():
        if native.get(key) and native[key] in agent_env:
            continue
        value = agent_env.get(generic) if generic in agent_env else (environ or {}).get(generic, '')
        if value:
            out[key] = str(value)
    return out


def run_cost(reading) -> Dict[str, Any]:
    """The run's cost as the envelope states it, for the close-out marker: ``turns`` is already
    there; ``tokens`` (input + output, as stated) and ``cost_usd`` only when stated, never invented."""
    out = {}
    if reading.tokens is not None:
        out['tokens'] = reading.tokens
    if reading.cost_usd is not None:
        out['cost_usd'] = reading.cost_usd
    return out


def _log_line(message: str) -> None:
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


def main(argv=None, environ=None, *, clock=None, spawner=None, execv=None, git_runner=None, reraise=None) -> int:
    """The run program (``fleet-runner [--item N ...]``, no subcommand word: ``cli.main`` reads that);
    returns the exit code (the table: ``_core.outcome.exits``). ``argv`` is the whole command line:
    the self-update re-executes it."""
    environ = os.environ if environ is None else environ
    # The start time first (D16). A re-exec carries the original process's start.
    started_at = None
    if environ.get(REEXEC_ENV) == '1':
        try:
            started_at = parse_time(environ.get(STARTED_ENV))
        except ValueError:
            started_at = None
    if started_at is None:
        started_at = (clock or _utcnow)()
    argv = list(sys.argv if argv is None else argv)
    args = _parser().parse_args(argv[1:])
    here = code_root()
    if args.version:
        sys.stdout.write(json.dumps({'version': installed_version(here), 'brief_version': BRIEF_VERSION, 'code_dir': here}) + '\n')
        return 0
    if args.installed:
        # fleet.dispatch.worker calls this after it verified the install: the human remedy of D11's dark state
        try:
            conf = runner_conf(args, environ)
        except (OSError, ValueError) as exc:
            _log_line('fleet-runner: configuration error: %s' % exc)
            return EXIT_USAGE
        state_dir = expand(args.state_dir or conf.get('state_dir') or DEFAULT_STATE_DIR)
        before, _why, _present = read_capacity_file(os.path.join(state_dir, CAPACITY_FILE))
        note_update_outcome(state_dir, failed=None, now=started_at, unit='', log=_log_line)
        # the installed agent is on the run PATH (the wrapper's): an agent_missing state goes too
        agent_argv0 = _installed_agent(conf)
        agent_path = str((conf.get('agent_env') or {}).get('PATH') or environ.get('PATH') or '')
        if agent_argv0 and not missing_agent(agent_argv0, agent_path):
            note_agent(os.path.join(state_dir, CAPACITY_FILE), missing='', now=started_at, log=_log_line)
        after, _why, _present = read_capacity_file(os.path.join(state_dir, CAPACITY_FILE))
        sys.stdout.write(json.dumps({'cleared': (clears_after_update(before) or clears_after_agent_found(before)) and after is None,
                                     'source': (after or {}).get('source')}) + '\n')
        return 0
    if args.item is None or args.item < 1:
        _log_line('fleet-runner: --item N (a positive item number) is required')
        return EXIT_USAGE
    try:
        conf = runner_conf(args, environ)
        spec = board_spec(expand(args.board_spec or conf.get('board_spec') or DEFAULT_BOARD_SPEC), environ)
        agent_name = agent_profile(conf.get('agent') or DEFAULT_PROFILE).name
        budget = parse_budget(conf.get('budget'))
        item_share = item_budget_from_env(environ)
        if args.agent_command:
            agent = json.loads(args.agent_command)
        elif agent_name == DEFAULT_PROFILE:
            agent = conf.get('agent_command', list(DEFAULT_AGENT))
        agent_env = dict((str(k), str(v)) for k, v in (conf.get('agent_env') or {}).items())
        route_refused = []
        if not args.agent_command and agent_name != DEFAULT_PROFILE:
            # with a budget, the profile's streaming argv (claude: stream-json), so usage is read as it streams
            agent = agent_argv(agent_name, streaming=bool(budget) or item_share is not None)
            # the item's model and effort as its CLI's own arguments (the launch set them as AGENT_MODEL/AGENT_EFFORT)
            given = [str(a) for a in (conf.get('agent_args') or [])]
            agent, route_refused = route_argv(agent_name, agent, item_route(environ, agent_env, agent_name), given)
            agent += given
        if not isinstance(agent, list) or not agent or not all(isinstance(a, str) for a in agent):
            raise ValueError('agent_command must be a non-empty JSON list of strings, got %r' % (agent,))
        backoff = tuple(int(x) for x in conf.get('backoff', DEFAULT_BACKOFF))
        agent_sandbox = conf.get('agent_sandbox') or 'none'
        if agent_sandbox not in AGENT_SANDBOX_MODES:
            raise ValueError('agent_sandbox must be one of %s, got %r' % (', '.join(AGENT_SANDBOX_MODES), agent_sandbox))
    except (OSError, ValueError, TypeError) as exc:
        _log_line('fleet-runner: configuration error, nothing posted: %s' % exc)
        return EXIT_USAGE
    for why in route_refused:
        _log_line('fleet-runner[item %d]: %s (it stays in AGENT_MODEL/AGENT_EFFORT only)' % (args.item, why))
    # the wrapper runs Python from / (nothing imported from the workspace) and names the workspace: never os.getcwd()
    workdir = expand(args.workdir or conf.get('workdir') or '')
    if not workdir:
        _log_line('fleet-runner: --workdir DIR (the run\'s workspace) is required; nothing posted')
        return EXIT_USAGE
    branch = args.branch or conf.get('branch') or 'main'
    code_dir = args.code_dir or conf.get('code_dir')
    # the repo: --repo, else the config, else FLEET_REPO (what fleet.dispatch's dispatch role sets on the unit)
    repo = args.repo if args.repo is not None else (conf.get('repo') or environ.get('FLEET_REPO', ''))
    state_dir = expand(args.state_dir or conf.get('state_dir') or DEFAULT_STATE_DIR)
    if code_dir and not args.no_self_update and not conf.get('no_self_update'):
        try:
            update = self_update(expand(code_dir), branch, runner=git_runner, expected_version=environ.get(EXPECTED_VERSION_ENV),
                                 environ=environ, execv=execv, argv=argv, started_at=started_at, log=_log_line)
        except UpdateFailed as exc:
            _log_line('fleet-runner[item %d]: ERROR: self-update did not verify, nothing posted, the run does not start: %s'
                      % (args.item, exc))
            note_update_outcome(state_dir, failed=str(exc), now=(clock or _utcnow)(), unit=_unit_or_number(args.item, repo),
                                log=_log_line)
            return EXIT_UPDATE_FAILED
        if update['status'] == 'updated':  # only reached when an injected execv returned (tests)
            return 0
        note_update_outcome(state_dir, failed=None, now=started_at, unit=_unit_or_number(args.item, repo), log=_log_line)
    version = installed_version(here) or ''
    config = RunConfig(
        number=args.item, repo=repo, state_dir=state_dir, agent_command=agent,
        workdir=workdir, branch=branch,
        host=socket.gethostname(), master=user(), envelope_type=conf.get('envelope_type', ENVELOPE_TYPE), backoff=backoff,
        timeout=(args.timeout if args.timeout is not None else conf.get('timeout')) or None, agent_env=agent_env,
        stall_timeout=(args.stall_timeout if args.stall_timeout is not None else conf.get('stall_timeout')) or None,
        agent_credentials=expand(conf.get('agent_credentials') or DEFAULT_AGENT_CREDENTIALS),
        kill_grace=float(conf.get('kill_grace', KILL_GRACE)), runner_version=version, agent=agent_name,
        tz=conf.get('tz') or local_zone(), budget=budget, item_budget=item_share, agent_sandbox=agent_sandbox,
        config_dir=os.path.dirname(expand(args.config or DEFAULT_CONFIG)))
    config.chain_ledger, chain_conf = item_chain_config(args.config, environ)
    config.chain_dispatch_by_default = bool(chain_conf.get('dispatch_by_default'))
    if chain_conf.get('host'):
        config.host = chain_conf['host']   # the name the chain tick acts under (its successors follow it)
    run = Run(config, lambda: open_runner_board(spec, config.host, config.master), started_at=started_at, clock=clock,
              spawner=spawner, reraise=reraise, environ=environ)
    return run.run()


def _installed_agent(conf) -> str:
    """The executable the runner config's agent runs (``--installed`` looks for it); '' when it cannot say."""
    try:
        name = agent_profile(conf.get('agent') or DEFAULT_PROFILE).name
        command = conf.get('agent_command') if name == DEFAULT_PROFILE else agent_argv(name)
    except ValueError:
        return ''
    return str(command[0]) if isinstance(command, list) and command else ''


def _unit_or_number(number: int, repo: str) -> str:
    try:
        return unit_name(number, repo)
    except ValueError:
        return 'task-%d' % number
