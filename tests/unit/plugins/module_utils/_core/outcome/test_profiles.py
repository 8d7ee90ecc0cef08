# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Agent profiles: how each agent CLI is run (its argv, how it takes the brief)."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import profiles


def test_profiles_pass_the_brief_on_stdin_never_argv():
    for name in ('claude', 'codex', 'gemini', 'qwen'):
        prof = profiles.profile(name)
        assert prof.brief == 'stdin' and prof.argv and '{brief}' not in prof.argv
    assert profiles.profile(None).name == 'custom'
    assert profiles.agent_argv('custom', ['my-agent', '{brief_file}']) == ['my-agent', '{brief_file}']
    with pytest.raises(ValueError):
        profiles.agent_argv('custom')
    with pytest.raises(ValueError):
        profiles.profile('cursor')


def test_no_profile_and_no_command_puts_the_brief_in_argv():
    """The brief's text in argv is in /proc/PID/cmdline for every user of the worker: no profile's argv (plain or
    streaming) holds the placeholder, and a custom command that does is refused, naming the fix."""
    for name, prof in profiles.PROFILES.items():
        for argv in (prof.argv, prof.stream_argv):
            assert profiles.brief_in_argv(argv) == '', name
    assert profiles.brief_in_argv(['agent', '{brief_file}']) == ''
    for command in (['agent', '{brief}'], ['agent', '--prompt={brief}']):
        why = profiles.brief_in_argv(command)
        assert '/proc/PID/cmdline' in why and '{brief_file}' in why and 'stdin' in why


def test_claude_runs_its_streaming_argv_when_a_budget_is_set():
    assert profiles.agent_argv('claude') == ['claude', '-p', '--output-format', 'json', '--dangerously-skip-permissions']
    assert profiles.agent_argv('claude', streaming=True) == ['claude', '-p', '--output-format', 'stream-json', '--verbose',
                                                             '--dangerously-skip-permissions']
    assert profiles.agent_argv('codex', streaming=True) == profiles.agent_argv('codex')   # its --json already streams
    assert profiles.agent_argv('custom', ['x', '{brief_file}'], streaming=True) == ['x', '{brief_file}']


@pytest.mark.parametrize('name, switch', [('claude', ['--dangerously-skip-permissions']),
                                          ('codex', ['--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check']),
                                          ('gemini', ['--yolo']), ('qwen', ['--yolo'])])
def test_every_profile_runs_unattended_and_never_twice_the_switch_the_worker_gives(name, switch):
    """Nobody is there to approve a tool call: each CLI's own permission switch is in its argv, for the provisioned
    profile and a routed one alike; a switch the worker's arguments already hold is not repeated (Codex CLI refuses a
    flag given twice), and an explicit agent_command is the operator's own."""
    assert profiles.agent_argv(name)[-len(switch):] == switch
    assert profiles.agent_argv(name, streaming=True)[-len(switch):] == switch
    given = [switch[0], '-c', 'x=1']
    argv = profiles.agent_argv(name, given=given) + given
    assert sorted(word for word in argv if word in switch) == sorted(switch), argv
    assert profiles.agent_argv(name, ['my', 'agent']) == ['my', 'agent']
