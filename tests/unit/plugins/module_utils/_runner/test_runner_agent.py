# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent CLI as the runner finds it: missing (the master goes dark, the item is untouched) and stalled.

A CLI that disappears after provision (an npm prefix wiped, a PATH entry gone) must darken its master
(capacity ``agent_missing``), never fail the item: before, ``FileNotFoundError: 'claude'`` became a
failure marker each sweep and parked the item after three. A silent agent is stopped by the stall limit
with its own close-out, neither a crash nor the wall-clock limit. Real runner processes, a real ledger.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import START_FILE
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import update as _update
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.spawn import missing_agent, wait_agent
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.exits import EXIT_NOOP
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.stall import LINE_MAX, Progress
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import closeout as _closeout
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import (
    DEFAULT_UNKNOWN_RESET_COOLDOWN, agent_missing_state, dump_state, is_dark, load_state, make_state)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import announce as _announce
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import dark_why
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of

REPO = pathlib.Path(__file__).resolve().parents[5]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_runner.__file__)).parents[6]
UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def bed(tmp_path):
    """Item #7 Ready on a SQLite ledger, a state dir, a run PATH with only ``bin/`` and the system's."""
    board = LedgerBoard(create=True, path=str(tmp_path / 'ledger.sqlite3'))
    board.upsert_item(number=7, title='Make the widget spin', body='It should spin.', status='Ready')
    spec = tmp_path / 'board.json'
    spec.write_text(json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}))
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'runner.json').write_text(json.dumps({'agent': 'claude'}))

    class Bed(object):
        pass

    b = Bed()
    b.board, b.tmp, b.state, b.bin = board, tmp_path, tmp_path / 'state', tmp_path / 'bin'
    b.capacity = b.state / 'capacity.json'
    b.path = '%s:/usr/bin:/bin' % b.bin

    def run(*more, invocation='inv-1', extra_env=None):
        argv = [sys.executable, '-m', _update.MODULE, '--item', '7', '--board-spec', str(spec), '--state-dir', str(b.state),
                '--workdir', str(tmp_path), '--no-self-update', '--config', str(tmp_path / 'runner.json')] + list(more)
        env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), PATH=b.path, INVOCATION_ID=invocation,
                   FAKE_AGENT_MODE='claim', FAKE_AGENT_LOG=str(tmp_path / 'agent.log'),
                   FAKE_AGENT_PIDFILE=str(tmp_path / 'agent.pid'), **(extra_env or {}))
        env.pop('FLEET_RUNNER_REEXEC', None)
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)

    def install(name='claude', shebang=None):
        """Put an agent called ``name`` on the run PATH: the fake agent behind a shim."""
        shim = b.bin / name
        shim.write_text((shebang or '#!%s' % sys.executable) + '\n'
                        'import runpy, sys\nsys.argv[0] = %r\nrunpy.run_path(%r, run_name="__main__")\n'
                        % (str(FAKE_AGENT), str(FAKE_AGENT)))
        shim.chmod(0o755)
        return shim

    b.run, b.install = run, install
    b.kinds = lambda: [m.kind for m in markers_of(board.get(7))]
    try:
        yield b
    finally:
        board.close()


def _state(bed):
    state, why = load_state(bed.capacity.read_text())
    assert why == ''
    return state


def test_a_missing_agent_darkens_its_master_every_sweep_and_never_touches_the_item(bed):
    """Three sweeps' runs against a master whose ``claude`` is gone: each refuses before its start marker
    (no failure, no attempt, the item never parks), records why, and darkens the master (agent_missing)."""
    for sweep in range(3):
        proc = bed.run(invocation='inv-%d' % sweep)
        assert proc.returncode == _runner.EXIT_START_LOST, proc.stderr
        assert "the agent CLI 'claude' is not on the run PATH" in proc.stderr and 'fleet.dispatch.worker' in proc.stderr
        assert 'no attempt is spent' in proc.stderr
    assert bed.kinds() == [], 'nothing reached the board'
    verdict = evaluate(bed.board.get(7), now=_dt.datetime.now(UTC))
    assert (verdict.reason, verdict.attempts) == ('eligible', 0)
    record = json.loads((bed.state / 'runs' / 'task-7' / START_FILE).read_text())
    assert record['started'] is False and record['cause'] == 'agent_missing' and record['invocation_id'] == 'inv-2'
    state = _state(bed)
    assert state['source'] == 'agent_missing' and state['reset_at'] is None and state['unit'] == 'task-7'
    assert str(bed.bin) in state['message']
    assert is_dark(state, _dt.datetime.now(UTC))[0]
    assert not (bed.tmp / 'agent.log').exists(), 'no agent ran'


