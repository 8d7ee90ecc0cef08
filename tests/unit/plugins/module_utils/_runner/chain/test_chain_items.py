# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Session chains on the board: an item's run opens and closes a session and can hand off; the handoff
marker holds the item while its chain lives; the successor posts its own markers on the item.

The pure rules (``_core/chains/chain.py`` ``item_chain``, ``_core/dispatch/eligibility.py`` ``chain_hold``) are
tested on rows; the runner as a real program (the fake agent, a real ledger board sharing its
store with the sessions, SQLite and PostgreSQL).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.chains.chain import item_chain, successor_session_id
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.closeout import EXIT
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import count_attempts, evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import TERMINAL, format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Event, Item, parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import cli
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as program
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import items as chain_items
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import update as _update
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sessions import LedgerUnreachable, SessionStore

UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NOW = T0 + _dt.timedelta(hours=1)
REPO = pathlib.Path(__file__).resolve().parents[6]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(program.__file__)).parents[6]
BRIEF = {'asked': 'a', 'done_when': 'b', 'start_at': 'c', 'verify': 'd', 'if_landed': 'e'}


def row(ident, parent=None, state='closed', handoff=None, depth=0, reason=None, at=0, item=7):
    return {'id': ident, 'parent': parent, 'name': ident, 'host': 'desk-1', 'master': 'fleet1', 'item': item,
            'state': state, 'depth': depth, 'started_at': '2026-12-01T12:%02d:00Z' % at, 'closed_at': None,
            'handoff': handoff, 'reason': reason, 'unit': None, 'workspace': None}


def item_with(kinds, sessions=None, state='open', events=()):
    comments = []
    for index, kind in enumerate(kinds):
        fields = {'session': 'task-7.r1'} if kind == 'handoff' else {}
        comments.append(Comment(id=str(index), body=format_marker(kind, fields), created_at=T0 + _dt.timedelta(minutes=index),
                                author='fleet'))
    return Item(number=7, title='t', state=state, status='Ready', comments=comments, marker_authors=['fleet'],
                sessions=sessions, events=list(events))


# --- the pure rules ------------------------------------------------------------------------------

def test_a_handoff_marker_ends_no_run_and_spends_no_attempt():
    assert 'handoff' not in TERMINAL
    item = item_with(['start', 'noop', 'handoff', 'noop', 'handoff'])
    assert count_attempts(markers_of(item)) == 1, 'only the item run\'s start is an attempt'


@pytest.mark.parametrize('tail, alive, stopped', [
    (row('s1', parent='task-7.r1', state='open', depth=1), True, False),
    (row('s1', parent='task-7.r1', state='closed', handoff='docs', depth=1), True, False),
    (row('s1', parent='task-7.r1', state='refused', depth=1, reason='chain depth 13 is above the limit 12'), False, True),
    (row('s1', parent='task-7.r1', state='failed', depth=1, reason='worktree not made'), False, False),
    (row('s1', parent='task-7.r1', state='closed', depth=1), False, False),
], ids=['open', 'waiting', 'refused', 'failed', 'ended'])
def test_item_chain_reads_the_last_hop(tail, alive, stopped):
    rows = [row('task-7.r1', handoff='any-docs', at=0), tail]
    found = item_chain(rows, 'task-7.r1')
    assert (found['tail'], found['alive'], found['stopped']) == ('s1', alive, stopped)


def test_item_chain_walks_every_hop_and_knows_an_unknown_session():
    rows = [row('task-7.r1', handoff='docs'), row('h1', 'task-7.r1', handoff='docs', depth=1, at=1),
            row('h2', 'h1', state='open', depth=2, at=2), row('other', state='open')]
    assert item_chain(rows, 'task-7.r1')['tail'] == 'h2' and item_chain(rows, 'h1')['depth'] == 2
    assert item_chain(rows, 'nope') is None
    # the item run closed with its handoff and no runner started it yet: alive (waiting)
    assert item_chain(rows[:1], 'task-7.r1')['alive'] is True


@pytest.mark.parametrize('sessions, reason', [
    (None, 'chained'),                                                     # the board does not know: the marker holds
    ([], 'chained'),                                                       # no row for that session: no evidence it ended
    ([row('task-7.r1', handoff='docs'), row('s1', 'task-7.r1', state='open', depth=1, at=1)], 'chained'),
    ([row('task-7.r1', handoff='docs'), row('s1', 'task-7.r1', state='refused', depth=1, at=1, reason='depth')],
     'chain_stopped'),
    ([row('task-7.r1', handoff='docs'), row('s1', 'task-7.r1', state='failed', depth=1, at=1)], 'eligible'),
    ([row('task-7.r1', handoff='docs'), row('s1', 'task-7.r1', state='closed', depth=1, at=1)], 'eligible'),
], ids=['unknown', 'no-row', 'alive', 'refused', 'failed', 'ended-silently'])
def test_the_handoff_marker_holds_while_the_chain_lives(sessions, reason):
    verdict = evaluate(item_with(['start', 'noop', 'handoff'], sessions=sessions), now=NOW)
    assert verdict.reason == reason
    assert verdict.chain['session'] == 'task-7.r1'


