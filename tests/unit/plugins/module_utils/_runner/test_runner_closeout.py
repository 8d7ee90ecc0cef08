# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner in-process: the pure close-out decision, the close-out's own failures, mentions, the brief.

The board is the real ledger board (SQLite), wrapped where a test needs it to fail or to record
the order of calls; the agent is the real fake agent CLI in a subprocess.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._runner import brief as _brief
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import closeout as _closeout
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import posting as _posting
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.exits import EXIT_CLOSEOUT_LOST
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import is_clean_run, read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Artifact, Comment, Item


def read_outcome(capture, exit_code=None, now=None):
    """The runner's one reading of a capture, as the close-out takes it."""
    return read_capture(capture, 'claude', exit_code=exit_code, now=now).outcome(exit_code)


REPO = pathlib.Path(__file__).resolve().parents[5]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(_runner.__file__)).parents[6]
UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

SUCCESS = '{"type": "result", "subtype": "success", "is_error": false, "num_turns": 9, "result": "merged"}'
ZERO_TURNS = '{"type": "result", "subtype": "success", "is_error": false, "num_turns": 0, "result": "ok"}'
DIED_503 = 'API Error: 503 {"type":"error","error":{"type":"api_error","message":"Service Unavailable"}}'
LIMIT = ('{"type": "result", "subtype": "success", "is_error": true, "num_turns": 0, '
         '"result": "Claude AI usage limit reached. Your limit will reset at 5pm (UTC)."}')


def _pr(ref, created, merged_at=None, closes=(7,)):
    return Artifact(ref=ref, created_at=created, merged=merged_at is not None, merged_at=merged_at, closes=list(closes))


def _item(artifacts=(), markers=()):
    comments = [Comment(id=str(i), body=body, created_at=T0 - _dt.timedelta(minutes=10 - i)) for i, body in enumerate(markers)]
    return Item(number=7, title='t', state='open', artifacts=list(artifacts), comments=comments)


AFTER = T0 + _dt.timedelta(minutes=5)
BEFORE = T0 - _dt.timedelta(minutes=5)
START = _runner.format_marker('start', {})
RETRY = _runner.format_marker('retry', {'not_before': '2026-11-30T11:59:00Z'})

# (id, capture, exit code, artifacts, earlier markers, timed_out, expected kind, close)
CASES = [
    ('merged-after-start', SUCCESS, 0, [_pr('pr/1', AFTER, AFTER)], [START], False, 'success', True),
    ('merged-but-exit-1', SUCCESS, 1, [_pr('pr/1', AFTER, AFTER)], [START], False, 'success', True),   # D2: the forge's word
    ('claimed-nothing-merged', SUCCESS, 0, [], [START], False, 'noop', False),
    ('open-pr-is-not-done', SUCCESS, 0, [_pr('pr/1', AFTER)], [START], False, 'noop', False),           # D2 corollary 1
    ('older-merge-not-credited', SUCCESS, 0, [_pr('pr/0', BEFORE, BEFORE)], [START], False, 'noop', False),  # D16
    ('created-before-merged-after', SUCCESS, 0, [_pr('pr/0', BEFORE, AFTER)], [START], False, 'noop', False),  # D16
    ('zero-turns-never-credited', ZERO_TURNS, 0, [_pr('pr/x', AFTER, AFTER)], [START], False, 'noop', False),  # D16 story
    ('other-item-merge', SUCCESS, 0, [_pr('pr/2', AFTER, AFTER, closes=(8,))], [START], False, 'noop', False),
    ('503-no-envelope-retries', DIED_503, 1, [], [START], False, 'retry', False),
    ('503-but-open-pr-since-start', DIED_503, 1, [_pr('pr/3', AFTER)], [START], False, 'failure', False),   # fact 4
    ('503-after-three-retries', DIED_503, 1, [], [START, RETRY, START, RETRY, START, RETRY, START], False, 'failure', False),
    ('usage-limit-is-capacity', LIMIT, 1, [], [START], False, 'capacity', False),
    ('bare-timeout-not-transient', 'Error: timeout while waiting', 1, [], [START], False, 'failure', False),
    ('killed-at-time-limit', DIED_503, -15, [], [START], True, 'failure', False),
    ('error-envelope', '{"type": "result", "is_error": true, "num_turns": 4, "subtype": "error_max_turns"}', 1, [], [START],
     False, 'failure', False),
]


