# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner as a real program against a real ledger board (SQLite and PostgreSQL) and a real fake agent.

Each behaviour of the fake agent CLI must end with exactly the right terminal marker, the
attempt count the seed says (read back through the shipped ``_eligibility.evaluate``), and the
right capacity state file (D2, D7, D8, D12, D16). Stops are real signals to a real process.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import closeout as _closeout
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import exits
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import START_FILE
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import update as _update
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capacity import dump_state, load_state, make_state
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._host.stops import write_stop_note
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import format_time
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of

REPO = pathlib.Path(__file__).resolve().parents[5]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_runner.__file__)).parents[6]  # the symlinked collection root, unresolved
UTC = _dt.timezone.utc


def _now():
    return _dt.datetime.now(UTC)


@pytest.fixture
def world(ledger_url, tmp_path):
    """A ledger with item #7 (Ready), a board spec file, a state dir, and a way to run the runner."""
    spec = dict(ledger_url, kind='ledger')
    board = LedgerBoard(create=True, **ledger_url)
    board.upsert_item(number=7, title='Make the widget spin', body='It should spin. Closes nothing by itself.', status='Ready')
    spec_file = tmp_path / 'board.json'
    spec_file.write_text(json.dumps(spec))
    state = tmp_path / 'state'

    class World(object):
        pass

    w = World()
    w.board, w.spec, w.spec_file, w.state, w.tmp = board, spec, spec_file, state, tmp_path
    w.capacity = state / 'capacity.json'

    def env(mode, **more):
        e = dict(os.environ)
        e.update({'PYTHONPATH': str(COLLECTIONS_ROOT), 'FAKE_AGENT_MODE': mode, 'FAKE_AGENT_BOARD': json.dumps(spec),
                  'FAKE_AGENT_LOG': str(tmp_path / 'agent.log'), 'FAKE_AGENT_PIDFILE': str(tmp_path / 'agent.pid')})
        e.pop('FLEET_RUNNER_REEXEC', None)
        e.update(more)
        return e

    def argv(item=7):
        return [sys.executable, '-m', _update.MODULE, '--item', str(item), '--board-spec', str(spec_file),
                '--state-dir', str(state), '--workdir', str(tmp_path), '--no-self-update',
                '--config', str(tmp_path / 'runner.json'),
                '--agent-command', json.dumps([sys.executable, str(FAKE_AGENT)])]

    (tmp_path / 'runner.json').write_text(json.dumps({}))

    def run(mode, item=7, **more):
        return subprocess.run(argv(item), env=env(mode, **more), capture_output=True, text=True, timeout=60, check=False)

    def start(mode, item=7, **more):
        return subprocess.Popen(argv(item), env=env(mode, **more), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def item(number=7):
        return board.get(number)

    def kinds(number=7):
        return [m.kind for m in markers_of(board.get(number))]

    w.run, w.start, w.item, w.kinds = run, start, item, kinds
    try:
        yield w
    finally:
        board.close()


# mode -> (exit code, markers, item state, eligibility reason, attempts, capacity source or None)
BEHAVIOURS = [
    ('merge', 0, ['start', 'success'], 'closed', 'done', 1, None),
    ('noisy', 0, ['start', 'success'], 'closed', 'done', 1, None),
    ('claim', 10, ['start', 'noop'], 'open', 'eligible', 1, None),
    ('fail', 11, ['start', 'failure'], 'open', 'eligible', 1, None),
    ('die503', 13, ['start', 'retry'], 'open', 'retry_wait', 0, None),
    ('ratelimit', 12, ['start', 'capacity'], 'open', 'eligible', 0, 'rate_limit'),
    ('revoked', 12, ['start', 'capacity'], 'open', 'eligible', 0, 'revoked'),
]


@pytest.mark.parametrize('mode,code,kinds,state,reason,attempts,source', BEHAVIOURS, ids=[b[0] for b in BEHAVIOURS])
def test_each_agent_behaviour_ends_with_the_right_marker(world, mode, code, kinds, state, reason, attempts, source):
    proc = world.run(mode)
    assert proc.returncode == code, proc.stderr
    item = world.item()
    assert [m.kind for m in markers_of(item)] == kinds
    assert item.state == state
    verdict = evaluate(item, now=_now())
    assert (verdict.reason, verdict.attempts) == (reason, attempts)
    # every marker of this run names the run; the close-out names its start as the board dated the start marker
    markers = markers_of(item)
    assert markers[0].fields['run'] == markers[-1].fields['run']
    assert markers[-1].fields['started_at'] == format_time(markers[0].at)
    if source is None:
        assert not world.capacity.exists()
    else:
        state_, why = load_state(world.capacity.read_text())
        assert why == '' and state_['source'] == source and state_['unit'] == 'task-7'
        if source == 'rate_limit':   # the provider's stated reset, never invented (D8)
            assert state_['reset_at'] == _dt.datetime(2099, 1, 1, tzinfo=UTC)
            assert markers[-1].fields['reset_at'] == '2099-01-01T00:00:00.000000Z'
        else:
            assert state_['reset_at'] is None
    closeout = json.loads((world.state / 'runs' / 'task-7' / 'closeout.json').read_text())
    assert closeout['kind'] == kinds[-1] and closeout['posted'] is True


def test_success_posts_the_comment_before_the_item_is_closed(world):
    """🔴 D12: the merge closed the item first; the success comment must still land (comment, then close)."""
    world.run('merge')
    item = world.item()
    success = markers_of(item)[-1]
    assert success.kind == 'success' and item.state == 'closed'
    closed = [e for e in item.events if e.kind == 'closed']
    assert len(closed) == 1          # the merge closed it; closing again is a no-op, not a second event
    assert success.fields['artifacts'] and success.fields['artifacts'][0].startswith('fake-pr/7/')


def test_an_older_merged_artifact_is_never_credited(world):
    """D16: a run that merged nothing is not credited with an earlier run's merge of the same item."""
    old = _now() - _dt.timedelta(hours=2)
    world.board.add_artifact('pr/old-1', created_at=old, merged=True, merged_at=old + _dt.timedelta(minutes=5), closes=[7])
    world.board.upsert_item(number=7, state='reopened')     # a human reopened it: not finished
    proc = world.run('claim')
    assert proc.returncode == 10, proc.stderr
    assert world.kinds()[-1] == 'noop'
    assert world.item().state == 'open'


def test_a_run_that_hit_a_quota_is_not_credited_with_an_older_merge(world):
    """D16's own story: one run merged nothing, hit a quota limit, and earned success for a previous run's PR."""
    old = _now() - _dt.timedelta(hours=1)
    world.board.add_artifact('pr/old-2', created_at=old, merged=True, merged_at=old, closes=[7])
    world.board.upsert_item(number=7, state='reopened')
    assert world.run('ratelimit').returncode == 12
    assert world.kinds()[-1] == 'capacity'


def test_the_next_clean_run_deletes_the_capacity_file_and_a_dirty_one_keeps_it(world):
    """D8: self-healing -- clean means zero exit AND no limit signature."""
    assert world.run('ratelimit').returncode == 12
    assert world.capacity.exists()
    assert world.run('fail').returncode == 11          # not clean: non-zero exit
    assert world.capacity.exists()
    assert world.run('claim').returncode == 10         # zero exit, no limit signature: clean
    assert not world.capacity.exists()
    evaluate_after = evaluate(world.item(), now=_now())
    assert evaluate_after.attempts == 2                # the capacity run did not spend an attempt (D8)


def test_a_clean_run_keeps_a_capacity_state_written_while_it_ran(world):
    """D8: a concurrent run's rate limit, written after this run started, is newer than this run's clean end."""
    later = _now() + _dt.timedelta(hours=1)     # stands for "written by another run while this one ran"
    world.capacity.parent.mkdir(parents=True, exist_ok=True)
    world.capacity.write_text(dump_state(make_state('rate_limit', written_at=later, reset_at=later + _dt.timedelta(hours=1))))
    proc = world.run('claim')
    assert proc.returncode == 10, proc.stderr
    state, _why = load_state(world.capacity.read_text())
    assert state['source'] == 'rate_limit'
    assert 'is kept' in proc.stderr


def test_a_zero_exit_with_a_trailing_limit_notice_is_not_clean(world):
    """D8: "clean" is a zero exit AND no limit signature -- a trailing notice must not delete a state still true."""
    assert world.run('ratelimit').returncode == 12
    proc = world.run('claim', FAKE_AGENT_TRAILER='Claude AI usage limit reached. Your limit will reset at 2099-01-01T00:00:00Z.')
    assert proc.returncode == 12, proc.stderr
    assert world.kinds()[-1] == 'capacity'
    state, _why = load_state(world.capacity.read_text())
    assert state['source'] == 'rate_limit'


def test_capacity_deaths_do_not_spend_the_budget(world):
    """D8: a fleet-wide outage must not burn three attempts per item and park the work."""
    for _dummy in range(4):
        assert world.run('ratelimit').returncode == 12
    verdict = evaluate(world.item(), now=_now(), max_attempts=3)
    assert verdict.attempts == 0 and verdict.reason != 'parked'


def test_the_retry_ladder_is_written_in_the_markers_then_spent(world):
    """D7: 30 s -> 2 min -> 8 min in the retry markers (the sweep honours not_before); then a failure."""
    steps = []
    for expected in (1, 2, 3):
        proc = world.run('die503')
        assert proc.returncode == 13, proc.stderr
        retry = markers_of(world.item())[-1]
        assert retry.kind == 'retry' and retry.fields['step'] == expected
        gap = retry.time('not_before') - _runner.parse_time(retry.fields['ended_at'])
        steps.append((retry.fields['delay_s'], round(gap.total_seconds())))
        assert retry.fields['facts'] == {'transient': True, 'not_hard_quota': True, 'zero_turns': True, 'no_artifact': True}
    assert [s[0] for s in steps] == list(_runner.DEFAULT_BACKOFF)
    proc = world.run('die503')
    assert proc.returncode == 11
    last = markers_of(world.item())[-1]
    assert last.kind == 'failure' and last.fields['cause'] == 'retries_spent'


def test_the_run_directory_is_cleared_at_start(world):
    """D17: a prior run's structured output cannot leak into this one."""
    out = world.state / 'runs' / 'task-7' / 'out'
    out.mkdir(parents=True)
    (out / 'blocker.json').write_text('{"reason": "stale, from an earlier run"}')
    world.run('claim')
    assert not (out / 'blocker.json').exists()
    assert json.loads((out / 'result.json').read_text())['status'] == 'merged'   # this run's own (false) claim
    run = json.loads((world.state / 'runs' / 'task-7' / 'run.json').read_text())
    assert run['item'] == 7 and run['brief_version'] == _runner.BRIEF_VERSION


@pytest.mark.parametrize('mode', ['claim', 'merge'])
def test_the_system_never_authors_the_agents_evidence(world, mode):
    """D17 🔴: a verdict synthesised from "a PR exists" is a rubber stamp. The agent's own
    result.json is left byte for byte as it wrote it (the claim run's evidence is empty and stays
    empty), and nothing the runner posts or records carries evidence in the agent's name."""
    world.run(mode)
    out = world.state / 'runs' / 'task-7' / 'out' / 'result.json'
    written = [json.loads(line) for line in (world.tmp / 'agent.log').read_text().splitlines()]
    result = json.loads(out.read_text())
    assert result['evidence'] == ([] if mode == 'claim' else [{'command': 'true', 'output': ''}])
    assert written, 'the fake agent ran'
    for marker in markers_of(world.item()):
        assert 'evidence' not in marker.fields and 'evidence' not in marker.text.lower(), marker
    closeout = json.loads((world.state / 'runs' / 'task-7' / 'closeout.json').read_text())
    assert 'evidence' not in json.dumps(closeout).lower()


def test_the_brief_reaches_the_agent_on_stdin_with_the_item_text_as_data(world):
    world.board.upsert_item(number=7, body='Use $HOME and {{item_body}} and `rm -rf /` literally')
    world.run('claim')
    entry = json.loads((world.tmp / 'agent.log').read_text().splitlines()[-1])
    assert 'Use $HOME and {{item_body}} and `rm -rf /` literally' in entry['brief']
    assert entry['env']['FLEET_ITEM'] == '7' and entry['env']['FLEET_BRIEF_VERSION'] == _runner.BRIEF_VERSION
    assert 'FLEET_RUNNER_REEXEC' not in entry['env']


def _wait_for(path, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().strip())
        time.sleep(0.05)
    raise AssertionError('%s never appeared' % path)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of another parent still answers kill(0): read its state
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().split(') ', 1)[1][0] != 'Z'
    except OSError:
        return False


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT], ids=['SIGTERM', 'SIGINT'])
def test_an_external_stop_posts_stopped_and_dies_of_the_signal(world, sig):
    """D12: a deliberate stop is not a failure; the signal is re-raised so the result is honest."""
    proc = world.start('hang')
    agent = _wait_for(world.tmp / 'agent.pid')
    assert world.kinds() == ['start']
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == -sig, err              # died of the signal, not a made-up exit code
    markers = markers_of(world.item())
    assert [m.kind for m in markers] == ['start', 'stopped']
    assert markers[-1].fields['signal'] == signal.Signals(sig).name
    assert not _alive(agent)                         # the agent's process group went with it
    verdict = evaluate(world.item(), now=_now())
    assert verdict.reason == 'eligible' and verdict.attempts == 1


