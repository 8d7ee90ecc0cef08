# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``board_info`` returns its items as ``board_items`` (``units_info`` as ``live_items``), never as ``items``:
in a template ``result.items`` is the dict's own method, not the list (ansible-core 2.21's
validate-modules refuses the key for that). The collection was never released with ``items``, so no
deprecated copy is kept.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board

BIN = pathlib.Path(sys.executable).parent

PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - fleet.dispatch.board_info:
        board: {kind: ledger, path: %(ledger)s}
      register: board
    - ansible.builtin.copy:
        dest: %(out)s
        content: "{{ {'new': board.board_items | map(attribute='number') | list,
                      'dot_is_the_method': board.items is callable, 'has_items': 'items' in board} | to_json }}"
"""

# Ansible's own notice; a library's Python DeprecationWarning (cryptography's DSA notice under
# ansible-core 2.21) is not the collection's doing
DEPRECATION = '[DEPRECATION WARNING]'


def _run(tmp_path):
    ledger = tmp_path / 'ledger.sqlite3'
    with open_board({'kind': 'ledger', 'path': str(ledger), 'create': True}) as b:
        b.upsert_item(number=7, title='seven', status='Ready')
        b.upsert_item(number=8, title='eight', status='Ready')
    out = tmp_path / 'out.json'
    book = tmp_path / 'play.yml'
    book.write_text(PLAY % {'ledger': ledger, 'out': out})
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_DEPRECATION_WARNINGS='true')
    res = subprocess.run([str(BIN / 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                          '-e', 'ansible_python_interpreter=%s' % sys.executable, str(book)],
                         env=env, capture_output=True, text=True, check=False, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(out.read_text()), res.stdout + res.stderr


def test_the_items_read_with_dot_notation_and_no_items_key_shadows_the_method(tmp_path):
    got, output = _run(tmp_path)
    assert got == {'new': [7, 8], 'dot_is_the_method': True, 'has_items': False}
    assert DEPRECATION not in output, output


def test_the_shipped_dispatch_path_runs_without_a_deprecation(tmp_path):
    """The sweep and the status playbook on a ledger board (plan mode) print no deprecation."""
    ledger = tmp_path / 'ledger.sqlite3'
    with open_board({'kind': 'ledger', 'path': str(ledger), 'create': True}) as b:
        b.upsert_item(number=7, title='seven', status='Ready')
    repo = pathlib.Path(__file__).resolve().parents[3]
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_DEPRECATION_WARNINGS='true', XDG_STATE_HOME=str(tmp_path / 'state'))
    for book in ('sweep.yml', 'status.yml'):
        res = subprocess.run([str(BIN / 'ansible-playbook'), '-i', str(repo / 'inventory.example'), str(repo / 'playbooks' / book),
                              '-e', json.dumps({'dispatch_board': {'kind': 'ledger', 'path': str(ledger)}})],
                             env=env, capture_output=True, text=True, check=False, timeout=300, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stdout + res.stderr
        assert 'seven' in res.stdout or '#7' in res.stdout or ' 7 ' in res.stdout, res.stdout
        assert DEPRECATION not in res.stdout + res.stderr, book
