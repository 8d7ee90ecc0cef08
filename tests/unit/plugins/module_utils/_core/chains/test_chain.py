# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Session chains: the handoff file, the sessions ledger, the chain tick.

The ledger is real SQLite and real PostgreSQL (``ledger_url``); worktrees are real git. systemd is
not here (the bed test covers it): the tick's ``launch`` goes to a recorder with the same methods
``_host.systemd.launch`` calls, so these tests count what the tick *asked* to start.
The race COUNTS: 3 hosts x 2 masters in 6 processes tick over 20 ``any-`` handoffs; exactly one
launch and one claim row per handoff, and every loser names the winner. A runner that lost an
``any-`` handoff names the winner once, whether it raced or ticked after the claim, with the claim
row's time and workspace in its line and its record.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from racing import free_port, run_contenders

from ansible_collections.fleet.dispatch.plugins.module_utils._core.chains import chain as core
from ansible_collections.fleet.dispatch.plugins.module_utils._core.chains.chain import (
    HandoffInvalid, decide, dispatch_by_default, parse_handoff, room, successor_kind, successor_session_id,
)
from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import SubprocessRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.git import Git
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import cli
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import config as chain_config
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import session as chain_session
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import tick as chain_tick
from ansible_collections.fleet.dispatch.plugins.module_utils._store.handoff import HandoffStore
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sessions import LedgerUnreachable, SessionError, SessionStore

T0 = dt.datetime(2026, 12, 1, 9, 27, 0, tzinfo=dt.timezone.utc)
BRIEF = {'asked': 'write the docs page', 'done_when': 'docs/chains.md merged', 'start_at': 'docs/',
         'verify': 'make docs', 'if_landed': 'close the chain: write no handoff'}
ROOMY = {'load1': 0.1, 'cpus': 2, 'mem_available_kb': 8 << 20}


def handoff(successor, **brief):
    return {'successor': successor, 'brief': dict(BRIEF, **brief)}


# ------------------------------------------------------------------------------------------
# the handoff file (pure)


def test_a_valid_handoff_reads_back_verbatim():
    assert parse_handoff(handoff('any-docs')) == handoff('any-docs')
    assert successor_kind('any-docs') == ('any', 'docs', None)
    assert successor_kind('docs') == ('follow', 'docs', None)
    assert successor_kind('docs@desk-2') == ('addressed', 'docs', 'desk-2')


@pytest.mark.parametrize('data, words', [
    ([], 'JSON object'),
    ({'brief': BRIEF}, 'no "successor"'),
    (handoff('any-'), 'topic'),
    (handoff('docs; rm -rf /'), 'not any-<topic>'),
    (handoff('any-docs', verify=''), 'brief.verify'),
    ({'successor': 'docs', 'brief': dict((k, v) for k, v in BRIEF.items() if k != 'if_landed')}, 'missing: if_landed'),
    ({'successor': 'docs', 'brief': dict(BRIEF, extra='x')}, 'unknown: extra'),
    (dict(handoff('docs'), note='x'), 'unknown handoff key'),
    (handoff('docs', asked='x' * (core.MAX_FIELD + 1)), 'more than'),
])
def test_a_malformed_handoff_is_refused_by_name(data, words):
    with pytest.raises(HandoffInvalid, match=words.replace('(', r'\(').replace(')', r'\)')):
        parse_handoff(data)


def test_dispatch_by_default_turns_only_untagged_names():
    assert dispatch_by_default('docs', True) == 'any-docs'
    assert dispatch_by_default('docs', False) == 'docs'
    assert dispatch_by_default('docs@desk-2', True) == 'docs@desk-2'
    assert dispatch_by_default('any-docs', True) == 'any-docs'


def test_successor_session_id_has_zero_entropy():
    one = successor_session_id('s-1842', 'any-docs')
    assert one == successor_session_id('s-1842', 'any-docs')
    assert one.startswith('docs-') and len(one) == len('docs-') + 8
    assert one != successor_session_id('s-1843', 'any-docs')
    assert core.session_unit(one) == 'chain-' + one


