# -*- coding: utf-8 -*-
"""The roles call community.postgresql with its current option names, never a deprecated alias
(``port``, ``db``, ``database``, ``host``, ``login``, ``unix_socket``): each prints a deprecation on every run."""
from __future__ import annotations

import pathlib

import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
DEPRECATED = {'port', 'db', 'database', 'host', 'login', 'unix_socket'}


def _tasks(node):
    if isinstance(node, list):
        for entry in node:
            yield from _tasks(entry)
    elif isinstance(node, dict):
        yield node
        for key in ('block', 'rescue', 'always'):
            yield from _tasks(node.get(key))


def test_no_role_task_uses_a_deprecated_postgresql_alias():
    found, calls = [], 0
    for path in sorted(REPO.glob('roles/*/tasks/*.yml')):
        for task in _tasks(yaml.safe_load(path.read_text(encoding='utf-8'))):
            for module, args in task.items():
                if str(module).startswith('community.postgresql.') and isinstance(args, dict):
                    calls += 1
                    found += ['%s: %s %s' % (path.relative_to(REPO), module, k) for k in sorted(DEPRECATED & set(args))]
    assert calls >= 3 and found == []
