# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A master's directories and files, converged in one step (``fleet.dispatch.master_files``).

Each entry says what one path must be -- a directory, a file with this content, a file that only
has to exist (``force`` false: an existing one keeps its content and times), or nothing -- with its
owner, group and mode; an unset one is left as it is (a new path gets root's and the umask's). A
file whose content differs is replaced whole and atomically: a temporary file beside it, already
owned and moded, renamed over it, so no reader sees half a file and a 0600 secret is never readable
by others for a moment. A file's path is never followed: a symlink there is replaced, or with
``force`` false left alone. Check mode writes nothing and reports what would change; a sensitive
file's content is never returned, not even in a diff.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import tempfile
from typing import Any, Dict, List, Optional

DIRECTORY = 'directory'
FILE = 'file'
ABSENT = 'absent'
HIDDEN = '(sensitive content, not shown)\n'
HIDDEN_CHANGED = '(sensitive content, changed, not shown)\n'


class MasterFilesError(Exception):
    """A path that cannot be made what its entry says (the message names it and why)."""


def parse_mode(value) -> Optional[int]:
    """An octal mode given as text ('0644', '644') or as the number it means; None when unset."""
    if value is None or value == '':
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    try:
        mode = int(text, 8)
    except ValueError:
        raise MasterFilesError('mode %r is not an octal number such as 0644' % (value,))
    if mode > 0o7777:
        raise MasterFilesError('mode %r is out of range' % (value,))
    return mode


def _resolve(value, lookup, what) -> Optional[int]:
    """An id from a number or a name (``lookup(name)``, KeyError when unknown); None when unset."""
    if value is None or value == '':
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        pass
    try:
        return lookup(str(value))
    except KeyError:
        raise MasterFilesError('%s %s does not exist' % (what, value))


def resolve_uid(owner) -> Optional[int]:
    """A uid from a number or a user name (what the file module accepts); None when unset."""
    return _resolve(owner, lambda name: pwd.getpwnam(name).pw_uid, 'owner')


def resolve_gid(group) -> Optional[int]:
    """A gid from a number or a group name; None when unset."""
    return _resolve(group, lambda name: grp.getgrnam(name).gr_gid, 'group')


