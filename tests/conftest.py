"""Test-wide setup: the collection import path and the shared service fixtures.

* The repository is made importable as ``ansible_collections.fleet.dispatch`` through a
  symlink in a per-checkout cache directory (no copy, so tests always run the shipped bytes
  — D15's testing corollary), and ``ANSIBLE_COLLECTIONS_PATH`` points there so any
  ``ansible``/``ansible-playbook`` a test starts finds the same collection.
* ``pg_dsn`` gives each test module its own fresh PostgreSQL database on the server named by
  ``FLEET_TEST_PG_DSN`` (``make test`` starts Debian's PostgreSQL and sets it). Where no server
  answers the tests skip and say why — unless ``FLEET_REQUIRE_PG=1`` (CI), where they fail.
* ``ledger_url`` is parametrised over SQLite and PostgreSQL so one test body covers both.
"""
from __future__ import annotations

import os
import pathlib
import sys
import uuid

import pytest

from collection_path import collection_root

REPO = pathlib.Path(__file__).resolve().parent.parent
SHARED = REPO.parent / 'shared'

COLLECTIONS_ROOT = collection_root(REPO)
if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))
# Ours first; a path the caller set stays after it (the cores smoke brings ansible.posix that way:
# no `ansible` package pairs with the newest core).
os.environ['ANSIBLE_COLLECTIONS_PATH'] = os.pathsep.join(
    [str(COLLECTIONS_ROOT)] + [p for p in os.environ.get('ANSIBLE_COLLECTIONS_PATH', '').split(os.pathsep)
                               if p and p != str(COLLECTIONS_ROOT)])
os.environ.setdefault('ANSIBLE_COLLECTIONS_SCAN_SYS_PATH', 'false')

# Ansible's own collection finder serves every ``ansible_collections.*`` import from here on, as
# it does in a real run: plugins then load through ``lookup_loader``/``filter_loader`` by FQCN,
# and modules and tests share one copy of each module_utils file.
from ansible.plugins.loader import init_plugin_loader  # noqa: E402  (needs the path set above)
from ansible.utils.collection_loader import AnsibleCollectionConfig  # noqa: E402

if not AnsibleCollectionConfig.collection_finder:
    init_plugin_loader([str(COLLECTIONS_ROOT)])

DEFAULT_PG = 'postgresql://fleet:fleet@127.0.0.1:5432/postgres'


def _pg_admin():
    dsn = os.environ.get('FLEET_TEST_PG_DSN', DEFAULT_PG)
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - environment dependent
        return None, 'psycopg is not installed (%s); run make test' % exc
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=3)
    except Exception as exc:  # noqa: BLE001 - any failure means "no server here"
        return None, 'no PostgreSQL answers at %s (%s); make test starts one' % (dsn, exc)
    return (dsn, conn), None


def _skip_or_fail(reason):
    if os.environ.get('FLEET_REQUIRE_PG') == '1':
        pytest.fail('PostgreSQL is required here (FLEET_REQUIRE_PG=1): ' + reason)
    pytest.skip(reason)


def _fresh_database():
    """Create an empty database on the test server; returns (dsn, drop) or skips/fails saying why."""
    found, reason = _pg_admin()
    if found is None:
        _skip_or_fail(reason)
    dsn, conn = found
    name = 'fleet_t_' + uuid.uuid4().hex[:10]
    conn.execute('CREATE DATABASE %s' % name)
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    params = conninfo_to_dict(dsn)
    params['dbname'] = name

    def drop():
        conn.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
        conn.close()
    return make_conninfo(**params), drop


@pytest.fixture(scope='session')
def fresh_database():
    """The factory itself, for fixtures that need a database per parameter: ``dsn, drop = fresh_database()``."""
    return _fresh_database


@pytest.fixture
def pg_role():
    """A factory of PostgreSQL login roles beside the database's owner: ``pg_role(dsn, *grants)`` creates
    one (each grant a statement with ``%s`` for the role, run as ``dsn``'s user) and returns ``dsn`` logged
    in as it. The roles are dropped after the test (their grants revoked first, while the database is there)."""
    made = []

    def make(dsn, *grants):
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
        name = 'fleet_r_' + uuid.uuid4().hex[:10]
        with psycopg.connect(dsn, autocommit=True) as conn:
            try:
                conn.execute("CREATE ROLE %s LOGIN PASSWORD 'role'" % name)
            except psycopg.errors.InsufficientPrivilege as exc:
                _skip_or_fail('the test server\'s role cannot create roles (%s): tests/services/postgres.sh '
                              'grants it CREATEROLE' % exc)
            made.append((dsn, name))
            for grant in grants:
                conn.execute(grant % name)
        params = conninfo_to_dict(dsn)
        params.update(user=name, password='role')
        return make_conninfo(**params)
    yield make
    import psycopg
    for dsn, name in made:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute('REVOKE ALL ON ALL TABLES IN SCHEMA public FROM %s' % name)
        except psycopg.Error:
            pass   # the database is gone, and its grants with it
        found, _reason = _pg_admin()
        if found is not None:
            found[1].execute('DROP ROLE IF EXISTS %s' % name)
            found[1].close()


@pytest.fixture(scope='module')
def pg_dsn():
    """A DSN for a fresh, empty PostgreSQL database, dropped after the module."""
    dsn, drop = _fresh_database()
    try:
        yield dsn
    finally:
        drop()


@pytest.fixture(params=['sqlite', 'postgres'])
def ledger_url(request, tmp_path):
    """A ledger location for both backends: ``{'path': FILE}`` or ``{'dsn': DSN}``.

    Each test gets an empty store: a new SQLite file, or a new PostgreSQL database.
    """
    if request.param == 'sqlite':
        return {'path': str(tmp_path / 'ledger.sqlite3')}
    dsn, drop = _fresh_database()
    request.addfinalizer(drop)
    return {'dsn': dsn}


@pytest.fixture(scope='session')
def shared_dir():
    """``../shared`` beside the checkout (the GitHub schema, the test-bed facts), or skip."""
    if not SHARED.is_dir():
        pytest.skip('../shared is absent beside the checkout (%s): these tests read GitHub\'s '
                    'schema and test-bed facts from it' % SHARED)
    return SHARED


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'playbook: runs whole playbooks (ansible-playbook processes); the fast tier '
                   '(`make check`) leaves these out, `make test` runs them')
    config.addinivalue_line(
        'markers', 'main_core: runs `make demo` or tests/run, which bootstrap the main venv (ansible-core of '
                   'requirements-dev.txt): only ever run on that core')


_RUNS_PLAYBOOKS = {}


def pytest_collection_modifyitems(config, items):
    """Mark ``playbook`` every test of a module that runs whole playbooks: one under a
    ``playbooks`` directory, named for them, or that starts ``ansible-playbook`` itself. Two thirds
    of the unit suite's time is theirs (about 10 s a playbook on 2 cores)."""
    for item in items:
        path = pathlib.Path(str(item.fspath))
        if path not in _RUNS_PLAYBOOKS:
            try:
                text = path.read_text()
            except (OSError, UnicodeDecodeError):
                text = ''
            _RUNS_PLAYBOOKS[path] = 'playbooks' in path.parts or 'playbook' in path.name or 'ansible-playbook' in text
        if _RUNS_PLAYBOOKS[path]:
            item.add_marker(pytest.mark.playbook)
