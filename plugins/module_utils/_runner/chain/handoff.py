# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet-runner handoff --session ID --file F``: close a session with its handoff and stop.

The seed's laptop: asking and carrying are different jobs. The handoff is validated, its
successor named by the chains' one rule (an untagged one becomes ``any-<topic>`` when this
host's ``chain_dispatch_by_default`` is on, the ``dispatch_by_default`` of ``chain.json``), and
recorded with the session's close in one transaction.

The rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import json
import os
import sys

from ..._core.chains.chain import dispatch_by_default, parse_handoff
from ..._store.sessions import LedgerUnreachable, SessionError, SessionStore
from .config import EXIT_LEDGER_UNREACHABLE, EXIT_OK, EXIT_USAGE, log_line, parser, session_id, start, utcnow


def main(words, environ=None, *, clock=None) -> int:
    """``fleet-runner handoff --session ID --file F [--name NAME]``: validate, apply this host's
    ``dispatch_by_default``, close the session with it, and stop."""
    environ = os.environ if environ is None else environ
    p = parser('handoff')
    p.add_argument('--session', default=None, help='the session id (default $FLEET_SESSION)')
    p.add_argument('--file', required=True, help='the handoff JSON (successor + the five brief fields)')
    p.add_argument('--name', default=None, help='the session\'s name when the ledger has no row for it yet')
    args = p.parse_args(words)
    started = start('handoff', args, environ)
    if started is None:
        return EXIT_USAGE
    conf, host, master = started
    ledger = conf['ledger']
    ident = session_id('handoff', args, environ)
    if not ident:
        return EXIT_USAGE
    try:
        with open(args.file, encoding='utf-8') as handle:
            found = parse_handoff(json.load(handle))
    except (OSError, ValueError) as exc:
        log_line('fleet-runner handoff: the handoff %s is not valid, nothing written: %s' % (args.file, exc))
        return EXIT_USAGE
    found['successor'] = dispatch_by_default(found['successor'], bool((conf.get('chain') or {}).get('dispatch_by_default')))
    try:
        with SessionStore(**ledger) as store:
            row = store.close(ident, found, reason='handed off to %s and stopped' % found['successor'],
                              now=(clock or utcnow)(), create={'name': args.name or ident, 'host': host, 'master': master})
    except LedgerUnreachable as exc:
        log_line('fleet-runner handoff: LEDGER UNREACHABLE, nothing written: %s' % exc)
        return EXIT_LEDGER_UNREACHABLE
    except SessionError as exc:
        log_line('fleet-runner handoff: %s' % exc)
        return EXIT_USAGE
    sys.stdout.write(json.dumps({'session': row['id'], 'state': row['state'], 'handoff': row['handoff'],
                                 'closed_at': row['closed_at']}) + '\n')
    return EXIT_OK