def test_successor_workspace_is_the_runners_host_topic_and_session_digest():
    digest = successor_session_id('s-1842', 'any-docs').rsplit('-', 1)[1]
    assert core.successor_workspace('s-1842', 'any-docs', 'desk-2') == 'desk-2-docs-' + digest
    assert core.successor_workspace('s-1842', 'docs@desk-1', 'desk-1').startswith('desk-1-docs-')
    assert core.successor_workspace('s-1843', 'any-docs', 'desk-2') != core.successor_workspace('s-1842', 'any-docs', 'desk-2')


def test_room_is_measured_and_dark_claims_nothing():
    assert room(None, ROOMY, T0)[0]
    dark = {'source': 'rate_limit', 'reset_at': '2026-12-01T10:00:00Z', 'written_at': '2026-12-01T09:00:00Z'}
    ok, why = room(dark, ROOMY, T0)
    assert not ok and why.startswith('dark (rate_limit)')
    assert not room(None, dict(ROOMY, load1=4.0), T0)[0]
    assert not room(None, dict(ROOMY, mem_available_kb=1000), T0)[0]
    ok, why = room(None, {'load1': None, 'cpus': 2, 'mem_available_kb': None}, T0)
    assert ok and 'unread' in why, 'an unread figure fails open (D5)'


def test_decide_who_acts():
    parent = {'id': 's-1', 'host': 'desk-1', 'depth': 0, 'handoff': 'docs'}
    assert decide(parent, 'desk-1', (True, ''))[0] == 'start'
    assert decide(parent, 'desk-2', (True, ''))[0] == 'skip'
    assert decide(dict(parent, handoff='docs@desk-2'), 'desk-2', (True, ''))[0] == 'start'
    assert decide(dict(parent, handoff='docs@desk-2'), 'desk-1', (True, ''))[0] == 'skip'
    assert decide(dict(parent, handoff='any-docs'), 'desk-2', (True, ''))[0] == 'claim'
    assert decide(dict(parent, handoff='any-docs'), 'desk-2', (False, 'dark'))[0] == 'skip'
    action, why = decide(dict(parent, depth=3), 'desk-1', (True, ''), depth_limit=3)
    assert action == 'refuse' and 'limit 3' in why
    assert decide(dict(parent, depth=3), 'desk-2', (True, ''), depth_limit=3)[0] == 'skip', 'stopped where it would run'


# ------------------------------------------------------------------------------------------
# the sessions ledger (real SQLite and PostgreSQL)


def sessions(ledger_url, **kw):
    if 'path' in ledger_url:
        kw.setdefault('create', True)
    return SessionStore(**dict(ledger_url, **kw))


def test_close_records_the_handoff_in_the_same_row_and_waits(ledger_url):
    with sessions(ledger_url) as store:
        assert store.open('s-1', 's-1', 'laptop', 'stijn', now=T0)
        assert not store.open('s-1', 's-1', 'laptop', 'stijn', now=T0), 'idempotent'
        assert store.waiting() == []
        row = store.close('s-1', parse_handoff(handoff('any-docs')), now=T0)
        assert (row['state'], row['handoff'], row['brief']) == ('closed', 'any-docs', BRIEF)
        assert [r['id'] for r in store.waiting()] == ['s-1']
        with pytest.raises(SessionError, match='already closed'):
            store.close('s-1', None, now=T0)
        ident = successor_session_id('s-1', 'any-docs')
        parent = store.get('s-1')
        inserted, got = store.start_successor(parent, ident, 'desk-2', 'fleet1', 'chain-' + ident, 'w', now=T0)
        assert inserted and got['depth'] == 1 and got['state'] == 'open' and got['brief'] is None
        again, held = store.start_successor(parent, ident, 'desk-1', 'fleet2', 'chain-' + ident, 'w', now=T0)
        assert not again and held['host'] == 'desk-2', 'one master takes a successor row'
        assert store.waiting() == [], 'a started successor no longer waits'


def test_handoff_close_creates_a_session_no_runner_started(ledger_url):
    with sessions(ledger_url) as store:
        with pytest.raises(SessionError, match='no session'):
            store.close('lap-1', parse_handoff(handoff('any-docs')), now=T0)
        row = store.close('lap-1', parse_handoff(handoff('any-docs')), now=T0,
                          create={'name': 'lap-1', 'host': 'laptop', 'master': 'stijn'})
        assert row['state'] == 'closed' and row['handoff'] == 'any-docs' and row['depth'] == 0


