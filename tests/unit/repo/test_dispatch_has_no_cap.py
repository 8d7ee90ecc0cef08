# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""D13 🔴: no concurrency cap and no stagger in the dispatch path. "A cap only bounds useful work":
the attempt cap and the capacity cooldowns bound waste. The seed deleted a stagger that had come
back; this reads every task and play of the path so neither can return unnoticed.
"""
from __future__ import annotations

import pathlib

import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
PATH_FILES = sorted(list((REPO / 'roles' / 'dispatch' / 'tasks').glob('*.yml')) + list((REPO / 'playbooks').glob('*.yml')))
FORBIDDEN_MODULES = {'pause', 'ansible.builtin.pause', 'wait_for', 'ansible.builtin.wait_for'}
FORBIDDEN_KEYS = {'throttle', 'serial', 'max_fail_percentage', 'order'}


def _tasks(node):
    """Every mapping in the YAML tree (plays, blocks, tasks, handlers)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _tasks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _tasks(value)


def test_the_scan_reads_the_shared_path():
    names = set(p.name for p in PATH_FILES)
    assert {'apply.yml', 'main.yml', 'sweep.yml', 'dispatch.yml'} <= names, names


def test_no_pause_stagger_throttle_or_serial_in_the_dispatch_path():
    found = []
    for path in PATH_FILES:
        for task in _tasks(yaml.safe_load(path.read_text())):
            where = '%s: %s' % (path.relative_to(REPO), task.get('name', '(unnamed)'))
            found += ['%s uses %s' % (where, m) for m in FORBIDDEN_MODULES & set(task)]
            found += ['%s sets %s' % (where, k) for k in FORBIDDEN_KEYS & set(task)]
            if 'delay' in task and 'until' not in task:
                found.append('%s sets delay without until (a stagger)' % where)
    assert not found, 'D13: the dispatch path must not cap or stagger launches:\n' + '\n'.join(found)


def test_placement_takes_no_cap():
    """Placement's only inputs are candidates and masters (the filter and the decision it wraps):
    no max, limit or per-master cap can be passed."""
    import inspect
    from ansible_collections.fleet.dispatch.plugins.filter import dispatch as filters
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import plan as _plan
    for func in (filters.place, _plan.place):
        params = list(inspect.signature(func).parameters)
        assert len(params) == 2, params
        assert not [p for p in params if any(w in p.lower() for w in ('max', 'limit', 'cap', 'concurr'))], params
