# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The status and sweep playbooks and the board modules, unchanged, against the fake GitHub.

``board: {kind: github, ...}`` is the only difference from a ledger fleet: the playbooks and
modules are run as shipped (``ansible-playbook`` in a subprocess, the collection resolved from
the working tree by tests/conftest.py), and they reach the fake on loopback.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

import pytest


REPO = pathlib.Path(__file__).resolve().parents[6]
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).with_name('ansible-playbook')
TOKEN = 'ghp_playbook_token'
UTC = _dt.timezone.utc


@pytest.fixture
def gh(fake_github):
    if not ANSIBLE_PLAYBOOK.exists():
        pytest.skip('no ansible-playbook beside %s' % sys.executable)
    fake = fake_github(TOKEN)
    store = fake.store
    blocker = store.add_issue('acme/app', 'blocker', project=('acme', 1), status='Backlog')
    store.add_issue('acme/app', 'free work', project=('acme', 1), status='Ready')
    held = store.add_issue('acme/app', 'held work', project=('acme', 1), status='Ready')
    store.add_blocker('acme/app', held['number'], 'acme/app', blocker['number'])
    done = store.add_issue('acme/app', 'done blocker', state='closed')
    freed = store.add_issue('acme/app', 'freed work', project=('acme', 1), status='Ready')
    store.add_blocker('acme/app', freed['number'], 'acme/app', done['number'])
    return fake


def board(gh, **extra):
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'api_url': gh.url, 'owner_type': 'organization'}
    spec.update(extra)
    return spec


def run_playbook(tmp_path, playbook, extra_vars, env=None):
    vars_file = tmp_path / 'vars.json'
    vars_file.write_text(json.dumps(extra_vars))
    environ = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
                   GITHUB_TOKEN=TOKEN, ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    environ.update(env or {})
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), '-i', 'localhost,', '-c', 'local', str(playbook), '-e', '@%s' % vars_file],
                          cwd=str(tmp_path), env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    return proc


def test_status_playbook_reads_the_github_board(gh, tmp_path):
    out = tmp_path / 'status.json'
    proc = run_playbook(tmp_path, REPO / 'playbooks' / 'status.yml',
                        {'dispatch_board': board(gh), 'dispatch_state_dir': str(tmp_path), 'dispatch_status_json': str(out)})
    assert proc.returncode == 0, proc.stdout
    status = json.loads(out.read_text())
    assert status['readable'] is True
    reasons = dict((i['title'], i['reason']) for i in status['items'])
    assert reasons == {'free work': 'eligible', 'held work': 'blocked', 'freed work': 'eligible'}
    assert status['cost']['cost'] >= 1 and status['cost']['remaining'] is not None
    assert TOKEN not in proc.stdout


def test_sweep_plans_the_eligible_items(gh, tmp_path):
    plan_json = tmp_path / 'plan.json'
    proc = run_playbook(tmp_path, REPO / 'playbooks' / 'sweep.yml',
                        {'dispatch_board': board(gh), 'dispatch_state_dir': str(tmp_path),
                         'dispatch_plan_json': str(plan_json)})
    assert proc.returncode == 0, proc.stdout
    plan = json.loads(plan_json.read_text())
    assert plan['readable'] is True
    # the sweep's read wrote every item to its table; plan.json names it
    titles = dict((i['number'], i['title']) for i in json.loads(pathlib.Path(plan['table']).read_text())['items'])
    assert [titles[n] for n in plan['skipped']] == ['held work']
    assert sorted(titles[n] for n in titles if n not in plan['skipped']) == ['free work', 'freed work']
    assert TOKEN not in proc.stdout


def test_an_unreadable_github_board_fails_apply_and_not_plan(gh, tmp_path):
    """D5/D20: a bad token is an unreadable queue -- fatal only in apply mode, reported in plan."""
    playbook = tmp_path / 'unreadable.yml'
    playbook.write_text('''---
- name: Read a GitHub board with a bad token
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Plan
      fleet.dispatch.board_info:
        board: "{{ b }}"
        mode: plan
      register: plan
    - name: Apply
      fleet.dispatch.board_info:
        board: "{{ b }}"
        mode: apply
      register: apply
      ignore_errors: true
    - name: Record
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ {'plan': plan, 'apply': apply} | to_json }}"
        mode: "0600"
''')
    out = tmp_path / 'out.json'
    proc = run_playbook(tmp_path, playbook, {'b': board(gh, token='wrong-token'), 'out': str(out)})
    assert proc.returncode == 0, proc.stdout
    got = json.loads(out.read_text())
    assert got['plan'].get('failed') is not True and got['plan']['readable'] is False
    assert got['plan']['candidates'] == [] and 'token is missing, expired or revoked' in got['plan']['error']
    assert got['apply']['failed'] is True and got['apply']['readable'] is False
    assert 'wrong-token' not in proc.stdout and 'wrong-token' not in out.read_text()


def test_board_marker_and_board_item_write_to_github(gh, tmp_path):
    playbook = tmp_path / 'write.yml'
    playbook.write_text('''---
- name: Write to the GitHub board
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Post a start marker
      fleet.dispatch.board_marker:
        board: "{{ b }}"
        number: 2
        kind: start
    - name: Move the item
      fleet.dispatch.board_item:
        board: "{{ b }}"
        number: 2
        status: In progress
''')
    proc = run_playbook(tmp_path, playbook, {'b': board(gh)})
    assert proc.returncode == 0, proc.stdout
    issue = gh.store.issue('acme/app', 2)
    assert len(issue['comments']) == 1
    assert gh.store.status_of('acme/app', 2) == 'In progress'
