# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The injected command runner: the one seam between the adapters and a process table.

Every adapter that runs a program (``systemd``, ``git``) takes a *runner* with one method,
``run(argv, env=None, data=None) -> (rc, stdout, stderr)``; a subprocess one and an
``AnsibleModule.run_command`` one live here, the tests' scripted one in ``tests/fakes``.

The rules in full, with their reasons: ``docs/internals.md``, section ``_host/cmd.py``.
"""

from __future__ import annotations

import os
import subprocess

from typing import Protocol

C_LOCALE = {'LANGUAGE': 'C', 'LC_ALL': 'C'}


class CommandError(Exception):
    """A command could not be run at all, or answered with something the adapter cannot read."""

    def __init__(self, message, argv=None, rc=None, stdout='', stderr=''):
        super(CommandError, self).__init__(message)
        self.argv = list(argv or [])
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr


class Runner(Protocol):
    """What every adapter is given: run an argv list, return ``(rc, stdout, stderr)`` as text."""

    def run(self, argv, env=None, data=None):
        """``argv``: list of str (no shell). ``env``: additions to the environment. ``data``: stdin text."""


def _check_argv(argv):
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)):
        raise TypeError('argv must be a list of strings, never a shell string: %r' % (argv,))
    for part in argv:
        if not isinstance(part, str):
            raise TypeError('every argv element must be a string: %r in %r' % (part, argv))
    if not argv:
        raise TypeError('argv is empty')
    return list(argv)


def merged_env(env=None):
    """The additions a runner applies: the caller's ``env`` plus the C locale (locale wins)."""
    out = dict(env or {})
    out.update(C_LOCALE)
    return out


class SubprocessRunner(object):
    """Run argv lists with ``subprocess`` (no shell), in the C locale.

    For the runner only (``_runner``: a program of its own on the worker, with no ``AnsibleModule``
    and so no ``run_command``); a module takes ``ModuleRunner`` (tests/unit/repo/test_subprocess_only_in_runner.py).
    """

    def __init__(self, timeout=None):
        self.timeout = timeout

    def run(self, argv, env=None, data=None):
        argv = _check_argv(argv)
        full_env = dict(os.environ)
        full_env.update(merged_env(env))
        try:
            # the runner's own process table: no AnsibleModule here (see the class docstring)
            proc = subprocess.run(argv, env=full_env, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                                  universal_newlines=True, timeout=self.timeout, shell=False, check=False)
        except OSError as exc:
            # The program is absent or not executable: the shell convention is 127/126, keep it so
            # callers see one vocabulary whichever runner they were given.
            return (127 if isinstance(exc, FileNotFoundError) else 126), '', '%s: %s' % (argv[0], exc)
        return proc.returncode, proc.stdout, proc.stderr


class ModuleRunner(object):
    """Run argv lists through ``AnsibleModule.run_command`` (no shell, no ``~``/``$VAR`` expansion)."""

    def __init__(self, module):
        self.module = module

    def run(self, argv, env=None, data=None):
        argv = _check_argv(argv)
        kwargs = dict(environ_update=merged_env(env), check_rc=False, expand_user_and_vars=False)
        if data is not None:
            kwargs['data'] = data
            kwargs['binary_data'] = True  # exactly the bytes given: run_command appends a newline otherwise
        rc, out, err = self.module.run_command(argv, **kwargs)
        return rc, out, err