def current_umask() -> int:
    """This process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _attr_changes(info, uid, gid, mode) -> Dict[str, Any]:
    """``{attribute: (before, after)}`` of what differs between ``info`` and the wanted attributes."""
    out = {}
    if uid is not None and info.st_uid != uid:
        out['owner'] = (info.st_uid, uid)
    if gid is not None and info.st_gid != gid:
        out['group'] = (info.st_gid, gid)
    if mode is not None and stat.S_IMODE(info.st_mode) != mode:
        out['mode'] = ('%04o' % stat.S_IMODE(info.st_mode), '%04o' % mode)
    return out


def _attr_diff(path, changes) -> Dict[str, str]:
    return {'before_header': path, 'after_header': path,
            'before': ''.join('%s: %s\n' % (key, changes[key][0]) for key in sorted(changes)),
            'after': ''.join('%s: %s\n' % (key, changes[key][1]) for key in sorted(changes))}


def _state_diff(path, before, after) -> Dict[str, str]:
    return {'before_header': path, 'after_header': path, 'before': 'state: %s\n' % before, 'after': 'state: %s\n' % after}


class MasterFiles(object):
    """Converges a list of entries, in their order (list a directory before what goes in it).

    An entry is a dict: ``path``, ``state`` (``directory``, ``file`` or ``absent``), ``owner``,
    ``group``, ``mode`` (unset: left alone), and for a file ``content`` (text or bytes), ``force``
    (false: only make sure it exists) and ``sensitive`` (its content never leaves this object)."""

    def __init__(self, check=False, umask=None):
        self.check = check
        self.umask = current_umask() if umask is None else umask
        self.result = {'dirs_made': [], 'written': [], 'fixed': [], 'removed': [], 'unchanged': []}
        self.diff = []          # type: List[Dict[str, str]]

    @property
    def changed(self) -> bool:
        return any(self.result[key] for key in ('dirs_made', 'written', 'fixed', 'removed'))

    def apply(self, entries) -> Dict[str, Any]:
        """Converge every entry; returns the result lists (``dirs_made``, ``written``, ``fixed``,
        ``removed``, ``unchanged``: paths), ``changed`` and ``diff`` (one entry per changed path)."""
        for entry in entries:
            state = entry.get('state') or FILE
            path = entry['path']
            if not os.path.isabs(path):
                raise MasterFilesError('%s: the path must be absolute' % path)
            if state == DIRECTORY:
                self.directory(path, resolve_uid(entry.get('owner')), resolve_gid(entry.get('group')),
                               parse_mode(entry.get('mode')))
            elif state == FILE:
                content = entry.get('content')
                content = b'' if content is None else content
                if not isinstance(content, bytes):
                    content = str(content).encode('utf-8')
                self.file(path, content, resolve_uid(entry.get('owner')), resolve_gid(entry.get('group')),
                          parse_mode(entry.get('mode')), force=entry.get('force', True) is not False,
                          sensitive=bool(entry.get('sensitive')))
            elif state == ABSENT:
                self.absent(path)
            else:
                raise MasterFilesError('%s: unknown state %r' % (path, state))
        out = dict(self.result)
        out.update(changed=self.changed, diff=self.diff)
        return out

    # -- directories ------------------------------------------------------------------------
    def directory(self, path, uid, gid, mode):
        """Make ``path`` a directory (its missing parents too, with the same attributes, as the file
        module does); fix the owner, group and mode of an existing one. A symlink to a directory is
        followed, as the file module follows it."""
        try:
            info = os.stat(path)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISDIR(info.st_mode):
            raise MasterFilesError('%s exists and is not a directory' % path)
        if info is None:
            self.result['dirs_made'].append(path)
            self.diff.append(_state_diff(path, ABSENT, DIRECTORY))
            if self.check:
                return
            missing = []
            cur = path
            while not os.path.lexists(cur):
                missing.append(cur)
                cur = os.path.dirname(cur)
            for made in reversed(missing):
                os.mkdir(made, 0o777)
                self._set_attrs(made, uid, gid, mode)
            return
        self._attrs_only(path, info, uid, gid, mode)

    # -- files ------------------------------------------------------------------------------
    def file(self, path, content, uid, gid, mode, force=True, sensitive=False):
        """Make ``path`` a regular file holding ``content`` (or, ``force`` false, a file that exists)."""
        info = _lstat(path)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise MasterFilesError('%s is a directory, not a file' % path)
        is_link = info is not None and stat.S_ISLNK(info.st_mode)
        if info is not None and not force:
            if is_link:      # it exists; a symlink is never followed, so there is nothing to set
                self.result['unchanged'].append(path)
            else:
                self._attrs_only(path, info, uid, gid, mode)
            return
        before = None
        if info is not None and stat.S_ISREG(info.st_mode):
            with open(path, 'rb') as handle:
                before = handle.read()
        if before == content:
            self._attrs_only(path, info, uid, gid, mode)
            return
        self.result['written'].append(path)
        if sensitive:
            self.diff.append({'before_header': path, 'after_header': path,
                              'before': HIDDEN if info is not None else '', 'after': HIDDEN_CHANGED})
        else:
            self.diff.append({'before_header': path, 'after_header': path,
                              'before': (before or b'').decode('utf-8', 'replace'),
                              'after': content.decode('utf-8', 'replace')})
        if self.check:
            return
        if mode is None:
            # an existing file keeps its mode; a new one gets what open() would give it
            mode = stat.S_IMODE(info.st_mode) if info is not None and not is_link else 0o666 & ~self.umask
        self._replace(path, content, uid, gid, mode)

    def _attrs_only(self, path, info, uid, gid, mode):
        changes = _attr_changes(info, uid, gid, mode)
        if not changes:
            self.result['unchanged'].append(path)
            return
        self.result['fixed'].append(path)
        self.diff.append(_attr_diff(path, changes))
        if not self.check:
            self._set_attrs(path, uid, gid, mode)

    def _replace(self, path, content, uid, gid, mode):
        """Write a temporary file beside ``path`` with its final owner and mode, then rename it over."""
        directory, name = os.path.split(path)
        fd, tmp = tempfile.mkstemp(prefix='.%s.' % name, suffix='.tmp', dir=directory)
        try:
            with os.fdopen(fd, 'wb') as handle:
                if uid is not None or gid is not None:
                    os.fchown(handle.fileno(), -1 if uid is None else uid, -1 if gid is None else gid)
                os.fchmod(handle.fileno(), mode)
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    @staticmethod
    def _set_attrs(path, uid, gid, mode):
        if uid is not None or gid is not None:
            os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
        if mode is not None:
            os.chmod(path, mode)

    # -- absent -----------------------------------------------------------------------------
    def absent(self, path):
        """Remove ``path`` (a directory with what is in it); nothing to do when it is missing."""
        info = _lstat(path)
        if info is None:
            self.result['unchanged'].append(path)
            return
        self.result['removed'].append(path)
        self.diff.append(_state_diff(path, 'directory' if stat.S_ISDIR(info.st_mode) else 'file', ABSENT))
        if self.check:
            return
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def converge(entries, check=False, umask=None) -> Dict[str, Any]:
    """Converge ``entries`` (see :class:`MasterFiles`); raises :class:`MasterFilesError` on a path that cannot be."""
    return MasterFiles(check=check, umask=umask).apply(entries)
