# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""testinfra checks of fleet.dispatch.worker on the real systemd hosts of the test bed.

The expectations (masters, uids, extra PATH entries, credentials, the failing hook) are read
from converge.yml beside this directory, so the scenario has one source of truth. testinfra
logs in as ``tester`` and runs every command through ``sudo`` (``ansible_become``); commands
as a master go through ``runuser`` with ``XDG_RUNTIME_DIR`` set by hand, because no
pam_systemd session runs there (test-bed README, pitfall 4).

No secret ever appears on a command line here: sudo logs every command line to the journal,
and the journal is one of the logs the credentials must stay out of.
"""
from __future__ import annotations

import os
import pathlib
import shlex
import time
import uuid

import pytest
import yaml

SCENARIO = pathlib.Path(__file__).resolve().parent.parent
CONVERGE = yaml.safe_load((SCENARIO / 'converge.yml').read_text())[0]
_ROLE_VARS = CONVERGE['tasks'][0]['vars']
MASTERS = _ROLE_VARS['_converge_masters']          # {inventory_hostname: [master, ...]}
COMMON_CREDENTIALS = CONVERGE['vars']['worker_credentials']

STATE = '.local/state/fleet-dispatch'
CONFIG = '.config/fleet-dispatch'
NOTIFIER = '/usr/local/libexec/fleet-dispatch/fleet-notify'
BASE_PATH = ['/usr/local/bin', '/usr/bin', '/bin']   # the role's worker_path_base default
# How long a test waits for systemd to run the OnFailure= notifier. Reading on the test bed:
# the notifier line was in failures.log 12 ms after the failed run's exit; 20 s only bounds a
# notifier that never runs (then the test fails and prints the journal).
NOTIFY_WAIT_S = 20


def _name(host):
    return host.ansible.get_variables()['inventory_hostname']


def _masters(host):
    return MASTERS[_name(host)]


def _as(host, user, cmd):
    """Run ``cmd`` (a shell string) as ``user`` with the user manager's runtime dir."""
    uid = host.user(user).uid
    return host.run('runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/%d sh -c %s'
                    % (user, uid, shlex.quote('cd "$HOME" && ' + cmd)))


def _run_unit(host, user, script, props='', caller_env=''):
    """Run ``script`` (sh) inside a transient user unit and return (rc, output).

    ``systemd-run --wait/--pipe`` need the user D-Bus, which the worker does not have (no
    dbus-user-session; systemctl talks to the manager's private socket), so the unit writes
    its output and exit code to files under the master's state dir, polled here.
    """
    unit = 'fleet-test-%s' % uuid.uuid4().hex[:10]
    base = '%s/%s' % (STATE, unit)
    wrapped = '(%s) > "$HOME/%s.out" 2>&1; echo $? > "$HOME/%s.rc.tmp"; mv "$HOME/%s.rc.tmp" "$HOME/%s.rc"' % (
        script, base, base, base, base)
    launch = _as(host, user, '%s systemd-run --user --quiet --collect --unit=%s %s -- /bin/sh -c %s'
                 % (caller_env, unit, props, shlex.quote(wrapped)))
    assert launch.rc == 0, launch.stderr + _journal(host, user)
    deadline = time.monotonic() + NOTIFY_WAIT_S
    while True:
        rc = _as(host, user, 'cat %s.rc 2>/dev/null' % base).stdout.strip()
        if rc or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    out = _as(host, user, 'cat %s.out 2>/dev/null; rm -f %s.out %s.rc' % (base, base, base)).stdout
    assert rc, 'unit %s never finished%s' % (unit, _journal(host, user, unit + '.service'))
    return int(rc), out


def _journal(host, user, unit=None, lines=60):
    """The journal of a master (and of one user unit), for failure messages."""
    uid = host.user(user).uid
    if unit:
        sel = 'USER_UNIT=%s + _SYSTEMD_USER_UNIT=%s' % (unit, unit)
    else:
        sel = '_UID=%d + USER_UNIT=user@%d.service' % (uid, uid)
    out = host.run('journalctl --no-pager -o short-precise -n %d %s' % (lines, sel))
    return '\n--- journalctl %s ---\n%s%s' % (sel, out.stdout, out.stderr)


