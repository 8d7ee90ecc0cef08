# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet-runner session --session ID``: the program of a ``chain-*`` unit.

The parent's brief as the agent's first message, then the agent's ``handoff.json`` validated and
recorded with the close, in one transaction. The runner never writes a brief of its own (D17). A
session that carries an item on posts its close-out (and any handoff marker) on that item.

The rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import signal

from ..._core.outcome.agent_env import agent_environment
from ..._core.outcome.capture import read_capture
from ..._core.outcome.profiles import DEFAULT_PROFILE, agent_argv, brief_in_argv, profile as agent_profile
from ..._core.outcome.closeout import Decision, decide as closeout_decide
from ..._core.board.markers import format_marker
from ..._core.chains.chain import HANDOFF_FILE, session_unit
from ..._core.board.model import CLOCK_SKEW_WARN, format_time, skew_text
from ..._store.sessions import LedgerUnreachable, SessionError, SessionStore
from ..config import DEFAULT_CONFIG
from ..spawn import DEFAULT_AGENT_CREDENTIALS, KILL_GRACE, PopenSpawner, confined_argv, read_agent_credentials, stop_group
from .config import EXIT_CLOSE_LOST, EXIT_FAILURE, EXIT_LEDGER_UNREACHABLE, EXIT_OK, EXIT_USAGE, expand, log_line, parser, session_id, start, utcnow
from .items import handoff_fields, handoff_marker, ledger_secrets, read_handoff

CHAIN_BRIEF_VERSION = '2026.12.01.1'
CHAIN_BRIEF = u"""\
fleet.dispatch chain brief {{version}} -- session {{session}} (hop {{depth}}) on {{host}} ({{master}})

You are one session of a chain. The session before you ({{parent}}, on {{parent_host}}) closed and
left you this brief. Nobody watches this session and nobody remembers the conversation that
produced it: everything you have is below.

What was asked:
{{asked}}

What counts as done:
{{done_when}}

Where to start:
{{start_at}}

How to verify:
{{verify}}

If the work turns out to have landed already:
{{if_landed}}

Your working directory is a fresh git worktree detached at origin/{{branch}}: {{workdir}}
The files in {{output_dir}} were cleared when this session started.

If the work needs another session after yours, hand off: write {{output_dir}}/""" + HANDOFF_FILE + u""" as
{"successor": "<topic>" | "any-<topic>" | "<topic>@<host>",
 "brief": {"asked": "...", "done_when": "...", "start_at": "...", "verify": "...", "if_landed": "..."}}
<topic> continues on this host, any-<topic> goes to the first machine with room. All five brief
fields are required and are the successor's whole knowledge. No file: the chain ends with you.
"""


def render_brief(values):
    """The chain brief in one pass (values are never re-scanned); KeyError for a missing value."""
    import re
    data = dict(values, version=CHAIN_BRIEF_VERSION)
    return re.sub(r'\{\{([a-z_]+)\}\}', lambda m: str(data[m.group(1)]), CHAIN_BRIEF)


# --- the successor session --------------------------------------------------------------------------

