# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/build/dependencies.py: every collection the shipped content uses is declared (issue 9)."""
from __future__ import annotations

import importlib.util
import pathlib
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location('fleet_dependencies', str(REPO / 'tests' / 'build' / 'dependencies.py'))
dependencies = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dependencies)

KNOWN = {'community.postgresql', 'containers.podman', 'ansible.posix', 'ansible.utils', 'community.general'}


def _tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


GALAXY_NONE = 'namespace: fleet\nname: dispatch\nversion: 0.1.0\ndependencies: {}\n'
GALAXY_PG = 'namespace: fleet\nname: dispatch\nversion: 0.1.0\ndependencies:\n  community.postgresql: ">=4.0.0"\n'
ROLE = '''\
    - name: Make the role
      community.postgresql.postgresql_user:
        name: ledger
    - name: Nested
      block:
        - name: A filter in a nested block
          ansible.builtin.debug:
            msg: "{{ x | community.general.to_days }}"
    '''


def test_the_repository_declares_every_collection_it_uses():
    problems, summary = dependencies.check(REPO)
    assert problems == []
    assert 'community.postgresql' in summary


def test_an_undeclared_module_collection_is_named_with_its_file(tmp_path):
    repo = _tree(tmp_path, {'galaxy.yml': GALAXY_NONE, 'roles/ledger/tasks/main.yml': ROLE})
    problems = dependencies.check(repo, known=KNOWN)[0]
    assert len(problems) == 2
    assert problems[0].startswith('community.general (community.general.to_days in roles/ledger/tasks/main.yml)')
    assert problems[1].startswith('community.postgresql (community.postgresql.postgresql_user in roles/ledger/tasks/main.yml)')
    assert all("galaxy.yml 'dependencies'" in p for p in problems)


def test_a_declared_collection_passes_and_builtin_and_own_need_nothing(tmp_path):
    repo = _tree(tmp_path, {
        'galaxy.yml': GALAXY_PG,
        'roles/ledger/tasks/main.yml': ROLE.replace(' | community.general.to_days', ''),
        'playbooks/p.yml': '''\
            - name: A play
              hosts: localhost
              roles:
                - fleet.dispatch.ledger
              tasks:
                - name: Own module
                  fleet.dispatch.board_info:
                    board: {}
            ''',
    })
    assert dependencies.check(repo, known=KNOWN)[0] == []


def test_lookups_and_roles_are_references_but_python_imports_are_not(tmp_path):
    repo = _tree(tmp_path, {
        'galaxy.yml': GALAXY_NONE,
        'plugins/lookup/mine.py': '''\
            from ansible.utils.display import Display
            from ansible.module_utils.basic import AnsibleModule
            EXAMPLES = """
            - name: Use it
              ansible.builtin.debug:
                msg: "{{ lookup('ansible.utils.index_of', [1], 'eq', 1) }}"
            """
            ''',
        'roles/r/tasks/main.yml': '''\
            - name: Include
              ansible.builtin.include_role:
                name: community.general.thing
            ''',
    })
    problems = dependencies.check(repo, known=KNOWN)[0]
    named = sorted(p.split(' ')[0] for p in problems)
    assert named == ['ansible.utils', 'community.general']
    assert 'ansible.utils.index_of' in ' '.join(problems)


def test_tests_only_collections_belong_in_tests_requirements(tmp_path):
    files = {
        'galaxy.yml': GALAXY_NONE,
        'roles/r/molecule/default/create.yml': '''\
            - name: Create
              hosts: localhost
              tasks:
                - name: A host
                  containers.podman.podman_container:
                    name: h
            ''',
    }
    problems = dependencies.check(_tree(tmp_path, files), known=KNOWN)[0]
    assert len(problems) == 1 and 'tests/requirements.yml' in problems[0] and problems[0].startswith('containers.podman')
    files['tests/requirements.yml'] = 'collections:\n  - name: containers.podman\n'
    assert dependencies.check(_tree(tmp_path, files), known=KNOWN)[0] == []


def test_install_declared_copies_from_the_roots_and_names_what_no_root_ships(tmp_path):
    root = tmp_path / 'site' / 'ansible_collections'
    _tree(root, {'community/postgresql/MANIFEST.json': '{"collection_info": {"version": "4.2.0"}}'})
    repo = _tree(tmp_path / 'repo', {'galaxy.yml': GALAXY_PG})
    dest = tmp_path / 'inst'
    assert dependencies.install_declared(repo, dest, roots=[root]) == []
    assert (dest / 'ansible_collections' / 'community' / 'postgresql' / 'MANIFEST.json').is_file()
    problems = dependencies.install_declared(repo, tmp_path / 'inst2', roots=[tmp_path / 'empty'])
    assert len(problems) == 1 and problems[0].startswith('community.postgresql is declared')


def test_a_builtin_name_that_core_only_redirects_is_the_target_collection(tmp_path):
    """ansible.builtin.filetree is community.general's lookup behind a redirect: roles/worker used it with
    community.general never declared, so an install with ansible-core alone failed in provision."""
    files = {'galaxy.yml': GALAXY_NONE,
             'roles/r/tasks/main.yml': '''\
                 - name: List
                   ansible.builtin.set_fact:
                     files: "{{ query('ansible.builtin.filetree', '/x') }}"
                 - name: A real builtin lookup is fine
                   ansible.builtin.debug:
                     msg: "{{ lookup('ansible.builtin.file', '/x') }}"
                 '''}
    redirects = dependencies.builtin_redirects()
    assert redirects.get('filetree') == 'community.general.filetree' and 'file' not in redirects and 'copy' not in redirects
    problems = dependencies.check(_tree(tmp_path, files), known=KNOWN)[0]
    assert len(problems) == 1 and problems[0].startswith('community.general (community.general.filetree (redirected from '
                                                         'ansible.builtin.filetree) in roles/r/tasks/main.yml)')