def _expected_path(host, master):
    home = host.user(master['name']).home
    entries = ['%s/.local/bin' % home]
    for entry in master.get('path', []) + BASE_PATH:
        full = entry if entry.startswith('/') else '%s/%s' % (home, entry)
        if full not in entries:
            entries.append(full)
    return ':'.join(entries)


def _expected_credentials(master):
    creds = dict(COMMON_CREDENTIALS)
    creds.update(master.get('credentials', {}))
    return {k: '' if v is None else str(v) for k, v in creds.items()}


def _secrets():
    """Every non-empty credential value of the scenario, plus a distinctive fragment of each."""
    values = set()
    for creds in [COMMON_CREDENTIALS] + [m.get('credentials', {}) for ms in MASTERS.values() for m in ms]:
        for value in creds.values():
            if value:
                values.add(str(value))
                values.add(str(value).split()[0])
    return sorted(values)


@pytest.fixture(params=[0, 1], ids=['first', 'second'])
def master(host, request):
    """Each master of the host this test runs on (a host with fewer masters skips the rest)."""
    masters = _masters(host)
    if request.param >= len(masters):
        pytest.skip('%s has %d master(s)' % (_name(host), len(masters)))
    return masters[request.param]


# --- users, linger, user manager ---------------------------------------------------------

def test_scenario_has_two_masters_on_one_host_and_one_on_the_other():
    assert sorted(len(ms) for ms in MASTERS.values()) == [1, 2]


def test_master_user_exists(host, master):
    user = host.user(master['name'])
    assert user.exists
    assert user.shell == '/bin/bash'
    if 'uid' in master:
        assert user.uid == master['uid']
    assert host.file(user.home).user == master['name']


def test_linger_enabled_and_user_manager_active(host, master):
    name = master['name']
    uid = host.user(name).uid
    assert host.file('/var/lib/systemd/linger/%s' % name).exists
    state = host.run('systemctl is-active user@%d.service' % uid).stdout.strip()
    assert state == 'active', 'user@%d.service is %r%s' % (uid, state, _journal(host, name))
    answer = _as(host, name, 'systemctl --user is-system-running').stdout.strip()
    assert answer in ('running', 'degraded'), 'systemctl --user answered %r%s' % (answer, _journal(host, name))


# --- PATH (D3 🔴) -------------------------------------------------------------------------

def test_environment_d_and_recorded_path(host, master):
    name = master['name']
    home = host.user(name).home
    want = _expected_path(host, master)
    conf = host.file('%s/.config/environment.d/50-fleet-path.conf' % home)
    assert conf.exists and conf.user == name
    assert 'PATH=%s' % want in conf.content_string.splitlines()
    assert conf.content_string.startswith('#'), 'templated files start with the ansible_managed comment'
    recorded = host.file('%s/%s/path' % (home, CONFIG))
    assert recorded.content_string == want + '\n'
    # the manager itself picked environment.d up (daemon-reload re-runs the generators)
    env = _as(host, name, 'systemctl --user show-environment').stdout.splitlines()
    assert 'PATH=%s' % want in env, 'user manager environment: %r%s' % (env, _journal(host, name))


def test_run_does_not_inherit_the_callers_path(host, master):
    """The seed's day-one bug: the caller's PATH never reaches a systemd-run --user unit."""
    rc, out = _run_unit(host, master['name'], 'printenv PATH', caller_env='PATH=/caller-only:$PATH')
    assert rc == 0, out
    assert '/caller-only' not in out


def test_run_with_recorded_path_finds_tools_in_local_bin(host, master):
    """jq: command not found, exit 127: a tool in ~/.local/bin, called by the run's own
    script, must resolve when the run gets the recorded PATH with --setenv=PATH (as the launch
    passes it) — and the manager's environment.d PATH finds it as well."""
    name = master['name']
    tool = 'fleet-d3-probe-%s' % uuid.uuid4().hex[:8]
    setup = _as(host, name, 'printf "#!/bin/sh\\necho d3-ok\\n" > .local/bin/%s && chmod 0755 .local/bin/%s' % (tool, tool))
    assert setup.rc == 0, setup.stderr
    try:
        explicit = _run_unit(host, name, tool, props='--setenv=PATH="$(cat %s/path)"' % CONFIG)
        assert explicit == (0, 'd3-ok\n'), explicit
        inherited = _run_unit(host, name, tool)
        assert inherited == (0, 'd3-ok\n'), inherited
        # the control: without ~/.local/bin on PATH the same call is the seed's exit 127
        bare = _run_unit(host, name, tool, props='--setenv=PATH=/usr/bin:/bin')
        assert bare[0] == 127, bare
    finally:
        _as(host, name, 'rm -f .local/bin/%s' % tool)


