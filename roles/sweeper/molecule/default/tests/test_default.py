# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""testinfra checks of fleet.dispatch.sweeper on a real systemd host of the test bed.

The host was bare; the role made it a controller (a venv with ansible-core and psycopg, the
collection, the sweeper's SSH key), and converge.yml made it its own worker too (master fleet1,
reached over SSH as tester with the sweeper's key). The sweep REALLY runs here: the timer's own
cycle runs the collection's ``fleet.dispatch.sweep`` in apply mode as the sweeper user against the
demo ledger board converge.yml built and launches runs on fleet1 (a stand-in run command); then
``systemctl start fleet-sweeper.service`` cycles, and the verifier reads the plan each wrote and the
heartbeat its ``ExecStopPost=`` wrote, for a successful cycle and for a failing one (D14).

The page and the metrics that cycle wrote are copied back and checked here, on the test machine:
the page in a headless Chromium (Debian's ``chromium``; DOM assertions and a screenshot), the
metrics by ``promtool check metrics`` (Debian's ``prometheus``); without them those two skip,
unless ``FLEET_REQUIRE_BROWSER=1``.

The expectations are read from converge.yml beside this directory. testinfra logs in as
``tester`` and runs every command through ``sudo``. No secret ever appears on a command line
here: sudo logs every command line to the journal, one of the logs the secrets must stay out of.
"""
from __future__ import annotations

import calendar
import hashlib
import html.parser
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import time

import pytest
import yaml

SCENARIO = pathlib.Path(__file__).resolve().parent.parent
CONVERGE = yaml.safe_load((SCENARIO / 'converge.yml').read_text())[0]
VARS = CONVERGE['vars']
CREDENTIALS = VARS['sweeper_credentials']
BOARD = VARS['_converge_board']

USER = 'fleet-sweeper'                                  # the role's defaults
HOME = '/var/lib/fleet-sweeper'
STATE = HOME + '/.local/state/fleet-dispatch'
ENV_FILE = HOME + '/.config/fleet-dispatch/sweeper.env'
HEARTBEAT = STATE + '/heartbeat.json'
PLAN = STATE + '/*/plan.json'     # one subdirectory per board (its id: dispatch_board_id)
CYCLE = STATE + '/*/last_cycle.json'
PAGE = STATE + '/*/status.html'   # beside it, every cycle: the status page and the metrics
METRICS = STATE + '/*/fleet-dispatch.prom'
INVENTORY = HOME + '/inventory'
SCRIPT = '/usr/local/libexec/fleet-dispatch/fleet-sweeper-heartbeat'
SERVICE = 'fleet-sweeper.service'
TIMER = 'fleet-sweeper.timer'
# How long a test waits for a cycle the timer started on its own to end before starting one.
# Reading on the test bed: a plan cycle of the demo board took 4.8-6.0 s (journal, start to
# heartbeat); 120 s only bounds a hang.
CYCLE_WAIT_S = 120
# How long the first test waits for the timer's first cycle that launches: the timer fired when the
# role started it (before the inventory existed: that cycle failed), and fires again
# sweeper_interval (2min) after that cycle ended; the bound is that interval plus two cycles.
TIMER_WAIT_S = 420
MODE = VARS.get('sweeper_mode', 'apply')
VENV = '/opt/fleet-ansible'                             # the role's defaults (sweeper_install)
COLLECTIONS = '/opt/fleet-collections'
KEY = HOME + '/.ssh/id_ed25519'
MASTER = VARS['worker_masters'][0]['name']
WORKER_USER = VARS['_converge_worker_user']


def _secrets():
    """Every non-empty credential value of the scenario, plus a distinctive fragment of each."""
    values = set()
    for value in CREDENTIALS.values():
        if value:
            values.add(str(value))
            values.add(str(value).split()[0])
    values.add('sentinel-a41f-pw')
    return sorted(values)


def _journal(host, unit=SERVICE, lines=80):
    out = host.run('journalctl --no-pager -o short-precise -n %d -u %s' % (lines, unit))
    return '\n--- journalctl -u %s ---\n%s%s' % (unit, out.stdout, out.stderr)


def _wait_idle(host):
    """Wait until no cycle runs (the timer may have started one), so a start is our own cycle."""
    deadline = time.monotonic() + CYCLE_WAIT_S
    while time.monotonic() < deadline:
        state = host.run('systemctl show -p ActiveState --value %s' % SERVICE).stdout.strip()
        if state not in ('activating', 'deactivating'):
            return
        time.sleep(0.5)
    raise AssertionError('a sweeper cycle never ended' + _journal(host))


def _cycle(host):
    """Start one cycle (oneshot: systemctl waits for it) and return (rc, heartbeat, seconds)."""
    _wait_idle(host)
    before = time.time()
    started = time.monotonic()
    out = host.run('systemctl start %s' % SERVICE)
    took = time.monotonic() - started
    beat = json.loads(host.file(HEARTBEAT).content_string)
    # the heartbeat is this cycle's: written after the start, by this invocation
    invocation = host.run('systemctl show -p InvocationID --value %s' % SERVICE).stdout.strip()
    if invocation:
        assert beat['invocation_id'] == invocation, (beat, invocation)
    stamp = calendar.timegm(time.strptime(beat['time'], '%Y-%m-%dT%H:%M:%SZ'))
    assert stamp >= int(before) - 2, ('heartbeat older than this cycle', beat, before)
    return out.rc, beat, took


# --- the units -----------------------------------------------------------------------------

def test_user_and_directories(host):
    user = host.user(USER)
    assert user.exists and user.home == HOME
    for path in (HOME, STATE):
        assert host.file(path).is_directory and host.file(path).user == USER


def test_units_installed_and_verify_clean(host):
    for unit in (SERVICE, TIMER):
        text = host.file('/etc/systemd/system/%s' % unit).content_string
        assert text.startswith('#') and 'Ansible' in text.splitlines()[0] + text.splitlines()[1], text[:200]
    out = host.run('systemd-analyze verify /etc/systemd/system/%s /etc/systemd/system/%s' % (SERVICE, TIMER))
    assert out.rc == 0, (out.stdout, out.stderr)
    service = host.file('/etc/systemd/system/%s' % SERVICE).content_string
    assert 'Type=oneshot' in service and 'User=%s' % USER in service
    assert 'WorkingDirectory=%s' % STATE in service
    assert 'EnvironmentFile=-%s' % ENV_FILE in service
    assert 'ExecStopPost=-"%s" "%s"' % (SCRIPT, HEARTBEAT) in service
    # argv-safe: every argument quoted; flock -n first; the explicit PATH names the venv (D3)
    assert 'ExecStart="/usr/bin/flock" "-n" "-E" "75" ' in service
    assert '"ansible-playbook" "-i" "%s" "fleet.dispatch.sweep" "-e" "dispatch_mode=%s"' % (INVENTORY, MODE) in service
    assert 'Environment="PATH=/opt/fleet-ansible/bin:/usr/local/bin:/usr/bin:/bin"' in service
    assert 'Environment="ANSIBLE_COLLECTIONS_PATH=/opt/fleet-collections"' in service
    shown = host.run('systemctl show -p ExecStart -p ExecStopPost %s' % SERVICE).stdout
    assert 'argv[]=/usr/bin/flock -n -E 75' in shown and 'ignore_errors=yes' in shown, shown


def test_timer_enabled_active_with_a_next_elapse(host):
    assert host.run('systemctl is-enabled %s' % TIMER).stdout.strip() == 'enabled'
    assert host.run('systemctl is-active %s' % TIMER).stdout.strip() == 'active'
    _wait_idle(host)     # while a cycle runs, OnUnitInactiveSec= has no next elapse yet
    shown = host.run('systemctl show -p NextElapseUSecMonotonic -p TimersMonotonic %s' % TIMER).stdout
    assert 'OnUnitInactiveUSec' in shown and 'OnBootUSec' in shown, shown
    nxt = host.run('systemctl show -p NextElapseUSecMonotonic --value %s' % TIMER).stdout.strip()
    assert nxt and nxt not in ('0', 'infinity'), shown
    listed = host.run('systemctl list-timers --all --no-legend %s' % TIMER).stdout
    assert TIMER in listed and SERVICE in listed, listed


def test_the_timer_itself_started_a_cycle(host):
    """Not only our `systemctl start`s below: the timer fired (OnBootSec=1s had long passed)."""
    last = host.run('systemctl show -p LastTriggerUSec --value %s' % TIMER).stdout.strip()
    assert last and last not in ('n/a', '0'), last
    beats = host.run('journalctl --no-pager -o cat -t fleet-sweeper-heartbeat').stdout
    assert 'fleet-sweeper-heartbeat: ' in beats, 'the timer fired but no cycle wrote a heartbeat' + _journal(host)


def _master_units(host):
    uid = host.user(MASTER).uid
    out = host.run('runuser -u %s -- env XDG_RUNTIME_DIR=/run/user/%d systemctl --user list-units --all --no-legend --plain '
                   "'task-*'" % (MASTER, uid))
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def test_the_timer_launched_a_run_on_the_worker(host):
    """The whole recipe at once, before any cycle of ours: the timer's cycle ran the venv's
    ansible-playbook with the installed collection, reached the worker over SSH with the sweeper's
    key and known_hosts, and launched the demo board's first candidate as task-1 on the master."""
    deadline = time.monotonic() + TIMER_WAIT_S
    while time.monotonic() < deadline:
        if 'task-1.service' in _master_units(host):
            break
        time.sleep(2)
    units = _master_units(host)
    assert 'task-1.service' in units, ('no run on %s: %r' % (MASTER, units)) + _journal(host, lines=200)
    # the unit appears while the cycle still runs (confirm, record): its output is complete once it ended
    _wait_idle(host)
    # every cycle so far was the timer's (this is the first test to start none): one said what it launched
    said = host.run('journalctl --no-pager -o cat -u %s' % SERVICE).stdout
    assert re.search(r'launched: [^"\n]*task-1\b', said), 'the sweep never said it launched task-1' + _journal(host, lines=200)
    # the run is the stand-in command converge.yml's inventory names, running as the master
    pids = host.run('pgrep -u %s -f %s' % (MASTER, shlex.quote(' '.join(VARS['_converge_run_command'])))).stdout.split()
    assert pids, 'the launched unit runs no stand-in command on %s' % MASTER


# --- the controller the role installed -------------------------------------------------------

def test_the_venvs_ansible_playbook_runs_with_psycopg(host):
    out = host.run('runuser -u %s -- env HOME=%s %s/bin/ansible-playbook --version' % (USER, HOME, VENV))
    assert out.rc == 0 and 'core %s' % VARS.get('sweeper_ansible_core', 'ansible-core==2.19.14').split('==')[1] in out.stdout, (
        out.stdout, out.stderr)
    out = host.run('runuser -u %s -- %s/bin/python -c "import psycopg; print(psycopg.__version__)"' % (USER, VENV))
    assert out.rc == 0 and out.stdout.strip() == '3.3.9', (out.stdout, out.stderr)
    venv = host.file(VENV + '/bin/ansible-playbook')
    assert venv.user == 'root' and not venv.mode & 0o022


def test_the_collection_is_where_the_unit_looks(host):
    manifest = host.file(COLLECTIONS + '/ansible_collections/fleet/dispatch/MANIFEST.json')
    assert manifest.is_file and manifest.user == 'root', 'not installed in %s' % COLLECTIONS
    assert json.loads(manifest.content_string)['collection_info']['name'] == 'dispatch'
    # what the unit's cycle sees: its ANSIBLE_COLLECTIONS_PATH, as the sweeper user (reads, cannot write)
    out = host.run('runuser -u %s -- env HOME=%s ANSIBLE_COLLECTIONS_PATH=%s %s/bin/ansible-galaxy collection list fleet.dispatch'
                   % (USER, HOME, COLLECTIONS, VENV))
    assert out.rc == 0 and COLLECTIONS + '/ansible_collections' in out.stdout and 'fleet.dispatch' in out.stdout, (
        out.stdout, out.stderr)
    assert host.run('runuser -u %s -- test -w %s/ansible_collections/fleet/dispatch' % (USER, COLLECTIONS)).rc != 0
    service = host.file('/etc/systemd/system/%s' % SERVICE).content_string
    assert 'Environment="ANSIBLE_COLLECTIONS_PATH=%s"' % COLLECTIONS in service
    assert 'Environment="PATH=%s/bin:' % VENV in service


def test_the_sweepers_ssh_key_and_the_workers_host_key(host):
    key = host.file(KEY)
    assert key.is_file and key.user == USER and key.mode == 0o600, (key.user, oct(key.mode))
    assert host.file(HOME + '/.ssh').mode == 0o700
    public = host.file(KEY + '.pub').content_string.strip()
    assert public.startswith('ssh-ed25519 '), public
    # the role's fact went into the worker's authorized_keys (converge.yml), and the host key is known
    authorized = host.file('/home/%s/.ssh/authorized_keys' % WORKER_USER).content_string
    assert public in authorized.splitlines()
    known = host.file(HOME + '/.ssh/known_hosts').content_string
    # the role's block holds the keyscan line; ssh may add the worker's other keys outside it
    block = known.split('# BEGIN fleet.dispatch sweeper_ssh_known_hosts\n', 1)[1]
    assert block.startswith('127.0.0.1 ssh-ed25519 ') and '# END fleet.dispatch' in block, known
    # and it opens an SSH session on the worker as the sweeper user, with host key checking on
    out = host.run('runuser -u %s -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes %s@127.0.0.1 true'
                   % (USER, WORKER_USER))
    assert out.rc == 0, out.stderr


def test_every_argument_reaches_ansible_playbook_as_written(host):
    """argv-safe: the running ansible-playbook's own argv (/proc/PID/cmdline) ends with
    sweeper_extra_args exactly - no %-specifier, $-expansion, unquoting or word splitting."""
    _wait_idle(host)
    assert host.run('systemctl start --no-block %s' % SERVICE).rc == 0
    argv = None
    deadline = time.monotonic() + CYCLE_WAIT_S
    while argv is None and time.monotonic() < deadline:
        pids = host.run('pgrep -u %s -f fleet.dispatch.sweep' % USER).stdout.split()
        for pid in pids:
            raw = host.run("tr '\\0' '\\n' < /proc/%s/cmdline" % pid).stdout.split('\n')
            if VENV + '/bin/ansible-playbook' in raw[:2]:
                argv = raw
        time.sleep(0.1)
    _wait_idle(host)
    assert argv, 'never saw the cycle\'s ansible-playbook' + _journal(host)
    extra = VARS['sweeper_extra_args']
    assert [a for a in argv if a][-len(extra):] == extra, argv
    assert argv[argv.index('-i') + 1:argv.index('-i') + 4] == [INVENTORY, 'fleet.dispatch.sweep', '-e'], argv


# --- the secrets ---------------------------------------------------------------------------

def test_environment_file_0600_owned_by_the_sweeper(host):
    env = host.file(ENV_FILE)
    assert env.is_file and env.user == USER and env.mode == 0o600
    assert host.file(os.path.dirname(ENV_FILE)).mode == 0o700


def test_secrets_reach_the_cycle_intact(host):
    """A unit with the service's user and EnvironmentFile= prints a digest of each value."""
    for name, value in CREDENTIALS.items():
        out = host.run('systemd-run --quiet --wait --pipe --collect -p User=%s -p EnvironmentFile=%s '
                       '/bin/sh -c %s' % (USER, ENV_FILE, shlex.quote('printf %%s "$%s" | sha256sum' % name)))
        assert out.rc == 0, out.stderr
        assert out.stdout.split()[0] == hashlib.sha256(str(value).encode()).hexdigest(), name


def test_secrets_not_in_the_unit(host):
    for cmd in ('systemctl show %s' % SERVICE, 'systemctl cat %s %s' % (SERVICE, TIMER),
                'systemctl show %s' % TIMER):
        out = host.run(cmd)
        assert out.rc == 0 and out.stdout
        for secret in _secrets():
            assert secret not in out.stdout, 'a credential value is in `%s`' % cmd


# --- a real cycle, from the timer's service ----------------------------------------------------

def test_a_cycle_runs_the_sweep_and_writes_the_plan(host):
    host.run('rm -f %s %s' % (PLAN, CYCLE))
    rc, beat, took = _cycle(host)
    print('successful cycle: %.1f s' % took)
    assert rc == 0, _journal(host)
    assert beat['result'] == 'success' and beat['exit_code'] == 'exited' and beat['exit_status'] == '0', beat
    found = host.run('ls %s' % PLAN).stdout.split()
    assert len(found) == 1, 'one board, one plan: %r' % found + _journal(host)
    plan_file = host.file(found[0])
    assert plan_file.is_file and plan_file.user == USER, 'the sweep wrote no plan' + _journal(host)
    plan = json.loads(plan_file.content_string)
    assert plan['mode'] == MODE and plan['board'] == BOARD['path'], plan
    record = json.loads(host.file(host.run('ls %s' % CYCLE).stdout.split()[0]).content_string)
    assert record['result'] == 'ok' and record['readable'] is True and record['mode'] == MODE, record
    # a sweep's plan names the board table it wrote (every item once) instead of embedding the items
    table = host.file(plan['table'])
    assert table.is_file and table.user == USER and table.mode == 0o600, plan['table']
    eligible = sorted(i['number'] for i in json.loads(table.content_string)['items'] if i['eligible'])
    # the demo board's candidates: the importer (#1), the closed blocker's dependant (#5), the
    # reopened item (#10), the capacity deaths (#12) and the finished-left-open item (#13); the
    # stand-in runs post no marker, so they stay candidates while the timer's runs are live
    assert 1 in eligible and 13 in eligible and 11 not in eligible, eligible
    assert sorted(record['candidates']) == eligible, (record['candidates'], eligible)
    # the cycle ran as the sweeper user, in its state dir
    assert host.file(STATE + '/ansible.log').user == USER


class _Rows(html.parser.HTMLParser):
    """The rows of the DOM Chromium serialised, by their attributes, and the script elements."""

    def __init__(self):
        super().__init__()
        self.rows, self.scripts = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == 'script':
            self.scripts += 1
        if tag == 'tr':
            self.rows.append(dict(attrs))


def _tool(name, package):
    path = shutil.which(name)
    if path is None:
        if os.environ.get('FLEET_REQUIRE_BROWSER') == '1':
            pytest.fail('%s is not installed (apt-get install %s): FLEET_REQUIRE_BROWSER=1 needs it' % (name, package))
        pytest.skip('%s is not installed on this machine (apt-get install %s)' % (name, package))
    return path


def _cycle_file(host, pattern):
    found = host.run('ls %s' % pattern).stdout.split()
    assert len(found) == 1, 'one board, one %s: %r' % (pattern, found) + _journal(host)
    written = host.file(found[0])
    assert written.is_file and written.user == USER and written.mode == 0o600, (found[0], written.user, oct(written.mode))
    return written


def test_the_cycle_wrote_a_status_page_chromium_renders_with_every_item(host, tmp_path):
    """The timer's service wrote status.html beside plan.json; copied back, Chromium loads it and
    every demo item is a row (the page is board text escaped: no script element)."""
    host.run('rm -f %s %s' % (PAGE, METRICS))
    rc, _beat, _took = _cycle(host)
    assert rc == 0, _journal(host)
    page = tmp_path / 'status.html'
    page.write_bytes(_cycle_file(host, PAGE).content)
    exe = _tool('chromium', 'chromium')
    home = tmp_path / 'chromium-home'
    home.mkdir()
    argv = [exe, '--headless', '--disable-gpu', '--no-first-run', '--no-default-browser-check', '--disable-dev-shm-usage',
            '--user-data-dir=%s' % home] + (['--no-sandbox'] if os.geteuid() == 0 else [])
    res = subprocess.run(argv + ['--dump-dom', page.as_uri()], capture_output=True, text=True, timeout=120, check=False,
                         env=dict(os.environ, HOME=str(home)))
    assert res.returncode == 0, res.stderr[-3000:]
    dom = _Rows()
    dom.feed(res.stdout)
    assert dom.scripts == 0, 'board text became a script element'
    numbers = sorted(int(r['data-number']) for r in dom.rows if 'item' in (r.get('class') or '').split())
    assert numbers == list(range(1, 14)), numbers      # the demo board's 13 items (fleet.dispatch.demo)
    shot = pathlib.Path(os.environ.get('FLEET_TEST_ARTIFACTS') or tmp_path) / 'sweeper-status-page.png'
    shot.parent.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(argv + ['--screenshot=%s' % shot, '--window-size=1280,1100', page.as_uri()], capture_output=True,
                         text=True, timeout=120, check=False, env=dict(os.environ, HOME=str(home)))
    assert res.returncode == 0 and shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n', res.stderr[-2000:]
    print('sweeper status page screenshot: %s' % shot)


def test_the_cycle_wrote_metrics_promtool_accepts(host):
    """The same cycle's Prometheus textfile passes `promtool check metrics` (no lint either) and
    counts the demo board: 13 items by reason, the board readable."""
    text = _cycle_file(host, METRICS).content_string
    res = subprocess.run([_tool('promtool', 'prometheus'), 'check', 'metrics'], input=text, capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0 and not (res.stdout + res.stderr).strip(), res.stdout + res.stderr
    counts = [int(v) for v in re.findall(r'^fleet_dispatch_items\{reason="[a-z_]+"\} (\d+)$', text, re.M)]
    assert sum(counts) == 13, text
    assert re.search(r'^fleet_dispatch_board_readable 1$', text, re.M), text


def test_a_failing_cycle_still_writes_the_heartbeat(host):
    """D14: the failure path announces itself too. Without its inventory the cycle fails."""
    moved = host.run('mv %s %s.away' % (INVENTORY, INVENTORY))
    assert moved.rc == 0, moved.stderr
    try:
        rc, beat, _took = _cycle(host)
    finally:
        host.run('mv %s.away %s' % (INVENTORY, INVENTORY))
    assert rc != 0
    assert beat['result'] == 'exit-code' and beat['exit_code'] == 'exited' and beat['exit_status'] not in ('', '0'), beat
    assert host.run('systemctl is-failed %s' % SERVICE).stdout.strip() == 'failed'
    # and the next cycle succeeds again (the unit is not stuck in failed)
    rc, beat, _took = _cycle(host)
    assert rc == 0 and beat['result'] == 'success', beat


def test_a_held_lock_skips_the_cycle_as_a_success_with_status_75(host):
    """flock -n: a cycle that finds the lock held exits 75 at once (SuccessExitStatus=75)."""
    holder = 'fleet-test-lockholder'
    out = host.run('systemd-run --quiet --collect --unit=%s -p User=%s %s %s/sweep.lock sleep 120'
                   % (holder, USER, '/usr/bin/flock', STATE))
    assert out.rc == 0, out.stderr
    try:
        deadline = time.monotonic() + 10
        while host.run('runuser -u %s -- /usr/bin/flock -n %s/sweep.lock true' % (USER, STATE)).rc == 0:
            assert time.monotonic() < deadline, 'the holder never took the lock'
            time.sleep(0.1)
        rc, beat, _took = _cycle(host)
        # the cycle ended while the holder (sleep 120) still held the lock: it did not wait for it
        holding = host.run('systemctl is-active %s' % holder).stdout.strip()
    finally:
        host.run('systemctl stop %s' % holder)
    assert rc == 0 and beat['result'] == 'success' and beat['exit_status'] == '75', beat
    assert holding == 'active', 'a skipped cycle must not wait for the lock: its holder is %s' % holding


def test_heartbeat_script_exits_0_even_when_its_directory_is_unwritable(host):
    for target in ('/proc/fleet-nowhere/heartbeat.json', '/heartbeat.json', ''):
        out = host.run('runuser -u %s -- env -i SERVICE_RESULT=success %s %s' % (USER, SCRIPT, target))
        assert out.rc == 0, (target, out.rc, out.stdout, out.stderr)
        assert 'swallowed' in out.stderr, out.stderr
    assert not host.file('/heartbeat.json').exists


def test_heartbeat_is_valid_json_whatever_systemd_hands_it(host):
    out = host.run('env -i SERVICE_RESULT=%s EXIT_STATUS=1 %s /tmp/fleet-hb.json'
                   % (shlex.quote('a"b\\c d'), SCRIPT))
    assert out.rc == 0, out.stderr
    beat = json.loads(host.file('/tmp/fleet-hb.json').content_string)
    assert beat['result'] == 'a_b_c_d' and beat['exit_status'] == '1', beat


# --- the logs (last: after every cycle above has logged) ----------------------------------------

def test_secrets_appear_in_no_ansible_log(host):
    """Neither the controller's log of every molecule step (run with --diff) nor the cycle's own."""
    log = os.environ.get('FLEET_SWEEPER_ANSIBLE_LOG', '')
    assert log and os.path.isfile(log), 'no Ansible log at %r (molecule.yml sets ANSIBLE_LOG_PATH)' % log
    text = pathlib.Path(log).read_text(errors='replace')
    assert "Write the sweeper's credentials" in text, 'the log does not cover the converge: nothing proven'
    for secret in _secrets():
        assert secret not in text, 'a credential value is in %s' % log
    cycle_log = host.file(STATE + '/ansible.log').content_string
    assert 'fleet.dispatch.dispatch' in cycle_log, 'the cycle log does not cover a sweep: nothing proven'
    for secret in _secrets():
        assert secret not in cycle_log, 'a credential value is in the cycle\'s ansible.log'


def test_secrets_appear_in_no_journal(host):
    out = host.run('journalctl --no-pager -o cat')
    assert out.rc == 0 and 'Invoked with' in out.stdout, 'journal unreadable or without module logs: nothing proven'
    assert 'fleet-sweeper-heartbeat:' in out.stdout, 'no cycle in the journal: nothing proven'
    for secret in _secrets():
        assert secret not in out.stdout, 'a credential value is in the journal'
