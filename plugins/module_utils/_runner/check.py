# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet-runner check-board``: can this master's runner open its board? Asked before anything is launched.

The rule (D20: "cannot start" must never read as "launched"): the worker role runs this as each
master at provision time, and it opens the board exactly as a run does -- the same board spec file,
the same secrets (``board_spec``: from the environment, or the credentials file the unit's
``EnvironmentFile=`` names, read here with ``--credentials``), the same ``open_board`` and one
``read``. It prints one JSON object -- ``ok``, ``kind``, ``board`` (a DSN redacted), ``items``,
``error`` and ``fix`` -- and exits 0 when the board opened, 1 when it did not, 2 on bad arguments.
The fix names the variable to change: a SQLite file on the controller cannot serve a remote
worker, psycopg 3 or requests missing, an unreachable PostgreSQL, a missing token.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Dict, Tuple

from .._board.factory import open_board
from .._board.protocol import BoardError
from .._core.outcome.agent_env import parse_env_file
from .._store.sql import redact_dsn

EXIT_OPENED = 0
EXIT_UNREADABLE = 1
EXIT_USAGE = 2

SQLITE_RULE = ('a SQLite ledger serves only localhost workers: use PostgreSQL (roles/ledger) for remote workers, '
               'dispatch_board={"kind": "ledger", "dsn": "postgresql://..."} (the DSN reaches the runs as FLEET_BOARD_DSN '
               'through the credentials file)')


def _where(spec: Dict[str, Any]) -> str:
    if spec.get('kind') == 'github':
        return 'github project %s/%s' % (spec.get('owner', '?'), spec.get('project', '?'))
    if spec.get('dsn'):
        return redact_dsn(spec['dsn'])
    return spec.get('path') or '(no path, no dsn)'


def fix_for(spec: Dict[str, Any], error: str) -> str:
    """The fix a human applies for ``error`` opening ``spec``: the variable to change, or the package to install."""
    kind = spec.get('kind')
    text = error or ''
    if kind == 'ledger':
        if not spec.get('path') and not spec.get('dsn'):
            return ('the runner has no ledger to open. ' + SQLITE_RULE
                    + '; or put FLEET_BOARD_DSN in worker_credentials')
        if spec.get('path') and not spec.get('dsn'):
            return (SQLITE_RULE + '. On a worker that is the controller itself, point the path at a file this master can '
                    'read and write (worker_runner_board.path)')
        if 'psycopg' in text:
            return ('install psycopg 3 for the runner\'s python on this worker: worker_packages_install: true installs '
                    'worker_runner_packages (python3-psycopg for a PostgreSQL board), or apt-get install python3-psycopg')
        return ('check the DSN (dispatch_board.dsn, or FLEET_BOARD_DSN in worker_credentials), that PostgreSQL listens '
                'where this worker reaches it (roles/ledger: ledger_listen_addresses) and lets it in '
                '(ledger_allowed_networks), and that the database exists')
    if kind == 'github':
        if 'requests' in text:
            return 'install requests for the runner\'s python: worker_runner_packages (python3-requests) or apt-get install python3-requests'
        if 'token' in text:
            return 'put the token in worker_credentials as FLEET_GITHUB_TOKEN (or in dispatch_board.token)'
        return 'check the board spec (dispatch_board or worker_runner_board) and that this worker reaches the GitHub API'
    return 'give the board spec a kind the runner knows (worker_runner_board, default dispatch_board): ledger or github'


def check_board(spec_path: str, environ, *, spec_reader: Callable[[str, Any], Dict[str, Any]],
                opener: Callable[[Dict[str, Any]], Any] = open_board) -> Tuple[int, Dict[str, Any]]:
    """Open and read the board ``spec_path`` names as a run would; returns (exit code, the JSON answer).

    ``spec_reader(path, environ)`` is the runner's own ``config.board_spec`` (passed in by ``cli.main``).
    """
    try:
        spec = spec_reader(spec_path, environ)
    except (OSError, ValueError) as exc:
        return EXIT_UNREADABLE, {'ok': False, 'kind': None, 'board': spec_path, 'items': None,
                                 'error': 'the board spec cannot be read: %s' % exc,
                                 'fix': 'provision this worker with worker_runner_board (default: dispatch_board), '
                                        'which writes %s' % spec_path}
    answer = {'ok': False, 'kind': spec.get('kind'), 'board': _where(spec), 'items': None, 'error': None, 'fix': None}
    board = None
    try:
        board = opener(dict(spec))
        answer['items'] = len(board.read().items)
    except (BoardError, ImportError) as exc:
        answer['error'] = str(exc)
        answer['fix'] = fix_for(spec, str(exc))
        return EXIT_UNREADABLE, answer
    finally:
        if board is not None:
            try:
                board.close()
            except Exception:  # noqa: BLE001 - closing a board that answered must not turn success into failure
                pass
    answer['ok'] = True
    return EXIT_OPENED, answer


def main(args, environ=None, *, spec_reader: Callable[[str, Any], Dict[str, Any]], default_spec: str = '', out=None) -> int:
    """``fleet-runner check-board [--board-spec FILE] [--credentials FILE]``."""
    environ = dict(os.environ if environ is None else environ)
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog='fleet-runner check-board',
                                     description='Open and read the board as a run would; print one JSON object.')
    parser.add_argument('--board-spec', default=None, help='board spec JSON (default %s)' % default_spec)
    parser.add_argument('--credentials', default=None,
                        help='the EnvironmentFile the runs get (credentials.env): its FLEET_BOARD_DSN / token, as a run sees them')
    parser.add_argument('--config', default=None, help='the runner config (its board_spec is the default spec)')
    try:
        opts = parser.parse_args(args)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else EXIT_USAGE    # --help exits 0, a bad argument 2
    spec_path = opts.board_spec
    if spec_path is None and opts.config:
        try:
            with open(os.path.expanduser(opts.config), encoding='utf-8') as handle:
                spec_path = (json.load(handle) or {}).get('board_spec')
        except (OSError, ValueError, AttributeError):
            spec_path = None
    spec_path = os.path.expanduser(spec_path or default_spec)
    if opts.credentials:
        try:
            with open(os.path.expanduser(opts.credentials), encoding='utf-8') as handle:
                environ.update(parse_env_file(handle.read()))
        except (OSError, ValueError) as exc:
            out.write(json.dumps({'ok': False, 'kind': None, 'board': spec_path, 'items': None,
                                  'error': 'the credentials file cannot be read: %s' % exc,
                                  'fix': 'provision this worker (fleet.dispatch.provision) so that it exists'}) + '\n')
            return EXIT_UNREADABLE
    code, answer = check_board(spec_path, environ, spec_reader=spec_reader)
    out.write(json.dumps(answer, sort_keys=True) + '\n')
    return code
