# -*- coding: utf-8 -*-
"""The unit tests' runner processes get the fake agent's settings as a real unit does (issue 14).

The runner hands the agent an allow list (``_core.outcome.agent_env``): in a real unit the launch names its
non-secret ``setenv`` in ``FLEET_AGENT_SETENV``. Tests that start the runner with ``FAKE_AGENT_*`` in
its environment name them the same way here, once, instead of in every environment they build.
"""
from __future__ import annotations

import pytest

FAKE_AGENT_NAMES = ('FAKE_AGENT_BOARD', 'FAKE_AGENT_BOARD_FILE', 'FAKE_AGENT_EXIT', 'FAKE_AGENT_LOG', 'FAKE_AGENT_MODE',
                    'FAKE_AGENT_PIDFILE', 'FAKE_AGENT_REPLAY', 'FAKE_AGENT_REPLAY_MERGE', 'FAKE_AGENT_RESET',
                    'FAKE_AGENT_TRAILER', 'FAKE_AGENT_EVENTS', 'FAKE_AGENT_HANG_AFTER')


@pytest.fixture(autouse=True)
def _fake_agent_setenv(monkeypatch):
    monkeypatch.setenv('FLEET_AGENT_SETENV', ','.join(FAKE_AGENT_NAMES))
