"""Run a module's main() in-process: arguments in, exit/fail result and warnings out (STYLE.md).

``run_module(mod, args, check=False, diff=False, runner=None)`` returns ``(kind, result, warnings)``
with ``kind`` in ``exit``/``fail``; ``run_module.module`` is the ``AnsibleModule`` of the last call
(its ``no_log_values`` say what Ansible masks). ``patch_module_args`` (ansible-core >= 2.19)
restores the arguments afterwards.

Commands: ``get_bin_path`` answers the bare name, so argv is exactly what the module builds. With a
``runner``, every ``run_command`` goes through ``runner.run(argv, env=, data=)`` and must pass
``expand_user_and_vars=False`` (board text must not be expanded: ``_cmd.ModuleRunner``); without
one, the real ``run_command`` runs the real command from PATH.
"""
from __future__ import annotations

from unittest import mock

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class _Exit(Exception):
    pass


class _Fail(Exception):
    pass


class ModuleHarness(object):
    """The one main() harness for every module test in this directory."""

    def __init__(self):
        self.module = None

    def __call__(self, mod, args, check=False, diff=False, runner=None):
        args = dict(args)
        if check:
            args['_ansible_check_mode'] = True
        if diff:
            args['_ansible_diff'] = True
        warnings = []
        harness = self

        def exit_json(self, **kw):
            harness.module = self
            raise _Exit(kw)

        def fail_json(self, **kw):
            harness.module = self
            raise _Fail(kw)

        patches = [
            mock.patch.object(basic.AnsibleModule, 'exit_json', exit_json),
            mock.patch.object(basic.AnsibleModule, 'fail_json', fail_json),
            mock.patch.object(basic.AnsibleModule, 'get_bin_path', lambda self, name, required=False, opt_dirs=None: name),
            mock.patch.object(basic.AnsibleModule, 'warn', lambda self, msg: warnings.append(msg)),
        ]
        if runner is not None:   # else: the real run_command and the real command
            def run_command(self, argv, **kw):
                assert kw.get('expand_user_and_vars') is False   # board text must not be expanded
                return runner.run(argv, env=kw.get('environ_update'), data=kw.get('data'))
            patches.append(mock.patch.object(basic.AnsibleModule, 'run_command', run_command))
        self.module = None
        with patch_module_args(args):
            for p in patches:
                p.start()
            try:
                mod.main()
            except _Exit as exc:
                return 'exit', exc.args[0], warnings
            except _Fail as exc:
                return 'fail', exc.args[0], warnings
            finally:
                for p in patches:
                    p.stop()
        raise AssertionError('main() neither exited nor failed')


@pytest.fixture
def run_module():
    return ModuleHarness()
