# -*- coding: utf-8 -*-
"""Issue 14: a lease DSN given through ``FLEET_DISPATCH_LEASE_DSN`` (the lookup's environment source) is as
secret as ``dispatch_lease_dsn``. Before the fix, ``no_log`` keyed on the inventory variable only and the
password appeared 18 times on stdout and in plan.json (``leases[].why``/``store``). Here the store is
unreachable, so the lease fails open and every message about it quotes the store.
"""
from __future__ import annotations

import json

import test_playbooks
from test_playbooks import playbook, state_file

board = test_playbooks.board   # the playbook tests' board fixture (pytest finds it by this name)

PASSWORD = 'Pw-9lease-from-env'
DSN = 'postgresql://fleet:%s@127.0.0.1:9/fleet?connect_timeout=1' % PASSWORD   # port 9 (discard): nothing answers


def test_a_lease_dsn_from_the_environment_never_shows_its_password(tmp_path, board, monkeypatch):
    monkeypatch.setenv('FLEET_DISPATCH_LEASE_DSN', DSN)
    res = playbook('dispatch.yml', tmp_path, board, '-e', 'issue=1', '-e', 'dispatch_lease_backend=postgres', '-v')
    said = res.stdout + res.stderr
    assert 'lease store unusable' in said and '127.0.0.1:9/fleet' in said, 'the store named in the environment was tried\n' + said
    plan = state_file(tmp_path / 'state', 'plan.json').read_text()
    assert PASSWORD not in said, said
    assert PASSWORD not in plan, json.loads(plan).get('leases')
