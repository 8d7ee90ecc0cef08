# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Trust boundaries in real ``task-<item>`` units on a test-bed worker (issue 14, items 3 and 4).

``fleet.dispatch.worker`` provisions two masters with the strict sandbox profile, a board secret in
``credentials.env`` and the agent's own key in ``agent-credentials.env``; ``fleet.dispatch.launch``
reads the master's ``sandbox.json`` and starts the installed runner, whose "agent" is a shell probe:
it dumps its environment and tries to write and read where it must not. Each probe outcome is
recorded by the agent itself and read back over SSH. The cgroup limit is read the same way; a
limit the bed's user manager cannot enforce (no controller delegated to it) is reported as a skip
with the reading, never as a pass.
"""
from __future__ import annotations

import json
import pathlib
import time

import pytest

pytestmark = pytest.mark.testbed

WAIT = 90   # polling bound only (a probe run takes about a second); covers a loaded 2-core machine

MASTER, OTHER = 'sbxa', 'sbxb'
HOME = '/home/' + MASTER
BOARD_TOKEN = 'ghp_board_token_only_for_the_runner_1234'
BOARD_PASSWORD = 'board-ledger-password-5678'
AGENT_KEY = 'sk-agent-own-key-9012'
RUNNER_ROOT = '/usr/local/lib/fleet-dispatch/runner'
LEDGER = HOME + '/.local/state/fleet-dispatch/ledger.sqlite3'

PLAYBOOK = '''
- name: Provision the sandboxed masters
  hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: Provision the worker
      ansible.builtin.include_role:
        name: fleet.dispatch.worker
'''

# The "agent": one line per probe, "<probe> ok|refused", into its workspace (the one place it may write).
PROBE = r'''
out="$PWD/probe.txt"; : > "$out"; runner=$PPID
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok" >> "$out"; else echo "$name refused" >> "$out"; fi; }
env > "$PWD/env.txt"
try workspace touch "$PWD/written"
try state touch "$FLEET_RUN_DIR/agent-was-here"
try agent_config touch "$HOME/.claude/written"
try home touch "$HOME/escaped"
try user_unit touch "$HOME/.config/systemd/user/escaped.service"
try fleet_config touch "$HOME/.config/fleet-dispatch/runner.json"
try var_tmp touch /var/tmp/sbx-escaped
try credentials_file cat "$HOME/.config/fleet-dispatch/credentials.env"
try other_home cat /home/sbxb/public.txt
try runner_environ grep -aq FLEET_GITHUB_TOKEN /proc/$runner/environ
try no_new_privs grep -q 'NoNewPrivs:.*1' /proc/self/status
exit 0
'''

HOSTILE_AGENT = pathlib.Path(__file__).resolve().parents[1] / 'fakes' / 'hostile_agent'

# What roles/worker writes to sandbox.json by default for MASTER (worker_sandbox_* defaults): the home
# stays writable; launch adds the runner's own files read-only (RUNNER_OWN) and the workspace writable.
DEFAULT_PROFILE = {
    'NoNewPrivileges': True, 'PrivateUsers': True, 'PrivateTmp': False, 'ProtectSystem': 'full', 'ProtectHome': 'no',
    'ReadWritePaths': [HOME + '/.local/state/fleet-dispatch', HOME + '/fleet/workspaces', HOME + '/fleet/clones'],
    'InaccessiblePaths': ['-%s/.config/fleet-dispatch/credentials.env' % HOME, '-/home/' + OTHER],
}

MARKERS = r'''
import json
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
board = LedgerBoard(path=%(ledger)r)
print(json.dumps([m.kind for m in markers_of(board.get(%(number)d))]))
board.close()
'''

CREATE = r'''
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
board = LedgerBoard(path=%(ledger)r, create=True)
board.upsert_item(number=%(number)d, title='probe', body='Probe the sandbox', status='Ready')
board.close()
'''


@pytest.fixture(scope='module')
def worker(bed, tmp_path_factory):
    host = bed.hosts[0]
    playbook = tmp_path_factory.mktemp('sandbox') / 'provision.yml'
    playbook.write_text(PLAYBOOK)
    role_vars = {
        'worker_masters': [{'name': MASTER}, {'name': OTHER}],
        'worker_packages_install': False,
        'worker_runner_install': True,
        'worker_runner_agent_command': ['/bin/sh', '-c', PROBE],
        'worker_runner_board': {'kind': 'ledger', 'path': LEDGER},
        'worker_runner_check_board': False,
        'worker_credentials': {'FLEET_GITHUB_TOKEN': BOARD_TOKEN, 'LEDGER_PASSWORD': BOARD_PASSWORD},
        'worker_agent_credentials': {'AGENT_OWN_KEY': AGENT_KEY},
        # the strict profile (docs/sandbox.md)
        'worker_sandbox_private_tmp': True,
        # worker_sandbox_hide: the default (true) hides credentials.env and the other master's home
        'worker_sandbox_protect_system': 'strict',
        'worker_sandbox_protect_home': 'read-only',
    }
    proc = bed.playbook(playbook, limit=host, extra_vars=role_vars)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert AGENT_KEY not in proc.stdout and BOARD_TOKEN not in proc.stdout   # no_log
    # the other master's home and a file in it are world-readable: only the sandbox keeps it from the agent
    bed.ssh(host, 'sudo chmod 0755 /home/%s && echo other-masters-data | sudo -u %s tee /home/%s/public.txt >/dev/null && '
                  'sudo chmod 0644 /home/%s/public.txt' % (OTHER, OTHER, OTHER, OTHER))
    bed.ssh(host, 'mkdir -p %s/.claude' % HOME, user=MASTER)
    path = bed.ssh(host, 'cat %s/.config/fleet-dispatch/path' % HOME, user=MASTER).stdout.strip()

    class Worker(object):
        pass

    w = Worker()
    w.bed, w.host, w.path = bed, host, path

    def ssh(cmd, check=True):
        return bed.ssh(host, cmd, user=MASTER, check=check)

    def launch(number, command=None, sandbox=None):
        workdir = '%s/fleet/workspaces/task-%d' % (HOME, number)
        ssh('mkdir -p %s' % workdir)
        args = {'items': [{'number': number, 'command': command or ['fleet-runner', '--item', str(number)],
                           'workdir': workdir}],
                'path': path, 'environment_file': HOME + '/.config/fleet-dispatch/credentials.env', 'notifier': ''}
        if sandbox is not None:
            args['sandbox'] = sandbox
        res = bed.ansible(host, 'fleet.dispatch.launch', args, become_user=MASTER)[host]
        assert res.get('launched') == ['task-%d' % number], res
        return workdir

    def wait_gone(number):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            state = ssh('systemctl --user is-active task-%d || true' % number).stdout.strip()
            if state in ('inactive', 'failed', 'unknown'):
                return state
            time.sleep(0.3)
        raise AssertionError('task-%d still %s after %ss' % (number, state, WAIT))

    w.ssh, w.launch, w.wait_gone = ssh, launch, wait_gone
    return w


def test_the_role_writes_the_sandbox_and_the_agent_credentials(worker):
    sandbox = json.loads(worker.ssh('cat %s/.config/fleet-dispatch/sandbox.json' % HOME).stdout)
    assert sandbox['PrivateUsers'] is True and sandbox['ProtectHome'] == 'read-only'
    assert '-%s/.config/fleet-dispatch/credentials.env' % HOME in sandbox['InaccessiblePaths']
    assert '-/home/%s' % OTHER in sandbox['InaccessiblePaths']
    mode = worker.ssh('stat -c %%a:%%U %s/.config/fleet-dispatch/agent-credentials.env' % HOME).stdout.strip()
    assert mode == '600:%s' % MASTER


def test_a_run_unit_confines_the_agent_and_keeps_the_board_secrets(worker):
    number = 41
    worker.ssh("PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF" % (RUNNER_ROOT, CREATE % {'ledger': LEDGER, 'number': number}))
    workdir = worker.launch(number)
    worker.wait_gone(number)
    probes = dict(line.split(' ', 1) for line in worker.ssh('cat %s/probe.txt' % workdir).stdout.split('\n') if line)
    assert probes == {'workspace': 'ok', 'state': 'ok', 'agent_config': 'ok', 'home': 'refused', 'user_unit': 'refused',
                      'fleet_config': 'refused', 'var_tmp': 'ok', 'credentials_file': 'refused', 'other_home': 'refused',
                      'runner_environ': 'refused', 'no_new_privs': 'ok'}, probes
    # /var/tmp was the run's own (PrivateTmp): nothing reached the host's
    assert worker.ssh('test -e /var/tmp/sbx-escaped && echo present || echo absent').stdout.strip() == 'absent'
    assert worker.ssh('test -e %s/escaped && echo present || echo absent' % HOME).stdout.strip() == 'absent'
    env = dict(line.split('=', 1) for line in worker.ssh('cat %s/env.txt' % workdir).stdout.split('\n') if '=' in line)
    dumped = json.dumps(env)
    assert BOARD_TOKEN not in dumped and BOARD_PASSWORD not in dumped
    assert 'FLEET_GITHUB_TOKEN' not in env and 'LEDGER_PASSWORD' not in env
    assert env.get('AGENT_OWN_KEY') == AGENT_KEY
    assert env.get('FLEET_ITEM') == str(number) and env.get('HOME') == HOME and env.get('PATH')


def _controllers(worker, unit):
    """The cgroup controllers the user manager gave ``unit`` (cgroup v2, or the hybrid 'unified' mount)."""
    group = worker.ssh('systemctl --user show %s -p ControlGroup --value' % unit).stdout.strip()
    out = worker.ssh('cat /sys/fs/cgroup%s/cgroup.controllers 2>/dev/null || cat /sys/fs/cgroup/unified%s/cgroup.controllers '
                     '2>/dev/null || true' % (group, group)).stdout.split()
    return group, out


def test_the_tasks_limit_holds_where_the_user_manager_has_the_pids_controller(worker):
    number = 42
    # a script file: systemd expands "$NAME" (and "$$") in a unit's command line itself
    worker.ssh("cat > %s/fork-probe.sh <<'EOF'\nfor i in $(seq 40); do sleep 30 & done 2>/dev/null\nsleep 1\n"
               "pgrep -c -P $$ sleep > \"$1/forked\"\nsleep 30\nEOF" % HOME)
    workdir = '%s/fleet/workspaces/task-%d' % (HOME, number)
    worker.launch(number, command=['/bin/sh', HOME + '/fork-probe.sh', workdir],
                  sandbox={'NoNewPrivileges': True, 'TasksMax': 10})
    try:
        deadline = time.monotonic() + WAIT
        while worker.ssh('test -s %s/forked && echo y || echo n' % workdir).stdout.strip() != 'y':
            assert time.monotonic() < deadline, 'the fork probe wrote nothing'
            time.sleep(0.3)
        group, controllers = _controllers(worker, 'task-%d' % number)
        assert worker.ssh('systemctl --user show task-%d -p TasksMax --value' % number).stdout.strip() == '10'
        forked = int(worker.ssh('cat %s/forked' % workdir).stdout.strip())
        if 'pids' not in controllers:
            pytest.skip('the bed\'s user manager has no pids controller for %s (controllers: %r): TasksMax=10 is set but not '
                        'enforced (%d of 40 forks ran). The host kernel binds pids and memory to its cgroup v1 hierarchies '
                        '(hybrid layout), so no podman host can have them on cgroup2; this case needs a worker booted with '
                        'the unified layout (bare metal or a VM, Debian 12\'s default): docs/sandbox.md' % (group, controllers, forked))
        assert forked < 10, 'TasksMax=10 did not hold: %d background tasks ran' % forked
    finally:
        worker.ssh('systemctl --user stop task-%d || true' % number, check=False)


# The runner's own files, by the hostile agent's names for them.
OWN_FILES = {'wrapper': HOME + '/.local/bin/fleet-runner', 'runner_json': HOME + '/.config/fleet-dispatch/runner.json',
             'sandbox_json': HOME + '/.config/fleet-dispatch/sandbox.json',
             'board_json': HOME + '/.config/fleet-dispatch/board.json', 'bashrc': HOME + '/.bashrc'}

SETUP_REPO = r"""
set -e
rm -rf ~/hostile-origin.git ~/fleet/clones/hostile ~/marks ~/seed && mkdir -p ~/marks
git init -q --bare -b main ~/hostile-origin.git
git init -q -b main ~/seed && cd ~/seed && echo hello > README && git add README
git -c user.name=t -c user.email=t@example.invalid commit -qm init && git push -q ~/hostile-origin.git HEAD:main
git clone -q ~/hostile-origin.git ~/fleet/clones/hostile
"""


def _hostile_setup(worker, numbers):
    """A fresh hostile origin and clone, the hostile agent in the master's home, and the items ``numbers`` on the ledger."""
    worker.ssh(SETUP_REPO)
    worker.bed.ssh(worker.host, 'cat > %s/hostile_agent && chmod 755 %s/hostile_agent' % (HOME, HOME), user=MASTER,
                   input=HOSTILE_AGENT.read_text())
    for number in numbers:
        worker.ssh("PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF" % (RUNNER_ROOT, CREATE % {'ledger': LEDGER, 'number': number}))


