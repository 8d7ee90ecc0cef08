# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``make demo`` on this kind of machine (root with podman, no user manager): the test-bed case, end to end.

``demo.sh`` runs as a newcomer's ``make demo`` would (``FLEET_DEMO_CASE=bed`` pins the case the
machine would pick anyway; its own host name and address, so a demo by hand does not collide):
it boots one bed host, provisions the ledger and the worker with the roles, sweeps in apply
mode, waits for the runs, darkens the master with a rate limit by hand, sweeps again and removes
the host. The assertions read what it wrote (status.json, plan.json, the page and the metrics)
and what it printed: the importer done and closed by the fake agent's merge, the no-op, the retry in
its wait, the dark master with the reset the agent stated, the held candidates, the host gone.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import demo_outcome  # noqa: E402  (what every demo case must end with)

pytestmark = pytest.mark.testbed

REPO = pathlib.Path(__file__).resolve().parents[2]
HOST, IP = 'fleet-demo-test', '10.88.240.20'     # the demo's block in the IP plan (tests/testbed/README.md)
# A bound only, never a speed claim.
TIMEOUT = 1800


@pytest.fixture(scope='module')
def demo(tmp_path_factory, ready_image):
    work = tmp_path_factory.mktemp('demo')
    # the ready host: PostgreSQL and psycopg come with it instead of an apt install on every run
    env = dict(os.environ, FLEET_DEMO_DIR=str(work), FLEET_DEMO_CASE='bed', FLEET_DEMO_HOST=HOST, FLEET_DEMO_IP=IP,
               FLEET_TESTBED_IMAGE=ready_image,
               FLEET_VENV=os.environ.get('FLEET_VENV') or str(pathlib.Path(sys.executable).parents[1]))
    for name in ('ANSIBLE_COLLECTIONS_PATH', 'ANSIBLE_COLLECTIONS_SCAN_SYS_PATH', 'ANSIBLE_CONFIG', 'ANSIBLE_INVENTORY',
                 'ANSIBLE_ROLES_PATH'):
        env.pop(name, None)
    proc = subprocess.run([str(REPO / 'demo.sh')], cwd=str(REPO), env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    (board_dir,) = (work / 'state' / 'fleet-dispatch').glob('*/plan.json')
    board_dir = board_dir.parent
    return {'work': work, 'out': proc.stdout, 'err': proc.stderr, 'dir': board_dir,
            'status': json.loads((board_dir / 'status.json').read_text()),
            'plan': json.loads((board_dir / 'plan.json').read_text())}


def test_the_demo_closes_the_merged_items_and_keeps_the_noop_and_the_retry_open(demo):
    demo_outcome.check_runs_closed_out(demo['status'], HOST)


def test_the_last_sweep_finds_the_master_dark_until_the_stated_reset_and_places_nothing(demo):
    # the reset the fake agent stated (FAKE_AGENT_RESET, in the demo's variables) is the one the master keeps
    stated = re.search(r'FAKE_AGENT_RESET: "(\S+)"', (demo['work'] / 'bed' / 'group_vars' / 'all.yml').read_text()).group(1)
    demo_outcome.check_last_sweep_dark(demo['plan'], demo['out'], HOST, 'fleet1', stated)


def test_the_demo_printed_the_runs_as_they_closed_out(demo):
    out = demo['out']
    demo_outcome.check_printed_runs(out)
    assert 'mode:        apply on the test-bed host %s' % HOST in out


def test_the_demo_wrote_the_page_and_the_metrics_with_the_dark_master(demo):
    page = (demo['dir'] / 'status.html').read_text()
    assert 'fleet1' in page and 'rate_limit' in page, page[:2000]
    metrics = (demo['dir'] / 'fleet-dispatch.prom').read_text()
    assert 'fleet_dispatch_dark_masters{source="rate_limit"} 1' in metrics, metrics


def test_the_demo_removed_its_host(demo):
    listed = subprocess.run([str(REPO / 'tests' / 'testbed' / 'bed'), 'list'], capture_output=True, text=True, check=True,
                            stdin=subprocess.DEVNULL)
    assert HOST not in listed.stdout, listed.stdout
