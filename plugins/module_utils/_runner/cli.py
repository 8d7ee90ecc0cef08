# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet-runner``: the command line, one subcommand per program.

===============  ===========================================  ===============================
command          what it is                                   program
===============  ===========================================  ===============================
(none), ``run``  the run of one item (``--item N``)           ``run.py``
``classify``     what the runner reads in a capture           ``classify.py``
``check-board``  can this master's runner open its board?     ``check.py``
``chain``        one tick of the chain runner                 ``chain/tick.py``
``session``      the program of a ``chain-*`` unit            ``chain/session.py``
``handoff``      close a session with a handoff and stop      ``chain/handoff.py``
===============  ===========================================  ===============================

The subcommand is the first positional word. The ``fleet-runner`` wrapper puts its own options
(``--code-dir``, ``--config``, ``--branch``, and ``--workdir``: the directory it was started in, since
it runs Python from ``/``) before the caller's words, so a word right after an
option that takes a value is that value, never a subcommand; the wrapper's options a subcommand
reads are carried over to its words (unless the caller gave them again). Without a subcommand the
whole command line is the run's (what a ``task-<item>`` unit executes).
"""

from __future__ import annotations

import os

import sys
from typing import Iterable, List, Optional, Tuple

from . import check, classify, run
from .chain import handoff, session, tick
from .config import DEFAULT_BOARD_SPEC, board_spec, expand, open_runner_board

VALUED = frozenset(['--item', '--repo', '--config', '--board-spec', '--state-dir', '--agent-command', '--workdir',
                    '--timeout', '--code-dir', '--branch', '--pin'])
"""The runner's options that take a value: a word after one of them is its value, not a subcommand."""

CARRY = {'classify': ('--config',), 'check-board': ('--config',),
         'chain': ('--config', '--branch'), 'session': ('--config', '--branch', '--workdir'), 'handoff': ('--config', '--branch')}
"""Each subcommand and the wrapper's options carried over to its words."""

SUBCOMMANDS = ('run',) + tuple(CARRY)


def subcommand_words(args, names: Iterable[str], carry: Iterable[str] = ('--config',)) -> Optional[Tuple[str, List[str]]]:
    """``(subcommand, its words)`` when the first positional word of ``args`` is one of ``names``, with
    the wrapper's options named in ``carry`` carried over to the subcommand's words (unless the caller
    gave them again); None when the first positional word is something else or there is none."""
    names = frozenset(names)
    index = 0
    while index < len(args):
        word = args[index]
        if word in names:
            before, after = args[:index], list(args[index + 1:])
            for opt in carry:
                if opt in before and opt not in after and before.index(opt) + 1 < len(before):
                    after = [opt, before[before.index(opt) + 1]] + after
            return word, after
        if word in VALUED:
            index += 2
        elif word.startswith('-'):
            index += 1
        else:
            return None
    return None


def _back_to_workdir(args) -> None:
    """The wrapper starts Python from ``/`` (so nothing is imported from where it was called) and names that
    place with ``--workdir``; a subcommand's relative paths (``check-board --board-spec x.json``) mean it.
    Python runs isolated (``-I``: the current directory is never on ``sys.path``), so going back is safe."""
    if '--workdir' in args and args.index('--workdir') + 1 < len(args):
        where = args[args.index('--workdir') + 1]
        if where and os.path.isdir(where):
            os.chdir(where)


def _first_word(args) -> Optional[int]:
    """The index of the first positional word of ``args`` (the same reading), or None."""
    index = 0
    while index < len(args):
        if args[index] in VALUED:
            index += 2
        elif args[index].startswith('-'):
            index += 1
        else:
            return index
    return None


def subcommand_of(args) -> Optional[Tuple[str, List[str]]]:
    """``(subcommand, its words)`` of a command line (without ``argv[0]``); None: the run's own words."""
    found = subcommand_words(args, CARRY, carry=())
    if found is None:
        return None
    return subcommand_words(args, (found[0],), carry=CARRY[found[0]])


def _session_board(conf, environ):
    """The board a chain session that carries an item on posts to: the item runner's own (same spec, same opener)."""
    return open_runner_board(board_spec(expand(conf.get('board_spec') or DEFAULT_BOARD_SPEC), environ))


def main(argv=None, environ=None, *, clock=None, spawner=None, execv=None, git_runner=None, reraise=None) -> int:
    """The runner's entry point (``python3 -m ...module_utils._runner``); returns the exit code."""
    argv = list(sys.argv if argv is None else argv)
    found = subcommand_of(argv[1:])
    if found is None:
        index = _first_word(argv[1:])
        if index is not None and argv[1 + index] == 'run':   # ``fleet-runner [options] run --item N``: the run's words
            argv = argv[:1 + index] + argv[2 + index:]
        return run.main(argv, environ, clock=clock, spawner=spawner, execv=execv, git_runner=git_runner, reraise=reraise)
    name, words = found
    _back_to_workdir(argv[1:])
    if name == 'classify':
        return classify.main(words, environ=environ)
    if name == 'check-board':
        return check.main(words, environ=environ, spec_reader=board_spec, default_spec=expand(DEFAULT_BOARD_SPEC))
    if name == 'chain':
        return tick.main(words, environ=environ)
    if name == 'session':
        return session.main(words, environ=environ, board=_session_board)
    return handoff.main(words, environ=environ)