def _tried(worker, workspace):
    """The hostile agent's record in ``workspace``: attempt name -> ok | refused."""
    return dict(line.split(' ', 1) for line in worker.ssh('cat %s/hostile.txt' % workspace).stdout.split('\n') if line)


def _run_in_default_profile(worker, number, agent, sandbox='default'):
    """``agent`` as the run's agent of item ``number``, in a workspace of the hostile clone, under the
    default profile (``sandbox=None``: the master's own sandbox.json, which this fixture's role wrote strict; a dict:
    that one);
    returns the workspace once the unit is gone."""
    ws = worker.bed.ansible(worker.host, 'fleet.dispatch.workspace',
                            {'clone': HOME + '/fleet/clones/hostile', 'number': number}, become_user=MASTER)[worker.host]
    assert ws.get('created'), ws
    args = {'items': [{'number': number, 'workdir': ws['path'],
                       'command': ['fleet-runner', '--item', str(number), '--agent-command', json.dumps(agent)]}],
            'path': worker.path, 'environment_file': HOME + '/.config/fleet-dispatch/credentials.env', 'notifier': ''}
    if sandbox is not None:
        args['sandbox'] = DEFAULT_PROFILE if sandbox == 'default' else sandbox
    res = worker.bed.ansible(worker.host, 'fleet.dispatch.launch', args, become_user=MASTER)[worker.host]
    assert res.get('launched') == ['task-%d' % number], res
    worker.wait_gone(number)
    return ws['path']