# --- directories and credentials ----------------------------------------------------------

@pytest.mark.parametrize('sub,mode', [
    (STATE, 0o750),
    ('fleet/workspaces', 0o750),
    ('fleet/clones', 0o750),
    (CONFIG, 0o700),
    ('.config/systemd/user', None),
])
def test_directories(host, master, sub, mode):
    name = master['name']
    d = host.file('%s/%s' % (host.user(name).home, sub))
    assert d.is_directory
    assert d.user == name and d.group == name
    if mode is not None:
        assert d.mode == mode


def test_each_master_has_its_clone_from_the_origin(host, master):
    """worker_clones: ~/fleet/clones/<name>, the master's own, on the origin's main."""
    name = master['name']
    for clone in CONVERGE['vars']['worker_clones']:
        path = '%s/fleet/clones/%s' % (host.user(name).home, clone['name'])
        assert host.file(path + '/.git').is_directory and host.file(path).user == name
        here = _as(host, name, 'git -C %s rev-parse HEAD && git -C %s remote get-url origin' % (path, path))
        origin = host.run('git -C %s rev-parse main' % clone['repo'])
        assert here.rc == 0 and origin.rc == 0, here.stderr + origin.stderr
        head, url = here.stdout.split()
        # ansible.builtin.git records a local path as a file:// URL
        assert head == origin.stdout.strip() and url in (clone['repo'], 'file://' + clone['repo'])


def test_each_master_trusts_exactly_its_local_origin_and_can_fetch_from_it(host, master):
    """A local-path origin is owned by root: each master trusts that one path in its own ~/.gitconfig
    (not '*', not system-wide), so the clone and every run's fetch pass git's ownership check."""
    name = master['name']
    trusted = _as(host, name, 'git config --global --get-all safe.directory')
    assert trusted.rc == 0, trusted.stderr
    assert trusted.stdout.split() == sorted(set(c['repo'] for c in CONVERGE['vars']['worker_clones']))
    system = host.run('git config --system --get-all safe.directory')
    assert system.rc == 1 and system.stdout == '', 'nothing system-wide'
    for clone in CONVERGE['vars']['worker_clones']:
        path = '%s/fleet/clones/%s' % (host.user(name).home, clone['name'])
        fetched = _as(host, name, 'git -C %s fetch -q origin' % path)
        assert fetched.rc == 0, fetched.stderr


def test_credentials_file_is_0600_and_owned_by_the_master(host, master):
    name = master['name']
    f = host.file('%s/%s/credentials.env' % (host.user(name).home, CONFIG))
    assert f.is_file
    assert f.user == name and f.group == name
    assert f.mode == 0o600


@pytest.mark.parametrize('reader', ['systemd', 'sh'])
def test_credentials_reach_a_run_intact(host, master, reader):
    """EnvironmentFile= (how the launch passes them) and POSIX sh read the same values,
    quotes, $, backslash and backticks included; a master's own credentials are its alone."""
    name = master['name']
    envfile = '%s/%s/credentials.env' % (host.user(name).home, CONFIG)
    if reader == 'systemd':
        rc, out = _run_unit(host, name, 'printenv -0', props='-p EnvironmentFile=%s' % envfile)
    else:
        res = _as(host, name, 'env -i sh -c \'set -a; . "$0"; printenv -0\' %s' % envfile)
        rc, out = res.rc, res.stdout
    assert rc == 0, 'printenv failed (%d)%s' % (rc, _journal(host, name))
    got = dict(item.split('=', 1) for item in out.split('\0') if '=' in item)
    want = _expected_credentials(master)
    for key, value in want.items():
        assert key in got, '%s missing for %s' % (key, name)
        assert got[key] == value, '%s differs for %s (values not printed)' % (key, name)
    others = {k for m in _masters(host) if m['name'] != name for k in m.get('credentials', {})}
    assert not (others - set(want)) & set(got), 'another master\'s credential leaked into %s' % name