@pytest.mark.parametrize('note_invocation,duplicate', [('inv-1', True), ('inv-0-stale', False)], ids=['this-run', 'stale-note'])
def test_a_duplicate_stop_note_names_the_kept_run(world, note_invocation, duplicate):
    """The dispatcher's deliberate-stop note (docs/dispatch.md): stopped, reason duplicate, never a failure or a close."""
    # written by the module's own writer (_host.stops), as the dispatcher writes it
    note = pathlib.Path(write_stop_note(str(world.state), 'task-7', note_invocation, {
        'reason': 'duplicate', 'unit': 'task-7', 'invocation_id': note_invocation,
        'kept': {'worker': 'w2', 'master': 'd1', 'invocation_id': 'inv-kept'}, 'by': 'owner-1'}))
    assert note == world.state / 'stops' / ('task-7.%s.json' % note_invocation)
    proc = world.start('hang', INVOCATION_ID='inv-1')
    _wait_for(world.tmp / 'agent.pid')
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    item = world.item()
    last = markers_of(item)[-1]
    assert last.kind == 'stopped' and item.state == 'open'
    if duplicate:
        assert last.fields['reason'] == 'duplicate' and last.fields['kept']['worker'] == 'w2'
        assert 'w2/d1 keeps the item' in last.text
        assert not note.exists()                  # read once, then deleted
    else:
        assert 'reason' not in last.fields        # a note for another invocation is stale
        assert note.exists()