def test_unreachable_postgres_is_ledger_unreachable():
    with pytest.raises(LedgerUnreachable) as info:
        SessionStore(dsn='postgresql://fleet:s3cret-pw@127.0.0.1:%d/ledger' % free_port(), timeout=2)
    assert 's3cret-pw' not in str(info.value)


# ------------------------------------------------------------------------------------------
# the tick (real ledger, real git, recorded launches)


class RecordingSystemd(object):
    """What ``_host.systemd.launch`` calls, recording each start as one line in ``path``."""

    def __init__(self, path, who):
        self.path, self.who, self.started = path, who, set()

    def state(self, unit):
        live = unit in self.started
        return {'state': 'live' if live else 'absent', 'invocation_id': 'i-%s' % unit if live else None,
                'start_us': None, 'active_state': 'active' if live else 'inactive'}

    def transient_argv(self, unit, argv, path, *rest):
        return ['systemd-run', '--unit=%s' % unit, '--'] + list(argv)

    def run_transient(self, unit, argv, path, environment_file=None, on_failure=None, workdir=None, setenv=None,
                      success_exit_status=None):
        self.started.add(unit)
        with open(self.path, 'a') as handle:
            handle.write(json.dumps({'who': self.who, 'unit': unit, 'argv': argv, 'workdir': workdir, 'setenv': setenv}) + '\n')
        return 0, ''


def make_origin(tmp_path):
    origin = tmp_path / 'origin.git'
    work = tmp_path / 'seed'

    def run(*argv):
        subprocess.run(argv, check=True, capture_output=True)
    run('git', 'init', '-q', '--bare', '-b', 'main', str(origin))
    run('git', 'init', '-q', '-b', 'main', str(work))
    (work / 'README').write_text('x\n')
    run('git', '-C', str(work), '-c', 'user.email=t@e', '-c', 'user.name=t', 'add', 'README')
    run('git', '-C', str(work), '-c', 'user.email=t@e', '-c', 'user.name=t', 'commit', '-q', '-m', 'seed')
    run('git', '-C', str(work), 'push', '-q', str(origin), 'main')
    return origin


def master_conf(tmp_path, origin, ledger_url, name):
    home = tmp_path / name
    clone = home / 'clone'
    subprocess.run(['git', 'clone', '-q', str(origin), str(clone)], check=True, capture_output=True)
    return {'state_dir': str(home / 'state'), 'ledger': dict(ledger_url),
            'chain': {'clone': str(clone), 'workspaces': str(home / 'ws'), 'command': ['fleet-runner'], 'path': '/usr/bin:/bin'}}


def tick(conf, host, master, ledger_url, launches, headroom=None, now=T0, log=None):
    headroom = dict(ROOMY) if headroom is None else headroom
    t = chain_tick.Tick(conf, host, master, lambda: SessionStore(**ledger_url), lambda: HandoffStore(**ledger_url),
                        RecordingSystemd(launches, '%s/%s' % (host, master)), Git(SubprocessRunner()),
                        headroom=lambda: headroom, clock=lambda: now, log=log or (lambda _l: None))
    return t.run(), t


def seed_handoffs(ledger_url, names, host='laptop'):
    with sessions(ledger_url) as store:
        for index, name in enumerate(names):
            store.close('p-%d' % index, parse_handoff(handoff(name)), now=T0,
                        create={'name': 'p-%d' % index, 'host': host, 'master': 'stijn'})


