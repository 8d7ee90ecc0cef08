# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ScriptedRunner``: the test double of the injected command runner (``_host.cmd.Runner``).

It replays a script of expected argv and canned answers; the unit tests drive every adapter and
module through it (one copy, not one per test file).
"""
from __future__ import annotations

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import _check_argv as check_argv


class ScriptedRunner(object):
    """A runner that answers from a script and fails loudly on any unexpected argv.

    ``script`` is a list of steps ``{'argv': [...], 'rc': 0, 'out': '', 'err': '', 'env': {...}}``
    (``env``, when given, must be a subset of what the caller passed). Steps are consumed in
    order; ``calls`` records what was actually run, ``remaining()`` what was expected but not run.
    """

    def __init__(self, script=None):
        self.script = list(script or [])
        self.calls = []

    def add(self, argv, rc=0, out='', err='', env=None):
        self.script.append({'argv': list(argv), 'rc': rc, 'out': out, 'err': err, 'env': env})
        return self

    def add_git(self, cwd, *args, scan=False, config='', **answer):
        """Expect one hardened git command in ``cwd`` (``_host.git.hardened_argv``). ``scan``: preceded by its
        configuration read, answered with ``config`` (``git config -z --show-scope --list`` text)."""
        from ansible_collections.fleet.dispatch.plugins.module_utils._host.git import (
            config_overrides, hardened_argv, parse_config_list)
        overrides = ()
        if scan:
            self.add(hardened_argv('git', cwd, ['config', '-z', '--show-scope', '--list']), out=config)
            overrides = config_overrides(parse_config_list(config))
        return self.add(hardened_argv('git', cwd, list(args), overrides), **answer)

    def run(self, argv, env=None, data=None):
        argv = check_argv(argv)
        self.calls.append({'argv': argv, 'env': dict(env or {}), 'data': data})
        if not self.script:
            raise AssertionError('unexpected command (script exhausted): %r' % (argv,))
        step = self.script.pop(0)
        if list(step['argv']) != argv:
            raise AssertionError('unexpected command:\n  got      %r\n  expected %r' % (argv, list(step['argv'])))
        for key, value in (step.get('env') or {}).items():
            if (env or {}).get(key) != value:
                raise AssertionError('command %r: env %s=%r expected, got %r' % (argv, key, value, (env or {}).get(key)))
        return step.get('rc', 0), step.get('out', ''), step.get('err', '')

    def remaining(self):
        return [step['argv'] for step in self.script]
