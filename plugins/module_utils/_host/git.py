# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``git fetch`` and ``git worktree``, declared once: one workspace per run.

Each run gets its own detached worktree at a fresh ``origin/<branch>``, created from the clone's
physical path and verified before it is handed over; a dirty one is kept, never wiped.

Every git command the fleet runs goes through ``Git._run`` (``hardened_argv``): the clone and the
workspace are writable by the agent, so nothing git would execute on their say (hooks, fsmonitor,
filter drivers, credential helpers, ssh commands, remote helpers) runs with the master's rights.

The rules in full, with their reasons: ``docs/internals.md``, section ``_host/git.py``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import time

# Unmeasured guess: a fetch and a worktree add take seconds, so a minute is many launches' worth of
# waiting. Experiment: time the longest fetch of the fleet's largest clone and keep a few times that.
CLONE_LOCK_TIMEOUT = 120.0
CLONE_LOCK_NAME = 'fleet-dispatch-workspace.lock'


HARDENED_CONFIG = (
    'core.hooksPath=/dev/null',          # no hook: post-checkout, reference-transaction, post-index-change...
    'core.fsmonitor=false',              # a path here is a program status and worktree add run
    'core.askPass=',                     # empty: no program asked for a password (GIT_TERMINAL_PROMPT=0 too)
    'core.pager=cat',
    'core.alternateRefsCommand=true',    # objects/info/alternates is writable: no command for their refs
    'diff.external=',
    'protocol.allow=never',              # ext::, git:// (core.gitProxy) and every remote helper refused...
    'protocol.file.allow=always',        # ...but the transports an origin is reached by
    'protocol.ssh.allow=always',
    'protocol.https.allow=always',
    'protocol.http.allow=always',
    'submodule.recurse=false',           # a submodule's own config and hooks are the agent's too
    'fetch.recurseSubmodules=false',
    'gc.auto=0',                         # no background gc/maintenance outliving the call
    'maintenance.auto=false',
)
"""``-c`` settings on every git command the fleet runs (command-line scope beats every file)."""

HARDENED_ENV = {'GIT_TERMINAL_PROMPT': '0', 'GIT_ASKPASS': '', 'SSH_ASKPASS': '', 'GIT_PAGER': 'cat'}
"""The environment every git command of the fleet runs with: it never prompts, never runs an askpass."""

TRUSTED_SCOPES = ('system', 'global', 'command')
"""git's protected configuration (git-config(1), SCOPES): the only scopes a program may come from."""

_FILTER_KEY = re.compile(r'^filter\.(.+)\.(clean|smudge|process|required)$', re.IGNORECASE)
_HELPER_KEY = re.compile(r'^credential\.(.+\.)?helper$', re.IGNORECASE)
_SINGLE_TRUSTED = ('core.sshcommand',)


def parse_config_list(text):
    """``git config -z --show-scope --list`` → list of ``(scope, key, value)`` (key lowercased as git prints it)."""
    parts = (text or '').split('\0')
    out = []
    for scope, entry in zip(parts[0::2], parts[1::2]):
        key, _sep, value = entry.partition('\n')
        out.append((scope, key, value))
    return out


def config_overrides(entries):
    """The ``-c`` settings that take back from the repository's own config what only trusted config may set.

    ``entries``: ``parse_config_list`` of the directory a command runs in. A filter driver named in
    local or worktree config is emptied (an empty clean/smudge/process runs nothing) and made optional;
    one whose name cannot be written as ``-c`` is a GitError (never run unneutralised). Credential
    helpers are reset and only the system and global ones given back; a ``core.sshCommand`` set locally
    is replaced by the trusted value or git's default. (``remote.<name>.uploadpack`` is not here: the
    first value read wins, the repository's, so ``fetch`` names the program itself.)
    """
    out, seen = [], set()
    trusted_helpers = []
    trusted_single = {}
    for scope, key, value in entries:
        lowered = key.lower()
        if scope in TRUSTED_SCOPES:
            if _HELPER_KEY.match(key) and '=' not in key:
                trusted_helpers.append('%s=%s' % (key, value))
            elif lowered in _SINGLE_TRUSTED:
                trusted_single[lowered] = value
            continue
        match = _FILTER_KEY.match(key)
        if match:
            name = match.group(1)
            if '=' in name or '\n' in name:
                raise GitError('the repository configures a filter driver named %r, which cannot be switched off on '
                               'the command line: refusing to run git there' % (name,))
            if name not in seen:
                seen.add(name)
                out.extend('filter.%s.%s=%s' % (name, what, '' if what != 'required' else 'false')
                           for what in ('clean', 'smudge', 'process', 'required'))
    out.append('credential.helper=')
    out.extend(trusted_helpers)
    local = set(k.lower() for s, k, _v in entries if s not in TRUSTED_SCOPES)
    for key in _SINGLE_TRUSTED:
        if key in local:
            out.append('%s=%s' % ('core.sshCommand', trusted_single.get(key, 'ssh')))
    return out


