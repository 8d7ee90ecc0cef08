# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd hardening of a run unit ``task-N``: settings → ``Key=value`` properties.

Pure: no I/O. The settings are a mapping of systemd property names (the worker writes them per master
as ``sandbox.json``; ``launch``'s ``sandbox`` option overrides the file). Only the keys in ``KNOWN`` are
accepted, every value is checked (no newline: one ``-p`` is one assignment), and the mount-namespace
keys are refused without ``PrivateUsers=yes``: a *user* manager silently ignores them otherwise (read
on the test bed, systemd 252: the run then has the whole home writable while ``systemctl show`` says
``ProtectHome=read-only``). Readings and reasons: ``docs/sandbox.md``. The cgroup limits are headroom,
never a concurrency cap (D13).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional

BOOL_KEYS = ('NoNewPrivileges', 'PrivateUsers', 'PrivateTmp')
MOUNT_KEYS = ('PrivateTmp', 'ProtectSystem', 'ProtectHome', 'ReadWritePaths', 'ReadOnlyPaths', 'InaccessiblePaths')
PATH_KEYS = ('ReadWritePaths', 'ReadOnlyPaths', 'InaccessiblePaths')
CHOICE_KEYS = {'ProtectSystem': ('no', 'yes', 'full', 'strict'), 'ProtectHome': ('no', 'yes', 'read-only', 'tmpfs')}
LIMIT_KEYS = ('MemoryMax', 'TasksMax', 'CPUWeight')
IP_KEYS = ('IPAddressAllow',)
KNOWN = frozenset(BOOL_KEYS + MOUNT_KEYS + LIMIT_KEYS + IP_KEYS)
"""Every key a sandbox may set; any other key is refused (the sandbox is not a way to pass any property)."""

# The order the properties are emitted in (stable argv: tests and check mode compare it).
ORDER = ('NoNewPrivileges', 'PrivateUsers', 'PrivateTmp', 'ProtectSystem', 'ProtectHome', 'ReadWritePaths',
         'BindPaths', 'ReadOnlyPaths', 'InaccessiblePaths', 'MemoryMax', 'TasksMax', 'CPUWeight', 'IPAddressAllow')

DEFAULTS = {
    'NoNewPrivileges': True,
    'PrivateUsers': True,
    'ProtectSystem': 'full',
}
"""What ``roles/worker`` writes unless told otherwise (with the hidden paths): each one applied by a user manager on the bed."""

STRICT = dict(DEFAULTS, PrivateTmp=True, ProtectSystem='strict', ProtectHome='read-only')
"""The strict profile: writes confined to the ReadWritePaths (docs/sandbox.md)."""

RUNNER_OWN = ('.local/bin', '.config/fleet-dispatch', '.config/systemd', '.local/share/systemd', '.config/environment.d',
              '.config/git', '.gitconfig', '.ssh', '.profile', '.bashrc', '.bash_profile', '.bash_login')
"""Home-relative paths read-only to a run in every profile that mounts (``protected_paths``).

The run is the master's own uid, so with the home writable (the default profile) it rewrote its own
runner: the wrapper and everything on the run PATH (``.local/bin``), ``runner.json`` (its
agent_command), ``sandbox.json`` (``{}``: the next run unsandboxed), ``board.json`` (api_url: the token
sent elsewhere), the user units and the user manager's environment, and what the fleet's git, ssh and
the master's login shell read outside the sandbox (``.gitconfig``, ``.ssh``, the shell's start files)."""

_BYTES = re.compile(r'^(\d+(\.\d+)?[KMGT]?|\d{1,2}(\.\d+)?%|100%|infinity)$')
_TASKS = re.compile(r'^(\d+|\d{1,2}(\.\d+)?%|100%|infinity)$')
_IP = re.compile(r'^([0-9A-Fa-f:.]+(/\d{1,3})?|any|localhost|link-local|multicast)$')


def _text(key: str, value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if any(c in text for c in '\n\r\x00'):
        raise ValueError('sandbox %s holds a newline or NUL: one property is one line' % key)
    return text.strip()


def _bool(key: str, value: Any) -> Optional[bool]:
    if value is None or value == '':
        return None
    if isinstance(value, bool):
        return value
    text = _text(key, value).lower()
    if text in ('yes', 'true', '1', 'on'):
        return True
    if text in ('no', 'false', '0', 'off'):
        return False
    raise ValueError('sandbox %s must be yes or no, not %r' % (key, value))


def _paths(key: str, value: Any) -> List[str]:
    if value is None or value == '':
        return []
    values = [value] if isinstance(value, str) else list(value)
    out = []
    for raw in values:
        path = _text(key, raw)
        bare = path[1:] if path.startswith('-') else path
        if not bare.startswith('/'):
            raise ValueError('sandbox %s: %r is not an absolute path (a leading "-" may mark it optional)' % (key, raw))
        if any(c.isspace() for c in bare) or '"' in bare or "'" in bare:
            raise ValueError('sandbox %s: %r holds whitespace or a quote, which systemd would split' % (key, raw))
        if path not in out:
            out.append(path)
    return out


def protected_paths(home: str) -> List[str]:
    """``RUNNER_OWN`` under ``home``, each optional (``-``: a missing one is skipped, not an error)."""
    base = home.rstrip('/')
    return ['-%s/%s' % (base, rel) for rel in RUNNER_OWN] if base else []


def manager_paths(uid: int) -> List[str]:
    """The user manager's and the session bus's sockets (and the manager's runtime unit directory) under
    ``/run/user/<uid>``, hidden from every run that mounts: the run is the master's uid, and through them
    ``systemd-run --user`` started an unsandboxed unit, ``systemctl --user set-environment`` poisoned every
    later unit and ``systemctl --user stop`` stopped other items' runs. The runner itself needs neither."""
    return ['-/run/user/%d/systemd' % int(uid), '-/run/user/%d/bus' % int(uid)]


def anchor_paths(home: str) -> List[str]:
    """The directories between ``home`` and a ``RUNNER_OWN`` path (``.config``, ``.local``), each optional.

    With the home writable a run renamed ``~/.config`` away (then a new one would hold a new
    ``runner.json``): the read-only binds below it moved along. Bound onto itself (``BindPaths``, writable,
    as before) a directory is a mount point in the run's namespace, and a mount point cannot be renamed
    (EBUSY). Not ``ReadWritePaths``: systemd drops one under a writable parent of the same mode as
    redundant, so a run whose workdir or profile made the home itself writable lost them (on the bed,
    a real Claude Code run with its workdir in the home renamed ``~/.config``)."""
    base = home.rstrip('/')
    parents = []
    for rel in RUNNER_OWN:
        parts = rel.split('/')[:-1]
        for depth in range(1, len(parts) + 1):
            parent = '/'.join(parts[:depth])
            if parent not in parents and parent not in RUNNER_OWN:
                parents.append(parent)
    return ['-%s/%s' % (base, rel) for rel in parents] if base else []


def properties(settings: Optional[Mapping[str, Any]], writable: Any = (), readonly: Any = (), anchors: Any = (),
               hidden: Any = ()) -> List[str]:
    """The ``Key=value`` properties for ``settings`` (a mapping of systemd names; ``None``/``{}``: none).

    ``writable``: paths made writable for this run in addition to the settings' ``ReadWritePaths``
    (the run's own workspace); ``readonly``: paths no run may write whatever the profile says (the
    runner's own files, ``protected_paths``); ``anchors``: their parents, bound onto themselves (``BindPaths``)
    where the home itself is writable (``ProtectHome`` unset or ``no``, ``ProtectSystem`` not ``strict``) so they
    cannot be renamed (``anchor_paths``);
    ``hidden``: paths no run may reach at all (``manager_paths``); all are added only when a mount key is in force.
    ``ReadWritePaths`` naming one of ``readonly`` exactly is refused (a path inside one stays writable:
    the more specific mount wins). ``IPAddressAllow``
    (a list; non-empty) emits ``IPAddressDeny=any`` first. A value ``None``/``''`` leaves the key
    unset. Raises ``ValueError`` naming the key for anything else.
    """
    settings = dict(settings or {})
    unknown = sorted(str(k) for k in settings if k not in KNOWN)
    if unknown:
        raise ValueError('unknown sandbox setting(s) %s; known: %s' % (', '.join(unknown), ', '.join(ORDER)))
    values: Dict[str, Any] = {}
    for key in BOOL_KEYS:
        flag = _bool(key, settings.get(key))
        if flag is not None:
            values[key] = flag
    for key, choices in CHOICE_KEYS.items():
        if settings.get(key) not in (None, ''):
            text = _text(key, settings[key]).lower()
            text = {'true': 'yes', 'false': 'no'}.get(text, text) if not isinstance(settings[key], bool) else \
                ('yes' if settings[key] else 'no')
            if text not in choices:
                raise ValueError('sandbox %s must be one of %s, not %r' % (key, ', '.join(choices), settings[key]))
            values[key] = text
    for key in PATH_KEYS:
        paths = _paths(key, settings.get(key))
        if paths:
            values[key] = paths
    for key, pattern, what in (('MemoryMax', _BYTES, 'bytes with an optional K/M/G/T suffix, a percentage or infinity'),
                               ('TasksMax', _TASKS, 'a count, a percentage or infinity')):
        if settings.get(key) not in (None, ''):
            text = _text(key, settings[key])
            if isinstance(settings[key], bool) or not pattern.match(text):
                raise ValueError('sandbox %s must be %s, not %r' % (key, what, settings[key]))
            values[key] = text
    if settings.get('CPUWeight') not in (None, ''):
        text = _text('CPUWeight', settings['CPUWeight'])
        if isinstance(settings['CPUWeight'], bool) or not (text == 'idle' or (text.isdigit() and 1 <= int(text) <= 10000)):
            raise ValueError('sandbox CPUWeight must be 1 to 10000 or idle, not %r' % (settings['CPUWeight'],))
        values['CPUWeight'] = text
    allow = settings.get('IPAddressAllow')
    if allow not in (None, '', []):
        addresses = [_text('IPAddressAllow', a) for a in ([allow] if isinstance(allow, str) else list(allow))]
        bad = [a for a in addresses if not _IP.match(a)]
        if bad:
            raise ValueError('sandbox IPAddressAllow: %s is not an address, a prefix or a systemd symbolic name' % ', '.join(bad))
        values['IPAddressAllow'] = addresses

    mounting = [k for k in MOUNT_KEYS if k in values and values[k] not in (False, 'no')]
    if mounting and values.get('PrivateUsers') is not True:
        raise ValueError('sandbox %s needs PrivateUsers=yes: a user manager ignores it otherwise, silently '
                         '(docs/sandbox.md); set PrivateUsers to yes or drop %s' % (', '.join(mounting), ', '.join(mounting)))
    if mounting:
        extra = _paths('ReadWritePaths', [w for w in ([writable] if isinstance(writable, str) else list(writable or ())) if w])
        if extra:
            values['ReadWritePaths'] = values.get('ReadWritePaths', []) + [p for p in extra if p not in values.get('ReadWritePaths', [])]
        fixed = _paths('ReadOnlyPaths', [r for r in ([readonly] if isinstance(readonly, str) else list(readonly or ())) if r])
        bare = dict((p.lstrip('-').rstrip('/'), p) for p in fixed)
        clash = [p for p in values.get('ReadWritePaths', []) if p.lstrip('-').rstrip('/') in bare]
        if clash:
            raise ValueError('sandbox ReadWritePaths %s: the runner\'s own files are read-only to every run; drop it '
                             '(worker_sandbox_read_write_paths)' % ', '.join(clash))
        if fixed:
            values['ReadOnlyPaths'] = values.get('ReadOnlyPaths', []) + [p for p in fixed if p not in values.get('ReadOnlyPaths', [])]
        gone = _paths('InaccessiblePaths', [h for h in ([hidden] if isinstance(hidden, str) else list(hidden or ())) if h])
        if gone:
            values['InaccessiblePaths'] = values.get('InaccessiblePaths', []) + [p for p in gone if p not in values.get('InaccessiblePaths', [])]
        pinned = _paths('BindPaths', [a for a in ([anchors] if isinstance(anchors, str) else list(anchors or ())) if a])
        if pinned and values.get('ProtectHome', 'no') == 'no' and values.get('ProtectSystem') != 'strict':   # the home is writable
            values['BindPaths'] = pinned

    out = []
    for key in ORDER:
        if key not in values:
            continue
        value = values[key]
        if key == 'IPAddressAllow':
            out.append('IPAddressDeny=any')
            out.append('IPAddressAllow=%s' % ' '.join(value))
        elif isinstance(value, bool):
            out.append('%s=%s' % (key, 'yes' if value else 'no'))
        elif isinstance(value, list):
            out.extend('%s=%s' % (key, item) for item in value)
        else:
            out.append('%s=%s' % (key, value))
    return out


__all__ = ['DEFAULTS', 'KNOWN', 'RUNNER_OWN', 'STRICT', 'anchor_paths', 'properties', 'protected_paths']