def test_the_runtime_an_npm_cli_runs_on_is_looked_for_too(bed):
    """An npm CLI is a ``#!/usr/bin/env node`` script: without ``node`` on the run PATH it cannot start either."""
    bed.install(shebang='#!/usr/bin/env fleet-test-no-such-node')
    proc = bed.run()
    assert proc.returncode == _runner.EXIT_START_LOST, proc.stderr
    assert "'fleet-test-no-such-node', which the agent CLI 'claude' runs on," in proc.stderr
    assert _state(bed)['source'] == 'agent_missing' and bed.kinds() == []


def test_an_installed_agent_clears_the_dark_state_at_the_next_run_and_at_install(bed):
    assert bed.run().returncode == _runner.EXIT_START_LOST
    bed.install()
    # the installer's verification (fleet-runner --installed, as provision calls it) clears it
    proc = bed.run('--installed')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {'cleared': True, 'source': None}
    assert not bed.capacity.exists()
    # a run finds it too, and runs
    bed.capacity.write_text(dump_state(make_state('agent_missing', written_at=T0, message='gone')))
    proc = bed.run()
    assert proc.returncode == 10, proc.stderr       # claim: a no-op close-out
    assert bed.kinds() == ['start', 'noop'] and not bed.capacity.exists()


def test_installed_leaves_the_state_while_the_agent_is_still_missing(bed):
    bed.capacity.parent.mkdir(parents=True)
    bed.capacity.write_text(dump_state(make_state('agent_missing', written_at=T0, message='gone')))
    proc = bed.run('--installed')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {'cleared': False, 'source': 'agent_missing'}


class _VanishingSpawner(object):
    """The agent was there at the look and is gone at the spawn (a reinstall in between)."""

    def spawn(self, argv, **_kw):
        raise FileNotFoundError(2, 'No such file or directory', argv[0])


def test_an_agent_that_vanishes_at_the_spawn_is_a_capacity_close_out_not_an_attempt(tmp_path):
    board = LedgerBoard(create=True, path=str(tmp_path / 'ledger.sqlite3'))
    board.upsert_item(number=7, title='t', body='b', status='Ready')
    config = _runner.RunConfig(number=7, state_dir=str(tmp_path / 'state'), agent_command=[sys.executable, '-V'],
                               workdir=str(tmp_path), host='w1', master='m1')
    lines = []
    run = _runner.Run(config, board, spawner=_VanishingSpawner(), reraise=lines.append, log=lines.append,
                      install_signals=False, environ=dict(os.environ))
    assert run.run() == _closeout.EXIT['capacity']
    board = LedgerBoard(path=str(tmp_path / 'ledger.sqlite3'))   # the run closed its own
    item = board.get(7)
    last = markers_of(item)[-1]
    assert last.kind == 'capacity' and last.fields['source'] == 'agent_missing' and last.fields['agent'] == sys.executable
    assert evaluate(item, now=_dt.datetime.now(UTC)).attempts == 0
    state, _why = load_state((tmp_path / 'state' / 'capacity.json').read_text())
    assert state['source'] == 'agent_missing'
    board.close()


def test_missing_agent_names_what_is_missing(tmp_path):
    script = tmp_path / 'cli'
    script.write_text('#!/usr/bin/env -S fleet-test-node --flag\n')
    script.chmod(0o755)
    assert missing_agent('cli', str(tmp_path)) == 'fleet-test-node'
    assert missing_agent('nope', str(tmp_path)) == 'nope'
    assert missing_agent(sys.executable, '') == ''
    assert missing_agent('sh', '/usr/bin:/bin') == ''


