# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner in-process: a close-out the board refuses is retried at CLOSEOUT_RETRY_DELAYS (minutes in
production). Here each delay is zero, as many as in production, so no test sleeps them; a test that counts
them injects ``sleep``."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._runner import posting as _posting


@pytest.fixture(autouse=True)
def _no_closeout_waits(monkeypatch):
    monkeypatch.setattr(_posting, 'CLOSEOUT_RETRY_DELAYS', (0,) * len(_posting.CLOSEOUT_RETRY_DELAYS))