@pytest.mark.parametrize('capture,code,artifacts,markers,timed_out,kind,close', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decide(capture, code, artifacts, markers, timed_out, kind, close):
    outcome = read_outcome(capture, exit_code=code, now=AFTER)
    decision = _closeout.decide(outcome, _item(artifacts, markers), number=7, started_at=T0, now=AFTER, exit_code=code,
                                capture=capture, timed_out=timed_out, unit='task-7')
    assert (decision.kind, decision.close) == (kind, close)
    assert decision.exit_code == _closeout.EXIT[kind]
    # D8 "clean" is agents.is_clean_run's predicate on the same capture (one parse, same answer)
    assert decision.clean == is_clean_run(code, capture)
    assert (decision.capacity_state is not None) == (kind == 'capacity')


def test_decide_retry_step_and_not_before_come_from_the_markers():
    outcome = read_outcome(DIED_503, exit_code=1)
    decision = _closeout.decide(outcome, _item([], [START, RETRY, START]), number=7, started_at=T0, now=AFTER, exit_code=1)
    assert decision.kind == 'retry'
    assert decision.fields['step'] == 2 and decision.fields['delay_s'] == 120
    assert decision.fields['not_before'] == _runner.format_time(AFTER + _dt.timedelta(seconds=120))


def test_decide_with_an_unreadable_board_neither_credits_nor_retries():
    """Fact 4 unproven (the forge was not asked) and nothing attributable: failure, never retry or success."""
    outcome = read_outcome(DIED_503, exit_code=1)
    assert _closeout.decide(outcome, None, number=7, started_at=T0, now=AFTER, exit_code=1).kind == 'failure'
    outcome = read_outcome(SUCCESS, exit_code=0)
    assert _closeout.decide(outcome, None, number=7, started_at=T0, now=AFTER, exit_code=0).kind == 'noop'


def test_a_merge_that_also_hit_a_limit_is_a_success_and_still_writes_the_capacity_state():
    capture = SUCCESS + '\nClaude AI usage limit reached. Your limit will reset at 5pm (UTC).'
    outcome = read_outcome(capture, exit_code=0, now=AFTER)
    decision = _closeout.decide(outcome, _item([_pr('pr/1', AFTER, AFTER)], [START]), number=7, started_at=T0, now=AFTER,
                                exit_code=0, capture=capture, unit='task-7')
    assert decision.kind == 'success' and decision.capacity_state['source'] == 'rate_limit'
    assert decision.clean is False          # a trailing limit notice after a zero exit is not clean (D8)


# --- in-process runs against a real ledger ---------------------------------------------------------

class Recording(object):
    """A real ledger board that records calls and can be told to fail some of them."""

    def __init__(self, board, mentions=(), fail=None):
        self.inner = board
        self.calls = []
        self._mentions = list(mentions)
        self.fail = dict(fail or {})     # method name -> number of calls that raise before it works

    def _maybe_fail(self, name):
        if self.fail.get(name, 0) > 0:
            self.fail[name] -= 1
            raise BoardError('injected failure of %s' % name)

    def get(self, number):
        self.calls.append(('get', number))
        self._maybe_fail('get')
        return self.inner.get(number)

    def comment(self, number, body, **kw):
        self.calls.append(('comment', body.split(':')[0]))
        self._maybe_fail('comment')
        return self.inner.comment(number, body)

    def set_state(self, number, state):
        self.calls.append(('set_state', state))
        self._maybe_fail('set_state')
        return self.inner.set_state(number, state)

    def post_marker(self, number, body, close=False):
        """The protocol's own order (``_board.Board.post_marker``): comment, then close."""
        from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import Board
        return Board.post_marker(self, number, body, close=close)

    def mentions(self, number):
        self.calls.append(('mentions', number))
        return list(self._mentions)

    def mark_read(self, ids):
        self.calls.append(('mark_read', list(ids)))
        self._maybe_fail('mark_read')

    def close(self):
        self.calls.append(('close',))      # the fixture closes the real board


class RecordingSpawner(_runner.PopenSpawner):
    def __init__(self, calls, fail=False):
        self.calls = calls
        self.fail = fail

    def spawn(self, argv, **kw):
        self.calls.append(('spawn', argv[-1]))
        if self.fail:
            raise OSError('injected: cannot start the agent')
        return super(RecordingSpawner, self).spawn(argv, **kw)


@pytest.fixture
def ledger(tmp_path):
    board = LedgerBoard(path=str(tmp_path / 'ledger.sqlite3'), create=True)
    board.upsert_item(number=7, title='Spin', body='Make it spin', status='Ready')
    yield board
    board.close()


def _run(tmp_path, board, mode, spawner=None, logs=None, sleeps=None, **env):
    environ = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE=mode,
                   FAKE_AGENT_BOARD=json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}),
                   FAKE_AGENT_LOG=str(tmp_path / 'agent.log'), **env)
    config = _runner.RunConfig(number=7, state_dir=str(tmp_path / 'state'), agent_command=[sys.executable, str(FAKE_AGENT)],
                               workdir=str(tmp_path), host='w1', master='m1')
    reraised = []
    lines = logs if logs is not None else []
    slept = sleeps if sleeps is not None else []
    run = _runner.Run(config, board, spawner=spawner, reraise=reraised.append, log=lines.append, install_signals=False,
                      environ=environ, sleep=slept.append)
    code = run.run()
    assert reraised == []
    return code, run


