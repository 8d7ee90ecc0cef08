# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run program: what a ``task-<item>`` unit executes -- it IS the run.

``fleet-runner --item N`` (``cli.py`` reads the command line; the worker role installs a
``fleet-runner`` wrapper that starts ``ansible_collections.fleet.dispatch.plugins.module_utils._runner``
isolated from ``/``, the workspace given as ``--workdir``: ``boot.py``).
It imports the same board adapters and decisions as the modules -- one implementation, two
callers. The close-out decision is ``_core.outcome.closeout.decide``, the self-update
``update.self_update``. ``Run`` holds the start path; its other concerns are mixins beside it:
``signals``, ``posting`` (board writes, the close-out spool), ``workspace`` (run directory, brief),
``capacity``, ``supervise`` (the agent process and its budget) and ``closeout``.

The rules in full, with their reasons: ``docs/internals.md``, section "The run".
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .._board.protocol import BoardUnreadable
from .._core.board.markers import format_marker
from .._core.board.model import format_time, parse_time
from .._core.board.naming import unit_name
from .._core.dispatch.agent_sandbox import MODES as AGENT_SANDBOX_MODES
from .._core.dispatch.eligibility import live_start
from .._core.dispatch.item_budget import from_env as item_budget_from_env, tighter
from .._core.dispatch.route import GENERIC_ENV, PROFILE_ENV, ROUTE_ENV, run_profile
from .._core.outcome.account_budget import ACCOUNT_ENV
from .._core.outcome.budget import Budget, enforceable, parse_budget
from .._core.outcome.capacity import clears_after_agent_found, clears_after_update
from .._core.outcome.closeout import Decision, agent_missing
from .._core.outcome.exits import EXIT_RUNNING_ELSEWHERE, EXIT_START_LOST, EXIT_UPDATE_FAILED, EXIT_USAGE
from .._core.outcome.profiles import DEFAULT_PROFILE, agent_argv, brief_in_argv, profile as agent_profile, route_argv
from .._core.outcome.retry import DEFAULT_BACKOFF
from .._host.files import CAPACITY_FILE, read_capacity_file
from .brief import BRIEF_VERSION
from .capacity import CapacityMixin, note_update_outcome
from .chain.items import ItemSession, item_chain_config
from .classify import local_zone
from .closeout import CloseoutMixin
from .config import (DEFAULT_BOARD_SPEC, DEFAULT_CONFIG, DEFAULT_STATE_DIR, Parser, board_spec, expand, open_runner_board,
                     runner_conf, user)
from .posting import PostingMixin
from .signals import Signalled, SignalsMixin, default_reraise
from .spawn import DEFAULT_AGENT_CREDENTIALS, KILL_GRACE, PopenSpawner, missing_agent, missing_agent_message, note_agent, stop_group  # noqa: F401
from .supervise import AgentMixin, budget_note
from .update import EXPECTED_VERSION_ENV, REEXEC_ENV, STARTED_ENV, UpdateFailed, code_root, installed_version, self_update
from .workspace import WorkspaceMixin

DEFAULT_AGENT = ['claude', '-p', '--output-format', 'json']


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


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


class Run(SignalsMixin, PostingMixin, WorkspaceMixin, CapacityMixin, AgentMixin, CloseoutMixin):
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
        self.reraise = reraise or default_reraise
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

    # -- the whole run --------------------------------------------------------------------------
    def run(self) -> int:
        """Run once; returns the exit code. A stop signal is re-raised after the close-out instead (D12)."""
        self._install()
        code, stop = None, None
        try:
            code = self._run()
        except Signalled as sig:
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
        refusal = self._closeout_unwritable()
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
        except Signalled:
            raise
        except Exception as exc:  # noqa: BLE001 - a runner error after the start still earns a close-out
            self.log('ERROR: the run broke after its start: %s: %s' % (type(exc).__name__, exc))
            if self.proc is not None and self.proc.poll() is None:
                stop_group(self.proc, self.config.kill_grace, self.log)
            return self._closeout(Decision('failure', 'run failed: the runner itself broke (%s)' % type(exc).__name__,
                                           {'cause': 'runner_error', 'error': str(exc)[:300]}))
        return self._finish(rc, timed_out)


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
    p.add_argument('--branch', default=None, help='the branch the brief names (default main)')
    p.add_argument('--pin', default=None, help='the commit or tag the self-update follows (never a branch head)')
    p.add_argument('--no-self-update', action='store_true', help='skip the self-update')
    p.add_argument('--version', action='store_true', help='print the installed version as JSON and exit')
    p.add_argument('--installed', action='store_true',
                   help='the installer verified this runner: delete an update_failed capacity state, print JSON and exit')
    return p


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
        provisioned = agent_profile(conf.get('agent') or DEFAULT_PROFILE).name
        # the profile the dispatcher placed this run for: its worker may offer several (_core.dispatch.route)
        chosen, wrong_agent = run_profile(provisioned, conf.get('agents'), environ.get(PROFILE_ENV, ''))
        if wrong_agent:
            _log_line('fleet-runner[item %d]: %s; nothing posted' % (args.item, wrong_agent))
            return EXIT_USAGE
        agent_name = agent_profile(chosen).name
        budget = parse_budget(conf.get('budget'))
        item_share = item_budget_from_env(environ)
        if args.agent_command:
            agent = json.loads(args.agent_command)
        elif agent_name == DEFAULT_PROFILE:
            agent = conf.get('agent_command', list(DEFAULT_AGENT))
        # a further profile has its own environment; the provisioned one's arguments are its own
        own = agent_name == provisioned
        agent_env = dict((str(k), str(v)) for k, v in
                         ((conf.get('agent_env') if own else (conf.get('agent_envs') or {}).get(agent_name)) or {}).items())
        route_refused = []
        if not args.agent_command and agent_name != DEFAULT_PROFILE:
            # with a budget, the profile's streaming argv (claude: stream-json), so usage is read as it streams
            given = [str(a) for a in (conf.get('agent_args') or [])] if own else []
            agent = agent_argv(agent_name, streaming=bool(budget) or item_share is not None, given=given)
            # the item's model and effort as its CLI's own arguments (the launch set them as AGENT_MODEL/AGENT_EFFORT)
            agent, route_refused = route_argv(agent_name, agent, item_route(environ, agent_env, agent_name), given)
            agent += given
        if not isinstance(agent, list) or not agent or not all(isinstance(a, str) for a in agent):
            raise ValueError('agent_command must be a non-empty JSON list of strings, got %r' % (agent,))
        if brief_in_argv(agent):
            raise ValueError(brief_in_argv(agent))
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
    pin = str(args.pin or conf.get('pin') or '').strip()
    if code_dir and not args.no_self_update and not conf.get('no_self_update'):
        try:
            update = self_update(expand(code_dir), pin, runner=git_runner, expected_version=environ.get(EXPECTED_VERSION_ENV),
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
        host=socket.gethostname(), master=user(), backoff=backoff,
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