# --- the dark state, its words, its announcement -------------------------------------------------

def test_agent_missing_is_dark_for_the_cooldown_and_keeps_stronger_evidence():
    state = agent_missing_state(None, now=T0, message='no claude', unit='task-7')
    loaded, why = load_state(dump_state(state))
    assert why == '' and loaded['source'] == 'agent_missing' and loaded['reset_at'] is None
    dark, source, until, text = is_dark(loaded, T0 + _dt.timedelta(minutes=1))
    assert dark and source == 'agent_missing' and until is None and 'fleet.dispatch.worker' in text
    assert not is_dark(loaded, T0 + DEFAULT_UNKNOWN_RESET_COOLDOWN)[0]
    revoked = make_state('revoked', written_at=T0, message='key revoked')
    assert agent_missing_state(revoked, now=T0, message='x') is None
    assert 'installs it' in dark_why('agent_missing', None)


def test_agent_missing_is_announced_while_dark_and_not_after():
    masters = [{'worker': 'w1', 'master': 'm1'}]
    capacity = [{'target': {'worker': 'w1', 'master': 'm1'}, 'status': 'ok', 'source': 'agent_missing', 'dark': True,
                 'why': 'the agent CLI claude is not on the run PATH'}]
    out = _announce.cycle([], masters=masters, capacity=capacity, surveyed=None, now=T0)
    assert [(s['kind'], s['title']) for s in out['stalls']] == [('agent_missing', '[fleet] agent CLI missing: w1/m1')]
    capacity[0].update(source=None, dark=False)
    assert _announce.cycle([], masters=masters, capacity=capacity, surveyed=None, now=T0)['stalls'] == []


# --- the stall limit ------------------------------------------------------------------------------

def test_a_silent_agent_is_stopped_by_the_stall_limit_with_its_own_close_out(bed):
    """The fake agent prints one line and sleeps: the stall limit (1 s) stops it, long before the wall-clock
    limit (60 s). Before any turn and with nothing on the forge it is a network fault (D7): a retry that says
    ``stopped: stall``, no attempt spent -- neither a crash nor the run time limit."""
    bed.install()
    proc = bed.run('--stall-timeout', '1', '--timeout', '60',
                   '--agent-command', json.dumps([sys.executable, str(FAKE_AGENT), '--mode', 'hang']))
    assert proc.returncode == _closeout.EXIT['retry'], proc.stderr
    item = bed.board.get(7)
    last = markers_of(item)[-1]
    assert last.kind == 'retry' and last.fields['cause'] == 'stall' and last.fields['stall_timeout'] == 1
    assert last.fields['signature'] == 'stall' and last.fields['step'] == 1
    assert last.text.startswith('stopped: stall') and 'nothing new for 1s before any turn' in last.text
    assert evaluate(item, now=_dt.datetime.now(UTC)).attempts == 0
    pid = int((bed.tmp / 'agent.pid').read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_agent_silent_after_a_turn_is_a_stall_failure(bed):
    """The agent made a tool call (a turn: usage and a tool_use in its stream) and then fell silent: the
    stall limit stops it and it is a failure of its own cause, an attempt spent."""
    bed.install()
    proc = bed.run('--stall-timeout', '1', '--timeout', '60',
                   '--agent-command', json.dumps([sys.executable, str(FAKE_AGENT), '--mode', 'spend']),
                   extra_env={'FAKE_AGENT_HANG_AFTER': '1'})
    assert proc.returncode == _closeout.EXIT['failure'], proc.stderr
    item = bed.board.get(7)
    last = markers_of(item)[-1]
    assert last.kind == 'failure' and last.fields['cause'] == 'stall' and last.fields['stall_timeout'] == 1
    assert 'printed nothing for 1s' in last.text and 'time limit' not in last.text.replace('not the run time limit', '')
    assert evaluate(item, now=_dt.datetime.now(UTC)).attempts == 1


def test_an_agent_that_keeps_printing_is_not_stalled(tmp_path):
    capture = tmp_path / 'capture.log'
    code = 'import sys, time\nfor i in range(8):\n    print(i, flush=True)\n    time.sleep(0.25)\n'
    with open(capture, 'ab') as out:
        proc = subprocess.Popen([sys.executable, '-c', code], stdout=out, start_new_session=True)
    assert wait_agent(proc, capture_path=str(capture), stall_timeout=1.0) == (0, '')
    with open(capture, 'ab') as out:
        proc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], stdout=out, start_new_session=True)
    rc, why = wait_agent(proc, capture_path=str(capture), stall_timeout=0.5, grace=2)
    assert why == 'stall' and rc is not None and rc < 0


