# -*- coding: utf-8 -*-
"""The git worktree adapter (D10, D11): exact argv through a scripted runner, and real git on a
temporary origin/clone pair for the behaviours only git itself can prove (symlinked clone,
dirty tree kept, two items never sharing a tree)."""
from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import SubprocessRunner
from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.git import (
    Git, GitError, Workspace, config_overrides, hardened_argv, parse_config_list, parse_worktree_list, physical)
from fakes.git_origin import git as _git, make_origin

SHA_A = 'a' * 40
SHA_B = 'b' * 40


# -- pure parsing -------------------------------------------------------------------------

def test_parse_worktree_list_porcelain():
    text = ('worktree /srv/clone\nHEAD %s\nbranch refs/heads/main\n\n'
            'worktree /srv/ws/task-1\nHEAD %s\ndetached\n\n'
            'worktree /srv/ws/gone\nHEAD %s\ndetached\nprunable gitdir file points to non-existent location\n' % (SHA_A, SHA_B, SHA_B))
    trees = parse_worktree_list(text)
    assert [t['path'] for t in trees] == ['/srv/clone', '/srv/ws/task-1', '/srv/ws/gone']
    assert trees[0]['branch'] == 'refs/heads/main' and not trees[0]['detached']
    assert trees[1]['detached'] and trees[1]['head'] == SHA_B
    assert trees[2]['prunable']


# -- exact argv (scripted) ----------------------------------------------------------------

def test_fetch_uses_explicit_refspec_and_verifies_outcome():
    r = ScriptedRunner()
    r.add_git('/c', 'fetch', '--no-tags', '--upload-pack=git-upload-pack', 'origin', '+refs/heads/main:refs/remotes/origin/main', scan=True)
    r.add_git('/c', 'rev-parse', '--verify', '--quiet', 'FETCH_HEAD^{commit}', out=SHA_A + '\n')
    r.add_git('/c', 'rev-parse', '--verify', '--quiet', 'refs/remotes/origin/main^{commit}', out=SHA_A + '\n')
    assert Git(r).fetch('/c', 'main') == SHA_A
    assert r.remaining() == []


def test_fetch_exit_zero_against_stale_ref_is_an_error():
    """D11 🔴: a fetch can exit 0 and leave the tracking ref stale; the outcome is what counts."""
    r = ScriptedRunner()
    r.add_git('/c', 'fetch', '--no-tags', '--upload-pack=git-upload-pack', 'origin', '+refs/heads/main:refs/remotes/origin/main', scan=True)
    r.add_git('/c', 'rev-parse', '--verify', '--quiet', 'FETCH_HEAD^{commit}', out=SHA_B + '\n')
    r.add_git('/c', 'rev-parse', '--verify', '--quiet', 'refs/remotes/origin/main^{commit}', out=SHA_A + '\n')
    with pytest.raises(GitError, match='verify the outcome'):
        Git(r).fetch('/c', 'main')


def test_fetch_failure_keeps_gits_reason():
    """D11 🔴: never discard the reason (the old `2>/dev/null || true`)."""
    r = ScriptedRunner()
    r.add_git('/c', 'fetch', '--no-tags', '--upload-pack=git-upload-pack', 'origin', '+refs/heads/main:refs/remotes/origin/main',
              scan=True, rc=128, err="fatal: couldn't find remote ref refs/heads/main\n")
    with pytest.raises(GitError, match="couldn't find remote ref"):
        Git(r).fetch('/c', 'main')


def test_worktree_add_is_detached():
    r = ScriptedRunner().add_git('/c', 'worktree', 'add', '--detach', '/w/task-1', SHA_A, scan=True)
    Git(r).worktree_add('/c', '/w/task-1', SHA_A)
    assert r.remaining() == []