def test_the_close_out_is_retried_once_without_doubling_the_marker(tmp_path, ledger):
    """D12: the comment landed, the close failed: only the close is retried."""
    board = Recording(ledger, fail={'set_state': 1})
    code, _run_ = _run(tmp_path, board, 'merge')
    assert code == 0
    kinds = [m.kind for m in markers_of(ledger.get(7))]
    assert kinds == ['start', 'success']                       # one success, not two
    assert [c for c in board.calls if c[0] == 'set_state'] == [('set_state', 'closed')] * 2


def test_a_close_out_whose_first_post_failed_is_posted_by_the_retry(tmp_path, ledger):
    board = Recording(ledger)
    board.fail = {}
    code, run = _run(tmp_path, board, 'claim', logs=[])
    assert code == 10
    # now a run whose close-out comment fails once
    board = Recording(ledger)
    original = board.comment
    state = {'n': 0}

    def flaky(number, body, **kw):
        if body.startswith(_runner.format_marker('noop', {})[:1]):
            state['n'] += 1
            if state['n'] == 1:
                raise BoardError('injected: comment lost')
        return original(number, body, **kw)
    board.comment = flaky
    code, run = _run(tmp_path, board, 'claim')
    assert code == 10 and run.result['posted'] is True
    assert [m.kind for m in markers_of(ledger.get(7))] == ['start', 'noop', 'start', 'noop']


