# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the three chain programs (``chain``, ``session``, ``handoff``) share: exit codes, configuration
and the command line options they all take.

Session chains, the runner part; the rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import sys

from ..config import DEFAULT_CONFIG, Parser, expand, user

# the exit codes: the one table of every fleet-runner program (_core.outcome.exits)
from ..._core.outcome.exits import (EXIT_CLOSE_LOST, EXIT_FAILURE, EXIT_LEDGER_UNREACHABLE, EXIT_START_FAILED,  # noqa: F401
                                    EXIT_SUCCESS as EXIT_OK, EXIT_USAGE)

# the chain programs (tick, session, handoff) take their exit codes from here
__all__ = ['EXIT_CLOSE_LOST', 'EXIT_FAILURE', 'EXIT_LEDGER_UNREACHABLE', 'EXIT_OK', 'EXIT_START_FAILED', 'EXIT_USAGE']

DEFAULT_CHAIN_CONFIG = 'chain.json'   # beside the runner config
LEDGER_DSN_ENV = ('FLEET_LEDGER_DSN', 'FLEET_BOARD_DSN')


def utcnow():
    return _dt.datetime.now(_dt.timezone.utc)


def log_line(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


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
    path = expand(args.config or environ.get('FLEET_RUNNER_CONFIG') or DEFAULT_CONFIG)
    conf = _load(path, 'the runner config', bool(args.config))
    chain_path = expand(args.chain_config or os.path.join(os.path.dirname(path), DEFAULT_CHAIN_CONFIG))
    chain = dict(conf.get('chain') or {})
    chain.update(_load(chain_path, 'the chain config', bool(args.chain_config)))
    ledger = dict(chain.get('ledger') or {})
    if not ledger.get('path') and not ledger.get('dsn'):
        for name in LEDGER_DSN_ENV:
            if environ.get(name):
                ledger['dsn'] = environ[name]
                break
    if not ledger.get('path') and not ledger.get('dsn') and conf.get('board_spec'):
        spec = _load(expand(conf['board_spec']), 'the board spec', False)
        if spec.get('kind') == 'ledger' and spec.get('path'):
            ledger['path'] = spec['path']
    if ledger.get('path'):
        ledger = {'path': expand(ledger['path'])}
    elif ledger.get('dsn'):
        ledger = {'dsn': ledger['dsn']}
    else:
        raise ValueError('no ledger for the chain: set "ledger": {"path": ...} in %s, or FLEET_LEDGER_DSN in the '
                         "master's credentials file" % chain_path)
    conf['chain'] = chain
    conf['ledger'] = ledger
    conf['state_dir'] = expand(args.state_dir or conf.get('state_dir') or '~/.local/state/fleet-dispatch')
    return conf


def parser(name):
    """The options every chain program takes; each program adds its own."""
    p = Parser(prog='fleet-runner %s' % name)
    p.add_argument('--config', default=None)
    p.add_argument('--chain-config', default=None, help='the chain config JSON (default chain.json beside --config)')
    p.add_argument('--state-dir', default=None)
    p.add_argument('--branch', default=None)
    p.add_argument('--host', default=None, help='this host\'s name (default: the host name)')
    return p


def start(name, args, environ):
    """``(conf, host, master)`` for a chain program, or None when its configuration does not load (said on stderr)."""
    try:
        conf = load_config(args, environ)
    except (OSError, ValueError) as exc:
        log_line('fleet-runner %s: configuration error, nothing done: %s' % (name, exc))
        return None
    return conf, args.host or conf['chain'].get('host') or socket.gethostname(), user()


def session_id(name, args, environ):
    """The session a ``session``/``handoff`` acts on: ``--session``, else ``$FLEET_SESSION``; '' (said) when neither."""
    ident = args.session or environ.get('FLEET_SESSION')
    if not ident:
        log_line('fleet-runner %s: --session ID (or FLEET_SESSION) is required' % name)
    return ident