def read_launches(path):
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def test_tick_claims_starts_and_a_second_tick_launches_nothing(ledger_url, tmp_path):
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['any-docs'])
    launches = str(tmp_path / 'launches.jsonl')
    conf = master_conf(tmp_path, origin, ledger_url, 'm1')
    code, t = tick(conf, 'desk-2', 'fleet1', ledger_url, launches)
    assert code == 0
    got = read_launches(launches)
    ident = successor_session_id('p-0', 'any-docs')
    assert [g['unit'] for g in got] == ['chain-' + ident]
    assert got[0]['argv'] == ['fleet-runner', 'session', '--session', ident]
    assert os.path.basename(got[0]['workdir']) == 'desk-2-docs-' + ident.rsplit('-', 1)[1], 'the host name, not the tag'
    assert os.path.isdir(os.path.join(got[0]['workdir'], '.git')) or os.path.isfile(os.path.join(got[0]['workdir'], '.git'))
    code, _t = tick(conf, 'desk-2', 'fleet1', ledger_url, launches)
    assert code == 0 and len(read_launches(launches)) == 1, 'idempotent: nothing launched twice'
    with sessions(ledger_url) as store:
        claims = store.claims()
        row = store.get(ident)
    assert [c['holder'] for c in claims] == ['desk-2']
    assert claims[0]['workspace'] == row['workspace'] == os.path.basename(got[0]['workdir']), 'one workspace name, both rows'


def test_a_runner_ticking_after_the_winner_names_it_once(ledger_url, tmp_path):
    """Staggered: desk-1 claims ``any-docs``; desk-2 ticks 7 s later, when nothing is waiting any more. It still
    logs the loss once, naming the winner, the claim time and the workspace, records the same three, and a
    later tick says nothing of it again."""
    import datetime
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['any-docs'])
    launches = str(tmp_path / 'launches.jsonl')
    winner = master_conf(tmp_path, origin, ledger_url, 'w')
    loser = master_conf(tmp_path, origin, ledger_url, 'l')
    assert tick(winner, 'desk-1', 'fleet1', ledger_url, launches)[0] == 0
    later = T0 + datetime.timedelta(seconds=7)
    lines = []
    code, t = tick(loser, 'desk-2', 'fleet1', ledger_url, launches, now=later, log=lines.append)
    assert code == 0 and len(read_launches(launches)) == 1
    with sessions(ledger_url) as store:
        claim, = store.claims()
        row = store.get(successor_session_id('p-0', 'any-docs'))
    assert claim['workspace'] == row['workspace'] and claim['claimed_at'] == chain_tick.format_time(T0)
    lost = [line for line in lines if ': lost: ' in line]
    assert lost == ['fleet-runner chain[desk-2/fleet1]: p-0 -> any-docs: lost: already claimed by desk-1 at %s (workspace %s)'
                    % (claim['claimed_at'], claim['workspace'])], lines
    assert [r['action'] for r in t.results] == ['lost']
    record = chain_tick.read_chain_losses(loser['state_dir'])
    assert record == {'p-0/any-docs': {'holder': 'desk-1', 'at': claim['claimed_at'], 'workspace': claim['workspace']}}
    lines = []
    tick(loser, 'desk-2', 'fleet1', ledger_url, launches, now=later + datetime.timedelta(seconds=60), log=lines.append)
    assert not any('lost' in line for line in lines) and lines == ['fleet-runner chain[desk-2/fleet1]: no handoff waiting'], lines


def test_a_claim_stamped_before_the_losers_previous_tick_is_still_named(ledger_url, tmp_path):
    """A claim's time is the winner's tick start, and its row commits later: desk-2 ticks at T0+1 without room (it
    cannot claim), desk-1's tick that started at T0 commits its claim after that, and desk-2's next tick still
    names desk-1 once -- the window reaches back ``MISSED_LOOKBACK`` before the previous tick."""
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['any-docs'])
    launches = str(tmp_path / 'launches.jsonl')
    winner = master_conf(tmp_path, origin, ledger_url, 'w')
    loser = master_conf(tmp_path, origin, ledger_url, 'l')
    busy = dict(ROOMY, load1=100.0)
    lines = []
    assert tick(loser, 'desk-2', 'fleet1', ledger_url, launches, headroom=busy, now=T0 + dt.timedelta(seconds=1),
                log=lines.append)[0] == 0
    assert len(lines) == 1 and 'not here: no room' in lines[0], lines
    assert tick(winner, 'desk-1', 'fleet1', ledger_url, launches, now=T0)[0] == 0
    for seconds in (11, 21):
        lines = []
        tick(loser, 'desk-2', 'fleet1', ledger_url, launches, now=T0 + dt.timedelta(seconds=seconds), log=lines.append)
        named = [line for line in lines if 'lost: already claimed by desk-1 at %s' % chain_tick.format_time(T0) in line]
        assert len(named) == (1 if seconds == 11 else 0) and lines, lines
    assert len(read_launches(launches)) == 1