RECONNECT = '{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}'


def test_an_agent_repeating_one_line_is_stalled(tmp_path):
    """Codex CLI with its network gone prints the same line every few seconds forever (tests/corpus/captures,
    codex-refused): the capture grows, nothing happens, and the stall limit stops it all the same."""
    capture = tmp_path / 'capture.log'
    code = 'import sys, time\nwhile True:\n    print(sys.argv[1], flush=True)\n    time.sleep(0.1)\n'
    with open(capture, 'ab') as out:
        proc = subprocess.Popen([sys.executable, '-c', code, RECONNECT], stdout=out, start_new_session=True)
    rc, why = wait_agent(proc, capture_path=str(capture), stall_timeout=1.0, grace=2)
    assert why == 'stall' and rc is not None and rc < 0
    assert capture.read_text().count('Reconnecting') >= 5, 'it kept printing until stopped'


def test_progress_is_a_line_not_printed_before():
    progress = Progress()
    assert progress.feed(b'{"type":"turn.started"}\n') is True
    assert progress.feed(b'retry 1/5\n') is True
    assert progress.feed(b'retry 1/5\r\n') is False, 'the same line'
    assert progress.feed(b'retry 2/5\n') is True, 'a counter moved'
    assert progress.feed(b'{"type":"item.') is False, 'a partial line waits'
    assert progress.feed(b'completed"}\n') is True
    assert progress.feed(b'\n  \n') is False
    assert progress.feed(b'x' * (LINE_MAX + 1)) is True, 'a huge line is progress unread'


def test_the_three_ways_a_run_stops_have_three_close_outs():
    outcome = read_capture('thinking...\n', 'claude', exit_code=-15).outcome(-15)
    common = dict(number=7, started_at=T0, now=T0 + _dt.timedelta(minutes=5))
    timeout = _closeout.decide(outcome, None, timed_out=True, exit_code=-15, **common)
    stall = _closeout.decide(outcome, None, stalled=600, exit_code=-15, **common)
    crash = _closeout.decide(read_capture('Traceback ...\n', 'claude', exit_code=1).outcome(1), None, exit_code=1, **common)
    assert [d.fields.get('cause') for d in (timeout, stall, crash)] == ['timeout', 'stall', 'exit_code']
    assert len({timeout.text, stall.text, crash.text}) == 3
    assert 'printed nothing for 600s' in stall.text and stall.kind == 'failure'


# --- the item's model and effort as the CLI's own arguments ----------------------------------------------------

@pytest.mark.parametrize('agent, expected', [
    ('codex', ['exec', '-m', 'gpt-5-codex', '-c', 'model_reasoning_effort=high', '--json', '-',
               '--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check']),
    ('claude', ['--model', 'gpt-5-codex', '-p', '--output-format', 'json', '--dangerously-skip-permissions']),
    ('gemini', ['-m', 'gpt-5-codex', '--output-format', 'json', '-p', 'Follow the brief given on standard input.', '--yolo']),
], ids=['codex', 'claude', 'gemini'])
def test_the_runner_gives_the_cli_the_items_model_and_effort_as_arguments(bed, monkeypatch, agent, expected):
    """The launch sets AGENT_MODEL/AGENT_EFFORT for a routed item; the runner passes them as the CLI's own arguments
    (Codex CLI reads no variable for either). The fake agent logs the argv it was started with."""
    (bed.tmp / 'runner.json').write_text(json.dumps({'agent': agent}))
    bed.install(agent)
    monkeypatch.setenv('AGENT_MODEL', 'gpt-5-codex')
    monkeypatch.setenv('AGENT_EFFORT', 'high')
    bed.run()
    entry = json.loads((bed.tmp / 'agent.log').read_text().splitlines()[0])
    assert entry['argv'][1:] == expected


