# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 13: every child the test harnesses start gets its own stdin (its input, or /dev/null).

Concurrent ansible-playbooks that share the parent's stdin abort with "Ansible requires blocking
IO ... Non-blocking file handles detected: <stdin>" (6 of 60 in one staggered race run), and a race
run that lost playbooks to a harness error is not a reading. This reads every ``subprocess`` call in
the harness files, so a new one without ``stdin=``/``input=`` cannot come back unnoticed.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
HARNESS = sorted(list((REPO / 'tests' / 'integration').glob('*.py')) + [REPO / 'tests' / 'racing.py']
                 + list((REPO / 'benchmarks').glob('*.py')))
STARTS = {'run', 'Popen', 'call', 'check_call', 'check_output'}


def _unguarded(path, root=REPO):
    tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STARTS
                and isinstance(node.func.value, ast.Name) and node.func.value.id in ('subprocess', 'asyncio')):
            continue
        if not {k.arg for k in node.keywords} & {'stdin', 'input'}:
            yield '%s:%d' % (path.relative_to(root), node.lineno)


def test_the_harness_files_exist():
    assert (REPO / 'tests' / 'integration' / 'conftest.py') in HARNESS and len(HARNESS) > 3


@pytest.mark.parametrize('path', HARNESS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_child_gets_its_own_stdin(path):
    assert list(_unguarded(path)) == [], 'start these with stdin=subprocess.DEVNULL (or input=...)'


def test_the_check_sees_a_call_without_stdin(tmp_path):
    bad = tmp_path / 'bad.py'
    bad.write_text("import subprocess\nsubprocess.run(['true'], check=False)\nsubprocess.run(['true'], stdin=subprocess.DEVNULL)\n")
    assert list(_unguarded(bad, root=tmp_path)) == ['bad.py:2']