def test_a_runner_that_raced_names_the_winner_once_and_a_skipping_tick_says_so(ledger_url, tmp_path):
    """Same instant: desk-1's claim commits after desk-2 read the claims (``since`` sees none) and before desk-2's
    own insert, its session row not yet in, so desk-2 still sees the handoff waiting, claims, and loses: one line
    naming desk-1 at its claim time, the same record; its next tick, which skips the handoff still waiting, writes
    a line saying so and names nobody again."""
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['any-docs'])
    launches = str(tmp_path / 'launches.jsonl')
    loser = master_conf(tmp_path, origin, ledger_url, 'l')
    with HandoffStore(**ledger_url) as claims:
        won = claims.claim('p-0', 'any-docs', 'desk-1', now=T0)

    class ReadBeforeTheWinnersCommit(HandoffStore):
        def since(self, when):
            return []
    lines = []
    t = chain_tick.Tick(loser, 'desk-2', 'fleet1', lambda: SessionStore(**ledger_url),
                        lambda: ReadBeforeTheWinnersCommit(**ledger_url), RecordingSystemd(launches, 'desk-2/fleet1'),
                        Git(SubprocessRunner()), headroom=lambda: dict(ROOMY), clock=lambda: T0, log=lines.append)
    assert t.run() == 0 and read_launches(launches) == []
    assert lines == ['fleet-runner chain[desk-2/fleet1]: p-0 -> any-docs: lost: already claimed by desk-1 at %s (workspace %s)'
                     % (won['claimed_at'], won['workspace'])], lines
    assert chain_tick.read_chain_losses(loser['state_dir']) == {
        'p-0/any-docs': {'holder': 'desk-1', 'at': won['claimed_at'], 'workspace': won['workspace']}}
    lines = []
    tick(loser, 'desk-2', 'fleet1', ledger_url, launches, now=T0 + dt.timedelta(seconds=10), log=lines.append)
    assert lines == ['fleet-runner chain[desk-2/fleet1]: no handoff waiting for this host (1 lost to another earlier)'], lines


def test_another_master_of_the_winning_host_names_the_winner_once(ledger_url, tmp_path):
    """The claim is the host's; the session row is the master's. desk-1/fleet2 ticking after desk-1/fleet1 launched
    names it once (``desk-1 (master fleet1)``, the claim's time and workspace); the winner never names itself."""
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['any-docs'])
    launches = str(tmp_path / 'launches.jsonl')
    first = master_conf(tmp_path, origin, ledger_url, 'f1')
    second = master_conf(tmp_path, origin, ledger_url, 'f2')
    assert tick(first, 'desk-1', 'fleet1', ledger_url, launches)[0] == 0
    with sessions(ledger_url) as store:
        claim, = store.claims()
    for seconds in (5, 15):
        lines = []
        tick(second, 'desk-1', 'fleet2', ledger_url, launches, now=T0 + dt.timedelta(seconds=seconds), log=lines.append)
        named = [line for line in lines if ': lost: ' in line]
        assert named == ([] if seconds == 15 else [
            'fleet-runner chain[desk-1/fleet2]: p-0 -> any-docs: lost: already claimed by desk-1 (master fleet1) at %s '
            '(workspace %s)' % (claim['claimed_at'], claim['workspace'])]), lines
        lines = []
        tick(first, 'desk-1', 'fleet1', ledger_url, launches, now=T0 + dt.timedelta(seconds=seconds), log=lines.append)
        assert lines == ['fleet-runner chain[desk-1/fleet1]: no handoff waiting'], lines
    assert len(read_launches(launches)) == 1