def test_the_successors_own_marker_and_a_reopen_end_the_hold():
    live = [row('task-7.r1', handoff='docs'), row('s1', 'task-7.r1', state='open', depth=1, at=1)]
    # the successor's close-out follows the handoff marker: the normal rules read it
    assert evaluate(item_with(['start', 'noop', 'handoff', 'noop'], sessions=live), now=NOW).reason == 'eligible'
    assert evaluate(item_with(['start', 'noop', 'handoff', 'handoff'], sessions=live), now=NOW).reason == 'chained'
    # a human's reopen after the marker outranks it, as for every marker (D6)
    reopened = item_with(['start', 'noop', 'handoff'], sessions=None, events=[Event(kind='reopened', at=NOW, actor='owner-olga', permission='WRITE')])
    assert evaluate(reopened, now=NOW + _dt.timedelta(seconds=1)).reason == 'eligible'
    # closed outranks a chain: the item's state is the forge's word
    assert evaluate(item_with(['start', 'noop', 'handoff'], sessions=live, state='closed'), now=NOW).reason == 'closed'


def test_explain_says_why_a_chain_holds_the_item():
    refused = row('s1', 'task-7.r1', state='refused', depth=1, at=1, reason='chain depth 13 is above the limit 12')
    rows = [row('task-7.r1', handoff='docs'), refused]
    ex = explain(item_with(['start', 'noop', 'handoff'], sessions=rows), now=NOW)
    assert ex['reason'] == 'chain_stopped'
    assert 'chain depth 13 is above the limit 12' in ex['holds'][0]['why'] and 'reopen' in ex['holds'][0]['why']
    live = explain(item_with(['start', 'noop', 'handoff'], sessions=rows[:1] + [row('s1', 'task-7.r1', state='open', depth=1)]),
                   now=NOW)
    assert live['reason'] == 'chained' and 'session s1 (hop 1) on desk-1/fleet1 runs' in live['holds'][0]['why']
    ended = explain(item_with(['start', 'noop', 'handoff'], sessions=rows[:1] + [row('s1', 'task-7.r1', depth=1)]), now=NOW)
    assert ended['eligible'] and any('back in the queue' in line for line in explain_lines(ended))


# --- the item session (real ledger) ------------------------------------------------------------------

def _session(ledger_url, tmp_path, content, lines):
    out = tmp_path / 'out'
    out.mkdir(exist_ok=True)
    if content is not None:
        (out / 'handoff.json').write_text(content)
    if 'path' in ledger_url:
        SessionStore(create=True, **ledger_url).close_store()
    return chain_items.ItemSession(ledger_url, 'task-7.r1', 'task-7', 'desk-1', 'fleet1', 7, log=lines.append), str(out)


def test_item_session_records_the_handoff_with_the_close(ledger_url, tmp_path):
    lines = []
    session, out = _session(ledger_url, tmp_path, json.dumps({'successor': 'docs', 'brief': BRIEF}), lines)
    session.open(T0)
    fields = session.close(out, 'noop', NOW)
    assert fields['handoff'] == {'session': 'task-7.r1', 'successor': 'docs',
                                 'successor_session': successor_session_id('task-7.r1', 'docs')}
    with SessionStore(**ledger_url) as store:
        got = store.get('task-7.r1')
        assert [r['id'] for r in store.waiting()] == ['task-7.r1']
    assert (got['state'], got['handoff'], got['brief'], got['item'], got['depth'], got['parent']) == (
        'closed', 'docs', BRIEF, 7, 0, None)
    assert session.marker({'run': 'r1'}).startswith(u'\U0001F517 ')
    assert session.close(out, 'noop', NOW) == {}, 'closed once'


def test_item_session_with_a_malformed_handoff_chains_nothing(ledger_url, tmp_path):
    lines = []
    session, out = _session(ledger_url, tmp_path, '{"successor": "docs", "brief": {"asked": "x"}}', lines)
    session.open(T0)
    fields = session.close(out, 'noop', NOW)
    assert 'handoff' not in fields and 'missing: done_when' in fields['handoff_invalid']
    assert any('ERROR: handoff invalid, nothing chained' in line for line in lines)
    with SessionStore(**ledger_url) as store:
        assert store.get('task-7.r1')['handoff'] is None and store.waiting() == []
    assert session.marker({}) is None


