# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Integration fixtures: real systemd hosts from the test bed (``tests/testbed/bed``).

* ``bed`` (session): two ready hosts (below) booted for the session, always torn down (finalizer and
  ``atexit``, by this session's run label so nothing is lost if the name list is).
* ``bed_factory(n, block='10.88.210', ready=False)`` (session): more hosts on request, e.g. the
  race harness asks for three in its own block ``10.88.220``. Each call is its own ``Bed``; the
  hosts a test module booted go down when that module ends (``_down_the_modules_hosts``).
  ``ready=True`` boots the ready host: the bare one plus the packages a test would otherwise
  apt-install inside it (PostgreSQL, psycopg, python3-venv, libfaketime, bubblewrap: ``tests/testbed/image/ready.Containerfile``).
  A test of an install path (the roles on a fresh worker) boots the bare host.

A ``Bed`` has ``.hosts``, ``.ip[name]``, ``.inventory``, ``.key``, ``.run``, and
``.ssh(name, cmd, user='tester', check=True)`` (a real SSH login: PAM/logind gives the session
``XDG_RUNTIME_DIR``; any user works, the bed authorizes its key for all of them),
``.ansible(pattern, module, args, become_user=None, check=False, extra_vars=None)`` (ad-hoc
``ansible`` with the JSON callback; returns ``{host: result}``) and
``.playbook(path, extra_vars=None, limit=None)``.

Tests that need the bed are marked ``@pytest.mark.testbed``. Where podman, the bed's setup or
its image is missing they skip and say why, unless ``FLEET_REQUIRE_TESTBED=1`` (CI): then
they fail. The bed is never stubbed: no test may claim systemd behaviour against a stub.
"""
from __future__ import annotations

import atexit
import fcntl
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BED = REPO / 'tests' / 'testbed' / 'bed'
STATE = pathlib.Path(os.environ.get('FLEET_TESTBED_DIR', '/var/cache/fleet-dispatch/testbed'))
BLOCK = '10.88.210'     # pytest's block in the IP plan (tests/testbed/README.md)
HOST_OCTETS = range(10, 250)
# A guard, not a tuned figure: one ad-hoc `ansible` call took 1.7 s on a quiet machine, and the
# slowest boot seen was 3 hosts in 12.5-17 s at load 10-16 (README "Measured"); 600 s only stops
# a hung call from hanging CI. Playbooks of other tests may need more: FLEET_TESTBED_CALL_TIMEOUT.
# The addresses .10-.249 of each block leave .1-.9 and .250-.254 for hand use.
CALL_TIMEOUT = int(os.environ.get('FLEET_TESTBED_CALL_TIMEOUT', '600'))
# ssh's own words for a connection that failed before the command started (it exits 255 then)
SSH_SETUP_FAILED = re.compile(r'banner exchange|kex_exchange_identification|Connection (timed out|refused|reset|closed)')
SSH_SETUP_TRIES = 3
# FLEET_TESTBED_KEEP=1: leave the hosts up after the session, for a human to look at a failure.
KEEP = os.environ.get('FLEET_TESTBED_KEEP') == '1'


_KEPT = []


def pytest_terminal_summary(terminalreporter):
    """Under FLEET_TESTBED_KEEP=1, say which hosts were left up and how to remove them."""
    for line in dict.fromkeys(_KEPT):
        terminalreporter.write_line('FLEET_TESTBED_KEEP=1: ' + line)


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'testbed: needs real systemd hosts from tests/testbed/bed (skips without them '
                   'unless FLEET_REQUIRE_TESTBED=1)')


class BedUnavailable(Exception):
    """The test bed cannot be used here; the message says what to run."""


class CommandFailed(subprocess.CalledProcessError):
    """A bed command failed; unlike CalledProcessError its text carries stdout and stderr."""

    def __str__(self):
        return '%s\n--- stdout\n%s\n--- stderr\n%s' % (
            super().__str__(), (self.stdout or '')[-4000:], (self.stderr or '')[-4000:])


def _run(argv, check=True, input=None, **kw):
    kw.setdefault('timeout', CALL_TIMEOUT)
    # never the parent's stdin: concurrent ansible-playbooks sharing it abort with "Ansible requires
    # blocking IO" (issue 13); a child gets its input, or /dev/null
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, input=input,
                          stdin=None if input is not None else subprocess.DEVNULL, **kw)
    if check and proc.returncode != 0:
        raise CommandFailed(proc.returncode, argv, proc.stdout, proc.stderr)
    return proc


def _bed_env():
    env = dict(os.environ)
    env['FLEET_TESTBED_DIR'] = str(STATE)
    env['CONTAINERS_CONF'] = str(STATE / 'containers.conf')
    env['CONTAINERS_STORAGE_CONF'] = str(STATE / 'storage.conf')
    return env


def _probe():
    """Return the image tag to boot, or raise BedUnavailable saying what is missing."""
    if os.geteuid() != 0:
        raise BedUnavailable('the test bed is rootful podman: run as root')
    if shutil.which('podman') is None:
        raise BedUnavailable('podman is not installed: run tests/testbed/bed setup')
    for path in (STATE / 'containers.conf', STATE / 'ssh' / 'id_ed25519'):
        if not path.exists():
            raise BedUnavailable('%s is missing: run tests/testbed/bed setup' % path)
    if not any(os.path.isfile(os.path.join(entry, 'ansible_collections', 'ansible', 'posix', 'plugins', 'callback', 'json.py'))
               for entry in _collections_path().split(os.pathsep)):
        raise BedUnavailable('ansible.posix (its json callback) is not installed: pip install -r requirements-dev.txt')
    env = _bed_env()
    tag = os.environ.get('FLEET_TESTBED_IMAGE') or _run([str(BED), 'tag'], env=env).stdout.strip()
    ready = os.environ.get('FLEET_TESTBED_READY_IMAGE') or _run([str(BED), 'tag', 'ready'], env=env).stdout.strip()
    for image in (tag, ready):
        if _run(['podman', 'image', 'exists', image], check=False, env=env).returncode != 0:
            raise BedUnavailable('image %s is missing: run tests/testbed/bed image' % image)
    return tag, ready


_PROBED = {}


def _available():
    if 'result' not in _PROBED:
        try:
            _PROBED['result'] = (_probe(), None)
        except BedUnavailable as exc:
            _PROBED['result'] = (None, str(exc))
    return _PROBED['result']


def _skip_or_fail(reason):
    if os.environ.get('FLEET_REQUIRE_TESTBED') == '1':
        pytest.fail('the test bed is required here (FLEET_REQUIRE_TESTBED=1): ' + reason, pytrace=False)
    pytest.skip('test bed unavailable: ' + reason)


def pytest_runtest_setup(item):
    if item.get_closest_marker('testbed') is not None:
        tag, reason = _available()
        if tag is None:
            _skip_or_fail(reason)


def _collections_path():
    """Our collection first, then the ``ansible`` package's collections (ansible.posix's json
    callback, containers.podman): tests/conftest.py turns the sys.path scan off."""
    paths = [p for p in os.environ.get('ANSIBLE_COLLECTIONS_PATH', '').split(os.pathsep) if p]
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, 'ansible_collections', 'ansible', 'posix')):
            if entry not in paths:
                paths.append(entry)
    return os.pathsep.join(paths)


def _tool(name):
    sibling = pathlib.Path(sys.executable).parent / name
    return str(sibling) if sibling.exists() else (shutil.which(name) or name)


class Bed:
    """Booted test-bed hosts of one request. Built by ``_boot``; see the module docstring."""

    def __init__(self, run, names, ips, workdir):
        self.run = run
        self.hosts = list(names)
        self.ip = dict(zip(names, ips))
        self.key = str(STATE / 'ssh' / 'id_ed25519')
        self.workdir = workdir
        self.inventory = str(workdir / 'inventory.ini')
        self.env = _bed_env()
        self.env.update({
            'FLEET_TESTBED_RUN': run,
            'ANSIBLE_COLLECTIONS_PATH': _collections_path(),
            'ANSIBLE_HOST_KEY_CHECKING': 'False',
            'ANSIBLE_RETRY_FILES_ENABLED': 'False',
            'ANSIBLE_NOCOLOR': '1',
            'ANSIBLE_DEPRECATION_WARNINGS': 'False',
            # Per-bed control sockets: a ControlPersist master of a torn-down host must never
            # serve a new host that got the same IP.
            'ANSIBLE_SSH_CONTROL_PATH_DIR': str(workdir / 'cp'),
        })
        # A controller setting, not a host property; a test may turn it off to see the
        # unprivileged-become temp-file path (no setfacl on a minimal Debian host).
        self.env.setdefault('ANSIBLE_PIPELINING', 'True')

    # -- shell ------------------------------------------------------------------------
    def ssh(self, name, cmd, user='tester', check=True, input=None, timeout=None):
        """Run ``cmd`` (a shell string) on host ``name`` over a real SSH login as ``user``."""
        argv = ['ssh', '-i', self.key, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes',
                '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=5',
                '%s@%s' % (user, self.ip[name]), cmd]
        # A login that never got past the handshake ran nothing: under a loaded CI machine sshd can
        # miss the banner deadline, so that (and only that) is tried again.
        for attempt in range(SSH_SETUP_TRIES):
            proc = _run(argv, check=False, input=input, timeout=timeout or CALL_TIMEOUT)
            if proc.returncode != 255 or not SSH_SETUP_FAILED.search(proc.stderr or '') \
                    or attempt == SSH_SETUP_TRIES - 1:
                break
            time.sleep(2 * (attempt + 1))
        if check and proc.returncode != 0:
            raise CommandFailed(proc.returncode, argv, proc.stdout, proc.stderr)
        return proc

    # -- ansible ----------------------------------------------------------------------
    def ansible(self, pattern, module, args=None, become_user=None, check=False, extra_vars=None,
                become=True):
        """Ad-hoc ``ansible PATTERN -m MODULE -a ARGS``; returns ``{host: result dict}``.

        ``args`` is a dict (sent as JSON) or a free-form string. The result dicts are the
        module results as the JSON callback reports them (``failed``, ``unreachable``,
        ``changed``, ``rc``...). Raises CommandFailed only when ansible printed no JSON.
        """
        argv = [_tool('ansible'), '-i', self.inventory, pattern, '-m', module]
        if args:
            argv += ['-a', args if isinstance(args, str) else json.dumps(args)]
        if become_user:
            argv += ['--become-user', become_user]
        if not become:
            argv += ['-e', 'ansible_become=false']
        if check:
            argv.append('--check')
        if extra_vars:
            argv += ['-e', json.dumps(extra_vars)]
        env = dict(self.env, ANSIBLE_LOAD_CALLBACK_PLUGINS='1', ANSIBLE_STDOUT_CALLBACK='ansible.posix.json')
        proc = _run(argv, check=False, env=env)
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            raise CommandFailed(proc.returncode, argv, proc.stdout, proc.stderr)
        results = {}
        for play in data.get('plays', []):
            for task in play.get('tasks', []):
                results.update(task.get('hosts', {}))
        return results

    def playbook(self, path, extra_vars=None, limit=None, check=False, args=(), timeout=None):
        """``ansible-playbook -i INVENTORY PATH``; returns the CompletedProcess (never raises but on ``timeout``)."""
        argv = [_tool('ansible-playbook'), '-i', self.inventory, str(path)]
        if extra_vars:
            argv += ['-e', json.dumps(extra_vars)]
        if limit:
            argv += ['--limit', limit if isinstance(limit, str) else ','.join(limit)]
        if check:
            argv.append('--check')
        argv += list(args)
        return _run(argv, check=False, env=self.env, timeout=timeout or CALL_TIMEOUT)

    def down(self, wait=True):
        """Remove this bed's hosts (by name: other beds of the session stay up). Once: again is a no-op.

        ``wait=False`` starts the removal (each host's clean shutdown, up to 10 s) and returns: the
        next module boots meanwhile, and the session's end waits for it (``_reap_downs``)."""
        if getattr(self, '_downed', False):
            return
        self._downed = True
        if KEEP:
            _KEPT.append('kept %s (inventory %s); remove with: tests/testbed/bed down %s' % (
                ', '.join('%s=%s' % (h, self.ip[h]) for h in self.hosts), self.inventory, ' '.join(self.hosts)))
            return
        if wait:
            _run([str(BED), 'down'] + self.hosts, check=False, env=self.env)
            shutil.rmtree(str(self.workdir), ignore_errors=True)
            return
        _DOWNS.append((subprocess.Popen([str(BED), 'down'] + self.hosts, env=self.env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), self.workdir))


_DOWNS = []     # (the `bed down` process, the bed's workdir) started by Bed.down(wait=False)


def _reap_downs():
    """Wait for every removal Bed.down(wait=False) started; then their workdirs go."""
    while _DOWNS:
        proc, workdir = _DOWNS.pop()
        try:
            proc.wait(timeout=CALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(str(workdir), ignore_errors=True)


def _used_ips(env):
    """Every IP a container of this podman holds, running or not (leftovers included)."""
    ids = _run(['podman', 'ps', '-aq'], env=env).stdout.split()
    if not ids:
        return set()
    out = _run(['podman', 'inspect', '--format',
                '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}'] + ids, check=False, env=env).stdout
    return set(out.split())


@pytest.fixture(scope='session')
def ready_image():
    """The ready host's image tag, for a program that boots its own hosts (demo.sh)."""
    tags, reason = _available()
    if tags is None:
        _skip_or_fail(reason)
    return tags[1]


def _boot(n, block, owner=None, ready=False):
    """Boot ``n`` hosts in ``block`` (``'10.88.210'``) and return a Bed; the caller downs it.

    ``owner`` is the pid recorded as the hosts' owner (default: this process); ``ready`` boots the
    ready host (module docstring)."""
    tags, reason = _available()
    if tags is None:
        _skip_or_fail(reason)
    tag = tags[1] if ready else tags[0]
    run = 'pt-%s' % uuid.uuid4().hex[:8]
    names = ['%s-%d' % (run, i + 1) for i in range(n)]
    workdir = pathlib.Path(tempfile.mkdtemp(prefix='fleet-bed-%s.' % run))
    # The owner label is this process: if pytest dies without its finalizers, any later
    # `bed down-all` (the CI EXIT trap) knows these hosts are leftovers.
    env = dict(_bed_env(), FLEET_TESTBED_RUN=run, FLEET_TESTBED_IMAGE=tag, FLEET_TESTBED_OWNER=str(owner or os.getpid()))
    if KEEP:
        env['FLEET_TESTBED_OWNER'] = ''     # ownerless: `bed down-all` keeps them too
    else:
        # Registered before anything boots, so an interrupted session still cleans up.
        atexit.register(_run, [str(BED), 'down-all'], check=False, env=env)
    # Pick free addresses and start under one lock, so concurrent sessions (xdist workers,
    # two CI jobs) never pick the same IP; the offset by pid only spreads them out.
    with open(str(STATE / 'ip.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        used = _used_ips(env)
        octets = list(HOST_OCTETS)
        start = os.getpid() % len(octets)
        free = [o for o in octets[start:] + octets[:start] if '%s.%d' % (block, o) not in used]
        if len(free) < n:
            raise BedUnavailable('no %d free addresses left in %s.0/24' % (n, block))
        ips = ['%s.%d' % (block, o) for o in free[:n]]
        argv = [str(BED), 'up']
        for name, ip in zip(names, ips):
            argv += [name, ip]
        try:
            proc = _run(argv, env=env)
        except BaseException:
            _run([str(BED), 'down-all'], check=False, env=env)
            raise
    sys.stderr.write(proc.stdout)
    bed = Bed(run, names, ips, workdir)
    _run([str(BED), 'inventory', bed.inventory] + names, env=env)
    return bed


@pytest.fixture(scope='session')
def bed_factory():
    """``bed_factory(n, block='10.88.210', owner=None, ready=False)`` boots ``n`` more hosts; all are downed at the end."""
    beds = []

    def factory(n=2, block=BLOCK, owner=None, session=False, ready=False):
        bed = _boot(n, block, owner, ready)
        bed.session = session
        beds.append(bed)
        return bed
    factory.beds = beds
    try:
        yield factory
    finally:
        for bed in beds:
            bed.down()
        _reap_downs()


@pytest.fixture(scope='session')
def bed(bed_factory):
    """Two hosts for the whole session (see the module docstring)."""
    return bed_factory(2, session=True, ready=True)


@pytest.fixture(scope='module', autouse=True)
def _down_the_modules_hosts(bed_factory):
    """The hosts a test module booted go down when the module ends (the session's ``bed`` stays).
    Kept up to the session's end, a whole run's hosts were up at once: about 20 by test_testbed,
    each with its systemd, user managers and timers - the load of hosts nobody used, and the
    per-uid inotify limit that made the next hosts fail to boot (tests/testbed/bed setup). Their
    removal runs beside the next module's boot: the xdist worker does not wait for the shutdowns."""
    before = len(bed_factory.beds)
    yield
    for booted in bed_factory.beds[before:]:
        if not booted.session:
            booted.down(wait=False)
