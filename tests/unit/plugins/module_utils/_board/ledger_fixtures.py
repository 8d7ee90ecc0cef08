# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ledger board's tests share: a clock that ticks, and a fresh board on SQLite and PostgreSQL.

A test module takes the fixture by importing it (``from ledger_fixtures import board``); a migration test
opens its own boards with ``Clock()``."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC)


class Clock(object):
    """A clock that advances one second per reading (so every write has its own time)."""

    def __init__(self, start=T0):
        self.now = start
        self.reads = 0

    def __call__(self):
        self.reads += 1
        self.now = self.now + dt.timedelta(seconds=1)
        return self.now


@pytest.fixture
def board(ledger_url):
    """A new ledger board on each backend of ``ledger_url``, on its own ``Clock``."""
    b = LedgerBoard(create=True, clock=Clock(), **ledger_url)
    yield b
    b.close()