REFUSED = ('wrapper', 'path_plant', 'runner_json', 'sandbox_json', 'board_json', 'config_rename', 'user_unit', 'gitconfig',
           'ssh_keys', 'bashrc', 'config_parent_rename', 'local_parent_rename', 'manager_run', 'manager_env', 'manager_stop',
           'manager_bus', 'runtime_unit', 'share_unit', 'credentials_read', 'runner_environ', 'other_home')
SHARED_STATE = ('ledger_read', 'config_read', 'state_plant')
STATE_PLANT = HOME + '/.local/state/fleet-dispatch/hostile-plant'


def test_a_hostile_agent_reaches_neither_its_runner_nor_the_masters_git(worker):
    """In the default profile (home writable), a hostile agent commits a json.py to the target
    repository, plants hooks, a filter and fsmonitor in the clone, and tries to rewrite its runner's
    files. The next run on that repository completes with none of it run: no token printed, no hook,
    no filter, no fsmonitor; the runner's files unchanged."""
    _hostile_setup(worker, (51, 52))
    digests = 'sha256sum %s' % ' '.join(OWN_FILES.values())
    before = worker.ssh(digests).stdout
    # another item's live run, for the agent to try to stop through the user manager
    worker.ssh('systemctl --user stop hostile-victim.service 2>/dev/null; '
               'systemd-run --user --unit=hostile-victim.service --collect sleep 600 >/dev/null')

    def run(number, agent):
        return _run_in_default_profile(worker, number, agent)

    hostile_ws = run(51, ['/bin/sh', HOME + '/hostile_agent'])
    tried = _tried(worker, hostile_ws)
    # the clone is the agent's: its push and its plants land (what the fleet must then not run)
    assert {k: tried.pop(k) for k in ('push', 'plant_filter', 'plant_fsmonitor')} == dict.fromkeys(
        ('push', 'plant_filter', 'plant_fsmonitor'), 'ok'), tried
    # without an agent sandbox the agent shares the fleet's state with its runner (docs/sandbox.md, Limits)
    assert {k: tried.pop(k) for k in SHARED_STATE} == dict.fromkeys(SHARED_STATE, 'ok'), tried
    assert worker.ssh('test -e %s && rm %s && echo present' % (STATE_PLANT, STATE_PLANT)).stdout.strip() == 'present'
    assert tried == dict.fromkeys(REFUSED, 'refused'), tried
    # the user manager saw none of it: the victim still runs, no escape unit, no poisoned environment
    assert worker.ssh('systemctl --user is-active hostile-victim.service').stdout.strip() == 'active'
    assert 'LD_PRELOAD' not in worker.ssh('systemctl --user show-environment').stdout
    assert worker.ssh('systemctl --user list-units --all --no-legend "hostile-escape*"').stdout.strip() == ''
    worker.ssh('systemctl --user stop hostile-victim.service')

    # the next run on the repository: its workspace holds json.py (fetched, checked out), and it completes
    normal_ws = run(52, ['/bin/true'])
    assert worker.ssh('test -f %s/json.py && echo present' % normal_ws).stdout.strip() == 'present'
    kinds = json.loads(worker.ssh("PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF"
                                  % (RUNNER_ROOT, MARKERS % {'ledger': LEDGER, 'number': 52})).stdout)
    assert kinds[0] == 'start' and len(kinds) >= 2 and kinds[-1] != 'start', kinds   # started and closed out
    # releasing the hostile workspace runs status there (fsmonitor, the clean filter): it holds work, so it is kept
    gone = worker.bed.ansible(worker.host, 'fleet.dispatch.workspace', {'clone': HOME + '/fleet/clones/hostile', 'number': 51,
                                                                        'state': 'absent'}, become_user=MASTER)[worker.host]
    assert gone.get('kept'), gone

    assert worker.ssh('ls -A %s/marks' % HOME).stdout.split() == []   # no json.py import, hook, filter, fsmonitor, ...
    assert worker.ssh(digests).stdout == before                        # the runner's files, byte for byte

    # the control: plain git as the master runs what was planted (so the empty marks above mean something)
    worker.ssh('git -C %s/fleet/clones/hostile worktree add -q --detach /tmp/plain-%s HEAD || true' % (HOME, MASTER))
    assert 'hook-post-checkout' in worker.ssh('ls -A %s/marks' % HOME).stdout.split()


