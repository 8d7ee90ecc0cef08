# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent's environment holds no board secret; argv-mode briefs the kernel would refuse are refused first (issue 14).

The runner runs for real (a subprocess) with an agent that dumps its whole environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.agent_env import agent_environment, parse_env_file
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import update as _update

from collection_path import collection_root

TOKEN = 'ghp_board_token_never_for_the_agent'
DSN = 'postgresql://fleet:dsn-pass-word@db.example/fleet'
DUMP = ('import json, os, sys; sys.stdin.read() if not sys.argv[1:] else None; '
        'open(os.environ["DUMP_TO"], "w").write(json.dumps(dict(os.environ)))')


def test_agent_environment_drops_board_secrets_by_name_and_by_value():
    environ = {'PATH': '/usr/bin', 'HOME': '/home/m', 'FLEET_GITHUB_TOKEN': TOKEN, 'GITHUB_TOKEN': TOKEN,
               'FLEET_BOARD_DSN': DSN, 'COPY_OF_IT': 'x' + TOKEN, 'PGPASSWORD': 'dsn-pass-word', 'LANG': 'C.UTF-8'}
    env = agent_environment(environ, secrets=[TOKEN, DSN, 'dsn-pass-word'], agent_env={'EDITOR': 'true'},
                            credentials={'ANTHROPIC_API_KEY': 'sk-agent', 'GH_TOKEN': 'ghp_merge_identity'},
                            fleet={'FLEET_ITEM': '7'})
    assert env == {'PATH': '/usr/bin', 'HOME': '/home/m', 'LANG': 'C.UTF-8', 'EDITOR': 'true',
                   'ANTHROPIC_API_KEY': 'sk-agent', 'GH_TOKEN': 'ghp_merge_identity', 'FLEET_ITEM': '7'}


@pytest.mark.parametrize('name', ['FLEET_BOARD_DSN', 'FLEET_LEDGER_DSN', 'FLEET_DISPATCH_LEASE_DSN', 'FLEET_GITHUB_TOKEN',
                                  'FLEET_WEBHOOK_SECRET', 'FLEET_SMTP_PASSWORD', 'FLEET_NOTIFY_URL', 'FLEET_ITEM_HINT'])
def test_no_fleet_name_of_the_runners_environment_reaches_the_agent(name):
    # A security review: credentials.env is the fleet's namespace, and a webhook or SMTP secret named FLEET_... passed
    # because every FLEET_* name did. The run's own FLEET_* facts come from the runner's ``fleet`` layer instead.
    env = agent_environment({'PATH': '/usr/bin', name: 'unknown-to-the-runner', 'FLEET_AGENT_SETENV': name},
                            secrets=[], agent_env={}, credentials={}, fleet={'FLEET_ITEM': '7'})
    assert env == {'PATH': '/usr/bin', 'FLEET_ITEM': '7'}


def test_the_credentials_file_format_roles_worker_writes_reads_back():
    text = '# managed\nANTHROPIC_API_KEY="sk-\\"q\\" \\$HOME \\`x\\` \\\\"\nPLAIN=value\n\n'
    assert parse_env_file(text) == {'ANTHROPIC_API_KEY': 'sk-"q" $HOME `x` \\', 'PLAIN': 'value'}
    with pytest.raises(ValueError, match='line 1'):
        parse_env_file('not an assignment')


@pytest.fixture
def runner(tmp_path):
    ledger = tmp_path / 'l.sqlite3'
    board = LedgerBoard(path=str(ledger), create=True)
    board.upsert_item(number=7, title='t', body='b', status='Ready')
    (tmp_path / 'board.json').write_text(json.dumps({'kind': 'ledger', 'path': str(ledger)}))
    creds = tmp_path / 'agent-credentials.env'

    def run(agent, body=None, creds_mode=0o600):
        if body is not None:
            board.upsert_item(number=7, body=body)
        creds.write_text('ANTHROPIC_API_KEY="sk-agent-own"\n')
        os.chmod(str(creds), creds_mode)
        (tmp_path / 'runner.json').write_text(json.dumps({'agent_credentials': str(creds)}))
        env = dict(os.environ, PYTHONPATH=str(_root()), DUMP_TO=str(tmp_path / 'env.json'), FLEET_AGENT_SETENV='DUMP_TO',
                   FLEET_GITHUB_TOKEN=TOKEN, GITHUB_TOKEN=TOKEN, FLEET_DISPATCH_LEASE_DSN=DSN, SOME_COPY=TOKEN)
        env.pop('FLEET_RUNNER_REEXEC', None)
        argv = [sys.executable, '-m', _update.MODULE, '--item', '7', '--board-spec', str(tmp_path / 'board.json'),
                '--state-dir', str(tmp_path / 'state'), '--workdir', str(tmp_path), '--no-self-update',
                '--config', str(tmp_path / 'runner.json'), '--agent-command', json.dumps(agent)]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)

    run.board, run.tmp = board, tmp_path
    yield run
    board.close()


