# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A master's directories and files in one step (_host/master_files.py), on real files; and the module's
module's main() is tests/unit/plugins/modules/test_master_files_module.py."""
from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._host.master_files import (
    HIDDEN, MasterFilesError, converge, parse_mode)

ROOT = os.getuid() == 0
OTHER = 43210   # an unused uid and gid (chown to it needs root)


def mode(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def tree(tmp_path, secret='s3cr3t-value'):
    home = tmp_path / 'home'
    return [
        {'path': str(home), 'state': 'directory', 'mode': '0755'},
        {'path': str(home / '.config' / 'fleet'), 'state': 'directory', 'mode': '0700'},
        {'path': str(home / '.local'), 'state': 'directory'},
        {'path': str(home / '.config' / 'fleet' / 'path'), 'content': '/usr/bin:/bin\n', 'mode': '0644'},
        {'path': str(home / '.config' / 'fleet' / 'credentials.env'), 'content': 'TOKEN="%s"\n' % secret,
         'mode': '0600', 'sensitive': True},
        {'path': str(home / '.gitconfig'), 'content': '', 'force': False},
    ]


def test_a_fresh_tree_is_made_with_its_modes_and_a_rerun_changes_nothing(tmp_path):
    first = converge(tree(tmp_path), umask=0o022)
    home = tmp_path / 'home'
    assert first['changed'] and first['dirs_made'] == [str(home), str(home / '.config' / 'fleet'), str(home / '.local')]
    assert (home / '.config' / 'fleet' / 'path').read_text() == '/usr/bin:/bin\n'
    assert mode(home / '.config' / 'fleet') == 0o700 and mode(home / '.config') == 0o700   # a made parent: its mode too
    assert mode(home / '.config' / 'fleet' / 'credentials.env') == 0o600
    assert mode(home / '.gitconfig') == 0o644 and (home / '.gitconfig').read_text() == ''
    assert sorted(os.listdir(str(home / '.config' / 'fleet'))) == ['credentials.env', 'path']   # no temporary left behind
    again = converge(tree(tmp_path), umask=0o022)
    assert not again['changed'] and again['diff'] == [] and len(again['unchanged']) == 6


def test_check_mode_writes_nothing_and_reports_what_it_would_do(tmp_path):
    res = converge(tree(tmp_path), check=True)
    assert res['changed'] and len(res['dirs_made']) == 3 and len(res['written']) == 3
    assert not (tmp_path / 'home').exists()
    converge(tree(tmp_path))
    os.chmod(str(tmp_path / 'home' / '.config' / 'fleet' / 'path'), 0o666)
    (tmp_path / 'home' / '.config' / 'fleet' / 'credentials.env').write_text('old\n')
    res = converge(tree(tmp_path, secret='new'), check=True)
    assert res['fixed'] == [str(tmp_path / 'home' / '.config' / 'fleet' / 'path')]
    assert res['written'] == [str(tmp_path / 'home' / '.config' / 'fleet' / 'credentials.env')]
    assert mode(tmp_path / 'home' / '.config' / 'fleet' / 'path') == 0o666
    assert (tmp_path / 'home' / '.config' / 'fleet' / 'credentials.env').read_text() == 'old\n'


def test_the_diff_shows_a_file_but_never_a_sensitive_one(tmp_path):
    converge(tree(tmp_path, secret='first-secret'))
    path = tmp_path / 'home' / '.config' / 'fleet' / 'path'
    path.write_text('/old\n')
    res = converge(tree(tmp_path, secret='second-secret'))
    text = json.dumps(res)
    assert 'first-secret' not in text and 'second-secret' not in text
    by_path = dict((d['before_header'], d) for d in res['diff'])
    assert by_path[str(path)]['before'] == '/old\n' and by_path[str(path)]['after'] == '/usr/bin:/bin\n'
    assert by_path[str(path.parent / 'credentials.env')]['before'] == HIDDEN
    assert (path.parent / 'credentials.env').read_text() == 'TOKEN="second-secret"\n'


def test_an_existing_directory_keeps_a_mode_it_was_not_given_and_an_unforced_file_its_content(tmp_path):
    converge(tree(tmp_path))
    os.chmod(str(tmp_path / 'home' / '.local'), 0o750)
    (tmp_path / 'home' / '.gitconfig').write_text('[user]\n')
    os.utime(str(tmp_path / 'home' / '.gitconfig'), (1000, 1000))
    os.chmod(str(tmp_path / 'home' / '.config' / 'fleet'), 0o755)
    res = converge(tree(tmp_path))
    assert res['fixed'] == [str(tmp_path / 'home' / '.config' / 'fleet')]
    assert mode(tmp_path / 'home' / '.local') == 0o750 and mode(tmp_path / 'home' / '.config' / 'fleet') == 0o700
    assert (tmp_path / 'home' / '.gitconfig').read_text() == '[user]\n'
    assert os.stat(str(tmp_path / 'home' / '.gitconfig')).st_mtime == 1000


def test_a_file_without_a_mode_keeps_its_own_when_replaced(tmp_path):
    path = tmp_path / 'f'
    path.write_text('a')
    os.chmod(str(path), 0o640)
    res = converge([{'path': str(path), 'content': 'b'}])
    assert res['written'] == [str(path)] and mode(path) == 0o640 and path.read_text() == 'b'


def test_a_symlink_at_a_file_path_is_replaced_never_written_through(tmp_path):
    target = tmp_path / 'target'
    target.write_text('keep')
    link = tmp_path / 'link'
    link.symlink_to(target)
    unforced = tmp_path / 'unforced'
    unforced.symlink_to(target)
    res = converge([{'path': str(link), 'content': 'new', 'mode': '0600'},
                    {'path': str(unforced), 'content': '', 'force': False, 'mode': '0600'}])
    assert res['written'] == [str(link)] and res['unchanged'] == [str(unforced)]
    assert not link.is_symlink() and link.read_text() == 'new' and target.read_text() == 'keep'
    assert unforced.is_symlink() and mode(target) != 0o600


def test_absent_removes_and_then_is_unchanged(tmp_path):
    path = tmp_path / 'hook'
    path.write_text('x')
    entry = [{'path': str(path), 'state': 'absent'}]
    assert converge(entry, check=True)['removed'] == [str(path)] and path.exists()
    assert converge(entry)['removed'] == [str(path)] and not path.exists()
    assert not converge(entry)['changed']


@pytest.mark.skipif(not ROOT, reason='chown to another uid needs root')
def test_owner_and_group_are_set_on_what_is_made_and_fixed_on_what_exists(tmp_path):
    d = tmp_path / 'd'
    entries = [{'path': str(d), 'state': 'directory', 'owner': str(OTHER), 'group': str(OTHER), 'mode': '0700'},
               {'path': str(d / 'secret'), 'content': 'x', 'owner': str(OTHER), 'group': str(OTHER), 'mode': '0600',
                'sensitive': True}]
    converge(entries)
    for p in (d, d / 'secret'):
        assert (os.stat(str(p)).st_uid, os.stat(str(p)).st_gid) == (OTHER, OTHER)
    os.chown(str(d / 'secret'), 0, 0)
    res = converge(entries)
    assert res['fixed'] == [str(d / 'secret')] and os.stat(str(d / 'secret')).st_uid == OTHER
    assert res['diff'] == [{'before_header': str(d / 'secret'), 'after_header': str(d / 'secret'),
                            'before': 'group: 0\nowner: 0\n', 'after': 'group: %d\nowner: %d\n' % (OTHER, OTHER)}]


def test_what_cannot_be_is_refused_with_the_path(tmp_path):
    (tmp_path / 'file').write_text('')
    with pytest.raises(MasterFilesError, match='is not a directory'):
        converge([{'path': str(tmp_path / 'file'), 'state': 'directory'}])
    with pytest.raises(MasterFilesError, match='is a directory'):
        converge([{'path': str(tmp_path), 'content': 'x'}])
    with pytest.raises(MasterFilesError, match='absolute'):
        converge([{'path': 'relative', 'content': 'x'}])
    with pytest.raises(MasterFilesError, match='octal'):
        parse_mode('u=rw')
    assert parse_mode('0644') == 0o644 and parse_mode(0o600) == 0o600 and parse_mode(None) is None
