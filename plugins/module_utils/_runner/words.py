# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which ``fleet-runner`` subcommand a command line names: one reading for every subcommand.

The ``fleet-runner`` wrapper puts its own options (``--code-dir``, ``--config``, ``--branch``)
before the caller's words, so the subcommand is the first positional word, and a word right
after an option that takes a value is that value, never a subcommand.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

# The runner's options that take a value: a word after one of them is its value, not a subcommand.
VALUED = frozenset(['--item', '--repo', '--config', '--board-spec', '--state-dir', '--agent-command', '--workdir',
                    '--timeout', '--code-dir', '--branch'])


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