def test_a_success_does_not_chain_and_an_unopened_session_is_recorded_at_its_close(ledger_url, tmp_path):
    lines = []
    session, out = _session(ledger_url, tmp_path, json.dumps({'successor': 'docs', 'brief': BRIEF}), lines)
    fields = session.close(out, 'success', NOW)     # never opened (the ledger blinked at the start)
    assert 'not chained: the close-out is success' in fields['handoff_not_chained']
    with SessionStore(**ledger_url) as store:
        got = store.get('task-7.r1')
    assert got['state'] == 'closed' and got['handoff'] is None and got['item'] == 7


def test_an_unreachable_ledger_never_fails_the_run_and_chains_nothing(tmp_path):
    lines = []
    (tmp_path / 'out').mkdir()
    (tmp_path / 'out' / 'handoff.json').write_text(json.dumps({'successor': 'docs', 'brief': BRIEF}))

    def broken():
        raise LedgerUnreachable('connection refused')
    session = chain_items.ItemSession({'path': '/nonexistent'}, 'task-7.r1', 'task-7', 'h', 'm', 7, log=lines.append,
                                      store_factory=broken)
    session.open(T0)
    fields = session.close(str(tmp_path / 'out'), 'noop', NOW)
    assert 'handoff' not in fields and 'connection refused' in fields['handoff_not_chained']
    assert session.marker({}) is None
    assert any('THE SESSION CLOSE WAS NOT WRITTEN' in line for line in lines)


def test_no_chain_config_means_no_session(tmp_path):
    (tmp_path / 'runner.json').write_text('{}')
    assert chain_items.item_chain_config(str(tmp_path / 'runner.json'), {}) == (None, {})
    (tmp_path / 'chain.json').write_text(json.dumps({'ledger': {'path': str(tmp_path / 'l.sqlite3')}, 'host': 'desk-9'}))
    ledger, chain = chain_items.item_chain_config(str(tmp_path / 'runner.json'), {})
    assert ledger == {'path': str(tmp_path / 'l.sqlite3')} and chain['host'] == 'desk-9'


# --- the whole path: item run -> handoff -> successor's markers (real runner, real fake agent) --------

@pytest.fixture
def world(ledger_url, tmp_path):
    board = LedgerBoard(create=True, **ledger_url)
    board.upsert_item(number=7, title='Long work', body='Do it in two sessions: chain:itm:1', status='Ready')
    board.close()
    spec_file = tmp_path / 'board.json'
    spec_file.write_text(json.dumps(dict(ledger_url, kind='ledger')))
    log = tmp_path / 'agent.log'
    (tmp_path / 'runner.json').write_text(json.dumps({
        'board_spec': str(spec_file), 'state_dir': str(tmp_path / 'state'),
        'agent_command': [sys.executable, str(FAKE_AGENT)],
        'agent_env': {'FAKE_AGENT_MODE': 'claim', 'FAKE_AGENT_LOG': str(log)}}))
    (tmp_path / 'chain.json').write_text(json.dumps({'ledger': ledger_url, 'host': 'desk-1'}))
    return ledger_url, tmp_path, log


def _board_item(ledger_url):
    board = LedgerBoard(**ledger_url)
    try:
        return board.get(7), board.read().items
    finally:
        board.close()