def test_unverified_new_workspace_is_taken_back_and_refused(tmp_path):
    """D10 detail 3: a workspace whose git does not work is never handed over."""
    clone = tmp_path / 'clone'
    clone.mkdir()
    ws = str(tmp_path / 'ws' / 'task-1')
    c = str(clone)
    r = ScriptedRunner()
    r.add_git(c, 'worktree', 'list', '--porcelain', out='worktree %s\nHEAD %s\nbranch refs/heads/main\n' % (c, SHA_A))
    r.add_git(c, 'fetch', '--no-tags', '--upload-pack=git-upload-pack', 'origin', '+refs/heads/main:refs/remotes/origin/main', scan=True)
    r.add_git(c, 'rev-parse', '--verify', '--quiet', 'FETCH_HEAD^{commit}', out=SHA_A)
    r.add_git(c, 'rev-parse', '--verify', '--quiet', 'refs/remotes/origin/main^{commit}', out=SHA_A)
    r.add_git(c, 'worktree', 'add', '--detach', ws, SHA_A, scan=True)
    r.add_git(ws, 'rev-parse', '--show-toplevel', rc=128, err='fatal: not a git repository: /gone/.git/worktrees/task-1\n')
    r.add_git(c, 'worktree', 'remove', '--force', ws, scan=True)
    with pytest.raises(GitError, match='does not verify.*broken worktree pointer'):
        Workspace(Git(r), c, ws).present()
    assert r.remaining() == []


# -- real git -----------------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A bare origin with one commit on main, a clone of it, and a symlink to the clone."""
    origin, seed = make_origin(tmp_path, monkeypatch)
    real = tmp_path / 'disk' / 'clones' / 'proj'
    real.parent.mkdir(parents=True)
    _git('clone', '-q', str(origin), str(real))
    link = tmp_path / 'fleet-clones'
    link.symlink_to(real.parent)
    ws_real = tmp_path / 'disk' / 'workspaces'
    ws_real.mkdir()
    ws_link = tmp_path / 'fleet-workspaces'
    ws_link.symlink_to(ws_real)
    return {'origin': origin, 'seed': seed, 'clone': real, 'clone_link': link / 'proj', 'ws_link': ws_link, 'ws_real': ws_real}


def _push_commit(repo, text):
    (repo['seed'] / 'README').write_text(text)
    _git('commit', '-q', '-am', text, cwd=str(repo['seed']))
    _git('push', '-q', 'origin', 'HEAD:main', cwd=str(repo['seed']))
    return _git('rev-parse', 'HEAD', cwd=str(repo['seed']))


def test_symlinked_clone_gives_a_working_detached_worktree_at_the_physical_path(repo):
    """D10 🔴 detail 2: clone and workspace root given through symlinks."""
    tip = _push_commit(repo, 'two\n')
    ws = Workspace(Git(SubprocessRunner()), str(repo['clone_link']), str(repo['ws_link'] / 'task-1'))
    res = ws.present()
    assert res['created'] and res['sha'] == tip and res['fresh']
    assert res['path'] == str(repo['ws_real'] / 'task-1') == physical(res['path'])
    assert res['clone'] == str(repo['clone'])
    # git works inside, HEAD is detached at the fetched tip
    assert _git('rev-parse', 'HEAD', cwd=res['path']) == tip
    assert subprocess.run(['git', 'symbolic-ref', '-q', 'HEAD'], cwd=res['path'], check=False).returncode == 1
    _git('status', cwd=res['path'])
    # the pointer names paths that exist (the D10 broken-pointer failure)
    pointer = open(os.path.join(res['path'], '.git')).read().split('gitdir:', 1)[1].strip()
    assert os.path.isdir(pointer) and pointer == physical(pointer)
    back = open(os.path.join(pointer, 'gitdir')).read().strip()
    assert os.path.exists(back)


def test_present_is_idempotent_and_never_moves_an_existing_tree(repo):
    """An existing workspace may be a live run's checkout: report, do not reset (D10 reflog story)."""
    g = Git(SubprocessRunner())
    first = Workspace(g, str(repo['clone']), str(repo['ws_real'] / 'task-1')).present()
    (repo['ws_real'] / 'task-1' / 'work-in-progress').write_text('edit\n')
    new_tip = _push_commit(repo, 'three\n')
    _git('fetch', '-q', 'origin', cwd=str(repo['clone']))
    again = Workspace(g, str(repo['clone']), str(repo['ws_real'] / 'task-1')).present()
    assert again['existing'] and not again['created']
    assert again['sha'] == first['sha'] != new_tip
    assert again['fresh'] is False
    assert (repo['ws_real'] / 'task-1' / 'work-in-progress').exists()


