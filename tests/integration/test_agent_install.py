# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The worker role installs the real Claude Code, pinned, and a real ``task-N`` runs it to its close-out.

One test-bed host (the ready one: Debian's npm is in it, so the role's OS-package step finds it and the
molecule scenarios test that step's install path), one fleet for the module: ``fleet.dispatch.worker``
with ``worker_runner_agent: claude`` installs ``@anthropic-ai/claude-code@2.1.332`` and ``node@22.23.3`` from the
npm registry under the master's home, on the run PATH; ``fleet.dispatch.launch`` starts a real
``systemd-run --user`` unit whose runner starts ``claude -p`` against the scripted model endpoint
(``tests/fakes/model_endpoint``, served by this process on the podman bridge). The CLI answers "done"
and the run closes out with a no-op (nothing merged). Each provider outcome the endpoint can script
(a throttle, 529, 500, a usage limit, a bad key, an empty balance) ends a real run with its marker:
🔁 retry or 🪫 capacity, never an attempt (the CLI's own retries bounded to one by
``CLAUDE_CODE_MAX_RETRIES``, as docs/agents.md advises). Then the CLI disappears: the next run posts
nothing, spends no attempt and darkens the master (``agent_missing``); the next provision clears it.

Beside it, on the same host, masters fcodex, fgemini and fqwen run the pinned Codex CLI, Gemini CLI and Qwen
Code, installed by the same role (one playbook, the role once per profile) and pointed at the same endpoint: each
ends a real run, from the board, as ✅ (its shell tool commits and merges), ⚪ (a claim without a merge), 🔁 with
no attempt (a 429 throttle, a 500 before any turn), 🪫 revoked (a bad key), 🪫 until the reset the CLI states (a
usage limit); Qwen Code only the first, the throttle and the bad key (its other outcomes are captures).
Through the same helpers: Claude Code's merge, and its silence before a provider that never
answers (the stall limit: 🔁 ``stopped: stall``); Codex CLI reconnecting forever on a refused connection,
stopped by the same limit.

The host reaches the registry as this machine does: through its egress, whose CA bundle is copied
to the host and given to npm (``worker_agent_npm_env``). Without a registry here the module skips.
Cost: its provision is the registry's fetch only (Debian's npm is in the ready image); not yet timed alone
since: with four other bed modules on 3 xdist workers, the five took 1288 s (2026-12-07, quiet machine).
The codex and gemini masters add 257 s (their provision 185 s, of which npm 57 s and the rest the role's own
tasks twice over; their twelve tests 72 s) on a quiet machine, 310 s at a load average of 8 (provision 236 s).
The five runs after those (two usage limits, Claude's merge and stall, Codex's refused) took 109 s at a load
average of 10-13, where the twelve took 227 s: about 50 s on a quiet machine, 20 s of it the two stall limits.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import time
import zoneinfo

import pathlib

import pytest

from fakes.model_endpoint import Endpoint, presets

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of

pytestmark = pytest.mark.testbed

BRIDGE = '10.88.0.1'    # the podman bridge: this machine as the test-bed hosts see it (tests/testbed/README.md)
CLAUDE = '@anthropic-ai/claude-code@2.1.332'
MASTER = 'fagent'
HOME = '/home/' + MASTER
LEDGER = HOME + '/ledger.sqlite3'
CODE = '/usr/local/lib/fleet-dispatch/runner'    # the copied runner (worker_runner_code_dir)
CA = '/usr/local/share/fleet-test-npm-ca.crt'
HOSTILE = pathlib.Path(__file__).resolve().parents[1] / 'fakes' / 'hostile_agent'
HOSTILE_ON_HOST = '/usr/local/share/fleet-test-hostile-agent'
# Polling bound only: each CLI answers the scripted endpoint in 3-10 s on a quiet machine; under the
# suite's load (two cores busy 98 %) a Node CLI's start took 15-20x that (Qwen Code's merge run over 120 s).
WAIT = 300

PLAYBOOK = '''
- name: Provision the worker with its agent CLI
  hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: Provision
      ansible.builtin.include_role:
        name: fleet.dispatch.worker
'''

CREATE = '''
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
board = LedgerBoard(path=%(ledger)r, create=True)
for number in %(numbers)r:
    board.upsert_item(number=number, title='item %%d' %% number, body='Say done.', status='Ready')
board.close()
'''

READ = '''
import datetime, json
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
board = LedgerBoard(path=%(ledger)r)
item = board.get(%(number)d)
verdict = evaluate(item, now=datetime.datetime.now(datetime.timezone.utc))
print(json.dumps({'kinds': [m.kind for m in markers_of(item)], 'fields': [m.fields for m in markers_of(item)],
                  'reason': verdict.reason, 'attempts': verdict.attempts}))
'''