def test_under_the_strict_profile_the_hostile_agent_reaches_nothing_and_a_normal_run_closes_out(worker):
    """The role's strict profile (this fixture: protect_system strict, protect_home read-only, private_tmp), as
    sandbox.json applies it: every door of the default profile stays shut, the home is read-only too (the hostile
    origin there takes no push), the clone and the workspace stay writable, and a normal run closes out."""
    _hostile_setup(worker, (55, 56))
    digests = 'sha256sum %s' % ' '.join(OWN_FILES.values())
    before = worker.ssh(digests).stdout
    worker.ssh('systemctl --user stop hostile-victim.service 2>/dev/null; '
               'systemd-run --user --unit=hostile-victim.service --collect sleep 600 >/dev/null')
    try:
        hostile_ws = _run_in_default_profile(worker, 55, ['/bin/sh', HOME + '/hostile_agent'], sandbox=None)
        tried = _tried(worker, hostile_ws)
        assert tried.pop('push') == 'refused', 'the origin is in the read-only home'
        assert {k: tried.pop(k) for k in ('plant_filter', 'plant_fsmonitor')} == dict.fromkeys(
            ('plant_filter', 'plant_fsmonitor'), 'ok'), 'the clone stays writable: the agent commits through it'
        assert {k: tried.pop(k) for k in SHARED_STATE} == dict.fromkeys(SHARED_STATE, 'ok'), tried
        worker.ssh('rm -f %s' % STATE_PLANT)
        assert tried == dict.fromkeys(REFUSED, 'refused'), tried
        assert worker.ssh('systemctl --user is-active hostile-victim.service').stdout.strip() == 'active'
        assert worker.ssh(digests).stdout == before
        assert worker.ssh('ls -A %s/marks' % HOME).stdout.split() == []
        normal_ws = _run_in_default_profile(worker, 56, ['/bin/true'], sandbox=None)
        assert worker.ssh('test -f %s/hostile.txt && echo leaked || echo own' % normal_ws).stdout.strip() == 'own'
        kinds = json.loads(worker.ssh("PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF"
                                      % (RUNNER_ROOT, MARKERS % {'ledger': LEDGER, 'number': 56})).stdout)
        assert kinds[0] == 'start' and len(kinds) >= 2 and kinds[-1] != 'start', kinds
    finally:
        worker.ssh('systemctl --user stop hostile-victim.service', check=False)