def test_a_new_run_gets_a_fresh_tree_unless_the_earlier_one_holds_work(repo):
    """D10: each run detached at a fresh tip. The earlier run's clean tree of the item gives way (a retry, or the
    run that continues a pull request at its head); a tree holding work is handed over as it is."""
    g = Git(SubprocessRunner())
    path = str(repo['ws_real'] / 'task-1')
    first = Workspace(g, str(repo['clone']), path).for_run()
    new_tip = _push_commit(repo, 'three\n')
    again = Workspace(g, str(repo['clone']), path).for_run()
    assert again['created'] and again.get('replaced') and again['sha'] == new_tip != first['sha']
    assert _git('rev-parse', 'HEAD', cwd=path) == new_tip
    # a pull request's head branch: the next run's tree is detached there
    _git('push', '-q', 'origin', 'HEAD:refs/heads/fleet/1', cwd=str(repo['seed']))
    head = _push_commit(repo, 'four\n')
    _git('push', '-q', 'origin', '%s:refs/heads/fleet/1' % head, cwd=str(repo['seed']))
    on_pull = Workspace(g, str(repo['clone']), path, branch='fleet/1').for_run()
    assert on_pull['sha'] == head == _git('rev-parse', 'HEAD', cwd=path)
    # the item's unit still live (the launcher says replace=False): its tree is never taken from under it
    _push_commit(repo, 'live\n')
    live = Workspace(g, str(repo['clone']), path).for_run(replace=False)
    assert live['existing'] and not live['created'] and live['sha'] == head
    # work in the tree: kept, not moved
    (repo['ws_real'] / 'task-1' / 'work-in-progress').write_text('edit\n')
    _push_commit(repo, 'five\n')
    kept = Workspace(g, str(repo['clone']), path).for_run()
    assert kept['existing'] and not kept['created'] and kept['sha'] == head and kept['fresh'] is False
    assert (repo['ws_real'] / 'task-1' / 'work-in-progress').exists()


def test_two_items_on_one_clone_never_share_a_tree(repo):
    """D10 🔴: the second run's pre-flight once ran inside the first run's live checkout."""
    g = Git(SubprocessRunner())
    a = Workspace(g, str(repo['clone']), str(repo['ws_real'] / 'task-1')).present()
    b = Workspace(g, str(repo['clone']), str(repo['ws_real'] / 'task-2')).present()
    assert a['path'] != b['path']
    assert _git('rev-parse', '--show-toplevel', cwd=a['path']) != _git('rev-parse', '--show-toplevel', cwd=b['path'])
    (repo['ws_real'] / 'task-2' / 'README').write_text('changed by run 2\n')
    assert _git('status', '--porcelain', cwd=a['path']) == ''
    trees = g.worktrees(str(repo['clone']))
    assert sum(1 for t in trees if t['detached']) == 2


def test_check_mode_creates_nothing(repo):
    ws = Workspace(Git(SubprocessRunner()), str(repo['clone']), str(repo['ws_real'] / 'task-1'))
    res = ws.present(check=True)
    assert res['created'] and not (repo['ws_real'] / 'task-1').exists()
    assert len(Git(SubprocessRunner()).worktrees(str(repo['clone']))) == 1


def test_a_foreign_directory_is_never_overwritten(repo):
    (repo['ws_real'] / 'task-1').mkdir()
    (repo['ws_real'] / 'task-1' / 'precious').write_text('x')
    with pytest.raises(GitError, match='not a worktree'):
        Workspace(Git(SubprocessRunner()), str(repo['clone']), str(repo['ws_real'] / 'task-1')).present()
    assert (repo['ws_real'] / 'task-1' / 'precious').exists()


