# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The chain as an item run sees it: the agent's handoff file, the handoff marker, and the item run's
session in the ledger. One reader of ``handoff.json``, shared by item runs and chain sessions.
"""

from __future__ import annotations

import argparse
import json
import os

from ..._core.outcome.agent_env import BOARD_SECRET_ENV
from ..._core.board.markers import format_marker
from ..._core.chains.chain import HANDOFF_FILE, dispatch_by_default, parse_handoff, successor_session_id
from ..._store.sessions import LedgerUnreachable, SessionError, SessionStore
from ..._store.sql import dsn_passwords
from .config import DEFAULT_CHAIN_CONFIG, DEFAULT_CONFIG, LEDGER_DSN_ENV, expand, load_config, log_line


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
    """The ``handoff`` marker body: posted on the item after the close-out of a session that handed off;
    the item is held (``chained``) while its chain lives, docs/chains.md."""
    more = dict(fields, **handoff_fields(ident, handoff))
    text = ('handed off to %s (session %s): a session chain carries this item on; it is not dispatched while the chain '
            'lives (reopen the item to take it back)' % (handoff['successor'], more['successor_session']))
    return format_marker('handoff', more, text)


def item_chain_config(config_path, environ, log=log_line):
    """The chain config an item run uses: ``(ledger, chain)`` when ``chain.json`` is beside the runner
    config (``worker_chain_enabled``), else ``(None, {})`` -- a master without a chain records no sessions.
    A chain config that does not load is logged and the run goes on without a session (the board is the
    item's record; the ledger only carries chains)."""
    path = expand(config_path or environ.get('FLEET_RUNNER_CONFIG') or DEFAULT_CONFIG)
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
    """The ledger DSNs and their passwords in ``environ``: never in an agent's environment."""
    found = []
    for name in LEDGER_DSN_ENV + tuple(BOARD_SECRET_ENV):
        if environ.get(name):
            found.append(environ[name])
            found.extend(dsn_passwords(environ[name]))
    return found


class ItemSession(object):
    """An item run's session in the ledger: parent none, this host and master, the item,
    depth 0. ``open`` after the start marker; ``close`` from the close-out records the session closed
    and the agent's handoff in ONE transaction (``SessionStore.close``). Ledger failures are logged and
    never fail the run: a close that was not written chains nothing, and the close-out says so."""

    def __init__(self, ledger, ident, name, host, master, item, dispatch_default=False, log=log_line,
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
                store.open(self.ident, self.name, self.host, self.master, item=self.item)
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
                store.close(self.ident, handoff, reason=reason,
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