SET_AGENT_SANDBOX = r"""
import json, os, sys
path = os.path.expanduser('~%s/.config/fleet-dispatch/runner.json')
conf = json.load(open(path))
conf['agent_sandbox'] = sys.argv[1]
with open(path, 'w') as handle:
    json.dump(conf, handle)
""" % MASTER


def test_under_its_own_sandbox_the_hostile_agent_reaches_none_of_the_fleets_state(worker):
    """worker_runner_agent_sandbox: bwrap, in the default profile (the home writable): the fleet's state
    directory (the SQLite ledger, the runs' records) and its configuration are empty to the agent, a
    plant there reaches nothing on the host, every door of the other test stays shut, and a normal run
    under the same sandbox starts and closes out on the ledger the agent could not see."""
    assert worker.ssh('command -v bwrap').stdout.strip(), 'the ready image carries bubblewrap'
    _hostile_setup(worker, (53, 54))
    worker.bed.ssh(worker.host, "sudo python3 - bwrap <<'PYEOF'\n%s\nPYEOF" % SET_AGENT_SANDBOX)
    digests = 'sha256sum %s' % ' '.join(OWN_FILES.values())
    before = worker.ssh(digests).stdout
    try:
        hostile_ws = _run_in_default_profile(worker, 53, ['/bin/sh', HOME + '/hostile_agent'])
        tried = _tried(worker, hostile_ws)
        assert tried.pop('push') == 'ok', tried     # its workspace and clone stay its own
        tried.pop('plant_filter')
        tried.pop('plant_fsmonitor')
        # writes into the hidden directories land in the agent's throwaway mounts: on the host, nothing changed
        for name in ('state_plant', 'runner_json', 'sandbox_json', 'board_json'):
            tried.pop(name)
        assert worker.ssh('test -e %s && echo present || echo absent' % STATE_PLANT).stdout.strip() == 'absent'
        assert worker.ssh(digests).stdout == before
        throwaway = ('runner_json', 'sandbox_json', 'board_json')
        assert tried == dict.fromkeys(tuple(r for r in REFUSED if r not in throwaway) + ('ledger_read', 'config_read'),
                                      'refused'), tried
        # the ledger changed only by the runner's own markers, which the agent never touched
        kinds = json.loads(worker.ssh("PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF"
                                      % (RUNNER_ROOT, MARKERS % {'ledger': LEDGER, 'number': 53})).stdout)
        assert kinds[0] == 'start' and kinds[-1] != 'start', kinds
        _run_in_default_profile(worker, 54, ['/bin/true'])
        kinds = json.loads(worker.ssh("PYTHONPATH=%s python3 - <<'PYEOF'\n%s\nPYEOF"
                                      % (RUNNER_ROOT, MARKERS % {'ledger': LEDGER, 'number': 54})).stdout)
        assert kinds[0] == 'start' and len(kinds) >= 2 and kinds[-1] != 'start', kinds
    finally:
        worker.bed.ssh(worker.host, "sudo python3 - none <<'PYEOF'\n%s\nPYEOF" % SET_AGENT_SANDBOX)