@pytest.mark.parametrize('dirt, kept', [
    ('clean', False),
    ('modified', True),
    ('untracked', True),
    ('unpushed-commit', True),
])
def test_release_removes_clean_keeps_work(repo, dirt, kept):
    """D10: on release keep, do not wipe — the inverse of the silent wipe."""
    g = Git(SubprocessRunner())
    path = str(repo['ws_real'] / 'task-7')
    Workspace(g, str(repo['clone']), path).present()
    if dirt == 'modified':
        open(os.path.join(path, 'README'), 'w').write('half done\n')
    elif dirt == 'untracked':
        open(os.path.join(path, 'new.txt'), 'w').write('new\n')
    elif dirt == 'unpushed-commit':
        open(os.path.join(path, 'README'), 'w').write('committed, not pushed\n')
        _git('commit', '-q', '-am', 'local only', cwd=path)
    res = Workspace(g, str(repo['clone_link']), path).absent()
    assert res['kept'] is kept and res['removed'] is (not kept)
    assert os.path.isdir(path) is kept
    if dirt in ('modified', 'untracked'):
        assert res['dirty_files'] and path in res['reason']
    if dirt == 'unpushed-commit':
        assert res['unpushed'] == 1
    again = Workspace(g, str(repo['clone']), path).absent()
    assert again['removed'] is False


def test_release_of_a_missing_directory_prunes_the_registration(repo):
    g = Git(SubprocessRunner())
    path = str(repo['ws_real'] / 'task-9')
    Workspace(g, str(repo['clone']), path).present()
    subprocess.run(['rm', '-rf', path], check=True)
    res = Workspace(g, str(repo['clone']), path).absent()
    assert res['pruned'] and g.find_worktree(str(repo['clone']), path) is None
    # and present after a vanished directory recreates it instead of failing on the stale registration
    Workspace(g, str(repo['clone']), path).present()
    subprocess.run(['rm', '-rf', path], check=True)
    res = Workspace(g, str(repo['clone']), path).present()
    assert res['created'] and res['pruned']


def _make_workspaces(args):
    """One dispatcher's launches on one master: ``n`` workspaces on the shared clone, counting failures."""
    clone, root, tag, n = args
    failures = []
    for k in range(n):
        try:
            Workspace(Git(SubprocessRunner()), clone, os.path.join(root, 'task-%s-%d' % (tag, k))).present()
        except GitError as exc:
            failures.append(str(exc))
    return failures


def test_dispatchers_launching_at_once_on_one_clone_never_fail_each_other(repo):
    """Two dispatchers (a timer's sweep and a hand dispatch) launch on one master at the same moment:
    their fetches into the one clone race on FETCH_HEAD, and the race benchmark saw a launch refused
    with "git fetch exited 0 but ... FETCH_HEAD is None". The clone's steps are serialised by a lock
    (D10): every workspace is made, none fails. Counts what happened and asserts zero failures."""
    import multiprocessing
    ctx = multiprocessing.get_context('spawn')
    jobs = [(str(repo['clone']), str(repo['ws_real']), tag, 6) for tag in 'abcdef']
    with ctx.Pool(len(jobs)) as pool:
        failures = [f for got in pool.map(_make_workspaces, jobs) for f in got]
    assert failures == []
    made = [t for t in Git(SubprocessRunner()).worktrees(str(repo['clone'])) if t['detached']]
    assert len(made) == 36


