# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""handoff_claim on the real ledger (SQLite and PostgreSQL): two hosts claim one any- successor, through main().

Check mode, real, check mode again, real again (STYLE.md's quartet); the loser; refusals;
fail CLOSED on an unreachable ledger with nothing written and no password in the message.
"""
from __future__ import annotations

import socket

import pytest

from racing import free_port

from ansible_collections.fleet.dispatch.plugins.module_utils._store.handoff import HandoffStore
from ansible_collections.fleet.dispatch.plugins.module_utils._store.sql import SqlStore
from ansible_collections.fleet.dispatch.plugins.modules import handoff_claim

NOW = '2026-11-29T09:27:00Z'
LATER = '2026-11-29T09:27:20Z'


@pytest.fixture
def ledger(ledger_url):
    """A ledger that exists (the module never creates a SQLite file); no handoffs table yet."""
    if 'path' in ledger_url:
        SqlStore(path=ledger_url['path'], create=True).close()
    return ledger_url


def claim(run_module, ledger, check=False, **kw):
    args = dict(ledger, parent='s-1842', successor='any-docs', now=NOW)
    args.update(kw)
    return run_module(handoff_claim, args, check=check)


def stored(ledger):
    store = SqlStore(**ledger)
    try:
        if not store.schema_versions('handoff'):
            return []
        return store.transaction(lambda tx: tx.all('SELECT id, holder, workspace FROM handoffs'))
    finally:
        store.close()


def test_seed_story_check_real_check_real(run_module, ledger):
    kind, res, warns = claim(run_module, ledger, check=True, host='desk-1')
    assert kind == 'exit' and res['changed'] is True and res['won'] is True and res['holder'] == 'desk-1', res
    assert stored(ledger) == [], 'check mode writes nothing, not even the table'

    kind, res, warns = claim(run_module, ledger, host='desk-1')
    assert kind == 'exit', res
    assert (res['changed'], res['won'], res['holder'], res['id'], res['workspace']) == (
        True, True, 'desk-1', 's-1842/any-docs', 'desk-1-docs-fe87daf4')
    assert res['claimed_at'] == '2026-11-29T09:27:00.000000Z'

    kind, res, warns = claim(run_module, ledger, check=True, host='desk-1')
    assert (kind, res['changed'], res['won']) == ('exit', False, True)

    kind, res, warns = claim(run_module, ledger, host='desk-1', now=LATER)
    assert (kind, res['changed'], res['won'], res['claimed_at']) == ('exit', False, True, '2026-11-29T09:27:00.000000Z')

    # the other desk machine, twenty seconds later: "already claimed", and it is not an error
    kind, res, warns = claim(run_module, ledger, host='desk-2', now=LATER)
    assert kind == 'exit' and res['changed'] is False and res['won'] is False, res
    assert res['holder'] == 'desk-1' and res['workspace'] == 'desk-1-docs-fe87daf4'
    assert res['why'].startswith('already claimed by desk-1')
    kind, res, warns = claim(run_module, ledger, check=True, host='desk-2')
    assert (res['changed'], res['won'], res['holder']) == (False, False, 'desk-1')
    assert stored(ledger) == [('s-1842/any-docs', 'desk-1', 'desk-1-docs-fe87daf4')]


def test_host_defaults_to_this_machine(run_module, ledger):
    kind, res, warns = claim(run_module, ledger)
    assert kind == 'exit' and res['won'] and res['holder'] == socket.gethostname()


@pytest.mark.parametrize('successor', ['docs', 'desk-1-docs-fe87daf4', 'any-', 'any-a/b'])
def test_untagged_successor_is_refused(run_module, ledger, successor):
    kind, res, warns = claim(run_module, ledger, successor=successor, host='desk-1')
    assert kind == 'fail' and 'not a dispatched handoff' in res['msg'], res
    assert stored(ledger) == []


def test_bad_now_is_refused(run_module, ledger):
    kind, res, warns = claim(run_module, ledger, now='yesterday', host='desk-1')
    assert kind == 'fail' and res['msg'].startswith('now:')


def test_unreachable_postgres_fails_closed(run_module):
    dsn = 'postgresql://fleet:s3cret-pw@127.0.0.1:%d/ledger' % free_port()
    kind, res, warns = run_module(handoff_claim, dict(dsn=dsn, parent='s-1', successor='any-docs', host='desk-1'))
    assert kind == 'fail' and res['won'] is False, res
    assert res['msg'].startswith('no launch:') and 'fix:' in res['msg'], res['msg']
    assert 's3cret-pw' not in res['msg'] and '********' in res['msg']
    assert dsn in run_module.module.no_log_values, 'Ansible masks the DSN in its own output too'


@pytest.mark.parametrize('where', ['missing-dir/ledger.sqlite3', 'typo.sqlite3'])
def test_missing_sqlite_ledger_fails_closed(run_module, tmp_path, where):
    kind, res, warns = run_module(handoff_claim, dict(path=str(tmp_path / where), parent='s-1', successor='any-docs',
                                                      host='desk-1'))
    assert kind == 'fail' and res['msg'].startswith('no launch:') and 'does not exist' in res['msg'], res
    assert list(tmp_path.iterdir()) == [], 'no ledger, no directory created: nothing written anywhere'


def test_unreachable_ledger_in_check_mode_reports(run_module, tmp_path):
    """D5: a dry run cannot launch, so it reports the unproven claim (won: false) and warns."""
    kind, res, warns = run_module(handoff_claim, dict(path=str(tmp_path / 'nope' / 'l.sqlite3'), parent='s-1',
                                                      successor='any-docs', host='desk-1'), check=True)
    assert kind == 'exit' and res['won'] is False and res['changed'] is False and res['error'], res
    assert warns and warns[0].startswith('no launch:')
    assert list(tmp_path.iterdir()) == []


def test_module_and_store_agree(run_module, ledger):
    """One implementation (D15): what the module wrote, the store reads back, and vice versa."""
    with HandoffStore(**ledger) as store:
        store.claim('s-9', 'any-tests', 'desk-3')
    kind, res, warns = claim(run_module, ledger, parent='s-9', successor='any-tests', host='desk-1')
    assert (res['won'], res['holder'], res['workspace']) == (False, 'desk-3', 'desk-3-tests-b3b1501e')