class SessionRun(object):
    """The program of a ``chain-*`` unit: brief → agent → validated handoff → close (one transaction)."""

    def __init__(self, conf, ident, store_factory, host, master, spawner=None, clock=None, log=None, environ=None,
                 board=None, workdir=None):
        self.board_factory = board
        # the wrapper runs Python from / and names the unit's working directory; a direct call keeps its own
        self.workdir = os.path.abspath(workdir) if workdir else os.getcwd()    # zero-argument: the item's board, for a session that carries an item on
        self.row = None
        self.started_at = None
        self.conf = conf
        self.ident = ident
        self.store_factory = store_factory
        self.host = host
        self.master = master
        self.spawner = spawner
        self.clock = clock or utcnow
        self._log = log or log_line
        self.environ = dict(os.environ if environ is None else environ)
        self.unit = session_unit(ident)
        self.run_dir = os.path.join(conf['state_dir'], 'runs', self.unit)
        self.out_dir = os.path.join(self.run_dir, 'out')
        self.brief_path = os.path.join(self.run_dir, 'brief.md')
        self.capture_path = os.path.join(self.run_dir, 'capture.log')
        self.proc = None
        self.stopped = None

    def log(self, message):
        self._log('fleet-runner session[%s]: %s' % (self.ident, message))

    def _agent(self):
        conf = self.conf
        name = agent_profile(conf.get('agent') or DEFAULT_PROFILE).name
        if name == DEFAULT_PROFILE:
            agent = list(conf.get('agent_command') or ['claude', '-p', '--output-format', 'json'])
        else:
            given = [str(a) for a in (conf.get('agent_args') or [])]
            agent = agent_argv(name, given=given) + given
        return agent

    def _on_signal(self, signum, _frame):
        self.stopped = signum
        stop_group(self.proc, float(self.conf.get('kill_grace', KILL_GRACE)))

    def run(self):
        import shutil
        refused = brief_in_argv(self._agent())
        if refused:
            self.log('ERROR: %s; the agent is NOT started' % refused)
            return EXIT_USAGE
        try:   # the agent's own credentials: as the item runner reads them, before anything is spent
            credentials = read_agent_credentials(expand(self.conf.get('agent_credentials') or DEFAULT_AGENT_CREDENTIALS))
        except (OSError, ValueError) as exc:
            self.log('ERROR: %s; the agent is NOT started' % exc)
            return EXIT_USAGE
        try:
            with self.store_factory() as store:
                row = store.get(self.ident)
                parent = store.get(row['parent']) if row and row.get('parent') else None
        except LedgerUnreachable as exc:
            self.log('ERROR: the ledger is unreachable, the agent is NOT started: %s' % exc)
            return EXIT_LEDGER_UNREACHABLE
        if row is None or parent is None or not parent.get('brief'):
            self.log('ERROR: no session %s with a parent brief in the ledger; the agent is NOT started' % self.ident)
            return EXIT_USAGE
        self.row, self.started_at = row, self.clock()
        if os.path.isdir(self.run_dir):
            shutil.rmtree(self.run_dir)
        os.makedirs(self.out_dir, mode=0o750)
        values = dict(parent['brief'])
        values.update(session=self.ident, depth=row['depth'], host=self.host, master=self.master, parent=parent['id'],
                      parent_host=parent['host'], branch=(self.conf.get('chain') or {}).get('branch') or 'main',
                      workdir=self.workdir, output_dir=self.out_dir)
        brief = render_brief(values)
        with open(self.brief_path, 'w', encoding='utf-8') as handle:
            handle.write(brief)
        argv, uses = [], False
        for part in self._agent():
            if part == '{brief_file}':
                argv.append(self.brief_path)
                uses = True
            else:
                argv.append(part)
        # the ledger's and the board's secrets stay with the runner (_core.outcome.agent_env)
        env = agent_environment(self.environ, secrets=ledger_secrets(self.environ),
                                agent_env=dict((str(k), str(v)) for k, v in (self.conf.get('agent_env') or {}).items()),
                                credentials=credentials)
        env.update({'FLEET_SESSION': self.ident, 'FLEET_UNIT': self.unit, 'FLEET_RUN_DIR': self.run_dir,
                    'FLEET_OUTPUT_DIR': self.out_dir, 'FLEET_BRIEF_FILE': self.brief_path,
                    'FLEET_BRIEF_VERSION': CHAIN_BRIEF_VERSION})
        old = dict((s, signal.signal(s, self._on_signal)) for s in (signal.SIGTERM, signal.SIGINT))
        try:
            self.log('starting the agent: %s (chain brief %s)' % (argv[0], CHAIN_BRIEF_VERSION))
            try:
                spawner = self.spawner or PopenSpawner()
                argv = confined_argv(self.conf.get('agent_sandbox'), argv, path=env.get('PATH'), state_dir=self.conf['state_dir'],
                                     config_dir=os.path.dirname(os.path.expanduser(DEFAULT_CONFIG)), out_dir=self.out_dir,
                                     brief_path=self.brief_path, workdir=self.workdir)
                self.proc = spawner.spawn(argv, stdin_path=None if uses else self.brief_path, capture_path=self.capture_path,
                                          env=env, cwd=self.workdir)
                rc = self.proc.wait()
            except (OSError, ValueError) as exc:
                rc = None
                self.log('ERROR: the agent could not be started: %s' % exc)
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        return self._close(rc)

    def _close(self, rc):
        handoff, reason = None, 'agent exit %s' % rc
        if self.stopped is not None:
            reason = 'stopped by %s from outside; nothing chained' % signal.Signals(self.stopped).name
        else:
            handoff, problem = read_handoff(self.out_dir, (self.conf.get('chain') or {}).get('dispatch_by_default'))
            if problem:
                reason = problem
                self.log('ERROR: %s' % problem)
        try:
            with self.store_factory() as store:
                store.close(self.ident, handoff, reason=reason)
        except (LedgerUnreachable, SessionError) as exc:
            self.log('ERROR: THE SESSION CLOSE WAS NOT WRITTEN (handoff %s): %s' % (
                json.dumps(handoff) if handoff else 'none', exc))
            return EXIT_CLOSE_LOST
        self.log('closed (%s)%s' % (reason, '; handed off to %s' % handoff['successor'] if handoff else '; the chain ends here'))
        code = EXIT_OK if rc == 0 and self.stopped is None else EXIT_FAILURE
        if self.row is not None and self.row.get('item') is not None:
            if not self._item_markers(rc, handoff, reason) and code == EXIT_OK:
                code = EXIT_CLOSE_LOST
        return code

    # -- the item this chain carries on (the successor posts its own markers on it) ---------
    def _post(self, board, number, kind, body, close=False):
        """Post one marker (then the close), retried once; True when it landed."""
        for attempt in (1, 2):
            try:
                board.post_marker(number, body, close=close)
                return True
            except Exception as exc:  # noqa: BLE001 - every board failure is retried once, then reported
                self.log('posting the %s marker on item %s failed (attempt %d of 2): %s: %s'
                         % (kind, number, attempt, type(exc).__name__, exc))
        return False

    def _board_offset(self, board):
        """The board's clock minus this worker's, so the session's start and end are dated as the board
        dates its merges (D16: a lagging worker would credit a merge from before the session). A board
        whose clock cannot be read gives None: the session is shown on the worker's clock, and no merge is
        credited to it (``closeout_decide`` with no start leaves a closing merge open for a human)."""
        try:
            offset = board.board_time() - self.clock()
        except Exception as exc:  # noqa: BLE001 - the item read-back says whether the board is there at all
            self.log('WARNING: the board\'s clock could not be read (%s: %s): the session is shown on this worker\'s '
                     'clock and no merge is credited to it' % (type(exc).__name__, exc))
            return None
        if abs(offset.total_seconds()) > CLOCK_SKEW_WARN:
            self.log('WARNING: %s' % skew_text('this worker', -offset.total_seconds(), 'the board'))
        return offset

    def _item_markers(self, rc, handoff, reason):
        """The session's close-out on its item (``_core.outcome.closeout.decide``, as an item run's) and, when it
        handed off again, the handoff marker. No ``start`` marker: a chain session is no ``task-*`` run,
        spends no attempt and is not the reaper's (docs/chains.md). True when every marker landed."""
        number = self.row['item']
        if self.board_factory is None:
            self.log('ERROR: session %s carries item %s on but this master has no board configured: no marker posted'
                     % (self.ident, number))
            return False
        board = None
        try:
            board = self.board_factory()
            offset = self._board_offset(board)
            dated = offset is not None    # the session's start on the board's clock; else nothing is credited
            offset = offset if dated else _dt.timedelta(0)
            started_at = self.started_at + offset
            fields = {'session': self.ident, 'unit': self.unit, 'host': self.host, 'master': self.master,
                      'hop': self.row.get('depth'), 'started_at': format_time(started_at),
                      'brief_version': CHAIN_BRIEF_VERSION}
            now = self.clock() + offset
            if self.stopped is not None:
                name = signal.Signals(self.stopped).name
                decision = Decision('stopped', 'chain session stopped by %s from outside; this says nothing about the work'
                                    % name, {'signal': name})
            else:
                try:
                    with open(self.capture_path, encoding='utf-8', errors='replace') as handle:
                        capture = handle.read()
                except OSError:
                    capture = ''
                name = agent_profile(self.conf.get('agent') or DEFAULT_PROFILE).name
                outcome = read_capture(capture, name, exit_code=rc, now=now).outcome(rc)
                try:
                    item = board.get(number)
                except Exception as exc:  # noqa: BLE001 - decide credits nothing without the item
                    self.log('WARNING: item %s could not be read back: %s' % (number, exc))
                    item = None
                decision = closeout_decide(outcome, item, number=number, started_at=started_at if dated else None,
                                           now=now, exit_code=rc, capture=capture, unit=self.unit)
            fields.update(decision.fields, ended_at=format_time(self.clock() + offset), chain_reason=reason)
            if handoff is not None:
                fields['handoff'] = handoff_fields(self.ident, handoff)
            if not self._post(board, number, decision.kind, format_marker(decision.kind, fields, decision.text),
                              close=decision.close):
                self.log('ERROR: THE CLOSE-OUT OF SESSION %s WAS NOT POSTED on item %s' % (self.ident, number))
                return False
            self.log('close-out posted on item %s: %s' % (number, decision.kind))
            if handoff is not None and not decision.close:
                if not self._post(board, number, 'handoff', handoff_marker(fields, self.ident, handoff)):
                    self.log('ERROR: THE HANDOFF MARKER WAS NOT POSTED on item %s: the sweep may dispatch it while '
                             'the chain runs' % number)
                    return False
            return True
        except Exception as exc:  # noqa: BLE001 - the ledger close stands; the board part is reported
            self.log('ERROR: the markers of session %s on item %s were not posted: %s: %s'
                     % (self.ident, number, type(exc).__name__, exc))
            return False
        finally:
            if board is not None and hasattr(board, 'close'):
                try:
                    board.close()
                except Exception:  # noqa: BLE001 - closing a connection at exit cannot change the outcome
                    pass


def main(words, environ=None, *, clock=None, spawner=None, board=None) -> int:
    """``fleet-runner session --session ID``. ``board(conf, environ)``: opens the board a session that
    carries an item on posts to (the runner's own opener, ``config.open_runner_board``)."""
    environ = os.environ if environ is None else environ
    p = parser('session')
    p.add_argument('--session', default=None, help='the session id (default $FLEET_SESSION)')
    p.add_argument('--workdir', default=None, help='the agent\'s working directory (the wrapper passes the one it was started in)')
    args = p.parse_args(words)
    started = start('session', args, environ)
    if started is None:
        return EXIT_USAGE
    conf, host, master = started
    ledger = conf['ledger']
    ident = session_id('session', args, environ)
    if not ident:
        return EXIT_USAGE
    opener = (lambda: board(conf, environ)) if board is not None else None
    return SessionRun(conf, ident, lambda: SessionStore(**ledger), host, master, spawner=spawner, clock=clock,
                      environ=environ, board=opener, workdir=args.workdir).run()
