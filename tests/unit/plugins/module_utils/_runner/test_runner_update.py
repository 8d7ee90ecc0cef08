# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner's self-update (D11): pull, verify the OUTCOME, re-exec exactly once.

Real git repositories in a temporary directory; the exec is recorded in-process, and one test
lets the runner really ``execve`` itself from a clone of this collection.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import closeout as _closeout
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import cli
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _runner
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import update as _update
from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.boot import BOOTSTRAP
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of

REPO = pathlib.Path(__file__).resolve().parents[5]
FAKE_AGENT = REPO / 'tests' / 'fakes' / 'agent' / 'fake_agent.py'
T0 = _dt.datetime(2026, 11, 30, 12, 0, tzinfo=_dt.timezone.utc)
GIT_ENV = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@example.invalid', GIT_COMMITTER_NAME='t',
               GIT_COMMITTER_EMAIL='t@example.invalid', GIT_CONFIG_GLOBAL='/dev/null', GIT_CONFIG_NOSYSTEM='1')


def git(cwd, *args):
    return subprocess.run(['git', '-C', str(cwd)] + list(args), env=GIT_ENV, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def repos(tmp_path):
    """``work`` (where new versions are made), ``origin`` (bare), ``code`` (the runner's checkout)."""
    work, origin, code = tmp_path / 'work', tmp_path / 'origin.git', tmp_path / 'code'
    work.mkdir()
    git(work, 'init', '-q', '-b', 'main')
    (work / 'galaxy.yml').write_text('namespace: fleet\nname: dispatch\nversion: 0.1.0\n')
    git(work, 'add', '.')
    git(work, 'commit', '-q', '-m', 'v1')
    subprocess.run(['git', 'clone', '-q', '--bare', str(work), str(origin)], env=GIT_ENV, check=True)
    git(work, 'remote', 'add', 'origin', str(origin))
    subprocess.run(['git', 'clone', '-q', str(origin), str(code)], env=GIT_ENV, check=True)
    git(code, 'checkout', '-q', '--detach')

    def publish(version, message='change'):
        (work / 'galaxy.yml').write_text('namespace: fleet\nname: dispatch\nversion: %s\n' % version)
        (work / 'brief.txt').write_text(message)
        git(work, 'add', '.')
        git(work, 'commit', '-q', '-m', message)
        git(work, 'push', '-q', 'origin', 'main')
        return git(work, 'rev-parse', 'HEAD')
    return work, origin, code, publish


def tag(work, name, sha=None):
    """Tag ``sha`` (HEAD) as ``name`` on the origin, moving the tag when it exists (a release channel)."""
    git(work, 'tag', '-f', name, sha or 'HEAD')
    git(work, 'push', '-q', '-f', 'origin', 'refs/tags/%s' % name)


def boot_root(code):
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(str(code)))))


def test_a_moved_remote_is_checked_out_verified_and_re_executed_once(repos):
    work, _origin, code, publish = repos
    new = publish('0.2.0', 'brief correction')
    tag(work, 'stable')
    calls = []
    result = _runner.self_update(str(code), 'stable', expected_version='0.2.0', environ={'PATH': os.environ['PATH']},
                                 execv=lambda exe, args, env: calls.append((exe, args, env)), argv=['fleet-runner', '--item', '7'],
                                 started_at=T0, log=lambda line: None)
    assert result['status'] == 'updated' and result['to'] == new and git(code, 'rev-parse', 'HEAD') == new
    assert len(calls) == 1
    exe, args, env = calls[0]
    # isolated, the updated checkout's own root on sys.path, never the current directory (boot.py)
    assert args[1:] == ['-I', '-B', '-c', BOOTSTRAP, boot_root(code), _update.MODULE,
                        '--item', '7'] and exe == sys.executable
    assert env[_runner.REEXEC_ENV] == '1'                             # the guard against a loop
    assert env[_runner.STARTED_ENV] == '2026-11-30T12:00:00.000000Z'   # the start time survives the exec (D16)
    # the re-executed process: no fetch at all (an empty script fails on any command), version verified
    again = _runner.self_update(str(code), 'stable', runner=ScriptedRunner([]), expected_version='0.2.0', environ=env,
                                execv=lambda *a: calls.append(a))
    assert again['status'] == 'reexeced' and len(calls) == 1


def test_an_up_to_date_runner_does_not_re_exec(repos):
    _work, _origin, code, _publish = repos
    calls = []
    result = _runner.self_update(str(code), git(code, 'rev-parse', 'HEAD'), environ={}, execv=lambda *a: calls.append(a), log=lambda line: None)
    assert result['status'] == 'current' and calls == []


