# -*- coding: utf-8 -*-
"""fleet.dispatch.workspace: exact argv through a scripted runner, then main() over real git
(AnsibleModule.run_command unpatched) for the D10 stories."""
from __future__ import annotations

import os

import pytest

from fakes.scripted_runner import ScriptedRunner
from ansible_collections.fleet.dispatch.plugins.modules import workspace as mod
from fakes.git_origin import git as _git, make_origin

SHA = 'c' * 40


def test_present_argv_sequence(run_module, tmp_path):
    """fetch → worktree add --detach at the fetched sha → verify inside; the physical clone path is what git sees."""
    real = tmp_path / 'disk' / 'clone'
    real.mkdir(parents=True)
    (tmp_path / 'link').symlink_to(tmp_path / 'disk')
    root = tmp_path / 'ws'
    c, ws = str(real), str(root / 'task-5@w1')
    r = ScriptedRunner()
    r.add_git(c, 'worktree', 'list', '--porcelain', out='worktree %s\nHEAD %s\nbranch refs/heads/main\n' % (c, SHA))
    r.add_git(c, 'fetch', '--no-tags', '--upload-pack=git-upload-pack', 'origin', '+refs/heads/trunk:refs/remotes/origin/trunk', scan=True)
    r.add_git(c, 'rev-parse', '--verify', '--quiet', 'FETCH_HEAD^{commit}', out=SHA + '\n')
    r.add_git(c, 'rev-parse', '--verify', '--quiet', 'refs/remotes/origin/trunk^{commit}', out=SHA + '\n')
    r.add_git(c, 'worktree', 'add', '--detach', ws, SHA, scan=True)
    r.add_git(ws, 'rev-parse', '--show-toplevel', out=ws + '\n')
    r.add_git(ws, 'rev-parse', '--verify', '--quiet', 'HEAD^{commit}', out=SHA + '\n')
    kind, res, _w = run_module(mod, {'clone': str(tmp_path / 'link' / 'clone'), 'number': 5, 'host': 'W1', 'root': str(root),
                                     'branch': 'trunk'}, runner=r)
    assert kind == 'exit', res
    assert r.remaining() == []
    assert res['changed'] and res['created'] and res['path'] == ws and res['name'] == 'task-5@w1' and res['sha'] == SHA


@pytest.fixture
def repo(tmp_path, monkeypatch):
    origin, seed = make_origin(tmp_path, monkeypatch, filename='f', text='1\n', message='1')
    real = tmp_path / 'srv' / 'clone'
    real.parent.mkdir()
    _git('clone', '-q', str(origin), str(real))
    (tmp_path / 'clones').symlink_to(real.parent)
    return {'clone_link': str(tmp_path / 'clones' / 'clone'), 'root': str(tmp_path / 'ws'),
            'tip': _git('rev-parse', 'HEAD', cwd=str(seed))}


def args(repo, **kw):
    out = {'clone': repo['clone_link'], 'number': 8, 'host': 'w1', 'root': repo['root']}
    out.update(kw)
    return out


def test_check_then_real_then_idempotent(run_module, repo):
    """The check → real → check → real quartet (community.docker style)."""
    path = os.path.join(repo['root'], 'task-8@w1')
    kind, res, _w = run_module(mod, args(repo), check=True)
    assert kind == 'exit' and res['changed'] and res['created'] and not os.path.exists(path)
    kind, res, _w = run_module(mod, args(repo))
    assert kind == 'exit' and res['changed'] and res['sha'] == repo['tip'] and res['path'] == path
    assert res['diff'] == {'before': path + ': absent\n', 'after': path + ': present\n'}
    assert _git('status', '--porcelain', cwd=path) == ''        # git works inside (D10 🔴 symlinked clone)
    for check in (True, False):
        kind, res, _w = run_module(mod, args(repo), check=check)
        assert kind == 'exit' and not res['changed'] and res['existing'] and res['fresh'] is True


def test_dirty_workspace_survives_absent_and_is_named(run_module, repo):
    """D10: keep, do not wipe — and say so."""
    kind, res, _w = run_module(mod, args(repo))
    path = res['path']
    with open(os.path.join(path, 'f'), 'w') as handle:
        handle.write('uncommitted work\n')
    for check in (True, False):
        kind, res, warnings = run_module(mod, args(repo, state='absent'), check=check)
        assert kind == 'exit' and not res['changed'] and res['kept'] and res['dirty_files'] == [' M f']
        assert any(path in w for w in warnings)
    assert os.path.exists(path)


def test_clean_workspace_is_removed(run_module, repo):
    kind, res, _w = run_module(mod, args(repo))
    path = res['path']
    kind, res, _w = run_module(mod, args(repo, state='absent'), check=True)
    assert res['changed'] and res['removed'] and os.path.exists(path)
    kind, res, _w = run_module(mod, args(repo, state='absent'))
    assert res['changed'] and res['removed'] and not os.path.exists(path)
    kind, res, _w = run_module(mod, args(repo, state='absent'))
    assert not res['changed']


def test_two_items_two_trees(run_module, repo):
    _k, a, _w = run_module(mod, args(repo, number=1))
    _k, b, _w = run_module(mod, args(repo, number=2))
    assert a['path'] != b['path'] and a['name'] == 'task-1@w1' and b['name'] == 'task-2@w1'


def test_missing_branch_fails_with_gits_reason(run_module, repo):
    kind, res, _w = run_module(mod, args(repo, branch='nope'))
    assert kind == 'fail' and "couldn't find remote ref" in res['msg']
