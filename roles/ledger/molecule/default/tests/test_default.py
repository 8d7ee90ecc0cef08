# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""testinfra checks of fleet.dispatch.ledger on a real systemd host of the test bed.

The ledger REALLY serves a fleet here: the molecule controller (10.88.0.1 on the podman bridge,
inside the converge's ledger_allowed_networks) is the dispatcher. It opens the collection's own
``LedgerBoard(dsn=...)`` (which migrates its tables on first connect: the role creates none, D15)
and the ``postgres`` lease store, over TCP with the sentinel password.

The expectations are read from converge.yml beside this directory. testinfra logs in as
``tester`` and runs every command through ``sudo``. The password never appears on a command line
here: sudo logs every command line to the journal, one of the logs it must stay out of. The
tests run in file order; the log checks come last, after every step has logged.
"""
from __future__ import annotations

import os
import pathlib
import shlex
import subprocess

import psycopg
import pytest
import yaml
from psycopg.conninfo import make_conninfo

from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardUnreadable
from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import SqlLeaseStore
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard

SCENARIO = pathlib.Path(__file__).resolve().parent.parent
CONVERGE = yaml.safe_load((SCENARIO / 'converge.yml').read_text())[0]
VARS = CONVERGE['vars']
PASSWORD = VARS['ledger_password']
DATABASE = VARS['ledger_database']
USER = VARS['ledger_user']
NETWORKS = VARS['ledger_allowed_networks']
ADDRESS = '10.88.200.41'                # molecule.yml's ip: of fleet-ledger-a
PORT = 5432                             # the first Debian cluster's port (not chosen by the role)
HBA_BEGIN = '# BEGIN fleet.dispatch.ledger'
OPERATOR_LINE = "host    %s    %s    192.0.2.0/24    scram-sha-256    # the operator's own line" % (DATABASE, USER)
OPERATOR_FIRST = "# the operator's own comment, above everything"


def _secrets():
    """The password, and a distinctive fragment of it (a partial leak is a leak)."""
    return sorted({PASSWORD, PASSWORD.split()[0]})


def _dsn(password=PASSWORD, user=USER, dbname=DATABASE):
    # connect_timeout: an unmeasured bound, not a tuning - a refused or answered connection
    # returns in milliseconds on the bridge; only an unreachable host waits it out.
    return make_conninfo(host=ADDRESS, port=PORT, user=user, password=password, dbname=dbname, connect_timeout=10)


def _psql(host, sql, db='postgres'):
    out = host.run('runuser -u postgres -- psql -X -q -At -d %s -c %s' % (shlex.quote(db), shlex.quote(sql)))
    assert out.rc == 0, out.stderr
    return out.stdout.strip()


def _cluster(host):
    out = host.run('pg_lsclusters --no-header')
    assert out.rc == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.split()[1:2] == ['main']]
    assert len(rows) == 1, out.stdout
    return rows[0]


# --- the server --------------------------------------------------------------------------------

def test_postgresql_is_enabled_and_running(host):
    assert host.service('postgresql').is_enabled
    assert host.service('postgresql').is_running
    version, _name, port, status = _cluster(host)[:4]
    assert status == 'online' and int(port) == PORT
    unit = host.service('postgresql@%s-main' % version)
    assert unit.is_running and unit.is_enabled


def test_listens_on_the_host_address_and_loopback_only(host):
    out = host.run('ss -Hltn')
    assert out.rc == 0, out.stderr
    listening = sorted(line.split()[3] for line in out.stdout.splitlines() if line.split()[3].endswith(':%d' % PORT))
    assert '%s:%d' % (ADDRESS, PORT) in listening, listening
    assert '127.0.0.1:%d' % PORT in listening, listening
    assert '0.0.0.0:%d' % PORT not in listening and '*:%d' % PORT not in listening, listening
    assert _psql(host, 'SHOW listen_addresses') == ','.join(VARS['ledger_listen_addresses'])


def test_the_password_is_stored_as_scram(host):
    assert _psql(host, 'SHOW password_encryption') == 'scram-sha-256'
    # the verifier's prefix only: never print the verifier itself
    assert _psql(host, "SELECT left(rolpassword, 14) FROM pg_authid WHERE rolname = '%s'" % USER) == 'SCRAM-SHA-256$'
    assert _psql(host, "SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = '%s'"
                 % USER) == 't|f|f|f'
    assert _psql(host, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = '%s'" % DATABASE) == USER


def test_pg_hba_has_one_scram_line_per_allowed_network_in_the_marked_block(host):
    rules = _psql(host, "SELECT database, user_name, address, netmask, auth_method, error FROM pg_hba_file_rules "
                        "WHERE type = 'host' AND address NOT IN ('127.0.0.1', '::1')")
    assert rules.splitlines() == ['{%s}|{%s}|10.88.0.0|255.255.0.0|scram-sha-256|' % (DATABASE, USER)], rules
    assert NETWORKS == ['10.88.0.0/16']
    content = host.file(_hba_path(host)).content_string
    assert content.count(HBA_BEGIN) == 1 and content.count('# END fleet.dispatch.ledger') == 1


def _hba_path(host):
    return '/etc/postgresql/%s/main/pg_hba.conf' % _cluster(host)[0]


def test_the_role_created_no_table(host):
    """D15: the collection migrates its own tables on first connect; the role creates none."""
    assert _psql(host, "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
                 db=DATABASE) == '0'


# --- the fleet's view, from the controller -----------------------------------------------------

def test_the_ledger_board_connects_migrates_and_round_trips_an_item(host):
    board = LedgerBoard(dsn=_dsn())
    try:
        assert board.backend == 'postgres'
        assert board.migrated, 'the first connect migrates the empty database'
        assert PASSWORD not in board.location and 'sentinel' not in board.location, 'the DSN must be redacted'
        made = board.upsert_item(title='ledger role probe', body='from the molecule controller', status='Todo')
        assert made['created'] is True
        number = made['number']
    finally:
        board.close()
    again = LedgerBoard(dsn=_dsn())          # a second dispatcher: a new connection, nothing to migrate
    try:
        assert not again.migrated
        item = again.get(number)
        assert (item.title, item.status, item.state) == ('ledger role probe', 'Todo', 'open')
    finally:
        again.close()
    # the tables are the owner's: the collection made them as the ledger's user
    assert _psql(host, "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public'", db=DATABASE) == USER


def test_the_postgres_lease_store_grants_one_owner_and_refuses_a_second(host):
    first, second = SqlLeaseStore(dsn=_dsn()), SqlLeaseStore(dsn=_dsn())
    try:
        # ttl: any value longer than this test works; 60 s is not a tuning
        won = first.acquire('fleet-ledger-role-probe', 'dispatcher-a', 60)
        assert won.acquired and not won.degraded, won
        lost = second.acquire('fleet-ledger-role-probe', 'dispatcher-b', 60)
        assert not lost.acquired and not lost.degraded, lost
        assert lost.holder == 'dispatcher-a', lost
        assert first.release('fleet-ledger-role-probe', 'dispatcher-a').released
    finally:
        first.close()
        second.close()


def test_a_wrong_password_is_refused(host):
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(_dsn(password='not-the-ledger-password')).close()
    assert 'password authentication failed' in str(refused.value), str(refused.value)
    with pytest.raises(BoardUnreadable) as unreadable:
        LedgerBoard(dsn=_dsn(password='not-the-ledger-password'))
    assert 'not-the-ledger-password' not in str(unreadable.value), 'the DSN must be redacted'


def test_the_block_admits_only_the_ledger_user_to_the_ledger_database(host):
    for user, dbname in ((USER, 'postgres'), ('postgres', DATABASE)):
        with pytest.raises(psycopg.OperationalError) as refused:
            psycopg.connect(_dsn(user=user, dbname=dbname)).close()
        assert 'no pg_hba.conf entry' in str(refused.value), (user, dbname, str(refused.value))


def test_the_password_is_in_no_ps_line_of_an_open_session(host):
    with psycopg.connect(_dsn()) as conn:
        conn.execute('SELECT 1')
        out = host.run('ps -eo args')
    assert out.rc == 0, out.stderr
    assert '%s %s 10.88.0.1' % (USER, DATABASE) in out.stdout, 'the session is not in ps: nothing proven\n' + out.stdout
    for secret in _secrets():
        assert secret not in out.stdout, 'the password is in ps output'


# --- a second converge keeps the operator's lines -------------------------------------------------

def test_an_operators_own_pg_hba_lines_survive_a_second_converge(host):
    path = _hba_path(host)
    added = host.run('sed -i %s %s && printf %%s\\\\n %s >> %s' % (
        shlex.quote('1i ' + OPERATOR_FIRST), path, shlex.quote(OPERATOR_LINE), path))
    assert added.rc == 0, added.stderr
    env = dict(os.environ)
    run = subprocess.run(['ansible-playbook', '-i', env['MOLECULE_INVENTORY_FILE'], '--diff', str(SCENARIO / 'converge.yml')],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert run.returncode == 0, run.stdout[-4000:]
    recap = run.stdout[run.stdout.index('PLAY RECAP'):]
    assert ' changed=0 ' in recap and ' failed=0 ' in recap, recap
    lines = host.file(path).content_string.splitlines()
    assert lines[0] == OPERATOR_FIRST and lines[-1] == OPERATOR_LINE, lines
    assert sum(1 for line in lines if line.startswith(HBA_BEGIN)) == 1
    assert _psql(host, "SELECT count(*) FROM pg_hba_file_rules WHERE address = '192.0.2.0'") == '1'


# --- the logs (last: after every step above has logged) ------------------------------------------

def test_the_password_appears_in_no_ansible_log(host):
    log = os.environ.get('FLEET_LEDGER_ANSIBLE_LOG', '')
    assert log and os.path.isfile(log), 'no Ansible log at %r (molecule.yml sets ANSIBLE_LOG_PATH)' % log
    text = pathlib.Path(log).read_text(errors='replace')
    assert "Create the ledger's owner role" in text, 'the log does not cover the converge: nothing proven'
    for secret in _secrets():
        assert secret not in text, 'the password is in %s' % log


def test_the_password_appears_in_no_journal_line(host):
    out = host.run('journalctl --no-pager -o cat')
    assert out.rc == 0 and 'Invoked with' in out.stdout, 'journal unreadable or without module logs: nothing proven'
    assert 'COMMAND=' in out.stdout, 'no sudo command line in the journal: nothing proven'
    for secret in _secrets():
        assert secret not in out.stdout, 'the password is in the journal'


def test_the_password_appears_in_no_server_log(host):
    out = host.run('cat /var/log/postgresql/postgresql-%s-main.log' % _cluster(host)[0])
    assert out.rc == 0, out.stderr
    assert 'password authentication failed' in out.stdout, 'the refused login is not logged: nothing proven'
    for secret in _secrets():
        assert secret not in out.stdout, 'the password is in the server log'