def test_credentials_appear_in_no_log():
    """Neither the controller's Ansible log of every molecule step (run with --diff) ..."""
    log = os.environ.get('FLEET_WORKER_ANSIBLE_LOG', '')
    assert log and os.path.isfile(log), 'no Ansible log at %r (molecule.yml sets ANSIBLE_LOG_PATH)' % log
    text = pathlib.Path(log).read_text(errors='replace')
    assert 'Write the directories and files (PATH, sandbox, credentials, notifier) of' in text, \
        'the log does not cover the converge: the check would prove nothing'
    for secret in _secrets():
        assert secret not in text, 'a credential value is in %s' % log


def test_credentials_appear_in_no_journal(host):
    """... nor the worker's journal (modules log their arguments there unless no_log)."""
    out = host.run('journalctl --no-pager -o cat')
    assert out.rc == 0 and 'Invoked with' in out.stdout, 'journal unreadable or without module logs: nothing proven'
    for secret in _secrets():
        assert secret not in out.stdout, 'a credential value is in the journal of %s' % _name(host)


# --- the OnFailure= notifier (D3 property 4) -----------------------------------------------

def test_notifier_unit_installed_and_verify_clean(host, master):
    name = master['name']
    path = '%s/.config/systemd/user/fleet-notify@.service' % host.user(name).home
    unit = host.file(path)
    assert unit.is_file and unit.user == name
    text = unit.content_string
    assert text.startswith('#')
    assert 'ExecStart=-"%s" "%%i"' % NOTIFIER in text
    settings = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith('#')]
    assert not [s for s in settings if s.startswith('OnFailure')], 'the notifier must have no OnFailure= of its own'
    out = _as(host, name, 'systemd-analyze --user verify %s' % path)
    assert out.rc == 0 and not out.stdout.strip() and not out.stderr.strip(), (out.rc, out.stdout, out.stderr)
    shown = _as(host, name, 'systemctl --user show -p ExecStart fleet-notify@probe.service').stdout
    assert 'ignore_errors=yes' in shown, shown


def test_notifier_script_exits_0_even_when_everything_fails(host):
    """Unwritable state dir, no hook config, no MONITOR_*: every step fails, the exit is 0."""
    name = _masters(host)[0]['name']
    out = _as(host, name, 'env -i HOME=/nonexistent/fleet %s task-direct-%s' % (NOTIFIER, uuid.uuid4().hex[:6]))
    assert out.rc == 0, (out.rc, out.stdout, out.stderr)
    assert 'could not record the failure' in out.stderr


def test_notifier_script_exits_0_when_the_hook_fails(host):
    masters = [m for m in _masters(host) if m.get('notifier_hook')]
    if not masters:
        pytest.skip('no master with a hook on %s' % _name(host))
    name = masters[0]['name']
    unit = 'task-direct-%s' % uuid.uuid4().hex[:6]
    out = _as(host, name, 'MONITOR_UNIT=%s.service MONITOR_SERVICE_RESULT=exit-code %s %s' % (unit, NOTIFIER, unit))
    assert out.rc == 0, (out.rc, out.stdout, out.stderr)
    assert 'failed with exit 7 (swallowed)' in out.stderr, out.stderr


def _wait_for_line(host, name, path, needle):
    deadline = time.monotonic() + NOTIFY_WAIT_S
    while True:
        content = _as(host, name, 'cat %s 2>/dev/null' % path).stdout
        if needle in content or time.monotonic() > deadline:
            return content
        time.sleep(0.2)


