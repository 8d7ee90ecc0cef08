# -*- coding: utf-8 -*-
"""Status names the stores that are single-controller only (issue 16, docs/execution-environment.md).

A dispatcher whose board is the SQLite ledger file, or whose leases are in SQLite (the default: the
ledger file itself on a SQLite ledger board), keeps its queue or its lock in files on one controller: an AWX job (its container is thrown away) or a second
controller does not share them. ``status.yml`` says so on stdout and in status.json
(``single_controller``); with the board on GitHub or PostgreSQL and the leases on PostgreSQL it
lists nothing.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board

REPO = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent


def status(tmp_path, extra):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / 'state'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    argv = [str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventory.example'), str(REPO / 'playbooks' / 'status.yml'),
            '-e', json.dumps(extra)]
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    found = list((tmp_path / 'state' / 'fleet-dispatch').glob('*/status.json'))    # one subdirectory per board
    assert len(found) == 1, found
    return res.stdout, json.loads(found[0].read_text())


def test_the_file_backed_defaults_are_named_single_controller_only(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='free', status='Ready')
    out, doc = status(tmp_path, {'dispatch_board': spec})
    assert doc['single_controller'] == [
        {'what': 'board', 'backend': 'sqlite', 'where': spec['path']},
        {'what': 'lease', 'backend': 'sqlite', 'where': spec['path']},
    ]
    assert 'single-controller only: the board store is sqlite at %s' % spec['path'] in out
    assert 'single-controller only: the lease store is sqlite at %s' % spec['path'] in out
    assert doc['lease_store']['shared'] is False and doc['lease_store']['where'] == spec['path']


def test_a_lease_path_naming_a_directory_is_the_file_in_it(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}
    with open_board(dict(spec, create=True)) as b:
        b.upsert_item(number=1, title='free', status='Ready')
    (tmp_path / 'old-leases').mkdir()
    out, doc = status(tmp_path, {'dispatch_board': spec, 'dispatch_lease_backend': 'sqlite',
                                 'dispatch_lease_path': str(tmp_path / 'old-leases')})
    where = str(tmp_path / 'old-leases' / 'leases.sqlite3')
    assert doc['single_controller'][1] == {'what': 'lease', 'backend': 'sqlite', 'where': where}
    assert 'deprecated' not in doc['lease_store'] and 'deprecated' not in out


def test_shared_stores_are_not_named(tmp_path):
    """A PostgreSQL lease store and a board that is not a file: nothing is single-controller.
    The board here is a GitHub board nobody can reach: status reports it unreadable (plan mode
    reports, D5) and still writes the JSON."""
    board = {'kind': 'github', 'owner': 'fleet', 'project': 1, 'token': 'x', 'api_url': 'http://127.0.0.1:9/graphql'}
    out, doc = status(tmp_path, {'dispatch_board': board, 'dispatch_lease_backend': 'postgres',
                                 'dispatch_lease_dsn': 'host=db.example user=fleet password=Pw-5scope dbname=ledger'})
    assert doc['single_controller'] == []
    assert 'single-controller only: the' not in out
    assert doc['lease_store'] == dict(doc['lease_store'], backend='postgres', shared=True,
                                      where='host=db.example user=fleet password=******** dbname=ledger')
    assert 'Pw-5scope' not in out + json.dumps(doc)


def test_a_postgresql_ledger_board_shares_its_database_as_the_lease_store_by_default(tmp_path):
    """With no lease setting, every dispatcher of a PostgreSQL ledger board takes its leases in that board's
    database: a second controller of the same board shares the lock with no configuration (D4). The board
    here is unreachable (status reports it, D5); the store is named without opening it, password redacted."""
    board = {'kind': 'ledger', 'dsn': 'postgresql://fleet:Pw-7ledger@127.0.0.1:9/fleet'}
    env_dsn = os.environ.pop('FLEET_DISPATCH_LEASE_DSN', None)
    try:
        out, doc = status(tmp_path, {'dispatch_board': board})
        assert doc['lease_store'] == dict(doc['lease_store'], backend='postgres', shared=True,
                                          where='postgresql://fleet:********@127.0.0.1:9/fleet')
        assert [s['what'] for s in doc['single_controller']] == []
        assert 'Pw-7ledger' not in out + json.dumps(doc)
        # an explicit choice still wins: sqlite beside the board's state
        out, doc = status(tmp_path / 'explicit', {'dispatch_board': board, 'dispatch_lease_backend': 'sqlite'})
        assert doc['lease_store']['backend'] == 'sqlite' and doc['lease_store']['where'].endswith('/leases.sqlite3')
        assert 'Pw-7ledger' not in out + json.dumps(doc)
    finally:
        if env_dsn is not None:
            os.environ['FLEET_DISPATCH_LEASE_DSN'] = env_dsn