def test_a_close_out_that_cannot_be_posted_is_logged_loudly_never_swallowed(tmp_path, ledger):
    """🔴 D12: `|| true` once closed eight runs with no marker at all."""
    board = Recording(ledger)
    calls = {'n': 0}
    original = board.comment

    def only_the_start(number, body, **kw):
        calls['n'] += 1
        if calls['n'] > 1:
            raise BoardError('injected: the board went away')
        return original(number, body, **kw)
    board.comment = only_the_start
    logs, sleeps = [], []
    code, run = _run(tmp_path, board, 'claim', logs=logs, sleeps=sleeps)
    assert code == EXIT_CLOSEOUT_LOST
    text = '\n'.join(logs)
    assert 'THE CLOSE-OUT WAS NOT POSTED' in text and 'post this by hand' in text
    assert _runner.format_marker('noop', {})[:1] in text        # the marker itself is in the log
    # start + close-out + one immediate retry + one per spooled retry, each after its delay
    assert sleeps == list(_posting.CLOSEOUT_RETRY_DELAYS)
    assert calls['n'] == 3 + len(_posting.CLOSEOUT_RETRY_DELAYS)
    record = json.loads((tmp_path / 'state' / 'runs' / 'task-7' / 'closeout.json').read_text())
    assert record['posted'] is False and record['exit_code'] == EXIT_CLOSEOUT_LOST
    assert [m.kind for m in markers_of(ledger.get(7))] == ['start']
    # the outcome is not lost: it waits in the spool, unclaimed, for the master's next run
    (spooled,) = (tmp_path / 'state' / 'spool').iterdir()
    entry = json.loads(spooled.read_text())
    assert spooled.name == run.run_id + '.json' and entry['kind'] == 'noop' and entry['item'] == 7


def test_a_board_back_within_the_retries_gets_the_close_out_once_and_the_spool_empties(tmp_path, ledger):
    """D12: the board is down at the end of the run and back two retries later: one marker, nothing spooled."""
    board = Recording(ledger, fail={'comment': 0})
    original, state = board.comment, {'n': 0}

    def down_for_a_while(number, body, **kw):
        state['n'] += 1
        if 1 < state['n'] <= 4:     # the close-out, its immediate retry and the first spooled retry
            raise BoardError('injected: the ledger is restarting')
        return original(number, body, **kw)
    board.comment = down_for_a_while
    sleeps = []
    code, run = _run(tmp_path, board, 'claim', sleeps=sleeps)
    assert code == 10 and run.result is not None
    assert [m.kind for m in markers_of(ledger.get(7))] == ['start', 'noop']
    assert sleeps == list(_posting.CLOSEOUT_RETRY_DELAYS[:2])
    assert list((tmp_path / 'state' / 'spool').iterdir()) == []


def test_the_next_run_of_the_master_delivers_a_spooled_close_out_exactly_once(tmp_path, ledger):
    """The board stayed down past the retries: the next run on this master (here of another item) posts the
    spooled marker before its own work, once; a marker that did land despite the error is not doubled."""
    ledger.upsert_item(number=8, title='Other', body='b', status='Ready')
    board = Recording(ledger)
    original, state = board.comment, {'n': 0}

    def only_the_start(number, body, **kw):
        state['n'] += 1
        if state['n'] > 1:
            raise BoardError('injected: the board went away')
        return original(number, body, **kw)
    board.comment = only_the_start
    code, first = _run(tmp_path, board, 'claim')
    assert code == EXIT_CLOSEOUT_LOST and [m.kind for m in markers_of(ledger.get(7))] == ['start']
    # the next run, of item 8, on the same master (state dir), with the board back
    logs = []
    environ = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE='claim',
                   FAKE_AGENT_BOARD=json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'ledger.sqlite3')}),
                   FAKE_AGENT_LOG=str(tmp_path / 'agent.log'))
    config = _runner.RunConfig(number=8, state_dir=str(tmp_path / 'state'), agent_command=[sys.executable, str(FAKE_AGENT)],
                               workdir=str(tmp_path), host='w1', master='m1')
    second = _runner.Run(config, Recording(ledger), reraise=lambda s: None, log=logs.append, install_signals=False,
                         environ=environ, sleep=lambda s: None)
    assert second.run() == 10
    seven = markers_of(ledger.get(7))
    assert [m.kind for m in seven] == ['start', 'noop'] and seven[-1].fields['run'] == first.run_id
    assert any('delivered the spooled noop close-out of task-7' in line for line in logs), logs
    assert list((tmp_path / 'state' / 'spool').iterdir()) == []
    # a spooled marker that is on the board already (the error came after the write) is dropped, not doubled
    from ansible_collections.fleet.dispatch.plugins.module_utils._host import spool
    spool.write(str(tmp_path / 'state'), {'run': first.run_id, 'unit': 'task-7', 'item': 7, 'repo': '', 'kind': 'noop',
                                          'body': 'x', 'close': False, 'spooled_at': '2026-12-05T00:00:00Z'})
    third = _runner.Run(config, Recording(ledger), reraise=lambda s: None, log=logs.append, install_signals=False,
                        environ=environ, sleep=lambda s: None)
    third.run()
    assert [m.kind for m in markers_of(ledger.get(7))] == ['start', 'noop']
    assert list((tmp_path / 'state' / 'spool').iterdir()) == []