def test_an_agent_stopped_from_outside_alone_is_stopped_not_failed(world):
    """D12 item 3: the agent died of SIGTERM that the runner did not send -- a deliberate stop, not a crash."""
    proc = world.start('hang')
    agent = _wait_for(world.tmp / 'agent.pid')
    os.kill(agent, signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == _closeout.EXIT['stopped'], err
    last = markers_of(world.item())[-1]
    assert last.kind == 'stopped' and last.fields['who'] == 'agent' and last.fields['signal'] == 'SIGTERM'


def test_sigkill_leaves_the_start_marker_as_the_last_word(world):
    """D12/D14: a SIGKILL cannot be handled; the reaper looks for exactly this."""
    proc = world.start('hang')
    agent = _wait_for(world.tmp / 'agent.pid')
    proc.kill()
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert world.kinds() == ['start']
    assert evaluate(world.item(), now=_now()).reason == 'running'
    os.killpg(agent, signal.SIGKILL)   # outside a unit nothing else takes the orphaned agent


def test_a_hung_agent_is_stopped_at_the_time_limit_and_fails(world):
    """A bare timeout is a failure, never a transient retry (D7)."""
    argv_env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE='hang',
                    FAKE_AGENT_PIDFILE=str(world.tmp / 'agent.pid'))
    argv = [sys.executable, '-m', _update.MODULE, '--item', '7', '--board-spec', str(world.spec_file), '--state-dir',
            str(world.state), '--workdir', str(world.tmp), '--no-self-update', '--timeout', '1', '--config', str(world.tmp / 'runner.json'),
            '--agent-command', json.dumps([sys.executable, str(FAKE_AGENT)])]
    proc = subprocess.run(argv, env=argv_env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 11, proc.stderr
    last = markers_of(world.item())[-1]
    assert last.kind == 'failure' and last.fields['cause'] == 'timeout'
    assert not _alive(int((world.tmp / 'agent.pid').read_text()))


# --- the run's budget: the fake agent streams Claude Code stream-json usage, 150 tokens a response -----------

def _budget(world, **budget):
    (world.tmp / 'runner.json').write_text(json.dumps({'budget': budget}))


def test_a_run_that_crosses_its_budget_is_stopped_and_posts_the_budget_marker_once(world):
    """Five responses, then the agent would go on for ever: the runner stops it at the third response (450 tokens
    reach the 400 budget), not a later one, posts one budget marker, and the item counts one attempt."""
    _budget(world, tokens=400)
    proc = world.run('spend', FAKE_AGENT_HANG_AFTER='5')
    assert proc.returncode == exits.EXIT_BUDGET == 15, proc.stderr
    item = world.item()
    markers = markers_of(item)
    assert [m.kind for m in markers] == ['start', 'budget']
    stop = markers[-1]
    assert stop.fields['limit'] == 'tokens' and stop.fields['budget'] == {'tokens': 400}
    assert stop.fields['spend_at_stop'] == {'tokens': 450}
    # all it stated before it died (the lines it printed after the third may or may not be there), as the run's tokens
    assert stop.fields['spend']['tokens'] in (450, 600, 750) and stop.fields['tokens'] == stop.fields['spend']['tokens']
    assert 'cost_usd' not in stop.fields['spend']   # its cost comes only in the result it never printed
    assert markers[0].fields['budget'] == {'tokens': 400}
    assert (evaluate(item, now=_now()).reason, evaluate(item, now=_now()).attempts) == ('eligible', 1)
    assert not _alive(int((world.tmp / 'agent.pid').read_text()))
    record = json.loads((world.state / 'runs' / 'task-7' / 'closeout.json').read_text())
    assert (record['kind'], record['exit_code'], record['posted']) == ('budget', 15, True)
    assert record['fields']['spend'] == stop.fields['spend']


@pytest.mark.parametrize('budget,over', [({'tokens': 10000}, None), ({'usd': 0.03}, 'usd')], ids=['under', 'over-in-result'])
def test_a_run_that_ends_by_itself_records_its_spend_against_the_budget(world, budget, over):
    """Below the budget the run ends as it would without one, its spend recorded; a limit reached only in the
    CLI's final result (its cost: 0.05 of 0.03) stops nothing -- the run had ended -- and is recorded as over."""
    _budget(world, **budget)
    proc = world.run('spend')
    assert proc.returncode == 10, proc.stderr
    last = markers_of(world.item())[-1]
    assert last.kind == 'noop'
    assert last.fields['spend'] == {'tokens': 750, 'cost_usd': 0.05} and last.fields['budget'] == budget
    assert last.fields.get('over_budget') == over


@pytest.mark.parametrize('run_budget', [None, {'tokens': 10000}], ids=['item-only', 'item-tighter'])
def test_a_run_is_stopped_at_what_is_left_of_its_item_budget(world, run_budget):
    """The dispatcher gives the run what is left of its item's budget (FLEET_ITEM_BUDGET_TOKENS): the runner holds
    the run to the smaller of it and the run's own budget, and stops it at the third response (450 of 400 left)."""
    if run_budget:
        _budget(world, **run_budget)
    proc = world.run('spend', FAKE_AGENT_HANG_AFTER='5', FLEET_ITEM_BUDGET_TOKENS='400')
    assert proc.returncode == exits.EXIT_BUDGET, proc.stderr
    stop = markers_of(world.item())[-1]
    assert stop.kind == 'budget' and stop.fields['budget'] == {'tokens': 400}
    assert stop.fields['spend_at_stop'] == {'tokens': 450}
    assert 'what is left of the item budget: tokens 400' in proc.stderr


def test_the_run_names_the_account_it_was_placed_on_in_its_markers(world):
    """The launch names the master's agent account (FLEET_ACCOUNT); the start and the close-out carry it, so the
    dispatcher sums an account's spend per day from the board (its daily budget)."""
    proc = world.run('spend', FLEET_ACCOUNT='acct-a')
    assert proc.returncode == 10, proc.stderr
    markers = markers_of(world.item())
    assert [(m.kind, m.fields.get('account')) for m in markers] == [('start', 'acct-a'), ('noop', 'acct-a')]
    assert markers[-1].fields['tokens'] == 750


def test_an_unreadable_board_at_start_starts_no_agent(world, tmp_path):
    """D12: without a start marker the run would be invisible; the agent is not started."""
    missing = tmp_path / 'missing-board.json'
    missing.write_text(json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'nope.sqlite3')}))
    argv = [sys.executable, '-m', _update.MODULE, '--item', '7', '--board-spec', str(missing), '--state-dir',
            str(world.state), '--workdir', str(tmp_path), '--no-self-update', '--config', str(world.tmp / 'runner.json'),
            '--agent-command', json.dumps([sys.executable, str(FAKE_AGENT)])]
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE='merge', FAKE_AGENT_LOG=str(tmp_path / 'agent.log'))
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == _runner.EXIT_START_LOST
    assert 'start marker could not be posted' in proc.stderr
    assert not (tmp_path / 'agent.log').exists()


