# -*- coding: utf-8 -*-
"""_core.dispatch.sandbox (settings -> unit properties) and _host.sandbox (the sandbox.json reader): issue 14, item 4."""
from __future__ import annotations

import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.sandbox import (
    DEFAULTS, KNOWN, STRICT, anchor_paths, manager_paths, properties, protected_paths)
from ansible_collections.fleet.dispatch.plugins.module_utils._host.sandbox import read_sandbox_file
from ansible_collections.fleet.dispatch.plugins.module_utils._host.systemd import SystemdUser


def test_the_defaults_and_the_strict_profile_in_a_stable_order():
    assert properties(DEFAULTS) == ['NoNewPrivileges=yes', 'PrivateUsers=yes', 'ProtectSystem=full']
    assert properties(STRICT, writable=['/w']) == ['NoNewPrivileges=yes', 'PrivateUsers=yes', 'PrivateTmp=yes',
                                                   'ProtectSystem=strict', 'ProtectHome=read-only', 'ReadWritePaths=/w']


def test_paths_limits_and_the_egress_list():
    got = properties({'NoNewPrivileges': 'yes', 'PrivateUsers': True, 'ProtectHome': 'read-only',
                      'ReadWritePaths': ['/home/m/.local/state/fleet-dispatch', '-/home/m/.claude'],
                      'InaccessiblePaths': '-/home/m/.config/fleet-dispatch/credentials.env',
                      'MemoryMax': '4G', 'TasksMax': 512, 'CPUWeight': '50', 'IPAddressAllow': ['10.0.0.0/8', 'localhost']},
                     writable=['/home/m/fleet/workspaces/task-1', '/home/m/.claude'])
    assert got == ['NoNewPrivileges=yes', 'PrivateUsers=yes', 'ProtectHome=read-only',
                   'ReadWritePaths=/home/m/.local/state/fleet-dispatch', 'ReadWritePaths=-/home/m/.claude',
                   'ReadWritePaths=/home/m/fleet/workspaces/task-1', 'ReadWritePaths=/home/m/.claude',
                   'InaccessiblePaths=-/home/m/.config/fleet-dispatch/credentials.env',
                   'MemoryMax=4G', 'TasksMax=512', 'CPUWeight=50', 'IPAddressDeny=any', 'IPAddressAllow=10.0.0.0/8 localhost']


def test_no_settings_no_properties_and_the_workdir_only_with_a_mount_key():
    assert properties(None) == [] and properties({}, writable=['/w']) == []
    assert properties({'NoNewPrivileges': True}, writable=['/w']) == ['NoNewPrivileges=yes']
    assert properties({'MemoryMax': '', 'TasksMax': None, 'IPAddressAllow': []}) == []


@pytest.mark.parametrize('settings, words', [
    ({'ExecStartPre': '/bin/sh -c evil'}, 'unknown sandbox setting'),
    ({'NoNewPrivileges': 'maybe'}, 'yes or no'),
    ({'PrivateUsers': True, 'ProtectSystem': 'very'}, 'ProtectSystem must be one of'),
    ({'PrivateUsers': True, 'ReadWritePaths': ['relative/dir']}, 'absolute'),
    ({'PrivateUsers': True, 'ReadWritePaths': ['/a b']}, 'whitespace'),
    ({'PrivateUsers': True, 'ReadWritePaths': ['/a\nExecStart=/bin/evil']}, 'newline'),
    ({'MemoryMax': '4 GB'}, 'MemoryMax must be'),
    ({'MemoryMax': '1G\nUser=root'}, 'newline'),
    ({'TasksMax': True}, 'TasksMax must be'),
    ({'CPUWeight': '0'}, 'CPUWeight must be'),
    ({'IPAddressAllow': ['example.com']}, 'not an address'),
    ({'ProtectHome': 'read-only'}, 'needs PrivateUsers=yes'),
    ({'PrivateUsers': False, 'PrivateTmp': True}, 'needs PrivateUsers=yes'),
])
def test_refusals_name_the_key(settings, words):
    with pytest.raises(ValueError) as exc:
        properties(settings)
    assert words in str(exc.value)


def test_switched_off_mount_keys_need_no_private_users():
    assert properties({'PrivateTmp': False, 'ProtectHome': 'no'}) == ['PrivateTmp=no', 'ProtectHome=no']


def test_every_known_key_is_emitted():
    settings = dict(STRICT, ReadWritePaths=['/a'], ReadOnlyPaths=['/b'], InaccessiblePaths=['/c'], MemoryMax='1G',
                    TasksMax='10%', CPUWeight='idle', IPAddressAllow='127.0.0.1')
    emitted = set(p.partition('=')[0] for p in properties(settings)) - {'IPAddressDeny'}
    assert emitted == set(KNOWN)


class _Never(object):
    def run(self, argv, env=None, data=None):  # pragma: no cover - transient_argv is pure
        raise AssertionError(argv)


def test_transient_argv_passes_one_p_per_property_before_the_command():
    sd = SystemdUser(_Never(), uid=1000, environ={})
    argv = sd.transient_argv('task-1', ['fleet-runner'], '/usr/bin', workdir='/w',
                             properties=['NoNewPrivileges=yes', 'ReadWritePaths=/w'])
    tail = argv[argv.index('-p', argv.index('Type=exec') + 1):]
    assert tail == ['-p', 'NoNewPrivileges=yes', '-p', 'ReadWritePaths=/w', '--working-directory=/w', '--', 'fleet-runner']