def _root():
    import pathlib
    here = pathlib.Path(__file__).resolve()
    return collection_root(here.parents[6])


def test_an_agent_that_dumps_its_environment_sees_no_board_secret(runner):
    proc = runner([sys.executable, '-c', DUMP])
    dumped = json.loads((runner.tmp / 'env.json').read_text())
    text = json.dumps(dumped)
    assert TOKEN not in text and 'dsn-pass-word' not in text, proc.stderr
    assert dumped['ANTHROPIC_API_KEY'] == 'sk-agent-own' and dumped['FLEET_ITEM'] == '7' and dumped['PATH']


def test_a_group_readable_agent_credentials_file_is_refused_before_the_start(runner):
    proc = runner([sys.executable, '-c', DUMP], creds_mode=0o640)
    assert 'mode 0600' in proc.stderr and not (runner.tmp / 'env.json').exists()
    assert markers_of(runner.board.get(7)) == []            # no start marker: no attempt spent


@pytest.mark.parametrize('word', ['{brief}', '--prompt={brief}'])
def test_a_brief_in_argv_is_refused_before_anything_is_posted(runner, word):
    """``{brief}`` put the private brief in the agent's /proc/PID/cmdline, which every user of the worker reads: the
    runner refuses such a command as a configuration error, before a start marker, and names the fix."""
    proc = runner([sys.executable, '-c', DUMP, word], body='private text')
    assert 'configuration error, nothing posted' in proc.stderr and '{brief_file}' in proc.stderr, proc.stderr
    assert markers_of(runner.board.get(7)) == [] and not (runner.tmp / 'env.json').exists()


def test_the_agent_environment_is_an_allow_list():
    """Issue 14 item 3: a credential the operator put in credentials.env under any name does not reach the agent;
    PATH, HOME, the locale and the launch's non-secret setenv names (FLEET_AGENT_SETENV) do; no FLEET_* name does."""
    environ = {'PATH': '/usr/bin', 'HOME': '/home/m', 'LC_ALL': 'C.UTF-8', 'ANTHROPIC_API_KEY': 'sk-in-credentials-env',
               'AWS_SECRET_ACCESS_KEY': 'aws-secret', 'SOME_OTHER': 'x', 'FLEET_ITEM': '7', 'FAKE_AGENT_MODE': 'claim',
               'FLEET_AGENT_SETENV': 'FAKE_AGENT_MODE,GH_TOKEN', 'GH_TOKEN': TOKEN, 'FLEET_GITHUB_TOKEN': TOKEN,
               'FLEET_COPY': 'y' + TOKEN}
    env = agent_environment(environ, secrets=[TOKEN], credentials={'ANTHROPIC_API_KEY': 'sk-agent-own'})
    assert env == {'PATH': '/usr/bin', 'HOME': '/home/m', 'LC_ALL': 'C.UTF-8', 'FAKE_AGENT_MODE': 'claim',
                   'ANTHROPIC_API_KEY': 'sk-agent-own'}


def test_the_runner_makes_itself_undumpable_so_the_agent_cannot_read_its_environment():
    """issue 14: the bed showed the agent reading FLEET_GITHUB_TOKEN from /proc/<runner>/environ (same
    user); the runner's entry point sets PR_SET_DUMPABLE to 0 (tests/integration/test_sandbox.py shows it
    refused in a real unit)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner import spawn
    calls = []
    assert spawn.keep_environment_private(prctl=lambda *a: calls.append(a) or 0) is True
    assert calls == [(4, 0, 0, 0, 0)]
    assert spawn.keep_environment_private(prctl=lambda *a: -1) is False
    main = (__import__("pathlib").Path(spawn.__file__).parent / '__main__.py').read_text()
    assert main.index('keep_environment_private()') < main.index('main())'), 'set before the runner reads anything'
