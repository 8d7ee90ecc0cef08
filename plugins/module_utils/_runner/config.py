# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner's configuration, read the same way by every ``fleet-runner`` program.

The runner config (``--config``, else ``FLEET_RUNNER_CONFIG``, else ``DEFAULT_CONFIG``), the board
spec with its secrets from the environment (D18: never argv), and the board as a runner opens it
(``open_runner_board``: its fix for "cannot open the board" is a runner's, not a writer's).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any, Dict

from .._board.factory import open_board
from .._board.protocol import BoardUnreadable
from .._core.outcome.exits import EXIT_USAGE
from .._host.files import foreign_writer

DEFAULT_CONFIG = '~/.config/fleet-dispatch/runner.json'
DEFAULT_BOARD_SPEC = '~/.config/fleet-dispatch/board.json'
DEFAULT_STATE_DIR = '~/.local/state/fleet-dispatch'

# Board secrets come from the unit's EnvironmentFile, never from argv: env name -> spec key.
SECRET_ENV = (('FLEET_BOARD_DSN', 'dsn'), ('FLEET_GITHUB_TOKEN', 'token'), ('GITHUB_TOKEN', 'token'))


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line exits ``EXIT_USAGE`` (argparse's own 2 is systemd's ``2/INVALIDARGUMENT``)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, '%s: error: %s\n' % (self.prog, message))


def expand(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path)) if path else path


def load_json_file(path: str, what: str) -> Dict[str, Any]:
    """The JSON object in ``path``; ValueError when it is not one, or when its owner or mode says someone
    other than this user or root could have written it (it names the runner's agent and its board)."""
    with open(path, encoding='utf-8') as handle:
        why = foreign_writer(os.fstat(handle.fileno()))
        if why:
            raise ValueError('%s %s is refused: %s (chmod go-w it, or re-run fleet.dispatch.worker)' % (what, path, why))
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError('%s %s must hold a JSON object' % (what, path))
    return data


def board_spec(path: str, environ) -> Dict[str, Any]:
    """The board spec from ``path`` plus secrets from the environment (EnvironmentFile; never argv).

    D18: which identity writes and merges is a credential decision of the installation (the
    master's EnvironmentFile), never a git config or an argument visible in ``ps``.
    """
    spec = load_json_file(path, 'the board spec')
    for env_name, key in SECRET_ENV:
        if environ.get(env_name) and not spec.get(key):
            spec[key] = environ[env_name]
    if spec.get('kind') == 'ledger' and spec.get('path'):
        spec['path'] = expand(spec['path'])
    return spec


def runner_conf(args, environ) -> Dict[str, Any]:
    """The runner config: ``--config`` (must exist), else FLEET_RUNNER_CONFIG or the default (may be absent)."""
    path = args.config or environ.get('FLEET_RUNNER_CONFIG') or expand(DEFAULT_CONFIG)
    return load_json_file(path, 'the runner config') if (args.config or os.path.exists(path)) else {}


def open_runner_board(spec: Dict[str, Any], host: str = '', master: str = ''):
    """``open_board`` for the runner, whose fix for "cannot open the board" is not a writer's.

    The board's own message tells a writer to create a missing SQLite ledger; on a worker that
    would make a second queue nobody dispatches from. The runner must reach the dispatcher's
    board, so the message says which board this master's runner is configured with and how to
    point it at the dispatcher's."""
    try:
        return open_board(spec)
    except BoardUnreadable as exc:
        where = '%s/%s' % (host or socket.gethostname(), master or user())
        if spec.get('kind', 'ledger') == 'ledger' and spec.get('path') and not spec.get('dsn'):
            raise BoardUnreadable(
                'the runner on %s cannot open the board: the SQLite ledger %s is not on this machine (%s). A SQLite '
                'ledger serves only runners on the controller itself; do not create one here (it would be a second queue '
                'nobody dispatches from). Use the PostgreSQL ledger (roles/ledger) for remote workers: set the '
                'dispatcher\'s dispatch_board and the worker role\'s worker_runner_board to it, with its DSN in '
                'worker_credentials as FLEET_BOARD_DSN, then re-run fleet.dispatch.provision' % (where, spec['path'], exc))
        raise BoardUnreadable(
            'the runner on %s cannot open the board (%s): it must reach the dispatcher\'s own board; check '
            '~/.config/fleet-dispatch/board.json (worker_runner_board) and the secret in the credentials file '
            '(FLEET_BOARD_DSN or FLEET_GITHUB_TOKEN in worker_credentials), and that this worker can reach the board'
            % (where, exc))


def user() -> str:
    try:
        import pwd
        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get('USER', '')