def test_failing_run_triggers_the_notifier_which_succeeds_without_recursion(host, master):
    name = master['name']
    item = 'task-%d' % (90000 + uuid.uuid4().int % 9999)
    notifier = 'fleet-notify@%s.service' % item
    launch = _as(host, name, 'systemd-run --user --quiet --collect --unit=%s -p OnFailure=%s -- /bin/sh -c "exit 22"'
                 % (item, notifier))
    assert launch.rc == 0, launch.stderr
    # 22: the runner's closeout_lost, named from its exit-code table (fleet.dispatch.runner_exit_names)
    needle = 'unit=%s.service result=exit-code exit_code=exited exit_status=22 runner_exit=closeout_lost' % item
    log = _wait_for_line(host, name, '%s/failures.log' % STATE, needle)
    assert needle in log, 'no failure record for %s in failures.log:\n%s%s' % (item, log, _journal(host, name, notifier))
    # the notifier's own record reached the journal too
    # (selected by identifier and uid: journald may miss the unit fields of a process that
    # exited before it looked up the cgroup, so the record carries the unit name itself)
    uid = host.user(name).uid
    journal_cmd = 'journalctl --no-pager -o cat SYSLOG_IDENTIFIER=fleet-notify _UID=%d' % uid
    journal = host.run(journal_cmd).stdout
    assert needle in journal, _journal(host, name, notifier)
    # it finished successfully and started nothing else: no notifier of a notifier
    deadline = time.monotonic() + NOTIFY_WAIT_S
    manager = ''
    while time.monotonic() < deadline:
        manager = host.run('journalctl --no-pager -o cat USER_UNIT=%s' % notifier).stdout
        if 'Finished' in manager or 'Failed' in manager:
            break
        time.sleep(0.2)
    assert 'Finished %s' % notifier in manager and 'Failed with result' not in manager, _journal(host, name, notifier)
    assert 'fleet-notify@fleet-notify' not in _as(host, name, 'cat %s/failures.log' % STATE).stdout
    failed = _as(host, name, 'systemctl --user list-units --all --failed --plain --no-legend "fleet-notify@*"').stdout
    assert not failed.strip(), failed
    assert log.count('unit=%s.service ' % item) == 1, log
    if master.get('notifier_hook'):
        # the hook ran (and failed with 7): logged on stderr, swallowed
        hook_log = _wait_for_line(host, name, '%s/hook.log' % STATE, 'hook ran for %s.service' % item)
        assert 'hook ran for %s.service' % item in hook_log
        assert 'for %s.service failed with exit 7 (swallowed)' % item in host.run(journal_cmd).stdout, \
            _journal(host, name, notifier)
    else:
        assert not host.file('%s/%s/notify-hook' % (host.user(name).home, CONFIG)).exists


# --- the runner, copied from the controller's collection (worker_runner_source '') --------

RUNNER_CODE = '/usr/local/lib/fleet-dispatch/runner'   # the role's worker_runner_code_dir default


def _collection_version():
    import re
    galaxy = SCENARIO.parents[3] / 'galaxy.yml'
    return re.search(r'^version:\s*(\S+)', galaxy.read_text(), re.M).group(1)


def test_the_runner_is_the_controllers_collection_root_owned_and_on_the_run_path(host, master):
    code = host.file(RUNNER_CODE + '/ansible_collections/fleet/dispatch/plugins/module_utils/_runner/run.py')
    assert code.exists and code.user == 'root' and code.mode == 0o644
    assert not host.file(RUNNER_CODE + '/ansible_collections/fleet/dispatch/plugins/module_utils/_core/__pycache__').exists
    out = _as(host, master['name'], '.local/bin/fleet-runner --version')
    assert out.rc == 0, out.stderr
    import json
    assert json.loads(out.stdout)['version'] == _collection_version()
    # a master cannot rewrite the runner its runs execute
    denied = _as(host, master['name'], 'touch %s/ansible_collections/fleet/dispatch/x' % RUNNER_CODE)
    assert denied.rc != 0


def test_check_board_refuses_a_board_the_master_cannot_open_and_names_the_fix(host, master):
    import json
    out = _as(host, master['name'], '.local/bin/fleet-runner check-board --credentials %s/credentials.env' % CONFIG)
    assert out.rc == 1, out.stdout + out.stderr
    answer = json.loads(out.stdout)
    assert answer['ok'] is False and 'FLEET_BOARD_DSN' in answer['fix'], answer


def test_check_board_opens_a_ledger_the_master_can_open(host, master):
    import json
    name = master['name']
    make = ('PYTHONPATH=%s python3 -c "from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger '
            'import LedgerBoard as B; b = B(path=\'ledger-check.sqlite3\', create=True); '
            'b.upsert_item(number=7, title=\'seven\', status=\'Ready\'); b.close()" && '
            'printf \'{"kind": "ledger", "path": "~/ledger-check.sqlite3"}\' > board-check.json' % RUNNER_CODE)
    assert _as(host, name, make).rc == 0
    out = _as(host, name, '.local/bin/fleet-runner check-board --board-spec board-check.json; rm -f ledger-check.sqlite3* board-check.json')
    answer = json.loads(out.stdout)
    assert out.rc == 0 and answer['ok'] is True and answer['items'] == 1, out.stdout + out.stderr
