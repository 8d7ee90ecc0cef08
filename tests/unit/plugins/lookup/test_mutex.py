# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``fleet.dispatch.mutex`` lookup, loaded the way Ansible loads it (``lookup_loader.get``).

The lookup is thin; these tests pin what only the lookup does: option sources (direct, vars,
environment, documented defaults -- STYLE.md: kubernetes.core's lookup skips ``set_options`` and
silently ignores its documented defaults), the stderr warning on a degraded lease (D5), the DSN
password never leaving the plugin, and errors for caller mistakes.
"""
from __future__ import annotations

import datetime as dt
import json

import pytest

from ansible.errors import AnsibleError
from ansible.plugins.loader import lookup_loader

from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import (
    DEFAULT_TTL, LEASE_FILE, SqlLeaseStore)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import parse_time

ENV_VARS = ('FLEET_DISPATCH_LEASE_DIR', 'FLEET_DISPATCH_LEASE_PATH', 'FLEET_DISPATCH_LEASE_TTL', 'FLEET_DISPATCH_LEASE_BACKEND',
            'FLEET_DISPATCH_LEASE_DSN', 'FLEET_DISPATCH_LEASE_HEARTBEAT')


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def keepers(monkeypatch):
    """The keepers the lookup starts, recorded instead of forked (tests/unit/plugins/lookup/test_lease_keeper.py
    runs real ones): a list of (leases, owner, heartbeat, until)."""
    from ansible_collections.fleet.dispatch.plugins.plugin_utils import lease_keeper
    started = []
    monkeypatch.setattr(lease_keeper, 'start', lambda store, leases, owner, heartbeat, until, who:
                        started.append((leases, owner, heartbeat, until)) or True)
    return started


@pytest.fixture
def mutex():
    plugin = lookup_loader.get('fleet.dispatch.mutex')
    assert plugin is not None, 'fleet.dispatch.mutex did not load through the plugin loader'
    return plugin


@pytest.fixture
def warnings(monkeypatch):
    """Capture Display().warning calls of the lookup module (what reaches stderr)."""
    from ansible_collections.fleet.dispatch.plugins.lookup import mutex as mod
    seen = []
    monkeypatch.setattr(mod.display, 'warning', lambda msg, *a, **k: seen.append(msg))
    return seen


def _left(lease):
    return (parse_time(lease['expires_at']) - dt.datetime.now(dt.timezone.utc)).total_seconds()


def test_acquire_refuse_release_roundtrip(mutex, tmp_path, warnings):
    path = str(tmp_path)
    [a] = mutex.run(['task-42'], {}, owner='sweep-a', path=path)
    assert a['acquired'] is True and a['holder'] == 'sweep-a' and a['token'] == 1
    assert a['backend'] == 'sqlite' and a['store'] == str(tmp_path / LEASE_FILE), 'a directory means its leases.sqlite3'
    assert set(a) == {'name', 'acquired', 'owner', 'holder', 'token', 'expires_at', 'backend', 'store',
                      'degraded', 'released', 'why'}, 'the keys RETURN documents'
    [b] = mutex.run(['task-42'], {}, owner='hand-b', path=path)
    assert b['acquired'] is False and b['holder'] == 'sweep-a'
    [nb] = mutex.run(['task-42'], {}, owner='hand-b', path=path, state='released')
    assert nb['released'] is False and 'no-op' in nb['why']
    [rel] = mutex.run(['task-42'], {}, owner='sweep-a', path=path, state='released')
    assert rel['released'] is True and rel['token'] == 1
    [b2] = mutex.run(['task-42'], {}, owner='hand-b', path=path)
    assert b2['acquired'] is True and b2['token'] == 2
    assert warnings == [], 'a refusal is an answer, not a warning'


def test_reevaluation_by_same_owner_is_idempotent(mutex, tmp_path):
    """A lookup re-renders every time its variable is used: the same owner must never lock itself out."""
    results = [mutex.run(['task-42'], {}, owner='sweep-a', path=str(tmp_path))[0] for dummy in range(5)]
    assert all(r['acquired'] for r in results)
    assert len(set(r['token'] for r in results)) == 1


def test_terms_give_one_lease_each_in_order(mutex, tmp_path):
    mutex.run(['task-2'], {}, owner='other', path=str(tmp_path))
    out = mutex.run(['task-1', 'task-2', 'task-3'], {}, owner='me', path=str(tmp_path))
    assert [r['name'] for r in out] == ['task-1', 'task-2', 'task-3']
    assert [r['acquired'] for r in out] == [True, False, True]


def test_documented_defaults_apply(mutex, tmp_path, monkeypatch):
    """No ttl, no backend given: the documented defaults are used (set_options was called)."""
    monkeypatch.setenv('FLEET_DISPATCH_LEASE_PATH', str(tmp_path / 'from-env.sqlite3'))
    [lease] = mutex.run(['task-42'], {}, owner='sweep-a')
    assert lease['backend'] == 'sqlite'
    assert lease['store'] == str(tmp_path / 'from-env.sqlite3')
    assert 0 < _left(lease) <= 30, 'stored for one heartbeat: its keeper renews it'
    assert mutex.get_option('path') == str(tmp_path / 'from-env.sqlite3')
    assert mutex.get_option('heartbeat') == 30
    assert mutex.get_option('state') == 'acquired'


def test_default_store_is_the_state_dir_file(mutex, tmp_path, monkeypatch):
    """No path anywhere: leases.sqlite3 in the user's state dir, created with its directory."""
    monkeypatch.setenv('XDG_STATE_HOME', str(tmp_path / 'state'))
    [lease] = mutex.run(['task-42'], {}, owner='sweep-a')
    assert lease['store'] == str(tmp_path / 'state' / 'fleet-dispatch' / LEASE_FILE)
    assert lease['acquired'] and not lease['degraded'], lease['why']
    assert mutex.get_option('path') is None
    assert mutex.get_option('ttl') == DEFAULT_TTL
    assert mutex.get_option('backend') == 'sqlite'


