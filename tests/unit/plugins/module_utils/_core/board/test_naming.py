# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit and worktree naming, oldest-wins repair (D4, D10, D20)."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import (
    item_of_unit, oldest_wins, systemd_escape, systemd_unescape, unit_name, worktree_name)


@pytest.mark.parametrize('number, repo, expected', [
    (42, '', 'task-42'),
    ('42', '', 'task-42'),
    (1, '', 'task-1'),
    (42, 'acme/widgets', 'task-acme-widgets-42'),
    (42, 'Acme/Widgets', 'task-acme-widgets-42'),          # case-insensitive repos: one name, one lock
    (42, '  acme/widgets ', 'task-acme-widgets-42'),
    (7, 'my-org/my-repo', 'task-my\\x2dorg-my\\x2drepo-7'),
    (7, 'org/repo.js', 'task-org-repo.js-7'),
    (7, 'org/.dotfiles', 'task-org-.dotfiles-7'),           # only a LEADING dot of the whole string escapes
])
def test_unit_name(number, repo, expected):
    assert unit_name(number, repo) == expected


def test_unit_name_has_zero_entropy():
    """D4: the same identity always gives the same name -- no timestamp, attempt or random part."""
    names = set(unit_name(42) for _dummy in range(50)) | set(unit_name('42') for _dummy in range(50))
    assert names == {'task-42'}
    assert unit_name(42, 'a/b') == unit_name(42, 'A/B')


@pytest.mark.parametrize('number, repo', [
    (0, ''), (-3, ''), (True, ''), (None, ''), ('4x', ''), (4.5, ''),
    (1, 'noslash'), (1, 'a/b/c'), (1, '/b'), (1, 'a/'),
])
def test_unit_name_rejects(number, repo):
    with pytest.raises(ValueError):
        unit_name(number, repo)


@pytest.mark.parametrize('name, expected', [
    ('task-42', {'number': 42, 'repo': ''}),
    ('task-42.service', {'number': 42, 'repo': ''}),
    ('task-acme-widgets-42', {'number': 42, 'repo': 'acme/widgets'}),
    ('task-my\\x2dorg-my\\x2drepo-7.service', {'number': 7, 'repo': 'my-org/my-repo'}),
    # not ours / not canonical / carrying entropy (D20: the parser must not half-match these)
    ('task-', None),
    ('task-042', None),
    ('task-abc', None),
    ('task-42-1700000000', None),
    ('task-42-1700000000-ab12', None),
    ('task-42-1700000000-12345', {'number': 12345, 'repo': '42/1700000000'}),  # indistinguishable from a repo; documented
    ('fleet-notify@task-42.service', None),
    ('task-42.timer', None),
    ('Task-42', None),
    ('task-Acme-widgets-42', None),           # non-canonical case
    ('task-acme-wid-gets-42', None),          # two slashes after unescaping
    ('task-acme-w\\x2-1', None),              # malformed escape
    ('ssh.service', None),
    ('', None),
    (None, None),
    (42, None),
])
def test_item_of_unit(name, expected):
    assert item_of_unit(name) == expected


@pytest.mark.parametrize('number, repo', [(1, ''), (99999, ''), (3, 'a/b'), (3, 'my-org/x_y.z'), (12, 'o/ünïcode')])
def test_round_trip(number, repo):
    name = unit_name(number, repo)
    assert item_of_unit(name) == {'number': number, 'repo': repo.lower()}
    assert item_of_unit(name + '.service') == {'number': number, 'repo': repo.lower()}


@pytest.mark.parametrize('text', ['a/b', 'my-org/my-repo', '.x/y', 'o/ünï', 'a b/c\\d'])
def test_escape_round_trip(text):
    escaped = systemd_escape(text)
    assert '/' not in escaped
    assert systemd_unescape(escaped) == text


@pytest.mark.parametrize('number, host, repo, expected', [
    (42, 'w1', '', 'task-42@w1'),
    (42, 'W1.example.org', '', 'task-42@w1.example.org'),
    (7, 'w1', 'my-org/r', 'task-my%x2dorg-r-7@w1'),
    (7, 'we ird/host', '', 'task-7@we_ird_host'),
])
def test_worktree_name(number, host, repo, expected):
    assert worktree_name(number, host, repo) == expected
    assert '/' not in worktree_name(number, host, repo)


def test_worktree_name_needs_host():
    with pytest.raises(ValueError):
        worktree_name(1, '')


def _u(name, start_us, host='w1', master='agent1', inv=''):
    return {'name': name, 'start_us': start_us, 'host': host, 'master': master, 'invocation_id': inv}