def hardened_argv(git, cwd, args, overrides=()):
    """The argv of one git command in ``cwd``: ``HARDENED_CONFIG`` and ``overrides`` as ``-c``, then ``args``."""
    argv = [git, '--no-pager']
    for setting in tuple(HARDENED_CONFIG) + tuple(overrides):
        argv.extend(['-c', setting])
    return argv + ['-C', cwd] + list(args)


class GitError(Exception):
    """A git step failed; the message names the step, the path and git's own words."""

    def __init__(self, message, argv=None, rc=None, stderr=''):
        super(GitError, self).__init__(message)
        self.argv = list(argv or [])
        self.rc = rc
        self.stderr = stderr


def physical(path):
    """The path with every symlink resolved (D10 detail 2). A missing leaf keeps its name."""
    path = os.path.abspath(os.path.expanduser(path))
    return os.path.realpath(path)


def parse_worktree_list(text):
    """``git worktree list --porcelain`` → list of ``{'path', 'head', 'branch', 'detached', 'bare', 'prunable', 'locked'}``."""
    out, cur = [], None
    for line in (text or '').splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur = None
            continue
        key, _sep, value = line.partition(' ')
        if key == 'worktree':
            if cur:
                out.append(cur)
            cur = {'path': value, 'head': None, 'branch': None, 'detached': False, 'bare': False,
                   'prunable': False, 'locked': False}
        elif cur is None:
            continue
        elif key == 'HEAD':
            cur['head'] = value
        elif key == 'branch':
            cur['branch'] = value
        elif key in ('detached', 'bare', 'prunable', 'locked'):
            cur[key] = True
    if cur:
        out.append(cur)
    return out


