# -*- coding: utf-8 -*-
"""Issue 14, "ansible-doc of every option that can hold a secret says no_log", for the roles too: every role
variable whose name says secret (dsn/token/password/secret/credentials, the rule of
``test_secret_options_say_no_log.py``) is ``no_log: true`` in ``meta/argument_specs.yml``, which
``ansible-doc -t role`` prints as ``no_log: true`` and role argument validation honours.
"""
from __future__ import annotations

import pathlib

import pytest
import yaml

from test_secret_options_say_no_log import SECRET

REPO = pathlib.Path(__file__).resolve().parents[3]


def _options():
    for path in sorted((REPO / 'roles').glob('*/meta/argument_specs.yml')):
        specs = yaml.safe_load(path.read_text())['argument_specs']
        for entry, spec in specs.items():
            stack = list((spec.get('options') or {}).items())
            while stack:
                name, opt = stack.pop()
                yield '%s:%s:%s' % (path.parts[-3], entry, name), name.rsplit('.', 1)[-1], opt
                stack += [(name + '.' + sub, o) for sub, o in (opt.get('options') or {}).items()]


SECRETS = [(where, opt) for where, name, opt in _options() if SECRET.search(name)]


def test_the_scan_finds_the_known_secret_variables():
    found = set(where for where, _opt in SECRETS)
    assert {'ledger:main:ledger_password', 'worker:main:worker_credentials', 'worker:main:worker_agent_credentials',
            'dispatch:main:dispatch_lease_dsn', 'sweeper:main:sweeper_credentials'} <= found, sorted(found)


@pytest.mark.parametrize('where,opt', SECRETS, ids=[w for w, _o in SECRETS])
def test_every_secret_role_variable_is_no_log(where, opt):
    assert opt.get('no_log') is True, '%s can hold a secret: give it no_log: true in meta/argument_specs.yml' % where