@pytest.mark.parametrize('units, keep_index', [
    ([_u('task-1', 300), _u('task-1', 100), _u('task-1', 200)], 1),
    ([_u('task-1', 100)], 0),
    # a unit with unknown start never beats one with a known start
    ([_u('task-1', None), _u('task-1', 5)], 1),
    ([_u('task-1', 0), _u('task-1', 5)], 1),
    ([_u('task-1', 'garbage'), _u('task-1', '7')], 1),
    # exact ties fall back to host/master text, not input order
    ([_u('task-1', 100, host='w2'), _u('task-1', 100, host='w1')], 1),
    ([_u('task-1', 100, master='b'), _u('task-1', 100, master='a')], 1),
])
def test_oldest_wins(units, keep_index):
    keep, stop = oldest_wins(units)
    assert keep is units[keep_index]
    assert len(stop) == len(units) - 1
    assert keep not in stop
    # deterministic: any input order gives the same answer
    keep2, stop2 = oldest_wins(list(reversed(units)))
    assert keep2 is keep and sorted(map(id, stop2)) == sorted(map(id, stop))


def test_oldest_wins_empty():
    assert oldest_wins([]) == (None, [])
    assert oldest_wins(None) == (None, [])


def test_d4_story_kills_landed_on_the_survivor():
    """D4: both duplicates were killed by hand, picking by eye. The repair keeps the older one
    (it has done the most work) and stops exactly the younger one."""
    older = _u('task-77', 1_000_000, host='w1', inv='aaa')
    younger = _u('task-77', 6_000_000, host='w1', master='agent2', inv='bbb')  # five seconds later
    keep, stop = oldest_wins([younger, older])
    assert keep is older and stop == [younger]


def test_oldest_wins_across_workers_uses_wall_clock():
    """Monotonic stamps count from each boot: a long-up worker's younger run has a BIGGER
    monotonic stamp than a freshly booted worker's older run. Across hosts, wall clock decides."""
    fresh_boot_but_younger = dict(_u('task-9', 5_000_000, host='w2'), start_wall_us=1_800_000_011_000_000)
    long_up_but_older = dict(_u('task-9', 900_000_000_000, host='w1'), start_wall_us=1_800_000_000_000_000)
    keep, stop = oldest_wins([fresh_boot_but_younger, long_up_but_older])
    assert keep is long_up_but_older and stop == [fresh_boot_but_younger]
    # on one host monotonic is used even when wall stamps exist (wall clocks can step)
    a = dict(_u('task-9', 100, host='w1'), start_wall_us=2)
    b = dict(_u('task-9', 200, host='w1'), start_wall_us=1)
    assert oldest_wins([b, a])[0] is a
    # an explicit key wins
    assert oldest_wins([b, a], key='start_wall_us')[0] is b


def test_d20_story_every_name_we_mint_is_extracted():
    """D20: entropy added to the unit name silently broke the scheduler's parser -- eleven live
    units, zero extracted, and one issue ran on two workers. Whatever unit_name mints,
    item_of_unit must extract; this fails the moment the two drift apart."""
    minted = [unit_name(n) for n in range(1, 12)] + [unit_name(n, 'my-org/my.repo') for n in range(1, 12)]
    extracted = [item_of_unit(name + '.service') for name in minted]
    assert None not in extracted
    assert len(set((e['repo'], e['number']) for e in extracted)) == 22


# --- a namespace per board (issue 18) -------------------------------------------------------------

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import board_identity  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import board_id, lease_name  # noqa: E402


def _id(spec):
    return board_id(*board_identity(spec))


def test_a_board_id_is_stable_short_and_carries_no_secret():
    pg = {'kind': 'ledger', 'dsn': 'postgresql://fleet:s3cret@db.example:5432/fleet'}
    assert _id(pg) == _id({'kind': 'ledger', 'dsn': 'postgresql://other:pw2@DB.example/fleet'}), 'user, password, case, default port'
    assert _id(pg) == _id({'kind': 'ledger', 'dsn': "host=db.example dbname=fleet user=x password='s3cret'"}), 'key=value form'
    assert _id(pg) != _id({'kind': 'ledger', 'dsn': 'postgresql://fleet@db.example:5432/fleet2'})
    assert _id(pg).startswith('pg-fleet-') and 's3cret' not in _id(pg) and len(_id(pg)) <= 60
    gh = {'kind': 'github', 'owner': 'Acme', 'project': 7, 'token': 'ghp_secret'}
    assert _id(gh) == _id(dict(gh, owner='acme', token='other')) and _id(gh).startswith('github-acme-7-')
    assert _id(gh) != _id(dict(gh, project=8))


def test_two_sqlite_files_are_two_boards(tmp_path):
    a, b = {'kind': 'ledger', 'path': str(tmp_path / 'a.sqlite3')}, {'kind': 'ledger', 'path': str(tmp_path / 'b.sqlite3')}
    assert _id(a) != _id(b) and _id(a) == _id({'kind': 'ledger', 'path': str(tmp_path / '.' / 'a.sqlite3')})
    assert _id(a).startswith('sqlite-a-')


def test_the_lease_name_is_the_unit_name_in_the_boards_namespace():
    assert lease_name('task-42', 'pg-fleet-1a2b3c4d') == 'task-42@pg-fleet-1a2b3c4d'
    assert lease_name('task-42') == 'task-42'
