# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The worker role writes each master's directories and files with ``fleet.dispatch.master_files``, one
module execution per master, never with a ``file``, ``copy`` or ``template`` task per path: each of those
is a module execution of its own (a loop item counted), and provisioning is one of CI's largest CPU costs
(benchmarks/RESULTS.md, "Worker provisioning"). A credentials template goes only as ``secret_content``
(no_log: never in a diff, a result or the worker's journal).
"""
from __future__ import annotations

import pathlib
import re

import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
TASKS = REPO / 'roles' / 'worker' / 'tasks'
PER_MASTER = ['master.yml', 'runner.yml', 'chain.yml']
PER_PATH = {'ansible.builtin.file', 'ansible.builtin.copy', 'ansible.builtin.template', 'file', 'copy', 'template'}


def _tasks(items):
    for task in items or []:
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from _tasks(task.get(key))


def test_no_master_file_is_written_by_a_task_of_its_own():
    found = {}
    for name in PER_MASTER:
        for task in _tasks(yaml.safe_load((TASKS / name).read_text())):
            if PER_PATH & set(task):
                found.setdefault(name, []).append(task.get('name'))
    assert found == {}, 'write these through fleet.dispatch.master_files (one execution per master): %s' % found


def test_each_master_is_converged_by_one_master_files_task():
    tasks = list(_tasks(yaml.safe_load((TASKS / 'master.yml').read_text())))
    writers = [t for t in tasks if 'fleet.dispatch.master_files' in t]
    assert len(writers) == 1 and 'loop' not in writers[0]


def test_credentials_templates_go_only_as_secret_content():
    text = (TASKS / 'master.yml').read_text()
    looked_up = re.findall(r"'(\w+)':\s*lookup\('ansible\.builtin\.template',\s*'([^']+)'", text)
    secret = [template for key, template in looked_up if 'credentials' in template]
    assert sorted(secret) == ['agent-credentials.env.j2', 'credentials.env.j2'], looked_up
    assert all(key == 'secret_content' for key, template in looked_up if 'credentials' in template), looked_up
