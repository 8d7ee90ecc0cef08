# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the agent's environment may hold: an allow list; the board's secrets stay with the runner.

Pure: no I/O. The runner's environment comes from the unit's EnvironmentFile (the master's
credentials, D18) and holds the board token and the ledger DSN; an agent given all of it could
write any marker as the fleet or read the whole ledger (``agent_command: ["/usr/bin/env"]`` showed
them in the capture). So the agent gets only ``ALLOWED`` names (``PATH``, ``HOME``, the locale...)
and the launch's own non-secret ``setenv`` names (``AGENT_SETENV``); never a ``FLEET_*`` name of the
runner's environment (``credentials.env`` is the fleet's namespace: a webhook or SMTP secret named
``FLEET_...`` lives there too), never a name in ``BOARD_SECRET_ENV`` nor a value carrying a board
secret (a copy under another name). The agent's own settings and credentials (the agent credentials
file, ``worker_agent_credentials``) and the run's own ``FLEET_*`` facts (``FLEET_ITEM``...,
set by the runner) are laid on top.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Mapping

BOARD_SECRET_ENV = ('FLEET_BOARD_DSN', 'FLEET_LEDGER_DSN', 'FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN',
                    'FLEET_DISPATCH_LEASE_DSN', 'PGPASSWORD')
"""The variables a board, ledger or lease secret is read from: never in the agent's environment."""

ALLOWED = ('PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TERM', 'TMPDIR', 'XDG_RUNTIME_DIR',
           'XDG_CONFIG_HOME', 'XDG_CACHE_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME', 'INVOCATION_ID', 'JOURNAL_STREAM',
           'PYTHONPATH', 'PYTHONDONTWRITEBYTECODE')
"""The names of the runner's environment the agent inherits (plus ``LC_*`` and ``AGENT_SETENV``'s; never ``FLEET_*``).
``PYTHONPATH`` is passed on when the unit sets one (the runner's wrapper sets none: it runs Python
isolated), so a Python agent or tool run by the fleet keeps importing what it imported before the list."""

AGENT_SETENV = 'FLEET_AGENT_SETENV'
"""Set by ``launch``: the comma-separated names of its ``setenv`` that are neither ``FLEET_*`` nor secret-looking;
they reach the agent (a test's ``FAKE_AGENT_MODE``, an ``EDITOR``); every other name of the unit does not."""

SECRET_NAME = re.compile(r'TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE_?KEY', re.I)
"""Names that say "secret" in the credential conventions we know of (GITHUB_TOKEN, *_API_KEY, PGPASSWORD,
AWS_SECRET_ACCESS_KEY, ...). A name is not proof (FLEET_LEASE_TOKEN is a lease owner token, not a
credential), so a match warns (``launch``, ``guard stage=batch``) instead of refusing."""


def secret_looking(names: Iterable[str]) -> list:
    """The sorted ``names`` that look like secrets (``SECRET_NAME``)."""
    return sorted(str(n) for n in names if SECRET_NAME.search(str(n)))


_MIN_SECRET = 6  # a guess: shorter values are not matched by value (they would match by accident); by name they
# still go. Experiment that settles it: the shortest password/token among the fleet's credentials files.


def agent_environment(environ: Mapping[str, str], *, secrets: Iterable[Any] = (), agent_env: Mapping[str, str] = None,
                      credentials: Mapping[str, str] = None, fleet: Mapping[str, str] = None) -> Dict[str, str]:
    """The agent's environment: the allowed names of ``environ`` (``ALLOWED``, ``LC_*``, the names in
    ``AGENT_SETENV``) without any ``FLEET_*`` name, without ``BOARD_SECRET_ENV`` and without any variable whose
    value contains one of ``secrets`` (the board token, the DSN and its password), then ``agent_env``
    (the worker's non-secret settings), ``credentials`` (the agent credentials file: the agent's own
    API key or merge identity, D18) and ``fleet`` (``FLEET_ITEM``...). A name in ``credentials`` or
    ``agent_env`` is the installation's deliberate choice and is kept even when it is in
    ``BOARD_SECRET_ENV`` (e.g. a merge identity's own ``GH_TOKEN``, which is not the board's)."""
    found = [str(s) for s in secrets or () if s and len(str(s)) >= _MIN_SECRET]
    environ = environ or {}
    passed = set(n.strip() for n in str(environ.get(AGENT_SETENV, '')).split(',') if n.strip())
    env = {}
    for name, value in environ.items():
        if not (name in ALLOWED or name.startswith('LC_') or name in passed) or name.startswith('FLEET_'):
            continue
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


__all__ = ['AGENT_SETENV', 'ALLOWED', 'BOARD_SECRET_ENV', 'SECRET_NAME', 'secret_looking', 'agent_environment', 'parse_env_file']