def _registry_reachable():
    npm = shutil.which('npm')
    if not npm:
        return 'no npm on this machine'
    try:
        out = subprocess.run([npm, 'view', CLAUDE, 'version'], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return 'npm view %s timed out' % CLAUDE
    return '' if out.returncode == 0 and out.stdout.strip() else 'npm view %s: %s' % (CLAUDE, out.stderr.strip()[-300:])


def _ca_bundle():
    for name in ('NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE'):
        if os.environ.get(name) and os.path.isfile(os.environ[name]):
            return os.environ[name]
    return '/etc/ssl/certs/ca-certificates.crt'


@pytest.fixture(scope='module')
def fleet(bed_factory, tmp_path_factory):
    why = _registry_reachable() and _registry_reachable()   # asked twice: one slow answer is not an outage
    if why:
        reason = 'the npm registry is not reachable from this machine (%s): the worker role installs the agent from it' % why
        if os.environ.get('FLEET_REQUIRE_TESTBED') == '1':   # CI: a module that ran nothing is a failure
            pytest.fail(reason + ' (FLEET_REQUIRE_TESTBED=1)', pytrace=False)
        pytest.skip(reason)
    started = time.monotonic()
    bed = bed_factory(1, ready=True)      # Debian's npm: the ready host
    host = bed.hosts[0]
    endpoint = Endpoint(host=BRIDGE)
    endpoint.start()
    with open(_ca_bundle(), encoding='utf-8') as handle:
        bed.ssh(host, 'sudo tee %s >/dev/null' % CA, input=handle.read())
    playbook = tmp_path_factory.mktemp('agent-install') / 'provision.yml'
    playbook.write_text(PLAYBOOK)
    role_vars = {
        'worker_masters': [{'name': MASTER}],
        'worker_runner_agent': 'claude',
        # no permission switch given: the claude profile's own (--dangerously-skip-permissions) lets it run tools
        # one internal retry: an outage ends in seconds, not Claude Code's default ~3 minutes (docs/agents.md)
        'worker_runner_agent_env': {'ANTHROPIC_BASE_URL': endpoint.url, 'ANTHROPIC_MODEL': 'claude-sonnet-4-5',
                                    'CLAUDE_CODE_MAX_RETRIES': '1'},
        'worker_agent_credentials': {'ANTHROPIC_API_KEY': 'sk-ant-api03-fake'},
        'worker_agent_npm_env': {'npm_config_cafile': CA},
        # the SQLite ledger is made with the installed runner's code after provision
        'worker_runner_board': {'kind': 'ledger', 'path': LEDGER},
        'worker_runner_check_board': False,
    }

    class Fleet(object):
        pass

    f = Fleet()
    f.bed, f.host, f.endpoint = bed, host, endpoint
    # a bound only: the first provision fetches the CLI and Node from the registry (past 600 s once, with the
    # whole suite beside it)
    f.provision = lambda: bed.playbook(playbook, limit=host, extra_vars=role_vars, timeout=1800)
    t0 = time.monotonic()
    f.first = f.provision()
    f.provision_s = time.monotonic() - t0
    assert f.first.returncode == 0, f.first.stdout[-6000:] + f.first.stderr[-3000:]
    assert 'sk-ant-api03-fake' not in f.first.stdout, 'the agent key is never logged'
    f.path = bed.ssh(host, 'cat %s/.config/fleet-dispatch/path' % HOME, user=MASTER).stdout.strip()
    f.state = HOME + '/.local/state/fleet-dispatch'

    def py(code):
        # from /: a run may leave a json.py in the home (the hostile test does), and `python3 -` imports from its cwd
        return bed.ssh(host, "cd / && PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF" % (CODE, code), user=MASTER).stdout

    def launch(number, workdir=HOME):
        res = bed.ansible(host, 'fleet.dispatch.launch', {
            'items': [{'number': number, 'command': ['fleet-runner', '--item', str(number)], 'workdir': workdir}],
            'path': f.path, 'environment_file': HOME + '/.config/fleet-dispatch/credentials.env'}, become_user=MASTER)
        return res[host]

    def read(number):
        return json.loads(py(READ % {'ledger': LEDGER, 'number': number}))

    def unit_done(number):
        deadline = time.monotonic() + WAIT
        state = None
        while time.monotonic() < deadline:
            state = bed.ssh(host, 'systemctl --user is-active task-%d || true' % number, user=MASTER).stdout.strip()
            if state in ('inactive', 'failed', 'unknown'):
                return state
            time.sleep(0.5)
        raise AssertionError('task-%d still %s after %ss' % (number, state, WAIT))

    def capacity():
        out = bed.ssh(host, 'cat %s/capacity.json 2>/dev/null || echo MISSING' % f.state, user=MASTER).stdout.strip()
        return None if out == 'MISSING' else json.loads(out)

    def script(steps):
        endpoint.script([dict(s) for s in steps])

    def clear_capacity():
        bed.ansible(host, 'fleet.dispatch.capacity_clear', {'source': 'any'}, become_user=MASTER)

    bed.ssh(host, 'sudo tee %s >/dev/null && sudo chmod 755 %s' % (HOSTILE_ON_HOST, HOSTILE_ON_HOST), input=HOSTILE.read_text())
    py(CREATE % {'ledger': LEDGER, 'numbers': [30, 31, 32, 39] + sorted(SCENARIOS.values())})
    f.py, f.launch, f.read, f.unit_done, f.capacity = py, launch, read, unit_done, capacity
    f.script, f.clear_capacity = script, clear_capacity
    try:
        yield f
    finally:
        endpoint.stop()
        print('\ntest_agent_install: provision %.0f s, module %.0f s' % (f.provision_s, time.monotonic() - started))


def test_the_pinned_cli_and_node_answer_through_the_run_path(fleet):
    out = fleet.bed.ssh(fleet.host, 'PATH=%s; claude --version; node --version; command -v claude' % fleet.path,
                        user=MASTER).stdout.split('\n')
    assert out[0].strip() == '2.1.332 (Claude Code)'
    assert out[1].strip().startswith('v22.')
    assert out[2].strip() == HOME + '/.local/lib/fleet-agents/node_modules/.bin/claude'
    conf = json.loads(fleet.bed.ssh(fleet.host, 'cat %s/.config/fleet-dispatch/runner.json' % HOME, user=MASTER).stdout)
    assert conf['agent_env']['DISABLE_AUTOUPDATER'] == '1' and conf['agent_env']['CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC'] == '1'
    assert json.loads(fleet.bed.ssh(fleet.host, 'cat %s/.claude.json' % HOME, user=MASTER).stdout)['hasCompletedOnboarding']


def test_a_real_unit_runs_claude_against_the_endpoint_to_its_close_out(fleet):
    res = fleet.launch(31)
    assert not res.get('failed'), res
    assert fleet.unit_done(31) in ('inactive', 'failed')
    data = fleet.read(31)
    assert data['kinds'] == ['start', 'noop'], (data, fleet.bed.ssh(
        fleet.host, 'cat %s/runs/task-31/capture.log; journalctl --user -u task-31 --no-pager | tail -20' % fleet.state,
        user=MASTER, check=False).stdout)
    assert data['fields'][-1]['turns'] == 1 and data['fields'][-1]['envelope'] is True
    assert any(r.get('path', '').startswith('/v1/messages') for r in fleet.endpoint.requests), fleet.endpoint.requests


# Provider outcomes through the real CLI in a real unit, each on its own item: the scripted endpoint answers
# every request of the run with the provider's documented error (tests/fakes/model_endpoint/presets.py).
SCENARIOS = {'throttle': 33, 'overloaded': 34, 'server_error': 35, 'usage_limit': 36, 'bad_key': 37, 'quota': 38}
# scenario -> (the close-out's marker kind, the capacity source it leaves, or None)
EXPECT = {'throttle': ('retry', None), 'overloaded': ('retry', None), 'server_error': ('retry', None),
          'usage_limit': ('capacity', 'rate_limit'), 'bad_key': ('capacity', 'revoked'), 'quota': ('capacity', 'revoked')}


@pytest.mark.parametrize('scenario', sorted(SCENARIOS))
def test_a_provider_outcome_ends_a_real_claude_run_with_its_marker_and_spends_no_attempt(fleet, scenario):
    number, (kind, source) = SCENARIOS[scenario], EXPECT[scenario]
    fleet.script([{'error': scenario}])
    before = len(fleet.endpoint.requests)
    try:
        res = fleet.launch(number)
        assert not res.get('failed'), res
        fleet.unit_done(number)
        data = fleet.read(number)
        assert data['kinds'] == ['start', kind], (data, fleet.bed.ssh(
            fleet.host, 'cat %s/runs/task-%d/capture.log | tail -c 3000' % (fleet.state, number),
            user=MASTER, check=False).stdout)
        assert data['attempts'] == 0, 'a provider outcome before any turn is not an attempt: %r' % data
        state = fleet.capacity()
        if source is None:
            assert state is None, 'a transient error leaves the master usable: %r' % state
        else:
            assert state and state['source'] == source, state
        turns = [r for r in fleet.endpoint.requests[before:] if r.get('role') == 'turn']
        assert turns, 'the CLI reached the endpoint'
    finally:
        fleet.clear_capacity()
        fleet.script([{'text': 'done'}])


# What the hostile agent tries that the role's default profile must refuse (tests/fakes/hostile_agent; its git
# plants need a clone, which this fleet's runs do not have: test_sandbox.py covers those)
REFUSED = ('wrapper', 'path_plant', 'runner_json', 'sandbox_json', 'board_json', 'config_rename', 'user_unit',
           'config_parent_rename', 'local_parent_rename', 'manager_run', 'manager_env', 'manager_stop', 'manager_bus',
           'runtime_unit', 'share_unit', 'credentials_read', 'runner_environ', 'other_home')


def test_real_claude_running_the_escapes_as_tool_calls_reaches_nothing_of_the_fleet(fleet):
    """Claude Code's own Bash tool runs every escape of the hostile agent inside a real run under the role's
    default profile: each is refused, the user manager saw none of it, and the run still closes out."""
    def ssh(cmd):
        return fleet.bed.ssh(fleet.host, cmd, user=MASTER, check=False).stdout

    own = ' '.join(HOME + p for p in ('/.local/bin/fleet-runner', '/.config/fleet-dispatch/runner.json',
                                      '/.config/fleet-dispatch/sandbox.json', '/.config/fleet-dispatch/board.json'))
    before = ssh('sha256sum %s' % own)
    workdir = HOME + '/fleet/workspaces/hostile'
    ssh('mkdir -p %s/marks %s; systemd-run --user --unit=hostile-victim.service --collect sleep 600' % (HOME, workdir))
    fleet.script([{'shell': 'sh %s' % HOSTILE_ON_HOST}, {'text': 'done'}])
    try:
        assert not fleet.launch(39, workdir=workdir).get('failed')
        fleet.unit_done(39)
        tried = dict(line.split(' ', 1) for line in ssh('cat %s/hostile.txt' % workdir).split('\n') if line)
        assert {k: tried.get(k) for k in REFUSED} == dict.fromkeys(REFUSED, 'refused'), tried
        assert ssh('systemctl --user is-active hostile-victim.service').strip() == 'active'
        assert 'LD_PRELOAD' not in ssh('systemctl --user show-environment')
        assert ssh('systemctl --user list-units --all --no-legend "hostile-escape*"').strip() == ''
        assert ssh('sha256sum %s' % own) == before, 'the runner\'s files, byte for byte'
        assert fleet.read(39)['kinds'] == ['start', 'noop']
    finally:
        fleet.script([{'text': 'done'}])
        ssh('systemctl --user stop hostile-victim.service')


# The same escapes with the agent under its own bubblewrap (worker_runner_agent_sandbox: bwrap): what bwrap
# turns into writes on a throwaway mount instead of refusals (test_sandbox.py reads the same split).
THROWAWAY = ('runner_json', 'sandbox_json', 'board_json')
SEEN = ('{ echo CONFIG; ls -A %(home)s/.config/fleet-dispatch; echo STATE; ls -A %(home)s/.local/state/fleet-dispatch; '
        'echo CREDENTIALS; cat %(home)s/.config/fleet-dispatch/credentials.env; } > seen.txt 2>&1; sh %(hostile)s'
        % {'home': HOME, 'hostile': HOSTILE_ON_HOST})


def test_real_claude_under_its_bwrap_sees_none_of_the_fleets_state_and_closes_out(fleet):
    """The real CLI under the strict agent sandbox: Claude Code (its home config, its cache and the endpoint still
    reached) runs a Bash tool call that lists the fleet's configuration and state directories, reads the
    credentials file and runs every escape of the hostile agent. Both directories are empty to it, the runner's
    files are unchanged byte for byte, each escape is refused, and the run closes out on the board."""
    def ssh(cmd, check=False):
        return fleet.bed.ssh(fleet.host, cmd, user=MASTER, check=check).stdout

    fleet.bed.ssh(fleet.host, 'command -v bwrap >/dev/null || sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq '
                  'bubblewrap >/dev/null')
    conf = HOME + '/.config/fleet-dispatch/runner.json'
    sentinel = HOME + '/.local/state/fleet-dispatch/strict-sentinel'
    ssh('touch %s' % sentinel, check=True)
    assert 'runner.json' in ssh('ls -A %s/.config/fleet-dispatch' % HOME).split()
    own = ' '.join(HOME + p for p in ('/.local/bin/fleet-runner', '/.config/fleet-dispatch/runner.json',
                                      '/.config/fleet-dispatch/sandbox.json', '/.config/fleet-dispatch/board.json'))
    workdir = HOME + '/fleet/workspaces/strict'
    ssh('mkdir -p %s/marks %s; systemd-run --user --unit=hostile-victim.service --collect sleep 600' % (HOME, workdir), check=True)
    set_sandbox = "sudo python3 -c \"import json,sys; p='%s'; c=json.load(open(p)); c['agent_sandbox']=sys.argv[1]; " \
                  "json.dump(c, open(p, 'w'))\" %%s" % conf
    fleet.bed.ssh(fleet.host, set_sandbox % 'bwrap')
    before = ssh('sha256sum %s' % own)
    fleet.script([{'shell': SEEN}, {'text': 'done'}])
    try:
        assert not fleet.launch(30, workdir=workdir).get('failed')
        fleet.unit_done(30)
        data = fleet.read(30)
        log = ssh('cat %s/.local/state/fleet-dispatch/runs/task-30/capture.log | tail -c 3000' % HOME)
        assert data['kinds'] == ['start', 'noop'], (data, log)
        seen = ssh('cat %s/seen.txt' % workdir)
        config, rest = seen.split('STATE', 1)
        state, credentials = rest.split('CREDENTIALS', 1)
        # the configuration directory empty; of the state directory only the run's own output directory
        assert config.split() == ['CONFIG'] and set(state.split()) <= {'runs'}, seen
        assert 'No such file' in credentials and 'ANTHROPIC_API_KEY' not in credentials, seen
        tried = dict(line.split(' ', 1) for line in ssh('cat %s/hostile.txt' % workdir).split('\n') if line)
        for name in THROWAWAY:
            tried.pop(name)
        assert {k: tried.get(k) for k in REFUSED if k not in THROWAWAY} == dict.fromkeys(
            (k for k in REFUSED if k not in THROWAWAY), 'refused'), tried
        assert tried.get('config_read') == 'refused', tried
        assert ssh('sha256sum %s' % own) == before, 'the runner\'s files, byte for byte'
        assert ssh('systemctl --user is-active hostile-victim.service').strip() == 'active'
        assert any(r.get('path', '').startswith('/v1/messages') for r in fleet.endpoint.requests)
    finally:
        fleet.bed.ssh(fleet.host, set_sandbox % 'none', check=False)
        ssh('rm -f %s' % sentinel)
        fleet.script([{'text': 'done'}])
        ssh('systemctl --user stop hostile-victim.service')


# Codex CLI, Gemini CLI and Qwen Code, each on a master of its own beside fagent on the same host: the worker role installs
# them (the profile's pinned package and Node 22), points them at the same endpoint, and a real unit runs each.
# Codex's provider goes in `-c` overrides of its config (its `codex exec --help`; the base URL and the variable
# holding the key, never the key); Gemini CLI's and Qwen Code's in their environment. None retries much here (codex
# request_max_retries 0, gemini general.maxAttempts 1, qwen model.generationConfig.maxRetries 0): an outage ends in
# seconds, not their default 26 s / 224 s / a quarter of an hour. Qwen Code still tries a request 7 times whatever
# maxRetries says, waiting a 429's retry-after each time (20 s in the OpenAI preset: 2 minutes), so its throttle
# here states 1 s (QWEN_THROTTLE): the same 429 body, read the same way (tests/corpus/captures/qwen.yml holds the 20 s one).
CODEX_PROVIDER = ('{name="fleet", base_url="%s/v1", env_key="FLEET_CODEX_KEY", wire_api="responses", '
                  'request_max_retries=0, stream_max_retries=0}')
OTHERS = {
    'codex': {'master': 'fcodex', 'version': 'codex-cli 0.171.0', 'key': {'FLEET_CODEX_KEY': 'sk-fake-codex-0000'},
              'first': 41, 'path': '/v1/responses'},
    'gemini': {'master': 'fgemini', 'version': '0.61.0', 'key': {'GEMINI_API_KEY': 'AIzaFakeGeminiKey0000'},
               'first': 51, 'path': ':streamGenerateContent'},
    'qwen': {'master': 'fqwen', 'version': '0.24.4', 'key': {'OPENAI_API_KEY': 'sk-fake-qwen-0000'},
             'first': 71, 'path': '/v1/chat/completions'},
}
# fagent's Claude Code through the same helpers, for what its own tests above do not run
CLIS = dict(OTHERS, claude={'master': MASTER, 'first': 61, 'path': '/v1/messages'})
# scenario -> (the close-out's marker kind, attempts spent, the capacity source it leaves or None, the item's
# verdict after it where it does not depend on the clock: a retry's waits out its backoff)
REAL = {'merge': ('success', 1, None, 'done'), 'claim': ('noop', 1, None, 'eligible'),
        'throttle': ('retry', 0, None, None), 'server_error': ('retry', 0, None, None),
        'bad_key': ('capacity', 0, 'revoked', 'eligible'), 'usage_limit': ('capacity', 0, 'rate_limit', 'eligible'),
        'refused': ('retry', 0, None, None), 'stall': ('retry', 0, None, None)}
REAL_ORDER = ('merge', 'claim', 'throttle', 'server_error', 'bad_key', 'usage_limit', 'refused', 'stall')
# What each CLI runs of REAL_ORDER here. One real unit per fault where the real CLI shows what a capture read
# by the unit tests cannot (tests/corpus/captures hold every CLI's overload, quota and refused output, read by
# test_captures_outcome.py): Claude Code's merge, and its silence before a provider that never answers (the
# stall limit); Codex CLI's reconnecting forever on a refused connection; the reset each CLI states for a
# usage limit, written by a real unit. Claude Code's provider errors have their own test above.
RUNS = {'codex': REAL_ORDER[:7], 'gemini': REAL_ORDER[:6], 'claude': ('merge', 'stall'),
        'qwen': ('merge', 'throttle', 'bad_key')}
# The stall limit (fleet-runner --stall-timeout) of Claude Code's run the endpoint never answers ({"wait": true},
# counted from the spawn: it starts in a few seconds) and of Codex CLI's refused run (it prints one line again
# and again, counted from the first).
STALL = {'claude': 10, 'codex': 10}
# The forge's merge, for the agent's shell tool: a merged change closing the item on the master's ledger (D2), as
# the fake agent records it (tests/fakes/agent); the agent's own commit comes first, in a repository of its own.
FORGE_MERGE_ON_HOST = '/usr/local/share/fleet-test-forge-merge'
FORGE_MERGE = """import os, sys, uuid
sys.path.insert(0, %r)
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
# "dsn": the PostgreSQL ledger, through the forge's own credential in the agent's environment (never on argv)
board = LedgerBoard(dsn=os.environ['FAKE_FORGE_DSN']) if sys.argv[1] == 'dsn' else LedgerBoard(path=sys.argv[1])
print(board.add_artifact('agent-pr/%%s/%%s' %% (sys.argv[2], uuid.uuid4().hex[:8]), merged=True, closes=[int(sys.argv[2])],
                         title='fix #' + sys.argv[2]))
board.close()
""" % CODE
MERGE_CMD = ("git init -q fix-{n} && cd fix-{n} && printf 'hi\\n' > hello.txt && git add hello.txt && "
             "git -c user.name=agent -c user.email=agent@example.invalid commit -q -m 'fix #{n}' && git log --oneline -1 && "
             "python3 {merge} {ledger} {n}")


# READ, plus the master's capacity state and the commits of the run's fix-N repository, in one login
READ_MORE = READ.replace('print(json.dumps({', """import os, subprocess
state = %(home)r + '/.local/state/fleet-dispatch/capacity.json'
git = subprocess.run(['git', '-C', '%(home)s/fix-%(number)d', 'log', '--format=%%s'], capture_output=True, text=True)
print(json.dumps({'capacity': json.load(open(state)) if os.path.exists(state) else None,
                  'commits': git.stdout.split(chr(10)) if git.returncode == 0 else [],""", 1)


def _others_vars(endpoint, cli):
    spec = OTHERS[cli]
    home = '/home/' + spec['master']
    common = {'worker_masters': [{'name': spec['master']}], 'worker_runner_agent': cli,
              'worker_agent_credentials': spec['key'], 'worker_agent_npm_env': {'npm_config_cafile': CA},
              'worker_runner_board': {'kind': 'ledger', 'path': home + '/ledger.sqlite3'},
              'worker_runner_check_board': False,
              # every run of these CLIs in its own sandbox: the fleet's state and configuration are empty to it
              'worker_runner_agent_sandbox': 'bwrap'}
    if cli == 'codex':
        # no permission switch given: each profile's own lets its CLI run the tool calls unattended
        common['worker_runner_agent_args'] = [
            '-c', 'model="gpt-5.5"',
            '-c', 'model_provider="fleet"', '-c', 'model_providers.fleet=' + CODEX_PROVIDER % endpoint.url]
    elif cli == 'qwen':
        common['worker_runner_agent_env'] = {'OPENAI_BASE_URL': endpoint.url + '/v1', 'OPENAI_MODEL': 'qwen3-coder-plus'}
        common['worker_agent_settings'] = {'model': {'generationConfig': {'maxRetries': 0}}}
    else:
        common['worker_runner_agent_env'] = {'GOOGLE_GEMINI_BASE_URL': endpoint.url, 'GEMINI_MODEL': 'gemini-2.5-pro'}
        common['worker_agent_settings'] = {'general': {'maxAttempts': 1}}
    return common


def _qwen_throttle():
    """The OpenAI throttle preset (429 rate_limit_exceeded, "Please try again in 20s") with a 1 s retry-after."""
    status, body, headers = presets.preset('chat', 'throttle', time.time())
    return {'error': {'status': status, 'body': body, 'headers': dict(headers, **{'retry-after': '1'})}}


class _Others(object):
    """The codex, gemini and qwen masters of fleet's host: launch a run, read its item, its capacity, its capture."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.path = {cli: self.ssh(cli, 'cat %s/.config/fleet-dispatch/path' % self.home(cli)).strip() for cli in CLIS}

    @staticmethod
    def home(cli):
        return '/home/' + CLIS[cli]['master']

    def ssh(self, cli, cmd, check=True):
        return self.fleet.bed.ssh(self.fleet.host, cmd, user=CLIS[cli]['master'], check=check).stdout

    def py(self, cli, code):
        return self.ssh(cli, "cd / && PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF" % (CODE, code))

    def create(self, cli, numbers):
        self.py(cli, CREATE % {'ledger': self.home(cli) + '/ledger.sqlite3', 'numbers': numbers})

    def launch(self, cli, number, stall=None):
        command = ['fleet-runner', '--item', str(number)] + (['--stall-timeout', str(stall)] if stall else [])
        res = self.fleet.bed.ansible(self.fleet.host, 'fleet.dispatch.launch', {
            'items': [{'number': number, 'command': command, 'workdir': self.home(cli)}],
            'path': self.path[cli], 'environment_file': self.home(cli) + '/.config/fleet-dispatch/credentials.env'},
            become_user=CLIS[cli]['master'])
        return res[self.fleet.host]

    def unit_done(self, cli, number):
        deadline = time.monotonic() + WAIT
        state = None
        while time.monotonic() < deadline:
            state = self.ssh(cli, 'systemctl --user is-active task-%d || true' % number).strip()
            if state in ('inactive', 'failed', 'unknown'):
                return state
            time.sleep(0.5)
        capture = self.capture(cli, number)
        self.ssh(cli, 'systemctl --user stop task-%d' % number, check=False)
        raise AssertionError('%s task-%d still %s after %ss:\n%s' % (cli, number, state, WAIT, capture))

    def read(self, cli, number):
        """The item's markers and verdict, the master's capacity state and the commits of the run's fix-N."""
        home = self.home(cli)
        return json.loads(self.py(cli, READ_MORE % {'ledger': home + '/ledger.sqlite3', 'number': number, 'home': home}))

    def capture(self, cli, number):
        return self.ssh(cli, 'tail -c 3000 %s/.local/state/fleet-dispatch/runs/task-%d/capture.log; journalctl --user -u '
                        'task-%d --no-pager | tail -15' % (self.home(cli), number, number), check=False)

    def clear_capacity(self, cli):
        self.fleet.bed.ansible(self.fleet.host, 'fleet.dispatch.capacity_clear', {'source': 'any'},
                               become_user=CLIS[cli]['master'])


@pytest.fixture(scope='module')
def others(fleet, tmp_path_factory):
    """fcodex, fgemini and fqwen provisioned on fleet's host by one playbook (the role once per profile)."""
    tasks = []
    for cli in sorted(OTHERS):
        tasks.append({'name': 'Provision the %s master' % cli,
                      'ansible.builtin.include_role': {'name': 'fleet.dispatch.worker'},
                      'vars': _others_vars(fleet.endpoint, cli)})
    play = [{'name': 'Provision masters running Codex CLI, Gemini CLI and Qwen Code', 'hosts': 'all', 'become': True,
             'gather_facts': False, 'tasks': tasks}]
    playbook = tmp_path_factory.mktemp('agent-others') / 'others.yml'
    playbook.write_text(json.dumps(play, indent=1))
    t0 = time.monotonic()
    res = fleet.bed.playbook(playbook, limit=fleet.host, timeout=1800)
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    for spec in OTHERS.values():
        for value in spec['key'].values():
            assert value not in res.stdout, 'the agent key is never logged'
    fleet.bed.ssh(fleet.host, 'sudo tee %s >/dev/null && sudo chmod 644 %s' % (FORGE_MERGE_ON_HOST, FORGE_MERGE_ON_HOST),
                  input=FORGE_MERGE)
    # worker_agent_settings merged into Gemini CLI's settings.json: no internal retry
    settings = json.loads(fleet.bed.ssh(fleet.host, 'cat /home/fgemini/.gemini/settings.json', user='fgemini').stdout)
    assert settings['general']['maxAttempts'] == 1 and settings['general']['enableAutoUpdate'] is False, settings
    settings = json.loads(fleet.bed.ssh(fleet.host, 'cat /home/fqwen/.qwen/settings.json', user='fqwen').stdout)
    assert settings['model']['generationConfig']['maxRetries'] == 0 and settings['security']['auth']['selectedType'] == 'openai' \
        and settings['telemetry']['enabled'] is False, settings

    o = _Others(fleet)
    o.provision_s = took
    for cli, spec in CLIS.items():
        o.create(cli, [spec['first'] + REAL_ORDER.index(s) for s in RUNS[cli]])
    print('\ntest_agent_install: codex, gemini and qwen masters provisioned in %.0f s' % took)
    return o


@pytest.mark.parametrize('cli', sorted(OTHERS))
def test_the_role_installs_the_other_clis_answering_through_the_run_path(fleet, others, cli):
    out = others.ssh(cli, 'PATH=%s; %s --version; node --version; command -v %s' % (others.path[cli], cli, cli)).split('\n')
    assert out[0].strip() == OTHERS[cli]['version'], out
    assert out[1].strip().startswith('v22.'), out
    assert out[2].strip() == others.home(cli) + '/.local/lib/fleet-agents/node_modules/.bin/' + cli, out


@pytest.mark.parametrize('cli,scenario', [(c, s) for c in sorted(CLIS) for s in RUNS[c]])
def test_a_real_cli_run_ends_with_its_marker_from_the_board(fleet, others, cli, scenario):
    """The real CLI in a real unit through fleet-runner: its tool call commits and merges (success), it claims
    without one (noop); a throttle, a 500, a refused connection or a provider that never answers (the stall
    limit) before any turn is a retry, no attempt; a usage limit darkens the master until the reset the CLI
    states; a bad key until a human acts."""
    _real_run(fleet, others, cli, scenario, CLIS[cli]['first'] + REAL_ORDER.index(scenario))


def _real_run(fleet, others, cli, scenario, number):
    kind, attempts, source, reason = REAL[scenario]
    if scenario == 'merge':
        merge = MERGE_CMD.format(n=number, merge=FORGE_MERGE_ON_HOST, ledger=others.home(cli) + '/ledger.sqlite3')
        if cli in OTHERS:
            # under bwrap the runner's configuration directory is empty: the tool call commits only when it is
            merge = 'test ! -e ~/.config/fleet-dispatch/runner.json && ' + merge
        steps = [{'shell': merge}, {'text': 'done'}]
    elif scenario == 'claim':
        steps = [{'text': 'Done: I fixed item %d, committed it and merged the change.' % number}]
    elif scenario == 'stall':
        steps = [{'wait': True}]
    elif scenario == 'refused':
        steps = [{'text': 'done'}]
    elif (scenario, cli) == ('throttle', 'qwen'):
        steps = [_qwen_throttle()]
    else:
        steps = [{'error': scenario}]
    # Codex CLI refused reconnects forever: only the stall limit ends it
    stall = STALL[cli] if scenario == 'stall' or (scenario, cli) == ('refused', 'codex') else None
    fleet.script(steps)
    before = len(fleet.endpoint.requests)
    state = None
    try:
        if scenario == 'refused':
            with fleet.endpoint.refusing():
                res = others.launch(cli, number, stall=stall)
                others.unit_done(cli, number)
        else:
            res = others.launch(cli, number, stall=stall)
            others.unit_done(cli, number)
        assert not res.get('failed'), res
        data = others.read(cli, number)
        state = data['capacity']
        assert data['kinds'] == ['start', kind], (data, others.capture(cli, number))
        assert data['attempts'] == attempts, (data, others.capture(cli, number))
        assert reason is None or data['reason'] == reason, data
        if source is None:
            assert state is None, 'the master stays usable: %r' % state
        else:
            assert state and state['source'] == source, state
        seen = fleet.endpoint.requests[before:]
        turns = [r for r in seen if r.get('role') == 'turn']
        if scenario == 'refused':
            assert seen == [], 'nothing listened: %r' % seen
        else:
            assert turns and all(CLIS[cli]['path'] in r['path'] for r in turns), seen
        if stall:
            assert data['fields'][-1]['cause'] == 'stall' and data['fields'][-1]['stall_timeout'] == stall, data
        if scenario == 'stall':
            assert {r['action'] for r in turns} == {'wait'}, 'the CLI\'s request, never answered: %r' % turns
        if scenario == 'usage_limit':
            _assert_stated_reset(cli, state, [r['t'] for r in turns], others.capture(cli, number))
        if scenario == 'merge':
            assert len(turns) == 2, 'the tool call, then the answer after its result'
            assert data['commits'][0] == 'fix #%d' % number, data
            if cli in OTHERS:
                journal = others.ssh(cli, 'journalctl --user -u task-%d --no-pager' % number, check=False)
                assert 'starting the agent: /usr/bin/bwrap' in journal, journal[-3000:]
    finally:
        fleet.endpoint.release()
        if state is not None:
            others.clear_capacity(cli)
        fleet.script([{'text': 'done'}])


def _assert_stated_reset(cli, state, asked, capture):
    """The capacity state's reset is the one the CLI printed for the endpoint's usage limit (presets.py): Codex
    CLI's "try again at 6:12 AM" for ``resets_at`` 3 hours after the request, to its minute; Gemini CLI's
    per-day quota at the next midnight Pacific time after the request, never its "Please retry in 36s"."""
    reset = datetime.datetime.fromisoformat(state['reset_at'].replace('Z', '+00:00'))   # the state file's own form
    if cli == 'codex':
        stated = [datetime.datetime.fromtimestamp(int(t) + presets.LIMIT_RESET_S, datetime.timezone.utc) for t in asked]
        minute = datetime.timedelta(minutes=1)
        assert min(stated) - minute <= reset <= max(stated) + minute, (state, capture)
    else:
        pacific = zoneinfo.ZoneInfo('America/Los_Angeles')

        def midnight_after(epoch):
            day = datetime.datetime.fromtimestamp(epoch, pacific).date() + datetime.timedelta(days=1)
            return datetime.datetime.combine(day, datetime.time(0), pacific).astimezone(datetime.timezone.utc)
        # read when the run closed out, at most a couple of minutes after the request: a midnight in between
        assert reset in (midnight_after(asked[0]), midnight_after(asked[-1] + 120)), (state, capture)


def test_a_cli_gone_after_provision_darkens_the_master_and_provision_clears_it(fleet):
    prefix = HOME + '/.local/lib/fleet-agents'
    fleet.bed.ssh(fleet.host, 'mv %s %s.away' % (prefix, prefix), user=MASTER)
    try:
        fleet.launch(32)
        fleet.unit_done(32)
        data = fleet.read(32)
        assert data['kinds'] == [] and (data['reason'], data['attempts']) == ('eligible', 0), data
        state = fleet.capacity()
        assert state and state['source'] == 'agent_missing' and "'claude'" in state['message'], state
    finally:
        fleet.bed.ssh(fleet.host, 'mv %s.away %s' % (prefix, prefix), user=MASTER)
    again = fleet.provision()
    assert again.returncode == 0, again.stdout[-4000:]
    assert fleet.capacity() is None, 'the provision that found the CLI cleared agent_missing'


BUDGET_CONFIG = r'''
import json, os
here = os.path.expanduser('~/.config/fleet-dispatch/')
conf = json.load(open(here + 'runner.json'))
conf['budget'] = {'tokens': 1500}
fd = os.open(here + 'runner-budget.json', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, json.dumps(conf).encode())
os.close(fd)
'''


def test_real_claude_over_its_budget_is_stopped_at_the_usage_event_that_reached_it(fleet):
    """Real Claude Code with a 1500-token run budget: the runner gives it stream-json, and the scripted endpoint
    answers each turn with 1000 input tokens and a 5-second Bash call. The second response reaches the budget:
    the runner stops the CLI there, inside its tool call, so the endpoint never sees a third turn; the budget marker
    is posted once, counts as an attempt, and states the tokens the CLI stated (a cost only if it stated one)."""
    number = 40
    fleet.py(CREATE % {'ledger': LEDGER, 'numbers': [number]})
    fleet.bed.ssh(fleet.host, "python3 - <<'PYEOF'\n%s\nPYEOF" % BUDGET_CONFIG, user=MASTER)
    # six turns of 1040 tokens, each step its own ('times' is expanded when an Endpoint is built, not by script)
    fleet.script([{'shell': 'sleep 5', 'usage': {'input_tokens': 1000, 'output_tokens': 40}}] * 6 + [{'text': 'done'}])
    before = len(fleet.endpoint.requests)
    try:
        res = fleet.bed.ansible(fleet.host, 'fleet.dispatch.launch', {
            'items': [{'number': number, 'workdir': HOME,
                       'command': ['fleet-runner', '--item', str(number), '--config', HOME + '/.config/fleet-dispatch/runner-budget.json']}],
            'path': fleet.path, 'environment_file': HOME + '/.config/fleet-dispatch/credentials.env'}, become_user=MASTER)[fleet.host]
        assert not res.get('failed'), res
        assert fleet.unit_done(number) == 'inactive'     # exit 15 is not a failed unit
        data = fleet.read(number)
        capture = fleet.bed.ssh(fleet.host, 'grep -o \'"type":"[a-z_]*"\\|"usage":{[^}]*}\' %s/runs/task-%d/capture.log | head -60'
                                % (fleet.state, number), user=MASTER, check=False).stdout
        assert data['kinds'] == ['start', 'budget'], (data, capture)
        assert data['attempts'] == 1 and data['reason'] == 'eligible', data
        stop = data['fields'][-1]
        assert stop['limit'] == 'tokens' and stop['budget'] == {'tokens': 1500}, stop
        assert 2000 <= stop['spend_at_stop']['tokens'] < 3000, stop     # the second response, not a later one
        assert 'cost_usd' not in stop['spend_at_stop'], 'no cost was stated mid-run: none is invented'
        turns = [r for r in fleet.endpoint.requests[before:] if r.get('role') == 'turn']
        assert len(turns) == 2, ([r.get('path') for r in turns], capture)
    finally:
        fleet.script([{'text': 'done'}])


# --- a routed item through the production hand dispatch ----------------------------------------------------------

ROUTED_MASTER = 'froute'
ROUTED_ITEM = 91
ROUTED_ORIGIN = r"""
set -eu
[ -d /srv/fleet-origin.git ] && exit 0
tmp=$(mktemp -d)
git -C "$tmp" init -q -b main && echo demo > "$tmp/README" && git -C "$tmp" add README
git -C "$tmp" -c user.name=t -c user.email=t@t commit -q -m init
git clone -q --bare "$tmp" /srv/fleet-origin.git && chmod -R a+rX /srv/fleet-origin.git && rm -rf "$tmp"
"""


@pytest.fixture(scope='module')
def routed(fleet, fresh_database, tmp_path_factory):
    """A master whose first profile is custom and which also offers gemini (worker_runner_agents), on a PostgreSQL
    ledger the controller reads through a forwarder: the board of a production hand dispatch."""
    from psycopg.conninfo import conninfo_to_dict
    from test_runner_units import Forwarder
    local_dsn, drop = fresh_database()
    params = conninfo_to_dict(local_dsn)
    forwarder = Forwarder((params.get('host', '127.0.0.1'), int(params.get('port', 5432))))
    worker_dsn = 'postgresql://%s:%s@%s:%d/%s' % (params['user'], params['password'], BRIDGE, forwarder.port, params['dbname'])
    board = LedgerBoard(dsn=local_dsn, create=True)
    board.upsert_item(number=ROUTED_ITEM, title='item %d' % ROUTED_ITEM, body='Say done.', status='Ready', agent='gemini')
    board.close()
    fleet.bed.ssh(fleet.host, 'sudo sh -s', input=ROUTED_ORIGIN)
    fleet.bed.ssh(fleet.host, 'sudo tee %s >/dev/null && sudo chmod 644 %s' % (FORGE_MERGE_ON_HOST, FORGE_MERGE_ON_HOST),
                  input=FORGE_MERGE)
    profiles = {'worker_runner_agent': 'custom', 'worker_runner_agents': ['gemini']}
    role_vars = dict(profiles, **{
        'worker_masters': [{'name': ROUTED_MASTER}],
        'worker_runner_agent_command': ['/bin/true'],
        'worker_runner_agent_env': {'GOOGLE_GEMINI_BASE_URL': fleet.endpoint.url, 'GEMINI_MODEL': 'gemini-2.5-pro'},
        'worker_agent_credentials': dict(OTHERS['gemini']['key'], FAKE_FORGE_DSN=worker_dsn),
        'worker_agent_npm_env': {'npm_config_cafile': CA},
        'worker_runner_board': {'kind': 'ledger'},
        'worker_credentials': {'FLEET_BOARD_DSN': worker_dsn},
        'worker_clones': [{'name': 'main', 'repo': '/srv/fleet-origin.git'}]})
    playbook = tmp_path_factory.mktemp('agent-routed') / 'provision.yml'
    playbook.write_text(PLAYBOOK)
    res = fleet.bed.playbook(playbook, limit=fleet.host, extra_vars=role_vars, timeout=1800)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    assert worker_dsn not in res.stdout and 'AIzaFakeGeminiKey0000' not in res.stdout, 'no secret is logged'
    inventory = tmp_path_factory.mktemp('agent-routed-inv') / 'workers.ini'
    inventory.write_text(pathlib.Path(fleet.bed.inventory).read_text() + '\n[workers:children]\ntestbed\n\n[workers:vars]\n'
                         'worker_masters=%s\nworker_runner_agent=custom\nworker_runner_agents=%s\n'
                         % (json.dumps([{'name': ROUTED_MASTER}]), json.dumps(profiles['worker_runner_agents'])))

    class Routed(object):
        pass

    r = Routed()
    r.local_dsn, r.inventory, r.state = local_dsn, inventory, tmp_path_factory.mktemp('agent-routed-state')
    try:
        yield r
    finally:
        forwarder.close()
        drop()


def test_an_item_routed_to_a_further_profile_runs_that_real_cli_through_the_hand_dispatch(fleet, routed):
    """The production hand dispatch (dispatch.yml, the sweep's shared cycle) places an item that asks for gemini on the
    master that offers it beside its first profile; the runner runs Gemini CLI with the profile's own permission switch
    (the routed profile gets none of the first's arguments), its tool call commits and merges through the forge, and
    the item ends with a success marker on the PostgreSQL ledger."""
    merge = '{ %s; } > ~/routed-merge.log 2>&1' % MERGE_CMD.format(n=ROUTED_ITEM, merge=FORGE_MERGE_ON_HOST, ledger='dsn')
    fleet.script([{'shell': merge}, {'text': 'done'}])
    before = len(fleet.endpoint.requests)
    try:
        extra = {'dispatch_board': {'kind': 'ledger', 'dsn': routed.local_dsn}, 'dispatch_state_dir': str(routed.state),
                 'dispatch_board_dir': str(routed.state), 'dispatch_plan_json': str(routed.state / 'plan.json'),
                 'issue': ROUTED_ITEM}
        argv = [str(pathlib.Path(sys.executable).parent / 'ansible-playbook'), '-i', str(routed.inventory),
                str(pathlib.Path(__file__).resolve().parents[2] / 'playbooks' / 'dispatch.yml'), '-e', json.dumps(extra)]
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
                             env=fleet.bed.env, timeout=900)
        assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
        plan = json.loads((routed.state / 'plan.json').read_text())
        assert plan['launched'] and plan['launched'][0]['master'] == ROUTED_MASTER, plan.get('launched')
        deadline = time.monotonic() + WAIT
        while True:
            board = LedgerBoard(dsn=routed.local_dsn)
            try:
                kinds = [m.kind for m in markers_of(board.get(ROUTED_ITEM))]
            finally:
                board.close()
            if kinds[-1:] != ['start'] and kinds:
                break
            assert time.monotonic() < deadline, kinds
            time.sleep(1)
        journal = fleet.bed.ssh(fleet.host, 'journalctl --user -u task-%d --no-pager' % ROUTED_ITEM, user=ROUTED_MASTER,
                                check=False).stdout
        run_dir = '/home/%s/.local/state/fleet-dispatch/runs/task-%d' % (ROUTED_MASTER, ROUTED_ITEM)
        capture = fleet.bed.ssh(fleet.host, 'cat ~/routed-merge.log; tail -c 1000 %s/capture.log' % run_dir,
                                user=ROUTED_MASTER, check=False).stdout
        assert kinds == ['start', 'success'], (kinds, journal[-2000:], capture)
        assert 'starting the agent: gemini' in journal, journal[-3000:]
        turns = [r for r in fleet.endpoint.requests[before:] if r.get('role') == 'turn']
        assert len(turns) == 2 and all(OTHERS['gemini']['path'] in r['path'] for r in turns), turns
    finally:
        fleet.script([{'text': 'done'}])