def test_the_close_out_retry_reconnects_when_the_board_came_from_a_factory(tmp_path, ledger):
    """A long run's connection may be dead by the close-out: the retry opens a fresh board."""
    opened = []

    def factory():
        board = Recording(ledger)
        if not opened:    # the first connection dies after the start marker
            original = board.comment

            def dies_after_start(number, body, **kw):
                if not body.startswith(_runner.format_marker('start', {})[:1]):
                    raise BoardError('injected: server closed the connection unexpectedly')
                return original(number, body, **kw)
            board.comment = dies_after_start
            board.fail = {'get': 99}
        opened.append(board)
        return board
    code, run = _run(tmp_path, factory, 'claim')
    assert code == 10 and run.result['posted'] is True
    assert len(opened) == 2
    assert [m.kind for m in markers_of(ledger.get(7))] == ['start', 'noop']


def test_success_comments_first_then_closes(tmp_path, ledger):
    """🔴 D12: closing an already-closed item with a comment once dropped the comment."""
    board = Recording(ledger)
    _run(tmp_path, board, 'merge')
    writes = [c for c in board.calls if c[0] in ('comment', 'set_state')]
    assert writes[-2][0] == 'comment' and writes[-1] == ('set_state', 'closed')
    assert ledger.get(7).state == 'closed'


def test_mentions_are_injected_then_marked_read(tmp_path, ledger):
    """D19: at-least-once -- marked read only after the agent was started with them in its brief."""
    mentions = [{'id': 'th-1', 'author': 'alice', 'body': 'Please also handle $EMPTY input {{x}}', 'updated_at': '2026-11-30T11:00:00Z'}]
    board = Recording(ledger, mentions=mentions)
    calls = board.calls
    code, _run_ = _run(tmp_path, board, 'claim', spawner=RecordingSpawner(calls))
    assert code == 10
    order = [c[0] for c in calls if c[0] in ('mentions', 'spawn', 'mark_read')]
    assert order == ['mentions', 'spawn', 'mark_read']
    assert ('mark_read', ['th-1']) in calls
    brief = json.loads((tmp_path / 'agent.log').read_text().splitlines()[-1])['brief']
    assert 'Please also handle $EMPTY input {{x}}' in brief and 'from alice' in brief


def test_mentions_stay_unread_when_the_agent_never_started(tmp_path, ledger):
    mentions = [{'id': 'th-2', 'body': 'ping'}]
    board = Recording(ledger, mentions=mentions)
    code, run = _run(tmp_path, board, 'claim', spawner=RecordingSpawner(board.calls, fail=True))
    assert code == _closeout.EXIT['failure']
    assert not [c for c in board.calls if c[0] == 'mark_read']
    last = markers_of(ledger.get(7))[-1]
    assert last.kind == 'failure' and last.fields['cause'] == 'runner_error'


def test_a_mark_read_failure_does_not_fail_the_run(tmp_path, ledger):
    board = Recording(ledger, mentions=[{'id': 'th-3', 'body': 'x'}], fail={'mark_read': 1})
    logs = []
    code, _run_ = _run(tmp_path, board, 'merge', logs=logs)
    assert code == 0 and any('not marked read' in line for line in logs)