def test_backend_file_is_refused_naming_the_backends(mutex, tmp_path):
    """``file`` named the retired flock store; it is no alias: the lookup refuses it with the valid choices."""
    with pytest.raises(Exception, match="Invalid value 'file' for config 'backend'"):
        mutex.run(['task-42'], {}, owner='sweep-a', backend='file', path=str(tmp_path))


@pytest.mark.parametrize('source', ['env', 'vars', 'direct'])
def test_option_sources(mutex, tmp_path, monkeypatch, source):
    where = str(tmp_path / source)
    variables, direct = {}, {'owner': 'sweep-a'}
    if source == 'env':
        monkeypatch.setenv('FLEET_DISPATCH_LEASE_PATH', where)
        monkeypatch.setenv('FLEET_DISPATCH_LEASE_TTL', '45')
    elif source == 'vars':
        variables = {'fleet_dispatch_lease_path': where, 'fleet_dispatch_lease_ttl': 45}
    else:
        direct.update(path=where, ttl='45')
    [lease] = mutex.run(['task-42'], variables, **direct)
    assert lease['store'] == where
    assert 0 < _left(lease) <= 30
    assert SqlLeaseStore(path=where).get('task-42').holder == 'sweep-a'


def test_one_keeper_per_call_for_the_leases_it_holds_capped_at_the_ttl(mutex, tmp_path, keepers):
    mutex.run(['task-2'], {}, owner='other', path=str(tmp_path), heartbeat=0)
    assert keepers == [], 'heartbeat 0: no keeper'
    out = mutex.run(['task-1', 'task-2', 'task-3'], {}, owner='me', path=str(tmp_path), ttl=120, heartbeat=6)
    assert [r['acquired'] for r in out] == [True, False, True]
    [(leases, owner, heartbeat, until)] = keepers
    assert (leases, owner, heartbeat) == ({'task-1': out[0]['token'], 'task-3': out[2]['token']}, 'me', 6.0)
    assert 0 < _left(out[0]) <= 6
    assert 110 < (parse_time(until) - dt.datetime.now(dt.timezone.utc)).total_seconds() <= 120, until
    mutex.run(['task-1'], {}, owner='me', path=str(tmp_path), state='released')
    assert len(keepers) == 1, 'a release starts no keeper'


def test_heartbeat_zero_or_not_below_the_ttl_stores_the_whole_ttl(mutex, tmp_path, keepers):
    [a] = mutex.run(['task-1'], {}, owner='me', path=str(tmp_path), ttl=90, heartbeat=0)
    [b] = mutex.run(['task-2'], {}, owner='me', path=str(tmp_path), ttl=20, heartbeat=30)
    assert 60 < _left(a) <= 90 and 0 < _left(b) <= 20 and keepers == []


def test_a_keeper_that_cannot_start_holds_for_the_ttl_and_says_so(mutex, tmp_path, warnings, monkeypatch):
    from ansible_collections.fleet.dispatch.plugins.plugin_utils import lease_keeper
    monkeypatch.setattr(lease_keeper, 'start', lambda *a: False)
    [lease] = mutex.run(['task-1'], {}, owner='me', path=str(tmp_path), ttl=90, heartbeat=5)
    assert lease['acquired'] and 60 < _left(lease) <= 90, lease
    assert len(warnings) == 1 and 'keeper could not start' in warnings[0]