def test_a_model_that_is_not_a_plain_name_never_reaches_the_command_line(bed, monkeypatch):
    (bed.tmp / 'runner.json').write_text(json.dumps({'agent': 'codex'}))
    bed.install('codex')
    monkeypatch.setenv('AGENT_MODEL', '--cd=/')
    monkeypatch.setenv('AGENT_EFFORT', 'high')
    proc = bed.run()
    entry = json.loads((bed.tmp / 'agent.log').read_text().splitlines()[0])
    assert entry['argv'][1:] == ['exec', '-c', 'model_reasoning_effort=high', '--json', '-',
                                 '--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check']
    assert "the item's model '--cd=/' is not a plain name" in proc.stderr


FAKE_BWRAP = '''#!/bin/sh
# records its arguments, then runs what follows "--" (the confinement itself is tested on the bed)
printf '%s\\n' "$@" > "$(dirname "$0")/../bwrap-argv.txt"
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
'''


def test_the_agent_runs_under_bwrap_with_the_state_and_config_hidden(bed):
    """worker_runner_agent_sandbox: bwrap -- the runner wraps the agent in bwrap: its state directory and
    its configuration directory are empty to the agent; the run's output directory comes back writable."""
    bed.install()
    bwrap = bed.bin / 'bwrap'
    bwrap.write_text(FAKE_BWRAP)
    bwrap.chmod(0o755)
    conf = bed.tmp / 'conf'
    conf.mkdir()
    (conf / 'runner.json').write_text(json.dumps({'agent': 'claude', 'agent_sandbox': 'bwrap'}))
    proc = bed.run('--config', str(conf / 'runner.json'))
    assert proc.returncode == EXIT_NOOP, proc.stderr    # the fake agent claims without a merge
    args = (bed.tmp / 'bwrap-argv.txt').read_text().split('\n')
    out = str(bed.state / 'runs' / 'task-7' / 'out')
    assert args[:4] == ['--die-with-parent', '--dev-bind', '/', '/'], args
    assert ['--tmpfs', str(bed.state)] == args[args.index(str(bed.state)) - 1:args.index(str(bed.state)) + 1]
    assert ['--tmpfs', str(conf)] == args[args.index(str(conf)) - 1:args.index(str(conf)) + 1], 'the config directory too'
    assert ['--bind', out, out] == args[args.index('--bind'):args.index('--bind') + 3]
    assert bed.kinds() == ['start', 'noop']


def test_bwrap_asked_for_and_absent_darkens_the_master_and_spends_nothing(bed):
    bed.install()
    (bed.tmp / 'runner.json').write_text(json.dumps({'agent': 'claude', 'agent_sandbox': 'bwrap'}))
    proc = bed.run()
    assert proc.returncode == _runner.EXIT_START_LOST, proc.stderr
    assert 'the agent sandbox bwrap is not on the run PATH' in proc.stderr and 'install bubblewrap' in proc.stderr
    assert bed.kinds() == []
    assert _state(bed)['source'] == 'agent_missing'


def test_a_sandbox_that_would_hide_the_workspace_refuses_before_the_start_marker(bed):
    bed.install()
    (bed.bin / 'bwrap').write_text(FAKE_BWRAP)
    (bed.bin / 'bwrap').chmod(0o755)
    (bed.tmp / 'runner.json').write_text(json.dumps({'agent': 'claude', 'agent_sandbox': 'bwrap'}))
    proc = bed.run()    # the config directory is the workspace's parent here
    assert proc.returncode == _runner.EXIT_START_LOST and 'cannot hide' in proc.stderr, proc.stderr
    assert bed.kinds() == [], 'no start marker, no attempt'