def test_a_stop_arriving_during_the_close_out_is_re_raised_after_it(tmp_path, ledger):
    """D12: the close-out completes, then the signal is re-raised (the unit's result stays honest)."""
    board = Recording(ledger)
    environ = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FAKE_AGENT_MODE='claim')
    config = _runner.RunConfig(number=7, state_dir=str(tmp_path / 'state'), agent_command=[sys.executable, str(FAKE_AGENT)],
                               workdir=str(tmp_path))
    reraised = []
    run = _runner.Run(config, board, reraise=reraised.append, log=lambda line: None, install_signals=False, environ=environ)
    original = board.comment

    def comment_then_signal(number, body, **kw):
        posted = original(number, body, **kw)
        if body.startswith(_runner.format_marker('noop', {})[:1]):
            run._on_signal(15, None)          # arrives inside the critical section: recorded, not raised
        return posted
    board.comment = comment_then_signal
    code = run.run()
    assert reraised == [15] and code == 128 + 15
    assert [m.kind for m in markers_of(ledger.get(7))] == ['start', 'noop']    # no stopped on top of it


def test_agent_command_placeholders_pass_the_brief_without_a_shell_and_never_as_text(tmp_path):
    config = _runner.RunConfig(number=7, state_dir=str(tmp_path), agent_command=['agent', '--prompt-file', '{brief_file}'])
    run = _runner.Run(config, board=None, install_signals=False)
    argv, stdin = run._agent_argv('a $(brief) `x`')
    assert argv == ['agent', '--prompt-file', run.brief_path] and stdin is None
    run.config.agent_command = ['claude', '-p']
    assert run._agent_argv('b') == (['claude', '-p'], run.brief_path)


# --- the brief ---------------------------------------------------------------------------------------

# Pinned: a change of the template without a bump of BRIEF_VERSION fails here (D17: versioned doctrine).
PINNED = {'2026.11.30.1': 'bdf36849f16b97ba7308ad3f1a1224ae3de48ae7fe58713a0d6c4292413946a3',
          '2026.12.01.1': '49894ab11fab1e2bea1ad2429365830f8bd9867a5f8ad627d75a4b42da26aabd',
          '2026.12.01.2': '925605c1fb5b12276f63d524bbf8aab1ef356b4b920bf9a8e16518dec528029a',   # step 11: the handoff (seed 003)
          '2026.12.05.1': '3fc2bbe23e6bc19ccf671b1eb0867db0e4becffcb83b561f91e8497e2c4f1bf1',   # who wrote the item, an unreviewed edit
          '2026.12.06.1': '908a7c447e068f3a98edb63a190a8577493754a7b1845b91c220ebb773c88d1c'}   # the pull request a run continues


def test_the_template_hash_is_pinned_to_its_version():
    assert _brief.BRIEF_VERSION in PINNED, 'TEMPLATE changed: bump BRIEF_VERSION and pin the new hash here'
    assert PINNED[_brief.BRIEF_VERSION] == _brief.template_hash()


def test_render_is_one_pass_and_board_text_is_data():
    values = dict((name, 'V-%s' % name) for name in _brief.FIELDS)
    values['item_body'] = 'body {{item_title}} $(id) ${HOME}'
    values['mentions'] = [{'author': 'bob', 'body': '{{unit}} please'}]
    text = _brief.render(values)
    assert 'body {{item_title}} $(id) ${HOME}' in text     # not expanded a second time
    assert '{{unit}} please' in text and 'V-unit' in text
    assert text.startswith('fleet.dispatch brief %s' % _brief.BRIEF_VERSION)
    with pytest.raises(KeyError):
        _brief.render({'unit': 'x'})


def test_the_brief_carries_the_seed_corrections():
    for scar in ('stale local', 'BY NAME', 'MERGED', 'Do not close the item yourself', 'EXACT command',
                 'Waiting is', 'result.json', 'blocker.json'):
        assert scar in _brief.TEMPLATE, scar
