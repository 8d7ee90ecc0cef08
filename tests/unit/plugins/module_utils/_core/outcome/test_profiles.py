# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Agent profiles: how each agent CLI is run (its argv, how it takes the brief)."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import profiles


def test_profiles_pass_the_brief_on_stdin_never_argv():
    for name in ('claude', 'codex', 'gemini'):
        prof = profiles.profile(name)
        assert prof.brief == 'stdin' and prof.argv and '{brief}' not in prof.argv
    assert profiles.profile(None).name == 'custom'
    assert profiles.agent_argv('custom', ['my-agent', '{brief_file}']) == ['my-agent', '{brief_file}']
    with pytest.raises(ValueError):
        profiles.agent_argv('custom')
    with pytest.raises(ValueError):
        profiles.profile('cursor')


def test_claude_runs_its_streaming_argv_when_a_budget_is_set():
    assert profiles.agent_argv('claude') == ['claude', '-p', '--output-format', 'json']
    assert profiles.agent_argv('claude', streaming=True) == ['claude', '-p', '--output-format', 'stream-json', '--verbose']
    assert profiles.agent_argv('codex', streaming=True) == profiles.agent_argv('codex')   # its --json already streams
    assert profiles.agent_argv('custom', ['x', '{brief_file}'], streaming=True) == ['x', '{brief_file}']
