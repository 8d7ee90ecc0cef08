# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the agent's environment may hold: the runner keeps the board's secrets to itself (issue 14).

Pure: no I/O. The runner's environment comes from the unit's EnvironmentFile (the master's
credentials, D18) and holds the board token and the ledger DSN; an agent given all of it could
write any marker as the fleet or read the whole ledger (``agent_command: ["/usr/bin/env"]`` showed
them in the capture). So every variable the runner reads a board secret from is dropped, and so
is every other variable whose value carries such a secret (a copy under another name), before the
agent's own settings and its own credentials (the separate agent credentials file) are laid on top.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Mapping

BOARD_SECRET_ENV = ('FLEET_BOARD_DSN', 'FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN', 'FLEET_DISPATCH_LEASE_DSN',
                    'PGPASSWORD')
"""The variables a board, ledger or lease secret is read from: never in the agent's environment."""

_MIN_SECRET = 6  # a guess: shorter values are not matched by value (they would match by accident); by name they
# still go. Experiment that settles it: the shortest password/token among the fleet's credentials files.


def agent_environment(environ: Mapping[str, str], *, secrets: Iterable[Any] = (), agent_env: Mapping[str, str] = None,
                      credentials: Mapping[str, str] = None, fleet: Mapping[str, str] = None) -> Dict[str, str]:
    """The agent's environment: ``environ`` without ``BOARD_SECRET_ENV`` and without any variable whose
    value contains one of ``secrets`` (the board token, the DSN and its password), then ``agent_env``
    (the worker's non-secret settings), ``credentials`` (the agent credentials file: the agent's own
    API key or merge identity, D18) and ``fleet`` (``FLEET_ITEM``...). A name in ``credentials`` or
    ``agent_env`` is the installation's deliberate choice and is kept even when it is in
    ``BOARD_SECRET_ENV`` (e.g. a merge identity's own ``GH_TOKEN``, which is not the board's)."""
    found = [str(s) for s in secrets or () if s and len(str(s)) >= _MIN_SECRET]
    env = {}
    for name, value in (environ or {}).items():
        if name in BOARD_SECRET_ENV:
            continue
        if any(secret in str(value) for secret in found):
            continue
        env[name] = str(value)
    for layer in (agent_env, credentials, fleet):
        env.update(dict((str(k), str(v)) for k, v in (layer or {}).items()))
    return env


def parse_env_file(text: str) -> Dict[str, str]:
    """``NAME=value`` lines as systemd's EnvironmentFile= reads the ones roles/worker writes
    (``credentials.env.j2``): ``#``/``;`` comments and blank lines skipped; a double-quoted value has
    its backslash escapes undone, a single-quoted one is taken as written. Raises ``ValueError``
    naming the line for anything else (a file the agent depends on is never half read)."""
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in '#;':
            continue
        name, sep, value = stripped.partition('=')
        name = name.strip()
        if name.startswith('export '):
            name = name[len('export '):].strip()
        if not sep or not name or not (name[0].isalpha() or name[0] == '_') or \
                not all(c.isalnum() or c == '_' for c in name) or not name.isascii():
            raise ValueError('line %d is not NAME=value' % number)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r'\\(.)', r'\1', value[1:-1])
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        out[name] = value
    return out


__all__ = ['BOARD_SECRET_ENV', 'agent_environment', 'parse_env_file']
