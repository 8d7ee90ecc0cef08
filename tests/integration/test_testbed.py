# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Acceptance of the test bed itself, on real hosts (tests/testbed/README.md).

The product's systemd guarantees are only as good as the hosts they are tested on, so these
check the properties the product leans on: systemd is PID 1 (not a stub), linger brings up a
user manager, a real SSH login gets XDG_RUNTIME_DIR from PAM, the unit name is a lock in the
user manager (D4), stopping a unit takes a setsid-detached grandchild with it (D3 property 3),
and stopping a whole user manager is prompt and complete (the hybrid-cgroup bind mount). Plus the bed's own promises: hosts reach each
other, no key material baked into the image, the image tag follows the recipe, hosts go away.

The module boots its own two hosts (the session's are shared with other modules), and each
test makes its own fresh unix user.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import uuid

import pytest

BED = pathlib.Path(__file__).resolve().parents[2] / 'tests' / 'testbed' / 'bed'
KEEP_SKIP = pytest.mark.skipif(os.environ.get('FLEET_TESTBED_KEEP') == '1',
                               reason='FLEET_TESTBED_KEEP=1 keeps hosts: teardown cannot be tested')

# Client-side bound on a `systemctl stop`: not a timing assertion, it tells "returned" from
# "hung". Readings here (2026-11-30, README "Facts" 3): with the cgroup2 bind mount, stopping a
# transient user unit took 0.03-0.09 s and stopping user@UID.service 0.05 s; without the mount
# `systemctl stop user@UID.service` was still hanging when `timeout 60` killed it (its
# TimeoutStopSec is 120 s). 30 s is hundreds of times the reading and half the hang.
STOP_BOUND_SEC = 30
# The transient unit's own TimeoutStopSec in the test, far above the bound, so that a stop that
# waits for the timeout cannot pass.
STOP_TIMEOUT_SEC = 600


def _wait(cmd, tries=100):
    """A remote shell loop: retry ``cmd`` every 0.1 s, ``tries`` times; exit 0 once it succeeds."""
    return 'for i in $(seq %d); do %s && exit 0; sleep 0.1; done; exit 1' % (tries, cmd)


@pytest.fixture(scope='module')
def bed(bed_factory):
    """This module's own two hosts, removed when the module ends. Overrides the session ``bed``:
    acceptance checks (``is-system-running`` = running...) need hosts no other module changed."""
    own = bed_factory(2)
    try:
        yield own
    finally:
        own.down()


@pytest.fixture
def user(bed):
    """A fresh unix user on the first host, lingering, with its user manager up. Yields (name, uid)."""
    host = bed.hosts[0]
    name = 'bt%s' % uuid.uuid4().hex[:8]
    bed.ssh(host, 'sudo useradd --create-home --shell /bin/bash %s' % name)
    uid = int(bed.ssh(host, 'id -u %s' % name).stdout)
    bed.ssh(host, 'sudo loginctl enable-linger %s' % name)
    bed.ssh(host, _wait('systemctl is-active --quiet user@%d.service' % uid))
    try:
        yield name, uid
    finally:
        _drop_user(bed, host, name, uid)


def _drop_user(bed, host, name, uid):
    """Remove a test user cleanly so its uid can be reused: its user manager must stop on its
    own. (A SIGKILLed manager leaves user@UID.service failed, and the next user with that uid
    then never gets a manager from enable-linger until `systemctl reset-failed`.)"""
    bed.ssh(host, 'sudo loginctl disable-linger {n}; sudo loginctl terminate-user {n}; {wait}; '
                  'sudo systemctl reset-failed user@{u}.service user-runtime-dir@{u}.service; '
                  'sudo userdel -r {n} 2>/dev/null'.format(
                      n=name, u=uid, wait=_wait('! systemctl is-active --quiet user@%d.service' % uid)),
            check=False)


@pytest.mark.testbed
def test_pid1_is_systemd_and_the_system_is_running(bed):
    for host in bed.hosts:
        assert bed.ssh(host, 'cat /proc/1/comm').stdout.strip() == 'systemd'
        state = bed.ssh(host, 'systemctl is-system-running', check=False).stdout.strip()
        failed = bed.ssh(host, 'systemctl --failed --no-legend --plain', check=False).stdout
        assert state == 'running', (host, state, failed)
        assert bed.ssh(host, 'hostname').stdout.strip() == host


@pytest.mark.testbed
def test_hosts_are_distinct_machines(bed):
    """machine-id and SSH host keys are made at first boot, not baked into the image."""
    ids = {bed.ssh(h, 'cat /etc/machine-id').stdout.strip() for h in bed.hosts}
    keys = {bed.ssh(h, 'ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub').stdout.split()[1] for h in bed.hosts}
    assert len(ids) == len(bed.hosts) and '' not in ids
    assert len(keys) == len(bed.hosts)


@pytest.mark.testbed
def test_linger_on_a_fresh_user_brings_up_its_user_manager(bed):
    host = bed.hosts[0]
    name = 'bt%s' % uuid.uuid4().hex[:8]
    bed.ssh(host, 'sudo useradd --create-home --shell /bin/bash %s' % name)
    uid = int(bed.ssh(host, 'id -u %s' % name).stdout)
    try:
        before = bed.ssh(host, 'systemctl is-active user@%d.service' % uid, check=False).stdout.strip()
        assert before == 'inactive'
        bed.ssh(host, 'sudo loginctl enable-linger %s' % name)
        bed.ssh(host, _wait('systemctl is-active --quiet user@%d.service' % uid))
        assert bed.ssh(host, 'loginctl show-user %s -p Linger' % name).stdout.strip() == 'Linger=yes'
    finally:
        _drop_user(bed, host, name, uid)


@pytest.mark.testbed
def test_xdg_runtime_dir_comes_only_from_a_pam_session(bed, user):
    """A real SSH login gets XDG_RUNTIME_DIR (pam_systemd); sudo -u does not (README, Facts)."""
    host = bed.hosts[0]
    name, uid = user
    login = bed.ssh(host, 'echo "$XDG_RUNTIME_DIR"; systemctl --user is-system-running', user=name, check=False)
    lines = login.stdout.split()
    assert lines[0] == '/run/user/%d' % uid
    assert lines[1] in ('running', 'degraded'), login.stdout + login.stderr
    via_sudo = bed.ssh(host, 'sudo -u %s sh -c \'echo "x$XDG_RUNTIME_DIR"\'' % name).stdout.strip()
    assert via_sudo == 'x'
    # Ansible's become_user is sudo too: tasks that talk to the user manager must set
    # environment XDG_RUNTIME_DIR=/run/user/<uid> themselves.
    become = bed.ansible(host, 'ansible.builtin.shell', 'echo "x$XDG_RUNTIME_DIR"; systemctl --user is-system-running',
                         become_user=name)[host]
    assert become['stdout_lines'][0] == 'x'
    assert 'No medium found' in become['stderr'], become


@pytest.mark.testbed
def test_the_unit_name_is_the_lock(bed, user):
    """D4: a second `systemd-run --user --unit=task-1` while the first is live is refused."""
    host = bed.hosts[0]
    name, _uid = user
    run = 'systemd-run --user --unit=task-1 --collect -- sleep 300'
    first = bed.ssh(host, run, user=name, check=False)
    assert first.returncode == 0, first.stderr
    show = 'systemctl --user show task-1 -p ActiveState -p InvocationID --value'
    state, invocation = bed.ssh(host, show, user=name).stdout.split()
    assert state == 'active'
    second = bed.ssh(host, run, user=name, check=False)
    assert second.returncode != 0
    assert 'already loaded' in second.stderr, second.stderr
    # The refusal left the first run alone: same invocation, still active.
    assert bed.ssh(host, show, user=name).stdout.split() == ['active', invocation]
    bed.ssh(host, 'systemctl --user stop task-1', user=name)


@pytest.mark.testbed
def test_stopping_a_unit_takes_a_setsid_detached_grandchild(bed, user):
    """D3 property 3: the cgroup takes the whole tree, a grandchild in its own session too.

    (Measured here without the cgroup2 mount this still passes: the user manager is a subreaper
    and reaps the orphan. The mount's regression guard is the user-manager test below.)"""
    host = bed.hosts[0]
    name, uid = user
    marker = 4000 + int(uuid.uuid4().hex[:3], 16)   # a sleep length nothing else on the host uses
    bed.ssh(host, 'systemd-run --user --unit=task-2 --collect -p TimeoutStopSec=%d -- '
                  'bash -c "setsid sleep %d & sleep 900"' % (STOP_TIMEOUT_SEC, marker), user=name)
    find = 'pgrep -u %s -x sleep -a | grep -w %d' % (name, marker)
    bed.ssh(host, _wait(find), user=name)
    # The grandchild really left the unit's session and process group.
    pid = bed.ssh(host, find, user=name).stdout.split()[0]
    sid, pgid = bed.ssh(host, 'ps -o sid=,pgid= -p %s' % pid).stdout.split()
    assert sid == pid and pgid == pid
    # ... but not the unit's cgroup, which systemd tracks on the cgroup2 tree (hybrid mode).
    cgroup = bed.ssh(host, 'cat /proc/%s/cgroup' % pid).stdout
    # (No cgroup namespace here: the path is the container's own cgroup, then systemd's tree.)
    unit_cgroup = '/user.slice/user-%d.slice/user@%d.service/app.slice/task-2.service' % (uid, uid)
    assert any(line.startswith('0::') and line.endswith(unit_cgroup) for line in cgroup.splitlines()), cgroup
    stop = bed.ssh(host, 'timeout %d systemctl --user stop task-2' % STOP_BOUND_SEC, user=name, check=False)
    assert stop.returncode == 0, 'stop did not finish within %ds (rc %d): cgroup-empty notifications missing? %s' % (
        STOP_BOUND_SEC, stop.returncode, stop.stderr)
    left = bed.ssh(host, find, user=name, check=False)
    assert left.returncode == 1 and left.stdout == '', left.stdout
    assert bed.ssh(host, 'systemctl --user is-active task-2', user=name, check=False).stdout.strip() in ('inactive', 'failed')


@pytest.mark.testbed
def test_stopping_a_user_manager_is_prompt_and_leaves_nothing(bed, user):
    """Disable-linger, terminate-user and every host shutdown stop user@UID.service. Without the
    cgroup2 bind mount systemd never learns that its cgroup emptied and the stop hangs for
    TimeoutStopSec (README "Facts" 3): this is the guard for that mount."""
    host = bed.hosts[0]
    name, uid = user
    marker = 5000 + int(uuid.uuid4().hex[:3], 16)
    bed.ssh(host, 'systemd-run --user --unit=task-3 --collect -- bash -c "setsid sleep %d & sleep 900"' % marker, user=name)
    find = 'pgrep -u %s -x sleep -a | grep -w %d' % (name, marker)
    bed.ssh(host, _wait(find))
    stop = bed.ssh(host, 'sudo timeout %d systemctl stop user@%d.service' % (STOP_BOUND_SEC, uid), check=False)
    assert stop.returncode == 0, 'stopping user@%d did not return within %ds (rc %d): cgroup-empty notifications missing? %s' % (
        uid, STOP_BOUND_SEC, stop.returncode, stop.stderr)
    left = bed.ssh(host, 'pgrep -u %s -a' % name, check=False)
    assert left.returncode == 1 and left.stdout == '', left.stdout


@pytest.mark.testbed
def test_hosts_reach_each_other_by_ip_and_by_name(bed):
    for host in bed.hosts:
        for peer in bed.hosts:
            if peer == host:
                continue
            bed.ssh(host, 'timeout 5 bash -c "</dev/tcp/%s/22"' % bed.ip[peer])
            assert bed.ssh(host, 'getent hosts %s' % peer).stdout.split()[0] == bed.ip[peer]


@pytest.mark.testbed
def test_ansible_ad_hoc_returns_per_host_results(bed):
    as_root = bed.ansible('testbed', 'ansible.builtin.command', {'cmd': 'id -un'})
    assert sorted(as_root) == sorted(bed.hosts)
    assert {r['stdout'] for r in as_root.values()} == {'root'}
    as_tester = bed.ansible(bed.hosts[0], 'ansible.builtin.command', {'cmd': 'id -un'}, become_user='tester')
    assert as_tester[bed.hosts[0]]['stdout'] == 'tester'
    no_become = bed.ansible(bed.hosts[1], 'ansible.builtin.command', 'id -un', become=False)
    assert no_become[bed.hosts[1]]['stdout'] == 'tester'
    checked = bed.ansible(bed.hosts[0], 'ansible.builtin.command', {'cmd': 'touch /root/should-not-exist'}, check=True)
    assert checked[bed.hosts[0]].get('skipped') is True
    assert bed.ssh(bed.hosts[0], 'sudo test -e /root/should-not-exist', check=False).returncode == 1
    failed = bed.ansible(bed.hosts[0], 'ansible.builtin.command', {'cmd': 'false'})
    assert failed[bed.hosts[0]]['failed'] is True and failed[bed.hosts[0]]['rc'] == 1


@pytest.mark.testbed
def test_playbook_with_extra_vars_and_limit(bed, tmp_path):
    play = tmp_path / 'play.yml'
    play.write_text(
        '- name: Write a marker\n'
        '  hosts: testbed\n'
        '  gather_facts: false\n'
        '  tasks:\n'
        '    - name: Write it\n'
        '      ansible.builtin.copy:\n'
        '        dest: /tmp/bed-marker\n'
        '        content: "{{ word }}"\n'
        '        mode: "0644"\n')
    word = uuid.uuid4().hex
    proc = bed.playbook(play, extra_vars={'word': word}, limit=bed.hosts[0])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert bed.ssh(bed.hosts[0], 'cat /tmp/bed-marker').stdout == word
    assert bed.ssh(bed.hosts[1], 'cat /tmp/bed-marker', check=False).stdout != word


@pytest.mark.testbed
@KEEP_SKIP
def test_factory_boots_more_hosts_and_down_removes_them(bed_factory):
    three = bed_factory(3)
    assert len(set(three.hosts)) == 3 and len(set(three.ip.values())) == 3
    assert all(ip.startswith('10.88.210.') for ip in three.ip.values())
    for host in three.hosts:
        assert three.ssh(host, 'hostname').stdout.strip() == host
    three.down()
    for host in three.hosts:
        assert subprocess.run(['podman', 'container', 'exists', host], stdin=subprocess.DEVNULL, env=three.env, check=False).returncode == 1


@pytest.mark.testbed
@KEEP_SKIP
def test_down_all_takes_only_leftovers(bed_factory, bed):
    """The CI EXIT trap runs `bed down-all`: it must remove hosts whose owner died (pytest
    killed before its finalizers) and never a live job's hosts (another engineer's session).
    Read through `bed leftovers`, which removes nothing, so this test cannot harm other jobs."""
    trap_env = {k: v for k, v in bed.env.items() if k != 'FLEET_TESTBED_RUN'}   # as the EXIT trap runs it
    owner = subprocess.Popen(['sleep', '600'], stdin=subprocess.DEVNULL)
    try:
        orphan = bed_factory(1, owner=owner.pid)
        ids = {h: subprocess.run(['podman', 'inspect', '--format', '{{.Id}}', h], stdin=subprocess.DEVNULL, env=bed.env, check=True,
                                 capture_output=True, text=True).stdout.strip() for h in orphan.hosts + bed.hosts}
        listed = subprocess.run([str(BED), 'leftovers'], stdin=subprocess.DEVNULL, env=trap_env, check=True, capture_output=True, text=True).stdout.split()
        assert not set(ids.values()) & set(listed)
    finally:
        owner.kill()
        owner.wait()
    listed = subprocess.run([str(BED), 'leftovers'], stdin=subprocess.DEVNULL, env=trap_env, check=True, capture_output=True, text=True).stdout.split()
    assert ids[orphan.hosts[0]] in listed
    assert not {ids[h] for h in bed.hosts} & set(listed)     # this live session's hosts stay
    orphan.down()


@pytest.mark.testbed
def test_image_bakes_no_key_material(bed):
    env = bed.env
    image = os.environ.get('FLEET_TESTBED_IMAGE') or subprocess.run(
        [str(BED), 'tag'], stdin=subprocess.DEVNULL, env=env, capture_output=True, text=True, check=True).stdout.strip()
    probe = subprocess.run(
        ['podman', 'run', '--rm', '--systemd=false', image, 'sh', '-c',
         'cat /etc/fleet-testbed/authorized_keys; ls /etc/ssh/ | grep ^ssh_host_; '
         'find /root /home -path "*/.ssh/*" -type f; true'], stdin=subprocess.DEVNULL,
        env=env, capture_output=True, text=True, check=True)
    assert probe.stdout == '', probe.stdout


@pytest.mark.parametrize('edit, changes', [
    ('image/Containerfile', True),
    ('image/rootfs.sh', True),
    ('bed', False),          # the driver script is not part of the image recipe
])
def test_image_tag_follows_the_recipe(tmp_path, edit, changes):
    copy = tmp_path / 'testbed'
    shutil.copytree(str(BED.parent), str(copy))
    tag = [str(copy / 'bed'), 'tag']
    before = subprocess.run(tag, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout.strip()
    with open(str(copy / edit), 'a') as fh:
        fh.write('\n# edited\n')
    after = subprocess.run(tag, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout.strip()
    assert before.startswith('localhost/fleet-dispatch/testbed:')
    assert (before != after) is changes


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which('podman') is None,
                    reason='bed setup needs root, and podman already installed (else it runs apt-get)')
def test_setup_pins_the_runtime_and_rlimits_and_keeps_its_key(tmp_path):
    env = dict(os.environ, FLEET_TESTBED_DIR=str(tmp_path / 'state'))
    subprocess.run([str(BED), 'setup'], stdin=subprocess.DEVNULL, env=env, check=True, capture_output=True)
    conf = (tmp_path / 'state' / 'containers.conf').read_text()
    # crun refuses hybrid cgroups here; the runtime cannot raise rlimits (no CAP_SYS_RESOURCE).
    assert 'runtime = "runc"' in conf and 'cgroup_manager = "cgroupfs"' in conf
    hard = subprocess.run(['bash', '-c', 'echo $(ulimit -Hn) $(ulimit -Hu)'], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          check=True).stdout.split()
    nofile = min(int(hard[0]), 1048576) if hard[0].isdigit() else 65536
    nproc = min(int(hard[1]), 32768) if hard[1].isdigit() else 32768
    assert 'default_ulimits = ["nofile=%d:%d", "nproc=%d:%d"]' % (nofile, nofile, nproc, nproc) in conf
    key = tmp_path / 'state' / 'ssh' / 'id_ed25519'
    first = key.read_text()
    assert oct(key.stat().st_mode & 0o777) == '0o600'
    subprocess.run([str(BED), 'setup'], stdin=subprocess.DEVNULL, env=env, check=True, capture_output=True)
    assert key.read_text() == first          # hosts still up hold this key: never rotated by setup
    exports = subprocess.run([str(BED), 'env'], stdin=subprocess.DEVNULL, env=env, check=True, capture_output=True, text=True).stdout
    shown = subprocess.run(['bash', '-c', exports + '\necho "$CONTAINERS_CONF|$FLEET_TESTBED_KEY|$FLEET_TESTBED_PUBKEY|$FLEET_TESTBED_IMAGE"'],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout.strip().split('|')
    assert shown[:3] == [str(tmp_path / 'state' / 'containers.conf'), str(key), str(key) + '.pub']
    assert shown[3].startswith('localhost/fleet-dispatch/testbed:')
