# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub board's read memory (board option ``read_memory``) against the fake GitHub.

What is asserted: the memory only skips work. A skipped item is held (``deferred``), never judged on
its page row; anything the page shows moving makes it read; every item is read within
``full_read_every`` cycles; a missing, foreign or broken file is a full read; the file holds no
status, marker or decision.
"""

from __future__ import annotations

import datetime as _dt
import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import memory as _memory
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.announce import NEVER
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate

UTC = _dt.timezone.utc
NOW = _dt.datetime(2030, 1, 1, tzinfo=UTC)
PAST = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
REPO = 'acme/app'
PROJECT = ('acme', 1)
TOKEN = 'ghp_test_secret_token_value'
EVERY = 4


@pytest.fixture
def gh(fake_github):
    """The fake with its store's clock well before its answers' ``Date``: the items were last touched
    long before the reads (``memory.SETTLE_SECONDS``)."""
    fake = fake_github(TOKEN)
    fake.store.clock = lambda: PAST
    return fake


def read(gh, path, every=EVERY, **extra):
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
            'owner_type': 'organization', 'read_memory': str(path), 'full_read_every': every}
    spec.update(extra)
    with open_board(spec) as board:
        return board.read()


def board_of(gh, n, blocked=0):
    """``n`` Ready issues with a human comment each; the last ``blocked`` of them blocked by an open issue."""
    blocker = gh.store.add_issue(REPO, 'the blocker', project=PROJECT, status='Backlog')
    issues = []
    for k in range(n):
        issue = gh.store.add_issue(REPO, 'item %d' % k, project=PROJECT, status='Ready')
        gh.store.add_comment(REPO, issue['number'], 'a note', author='alice')
        if k >= n - blocked:
            gh.store.add_blocker(REPO, issue['number'], REPO, blocker['number'])
        issues.append(issue)
    return issues, blocker


def split(result):
    """(ids read this cycle, ids deferred) among the Ready items."""
    ready = [i for i in result.items if i.status == 'Ready']
    return set(i.id for i in ready if not i.deferred), set(i.id for i in ready if i.deferred)


def test_no_memory_file_is_a_full_read_and_the_next_cycle_skips_what_did_not_move(gh, tmp_path):
    issues, _blocker = board_of(gh, 12)
    path = tmp_path / 'memory.json'
    first = read(gh, path)
    assert split(first) == (set(i['id'] for i in issues), set())
    assert first.cost['read_memory']['note'] == 'no memory yet: a full read'
    details_after_first = len(gh.graphql_calls('Details'))
    second = read(gh, path)
    done, deferred = split(second)
    due = set(i['id'] for i in issues if _memory.slice_of(i['id'], EVERY) == 1 % EVERY)
    assert done == due, 'only the slice whose turn it is is read'
    assert deferred == set(i['id'] for i in issues) - due and deferred
    assert second.cost['deferred'] == len(deferred) and second.cost['read_memory']['cycle'] == 1
    assert len(gh.graphql_calls('Details')) - details_after_first == (1 if due else 0)


def test_a_deferred_item_is_held_never_judged_on_its_page_row(gh, tmp_path):
    board_of(gh, 8)
    path = tmp_path / 'memory.json'
    read(gh, path)
    second = read(gh, path)
    deferred = [i for i in second.items if i.deferred]
    assert deferred, 'the fixture needs one deferred item'
    for item in deferred:
        assert item.comments == [], 'the page row carries no comments: nothing to judge'
        verdict = evaluate(item, now=NOW)
        assert (verdict.eligible, verdict.reason) == (False, 'deferred')
    assert 'deferred' in NEVER, 'the mechanism working is never announced'


def test_a_new_comment_makes_the_item_read_the_next_cycle(gh, tmp_path):
    issues, _blocker = board_of(gh, 8)
    path = tmp_path / 'memory.json'
    read(gh, path)
    idle = [i for i in issues if _memory.slice_of(i['id'], EVERY) != 1 % EVERY]
    target = idle[0]
    gh.store.clock = lambda: PAST + _dt.timedelta(minutes=5)
    gh.store.add_comment(REPO, target['number'], 'a later note', author='alice')
    second = read(gh, path)
    item = [i for i in second.items if i.id == target['id']][0]
    assert not item.deferred
    assert [c.body for c in item.comments] == ['a note', 'a later note']


def test_a_closing_blocker_releases_the_item_without_waiting_for_its_turn(gh, tmp_path):
    issues, blocker = board_of(gh, 6, blocked=6)
    path = tmp_path / 'memory.json'
    first = read(gh, path)
    assert all(evaluate(i, now=NOW).reason == 'blocked' for i in first.items if i.status == 'Ready')
    gh.store.set_state(blocker, 'closed')
    second = read(gh, path)
    ready = [i for i in second.items if i.status == 'Ready']
    assert [i for i in ready if i.deferred] == [], 'the summary count moved: every item is read'
    assert set(evaluate(i, now=NOW).reason for i in ready) == {'eligible'}


def test_every_item_is_read_in_full_within_full_read_every_cycles(gh, tmp_path):
    issues, _blocker = board_of(gh, 20, blocked=5)
    path = tmp_path / 'memory.json'
    read(gh, path)
    seen = set()
    for _cycle in range(EVERY):
        done, _deferred = split(read(gh, path))
        seen |= done
    assert seen == set(i['id'] for i in issues)


@pytest.mark.parametrize('content, note', [
    ('{not json', 'memory unreadable'),
    (json.dumps({'version': 1, 'board': 'another board', 'cycle': 3, 'read': {}}), 'memory of another board'),
    (json.dumps(['a', 'list']), 'memory of another board'),
])
def test_a_broken_or_foreign_memory_is_a_full_read(gh, tmp_path, content, note):
    issues, _blocker = board_of(gh, 6)
    path = tmp_path / 'memory.json'
    read(gh, path)
    path.write_text(content)
    result = read(gh, path)
    assert split(result) == (set(i['id'] for i in issues), set())
    assert result.cost['read_memory']['note'].startswith(note)


def test_an_unwritable_memory_fails_open_to_full_reads(gh, tmp_path):
    issues, _blocker = board_of(gh, 4)
    path = tmp_path / 'not-a-dir'
    path.write_text('a file where the memory directory should be')
    for _cycle in range(2):
        result = read(gh, path / 'memory.json')
        assert split(result) == (set(i['id'] for i in issues), set())
        assert 'could not write the read memory' in result.cost['read_memory']['note']


def test_the_memory_holds_page_rows_only(gh, tmp_path):
    issues, _blocker = board_of(gh, 3)
    gh.store.add_comment(REPO, issues[0]['number'], '\N{ROCKET} start', author='fleet-bot')
    path = tmp_path / 'memory.json'
    read(gh, path)
    data = json.loads(path.read_text())
    assert sorted(data) == ['board', 'cycle', 'read', 'version']
    assert sorted(data['read']) == sorted(i['id'] for i in issues)
    for value in data['read'].values():
        updated, open_blockers, total = value.split('|')
        assert updated.startswith('20') and (open_blockers, total) == ('0', '0')
    assert 'Ready' not in json.dumps(data['read']) and 'start' not in json.dumps(data)


def test_an_item_that_left_the_ready_column_is_forgotten_at_the_next_full_page(gh, tmp_path):
    issues, _blocker = board_of(gh, 3)
    path = tmp_path / 'memory.json'
    read(gh, path)
    item = [i for i in gh.store.project(*PROJECT)['items'] if i['content']['id'] == issues[0]['id']][0]
    gh.store.set_item_status(item, 'Backlog')
    for cycle in range(1, EVERY + 1):
        result = read(gh, path)
        assert issues[0]['id'] not in [i.id for i in result.items]
        kept = issues[0]['id'] in json.loads(path.read_text())['read']
        assert kept == (cycle % EVERY != 0), 'a page of unblocked rows keeps what it did not see; a full page forgets'


def test_between_full_pages_the_page_leaves_out_blocked_rows_and_reads_every_one_on_a_full_page(gh, tmp_path):
    issues, blocker = board_of(gh, 6, blocked=3)
    free, held = set(i['id'] for i in issues[:3]), set(i['id'] for i in issues[3:])
    path = tmp_path / 'memory.json'
    first = read(gh, path)
    assert first.cost['read_memory']['page'] == 'full' and set(i.id for i in first.items) == free | held
    for cycle in range(1, EVERY + 1):
        blockers_before = len(gh.graphql_calls('Blockers'))
        result = read(gh, path)
        on_page = set(i.id for i in result.items)
        if cycle % EVERY:
            assert result.cost['read_memory']['page'] == 'unblocked rows'
            assert on_page == free and len(gh.graphql_calls('Blockers')) == blockers_before
        else:
            assert result.cost['read_memory']['page'] == 'full'
            assert on_page == free | held
            assert set(i.id for i in result.items if i.blockers) == held, 'every blocked row read on a full page'
            assert all(evaluate(i, now=NOW).reason == 'blocked' for i in result.items if i.id in held)
    gh.store.set_state(blocker, 'closed')
    freed = read(gh, path)
    assert freed.cost['read_memory']['page'] == 'unblocked rows'
    assert set(i.id for i in freed.items) == free | held, 'a closed blocker puts its rows back on the next page'
    assert set(i.id for i in freed.items if evaluate(i, now=NOW).reason == 'eligible') >= held, \
        'a row back on the page moved: read in full, not deferred'


def test_full_read_every_must_be_positive(gh, tmp_path):
    with pytest.raises(Exception, match='full_read_every'):
        read(gh, tmp_path / 'memory.json', every=0)


def test_an_item_updated_within_the_settle_time_is_read_again(gh, tmp_path):
    issues, _blocker = board_of(gh, 6)
    gh.store.clock = lambda: _dt.datetime.now(UTC)
    gh.store.add_comment(REPO, issues[0]['number'], 'just now', author='alice')
    path = tmp_path / 'memory.json'
    read(gh, path)
    assert issues[0]['id'] not in json.loads(path.read_text())['read'], \
        'updatedAt has whole seconds: a second change in the same second would leave the same page row'
    done, _deferred = split(read(gh, path))
    assert issues[0]['id'] in done