def test_a_version_other_than_the_expected_one_is_refused_naming_both(repos):
    _work, _origin, code, publish = repos
    new = publish('0.3.0')
    with pytest.raises(_runner.UpdateFailed, match=r'version 0\.3\.0 but the dispatcher expects 0\.2\.0'):
        _runner.self_update(str(code), new, expected_version='0.2.0', environ={}, execv=lambda *a: None, log=lambda line: None)


def test_an_unreachable_remote_is_an_update_failure_not_silence(repos, tmp_path):
    """D11 🔴: the sync used to end in `2>/dev/null || true` -- a clone that could not sync looked synced."""
    work, origin, code, _publish = repos
    tag(work, 'stable')
    origin.rename(tmp_path / 'gone.git')
    with pytest.raises(_runner.UpdateFailed, match='could not update itself'):
        _runner.self_update(str(code), 'stable', environ={}, execv=lambda *a: None, log=lambda line: None)


def _fetch_steps(code, fetch_head, tracking):
    r = ScriptedRunner()
    r.add_git(code, 'fetch', '--no-tags', '--upload-pack=git-upload-pack', 'origin', '+refs/tags/stable:refs/tags/stable', scan=True)
    r.add_git(code, 'rev-parse', '--verify', '--quiet', 'FETCH_HEAD^{commit}', out=fetch_head + '\n')
    r.add_git(code, 'rev-parse', '--verify', '--quiet', 'refs/tags/stable^{commit}', out=tracking + '\n')
    return r.script


def test_a_fetch_that_exits_0_against_a_stale_ref_is_refused(tmp_path):
    """D11 🔴: a pull can exit 0 against a stale remote ref -- verify the outcome, never the exit code."""
    code = str(tmp_path)
    (tmp_path / '.git').mkdir()
    runner = ScriptedRunner(_fetch_steps(code, 'a' * 40, 'b' * 40))
    with pytest.raises(_runner.UpdateFailed, match='verify the outcome'):
        _runner.self_update(code, 'stable', runner=runner, environ={}, execv=lambda *a: None, log=lambda line: None)


def test_a_checkout_that_exits_0_but_did_not_move_is_refused(tmp_path):
    code = str(tmp_path)
    (tmp_path / '.git').mkdir()
    runner = ScriptedRunner(_fetch_steps(code, 'a' * 40, 'a' * 40))
    runner.add_git(code, 'rev-parse', '--verify', '--quiet', 'HEAD^{commit}', out='c' * 40)
    runner.add_git(code, 'checkout', '--quiet', '--detach', 'a' * 40, scan=True)
    runner.add_git(code, 'rev-parse', '--verify', '--quiet', 'HEAD^{commit}', out='c' * 40)
    calls = []
    with pytest.raises(_runner.UpdateFailed, match='is at c+ after moving to the pinned tag stable = a+'):
        _runner.self_update(code, 'stable', runner=runner, environ={}, execv=lambda *a: calls.append(a), log=lambda line: None)
    assert calls == []


def test_main_posts_nothing_when_the_update_does_not_verify(repos, tmp_path):
    """D20: a stale runner is not a failed run -- no marker at all, a distinct exit code."""
    _work, _origin, code, publish = repos
    new = publish('9.9.9')
    board = LedgerBoard(path=str(tmp_path / 'l.sqlite3'), create=True)
    board.upsert_item(number=7, title='t', status='Ready')
    spec = tmp_path / 'board.json'
    spec.write_text(json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'l.sqlite3')}))
    env = {'PATH': os.environ['PATH'], _runner.EXPECTED_VERSION_ENV: '0.1.0', 'HOME': str(tmp_path)}
    code_ = cli.main(['fleet-runner', '--item', '7', '--board-spec', str(spec), '--code-dir', str(code), '--pin', new,
                      '--state-dir', str(tmp_path / 'state'), '--workdir', str(tmp_path), '--agent-command', '["true"]'], environ=env,
                     execv=lambda *a: None)
    assert code_ == _runner.EXIT_UPDATE_FAILED
    assert markers_of(board.get(7)) == []
    board.close()


def _main(tmp_path, code, *extra, env=None):
    board = LedgerBoard(path=str(tmp_path / 'l.sqlite3'), create=True)
    board.upsert_item(number=7, title='t', status='Ready')
    board.close()
    spec = tmp_path / 'board.json'
    spec.write_text(json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'l.sqlite3')}))
    environ = dict({'PATH': os.environ['PATH'], 'HOME': str(tmp_path)}, **(env or {}))
    pin = [] if '--pin' in extra else ['--pin', 'stable']
    words = ['fleet-runner', '--item', '7', '--board-spec', str(spec), '--code-dir', str(code)] + pin
    words += ['--state-dir', str(tmp_path / 'state'), '--workdir', str(tmp_path), '--agent-command', '["true"]'] + list(extra)
    return cli.main(words, environ=environ, execv=lambda *a: None, clock=lambda: T0)


