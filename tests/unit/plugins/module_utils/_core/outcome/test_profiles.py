# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Agent profiles: how each agent CLI is run (its argv, how it takes the brief, its permission switch) and how it takes an
item's model and effort as its own arguments (Codex CLI ``-m``/``-c model_reasoning_effort=``, Claude Code ``--model``,
Gemini CLI and Qwen Code ``-m``), never a value that could be read as an option."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import profiles
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.profiles import agent_argv, route_argv
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.run import item_route


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


# --- an item's model and effort as the CLI's own arguments ------------------------------------------------------

ROUTE = {'model': 'gpt-5-codex', 'effort': 'high'}


def test_codex_takes_both_after_exec():
    argv, refused = route_argv('codex', agent_argv('codex'), ROUTE)
    assert argv == ['codex', 'exec', '-m', 'gpt-5-codex', '-c', 'model_reasoning_effort=high', '--json', '-',
                    '--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check']
    assert refused == []


def test_claude_takes_the_model_and_gemini_the_model_and_their_streaming_argv_too():
    assert route_argv('claude', agent_argv('claude', streaming=True), ROUTE)[0] == [
        'claude', '--model', 'gpt-5-codex', '-p', '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions']
    assert route_argv('gemini', agent_argv('gemini'), {'model': 'gemini-2.5-pro'})[0][:3] == ['gemini', '-m', 'gemini-2.5-pro']


def test_qwen_takes_the_model_with_m_and_streams_usage_per_message_when_a_budget_asks():
    assert route_argv('qwen', agent_argv('qwen'), {'model': 'qwen3-coder-plus', 'effort': 'high'}) == (
        ['qwen', '-m', 'qwen3-coder-plus', '--output-format', 'json', '-p', 'Follow the brief given on standard input.', '--yolo'], [])
    assert agent_argv('qwen', streaming=True)[:3] == ['qwen', '--output-format', 'stream-json']


def test_no_route_and_the_custom_profile_leave_the_argv_as_it_is():
    assert route_argv('codex', agent_argv('codex'), {})[0] == agent_argv('codex')
    assert route_argv('custom', ['my-agent', '{brief_file}'], ROUTE) == (['my-agent', '{brief_file}'], [])


@pytest.mark.parametrize('model', ['--yolo', '-c', 'a b', 'x=y', 'x,y', "it's", '', 'm' * 200])
def test_a_value_that_is_not_a_plain_name_is_left_out_and_said(model):
    argv, refused = route_argv('codex', agent_argv('codex'), {'model': model, 'effort': 'low'})
    assert argv == ['codex', 'exec', '-c', 'model_reasoning_effort=low', '--json', '-', '--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check']
    assert len(refused) == (1 if model else 0)


def test_the_workers_own_setting_wins_over_the_items_as_in_the_environment():
    environ = {'AGENT_MODEL': 'item-model', 'AGENT_EFFORT': 'high'}
    assert item_route(environ, {}, 'codex') == {'model': 'item-model', 'effort': 'high'}
    assert item_route(environ, {'AGENT_MODEL': 'worker-model'}, 'codex') == {'model': 'worker-model', 'effort': 'high'}
    # claude reads ANTHROPIC_MODEL itself: the worker's setting there is what the CLI uses, so no --model
    assert item_route(environ, {'ANTHROPIC_MODEL': 'worker-model'}, 'claude') == {'effort': 'high'}
    assert item_route({}, {}, 'codex') == {}


@pytest.mark.parametrize('given, kept', [
    (['-c', 'model="gpt-5.5"', '-c', 'model_provider="fleet"'], ['-c', 'model_reasoning_effort=high']),
    (['-m', 'gpt-5.5'], ['-c', 'model_reasoning_effort=high']),
    (['--config=model_reasoning_effort=low'], ['-m', 'gpt-5-codex']),
    (['-c', 'model_provider="fleet"'], ['-m', 'gpt-5-codex', '-c', 'model_reasoning_effort=high']),
])
def test_the_workers_own_agent_arguments_win(given, kept):
    """worker_runner_agent_args that already point the CLI at a model (docs/agents.md: Codex -c model=...) win."""
    argv, refused = route_argv('codex', agent_argv('codex'), ROUTE, given)
    assert argv == ['codex', 'exec'] + kept + ['--json', '-', '--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check'] and refused == []