class Git(object):
    """git over an injected runner; ``git`` is the program path."""

    def __init__(self, runner, git='git', remote='origin'):
        self.runner = runner
        self.git = git
        self.remote = remote

    def _run(self, cwd, args, what, check=True, scan=False):
        """Run one git command in ``cwd``, hardened (``hardened_argv``); the only way this class runs git.

        ``scan``: for the commands that may run a configured program (fetch, checkout, status, worktree
        add/remove), read the configuration first and take back what the repository set (``config_overrides``).
        """
        overrides = ()
        if scan:
            rc, out, err = self.runner.run(hardened_argv(self.git, cwd, ['config', '-z', '--show-scope', '--list']),
                                           env=dict(HARDENED_ENV))
            if rc != 0:
                if check:
                    raise GitError('%s refused in %s: its git configuration cannot be read (rc=%s): %s'
                                   % (what, cwd, rc, (err or out or '').strip()), rc=rc, stderr=err)
                return rc, '', err or ''
            overrides = config_overrides(parse_config_list(out))
        argv = hardened_argv(self.git, cwd, args, overrides)
        rc, out, err = self.runner.run(argv, env=dict(HARDENED_ENV))
        if check and rc != 0:
            raise GitError('%s failed in %s (rc=%s): %s' % (what, cwd, rc, (err or out or '').strip()), argv, rc, err)
        return rc, out or '', err or ''

    # -- reading -------------------------------------------------------------------------

    def rev_parse(self, cwd, ref):
        """The sha of ``ref`` in ``cwd``, or None when git cannot resolve it (or cwd is no repository)."""
        rc, out, _err = self._run(cwd, ['rev-parse', '--verify', '--quiet', ref + '^{commit}'], 'rev-parse', check=False)
        sha = out.strip()
        return sha if rc == 0 and sha else None

    def toplevel(self, cwd):
        """``rev-parse --show-toplevel`` in ``cwd``, or None when git does not work there."""
        rc, out, _err = self._run(cwd, ['rev-parse', '--show-toplevel'], 'rev-parse', check=False)
        return out.strip() if rc == 0 and out.strip() else None

    def worktrees(self, clone):
        """The clone's registered worktrees (``git worktree list --porcelain``)."""
        _rc, out, _err = self._run(clone, ['worktree', 'list', '--porcelain'], 'git worktree list')
        return parse_worktree_list(out)

    def find_worktree(self, clone, path):
        """The registered worktree at ``path`` (compared physically), or None."""
        want = physical(path)
        for tree in self.worktrees(clone):
            if physical(tree['path']) == want:
                return tree
        return None

    def dirty(self, path):
        """What would be lost by removing the worktree at ``path``.

        Returns ``{'files': [porcelain status lines], 'unpushed': N}`` — files that are modified,
        staged or untracked, and commits reachable from HEAD that no remote-tracking ref contains.
        Raises ``GitError`` when git cannot read the tree (the caller must then keep it: no
        evidence that it is clean).
        """
        _rc, out, _err = self._run(path, ['status', '--porcelain', '--untracked-files=all'], 'git status', scan=True)
        files = [line for line in out.splitlines() if line.strip()]
        _rc, out, _err = self._run(path, ['rev-list', '--count', 'HEAD', '--not', '--remotes'], 'git rev-list')
        try:
            unpushed = int(out.strip() or '0')
        except ValueError:
            raise GitError('git rev-list --count answered %r in %s' % (out.strip(), path))
        return {'files': files, 'unpushed': unpushed}

    # -- acting --------------------------------------------------------------------------

    def fetch(self, clone, branch):
        """Fetch ``branch`` from the remote into ``refs/remotes/<remote>/<branch>``; return its sha.

        The refspec is explicit so a clone with a narrow fetch configuration still updates the
        tracking ref, and the result is verified: the tracking ref must equal FETCH_HEAD.
        """
        tracking = 'refs/remotes/%s/%s' % (self.remote, branch)
        self._run(clone, ['fetch', '--no-tags', '--upload-pack=git-upload-pack', self.remote, '+refs/heads/%s:%s' % (branch, tracking)],
                  'git fetch %s %s' % (self.remote, branch), scan=True)
        fetched = self.rev_parse(clone, 'FETCH_HEAD')
        sha = self.rev_parse(clone, tracking)
        if not sha or sha != fetched:
            raise GitError('git fetch %s %s exited 0 but %s is %s, FETCH_HEAD is %s in %s (verify the outcome)'
                           % (self.remote, branch, tracking, sha, fetched, clone))
        return sha

    def fetch_tag(self, clone, tag):
        """Fetch the tag ``tag`` from the remote into ``refs/tags/<tag>`` (forced: a tag its maintainers moved is
        followed); return the commit it names. Verified as ``fetch`` is: the local tag must name FETCH_HEAD's commit."""
        ref = 'refs/tags/%s' % tag
        self._run(clone, ['fetch', '--no-tags', '--upload-pack=git-upload-pack', self.remote, '+%s:%s' % (ref, ref)],
                  'git fetch %s tag %s' % (self.remote, tag), scan=True)
        fetched = self.rev_parse(clone, 'FETCH_HEAD')
        sha = self.rev_parse(clone, ref)
        if not sha or sha != fetched:
            raise GitError('git fetch %s tag %s exited 0 but %s is %s, FETCH_HEAD is %s in %s (verify the outcome)'
                           % (self.remote, tag, ref, sha, fetched, clone))
        return sha

    def fetch_commit(self, clone, sha):
        """Make the commit ``sha`` present in ``clone``: nothing when it is, else fetch it by name from the remote
        (GitHub and git's protocol v2 serve a reachable commit by sha). Verified: the commit must then resolve."""
        if self.rev_parse(clone, sha) == sha:
            return sha
        self._run(clone, ['fetch', '--no-tags', '--upload-pack=git-upload-pack', self.remote, sha],
                  'git fetch %s %s' % (self.remote, sha), scan=True)
        if self.rev_parse(clone, sha) != sha:
            raise GitError('git fetch %s %s exited 0 but the commit is not in %s (verify the outcome)' % (self.remote, sha, clone))
        return sha

    def worktree_add(self, clone, path, sha):
        """``git worktree add --detach PATH SHA`` (detached is mandatory, D10 detail 1)."""
        self._run(clone, ['worktree', 'add', '--detach', path, sha], 'git worktree add', scan=True)

    def worktree_remove(self, clone, path, force=False, check=True):
        """``git worktree remove PATH`` — without ``--force`` git itself refuses a dirty tree too.

        ``force`` is only for a tree this code created a moment ago and that failed verification.
        """
        args = ['worktree', 'remove'] + (['--force'] if force else []) + [path]
        rc, _out, _err = self._run(clone, args, 'git worktree remove', check=check, scan=True)
        return rc == 0

    def checkout_detached(self, cwd, sha):
        """``git checkout --quiet --detach SHA`` in ``cwd``; returns ``(rc, stderr)`` (the caller verifies HEAD)."""
        rc, _out, err = self._run(cwd, ['checkout', '--quiet', '--detach', sha], 'git checkout', check=False, scan=True)
        return rc, err

    def worktree_prune(self, clone):
        """``git worktree prune``: forget registrations whose directory is gone."""
        self._run(clone, ['worktree', 'prune'], 'git worktree prune')

    def verify(self, path, sha):
        """D10 detail 3: git works inside ``path``, its top level is ``path``, HEAD is ``sha``.

        Returns None when verified, else the reason (a string).
        """
        top = self.toplevel(path)
        if top is None:
            return 'git does not work inside %s (broken worktree pointer?)' % path
        if physical(top) != physical(path):
            return 'git inside %s resolves to another tree: %s' % (path, top)
        head = self.rev_parse(path, 'HEAD')
        if head != sha:
            return 'HEAD in %s is %s, expected %s' % (path, head, sha)
        return None