def _capacity(tmp_path):
    path = tmp_path / 'state' / 'capacity.json'
    return json.loads(path.read_text()) if path.exists() else None


def test_an_update_that_does_not_verify_darkens_the_master_and_a_verified_one_clears_it(repos, tmp_path):
    """D11 + D8: a master that cannot run current code draws no work (it ran nothing, so it always
    had the most headroom and drew every item into the same refusal); a verified update heals it."""
    work, origin, code, _publish = repos
    tag(work, 'stable')
    origin.rename(origin.with_name('moved.git'))                      # the remote is gone: the fetch fails
    assert _main(tmp_path, code) == _runner.EXIT_UPDATE_FAILED
    state = _capacity(tmp_path)
    assert state['source'] == 'update_failed' and state['reset_at'] is None and state['unit'] == 'task-7'
    assert 'could not update itself' in state['message'] and state['written_at'] == '2026-11-30T12:00:00.000000Z'
    origin.with_name('moved.git').rename(origin)
    # an agent that fails is not a clean run (which would delete any state, D8): only the verified update cleared it
    assert _main(tmp_path, code, '--agent-command', '["false"]') == _closeout.EXIT['failure']
    assert _capacity(tmp_path) is None


def test_an_update_failure_leaves_a_revoked_master_revoked(repos, tmp_path):
    work, origin, code, _publish = repos
    tag(work, 'stable')
    (tmp_path / 'state').mkdir()
    revoked = '{"source": "revoked", "reset_at": null, "written_at": "2026-11-29T00:00:00Z", "message": "m", "unit": "task-1"}'
    (tmp_path / 'state' / 'capacity.json').write_text(revoked)
    origin.rename(origin.with_name('moved.git'))
    assert _main(tmp_path, code) == _runner.EXIT_UPDATE_FAILED
    assert _capacity(tmp_path)['source'] == 'revoked'
    origin.with_name('moved.git').rename(origin)
    # a verified update says nothing about the entitlement: only a clean run of the agent would (D8)
    assert _main(tmp_path, code, '--agent-command', '["false"]') == _closeout.EXIT['failure']
    assert _capacity(tmp_path)['source'] == 'revoked'


@pytest.mark.parametrize('content, cleared, left', [
    ('{"source": "update_failed", "reset_at": null, "written_at": "2026-11-30T11:00:00Z", "message": "m", "unit": "task-1"}',
     True, None),
    ('{"source": "rate_limit", "reset_at": null, "written_at": "2026-11-30T11:00:00Z", "message": "m", "unit": "task-1"}',
     False, 'rate_limit'),
    (None, False, None),
])
def test_installed_clears_only_an_update_failure(tmp_path, capsys, content, cleared, left):
    """``fleet-runner --installed``: what fleet.dispatch.worker runs after it verified the install."""
    if content is not None:
        (tmp_path / 'state').mkdir()
        (tmp_path / 'state' / 'capacity.json').write_text(content)
    assert cli.main(['fleet-runner', '--installed', '--state-dir', str(tmp_path / 'state')],
                    environ={'HOME': str(tmp_path)}, clock=lambda: T0) == 0
    assert json.loads(capsys.readouterr().out) == {'cleared': cleared, 'source': left}
    assert (_capacity(tmp_path) or {}).get('source') == left


