# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seed 003's session chains, the runner part: ``fleet-runner chain``, ``session`` and ``handoff``.

* ``chain`` -- one tick of the chain runner (a user timer runs it): read the ledger once; for each
  closed session with a handoff nobody started, decide (``_core.chains.chain.decide``), claim an ``any-``
  successor through ``_store.handoff``, insert the successor's session row (one master wins it),
  make its worktree (``_host.git.Workspace``) and launch ``chain-<session>`` through the same
  ``_host.systemd.launch`` as every run (D15). A loss is logged ("already claimed by <host>") and
  recorded locally so this runner never asks again. An unreachable ledger launches nothing and
  exits ``EXIT_LEDGER_UNREACHABLE`` (D20: "no work" is exit 0, "could not read" is not).
* ``session --session ID`` -- the program of a ``chain-*`` unit: the parent's brief as the agent's
  first message, then the agent's ``handoff.json`` validated and recorded with the close, in one
  transaction. The runner never writes a brief of its own (D17).
* ``handoff --session ID --file F`` -- close a session with an ``any-`` handoff and stop (the
  seed's laptop: asking and carrying are different jobs).

The rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import signal
import socket
import sys

from .._core.outcome.agent_env import BOARD_SECRET_ENV, agent_environment
from .._core.dispatch.sandbox import properties as sandbox_properties
from .._core.outcome.agents import DEFAULT_PROFILE, agent_argv, profile as agent_profile, read_capture
from .._core.outcome.closeout import Decision, decide as closeout_decide
from .._core.board.markers import format_marker
from .._core.chains.chain import (
    BRIEF_FIELDS, DEFAULT_DEPTH_LIMIT, DEFAULT_MAX_LOAD_PER_CPU, DEFAULT_MIN_MEM_AVAILABLE_KB, HANDOFF_FILE, HandoffInvalid,
    decide, dispatch_by_default, parse_handoff, room, session_unit, successor_kind, successor_session_id,
)
from .._core.board.model import format_time, parse_time
from .._core.board.naming import DISPATCH_TAG, claimed_name
from .._host.cmd import SubprocessRunner
from .._host.files import CAPACITY_FILE, CHAIN_LOSSES, read_capacity_file, read_chain_losses
from .._host.git import Git, GitError, Workspace
from .._host.headroom import measure
from .._host.launcher import sandbox_settings
from .._host.systemd import SystemdError, SystemdUser, launch, notifier_unit
from .._store.handoff import ClaimUnproven, HandoffStore
from .._store.sessions import LedgerUnreachable, SessionError, SessionStore
from .._store.sql import dsn_passwords
from .spawn import DEFAULT_AGENT_CREDENTIALS, KILL_GRACE, PopenSpawner, read_agent_credentials, stop_group
from .words import subcommand_words

SUBCOMMANDS = ('chain', 'session', 'handoff')

EXIT_OK = 0
EXIT_START_FAILED = 1          # a successor was claimed but its worktree or unit did not start (loud line)
EXIT_USAGE = 2                 # bad arguments or configuration
EXIT_CLOSE_LOST = 4            # the session's close (and its handoff) could not be written
EXIT_LEDGER_UNREACHABLE = 8    # the ledger could not be read or written: nothing was launched

DEFAULT_CHAIN_CONFIG = 'chain.json'   # beside the runner config
DEFAULT_RUNNER_CONFIG = '~/.config/fleet-dispatch/runner.json'   # program.DEFAULT_CONFIG (no import: program imports this)
LEDGER_DSN_ENV = ('FLEET_LEDGER_DSN', 'FLEET_BOARD_DSN')

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


def _utcnow():
    return _dt.datetime.now(_dt.timezone.utc)


def _log_line(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


def _expand(path):
    return os.path.abspath(os.path.expanduser(path)) if path else path


def _user():
    try:
        import pwd
        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get('USER', '')


def chain_words(args):
    """``(subcommand, words)`` when the first positional word of ``args`` is one of ``SUBCOMMANDS``
    (the wrapper's ``--config`` and ``--branch`` carried over, ``_runner/words.py``); None otherwise."""
    return subcommand_words(args, SUBCOMMANDS, carry=('--config', '--branch'))


def render_brief(values):
    """The chain brief in one pass (values are never re-scanned); KeyError for a missing value."""
    import re
    data = dict(values, version=CHAIN_BRIEF_VERSION)
    return re.sub(r'\{\{([a-z_]+)\}\}', lambda m: str(data[m.group(1)]), CHAIN_BRIEF)


# --- configuration -------------------------------------------------------------------------------

def _load(path, what, required):
    if not os.path.exists(path):
        if required:
            raise ValueError('%s %s does not exist' % (what, path))
        return {}
    with open(path, encoding='utf-8') as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError('%s %s must hold a JSON object' % (what, path))
    return data


def load_config(args, environ):
    """The runner config (``--config``) with the chain config (``--chain-config``, default ``chain.json``
    beside it) as its ``chain`` key, and the ledger location resolved (secrets from the environment)."""
    path = _expand(args.config or environ.get('FLEET_RUNNER_CONFIG') or DEFAULT_RUNNER_CONFIG)
    conf = _load(path, 'the runner config', bool(args.config))
    chain_path = _expand(args.chain_config or os.path.join(os.path.dirname(path), DEFAULT_CHAIN_CONFIG))
    chain = dict(conf.get('chain') or {})
    chain.update(_load(chain_path, 'the chain config', bool(args.chain_config)))
    ledger = dict(chain.get('ledger') or {})
    if not ledger.get('path') and not ledger.get('dsn'):
        for name in LEDGER_DSN_ENV:
            if environ.get(name):
                ledger['dsn'] = environ[name]
                break
    if not ledger.get('path') and not ledger.get('dsn') and conf.get('board_spec'):
        spec = _load(_expand(conf['board_spec']), 'the board spec', False)
        if spec.get('kind') == 'ledger' and spec.get('path'):
            ledger['path'] = spec['path']
    if ledger.get('path'):
        ledger = {'path': _expand(ledger['path'])}
    elif ledger.get('dsn'):
        ledger = {'dsn': ledger['dsn']}
    else:
        raise ValueError('no ledger for the chain: set "ledger": {"path": ...} in %s, or FLEET_LEDGER_DSN in the '
                         "master's credentials file" % chain_path)
    conf['chain'] = chain
    conf['ledger'] = ledger
    conf['state_dir'] = _expand(args.state_dir or conf.get('state_dir') or '~/.local/state/fleet-dispatch')
    return conf


# --- the local record: losses and the tick log ------------------------------------------------------

class LocalRecord(object):
    """``<state_dir>/chain/``: ``losses.json`` (claims this runner lost: never asked again) and ``tick.log``."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.dir = os.path.join(state_dir, 'chain')
        self.losses_path = os.path.join(state_dir, CHAIN_LOSSES)
        self.log_path = os.path.join(self.dir, 'tick.log')

    def losses(self):
        return read_chain_losses(self.state_dir)

    def lose(self, parent, successor, holder, when):
        data = self.losses()
        data['%s/%s' % (parent, successor)] = {'holder': holder, 'at': when}
        os.makedirs(self.dir, exist_ok=True)
        tmp = '%s.%d.tmp' % (self.losses_path, os.getpid())
        with open(tmp, 'w', encoding='utf-8') as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.losses_path)

    def append(self, line):
        try:
            os.makedirs(self.dir, exist_ok=True)
            with open(self.log_path, 'a', encoding='utf-8') as handle:
                handle.write(line + '\n')
        except OSError:
            pass


# --- the tick ---------------------------------------------------------------------------------------

class Tick(object):
    """One tick of the chain runner on one master, with everything that touches the world injected.

    ``sessions``/``claims``: zero-argument factories of a ``SessionStore``/``HandoffStore``;
    ``sd``: a ``SystemdUser``; ``git``: a ``Git``; ``headroom``: returns ``measure``'s dict.
    """

    def __init__(self, conf, host, master, sessions, claims, sd, git, headroom=None, clock=None, log=None):
        self.conf = conf
        self.chain = conf.get('chain') or {}
        self.host = host
        self.master = master
        self.sessions = sessions
        self.claims = claims
        self.sd = sd
        self.git = git
        self.headroom = headroom or (lambda: measure(warn=lambda _m: None))
        self.clock = clock or _utcnow
        self.record = LocalRecord(conf['state_dir'])
        self._log = log or _log_line
        self.results = []

    def log(self, message):
        # one line per event, whatever the message quotes (psycopg's errors span lines)
        line = 'fleet-runner chain[%s/%s]: %s' % (self.host, self.master, ' '.join(str(message).split()))
        self._log(line)
        self.record.append('%s %s' % (format_time(self.clock()), line))

    def _room(self, now):
        state, _why, _present = read_capacity_file(os.path.join(self.conf['state_dir'], CAPACITY_FILE))
        return room(state, self.headroom(), now, float(self.chain.get('max_load_per_cpu', DEFAULT_MAX_LOAD_PER_CPU)),
                    int(self.chain.get('min_mem_available_kb', DEFAULT_MIN_MEM_AVAILABLE_KB)))

    def run(self):
        """One tick; returns the exit code. Reads the ledger once; every decision is one line."""
        now = self.clock()
        try:
            store = self.sessions()
        except LedgerUnreachable as exc:
            self.log('LEDGER UNREACHABLE, nothing launched (a claim that cannot be proven is not a claim): %s' % exc)
            return EXIT_LEDGER_UNREACHABLE
        try:
            try:
                waiting = store.waiting()
            except LedgerUnreachable as exc:
                self.log('LEDGER UNREADABLE, nothing launched: %s' % exc)
                return EXIT_LEDGER_UNREACHABLE
            if not waiting:
                self.log('no handoff waiting')
                return EXIT_OK
            losses = self.record.losses()
            verdict = self._room(now)
            code = EXIT_OK
            for parent in waiting:
                key = '%s/%s' % (parent['id'], parent['handoff'])
                if key in losses:
                    continue
                try:
                    code = max(code, self._one(store, parent, verdict, now))
                except (LedgerUnreachable, ClaimUnproven) as exc:
                    self.log('LEDGER UNREACHABLE during %s, nothing launched for it: %s' % (key, exc))
                    return EXIT_LEDGER_UNREACHABLE
            return code
        finally:
            store.close_store()

    def _one(self, store, parent, verdict, now):
        successor = parent['handoff']
        key = '%s -> %s' % (parent['id'], successor)
        try:
            action, why = decide(parent, self.host, verdict, int(self.chain.get('depth_limit', DEFAULT_DEPTH_LIMIT)))
        except HandoffInvalid as exc:
            self.log('%s: not a successor name (%s); skipped' % (key, exc))
            return EXIT_OK
        ident = successor_session_id(parent['id'], successor)
        unit = session_unit(ident)
        if action == 'skip':
            self.log('%s: not here: %s' % (key, why))
            self.results.append({'parent': parent['id'], 'action': 'skip', 'why': why})
            return EXIT_OK
        if action == 'refuse':
            inserted, _row = store.start_successor(parent, ident, self.host, self.master, unit, '', now=now,
                                                   state='refused', reason=why)
            self.log('%s: STOPPED: %s' % (key, why) if inserted else '%s: already stopped by another runner' % key)
            self.results.append({'parent': parent['id'], 'action': 'refuse', 'why': why})
            return EXIT_OK
        if action == 'claim':
            with self.claims() as claims:
                found = claims.claim(parent['id'], successor, self.host, now=now)
            if not found['won']:
                self.log('%s: lost: %s' % (key, found['why']))
                self.record.lose(parent['id'], successor, found['holder'], format_time(now))
                self.results.append({'parent': parent['id'], 'action': 'lost', 'holder': found['holder']})
                return EXIT_OK
        _kind, topic, _addr = successor_kind(successor)
        workspace = '%s-%s' % (claimed_name(DISPATCH_TAG + topic, self.host), ident.rsplit('-', 1)[1])
        inserted, row = store.start_successor(parent, ident, self.host, self.master, unit, workspace, now=now)
        if not inserted:
            holder = '%s (master %s)' % (row['host'], row['master'])
            self.log('%s: lost: already claimed by %s; not launching here' % (key, holder))
            self.record.lose(parent['id'], successor, holder, format_time(now))
            self.results.append({'parent': parent['id'], 'action': 'lost', 'holder': holder})
            return EXIT_OK
        self.log('%s: claimed as session %s (%s); starting %s' % (key, ident, why, unit))
        return self._start(store, ident, unit, workspace, now)

    def _start(self, store, ident, unit, workspace, now):
        chain = self.chain
        root = _expand(chain.get('workspaces') or '~/fleet/workspaces')
        clone = _expand(chain.get('clone') or '~/fleet/clones/main')
        path = os.path.join(root, workspace)
        try:
            Workspace(self.git, clone, path, branch=chain.get('branch') or 'main').present()
        except (GitError, OSError) as exc:
            why = 'worktree %s not made: %s' % (path, exc)
            self.log('%s: START FAILED: %s' % (ident, why))
            store.set_state(ident, 'failed', why, now=self.clock())
            return EXIT_START_FAILED
        command = [_expand(c) if c.startswith('~') else c for c in (chain.get('command') or ['fleet-runner'])]
        argv = command + ['session', '--session', ident]
        try:
            # issue 14: a successor is hardened like an item's run (this master's sandbox.json)
            props = sandbox_properties(sandbox_settings(), writable=[path])
            res = launch(self.sd, unit, argv, chain.get('path') or os.environ.get('PATH', '/usr/bin:/bin'),
                         environment_file=chain.get('environment_file') or None,
                         on_failure=notifier_unit(chain.get('notifier') or '', unit), workdir=path,
                         setenv={'FLEET_SESSION': ident}, properties=props)
        except (SystemdError, ValueError) as exc:
            res = {'launched': False, 'reason': 'failed-to-launch', 'stderr': str(exc)}
        if not res['launched']:
            why = 'unit %s not launched (%s): %s' % (unit, res['reason'], res.get('stderr') or '')
            self.log('%s: START FAILED: %s' % (ident, why))
            if res['reason'] != 'live':   # live: it runs already (a second tick): nothing to mark
                store.set_state(ident, 'failed', why, now=self.clock())
            return EXIT_START_FAILED if res['reason'] != 'live' else EXIT_OK
        took = (self.clock() - now).total_seconds()
        self.log('%s: launched %s in %s (invocation %s; tick to active %.3f s)' % (ident, unit, path, res.get('invocation_id'), took))
        self.results.append({'session': ident, 'action': 'launched', 'unit': unit, 'workspace': path, 'seconds': took})
        return EXIT_OK


# --- the handoff file and the handoff marker: one reader, shared by item runs and chain sessions -------

def read_handoff(out_dir, dispatch_default=False):
    """``(handoff, problem)`` from ``<out_dir>/handoff.json``: ``(None, '')`` when there is none, the
    validated handoff (``_core.chains.chain.parse_handoff``, ``chain_dispatch_by_default`` applied) or
    ``(None, why)`` when the file is malformed -- then nothing is chained (the caller says so)."""
    path = os.path.join(out_dir, HANDOFF_FILE)
    if not os.path.exists(path):
        return None, ''
    try:
        with open(path, encoding='utf-8') as handle:
            found = parse_handoff(json.load(handle))
        found['successor'] = dispatch_by_default(found['successor'], bool(dispatch_default))
        return found, ''
    except (OSError, ValueError) as exc:   # HandoffInvalid and JSON errors are ValueErrors
        return None, 'handoff invalid, nothing chained: %s (%s)' % (exc, path)


def handoff_fields(ident, handoff):
    """The close-out's and the handoff marker's word on a handoff: the session, its successor, the
    successor's session id (a pure function of both, so the marker names the row a runner will insert)."""
    return {'session': ident, 'successor': handoff['successor'],
            'successor_session': successor_session_id(ident, handoff['successor'])}


def handoff_marker(fields, ident, handoff):
    """The ``handoff`` marker body: posted on the item after the close-out of a session that handed off
    (seed 003); the item is held (``chained``) while its chain lives, docs/chains.md."""
    more = dict(fields, **handoff_fields(ident, handoff))
    text = ('handed off to %s (session %s): a session chain carries this item on; it is not dispatched while the chain '
            'lives (reopen the item to take it back)' % (handoff['successor'], more['successor_session']))
    return format_marker('handoff', more, text)


def item_chain_config(config_path, environ, log=_log_line):
    """The chain config an item run uses: ``(ledger, chain)`` when ``chain.json`` is beside the runner
    config (``worker_chain_enabled``), else ``(None, {})`` -- a master without a chain records no sessions.
    A chain config that does not load is logged and the run goes on without a session (the board is the
    item's record; the ledger only carries chains)."""
    path = _expand(config_path or environ.get('FLEET_RUNNER_CONFIG') or DEFAULT_RUNNER_CONFIG)
    if not os.path.exists(os.path.join(os.path.dirname(path), DEFAULT_CHAIN_CONFIG)):
        return None, {}
    args = argparse.Namespace(config=path if os.path.exists(path) else None, chain_config=None, state_dir=None)
    try:
        conf = load_config(args, environ)
    except (OSError, ValueError) as exc:
        log('fleet-runner: WARNING: the chain configuration does not load, this run records no session and cannot '
            'hand off: %s' % exc)
        return None, {}
    return conf['ledger'], conf['chain']


def ledger_secrets(environ):
    """The ledger DSNs and their passwords in ``environ``: never in an agent's environment (issue 14)."""
    found = []
    for name in LEDGER_DSN_ENV + tuple(BOARD_SECRET_ENV):
        if environ.get(name):
            found.append(environ[name])
            found.extend(dsn_passwords(environ[name]))
    return found


class ItemSession(object):
    """An item run's session in the ledger (seed 003): parent none, this host and master, the item,
    depth 0. ``open`` after the start marker; ``close`` from the close-out records the session closed
    and the agent's handoff in ONE transaction (``SessionStore.close``). Ledger failures are logged and
    never fail the run: a close that was not written chains nothing, and the close-out says so."""

    def __init__(self, ledger, ident, name, host, master, item, dispatch_default=False, log=_log_line,
                 store_factory=None):
        self.ledger = ledger
        self.ident = ident
        self.name = name
        self.host = host
        self.master = master
        self.item = item
        self.dispatch_default = dispatch_default
        self.log = log
        self.store_factory = store_factory or (lambda: SessionStore(**ledger))
        self.handoff = None     # the recorded handoff, once closed with one
        self.closed = False

    def open(self, now):
        try:
            with self.store_factory() as store:
                store.open(self.ident, self.name, self.host, self.master, item=self.item, now=now)
            self.log('session %s opened in the ledger' % self.ident)
        except (LedgerUnreachable, SessionError) as exc:
            self.log('WARNING: the session %s was not recorded in the ledger (the close-out records it, or says '
                     'why it could not): %s' % (self.ident, exc))

    def close(self, out_dir, kind, now):
        """Close the session (once) after a close-out of ``kind``; the close-out's fields about it."""
        if self.closed:
            return {}
        self.closed = True
        handoff, problem = read_handoff(out_dir, self.dispatch_default)
        fields = {'session': self.ident}
        reason = 'close-out %s' % kind
        if problem:
            self.log('ERROR: %s' % problem)
            fields['handoff_invalid'] = problem[:300]
            reason = problem
        elif handoff is not None and kind in ('success', 'stopped'):
            # success: the item is done (the brief's "if it already landed"); stopped: nothing is known of the work
            why = 'handoff to %s not chained: the close-out is %s' % (handoff['successor'], kind)
            self.log(why)
            fields['handoff_not_chained'] = why
            handoff, reason = None, why
        try:
            with self.store_factory() as store:
                store.close(self.ident, handoff, reason=reason, now=now,
                            create={'name': self.name, 'host': self.host, 'master': self.master, 'item': self.item})
        except (LedgerUnreachable, SessionError) as exc:
            self.log('ERROR: THE SESSION CLOSE WAS NOT WRITTEN%s: %s' % (
                ', nothing chained (handoff %s)' % json.dumps(handoff) if handoff else '', exc))
            if handoff is not None:
                fields['handoff_not_chained'] = 'the ledger did not take the close: %s' % str(exc)[:200]
            return fields
        if handoff is not None:
            self.handoff = handoff
            fields['handoff'] = handoff_fields(self.ident, handoff)
            self.log('session %s closed; handed off to %s' % (self.ident, handoff['successor']))
        return fields

    def marker(self, fields):
        """The handoff marker body, or None when this session did not hand off."""
        return handoff_marker(fields, self.ident, self.handoff) if self.handoff is not None else None


# --- the successor session --------------------------------------------------------------------------

class SessionRun(object):
    """The program of a ``chain-*`` unit: brief → agent → validated handoff → close (one transaction)."""

    def __init__(self, conf, ident, store_factory, host, master, spawner=None, clock=None, log=None, environ=None,
                 board=None):
        self.board_factory = board    # zero-argument: the item's board, for a session that carries an item on
        self.row = None
        self.started_at = None
        self.conf = conf
        self.ident = ident
        self.store_factory = store_factory
        self.host = host
        self.master = master
        self.spawner = spawner
        self.clock = clock or _utcnow
        self._log = log or _log_line
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
            agent = agent_argv(name) + [str(a) for a in (conf.get('agent_args') or [])]
        return agent

    def _on_signal(self, signum, _frame):
        self.stopped = signum
        stop_group(self.proc, float(self.conf.get('kill_grace', KILL_GRACE)))

    def run(self):
        import shutil
        try:   # the agent's own credentials (issue 14): as the item runner reads them, before anything is spent
            credentials = read_agent_credentials(_expand(self.conf.get('agent_credentials') or DEFAULT_AGENT_CREDENTIALS))
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
                      workdir=os.getcwd(), output_dir=self.out_dir)
        brief = render_brief(values)
        with open(self.brief_path, 'w', encoding='utf-8') as handle:
            handle.write(brief)
        argv, uses = [], False
        for part in self._agent():
            if part in ('{brief_file}', '{brief}'):
                argv.append(self.brief_path if part == '{brief_file}' else brief)
                uses = True
            else:
                argv.append(part)
        # issue 14: the ledger's and the board's secrets stay with the runner (_core.outcome.agent_env)
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
                self.proc = spawner.spawn(argv, stdin_path=None if uses else self.brief_path, capture_path=self.capture_path,
                                          env=env, cwd=os.getcwd())
                rc = self.proc.wait()
            except OSError as exc:
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
                store.close(self.ident, handoff, reason=reason, now=self.clock())
        except (LedgerUnreachable, SessionError) as exc:
            self.log('ERROR: THE SESSION CLOSE WAS NOT WRITTEN (handoff %s): %s' % (
                json.dumps(handoff) if handoff else 'none', exc))
            return EXIT_CLOSE_LOST
        self.log('closed (%s)%s' % (reason, '; handed off to %s' % handoff['successor'] if handoff else '; the chain ends here'))
        code = EXIT_OK if rc == 0 and self.stopped is None else 1
        if self.row is not None and self.row.get('item') is not None:
            if not self._item_markers(rc, handoff, reason) and code == EXIT_OK:
                code = EXIT_CLOSE_LOST
        return code

    # -- the item this chain carries on (seed 003: the successor posts its own markers on it) ---------
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

    def _item_markers(self, rc, handoff, reason):
        """The session's close-out on its item (``_core.outcome.closeout.decide``, as an item run's) and, when it
        handed off again, the handoff marker. No ``start`` marker: a chain session is no ``task-*`` run,
        spends no attempt and is not the reaper's (docs/chains.md). True when every marker landed."""
        number = self.row['item']
        if self.board_factory is None:
            self.log('ERROR: session %s carries item %s on but this master has no board configured: no marker posted'
                     % (self.ident, number))
            return False
        fields = {'session': self.ident, 'unit': self.unit, 'host': self.host, 'master': self.master,
                  'hop': self.row.get('depth'), 'started_at': format_time(self.started_at),
                  'brief_version': CHAIN_BRIEF_VERSION}
        board = None
        try:
            board = self.board_factory()
            now = self.clock()
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
                decision = closeout_decide(outcome, item, number=number, started_at=self.started_at, now=now,
                                           exit_code=rc, capture=capture, unit=self.unit)
            fields.update(decision.fields, ended_at=format_time(self.clock()), chain_reason=reason)
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


# --- main -----------------------------------------------------------------------------------------------

def _parser(name):
    p = argparse.ArgumentParser(prog='fleet-runner %s' % name)
    p.add_argument('--config', default=None)
    p.add_argument('--chain-config', default=None, help='the chain config JSON (default chain.json beside --config)')
    p.add_argument('--state-dir', default=None)
    p.add_argument('--branch', default=None)
    p.add_argument('--host', default=None, help='this host\'s name (default: the host name)')
    if name in ('session', 'handoff'):
        p.add_argument('--session', default=None, help='the session id (default $FLEET_SESSION)')
    if name == 'handoff':
        p.add_argument('--file', required=True, help='the handoff JSON (successor + the five brief fields)')
        p.add_argument('--name', default=None, help='the session\'s name when the ledger has no row for it yet')
    if name == 'chain':
        p.add_argument('--json', action='store_true', help='print the tick\'s decisions as JSON on stdout')
    return p


def main(name, words, environ=None, *, clock=None, spawner=None, sd=None, git=None, headroom=None, board=None) -> int:
    """``board(conf, environ)``: opens the board a session that carries an item on posts to (the item
    runner's own opener, ``program.open_runner_board``; program imports this module, not the reverse)."""
    environ = os.environ if environ is None else environ
    args = _parser(name).parse_args(words)
    try:
        conf = load_config(args, environ)
    except (OSError, ValueError) as exc:
        _log_line('fleet-runner %s: configuration error, nothing done: %s' % (name, exc))
        return EXIT_USAGE
    host = args.host or conf['chain'].get('host') or socket.gethostname()
    master = _user()
    ledger = conf['ledger']

    def sessions():
        return SessionStore(**ledger)

    if name == 'chain':
        runner = SubprocessRunner(timeout=120)
        tick = Tick(conf, host, master, sessions, lambda: HandoffStore(**ledger), sd or SystemdUser(runner),
                    git or Git(runner), headroom=headroom, clock=clock)
        code = tick.run()
        if args.json:
            sys.stdout.write(json.dumps({'exit': code, 'results': tick.results}) + '\n')
        return code
    ident = args.session or environ.get('FLEET_SESSION')
    if not ident:
        _log_line('fleet-runner %s: --session ID (or FLEET_SESSION) is required' % name)
        return EXIT_USAGE
    if name == 'session':
        opener = (lambda: board(conf, environ)) if board is not None else None
        return SessionRun(conf, ident, sessions, host, master, spawner=spawner, clock=clock, environ=environ,
                          board=opener).run()
    # handoff: validate, make it a dispatched one, close the session with it, and stop
    try:
        with open(args.file, encoding='utf-8') as handle:
            found = parse_handoff(json.load(handle))
    except (OSError, ValueError) as exc:
        _log_line('fleet-runner handoff: the handoff %s is not valid, nothing written: %s' % (args.file, exc))
        return EXIT_USAGE
    found['successor'] = dispatch_by_default(found['successor'], True)
    try:
        with sessions() as store:
            row = store.close(ident, found, reason='handed off to %s and stopped' % found['successor'],
                              now=(clock or _utcnow)(), create={'name': args.name or ident, 'host': host, 'master': master})
    except LedgerUnreachable as exc:
        _log_line('fleet-runner handoff: LEDGER UNREACHABLE, nothing written: %s' % exc)
        return EXIT_LEDGER_UNREACHABLE
    except SessionError as exc:
        _log_line('fleet-runner handoff: %s' % exc)
        return EXIT_USAGE
    sys.stdout.write(json.dumps({'session': row['id'], 'state': row['state'], 'handoff': row['handoff'],
                                 'closed_at': row['closed_at']}) + '\n')
    return EXIT_OK


__all__ = ['SUBCOMMANDS', 'BRIEF_FIELDS', 'chain_words', 'main', 'Tick', 'SessionRun', 'ItemSession', 'read_handoff',
           'handoff_marker', 'item_chain_config', 'parse_time']
