# -*- coding: utf-8 -*-
"""_host/identity.py: one function run as each master, the masters in forked children (issue 13)."""
from __future__ import annotations

import os
import pwd

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._host.identity import for_each_master

ME = pwd.getpwuid(os.getuid()).pw_name


def whoami(name, warn):
    warn('read as %s' % name)
    return {'uid': os.getuid(), 'home': os.environ['HOME'], 'runtime': os.environ.get('XDG_RUNTIME_DIR'),
            'bus': os.environ.get('DBUS_SESSION_BUS_ADDRESS'), 'pid': os.getpid()}


def test_the_master_the_call_runs_as_is_read_in_process():
    out = for_each_master([ME], whoami)
    assert out[ME]['ok'] and out[ME]['value']['pid'] == os.getpid() and out[ME]['warnings'] == ['read as %s' % ME]


def test_an_unknown_user_and_a_raising_function_fail_alone():
    def boom(name, warn):
        raise RuntimeError('no bus for %s' % name)
    out = for_each_master([ME, 'no-such-user-fleet'], boom)
    assert out['no-such-user-fleet'] == {'ok': False, 'warnings': [], 'msg': 'no such user on this worker: no-such-user-fleet'}
    assert not out[ME]['ok'] and 'no bus for %s' % ME in out[ME]['msg']


@pytest.mark.skipif(os.getuid() != 0, reason='switching identity needs root')
def test_root_switches_to_each_master_in_a_child_with_its_login_environment():
    other = pwd.getpwnam('nobody')
    out = for_each_master(['nobody', ME], whoami)
    child = out['nobody']
    assert child['ok'], child
    assert child['value']['uid'] == other.pw_uid and child['value']['pid'] != os.getpid()
    assert child['value']['runtime'] == '/run/user/%d' % other.pw_uid
    assert child['value']['bus'] == 'unix:path=/run/user/%d/bus' % other.pw_uid
    assert child['value']['home'] == other.pw_dir and child['warnings'] == ['read as nobody']
    assert out[ME]['value']['pid'] == os.getpid() and os.getuid() == 0   # the parent kept its identity


def test_a_leading_tilde_is_the_masters_home_never_the_callers():
    from ansible_collections.fleet.dispatch.plugins.module_utils._host.identity import in_home
    assert in_home('~/fleet/clones/main', '/home/d1') == '/home/d1/fleet/clones/main'
    assert in_home('~', '/home/d1') == '/home/d1'
    assert in_home('/srv/clone', '/home/d1') == '/srv/clone' and in_home('~other/x', '/home/d1') == '~other/x'