def _lock_path(clone):
    """The clone's own git directory holds the lock (``.git/`` of a clone, the repository of a bare one)."""
    gitdir = os.path.join(clone, '.git')
    return os.path.join(gitdir if os.path.isdir(gitdir) else clone, CLONE_LOCK_NAME)


@contextlib.contextmanager
def clone_lock(clone, timeout=CLONE_LOCK_TIMEOUT, clock=time.monotonic, sleep=time.sleep):
    """Hold the clone's exclusive lock while its refs and worktree list change (D10).

    Two dispatchers launching on one master at once (a timer's sweep, a hand dispatch) fetch into the
    same clone: unserialised, one reads the other's FETCH_HEAD and its launch is refused. The lock is a
    ``flock`` on a file in the clone's git directory, opened without following a symlink; waiting past
    ``timeout`` is a GitError that names the file.
    """
    path = _lock_path(clone)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_CLOEXEC', 0), 0o600)
    except OSError as exc:
        raise GitError('cannot open the clone lock %s: %s (is it a symlink, or the clone not writable by this user?)'
                       % (path, exc.strerror or exc))
    try:
        deadline = clock() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise GitError('cannot lock the clone %s: %s' % (path, exc.strerror or exc))
                if clock() >= deadline:
                    raise GitError('another launch has held the clone lock %s for over %.0f s: nothing was changed; '
                                   'find the git process on this clone (a hung fetch?) and retry' % (path, timeout))
                sleep(0.05)
        yield
    finally:
        os.close(fd)