def test_dark_master_claims_nothing(ledger_url, tmp_path):
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['any-docs'])
    conf = master_conf(tmp_path, origin, ledger_url, 'm1')
    os.makedirs(conf['state_dir'])
    with open(os.path.join(conf['state_dir'], 'capacity.json'), 'w') as handle:
        json.dump({'source': 'revoked', 'written_at': '2026-12-01T09:00:00Z', 'message': 'test'}, handle)
    lines = []
    code, _t = tick(conf, 'desk-2', 'fleet1', ledger_url, str(tmp_path / 'l'), log=lines.append)
    assert code == 0 and read_launches(str(tmp_path / 'l')) == []
    assert any('no room: dark (revoked)' in line for line in lines)
    with sessions(ledger_url) as store:
        assert store.claims() == []


def test_depth_limit_stops_the_chain_with_a_reason(ledger_url, tmp_path):
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['docs'], host='desk-1')
    conf = master_conf(tmp_path, origin, ledger_url, 'm1')
    conf['chain']['depth_limit'] = 0
    lines = []
    code, _t = tick(conf, 'desk-1', 'fleet1', ledger_url, str(tmp_path / 'l'), log=lines.append)
    assert code == 0 and read_launches(str(tmp_path / 'l')) == []
    assert any('STOPPED: chain depth 1 is above the limit 0' in line for line in lines)
    with sessions(ledger_url) as store:
        refused = [r for r in store.all() if r['state'] == 'refused']
        assert len(refused) == 1 and 'limit 0' in refused[0]['reason']
        assert store.waiting() == []


def test_unreachable_ledger_launches_nothing_and_says_why(tmp_path):
    url = {'dsn': 'postgresql://fleet:pw@127.0.0.1:%d/ledger' % free_port()}
    conf = {'state_dir': str(tmp_path / 's'), 'ledger': url, 'chain': {}}
    lines = []
    code, _t = tick(conf, 'desk-2', 'fleet1', url, str(tmp_path / 'l'), log=lines.append)
    assert code == chain_config.EXIT_LEDGER_UNREACHABLE != 0
    assert read_launches(str(tmp_path / 'l')) == []
    assert len(lines) == 1 and 'LEDGER UNREACHABLE, nothing launched' in lines[0]
    recorded = open(os.path.join(conf['state_dir'], 'chain', 'tick.log')).read().splitlines()
    assert len(recorded) == 1 and 'LEDGER UNREACHABLE, nothing launched' in recorded[0], 'one line per tick (the bed found two)'


HOSTS = ('desk-1', 'desk-2', 'desk-3')
MASTERS = ('fleet1', 'fleet2')
HANDOFFS = 20


def _contender(index, barrier, results, conf, host, master, ledger_url, launches):
    import sys
    sys.path[:0] = [p for p in os.environ.get('FLEET_TEST_SYSPATH', '').split(os.pathsep) if p]
    lines = []
    barrier.wait(120)
    code, t = tick(conf, host, master, ledger_url, launches, log=lines.append)
    results.put({'who': '%s/%s' % (host, master), 'code': code, 'results': t.results, 'lines': lines})


def test_race_three_hosts_two_masters_each_handoff_launched_once(ledger_url, tmp_path, monkeypatch):
    import sys
    monkeypatch.setenv('FLEET_TEST_SYSPATH', os.pathsep.join(sys.path))
    origin = make_origin(tmp_path)
    seed_handoffs(ledger_url, ['any-t%d' % i for i in range(HANDOFFS)])
    launches = str(tmp_path / 'launches.jsonl')
    who = [(h, m) for h in HOSTS for m in MASTERS]
    confs = [master_conf(tmp_path, origin, ledger_url, '%s-%s' % hm) for hm in who]
    reports, codes = run_contenders(
        _contender, lambda i, barrier, results: (i, barrier, results, confs[i], who[i][0], who[i][1], ledger_url, launches),
        len(who), len(who), 300)
    assert len(reports) == len(who) and all(r['code'] == 0 for r in reports), reports
    got = read_launches(launches)
    units = [g['unit'] for g in got]
    assert len(units) == HANDOFFS and len(set(units)) == HANDOFFS, 'each handoff launched exactly once'
    with sessions(ledger_url) as store:
        claims = store.claims()
        successors = [r for r in store.all() if r['parent']]
    assert len(claims) == HANDOFFS and len(successors) == HANDOFFS
    winner = dict((r['parent'], '%s/%s' % (r['host'], r['master'])) for r in successors)
    for report in reports:
        for res in report['results']:
            if res['action'] == 'lost':
                assert res['holder'].split(' ')[0] == winner[res['parent']].split('/')[0], (res, winner[res['parent']])
    losses = sum(1 for r in reports for res in r['results'] if res['action'] == 'lost')
    # A master that read the ledger after a handoff was claimed never sees it as work, so it has no loss
    # to log: how many losses there are depends on the interleaving (99 of 100 under load once). What
    # cannot vary: the contest happened, no master lost one handoff twice, and every loss named the winner.
    assert 0 < losses <= HANDOFFS * (len(who) - 1), 'the masters contended for the handoffs'
    lost = [(r['who'], res['parent']) for r in reports for res in r['results'] if res['action'] == 'lost']
    assert len(lost) == len(set(lost)), 'a master asked for a handoff it had already lost'
    print('\nchain race (%s): %d launches, %d losses, by %s' % (
        'sqlite' if 'path' in ledger_url else 'postgres', len(units), losses,
        sorted((w, sum(1 for g in got if g['who'] == w)) for w in set(g['who'] for g in got))))


