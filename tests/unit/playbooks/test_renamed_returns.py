# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``board_info``'s ``items`` is ``board_items`` now (``units_info``'s is ``live_items``): in a template
``result.items`` is the dict's own method, never the list (ansible-core 2.21's validate-modules refuses
the key for that). The old key stays until 1.0.0 with the same value, tagged deprecated.

Where the cores differ: ansible-core 2.21 carries a module's ``deprecate_value`` tag to the controller
and warns where a playbook reads ``result['items']``; 2.19 and 2.20 return the same value silently
(read on this machine's pinned cores, tests/cores/run). Both are asserted, per core.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import ansible

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board

BIN = pathlib.Path(sys.executable).parent
CORE = tuple(int(part) for part in ansible.__version__.split('.')[:2])
WARNING = "The return value 'items' is renamed to 'board_items'"

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
                      'dot_is_the_method': board.items is callable%(old)s} | to_json }}"
"""


def _run(tmp_path, read_old):
    ledger = tmp_path / 'ledger.sqlite3'
    with open_board({'kind': 'ledger', 'path': str(ledger), 'create': True}) as b:
        b.upsert_item(number=7, title='seven', status='Ready')
        b.upsert_item(number=8, title='eight', status='Ready')
    out = tmp_path / 'out.json'
    old = ", 'old': board['items'] | map(attribute='number') | list" if read_old else ''
    book = tmp_path / 'play.yml'
    book.write_text(PLAY % {'ledger': ledger, 'out': out, 'old': old})
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_DEPRECATION_WARNINGS='true')
    res = subprocess.run([str(BIN / 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                          '-e', 'ansible_python_interpreter=%s' % sys.executable, str(book)],
                         env=env, capture_output=True, text=True, check=False, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(out.read_text()), res.stdout + res.stderr


def test_the_new_key_reads_with_dot_notation_and_the_old_one_could_not(tmp_path):
    got, output = _run(tmp_path, read_old=False)
    assert got == {'new': [7, 8], 'dot_is_the_method': True}
    assert WARNING not in output          # a playbook that reads only the new key is not warned


def test_the_old_key_keeps_its_value_and_warns_where_the_core_can(tmp_path):
    got, output = _run(tmp_path, read_old=True)
    assert got['old'] == got['new'] == [7, 8]
    if CORE >= (2, 21):
        assert WARNING in output and 'version 1.0.0' in output, output
    else:
        assert WARNING not in output, 'this core now warns too: update the docstring and this test'


def test_the_shipped_dispatch_path_never_reads_the_deprecated_key(tmp_path):
    """The role must not trip its own deprecation: the sweep and the status playbook on a ledger board
    (plan mode; on 2.21 a read of board_info's old key, or a template of the whole result, would warn)."""
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
        assert "return value 'items'" not in res.stdout + res.stderr, book