def test_the_runner_really_re_executes_itself_once_from_its_updated_checkout(tmp_path):
    """End to end: a clone of this collection is the runner's code; a new commit on its origin is
    fetched, checked out, and the fresh code runs the item after exactly one execve (D11)."""
    head = git(REPO, 'rev-parse', 'HEAD')
    origin = tmp_path / 'origin.git'
    subprocess.run(['git', 'clone', '-q', '--bare', '--no-local', str(REPO), str(origin)], env=GIT_ENV, check=True)
    root = tmp_path / 'root'
    code = root / 'ansible_collections' / 'fleet' / 'dispatch'
    subprocess.run(['git', 'clone', '-q', '--no-local', str(origin), str(code)], env=GIT_ENV, check=True)
    git(code, 'checkout', '-q', '--detach', head)
    # publish a new commit on the origin's main (the "fleet's latest doctrine")
    side = tmp_path / 'side'
    subprocess.run(['git', 'clone', '-q', '--no-local', str(origin), str(side)], env=GIT_ENV, check=True)
    (side / 'NEWS-from-origin.txt').write_text('new doctrine\n')
    git(side, 'add', '.')
    git(side, 'commit', '-q', '-m', 'new doctrine')
    # forced: the throwaway origin's main may not be an ancestor of the checkout's branch (a worktree's)
    git(side, 'push', '-q', 'origin', '+HEAD:refs/heads/main')
    new = git(side, 'rev-parse', 'HEAD')
    assert git(code, 'rev-parse', 'HEAD') != new

    board = LedgerBoard(path=str(tmp_path / 'l.sqlite3'), create=True)
    board.upsert_item(number=7, title='t', status='Ready')
    spec = tmp_path / 'board.json'
    spec.write_text(json.dumps({'kind': 'ledger', 'path': str(tmp_path / 'l.sqlite3')}))
    env = dict(os.environ, PYTHONPATH=str(root), FAKE_AGENT_MODE='claim', FAKE_AGENT_LOG=str(tmp_path / 'agent.log'),
               HOME=str(tmp_path), GIT_CONFIG_GLOBAL='/dev/null')
    env.pop(_runner.REEXEC_ENV, None)
    proc = subprocess.run([sys.executable, '-m', _update.MODULE, '--item', '7', '--board-spec', str(spec), '--code-dir', str(code),
                           '--pin', new, '--state-dir', str(tmp_path / 'state'), '--workdir', str(tmp_path),
                           '--agent-command', json.dumps([sys.executable, str(FAKE_AGENT)])],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 10, proc.stderr
    assert git(code, 'rev-parse', 'HEAD') == new
    assert proc.stderr.count('re-executing once') == 1
    entry = json.loads((tmp_path / 'agent.log').read_text().splitlines()[-1])
    assert entry['env']['FLEET_RUN_STARTED_AT']
    markers = markers_of(board.get(7))
    assert [m.kind for m in markers] == ['start', 'noop']
    # the start time recorded before the update is the run's start (carried across the exec)
    assert markers[0].fields['started_at'] == entry['env']['FLEET_RUN_STARTED_AT']
    board.close()


# --- the pin: a commit or a tag, never a branch head -----------------------------------------------


def test_a_branch_head_is_never_followed(repos, tmp_path, capsys):
    """A self-update that trusted origin/main ran whatever was pushed there last, with the runner's secrets. Without a
    pin nothing is fetched: the installed code runs (D5) and the error names the fix."""
    _work, _origin, code, publish = repos
    before = git(code, 'rev-parse', 'HEAD')
    publish('0.1.0', 'pushed by anyone who can push to main')
    assert _main(tmp_path, code, '--pin', '') == _closeout.EXIT['noop']
    assert git(code, 'rev-parse', 'HEAD') == before
    assert 'worker_runner_pin' in capsys.readouterr().err


def test_a_branch_name_as_a_pin_is_a_tag_and_no_such_tag_is_an_update_failure(repos):
    _work, _origin, code, publish = repos
    before = git(code, 'rev-parse', 'HEAD')
    publish('0.2.0')
    with pytest.raises(_runner.UpdateFailed, match='pinned tag main'):
        _runner.self_update(str(code), 'main', environ={}, execv=lambda *a: None, log=lambda line: None)
    assert git(code, 'rev-parse', 'HEAD') == before


def test_a_commit_pin_is_checked_out_whatever_the_branch_moved_to(repos):
    _work, _origin, code, publish = repos
    pinned = publish('0.2.0', 'reviewed')
    publish('0.3.0', 'pushed later')
    calls = []
    result = _runner.self_update(str(code), pinned.upper(), expected_version='0.2.0', environ={},
                                 execv=lambda *a: calls.append(a), log=lambda line: None)
    assert result['status'] == 'updated' and git(code, 'rev-parse', 'HEAD') == pinned and len(calls) == 1
    again = _runner.self_update(str(code), pinned, environ={}, execv=lambda *a: calls.append(a), log=lambda line: None)
    assert again['status'] == 'current' and len(calls) == 1


def test_a_tag_its_maintainers_move_is_followed(repos):
    work, _origin, code, publish = repos
    first = publish('0.2.0')
    tag(work, 'stable', first)
    assert _runner.self_update(str(code), 'stable', environ={}, execv=lambda *a: None, log=lambda line: None)['to'] == first
    publish('0.3.0', 'on main, not released')
    second = publish('0.4.0', 'released')
    tag(work, 'stable', second)
    assert _runner.self_update(str(code), 'stable', environ={}, execv=lambda *a: None, log=lambda line: None)['to'] == second
    assert git(code, 'rev-parse', 'HEAD') == second


@pytest.mark.parametrize('pin', ['-x', 'refs/heads/main', 'a..b', 'v1 2', 'HEAD@{1}', 'v1.'])
def test_a_pin_that_is_no_commit_nor_tag_name_is_refused_before_git_runs(tmp_path, pin):
    with pytest.raises(_runner.UpdateFailed, match='neither a full commit name'):
        _runner.self_update(str(tmp_path), pin, runner=ScriptedRunner([]), environ={}, execv=lambda *a: None, log=lambda line: None)