# ------------------------------------------------------------------------------------------
# the successor session (real fake agent process, real ledger) and the subcommand hook

FAKE_AGENT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'fakes', 'agent', 'fake_agent.py')


def session_setup(ledger_url, tmp_path, asked):
    with sessions(ledger_url) as store:
        store.close('p-0', parse_handoff(handoff('any-docs', asked=asked)), now=T0,
                    create={'name': 'p-0', 'host': 'laptop', 'master': 'stijn'})
        ident = successor_session_id('p-0', 'any-docs')
        store.start_successor(store.get('p-0'), ident, 'desk-2', 'fleet1', 'chain-' + ident, 'w', now=T0)
    runner_conf = tmp_path / 'runner.json'
    log = tmp_path / 'agent.log'
    runner_conf.write_text(json.dumps({'agent_command': [sys.executable, os.path.abspath(FAKE_AGENT)], 'state_dir': str(tmp_path / 'state'),
                                       'agent_env': {'FAKE_AGENT_MODE': 'claim', 'FAKE_AGENT_LOG': str(log)}}))
    (tmp_path / 'chain.json').write_text(json.dumps({'ledger': ledger_url}))
    return ident, runner_conf, log


def test_session_gives_the_brief_first_and_records_the_agents_handoff(ledger_url, tmp_path, monkeypatch):
    ident, runner_conf, log = session_setup(ledger_url, tmp_path, 'chain:docs:1')
    monkeypatch.chdir(tmp_path)
    code = cli.main(['fleet-runner', '--config', str(runner_conf), '--branch', 'main', 'session', '--session', ident],
                    environ={'PATH': os.environ['PATH']})
    assert code == 0
    entry = json.loads(log.read_text().splitlines()[0])
    assert entry['brief'].startswith('fleet.dispatch chain brief %s -- session %s (hop 1)' % (chain_session.CHAIN_BRIEF_VERSION, ident))
    assert 'chain:docs:1' in entry['brief'] and BRIEF['if_landed'] in entry['brief'] and entry['env']['FLEET_SESSION'] == ident
    with sessions(ledger_url) as store:
        row = store.get(ident)
    assert row['state'] == 'closed' and row['handoff'] == 'docs' and row['brief']['asked'] == 'continue chain:docs:0'


def test_session_refuses_an_agent_command_that_puts_the_brief_in_argv(ledger_url, tmp_path, monkeypatch, capsys):
    """A successor's brief in argv would be in /proc/PID/cmdline for every user of the worker: not started, the fix named."""
    ident, runner_conf, log = session_setup(ledger_url, tmp_path, 'plain work')
    conf = json.loads(runner_conf.read_text())
    conf['agent_command'] = conf['agent_command'] + ['{brief}']
    runner_conf.write_text(json.dumps(conf))
    monkeypatch.chdir(tmp_path)
    code = chain_session.main(['--config', str(runner_conf), '--session', ident], environ={'PATH': os.environ['PATH']})
    assert code != 0 and not log.exists()
    assert '{brief_file}' in capsys.readouterr().err


