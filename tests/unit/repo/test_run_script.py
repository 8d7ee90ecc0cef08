# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/run itself (issue 9): a phase that would test nothing fails, and a missing command stops the
bootstrap naming it and the fix. Runs the real script on throwaway checkouts."""
from __future__ import annotations

import os
import re
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
VENV = pathlib.Path(sys.executable).parent.parent


def _checkout(tmp_path, files):
    """A git checkout holding tests/run, the bootstrap and ``files`` (rel -> text), all tracked."""
    root = tmp_path / 'repo'
    (root / 'tests').mkdir(parents=True)
    for rel in ('tests/run', 'tests/bootstrap-venv', 'requirements-dev.txt'):
        shutil.copy2(str(REPO / rel), str(root / rel))
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(['git', 'init', '-q'], cwd=str(root), check=True)
    subprocess.run(['git', 'add', '-A'], cwd=str(root), check=True)
    return root


def _run(root, *phases, path=None, **extra):
    env = dict(os.environ, FLEET_NO_INSTALL='1', FLEET_VENV=str(VENV), FLEET_BUILD_DIR=str(root.parent / 'build'), **extra)
    env.pop('CI', None)
    env.pop('FLEET_FAST', None)   # `make check` exports it; the script under test decides it from its own arguments
    if path is not None:
        env['PATH'] = path
    return subprocess.run(['bash', str(root / 'tests' / 'run')] + list(phases), cwd=str(root), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)


@pytest.mark.skipif(not (VENV / 'bin' / 'python').exists(), reason='needs the project venv')
def test_a_sanity_copy_without_the_collection_fails_the_phase(tmp_path):
    root = _checkout(tmp_path, {'galaxy.yml': 'namespace: fleet\nname: dispatch\nversion: 0.1.0\n'})
    done = _run(root, 'sanity')
    assert done.returncode == 1, done.stdout
    assert 'phase sanity: FAILED' in done.stdout
    assert 'plugins/modules/*.py required: nothing worth testing' in done.stdout


@pytest.mark.skipif(not (VENV / 'bin' / 'python').exists(), reason='needs the project venv')
def test_a_build_with_no_galaxy_yml_fails_before_any_documentation(tmp_path):
    root = _checkout(tmp_path, {'plugins/modules/m.py': '# a module\n'})
    done = _run(root, 'build')
    assert done.returncode == 1, done.stdout
    assert 'phase build: FAILED' in done.stdout
    assert 'ansible-doc' not in done.stdout


def test_a_missing_command_stops_the_bootstrap_naming_it_and_the_fix(tmp_path):
    farm = tmp_path / 'bin'
    farm.mkdir()
    for d in os.environ['PATH'].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            src = os.path.join(d, name)
            if name != 'tar' and not (farm / name).exists() and os.access(src, os.X_OK) and not os.path.isdir(src):
                (farm / name).symlink_to(src)
    root = _checkout(tmp_path, {})
    done = _run(root, 'build', path=str(farm))
    assert done.returncode == 1, done.stdout
    assert "bootstrap: 'tar' is not on this machine (needed by: all); fix: apt-get install tar" in done.stdout
    assert 'nothing was tested' in done.stdout
    assert '=== build ===' not in done.stdout


def test_an_unknown_phase_is_refused_before_the_bootstrap(tmp_path):
    root = _checkout(tmp_path, {})
    done = _run(root, 'sanityy')
    assert done.returncode == 2
    assert "no phase 'sanityy'" in done.stdout and 'bootstrap' not in done.stdout


@pytest.mark.skipif(not (VENV / 'bin' / 'python').exists(), reason='needs the project venv')
def test_a_failed_pytest_phase_names_its_failed_tests_on_its_line(tmp_path):
    """The CI record keeps only the phase lines: 'integration: 1 failed' alone told nobody which test failed."""
    root = _checkout(tmp_path, {'tests/unit/test_a.py': 'def test_ok():\n    pass\n\n\ndef test_fails():\n    assert 1 == 2\n',
                                'tests/corpus/test_c.py': 'def test_c():\n    pass\n'})
    done = _run(root, 'unit')
    assert done.returncode == 1, done.stdout
    line = [x for x in done.stdout.splitlines() if x.startswith('phase unit: FAILED')]
    assert line and 'unit: 1 failed, 2 passed, failed: tests/unit/test_a.py::test_fails)' in line[0], done.stdout[-3000:]


@pytest.mark.skipif(not (VENV / 'bin' / 'python').exists(), reason='needs the project venv')
def test_lanes_run_every_phase_and_a_failed_phase_prints_the_end_of_its_log(tmp_path):
    """`make test` runs its phases in lanes side by side, each phase's output in its own log: the record
    must still carry every phase's line, in plan order, the end of a failed phase's log and the budget."""
    root = _checkout(tmp_path, {'tests/unit/test_a.py': 'def test_ok():\n    pass\n',
                                'tests/corpus/test_c.py': 'def test_c():\n    pass\n',
                                'plugins/modules/m.py': '# a module\n'})
    done = _run(root, FLEET_LANES='build;unit', FLEET_OLDEST_PYTHON='none')
    assert done.returncode == 1, done.stdout[-3000:]
    assert 'lanes: [build] [unit]' in done.stdout
    summary = done.stdout[done.stdout.rindex('\n\nphase build: '):]
    lines = [x for x in summary.splitlines() if x.startswith('phase ')]
    assert [x.split(':')[0] for x in lines] == ['phase build', 'phase unit'], summary
    assert lines[0].startswith('phase build: FAILED') and lines[1].startswith('phase unit: ok'), summary
    assert 'unit: 2 passed' in lines[1], summary
    assert '=== the last 150 lines of ' in done.stdout and 'phase-build.out ===' in done.stdout
    assert 'nothing was built' in done.stdout or 'galaxy' in done.stdout.split('phase-build.out ===', 1)[1], done.stdout[-3000:]
    assert 'the budget of 2700 s (45 min on 2 cores)' in done.stdout and 'failed: build' in done.stdout


@pytest.mark.skipif(not (VENV / 'bin' / 'python').exists(), reason='needs the project venv')
def test_a_phase_over_its_share_says_so_on_its_line(tmp_path):
    """The budget guard: a phase that grows past its share of the 45 minutes is seen on its line."""
    root = _checkout(tmp_path, {'tests/unit/test_a.py': 'import time\n\n\ndef test_ok():\n    time.sleep(1.1)\n',
                                'tests/corpus/test_c.py': 'def test_c():\n    pass\n'})
    done = _run(root, 'unit', FLEET_SHARES='unit=0', FLEET_OLDEST_PYTHON='none')
    line = [x for x in done.stdout.splitlines() if x.startswith('phase unit: ')]
    assert done.returncode == 0 and line, done.stdout[-3000:]
    assert 'OVER its 0 s share' in line[-1], line
    # its CPU seconds: pytest's own, counted from the shell's children (a figure of 0.0 counted nothing)
    cpu = re.search(r'cpu ([0-9]+\.[0-9]) s', line[-1])
    assert cpu and float(cpu.group(1)) > 0, line
    done = _run(root, 'unit', FLEET_OLDEST_PYTHON='none')
    line = [x for x in done.stdout.splitlines() if x.startswith('phase unit: ')]
    assert done.returncode == 0 and line and 'OVER' not in line[-1], line