def test_an_item_run_hands_off_and_its_successor_reports_on_the_item(world, monkeypatch):
    ledger_url, tmp_path, log = world
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT), FLEET_LEDGER_DSN='postgresql://u:S3cret-ledger@db/x')
    env.pop('FLEET_RUNNER_REEXEC', None)
    proc = subprocess.run([sys.executable, '-m', _update.MODULE, '--item', '7', '--config', str(tmp_path / 'runner.json'),
                           '--workdir', str(tmp_path), '--no-self-update'],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == EXIT['noop'], proc.stderr   # the claim agent merged nothing: a no-op
    invocation = json.loads(log.read_text().splitlines()[0])
    assert 'handoff.json' in invocation['brief'], 'the brief names the handoff file'
    assert 'S3cret-ledger' not in json.dumps(invocation['env']), 'the ledger DSN never reaches the agent'
    item, items = _board_item(ledger_url)
    kinds = [m.kind for m in markers_of(item)]
    assert kinds == ['start', 'noop', 'handoff'], kinds
    noop, marker = markers_of(item)[1], markers_of(item)[2]
    session = noop.fields['session']
    assert session.startswith('task-7.') and noop.fields['handoff']['successor'] == 'itm'
    assert marker.fields['session'] == session and marker.fields['successor_session'] == successor_session_id(session, 'itm')
    # the sweep's read: the item is held while its chain is alive (the handoff waits for a runner)
    assert [i.sessions is not None for i in items] == [True]
    verdict = evaluate(items[0], now=_dt.datetime.now(UTC))
    assert (verdict.reason, verdict.chain['state'], verdict.chain['alive']) == ('chained', 'closed', True)
    with SessionStore(**ledger_url) as store:
        parent = store.get(session)
        assert (parent['state'], parent['handoff'], parent['item'], parent['host']) == ('closed', 'itm', 7, 'desk-1')
        assert [r['id'] for r in store.waiting()] == [session]
        # what the chain tick does on a win (its own tests cover the claim and the launch)
        ident = successor_session_id(session, 'itm')
        store.start_successor(parent, ident, 'desk-1', 'fleet1', 'chain-' + ident, 'w')
    item, items = _board_item(ledger_url)
    assert evaluate(items[0], now=_dt.datetime.now(UTC)).reason == 'chained', 'the successor runs: still held'
    monkeypatch.chdir(tmp_path)
    session_env = dict(env)
    code = cli.main(['fleet-runner', '--config', str(tmp_path / 'runner.json'), 'session', '--session', ident],
                    environ=session_env)
    assert code == 0
    second = json.loads(log.read_text().splitlines()[1])
    assert second['brief'].startswith('fleet.dispatch chain brief') and 'continue chain:itm:0' in second['brief']
    assert 'S3cret-ledger' not in json.dumps(second['env'])
    item, items = _board_item(ledger_url)
    markers = markers_of(item)
    assert [m.kind for m in markers] == ['start', 'noop', 'handoff', 'noop']
    assert markers[-1].fields['session'] == ident and markers[-1].fields['unit'] == 'chain-' + ident
    verdict = evaluate(items[0], now=_dt.datetime.now(UTC))
    assert verdict.reason == 'eligible' and verdict.attempts == 1, 'the chain ended; the successor spent no attempt'


def test_a_successor_that_hands_off_again_keeps_the_item_held(world, monkeypatch):
    ledger_url, tmp_path, log = world
    with SessionStore(**ledger_url) as store:
        store.close('task-7.r0', chain_items.parse_handoff({'successor': 'itm', 'brief': dict(BRIEF, asked='chain:itm:1')}),
                    now=T0, create={'name': 'task-7', 'host': 'desk-1', 'master': 'fleet1', 'item': 7})
        ident = successor_session_id('task-7.r0', 'itm')
        store.start_successor(store.get('task-7.r0'), ident, 'desk-1', 'fleet1', 'chain-' + ident, 'w', now=T0)
    monkeypatch.chdir(tmp_path)
    assert cli.main(['fleet-runner', '--config', str(tmp_path / 'runner.json'), 'session', '--session', ident],
                    environ=dict(os.environ)) == 0
    item, items = _board_item(ledger_url)
    markers = markers_of(item)
    assert [m.kind for m in markers] == ['noop', 'handoff']
    assert markers[0].fields['handoff']['successor'] == 'itm' and markers[1].fields['session'] == ident
    verdict = evaluate(items[0], now=_dt.datetime.now(UTC))
    assert verdict.reason == 'chained' and verdict.chain['tail'] == ident


def _started_successor(ledger_url):
    """Session task-7.r0 closed with a hand-off to ``itm``, whose session has started: its id."""
    with SessionStore(**ledger_url) as store:
        store.close('task-7.r0', chain_items.parse_handoff({'successor': 'itm', 'brief': dict(BRIEF)}),
                    now=T0, create={'name': 'task-7', 'host': 'desk-1', 'master': 'fleet1', 'item': 7})
        ident = successor_session_id('task-7.r0', 'itm')
        store.start_successor(store.get('task-7.r0'), ident, 'desk-1', 'fleet1', 'chain-' + ident, 'w', now=T0)
    return ident


def test_a_lagging_successor_credits_no_merge_from_before_its_session(world, monkeypatch):
    """The successor's worker clock is 10 min behind the board's; changes closing the item merged 9, 6, 3
    and 1 min before the session really started (then the item was reopened). Each is after the start by
    the worker's clock: the session's close-out is dated by the board's (D16), so none is credited."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import session as _session
    ledger_url, tmp_path, _log = world
    ident = _started_successor(ledger_url)
    real = _dt.datetime.now(UTC)
    with LedgerBoard(**ledger_url) as board:
        for minutes in (9, 6, 3, 1):
            at = real - _dt.timedelta(minutes=minutes)
            board.add_artifact('pr-%d' % minutes, created_at=at - _dt.timedelta(seconds=30), merged=True, merged_at=at,
                               closes=[7])
        board.upsert_item(number=7, state='reopened')
    monkeypatch.chdir(tmp_path)
    logs = []
    monkeypatch.setattr(_session, 'log_line', logs.append)
    _session.main(['--config', str(tmp_path / 'runner.json'), '--session', ident], environ=dict(os.environ),
                  clock=lambda: _dt.datetime.now(UTC) - _dt.timedelta(minutes=10), board=cli._session_board)
    item, _items = _board_item(ledger_url)
    closes = [m for m in markers_of(item) if m.kind in TERMINAL]
    assert [m.kind for m in closes] == ['noop'], ([m.kind for m in markers_of(item)], logs)
    started = parse_time(closes[0].fields['started_at'])
    assert abs((started - real).total_seconds()) < 60, (started, real)    # the board's clock, not 10 min back
    assert any("this worker's clock is 600 s behind the board's" in line for line in logs), logs


def test_a_lagging_successors_session_row_is_dated_by_the_ledger(world, monkeypatch):
    """The successor's worker clock is 10 min behind: its session row's close is stamped by the ledger (the
    database's clock on PostgreSQL, the machine's on SQLite), not 10 min back; so is a fixed time's absence
    on the first session an item run records (D16)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import session as _session
    ledger_url, tmp_path, _log = world
    ident = _started_successor(ledger_url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_session, 'log_line', lambda line: None)
    _session.main(['--config', str(tmp_path / 'runner.json'), '--session', ident], environ=dict(os.environ),
                  clock=lambda: _dt.datetime.now(UTC) - _dt.timedelta(minutes=10), board=cli._session_board)
    real = _dt.datetime.now(UTC)
    with SessionStore(**ledger_url) as store:
        row = store.get(ident)
        assert row['state'] == 'closed'
        assert abs((parse_time(row['closed_at']) - real).total_seconds()) < 60, (row['closed_at'], real)
    # an item run's own session, opened and closed by a runner 10 min behind: both stamps are the ledger's
    lagging = real - _dt.timedelta(minutes=10)
    session = chain_items.ItemSession(ledger_url, 'task-9.r1', 'task-9', 'desk-1', 'fleet1', 9, log=lambda line: None)
    session.open(lagging)
    (tmp_path / 'out9').mkdir()
    session.close(str(tmp_path / 'out9'), 'noop', lagging)
    with SessionStore(**ledger_url) as store:
        row = store.get('task-9.r1')
    for stamp in (row['started_at'], row['closed_at']):
        assert abs((parse_time(stamp) - real).total_seconds()) < 60, (row, real)


def test_a_successor_that_cannot_read_the_boards_clock_credits_nothing(world, monkeypatch):
    """The successor's worker clock is 10 min behind and the board's clock cannot be read: a change closing
    the item merged 5 min before the session is after its start by the worker's clock. It is not credited
    (no success on a worker-clock start, D16): the session's close-out leaves it open for a human, naming it."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import session as _session
    ledger_url, tmp_path, _log = world
    ident = _started_successor(ledger_url)
    at = _dt.datetime.now(UTC) - _dt.timedelta(minutes=5)
    with LedgerBoard(**ledger_url) as board:
        board.add_artifact('pr-old', created_at=at - _dt.timedelta(seconds=30), merged=True, merged_at=at, closes=[7])
        board.upsert_item(number=7, state='reopened')

    def clockless(conf, environ):
        board = cli._session_board(conf, environ)

        def no_clock():
            raise RuntimeError('no clock today')
        board.board_time = no_clock
        return board
    monkeypatch.chdir(tmp_path)
    logs = []
    monkeypatch.setattr(_session, 'log_line', logs.append)
    _session.main(['--config', str(tmp_path / 'runner.json'), '--session', ident], environ=dict(os.environ),
                  clock=lambda: _dt.datetime.now(UTC) - _dt.timedelta(minutes=10), board=clockless)
    item, _items = _board_item(ledger_url)
    closes = [m for m in markers_of(item) if m.kind in TERMINAL]
    assert [m.kind for m in closes] == ['left_open'], ([m.kind for m in markers_of(item)], logs)
    assert closes[0].fields['artifacts'] == ['pr-old'] and item.state == 'open'
    assert any('no merge is credited to it' in line for line in logs), logs
