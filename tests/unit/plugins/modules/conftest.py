"""Run a module's main() in-process: arguments in, exit/fail result and warnings out (STYLE.md).

``run_module(mod, args, check=False, runner=None)`` returns ``(kind, result, warnings)`` with
``kind`` in ``exit``/``fail``. Commands go through ``runner.run(argv, env=, data=)`` when one is
given. ``patch_module_args`` (ansible-core >= 2.19) restores the arguments afterwards.
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


def _run_module(mod, args, check=False, diff=False, runner=None):
    args = dict(args)
    if check:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    warnings = []

    def exit_json(self, **kw):
        raise _Exit(kw)

    def fail_json(self, **kw):
        raise _Fail(kw)

    patches = [
        mock.patch.object(basic.AnsibleModule, 'exit_json', exit_json),
        mock.patch.object(basic.AnsibleModule, 'fail_json', fail_json),
        mock.patch.object(basic.AnsibleModule, 'warn', lambda self, msg: warnings.append(msg)),
    ]
    if runner is not None:
        def run_command(self, argv, **kw):
            return runner.run(argv, env=kw.get('environ_update'), data=kw.get('data'))
        patches.append(mock.patch.object(basic.AnsibleModule, 'run_command', run_command))
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
    raise RuntimeError('main() neither exited nor failed')


@pytest.fixture
def run_module():
    return _run_module