def test_session_with_a_malformed_handoff_chains_nothing_and_says_why(ledger_url, tmp_path, monkeypatch, capsys):
    ident, runner_conf, log = session_setup(ledger_url, tmp_path, 'plain work')
    out = tmp_path / 'state' / 'runs' / ('chain-' + ident) / 'out'

    class BadAgent(object):
        def spawn(self, argv, stdin_path, capture_path, env, cwd):
            with open(os.path.join(env['FLEET_OUTPUT_DIR'], 'handoff.json'), 'w') as handle:
                handle.write('{"successor": "docs", "brief": {"asked": "x"}}')
            return subprocess.Popen(['true'])
    monkeypatch.chdir(tmp_path)
    code = chain_session.main(['--config', str(runner_conf), '--session', ident], environ={}, spawner=BadAgent())
    assert code == 0 and out.is_dir()
    assert 'handoff invalid, nothing chained' in capsys.readouterr().err
    with sessions(ledger_url) as store:
        row = store.get(ident)
        assert row['state'] == 'closed' and row['handoff'] is None and 'missing: done_when' in row['reason']
        assert store.waiting() == []


@pytest.mark.parametrize('switch, successor, recorded', [
    (True, 'docs', 'any-docs'), (False, 'docs', 'docs'), (True, 'dsp@ch-w1', 'dsp@ch-w1'), (False, 'any-docs', 'any-docs'),
])
def test_handoff_subcommand_names_the_successor_by_the_hosts_switch(ledger_url, tmp_path, capsys, switch, successor, recorded):
    if 'path' in ledger_url:
        SessionStore(create=True, **ledger_url).close_store()
    (tmp_path / 'chain.json').write_text(json.dumps({'ledger': ledger_url, 'dispatch_by_default': switch}))
    (tmp_path / 'runner.json').write_text('{}')
    (tmp_path / 'h.json').write_text(json.dumps(handoff(successor)))
    argv = ['fleet-runner', '--config', str(tmp_path / 'runner.json'), 'handoff', '--session', 'lap-1', '--file', str(tmp_path / 'h.json')]
    assert cli.main(argv, environ={}) == 0
    assert json.loads(capsys.readouterr().out)['handoff'] == recorded
    assert cli.main(argv, environ={}) == chain_config.EXIT_USAGE, 'a closed session is not closed again'


def test_a_session_agent_gets_its_own_credentials_and_no_ledger_secret(ledger_url, tmp_path, monkeypatch):
    """A chain session's agent gets its own credentials as an item run's does: the agent credentials file (its own
    key, D18) reaches the session's agent, the ledger DSN does not; a file others can read starts no agent."""
    ident, runner_conf, log = session_setup(ledger_url, tmp_path, 'plain work')
    creds = tmp_path / 'agent-credentials.env'
    creds.write_text('AGENT_OWN_KEY="sk-session-key-42"\n')
    creds.chmod(0o600)
    conf = json.loads(runner_conf.read_text())
    conf['agent_credentials'] = str(creds)
    conf['agent_env']['FAKE_AGENT_LOG'] = str(log)
    runner_conf.write_text(json.dumps(conf))
    seen = {}

    class Agent(object):
        def spawn(self, argv, stdin_path, capture_path, env, cwd):
            seen.update(env)
            return subprocess.Popen(['true'])
    monkeypatch.chdir(tmp_path)
    environ = {'PATH': os.environ['PATH'], 'FLEET_LEDGER_DSN': 'postgresql://fleet:ledger-pw-77@db/fleet'}
    assert chain_session.main(['--config', str(runner_conf), '--session', ident], environ=environ,
                              spawner=Agent()) == 0
    assert seen.get('AGENT_OWN_KEY') == 'sk-session-key-42'
    assert 'ledger-pw-77' not in json.dumps(seen) and 'FLEET_LEDGER_DSN' not in seen

    creds.chmod(0o640)
    seen.clear()
    assert chain_session.main(['--config', str(runner_conf), '--session', ident], environ=environ,
                              spawner=Agent()) == chain_config.EXIT_USAGE
    assert seen == {}, 'no agent started with a readable credentials file'