class Workspace(object):
    """The workspace decisions over a ``Git``: ensure present / release.

    ``clone`` and ``path`` may be given through symlinks; both are resolved physically here.
    Methods return a result dict and never touch anything in ``check`` mode.
    """

    def __init__(self, git, clone, path, branch='main'):
        self.git = git
        self.clone_given = clone
        self.clone = physical(clone)
        parent, leaf = os.path.split(os.path.abspath(os.path.expanduser(path)))
        self.path = os.path.join(physical(parent), leaf)
        self.branch = branch

    def _base(self):
        return {'path': self.path, 'clone': self.clone, 'branch': self.branch, 'sha': None, 'created': False,
                'removed': False, 'kept': False, 'dirty_files': [], 'unpushed': 0, 'existing': False,
                'fresh': None, 'pruned': False}

    def present(self, check=False):
        """Ensure a verified detached worktree at ``path``.

        D10: one workspace per run, detached at a fresh ``origin/<branch>``, created from the
        clone's physical path and verified before it is handed over.

        * registered and verified → unchanged (never moved: it may be a live run's tree);
          ``fresh`` says whether its HEAD is still the remote's tip.
        * registered but its directory gone → pruned, then created.
        * a directory that is not this clone's worktree → GitError (nothing is overwritten).
        """
        res = self._base()
        if not os.path.isdir(self.clone):
            raise GitError('the clone %s does not exist (given as %s)' % (self.clone, self.clone_given))
        tree = self.git.find_worktree(self.clone, self.path)
        exists = os.path.lexists(self.path)
        if tree and exists:
            head = self.git.rev_parse(self.path, 'HEAD')
            problem = self.git.verify(self.path, head) if head else 'git does not work inside %s' % self.path
            if problem:
                raise GitError('the workspace %s exists but does not verify: %s; it is left as it is (it may hold work)'
                               % (self.path, problem))
            tip = self.git.rev_parse(self.clone, 'refs/remotes/%s/%s' % (self.git.remote, self.branch))
            res.update(existing=True, sha=head, fresh=(head == tip) if tip else None)
            return res
        if exists:
            raise GitError('%s exists and is not a worktree of %s; refusing to overwrite it' % (self.path, self.clone))
        changed_prune = False
        if tree:
            changed_prune = True
        if check:
            res.update(created=True, pruned=changed_prune,
                       sha=self.git.rev_parse(self.clone, 'refs/remotes/%s/%s' % (self.git.remote, self.branch)))
            return res
        with clone_lock(self.clone):
            if changed_prune:
                self.git.worktree_prune(self.clone)
            sha = self.git.fetch(self.clone, self.branch)
            parent = os.path.dirname(self.path)
            if not os.path.isdir(parent):
                os.makedirs(parent, mode=0o755)
            self.git.worktree_add(self.clone, self.path, sha)
            problem = self.git.verify(self.path, sha)
            if problem:
                # A tree we created a moment ago holds no work: take it back rather than hand it over.
                self.git.worktree_remove(self.clone, self.path, force=True, check=False)
                raise GitError('the new workspace %s does not verify: %s (not handed over)' % (self.path, problem))
        res.update(created=True, pruned=changed_prune, sha=sha, fresh=True)
        return res

    def for_run(self, check=False, replace=True):
        """The tree a new run of the item gets (the launch): ``present``, except that an earlier run's tree that
        holds no work gives way to a new one at a fresh tip of ``branch`` (D10: each run detached at a fresh tip;
        for a run that continues a pull request, its head). A tree that holds work is kept and handed over as it
        is (``existing``, ``fresh`` False), and so is any tree when ``replace`` is false (the caller found the item's
        unit live: its tree is never taken from under it)."""
        res = self.present(check=check)
        if res['existing'] and replace and not check and self.absent()['removed']:
            res = dict(self.present(), replaced=True)
        return res

    def absent(self, check=False):
        """Release: remove a clean worktree, keep one holding work and say what it holds."""
        res = self._base()
        tree = self.git.find_worktree(self.clone, self.path) if os.path.isdir(self.clone) else None
        exists = os.path.lexists(self.path)
        if not tree and not exists:
            return res
        if tree and not exists:
            res['pruned'] = True
            if not check:
                with clone_lock(self.clone):
                    self.git.worktree_prune(self.clone)
            return res
        if not tree:
            res.update(kept=True, reason='%s is not a worktree of %s; kept untouched' % (self.path, self.clone))
            return res
        res['existing'] = True
        res['sha'] = tree.get('head')
        try:
            dirt = self.git.dirty(self.path)
        except GitError as exc:
            res.update(kept=True, reason='cannot prove %s is clean (%s); kept' % (self.path, exc))
            return res
        res.update(dirty_files=dirt['files'], unpushed=dirt['unpushed'])
        if dirt['files'] or dirt['unpushed']:
            res.update(kept=True, reason='%s holds work: %d uncommitted or untracked file(s), %d unpushed commit(s); kept'
                       % (self.path, len(dirt['files']), dirt['unpushed']))
            return res
        res['removed'] = True
        if not check:
            with clone_lock(self.clone):
                self.git.worktree_remove(self.clone, self.path)
        return res