@pytest.mark.parametrize('prop', ['NoNewPrivileges', 'X=1\nExecStart=/bin/sh', '=1', 'a b=1'])
def test_transient_argv_refuses_a_property_that_is_not_one_line(prop):
    sd = SystemdUser(_Never(), uid=1000, environ={})
    with pytest.raises(ValueError) as exc:
        sd.transient_argv('task-1', ['fleet-runner'], '/usr/bin', properties=[prop])
    assert 'not one Key=value line' in str(exc.value)


def test_the_sandbox_file_reader(tmp_path):
    path = tmp_path / 'sandbox.json'
    assert read_sandbox_file(str(path)) is None
    path.write_text(json.dumps(DEFAULTS))
    assert read_sandbox_file(str(path)) == DEFAULTS
    for text in ('{not json', '["NoNewPrivileges"]'):
        path.write_text(text)
        with pytest.raises(ValueError) as exc:
            read_sandbox_file(str(path))
        assert str(path) in str(exc.value) and 'fleet.dispatch.worker' in str(exc.value)


def test_the_runners_own_files_are_read_only_whenever_a_mount_key_is_in_force():
    ro = protected_paths('/home/m/')
    assert ro[:3] == ['-/home/m/.local/bin', '-/home/m/.config/fleet-dispatch', '-/home/m/.config/systemd']
    assert '-/home/m/.ssh' in ro and '-/home/m/.gitconfig' in ro
    got = properties(DEFAULTS, writable=['/w'], readonly=ro)
    assert got[:4] == ['NoNewPrivileges=yes', 'PrivateUsers=yes', 'ProtectSystem=full', 'ReadWritePaths=/w']
    assert got[4:] == ['ReadOnlyPaths=%s' % p for p in ro]
    # without a mount namespace a user manager applies none of it: nothing is claimed
    assert properties({'NoNewPrivileges': True}, writable=['/w'], readonly=ro) == ['NoNewPrivileges=yes']
    # a path inside one stays writable (the more specific mount wins); the same path is refused
    assert 'ReadWritePaths=/home/m/.config/fleet-dispatch/ledger' in properties(
        dict(DEFAULTS, ReadWritePaths=['/home/m/.config/fleet-dispatch/ledger']), readonly=ro)
    with pytest.raises(ValueError, match='read-only to every run'):
        properties(dict(DEFAULTS, ReadWritePaths=['/home/m/.ssh/']), readonly=ro)


def test_the_sandbox_file_others_could_write_is_refused(tmp_path):
    path = tmp_path / 'sandbox.json'
    path.write_text('{}')
    path.chmod(0o646)
    with pytest.raises(ValueError, match='lets the group or others write it'):
        read_sandbox_file(str(path))


def test_the_parents_of_the_runners_files_are_pinned_where_the_home_is_writable():
    """A run renamed ~/.config away (on the bed, default profile): a bound directory cannot be renamed."""
    ro, pins = protected_paths('/home/m'), anchor_paths('/home/m')
    assert pins == ['-/home/m/.local', '-/home/m/.config', '-/home/m/.local/share']
    got = properties(DEFAULTS, writable=['/w'], readonly=ro, anchors=pins)
    assert got[3:7] == ['ReadWritePaths=/w', 'BindPaths=-/home/m/.local', 'BindPaths=-/home/m/.config',
                        'BindPaths=-/home/m/.local/share']
    # bound, not ReadWritePaths: systemd drops those under a writable parent, e.g. a workdir that is the home
    home_rw = properties(DEFAULTS, writable=['/home/m'], readonly=ro, anchors=pins)
    assert 'BindPaths=-/home/m/.config' in home_rw and 'ReadWritePaths=-/home/m/.config' not in home_rw
    # a read-only home (or a strict system) is not made writable by them
    for profile in (STRICT, dict(DEFAULTS, ProtectSystem='strict'), dict(DEFAULTS, ProtectHome='read-only')):
        assert not [p for p in properties(profile, readonly=ro, anchors=pins) if '-/home/m/.' in p and 'Only' not in p]


def test_the_user_managers_sockets_are_hidden_from_every_run_that_mounts():
    """Through ``/run/user/<uid>/systemd/private`` and the bus a run drove its own user manager: an unsandboxed
    ``systemd-run --user``, ``set-environment`` for every later unit, ``stop`` of other items' runs."""
    hidden = manager_paths(1000)
    assert hidden == ['-/run/user/1000/systemd', '-/run/user/1000/bus']
    for profile in (DEFAULTS, STRICT):
        got = properties(profile, writable=['/w'], hidden=hidden)
        assert ['InaccessiblePaths=-/run/user/1000/systemd', 'InaccessiblePaths=-/run/user/1000/bus'] == \
            [p for p in got if p.startswith('InaccessiblePaths=')], got
    # no mount namespace, nothing can be hidden: none is claimed
    assert not [p for p in properties({'NoNewPrivileges': True}, hidden=hidden) if 'Inaccessible' in p]
