# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-core 2.21's sanity (pylint ``ansible-bad-function``) refuses ``subprocess`` in module_utils:
a module must call ``run_command``. The collection has two ``subprocess`` calls, each disabled inline
with its reason: both belong to the runner, a program of its own with no ``AnsibleModule``. That reason
holds only while no module, plugin or non-runner module_utils code reaches them: this checks it.
"""
from __future__ import annotations

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[3]
PLUGINS = REPO / 'plugins'
DISABLE = 'pylint: disable=ansible-bad-function'
# the two places, and the only code that may use them
ALLOWED = {'plugins/module_utils/_host/cmd.py', 'plugins/module_utils/_runner/spawn.py'}
# controller-only code (plugin_utils is never sent to a host): the lease keeper starts itself as a process
CONTROLLER = {'plugins/plugin_utils/lease_keeper.py'}
RUNNER_ONLY = re.compile(r'\b(SubprocessRunner|PopenSpawner)\b')


def _rel(path):
    return str(path.relative_to(REPO))


def test_the_disables_are_where_the_reason_holds():
    where = sorted(_rel(p) for p in PLUGINS.rglob('*.py') if DISABLE in p.read_text(encoding='utf-8'))
    assert where == sorted(ALLOWED)


def test_no_module_or_plugin_reaches_the_runners_subprocess():
    users = []
    for path in PLUGINS.rglob('*.py'):
        rel = _rel(path)
        if rel in ALLOWED or rel.startswith('plugins/module_utils/_runner/'):
            continue
        if RUNNER_ONLY.search(path.read_text(encoding='utf-8')):
            users.append(rel)
    assert users == [], 'a module or plugin takes ModuleRunner (run_command), never the runner\'s subprocess runner'


def test_no_other_subprocess_call_in_plugins():
    calls = []
    for path in PLUGINS.rglob('*.py'):
        for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
            if re.search(r'\bsubprocess\.(run|Popen|call|check_call|check_output)\(', line) and _rel(path) not in ALLOWED | CONTROLLER:
                calls.append('%s:%d' % (_rel(path), number))
    assert calls == []
