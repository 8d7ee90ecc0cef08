# -*- coding: utf-8 -*-
"""The worker role's agent CLI tasks (roles/worker/tasks/agent.yml) for every profile a master offers: the further
profiles of ``worker_runner_agents`` get the first's config files and ``--version`` check (with their own pinned
version). The real ``ansible-playbook`` runs the shipped tasks on localhost; the CLIs and npm are small scripts on
the run PATH (the install itself is tested on the bed: tests/integration/test_agent_install.py)."""
from __future__ import annotations

import json
import os
import pathlib
import pwd
import subprocess
import sys

BIN = pathlib.Path(sys.executable).parent

PLAY = '''
- name: The agent CLI tasks of one master
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run them
      ansible.builtin.include_role:
        name: fleet.dispatch.worker
        tasks_from: agent
'''


def _script(path, text):
    path.write_text('#!/bin/sh\n' + text + '\n')
    path.chmod(0o755)


def run(tmp_path, versions, agents=('codex',), settings=None, npm=None, first='claude', specs=None, cli='claude'):
    """The tasks as a master whose run PATH holds CLIs answering ``versions`` (name -> --version output); ``npm``:
    the fake npm's script (default: every pinned package installed as pinned, so nothing is installed)."""
    home, bin_dir = tmp_path / 'home', tmp_path / 'bin'
    home.mkdir(exist_ok=True)
    bin_dir.mkdir(exist_ok=True)
    for name, said in versions.items():
        _script(bin_dir / name, 'echo %s' % json.dumps(said))
    _script(bin_dir / 'fake-npm', npm or 'cat <<EOF\n%s\nEOF' % json.dumps({'dependencies': {
        '@anthropic-ai/claude-code': {'version': '2.1.332'}, '@openai/codex': {'version': '0.171.0'},
        '@google/gemini-cli': {'version': '0.61.0'}}}))
    me = pwd.getpwuid(os.getuid())
    specs = specs or ['@anthropic-ai/claude-code@2.1.332', '@openai/codex@0.171.0', '@google/gemini-cli@0.61.0']
    extra = {
        'ansible_become': False, 'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        '_worker_name': me.pw_name, '_worker_uid': me.pw_uid, '_worker_gid': me.pw_gid, '_worker_home': str(home),
        '_worker_path': '%s:/usr/bin:/bin' % bin_dir, '_worker_agent_specs': specs, '_worker_agent_cli': cli,
        'worker_runner_agent': first, 'worker_runner_agents': list(agents), 'worker_agent_npm': str(bin_dir / 'fake-npm'),
        'worker_agent_node_dir': str(bin_dir), 'worker_agent_prefix': str(tmp_path / 'agents'),
        'worker_agent_settings': settings or {},
    }
    play = tmp_path / 'play.yml'
    play.write_text(PLAY)
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    proc = subprocess.run([str(BIN / 'ansible-playbook'), '-i', 'localhost,', str(play), '-e', json.dumps(extra)],
                          env=env, capture_output=True, text=True, check=False, timeout=300)
    return proc, home


def test_each_further_profile_gets_its_config_files_and_its_version_check(tmp_path):
    proc, home = run(tmp_path, {'claude': '2.1.332 (Claude Code)', 'codex': 'codex-cli 0.171.0', 'gemini': '0.61.0'},
                     agents=('Codex', 'gemini'), settings={'theme': 'dark'})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    me = pwd.getpwuid(os.getuid()).pw_name
    for profile in ('claude', 'codex', 'gemini'):
        assert 'Ask the agent CLI for its version through the run PATH, as %s (%s)' % (me, profile) in out, out[-4000:]
    assert (home / '.codex' / 'config.toml').is_file(), 'the further codex profile has its config'
    gemini = json.loads((home / '.gemini' / 'settings.json').read_text())
    assert gemini['telemetry'] == {'enabled': False} and gemini['general']['enableAutoUpdate'] is False
    assert 'theme' not in gemini, "worker_agent_settings are the first profile's"
    claude = json.loads((home / '.claude.json').read_text())
    assert claude['hasCompletedOnboarding'] is True and claude['theme'] == 'dark'


def test_a_further_profile_whose_cli_is_not_its_pinned_version_fails_provision_naming_it(tmp_path):
    proc, _home = run(tmp_path, {'claude': '2.1.332 (Claude Code)', 'codex': 'codex-cli 0.170.0'})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-4000:]
    assert 'the agent CLI codex (profile codex)' in out and 'expected version 0.171.0' in out, out[-4000:]


def test_a_further_profile_whose_cli_is_missing_fails_provision(tmp_path):
    proc, _home = run(tmp_path, {'claude': '2.1.332 (Claude Code)'}, agents=('gemini',))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and 'the agent CLI gemini (profile gemini)' in out, out[-4000:]


# npm with no registry: nothing installed, and the install fails as npm does without a network
UNREACHABLE_NPM = """case "$1" in
  ls) echo '{}' ;;
  install) echo 'npm error code ECONNREFUSED' >&2; echo 'npm ERR! errno ECONNREFUSED' >&2
           echo 'npm ERR! request to https://registry.npmjs.org/@openai%2fcodex failed' >&2; exit 1 ;;
esac"""


def test_a_cli_that_cannot_be_installed_fails_provision_with_npms_words_and_the_fix(tmp_path):
    """No way to install the pinned CLI (no registry): provision fails before any version check, quoting npm's own
    error and naming the fixes (a mirror or proxy, an offline cache, or the CLI installed by hand)."""
    proc, _home = run(tmp_path, {}, agents=(), npm=UNREACHABLE_NPM)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-4000:]
    assert 'could not be installed' in out and 'ECONNREFUSED' in out, out[-4000:]
    assert 'Fix: make the npm registry reachable from this worker' in out and 'worker_agent_install: false' in out, out[-4000:]
    assert 'Ask the agent CLI for its version' not in out, 'it fails at the install, not later'


def test_a_custom_first_profile_is_not_held_to_a_further_profiles_pinned_version(tmp_path):
    """worker_runner_agent custom with worker_runner_agents [gemini]: the packages are gemini's alone, so the custom
    command answers --version as it likes, and gemini is held to its own pin."""
    proc, _home = run(tmp_path, {'my-agent': 'my agent 1.0', 'gemini': '0.61.0'}, agents=('gemini',), first='custom',
                      specs=['@google/gemini-cli@0.61.0'], cli='my-agent')
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    me = pwd.getpwuid(os.getuid()).pw_name
    assert 'Ask the agent CLI for its version through the run PATH, as %s (gemini)' % me in out, out[-4000:]
