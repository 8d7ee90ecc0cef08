# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What counts as progress for the stall limit: a line the agent has not printed before.

A CLI that retries forever prints the same line again and again (Codex CLI's "Reconnecting... waiting for
network" every few seconds): its capture grows, but nothing happens. So output is progress only when it
holds a complete line not printed before in this run (a counter in it makes it new: a tool's progress).
A run stopped this way before any turn is a retry, after a turn a failure (D7's zero-turns fact).
Pure: the runner feeds it the bytes the agent appended (``_runner.spawn.wait_agent``).
"""
from __future__ import annotations

# Distinct lines remembered per run; past it every new line counts as progress (a run that prints this
# many different lines is not looping on one). Unmeasured guess, a memory bound: at most SEEN_MAX x LINE_MAX
# bytes. Experiment that settles it: count the distinct lines of a month of captures; keep this above p99.
SEEN_MAX = 4096
# A line longer than this is progress whatever it says (no hashing of megabytes of tool output). Unmeasured
# guess: the retry lines seen (Codex CLI's reconnect, 100 bytes) are far below it. Experiment that settles it:
# the longest line a CLI repeats while retrying, over the captures of tests/corpus; keep this 10x above it.
LINE_MAX = 8192


class Progress(object):
    """Feed it the agent's output in order; ``feed`` says whether the new bytes are progress."""

    def __init__(self) -> None:
        self._seen = set()
        self._partial = b''

    def feed(self, data: bytes) -> bool:
        """True when ``data`` completes a line not printed before; a partial line waits."""
        if not data:
            return False
        lines = (self._partial + data).split(b'\n')
        self._partial = lines.pop()
        if len(self._partial) > LINE_MAX:
            self._partial = b''
            return True
        new = False
        for line in lines:
            key = line.strip()
            if not key:
                continue
            if len(key) > LINE_MAX or len(self._seen) >= SEEN_MAX:
                new = True
            elif key not in self._seen:
                self._seen.add(key)
                new = True
        return new
