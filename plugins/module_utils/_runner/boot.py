# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How Python is started for the runner's code: never importing from a directory the run can write.

``python3 -m`` puts the current directory first on ``sys.path``, and the runner starts in the run's
workspace: a ``json.py`` committed to the target repository ran inside the runner, with the board's
token in its environment. So every start of the runner's code (the ``fleet-runner`` wrapper, the
self-update's re-exec, a worker call) is ``python3 -I -B -c BOOTSTRAP ROOT MODULE ARGS...`` from
``/``: ``-I`` (isolated, Python 3.4+: the oldest worker Python is 3.9, where ``-P`` does not exist)
leaves the current directory, ``PYTHON*`` variables and the user's site-packages out of
``sys.path``; the collection's root is the one entry added, by the bootstrap itself. The wrapper
template (``roles/worker/templates/runner/fleet-runner.sh.j2``) spells the same text.
"""

from __future__ import annotations

import os
from typing import List, Sequence

BOOTSTRAP = ('import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); '
             'runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)')
"""``-c`` program: ``argv[1]`` is the directory holding ``ansible_collections``, ``argv[2]`` the module to run."""

PYTHON_FLAGS = ('-I', '-B')
"""Isolated (no cwd, no ``PYTHON*`` variables, no user site-packages) and no bytecode written."""

RUNNER_MODULE = 'ansible_collections.fleet.dispatch.plugins.module_utils._runner'


def collection_root(code_dir: str) -> str:
    """The directory holding ``ansible_collections`` for a checkout at ``.../ansible_collections/fleet/dispatch``."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(code_dir))))


def python_argv(python: str, root: str, module: str, args: Sequence[str] = ()) -> List[str]:
    """The argv that runs ``module`` of the collection under ``root`` with ``args``, isolated."""
    return [python] + list(PYTHON_FLAGS) + ['-c', BOOTSTRAP, root, module] + list(args)


__all__ = ['BOOTSTRAP', 'PYTHON_FLAGS', 'RUNNER_MODULE', 'collection_root', 'python_argv']
