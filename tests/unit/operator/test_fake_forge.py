# -*- coding: utf-8 -*-
"""The fake agent's forge half (its ``merge``) uses its own credential, never the runner's (issue 14, D18).

A real agent's merge identity is the agent's own credential (the agent credentials file); the runner's
board DSN stays with the runner (``credentials.env``, hidden from the run unit by ``worker_sandbox_hide``,
and ``FLEET_BOARD_DSN``, which the runner never hands on). So the fake, given a ledger spec without a
DSN, merges with ``FAKE_FORGE_DSN`` only: with the runner's DSN in reach and no ``FAKE_FORGE_DSN`` it
refuses, saying which variable to set.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board import ledger as _ledger
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard

REPO = pathlib.Path(__file__).resolve().parents[3]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_ledger.__file__)).parents[6]  # the collection root, unresolved


def _run(tmp_path, env):
    home = tmp_path / 'home'
    config = home / '.config' / 'fleet-dispatch'
    config.mkdir(parents=True, exist_ok=True)
    (config / 'board.json').write_text(json.dumps({'kind': 'ledger'}))   # the runner's spec: no secret in it
    base = {'PATH': os.environ.get('PATH', ''), 'HOME': str(home), 'FLEET_ITEM': '7',
            'PYTHONPATH': str(COLLECTIONS_ROOT)}
    base.update(env)
    return subprocess.run([sys.executable, str(FAKE_AGENT), '--mode', 'merge'], env=base, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, check=False)


def _merged(dsn):
    board = LedgerBoard(dsn=dsn)
    try:
        return [a for item in board.read().items for a in item.artifacts if a.merged]
    finally:
        board.close()


@pytest.fixture
def pg_dsn(fresh_database):
    """A fresh database per test: a merge of one test must not be seen by the other."""
    dsn, drop = fresh_database()
    try:
        yield dsn
    finally:
        drop()


def test_the_fake_forge_merges_with_its_own_credential(tmp_path, pg_dsn):
    board = LedgerBoard(dsn=pg_dsn)
    board.upsert_item(number=7, title='item 7', status='Ready')
    board.close()
    proc = _run(tmp_path, {'FAKE_FORGE_DSN': pg_dsn})
    assert proc.returncode == 0, proc.stderr
    assert [7] == [n for a in _merged(pg_dsn) for n in a.closes]


def test_the_fake_forge_merges_with_a_role_that_may_record_artifacts_only(tmp_path, pg_dsn, pg_role):
    """The forge's credential is a role of its own (``_board/ledger_roles.py``): enough for the merge."""
    board = LedgerBoard(dsn=pg_dsn)
    board.upsert_item(number=7, title='item 7', status='Ready')
    board.close()
    proc = _run(tmp_path, {'FAKE_FORGE_DSN': pg_role(pg_dsn)})
    assert proc.returncode == 0, proc.stderr
    assert [7] == [n for a in _merged(pg_dsn) for n in a.closes]
    board = LedgerBoard(dsn=pg_dsn)
    try:
        assert board.get(7).state == 'closed'
    finally:
        board.close()


def test_the_fake_forge_never_takes_the_runners_dsn(tmp_path, pg_dsn):
    board = LedgerBoard(dsn=pg_dsn)
    board.upsert_item(number=7, title='item 7', status='Ready')
    board.close()
    config = tmp_path / 'home' / '.config' / 'fleet-dispatch'
    config.mkdir(parents=True)
    (config / 'credentials.env').write_text('FLEET_BOARD_DSN="%s"\n' % pg_dsn)   # the runner's, in reach
    proc = _run(tmp_path, {'FLEET_BOARD_DSN': pg_dsn})
    assert proc.returncode != 0
    assert 'FAKE_FORGE_DSN' in proc.stderr and 'worker_agent_credentials' in proc.stderr, proc.stderr
    assert _merged(pg_dsn) == [], 'nothing merged with the runner\'s DSN'