def test_owner_from_vars(mutex, tmp_path):
    [lease] = mutex.run(['task-42'], {'fleet_dispatch_lease_owner': 'from-vars'}, path=str(tmp_path))
    assert lease['owner'] == 'from-vars' and lease['acquired']


@pytest.mark.parametrize('terms, kwargs', [
    (['task-42'], {}),                                      # no owner
    (['task-42'], {'owner': ''}),                           # empty owner
    (['task-42'], {'owner': 'a', 'backend': 'redis'}),      # not a documented choice
    (['task-42'], {'owner': 'a', 'state': 'held'}),
    (['task-42'], {'owner': 'a', 'ttl': 0}),
    (['task-42'], {'owner': 'a', 'ttl': -1}),
    ([''], {'owner': 'a'}),                                 # empty lease name
    (['task-42'], {'owner': 'a', 'backend': 'postgres'}),   # postgres without a dsn
])
def test_caller_mistakes_are_errors(mutex, tmp_path, terms, kwargs):
    kwargs.setdefault('path', str(tmp_path))
    with pytest.raises(AnsibleError):
        mutex.run(terms, {}, **kwargs)


def test_unwritable_store_fails_open_with_a_warning(mutex, tmp_path, warnings):
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    [lease] = mutex.run(['task-42'], {}, owner='sweep-a', path=str(blocker / 'leases'))
    assert lease['acquired'] is True and lease['degraded'] is True
    assert len(warnings) == 1
    assert 'task-42' in warnings[0] and 'WITHOUT the lock' in warnings[0]
    assert str(blocker / 'leases') in warnings[0]


def test_degraded_warning_reaches_stderr(mutex, tmp_path, capsys):
    """Not just a call: the warning text is printed on stderr (D5: returning 0 is not silence)."""
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    mutex.run(['task-42'], {}, owner='sweep-a', path=str(blocker / 'leases'))
    err = capsys.readouterr().err
    assert 'WITHOUT the lock' in err


@pytest.mark.parametrize('dsn', [
    'postgresql://fleet:Pw-9s3cret@127.0.0.1:1/fleet',
    'host=127.0.0.1 port=1 user=fleet password=Pw-9s3cret dbname=fleet',
])
def test_dsn_password_never_echoed(mutex, warnings, dsn, monkeypatch):
    pytest.importorskip('psycopg')
    for kwargs in ({'dsn': dsn}, {}):
        if not kwargs:
            monkeypatch.setenv('FLEET_DISPATCH_LEASE_DSN', dsn)
        for state in ('acquired', 'released'):
            [lease] = mutex.run(['task-42'], {}, owner='a', backend='postgres', state=state, **kwargs)
            assert lease['degraded'] is True
            assert 'Pw-9s3cret' not in json.dumps(lease)
            assert '********' in lease['store']
    assert warnings and all('Pw-9s3cret' not in w for w in warnings)


def test_old_env_name_still_names_the_store(mutex, tmp_path, monkeypatch):
    """FLEET_DISPATCH_LEASE_DIR (the retired file backend's directory) means its leases.sqlite3."""
    (tmp_path / 'old').mkdir()
    monkeypatch.setenv('FLEET_DISPATCH_LEASE_DIR', str(tmp_path / 'old'))
    [lease] = mutex.run(['task-42'], {}, owner='sweep-a')
    assert lease['store'] == str(tmp_path / 'old' / LEASE_FILE)


def test_postgres_backend_through_the_lookup(mutex, pg_dsn, warnings):
    [a] = mutex.run(['task-42'], {}, owner='sweep-a', backend='postgres', dsn=pg_dsn, ttl=60)
    [b] = mutex.run(['task-42'], {}, owner='hand-b', backend='postgres', dsn=pg_dsn, ttl=60)
    [again] = mutex.run(['task-42'], {}, owner='sweep-a', backend='postgres', dsn=pg_dsn, ttl=60)
    assert a['acquired'] and not a['degraded'] and a['backend'] == 'postgres'
    assert not b['acquired'] and b['holder'] == 'sweep-a'
    assert again['acquired'] and again['token'] == a['token']
    [rel] = mutex.run(['task-42'], {}, owner='sweep-a', backend='postgresql', dsn=pg_dsn, state='released')
    assert rel['released'] is True, 'postgresql is a spelling of postgres: one store'
    assert 'fleet:fleet@' not in json.dumps([a, b, again, rel]), 'the store is shown without its password'
    assert warnings == []
