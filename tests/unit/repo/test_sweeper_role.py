# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweeper role's controller recipe, read from its files: the pins it installs are the ones CI
tests, every default is mirrored in the argument spec, the unit runs the venv's ansible-playbook,
and the SSH private key only ever travels in a no_log task's content, never in an argv (D3 for the
PATH; the real install runs in the role's molecule scenario).
"""
from __future__ import annotations

import pathlib
import re

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = pathlib.Path(__file__).resolve().parents[3]
ROLE = REPO / 'roles' / 'sweeper'
DEFAULTS = yaml.safe_load((ROLE / 'defaults' / 'main.yml').read_text())
SPEC = yaml.safe_load((ROLE / 'meta' / 'argument_specs.yml').read_text())['argument_specs']['main']['options']
SENTINEL_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nsentinel-9c1e-private\n-----END OPENSSH PRIVATE KEY-----'


def _pins():
    pins = {}
    for line in (REPO / 'requirements-dev.txt').read_text().splitlines():
        match = re.match(r'^([A-Za-z0-9_.\-\[\]]+)==(\S+)$', line.strip())
        if match:
            pins[match.group(1)] = line.strip()
    return pins


def _render(template, **overrides):
    variables = dict(DEFAULTS, ansible_managed='Ansible managed')
    variables.update(overrides)
    variables = dict((k, trust_as_template(v) if isinstance(v, str) else v) for k, v in variables.items())
    templar = Templar(loader=DataLoader(), variables=variables)
    return templar.template(trust_as_template((ROLE / 'templates' / template).read_text()))


def _tasks(name):
    return yaml.safe_load((ROLE / 'tasks' / name).read_text())


def test_the_installed_versions_are_the_ones_ci_tests():
    pins = _pins()
    assert DEFAULTS['sweeper_ansible_core'] == pins['ansible-core'], pins['ansible-core']
    assert DEFAULTS['sweeper_psycopg'] == pins['psycopg[binary]'], pins['psycopg[binary]']
    # the collection's other runtime dependencies, every one of requirements.txt but psycopg
    runtime = [re.split(r'[<>=\[]', line.strip())[0] for line in (REPO / 'requirements.txt').read_text().splitlines()
               if line.strip() and not line.startswith('#')]
    assert sorted(DEFAULTS['sweeper_pip_packages']) == sorted(pins[name] for name in runtime if name != 'psycopg')


def test_every_default_is_in_the_argument_spec_with_the_same_default():
    assert set(DEFAULTS) == set(SPEC), sorted(set(DEFAULTS) ^ set(SPEC))
    for name, value in DEFAULTS.items():
        assert SPEC[name].get('description'), name
        assert SPEC[name].get('default') == value, (name, SPEC[name].get('default'), value)


@pytest.mark.parametrize('install,path', [
    (True, 'PATH=/opt/fleet-ansible/bin:/usr/local/bin:/usr/bin:/bin'),
    (False, 'PATH=/usr/local/bin:/usr/bin:/bin'),
])
def test_the_unit_runs_the_venvs_ansible_playbook_when_the_role_installs_it(install, path):
    unit = _render('fleet-sweeper.service.j2', sweeper_install=install, sweeper_ssh_private_key=SENTINEL_KEY)
    assert 'Environment="%s"' % path in unit.splitlines(), unit
    assert 'Environment="ANSIBLE_COLLECTIONS_PATH=/opt/fleet-collections"' in unit.splitlines()
    assert '"ansible-playbook" "-i"' in unit
    assert 'sentinel-9c1e' not in unit


def test_an_empty_collections_path_leaves_ansibles_default():
    unit = _render('fleet-sweeper.service.j2', sweeper_collections_path='')
    assert 'ANSIBLE_COLLECTIONS_PATH' not in unit


def _walk(tasks):
    for task in tasks:
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from _walk(task.get(key) or [])


def test_the_private_key_travels_only_in_no_log_content_never_in_an_argv():
    writes = [t for t in _walk(_tasks('ssh.yml')) if 'sweeper_ssh_private_key' in str(t.get('ansible.builtin.copy', ''))]
    assert len(writes) == 1, writes
    assert writes[0].get('no_log') is True and writes[0].get('diff') is False, writes[0]
    assert writes[0]['ansible.builtin.copy']['mode'] == '0600'
    for task in _walk(_tasks('ssh.yml') + _tasks('install.yml') + _tasks('main.yml')):
        for module in ('ansible.builtin.command', 'ansible.builtin.shell'):
            if module in task:
                assert 'sweeper_ssh_private_key' not in str(task[module]), task
                assert 'sweeper_pip_ca_bundle' not in str(task[module]) or 'pip-ca.pem' in str(task.get('environment')), task


def _expr(task_name, key):
    task = [t for t in _tasks('install.yml') if t['name'] == task_name][0]
    return task['ansible.builtin.command'][key]


def _eval(expr, **variables):
    merged = dict(DEFAULTS)
    merged.update(variables)
    merged = dict((k, trust_as_template(v) if isinstance(v, str) else v) for k, v in merged.items())
    return Templar(loader=DataLoader(), variables=merged).template(trust_as_template(expr))


def test_pip_installs_the_pins_and_only_a_named_psycopg():
    expr = _expr('Install ansible-core, psycopg and the extra packages in the venv', 'argv')
    argv = _eval(expr)
    assert argv[0] == '/opt/fleet-ansible/bin/pip' and argv[1] == 'install'
    assert argv[5:] == ['ansible-core==2.19.14', 'psycopg[binary]==3.3.9', 'requests==2.34.2', 'jmespath==1.1.0'], argv
    argv = _eval(expr, sweeper_psycopg='', sweeper_pip_packages=['requests==2.34.2'])
    assert argv[5:] == ['ansible-core==2.19.14', 'requests==2.34.2'], argv


@pytest.mark.parametrize('source,tarball', [
    ('/tmp/build/fleet-dispatch-0.1.0.tar.gz', True),
    ('fleet.dispatch:==0.1.0', False),
    ('git+https://example.invalid/fleet/dispatch.git,main', False),
])
def test_a_tarball_is_copied_and_forced_a_name_goes_to_galaxy_as_is(source, tarball):
    main = _tasks('main.yml')
    include = [t for t in main if t.get('ansible.builtin.include_tasks') == 'install.yml'][0]
    is_tarball = _eval(include['vars']['_sweeper_from_tarball'], sweeper_collection_source=source)
    assert bool(is_tarball) is tarball
    argv = _eval(_expr('Install the collection', 'argv'), sweeper_collection_source=source, _sweeper_from_tarball=is_tarball)
    assert argv[:5] == ['/opt/fleet-ansible/bin/ansible-galaxy', 'collection', 'install', '-p', '/opt/fleet-collections']
    assert ('--force' in argv) is tarball and '--no-deps' in argv
    assert argv[-1] == ('/opt/fleet-ansible/fleet-dispatch.tar.gz' if tarball else source)
