# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""session_handoff and sessions_info on the real ledger (SQLite and PostgreSQL), through main().

The laptop's dispatch: check mode writes nothing, the real run closes the session with its handoff
named by the one rule (an untagged successor becomes any- only with dispatch_by_default; addressed
and any- names are kept), a second run refuses (a closed session is not closed again); sessions_info shows the
chain hop by hop with the claim's holder and the handoffs still waiting, with how long.
"""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.chains.chain import parse_handoff, successor_session_id
from ansible_collections.fleet.dispatch.plugins.module_utils._store.handoff import HandoffStore
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sessions import SessionStore
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import SqlStore
from ansible_collections.fleet.dispatch.plugins.modules import session_handoff, sessions_info

BRIEF = {'asked': 'a', 'done_when': 'd', 'start_at': 's', 'verify': 'v', 'if_landed': 'l'}
NOW = '2026-12-01T09:27:00Z'


def ledger_of(ledger_url):
    if 'path' in ledger_url:
        SqlStore(path=ledger_url['path'], create=True).close()
    return ledger_url


def test_laptop_handoff_check_real_refused(run_module, ledger_url):
    ledger = ledger_of(ledger_url)
    args = dict(ledger, session='lap-7', successor='docs', brief=BRIEF, host='laptop', master='stijn', dispatch_by_default=True)
    kind, res, _w = run_module(session_handoff, args, check=True)
    assert kind == 'exit' and res['changed'] and res['state'] == 'absent' and res['handoff'] == 'any-docs'
    kind, res, _w = run_module(sessions_info, dict(ledger))
    assert kind == 'exit' and res['chains'] == [] and res['waiting'] == [], 'check mode wrote nothing'
    kind, res, _w = run_module(session_handoff, args)
    assert kind == 'exit' and res['state'] == 'closed' and res['handoff'] == 'any-docs'
    kind, res, _w = run_module(session_handoff, args)
    assert kind == 'fail' and 'already closed' in res['msg']
    kind, res, _w = run_module(session_handoff, dict(args, session='lap-8', brief=dict(BRIEF, verify='')))
    assert kind == 'fail' and 'brief.verify' in res['msg']


@pytest.mark.parametrize('successor, switch, recorded', [
    ('docs', False, 'docs'),                # untagged, switch off: it follows the session's host
    ('docs@ch-w1', True, 'docs@ch-w1'),     # addressed: kept whatever the switch
    ('any-docs', False, 'any-docs'),        # dispatched: kept whatever the switch
])
def test_laptop_handoff_names_the_successor_by_the_one_rule(run_module, ledger_url, successor, switch, recorded):
    ledger = ledger_of(ledger_url)
    args = dict(ledger, session='lap-7', successor=successor, brief=BRIEF, host='laptop', master='stijn')
    if switch:
        args['dispatch_by_default'] = True
    kind, res, _w = run_module(session_handoff, args)
    assert kind == 'exit' and res['handoff'] == recorded
    with SessionStore(**ledger) as store:
        assert store.get('lap-7')['handoff'] == recorded


def test_sessions_info_shows_hops_claims_and_waits(run_module, ledger_url):
    ledger = ledger_of(ledger_url)
    with SessionStore(**ledger) as store:
        store.close('lap-7', parse_handoff({'successor': 'any-docs', 'brief': BRIEF}), now='2026-12-01T09:00:00Z',
                    create={'name': 'lap-7', 'host': 'laptop', 'master': 'stijn'})
        store.close('lap-9', parse_handoff({'successor': 'any-web', 'brief': BRIEF}), now='2026-12-01T09:20:00Z',
                    create={'name': 'lap-9', 'host': 'laptop', 'master': 'stijn'})
        with HandoffStore(**ledger) as claims:
            claims.claim('lap-7', 'any-docs', 'desk-2', now='2026-12-01T09:01:00Z')
        ident = successor_session_id('lap-7', 'any-docs')
        store.start_successor(store.get('lap-7'), ident, 'desk-2', 'fleet1', 'chain-' + ident, 'desk-2-docs', now='2026-12-01T09:01:00Z')
    kind, res, _w = run_module(sessions_info, dict(ledger, now=NOW))
    assert kind == 'exit' and not res['changed']
    chain = [c for c in res['chains'] if c['root'] == 'lap-7'][0]
    assert [(h['hop'], h['host'], h['state']) for h in chain['hops']] == [(0, 'laptop', 'closed'), (1, 'desk-2', 'open')]
    assert chain['hops'][1]['claimed_by'] == 'desk-2'
    assert res['waiting'] == [{'parent': 'lap-9', 'successor': 'any-web', 'host': 'laptop',
                               'since': '2026-12-01T09:20:00.000000Z', 'waited_s': 420.0}]


def test_sessions_info_local_reads_this_masters_losses_and_no_ledger(run_module, tmp_path):
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain.tick import LocalRecord
    record = LocalRecord(str(tmp_path))
    record.lose('lap-7', 'any-docs', 'desk-2', '2026-12-01T09:01:00.000000Z', 'desk-2-docs-1a2b3c4d')
    record.lose('a/lap-9', 'any-web', 'desk-3 (master fleet2)', '2026-12-01T09:02:00.000000Z', 'desk-3-web-5e6f7a8b')
    kind, res, _w = run_module(sessions_info, {'source': 'local', 'state_dir': str(tmp_path), 'path': str(tmp_path / 'none.db')})
    assert kind == 'exit' and not res['changed'] and res['chains'] == [] and res['waiting'] == []
    assert res['losses'] == [
        {'parent': 'a/lap-9', 'successor': 'any-web', 'holder': 'desk-3 (master fleet2)', 'at': '2026-12-01T09:02:00.000000Z',
         'workspace': 'desk-3-web-5e6f7a8b'},
        {'parent': 'lap-7', 'successor': 'any-docs', 'holder': 'desk-2', 'at': '2026-12-01T09:01:00.000000Z',
         'workspace': 'desk-2-docs-1a2b3c4d'}]
    assert not (tmp_path / 'none.db').exists(), 'source=local touches no ledger'
    kind, res, _w = run_module(sessions_info, {'source': 'local', 'state_dir': str(tmp_path / 'empty')})
    assert kind == 'exit' and res['losses'] == []