def test_a_held_clone_lock_times_out_with_the_file_named_and_a_symlink_is_refused(repo, tmp_path):
    import fcntl
    from ansible_collections.fleet.dispatch.plugins.module_utils._host.git import CLONE_LOCK_NAME, clone_lock
    lock = repo['clone'] / '.git' / CLONE_LOCK_NAME
    with clone_lock(str(repo['clone'])):
        assert lock.exists()
    held = os.open(str(lock), os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    ticks = iter(range(0, 1000, 10))
    try:
        with pytest.raises(GitError) as err:
            with clone_lock(str(repo['clone']), timeout=30, clock=lambda: next(ticks), sleep=lambda s: None):
                pytest.fail('the lock was held by another launch')
        assert str(lock) in str(err.value) and 'nothing was changed' in str(err.value)
    finally:
        os.close(held)
    lock.unlink()
    lock.symlink_to(tmp_path / 'elsewhere')
    with pytest.raises(GitError) as err:
        with clone_lock(str(repo['clone'])):
            pytest.fail('a symlinked lock file was followed')
    assert 'symlink' in str(err.value) and not (tmp_path / 'elsewhere').exists()


# -- the clone is the agent's: nothing it configures runs as the master -------------------------

def _plant(clone, marks):
    """What a hostile run can leave in a clone it can write: a hook, fsmonitor, a filter driver
    (attributes in .git/info), a credential helper and an upload-pack command, each touching a mark."""
    gitdir = clone / '.git'
    hooks = gitdir / 'hooks'
    hooks.mkdir(exist_ok=True)
    for name in ('post-checkout', 'reference-transaction', 'post-index-change'):
        (hooks / name).write_text('#!/bin/sh\ntouch %s/hook-%s\n' % (marks, name))
        (hooks / name).chmod(0o755)
    (gitdir / 'info').mkdir(exist_ok=True)
    (gitdir / 'info' / 'attributes').write_text('* filter=evil\n')
    _git('config', 'core.fsmonitor', 'touch %s/fsmonitor; false #' % marks, cwd=str(clone))
    _git('config', 'filter.evil.smudge', 'touch %s/smudge; cat' % marks, cwd=str(clone))
    _git('config', 'filter.evil.clean', 'touch %s/clean; cat' % marks, cwd=str(clone))
    _git('config', 'filter.evil.required', 'true', cwd=str(clone))
    _git('config', 'credential.helper', '!touch %s/credential; true' % marks, cwd=str(clone))
    _git('config', 'remote.origin.uploadpack', 'touch %s/uploadpack; git-upload-pack' % marks, cwd=str(clone))


def test_nothing_the_clone_configures_runs_on_workspace_present_and_absent(repo, tmp_path):
    """A planted hook, fsmonitor, filter driver, credential helper and upload-pack command in the
    clone all stay unrun through fetch, worktree add, verify, status and worktree remove."""
    marks = tmp_path / 'marks'
    marks.mkdir()
    _plant(repo['clone'], marks)
    tip = _push_commit(repo, 'two\n')
    ws = Workspace(Git(SubprocessRunner()), str(repo['clone_link']), str(repo['ws_link'] / 'task-1'))
    res = ws.present()
    assert res['created'] and res['sha'] == tip
    (repo['ws_real'] / 'task-1' / 'README').write_text('two\n')   # same content, new mtime: status must look
    gone = ws.absent()
    assert gone['removed'], gone
    assert sorted(os.listdir(str(marks))) == []


def test_the_unhardened_git_does_run_what_the_clone_plants(repo, tmp_path):
    """The control: the same plant with plain git runs the hook, fsmonitor and the filter (so the test above can fail)."""
    marks = tmp_path / 'marks'
    marks.mkdir()
    _plant(repo['clone'], marks)
    _git('worktree', 'add', '-q', '--detach', str(repo['ws_real'] / 'plain'), 'HEAD', cwd=str(repo['clone']))
    assert {'hook-post-checkout', 'smudge'} <= set(os.listdir(str(marks)))


def test_config_overrides_take_back_only_what_the_repository_set():
    entries = parse_config_list('system\0credential.helper\ncache\0global\0core.sshcommand\nssh -i /k\0'
                                'local\0core.sshcommand\nsh -c evil\0local\0credential.https://x.helper\n!evil\0'
                                'global\0filter.lfs.smudge\ngit-lfs smudge %f\0local\0filter.evil.process\nevil\0')
    out = config_overrides(entries)
    assert out[:4] == ['filter.evil.clean=', 'filter.evil.smudge=', 'filter.evil.process=', 'filter.evil.required=false']
    assert 'filter.lfs.smudge=' not in out            # a global (trusted) driver is kept
    assert out[4:6] == ['credential.helper=', 'credential.helper=cache']
    assert 'core.sshCommand=ssh -i /k' in out
    with pytest.raises(GitError, match='cannot be switched off'):
        config_overrides([('local', 'filter.a=b.smudge', 'evil')])


def test_every_git_command_is_hardened():
    """Hooks, fsmonitor and foreign transports are off on every command, read-only ones included."""
    argv = hardened_argv('git', '/c', ['rev-parse', 'HEAD'])
    settings = [argv[i + 1] for i, word in enumerate(argv) if word == '-c']
    assert {'core.hooksPath=/dev/null', 'core.fsmonitor=false', 'protocol.allow=never'} <= set(settings)
    assert argv[-4:] == ['-C', '/c', 'rev-parse', 'HEAD']
