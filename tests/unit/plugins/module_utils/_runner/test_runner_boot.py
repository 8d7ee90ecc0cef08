# -*- coding: utf-8 -*-
"""The runner's code never imports from a directory the run can write (boot.py): the wrapper the
worker role installs runs Python isolated from /, and a json.py in the workspace does not run."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import jinja2
import pytest
import yaml

from ansible_collections.fleet.dispatch.plugins.module_utils._runner import boot

COLLECTIONS_ROOT = pathlib.Path(os.path.abspath(boot.__file__)).parents[6]
ROLE = pathlib.Path(os.path.abspath(boot.__file__)).parents[3] / 'roles' / 'worker'


def _wrapper(tmp_path, python=sys.executable):
    """The role's template, rendered as the role renders it (its bootstrap variable from tasks/runner.yml)."""
    tasks = yaml.safe_load((ROLE / 'tasks' / 'runner.yml').read_text())
    task = next(t for t in tasks if 'fleet-runner wrapper' in t.get('name', ''))
    bootstrap = task['vars']['_worker_runner_bootstrap'].strip()
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)   # Ansible's template default
    env.filters['comment'] = lambda text: '# ' + text
    env.filters['bool'] = bool
    text = env.from_string(
        (ROLE / 'templates' / 'runner' / 'fleet-runner.sh.j2').read_text()).render(
        ansible_managed='managed', _worker_runner_master={'name': 'm'}, _worker_runner_path=os.environ['PATH'],
        worker_runner_python=python, _worker_runner_bootstrap=bootstrap, _worker_runner_root=str(COLLECTIONS_ROOT),
        _worker_runner_updates=False, _worker_runner_home=str(tmp_path), worker_config_subdir='cfg', worker_runner_branch='main',
        _worker_runner_code='')
    path = tmp_path / 'fleet-runner'
    path.write_text(text)
    path.chmod(0o755)
    return path, bootstrap


def test_the_wrapper_spells_the_bootstrap_of_boot_py(tmp_path):
    _path, bootstrap = _wrapper(tmp_path)
    assert bootstrap == boot.BOOTSTRAP


def test_a_json_py_in_the_workspace_is_not_imported_by_the_runner(tmp_path):
    """The hostile-repository case: the workspace holds json.py (and a PYTHONPATH/PYTHONSTARTUP would be
    honoured too under plain -m); the wrapper's runner imports neither and still answers."""
    wrapper, _bootstrap = _wrapper(tmp_path)
    ws = tmp_path / 'ws'
    ws.mkdir()
    mark = tmp_path / 'imported'
    for name in ('json', 'argparse', 'socket'):
        (ws / ('%s.py' % name)).write_text('open(%r, "w").write("%s")\nraise SystemExit(99)\n' % (str(mark), name))
    env = dict(os.environ, PYTHONPATH=str(ws), PYTHONSTARTUP=str(ws / 'json.py'))
    proc = subprocess.run([str(wrapper), '--version'], cwd=str(ws), env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert 'version' in json.loads(proc.stdout)
    assert not mark.exists(), mark.read_text()


def test_plain_dash_m_from_the_workspace_does_import_it(tmp_path):
    """The control: what the wrapper did before (python3 -m from the workspace) runs the planted json.py."""
    ws = tmp_path / 'ws'
    ws.mkdir()
    mark = tmp_path / 'imported'
    (ws / 'json.py').write_text('open(%r, "w").write("json")\n' % str(mark))
    subprocess.run([sys.executable, '-m', boot.RUNNER_MODULE, '--version'], cwd=str(ws), timeout=60, check=False,
                   env=dict(os.environ, PYTHONPATH=str(COLLECTIONS_ROOT)), capture_output=True)
    assert mark.exists()


def test_the_wrapper_names_the_workspace_and_leaves_it(tmp_path):
    """--workdir is the directory the unit started the wrapper in; the runner itself runs in /."""
    wrapper, _bootstrap = _wrapper(tmp_path)
    text = wrapper.read_text()
    assert 'workdir=$PWD\ncd / ' in text and '--workdir "$workdir" "$@"' in text
    assert ' -m ' not in text and 'PYTHONPATH' not in text


def test_python_argv_is_isolated():
    argv = boot.python_argv('/usr/bin/python3', '/r', boot.RUNNER_MODULE, ['--item', '7'])
    assert argv[:5] == ['/usr/bin/python3', '-I', '-B', '-c', boot.BOOTSTRAP]
    assert argv[5:] == ['/r', boot.RUNNER_MODULE, '--item', '7']


def test_a_runner_config_others_can_write_is_refused(tmp_path):
    """runner.json names the agent's command and board.json the board's URL: a file someone else could
    have written is refused before anything runs."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.config import load_json_file
    conf = tmp_path / 'runner.json'
    conf.write_text('{"agent_command": ["true"]}')
    conf.chmod(0o644)
    assert load_json_file(str(conf), 'the runner config') == {'agent_command': ['true']}
    conf.chmod(0o664)
    with pytest.raises(ValueError, match='lets the group or others write it'):
        load_json_file(str(conf), 'the runner config')


def test_a_subcommands_relative_path_means_the_directory_the_wrapper_was_called_from(tmp_path, monkeypatch):
    """The wrapper starts Python from / and names where it was called with --workdir: check-board's
    --board-spec x.json is that directory's file (the worker role's molecule check runs it from $HOME)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner import cli
    monkeypatch.chdir('/')
    cli._back_to_workdir(['--config', 'c.json', '--workdir', str(tmp_path), 'check-board', '--board-spec', 'x.json'])
    assert os.getcwd() == str(tmp_path)
