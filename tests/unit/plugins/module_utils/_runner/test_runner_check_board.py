# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet-runner check-board``: the runner opens its board as a run would, on real SQLite and PostgreSQL,
and says what failed and the fix when it cannot (what provision runs as each master before anything launches)."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.agent_env import parse_env_file as parse_environment_file
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import check as _check
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import update as _update

COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_runner.__file__)).parents[6]
REPO = pathlib.Path(__file__).resolve().parents[5]


def _wrapper_run(tmp_path, *words, env_extra=None):
    """The runner as the wrapper runs it (``--config`` before the subcommand), in a real process."""
    conf = tmp_path / 'runner.json'
    conf.write_text(json.dumps({'board_spec': str(tmp_path / 'board.json'), 'state_dir': str(tmp_path / 'state')}))
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT))
    env.pop('FLEET_BOARD_DSN', None)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, '-m', _update.MODULE, '--config', str(conf), '--branch', 'main', 'check-board']
                          + list(words), env=env, capture_output=True, text=True, timeout=60, check=False)
    return proc.returncode, json.loads(proc.stdout), proc


def test_a_board_the_runner_can_open_answers_ok_with_its_item_count(tmp_path, ledger_url):
    board = LedgerBoard(create=True, **ledger_url)
    board.upsert_item(number=1, title='one', status='Ready')
    board.upsert_item(number=2, title='two', status='Ready')
    board.close()
    spec = {'kind': 'ledger'}
    credentials = tmp_path / 'credentials.env'
    if 'path' in ledger_url:
        spec['path'] = ledger_url['path']
        credentials.write_text('')
    else:
        # the DSN only in the credentials file, escaped the way the worker role writes it
        credentials.write_text('FLEET_BOARD_DSN="%s"\n' % ledger_url['dsn'].replace('\\', '\\\\').replace('"', '\\"')
                               .replace('$', '\\$').replace('`', '\\`'))
    (tmp_path / 'board.json').write_text(json.dumps(spec))
    code, answer, proc = _wrapper_run(tmp_path, '--credentials', str(credentials))
    assert code == 0, proc.stderr
    assert answer['ok'] is True and answer['items'] == 2 and answer['error'] is None
    if 'dsn' in ledger_url:
        password = ledger_url['dsn'].split('@')[0].rsplit(':', 1)[-1]
        assert password not in proc.stdout + proc.stderr   # the DSN is redacted


def test_a_sqlite_file_the_worker_does_not_have_is_refused_with_the_postgresql_rule(tmp_path):
    (tmp_path / 'board.json').write_text(json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'controller.sqlite3')}))
    code, answer, _proc = _wrapper_run(tmp_path)
    assert code == _check.EXIT_UNREADABLE and answer['ok'] is False
    assert 'does not exist' in answer['error']
    assert 'a SQLite ledger serves only localhost workers: use PostgreSQL (roles/ledger) for remote workers' in answer['fix']
    assert not (tmp_path / 'controller.sqlite3').exists()   # checking never creates a second queue


def test_a_ledger_without_a_path_or_dsn_names_the_missing_secret(tmp_path):
    (tmp_path / 'board.json').write_text(json.dumps({'kind': 'ledger'}))
    code, answer, _proc = _wrapper_run(tmp_path)
    assert code == 1 and 'FLEET_BOARD_DSN' in answer['fix'] and 'PostgreSQL' in answer['fix']


def test_an_unreachable_postgresql_names_the_dsn_and_the_ledger_role(tmp_path):
    # port 9 (discard) on loopback: nothing listens there, the connection is refused
    (tmp_path / 'board.json').write_text(json.dumps({'kind': 'ledger'}))
    code, answer, proc = _wrapper_run(tmp_path, env_extra={'FLEET_BOARD_DSN': 'postgresql://fleet:s3cret-x@127.0.0.1:9/fleet'})
    assert code == 1 and answer['board'].startswith('postgresql://') and 's3cret-x' not in proc.stdout + proc.stderr
    assert 'ledger_allowed_networks' in answer['fix'] or 'psycopg' in answer['fix']


def test_a_missing_board_spec_says_to_provision(tmp_path):
    code, answer, _proc = _wrapper_run(tmp_path)
    assert code == 1 and 'worker_runner_board' in answer['fix']


def test_a_missing_python_package_names_the_package_to_install():
    assert 'python3-psycopg' in _check.fix_for({'kind': 'ledger', 'dsn': 'postgresql://x'},
                                               'a PostgreSQL ledger needs the Python package psycopg (version 3)')
    assert 'python3-requests' in _check.fix_for({'kind': 'github'}, 'the GitHub board needs the Python library "requests"')
    assert 'FLEET_GITHUB_TOKEN' in _check.fix_for({'kind': 'github'}, 'no GitHub token: set the board option "token"')


def test_the_environment_file_reader_undoes_the_roles_quoting():
    value = 'sentinel-7f3a "quoted" $HOME \\back `tick` end'
    escaped = value.replace('\\', '\\\\').replace('"', '\\"').replace('$', '\\$').replace('`', '\\`')
    text = '# managed\n\nFLEET_A="%s"\nFLEET_EMPTY=""\nPLAIN= bare \nQUOTED=\'$literal\'\n' % escaped
    assert parse_environment_file(text) == {'FLEET_A': value, 'FLEET_EMPTY': '', 'PLAIN': 'bare', 'QUOTED': '$literal'}


def test_an_installed_collection_reports_its_manifest_version(tmp_path):
    (tmp_path / 'MANIFEST.json').write_text(json.dumps({'collection_info': {'namespace': 'fleet', 'version': '9.8.7'}}))
    assert _update.installed_version(str(tmp_path)) == '9.8.7'
    (tmp_path / 'galaxy.yml').write_text('version: 1.2.3\n')
    assert _update.installed_version(str(tmp_path)) == '1.2.3'