def test_a_board_the_runner_cannot_open_darkens_the_master_and_a_clean_start_clears_it(world, tmp_path):
    """Issue 18 (D8, D20): a runner that cannot open the board records why in its start record, says the
    worker's fix (not "create the ledger"), darkens its master (board_unreachable, a retry time, no
    attempt spent); the next run that posts its start marker deletes that state and records its start."""
    missing = tmp_path / 'missing-board.json'
    missing.write_text(json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'nope.sqlite3')}))
    argv = [sys.executable, '-m', _update.MODULE, '--item', '7', '--board-spec', str(missing), '--state-dir',
            str(world.state), '--workdir', str(tmp_path), '--no-self-update', '--config', str(world.tmp / 'runner.json'),
            '--agent-command', json.dumps([sys.executable, str(FAKE_AGENT)])]
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE='merge', FAKE_AGENT_LOG=str(tmp_path / 'agent.log'),
               INVOCATION_ID='inv-broken')
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == _runner.EXIT_START_LOST
    assert 'is not on this machine' in proc.stderr and 'do not create one here' in proc.stderr
    assert 'PostgreSQL ledger' in proc.stderr and 'FLEET_BOARD_DSN' in proc.stderr
    record = json.loads((world.state / 'runs' / 'task-7' / START_FILE).read_text())
    assert record['started'] is False and record['cause'] == 'board_unreachable' and record['invocation_id'] == 'inv-broken'
    assert 'nope.sqlite3' in record['reason']
    state, why = load_state(world.capacity.read_text())
    assert why == '' and state['source'] == 'board_unreachable' and state['reset_at'] > state['written_at']
    assert world.kinds() == [], 'nothing reached the board, no attempt spent'
    # the board is right again: the start marker lands, the dark state goes, the start is recorded
    proc = world.run('merge', INVOCATION_ID='inv-clean')
    assert proc.returncode == 0, proc.stderr
    assert not world.capacity.exists()
    record = json.loads((world.state / 'runs' / 'task-7' / START_FILE).read_text())
    assert record['started'] is True and record['invocation_id'] == 'inv-clean' and record['cause'] == ''
    assert [m.fields.get('run') for m in markers_of(world.item())] == [record['run']] * 2


