# -*- coding: utf-8 -*-
"""The agent's own confinement (``_core.dispatch.agent_sandbox``): the bwrap argv, pure."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.agent_sandbox import bwrap_argv, confine

HOME = '/home/m1'
STATE = HOME + '/.local/state/fleet-dispatch'
CONF = HOME + '/.config/fleet-dispatch'
OUT = STATE + '/runs/task-7/out'
BRIEF = STATE + '/runs/task-7/brief.md'
WS = HOME + '/fleet/workspaces/task-7'


def test_the_state_and_config_are_empty_and_only_the_output_and_brief_come_back():
    argv = confine('bwrap', ['claude', '-p'], bwrap='/usr/bin/bwrap', hidden=[CONF, STATE], writable=[OUT], readonly=[BRIEF],
                   keep=[WS, HOME])
    assert argv == ['/usr/bin/bwrap', '--die-with-parent', '--dev-bind', '/', '/', '--tmpfs', CONF, '--tmpfs', STATE,
                    '--bind', OUT, OUT, '--ro-bind', BRIEF, BRIEF, '--', 'claude', '-p']


def test_none_is_the_command_as_it_is():
    assert confine('none', ['a', 'b'], bwrap=None, hidden=[STATE]) == ['a', 'b']
    assert confine('', ['a'], bwrap='/usr/bin/bwrap', hidden=[STATE]) == ['a']


def test_bwrap_asked_and_absent_names_the_fix():
    with pytest.raises(ValueError, match='install bubblewrap.*worker_runner_agent_sandbox: none'):
        confine('bwrap', ['a'], bwrap=None, hidden=[STATE])


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match='one of none, bwrap'):
        confine('firejail', ['a'], bwrap='/usr/bin/bwrap', hidden=[STATE])


@pytest.mark.parametrize('hidden', [HOME, HOME + '/fleet', '/home'])
def test_a_hidden_directory_that_holds_the_workspace_is_refused(hidden):
    """Hiding the home (or a parent of the workspace) would hide the agent's own work: refused, not done."""
    with pytest.raises(ValueError, match='cannot hide'):
        bwrap_argv('/usr/bin/bwrap', hidden=[hidden], keep=[WS])


def test_a_path_outside_every_hidden_directory_is_not_mounted_again():
    argv = bwrap_argv('/usr/bin/bwrap', hidden=[STATE], writable=['/tmp/out'], readonly=[BRIEF])
    assert '/tmp/out' not in argv and argv.count(BRIEF) == 2


@pytest.mark.parametrize('bad', ['relative/path', '/with\nnewline', ''])
def test_paths_are_absolute_and_one_line(bad):
    with pytest.raises(ValueError, match='absolute path'):
        bwrap_argv('/usr/bin/bwrap', hidden=[bad])


def test_parents_are_mounted_before_what_they_hold():
    argv = bwrap_argv('/usr/bin/bwrap', hidden=[STATE + '/runs', STATE])
    assert argv.index(STATE) < argv.index(STATE + '/runs')
