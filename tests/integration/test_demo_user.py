# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``make demo`` on a machine with a systemd user manager, without root: the user case, end to end.

One bed host stands in for a newcomer's desktop: a user ``demo`` (not root, no sudo) with a user
manager, a copy of the repository in its home, Debian's ``python3-venv``. ``demo.sh`` runs there over
SSH as that user (a real PAM session; FLEET_DEMO_USER_RUNS=2 runs it twice), as ``make demo``
would: it picks the user case by itself, makes its venv (demo/requirements.txt) from a wheelhouse
built on this controller (the hosts reach Debian's mirror but not PyPI: HTTPS there needs this
machine's CA), provisions ``demo`` as the one master of localhost with roles/worker
``worker_rootless``, sweeps in apply mode, waits, darkens the master by hand and sweeps again. The
assertions read the last run's status.json, plan.json and output, and the home afterwards: the
demo's units, files and git setting gone, the user's own (a unit, a program in ~/.local/bin, a
trusted repository) left alone.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import demo_outcome  # noqa: E402  (what every demo case must end with)

pytestmark = pytest.mark.testbed

REPO = pathlib.Path(__file__).resolve().parents[2]
USER = 'demo'
COPY = '/home/%s/fleet.dispatch' % USER
# A bound only (two demo runs, a venv, an apt install on 2 shared cores): the measured time is printed.
TIMEOUT = 1800
# What the user had before the demo, which the demo must leave alone.
OWN_UNIT = '.config/systemd/user/mine.service'
OWN_BIN = '.local/bin/mine'
OWN_TRUST = '/srv/mine.git'


def _ssh(bed, host, cmd, data=None, timeout=TIMEOUT):
    """``cmd`` on ``host`` as the demo user over a real SSH login; ``data`` (bytes) on its stdin."""
    argv = ['ssh', '-i', bed.key, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no',
            '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=5',
            '%s@%s' % (USER, bed.ip[host]), cmd]
    return subprocess.run(argv, input=data if data is not None else b'', capture_output=True, timeout=timeout, check=False)


def _wheelhouse(where):
    """The user case's requirements (demo/requirements.txt) and pip, as wheels for the host's python3 (3.11)."""
    subprocess.run([sys.executable, '-m', 'pip', 'download', '-q', '-d', str(where), '--only-binary=:all:',
                    '-r', str(REPO / 'demo' / 'requirements.txt'), 'pip'], check=True, timeout=600,
                   stdin=subprocess.DEVNULL)
    return where


def _tree():
    """The working tree as a tar stream (what a fresh clone has, with this checkout's changes)."""
    return subprocess.run(['tar', '-C', str(REPO), '--exclude=./.git', '--exclude=./build', '--exclude=./.venv',
                           '--exclude=__pycache__', '--exclude=.pytest_cache', '-cf', '-', '.'],
                          capture_output=True, check=True, stdin=subprocess.DEVNULL).stdout


@pytest.fixture(scope='module')
def demo(bed_factory, tmp_path_factory):
    bed = bed_factory(1, ready=True)      # python3-venv and PostgreSQL: the ready host
    (host,) = bed.hosts
    # the newcomer's machine: a user with a user manager (linger: it outlives each SSH login) and python3-venv
    bed.ssh(host, 'sudo useradd -m -s /bin/bash %s && sudo loginctl enable-linger %s' % (USER, USER))
    bed.ssh(host, 'python3 -c "import ensurepip" 2>/dev/null || (sudo apt-get update -qq && '
                  'sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv) >/dev/null', timeout=600)
    for _attempt in range(60):
        if _ssh(bed, host, 'systemctl --user is-system-running', timeout=30).stdout.strip() in (b'running', b'degraded'):
            break
        time.sleep(1)
    wheels = _wheelhouse(tmp_path_factory.mktemp('wheels'))
    tar = subprocess.run(['tar', '-C', str(wheels), '-cf', '-', '.'], capture_output=True, check=True,
                         stdin=subprocess.DEVNULL).stdout
    assert _ssh(bed, host, 'mkdir -p wheels %s && tar -xf - -C wheels' % COPY, tar).returncode == 0
    assert _ssh(bed, host, 'tar -xf - -C %s' % COPY, _tree()).returncode == 0
    # the user's own things: a unit, a program on ~/.local/bin, a trusted repository
    mine = ('mkdir -p ~/.config/systemd/user ~/.local/bin && printf "[Service]\\nExecStart=/bin/true\\n" > ~/%s && '
            'printf "#!/bin/sh\\n" > ~/%s && git config --global --add safe.directory %s' % (OWN_UNIT, OWN_BIN, OWN_TRUST))
    assert _ssh(bed, host, mine).returncode == 0
    runs = []
    # FLEET_DEMO_USER_RUNS=2 runs it twice (the second on the first one's leftovers); once by default:
    # one run takes 10-20 min on 2 shared cores at load 12-20 (the provision's ~100 copy tasks dominate)
    for _run in range(int(os.environ.get('FLEET_DEMO_USER_RUNS', '1'))):
        started = time.monotonic()
        # PIP_*: the venv from the wheelhouse (no PyPI from the hosts); nothing else of this controller's environment
        proc = _ssh(bed, host, 'cd %s && PIP_NO_INDEX=1 PIP_FIND_LINKS=$HOME/wheels ./demo.sh' % COPY)
        out, err = proc.stdout.decode('utf-8', 'replace'), proc.stderr.decode('utf-8', 'replace')
        assert proc.returncode == 0, (out + err)[-8000:]
        runs.append({'out': out, 'err': err, 'seconds': time.monotonic() - started})
    print('\nmake demo, user case, on a bed host: %s s (the first run includes the venv)'
          % ', '.join('%.0f' % run['seconds'] for run in runs))

    def read(cmd):
        proc = _ssh(bed, host, cmd, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode('utf-8')
    state = '%s/build/demo/state/fleet-dispatch/*' % COPY
    return {'bed': bed, 'host': host, 'runs': runs, 'out': runs[-1]['out'], 'err': runs[-1]['err'],
            'status': json.loads(read('cat %s/status.json' % state)), 'plan': json.loads(read('cat %s/plan.json' % state)),
            'page': read('cat %s/status.html' % state), 'metrics': read('cat %s/fleet-dispatch.prom' % state),
            'vars': read('cat %s/build/demo/user/group_vars/all.yml' % COPY), 'read': read}


def test_the_demo_chose_the_user_case_by_itself(demo):
    for run in demo['runs']:
        assert 'this machine is the worker (localhost) and %s its one master' % USER in run['out'], run['out'][-3000:]
        assert 'mode:        apply on this machine (master %s, its own user manager)' % USER in run['out']


def test_the_demo_closes_the_merged_items_and_keeps_the_noop_and_the_retry_open(demo):
    demo_outcome.check_runs_closed_out(demo['status'], demo['host'])


def test_the_last_sweep_finds_the_master_dark_until_the_stated_reset_and_places_nothing(demo):
    # the reset the fake agent stated (FAKE_AGENT_RESET, in the demo's variables) is the one the master keeps
    stated = re.search(r'FAKE_AGENT_RESET: "(\S+)"', demo['vars']).group(1)
    demo_outcome.check_last_sweep_dark(demo['plan'], demo['out'], 'localhost', USER, stated)


def test_the_demo_printed_the_runs_as_they_closed_out(demo):
    out = demo['out']
    demo_outcome.check_printed_runs(out)


def test_the_demo_wrote_the_page_and_the_metrics_with_the_dark_master(demo):
    assert USER in demo['page'] and 'rate_limit' in demo['page'], demo['page'][:2000]
    assert 'fleet_dispatch_dark_masters{source="rate_limit"} 1' in demo['metrics'], demo['metrics']


def test_the_demo_removed_what_it_added_and_left_the_users_own_alone(demo):
    read = demo['read']
    units = read('systemctl --user list-units --all --no-legend --plain "task-*" "fleet-notify@*"; '
                 'systemctl --user list-unit-files --no-legend "fleet-notify@*" || true')
    assert 'task-' not in units and 'fleet-notify' not in units, units
    left = read('cd && for p in .config/fleet-dispatch .local/bin/fleet-runner .config/environment.d/50-fleet-path.conf '
                '.local/libexec/fleet-dispatch .local/lib/fleet-dispatch .local/state/fleet-dispatch fleet .ansible; do '
                '[ -e "$p" ] && echo "$p"; done; true')
    assert left.split() == [], left
    assert read('cd && ls %s %s' % (OWN_UNIT, OWN_BIN)).split() == [OWN_UNIT, OWN_BIN]
    trusted = read('git config --global --get-all safe.directory || true').split()
    assert trusted == [OWN_TRUST], trusted
    assert 'demo: stopping the demo' in demo['err'], demo['err'][-2000:]
