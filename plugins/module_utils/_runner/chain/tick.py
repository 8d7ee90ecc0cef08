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

The rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys

from ..._core.chains.chain import (
    DEFAULT_DEPTH_LIMIT, DEFAULT_MAX_LOAD_PER_CPU, DEFAULT_MIN_MEM_AVAILABLE_KB, HandoffInvalid, decide, room, session_unit,
    successor_kind, successor_session_id,
)
from ..._core.board.model import format_time
from ..._core.board.naming import DISPATCH_TAG, claimed_name
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
"""Seconds of claims a chain runner's first tick reads to name the winners it lost to (guess: ten of the
default 60 s periods; later ticks read since their previous one). The experiment: the longest gap between
a runner's install and its first tick seen on provisioned workers."""


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
            self._missed(now)
            self.record.ticked(format_time(now))
            losses = self.record.losses()
            mine = [p for p in waiting if '%s/%s' % (p['id'], p['handoff']) not in losses]
            if not mine:
                lost = len(waiting) - len(mine)
                self.log('no handoff waiting' + (' for this host (%d lost to another earlier)' % lost if lost else ''))
                return EXIT_OK
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

    def _missed(self, now):
        """The chains' proof: a runner that lost an ``any-`` handoff names the winner. Claims made since this
        runner's previous tick (``MISSED_LOOKBACK`` on its first) by another host are logged once each,
        ``lost: already claimed by <host> at <claim time> (workspace ...)``, and recorded as losses (never
        asked again) -- whether this runner raced for them or ticked after the winner's claim. Never fatal."""
        since = self.record.last_tick() or format_time(now - _dt.timedelta(seconds=MISSED_LOOKBACK))
        try:
            with self.claims() as claims:
                recent = claims.since(since)
        except Exception as exc:  # noqa: BLE001 - naming the winner is a report; the tick goes on
            self.log('WARNING: the claims made since %s could not be read: %s' % (since, exc))
            return
        losses = self.record.losses()
        for claim in recent:
            key = '%s/%s' % (claim['parent'], claim['successor'])
            if claim['holder'] == self.host or key in losses:
                continue
            self.log('%s -> %s: lost: already claimed by %s at %s (workspace %s)'
                     % (claim['parent'], claim['successor'], claim['holder'], claim['claimed_at'], claim['workspace']))
            self.record.lose(claim['parent'], claim['successor'], claim['holder'], claim['claimed_at'])
            losses[key] = True
            self.results.append({'parent': claim['parent'], 'action': 'lost', 'holder': claim['holder']})

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
                self.record.lose(parent['id'], successor, found['holder'], found.get('claimed_at') or format_time(now))
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
        root = expand(chain.get('workspaces') or '~/fleet/workspaces')
        clone = expand(chain.get('clone') or '~/fleet/clones/main')
        path = os.path.join(root, workspace)
        try:
            Workspace(self.git, clone, path, branch=chain.get('branch') or 'main').present()
        except (GitError, OSError) as exc:
            why = 'worktree %s not made: %s' % (path, exc)
            self.log('%s: START FAILED: %s' % (ident, why))
            store.set_state(ident, 'failed', why, now=self.clock())
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
                store.set_state(ident, 'failed', why, now=self.clock())
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