def test_usage_errors_post_nothing(world):
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT))
    proc = subprocess.run([sys.executable, '-m', _update.MODULE, '--board-spec', str(world.spec_file)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == _runner.EXIT_USAGE
    proc = subprocess.run([sys.executable, '-m', _update.MODULE, '--item', '7', '--board-spec', str(world.spec_file),
                           '--agent-command', '"claude -p"', '--no-self-update'], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == _runner.EXIT_USAGE and 'agent_command' in proc.stderr
    # a command line argparse refuses: the runner's usage code too, not argparse's 2 (systemd's 2/INVALIDARGUMENT)
    proc = subprocess.run([sys.executable, '-m', _update.MODULE, '--item', 'seven'], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == _runner.EXIT_USAGE != 2 and 'invalid int value' in proc.stderr
    assert world.kinds() == []


def test_version_prints_the_installed_version():
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT))
    proc = subprocess.run([sys.executable, '-m', _update.MODULE, '--version'], env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    data = json.loads(proc.stdout)
    assert data['version'] == _runner.installed_version(str(REPO)) and data['brief_version'] == _runner.BRIEF_VERSION


def _corpus_text(sample_id):
    from corpus_samples import corpus_text
    return corpus_text(sample_id)


# issue 10: the runner reads real captured outputs through the agent profile of its config
REPLAYS = [
    ('codex', 'codex-exec-jsonl-success-tail-1', '1', '0', 0, 'success', None),
    ('claude', 'claude-oauth-expired-1', '0', '1', 12, 'capacity', 'revoked'),
    ('gemini', 'gemini-per-day-billing-wording-1', '0', '1', 12, 'capacity', 'rate_limit'),
    ('custom', 'claude-529-overloaded-2', '0', '1', 13, 'retry', None),
]


@pytest.mark.parametrize('agent,sample,merge,exit_code,code,kind,source', REPLAYS, ids=[r[1] for r in REPLAYS])
def test_a_replayed_real_output_ends_with_the_right_marker(world, agent, sample, merge, exit_code, code, kind, source):
    (world.tmp / 'runner.json').write_text(json.dumps({'agent': agent}))
    replay = world.tmp / 'replay.txt'
    replay.write_text(_corpus_text(sample), encoding='utf-8')
    proc = world.run('replay', FAKE_AGENT_REPLAY=str(replay), FAKE_AGENT_REPLAY_MERGE=merge, FAKE_AGENT_EXIT=exit_code)
    assert proc.returncode == code, proc.stderr
    markers = markers_of(world.item())
    assert [m.kind for m in markers] == ['start', kind]
    if source:
        assert markers[-1].fields['source'] == source
        state_, why = load_state(world.capacity.read_text())
        assert why == '' and state_['source'] == source
    if agent == 'codex':
        assert markers[-1].fields['tokens'] == 70021 + 2374 and markers[-1].fields['envelope'] is True


def test_a_hand_stop_note_says_who_and_why_and_is_no_failure(world):
    """fleet.dispatch.run_stop's note (written by the one writer, _host.stops): stopped, reason operator, by whom."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._host.stops import write_stop_note
    note = write_stop_note(str(world.state), 'task-7', 'inv-1',
                           {'reason': 'operator', 'unit': 'task-7', 'invocation_id': 'inv-1', 'by': 'alice', 'why': 'wrong brief'})
    proc = world.start('hang', INVOCATION_ID='inv-1')
    _wait_for(world.tmp / 'agent.pid')
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    item = world.item()
    kinds = [m.kind for m in markers_of(item)]
    last = markers_of(item)[-1]
    assert kinds == ['start', 'stopped'] and item.state == 'open'
    assert last.fields['reason'] == 'operator' and last.fields['by'] == 'alice' and last.fields['why'] == 'wrong brief'
    assert 'stopped by hand by alice: wrong brief' in last.text
    assert not pathlib.Path(note).exists()


def test_a_run_launched_while_the_board_shows_another_run_live_starts_nothing(world):
    """D4 at the resource: a dispatcher stopped inside its lease, taken over, then resumed launches on its stale
    probe; the taker's run is on the board, so this runner posts nothing, starts no agent and says whose run it is."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
    world.board.post_marker(7, format_marker('start', {'run': 'taker-run', 'unit': 'task-7', 'host': 'w2', 'master': 'm2'}))
    proc = world.run('merge', INVOCATION_ID='inv-late')
    assert proc.returncode == _runner.EXIT_RUNNING_ELSEWHERE, proc.stderr
    assert 'run taker-run of this item live (task-7 on w2/m2' in proc.stderr
    assert world.kinds() == ['start'] and not (world.tmp / 'agent.log').exists(), 'nothing posted, no agent'
    record = json.loads((world.state / 'runs' / 'task-7' / START_FILE).read_text())
    assert record['started'] is False and record['cause'] == 'running_elsewhere' and record['invocation_id'] == 'inv-late'
    # the same item reopened after that start (a human's word outranks the marker): it runs
    world.board.upsert_item(number=7, state='closed')
    world.board.upsert_item(number=7, state='reopened')
    proc = world.run('claim')
    assert proc.returncode == _closeout.EXIT['noop'], proc.stderr
    assert world.kinds() == ['start', 'start', 'noop']