def test_an_unknown_agent_sandbox_is_a_configuration_error(bed):
    bed.install()
    (bed.tmp / 'runner.json').write_text(json.dumps({'agent': 'claude', 'agent_sandbox': 'jail'}))
    proc = bed.run()
    assert proc.returncode == _runner.EXIT_USAGE and "agent_sandbox must be one of none, bwrap, got 'jail'" in proc.stderr
    assert bed.kinds() == []


# --- a worker offering several agent profiles ----------------------------------------------------------------

def test_the_runner_runs_the_profile_the_run_was_placed_for_with_that_profiles_environment(bed, monkeypatch):
    """The runner config offers claude (provisioned, with its own arguments) and gemini; the launch names gemini
    (FLEET_AGENT_PROFILE): the gemini CLI runs, with the gemini profile's argv and not claude's arguments."""
    (bed.tmp / 'runner.json').write_text(json.dumps({'agent': 'claude', 'agents': ['claude', 'gemini'],
                                                     'agent_args': ['--claude-only'], 'agent_envs': {'gemini': {}}}))
    bed.install('claude')
    bed.install('gemini')
    monkeypatch.setenv('FLEET_AGENT_PROFILE', 'gemini')
    proc = bed.run()
    entry = json.loads((bed.tmp / 'agent.log').read_text().splitlines()[0])
    assert 'starting the agent: gemini' in proc.stderr
    assert entry['argv'][1:] == ['--output-format', 'json', '-p', 'Follow the brief given on standard input.', '--yolo']
    monkeypatch.delenv('FLEET_AGENT_PROFILE')
    (bed.tmp / 'agent.log').unlink()
    bed.board.upsert_item(number=7, state='reopened')
    proc = bed.run(invocation='inv-2')
    entry = json.loads((bed.tmp / 'agent.log').read_text().splitlines()[0])
    assert 'starting the agent: claude' in proc.stderr
    assert entry['argv'][1:] == ['-p', '--output-format', 'json', '--dangerously-skip-permissions', '--claude-only']


def test_the_runner_refuses_a_profile_its_worker_does_not_offer_and_posts_nothing(bed, monkeypatch):
    (bed.tmp / 'runner.json').write_text(json.dumps({'agent': 'claude', 'agents': ['claude']}))
    bed.install('claude')
    bed.install('codex')
    monkeypatch.setenv('FLEET_AGENT_PROFILE', 'codex')
    proc = bed.run()
    assert proc.returncode == _runner.EXIT_USAGE
    assert "placed this run for the agent profile 'codex'" in proc.stderr
    assert bed.kinds() == [] and not (bed.tmp / 'agent.log').exists()


# --- the budget's log line --------------------------------------------------------------------------------------

@pytest.mark.parametrize('agent, says, never', [
    ('claude', ['budget tokens 1000, usd 0.5', 'checked at every model response the claude CLI reports'], ['tokens only']),
    ('codex', ['the codex CLI states no cost: budgeted by tokens only', 'at each turn it reports'], []),
    ('gemini', ['the gemini CLI states no cost: budgeted by tokens only', 'only in its final result: checked there, after the work'], []),
    ('qwen', ['the qwen CLI states no cost: budgeted by tokens only', 'checked at every model response'], []),
], ids=['claude', 'codex', 'gemini', 'qwen'])
def test_the_runner_says_how_a_budget_is_held_for_its_cli(agent, says, never):
    """A USD limit on a CLI that states no cost is said to be held by tokens only; a CLI whose usage comes only in its
    final result is said to be checked after the work (it stops nothing)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import enforceable, parse_budget
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.profiles import profile
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.supervise import budget_note
    configured = parse_budget({'tokens': 1000, 'usd': 0.5})
    line = budget_note(configured, enforceable(configured, profile(agent).states_cost), agent)
    assert all(words in line for words in says), line
    assert not any(words in line for words in never), line
    assert budget_note(parse_budget({'tokens': 1000}), parse_budget({'tokens': 1000}), agent).count('tokens only') == 0
