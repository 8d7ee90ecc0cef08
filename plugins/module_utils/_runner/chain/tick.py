# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet-runner chain``: one tick of the chain runner (a user timer runs it).

Read the ledger once; for each closed session with a handoff nobody started, decide
(``_core.chains.chain.decide``), claim an ``any-`` successor through ``_store.handoff``, insert the
successor's session row (one master wins it), make its worktree (``_host.git.Workspace``) and launch
``chain-<session>`` through the same ``_host.systemd.launch`` as every run (D15). A loss is logged
("already claimed by <host>") and recorded locally so this runner never asks again. An unreachable
ledger launches nothing and exits ``EXIT_LEDGER_UNREACHABLE`` (D20: "no work" is exit 0, "could not
read" is not).

A runner that lost an ``any-`` handoff -- by racing for it, or by ticking after the winner's claim
when nothing is waiting any more -- names the winner on its first tick after the claim, once:
``lost: already claimed by <host> at <claim time> (workspace <name>)``, the claim time and
workspace being the claim row's, and the same three in ``losses.json`` and status.

The rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys

from ..._core.chains.chain import (
    DEFAULT_DEPTH_LIMIT, DEFAULT_MAX_LOAD_PER_CPU, DEFAULT_MIN_MEM_AVAILABLE_KB, HandoffInvalid, decide, room, session_unit,
    successor_session_id, successor_workspace,
)
from ..._core.board.model import format_time, parse_time
from ..._host.cmd import SubprocessRunner
from ..._host.files import CAPACITY_FILE, CHAIN_LOSSES, read_capacity_file, read_chain_losses
from ..._host.git import Git, GitError, Workspace
from ..._host.headroom import measure
from ..._host.launcher import sandbox_settings
from ..._host.sandbox import run_properties
from ..._host.systemd import SystemdError, SystemdUser, launch, notifier_unit
from ..._store.handoff import ClaimUnproven, HandoffStore
from ..._store.sessions import LedgerUnreachable, SessionStore
from .config import EXIT_LEDGER_UNREACHABLE, EXIT_OK, EXIT_START_FAILED, EXIT_USAGE, expand, log_line, parser, start, utcnow

MISSED_LOOKBACK = 600
"""Seconds before its previous tick (before now, on its first) from which a tick reads the claims it may
have lost. A claim's time is the winner's tick start on the winner's clock, and its row commits later
(after the winner's earlier launches in that tick), so a window starting at this runner's previous tick
would miss a claim stamped before it and committed after; the overlap costs nothing else (a loss already
in ``losses.json`` is not logged again). Guess: ten of the default 60 s periods. The experiment: the
longest (claim time, commit) gap plus clock skew between workers seen on the bed."""


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

    def lose(self, parent, successor, holder, when, workspace):
        """Record a loss: ``{"<parent>/<successor>": {holder, at (the claim time), workspace}}``."""
        data = self.losses()
        data['%s/%s' % (parent, successor)] = {'holder': holder, 'at': when, 'workspace': workspace}
        os.makedirs(self.dir, exist_ok=True)
        tmp = '%s.%d.tmp' % (self.losses_path, os.getpid())
        with open(tmp, 'w', encoding='utf-8') as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        os.replace(tmp, self.losses_path)

    def last_tick(self):
        """When the previous tick started (ISO text), or None."""
        try:
            with open(os.path.join(self.dir, 'last_tick'), encoding='utf-8') as handle:
                return handle.read().strip() or None
        except OSError:
            return None

    def ticked(self, when):
        try:
            os.makedirs(self.dir, exist_ok=True)
            with open(os.path.join(self.dir, 'last_tick'), 'w', encoding='utf-8') as handle:
                handle.write(when + '\n')
        except OSError:
            pass

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
        self.clock = clock or utcnow
        self.record = LocalRecord(conf['state_dir'])
        self._log = log or log_line
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
            self._missed(store, now)
            self.record.ticked(format_time(now))
            losses = self.record.losses()
            mine = [p for p in waiting if '%s/%s' % (p['id'], p['handoff']) not in losses]
            lost = len(waiting) - len(mine)
            if not mine:
                self.log('no handoff waiting' + (' for this host (%d lost to another earlier)' % lost if lost else ''))
                return EXIT_OK
            if lost:
                self.log('%d waiting handoff(s) lost to another earlier, not asked again' % lost)
            verdict = self._room(now)
            code = EXIT_OK
            for parent in mine:
                key = '%s/%s' % (parent['id'], parent['handoff'])
                try:
                    code = max(code, self._one(store, parent, verdict, now))
                except (LedgerUnreachable, ClaimUnproven) as exc:
                    self.log('LEDGER UNREACHABLE during %s, nothing launched for it: %s' % (key, exc))
                    return EXIT_LEDGER_UNREACHABLE
            return code
        finally:
            store.close_store()

    def _lost(self, parent, successor, holder, claimed_at, workspace):
        """The one loss line and record: ``lost: already claimed by <holder> at <claim time> (workspace <name>)``."""
        self.log('%s -> %s: lost: already claimed by %s at %s (workspace %s)' % (parent, successor, holder, claimed_at, workspace))
        self.record.lose(parent, successor, holder, claimed_at, workspace)
        self.results.append({'parent': parent, 'action': 'lost', 'holder': holder, 'at': claimed_at})

    def _missed(self, store, now):
        """Every runner that lost an ``any-`` handoff names the winner once, whether it raced for it or ticked
        after the claim (when the handoff is no longer waiting). Reads the claims made since ``MISSED_LOOKBACK``
        before the previous tick; a claim of another host, or of this host that another master's session row
        holds, not yet in ``losses.json`` is logged and recorded (``_lost``). Never fatal: it is a report."""
        last = parse_time(self.record.last_tick() or '') or now
        since = format_time(min(last, now) - _dt.timedelta(seconds=MISSED_LOOKBACK))
        try:
            with self.claims() as claims:
                recent = claims.since(since)
            losses = self.record.losses()
            for claim in recent:
                parent, successor = claim['parent'], claim['successor']
                if '%s/%s' % (parent, successor) in losses:
                    continue
                holder, workspace = claim['holder'], claim['workspace']
                if holder == self.host:
                    # this host's claim: lost only when another master's session row holds it
                    row = store.get(successor_session_id(parent, successor))
                    if row is None or row['master'] == self.master:
                        continue
                    holder, workspace = '%s (master %s)' % (row['host'], row['master']), row['workspace']
                self._lost(parent, successor, holder, claim['claimed_at'], workspace)
                losses['%s/%s' % (parent, successor)] = True
        except Exception as exc:  # noqa: BLE001 - naming the winner is a report; the tick goes on
            self.log('WARNING: the claims made since %s could not be read: %s' % (since, exc))

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
            inserted, _row = store.start_successor(parent, ident, self.host, self.master, unit, '',
                                                   state='refused', reason=why)
            self.log('%s: STOPPED: %s' % (key, why) if inserted else '%s: already stopped by another runner' % key)
            self.results.append({'parent': parent['id'], 'action': 'refuse', 'why': why})
            return EXIT_OK
        claimed_at = None
        if action == 'claim':
            with self.claims() as claims:
                found = claims.claim(parent['id'], successor, self.host, now=now)
            if not found['won']:
                self._lost(parent['id'], successor, found['holder'], found['claimed_at'], found['workspace'])
                return EXIT_OK
            claimed_at = found['claimed_at']
        workspace = successor_workspace(parent['id'], successor, self.host)
        inserted, row = store.start_successor(parent, ident, self.host, self.master, unit, workspace)
        if not inserted:
            # another master of this host holds it: the claim row's time, else (no claim: an untagged or
            # addressed successor) its row's start, on the ledger's clock
            self._lost(parent['id'], successor, '%s (master %s)' % (row['host'], row['master']), claimed_at or row['started_at'],
                       row['workspace'])
            return EXIT_OK
        self.log('%s: claimed as session %s (%s); starting %s' % (key, ident, why, unit))
        return self._start(store, ident, unit, workspace, now)

    def _start(self, store, ident, unit, workspace, now):
        chain = self.chain
        root = expand(chain.get('workspaces') or '~/fleet/workspaces')
        clone = expand(chain.get('clone') or '~/fleet/clones/main')
        path = os.path.join(root, workspace)
        try:
            Workspace(self.git, clone, path, branch=chain.get('branch') or 'main').present()
        except (GitError, OSError) as exc:
            why = 'worktree %s not made: %s' % (path, exc)
            self.log('%s: START FAILED: %s' % (ident, why))
            store.set_state(ident, 'failed', why)
            return EXIT_START_FAILED
        command = [expand(c) if c.startswith('~') else c for c in (chain.get('command') or ['fleet-runner'])]
        argv = command + ['session', '--session', ident]
        try:
            # a successor is hardened like an item's run (this master's sandbox.json)
            props = run_properties(sandbox_settings(), path)
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
                store.set_state(ident, 'failed', why)
            return EXIT_START_FAILED if res['reason'] != 'live' else EXIT_OK
        took = (self.clock() - now).total_seconds()
        self.log('%s: launched %s in %s (invocation %s; tick to active %.3f s)' % (ident, unit, path, res.get('invocation_id'), took))
        self.results.append({'session': ident, 'action': 'launched', 'unit': unit, 'workspace': path, 'seconds': took})
        return EXIT_OK


def main(words, environ=None, *, clock=None, sd=None, git=None, headroom=None) -> int:
    """``fleet-runner chain [--json]``: one tick; its exit code."""
    environ = os.environ if environ is None else environ
    p = parser('chain')
    p.add_argument('--json', action='store_true', help='print the tick\'s decisions as JSON on stdout')
    args = p.parse_args(words)
    started = start('chain', args, environ)
    if started is None:
        return EXIT_USAGE
    conf, host, master = started
    ledger = conf['ledger']
    runner = SubprocessRunner(timeout=120)
    tick = Tick(conf, host, master, lambda: SessionStore(**ledger), lambda: HandoffStore(**ledger), sd or SystemdUser(runner),
                git or Git(runner), headroom=headroom, clock=clock)
    code = tick.run()
    if args.json:
        sys.stdout.write(json.dumps({'exit': code, 'results': tick.results}) + '\n')
    return code
