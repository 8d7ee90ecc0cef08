# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A reopen resets the attempt cap only when the fleet or someone with write access reopened.

Found in a security review: a parked item (three failed runs) reopened by an account with no write
access was eligible again with 0 attempts, so anyone who can reopen an issue (its author, a triager)
could buy the agent unlimited runs. The rule on hand-built items, the GitHub board against the fake
GitHub (the permission read from ``Repository.collaborators``), and the ledger.
"""

from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Event, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate, ignored_reopens
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess

UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
LATER = T0 + _dt.timedelta(hours=2)
REPO = 'acme/app'
TOKEN = 'ghp_test_secret_token_value'
FLEET = ('fleet-bot',)


def _parked(*events, authors=FLEET):
    comments = []
    for n in range(3):
        comments.append(Comment(id='s%d' % n, body=format_marker('start'), author='fleet-bot',
                                created_at=T0 + _dt.timedelta(minutes=10 * n)))
        comments.append(Comment(id='f%d' % n, body=format_marker('failure'), author='fleet-bot',
                                created_at=T0 + _dt.timedelta(minutes=10 * n + 5)))
    return Item(number=7, title='t', state='open', status='Ready', repo=REPO,
                marker_authors=list(authors) if authors is not None else None,
                comments=comments, events=list(events))


def _reopen(actor, permission='', actor_type='User', minutes=60):
    return Event(kind='reopened', at=T0 + _dt.timedelta(minutes=minutes), actor=actor, actor_type=actor_type,
                 permission=permission)


def test_a_parked_item_reopened_by_an_account_without_write_access_stays_parked():
    item = _parked(_reopen('mallory', permission='READ'))
    verdict = evaluate(item, now=LATER)
    assert (verdict.reason, verdict.attempts, verdict.reopened) == ('parked', 3, False)
    assert [(r['actor'], 'read permission' in r['why']) for r in ignored_reopens(item)] == [('mallory', True)]


@pytest.mark.parametrize('permission', ['', 'TRIAGE', 'READ', 'NONE'])
def test_no_write_access_or_an_unknown_one_does_not_count(permission):
    assert evaluate(_parked(_reopen('someone', permission=permission)), now=LATER).reason == 'parked'


@pytest.mark.parametrize('event', [
    _reopen('maintainer-mia', permission='WRITE'),
    _reopen('admin-ann', permission='ADMIN'),
    _reopen('maint-max', permission='MAINTAIN'),
    _reopen('Fleet-Bot'),                               # the fleet's own identity
])
def test_a_reopen_by_the_fleet_or_a_writer_grants_a_fresh_budget(event):
    verdict = evaluate(_parked(event), now=LATER)
    assert (verdict.reason, verdict.attempts, verdict.reopened) == ('eligible', 0, True)


def test_a_user_named_like_the_fleets_app_is_not_the_app():
    item = _parked(_reopen('fleet-app', actor_type='User'), authors=['fleet-bot', 'fleet-app[bot]'])
    assert evaluate(item, now=LATER).reason == 'parked'
    item = _parked(_reopen('fleet-app', actor_type='Bot'), authors=['fleet-bot', 'fleet-app[bot]'])
    assert evaluate(item, now=LATER).reason == 'eligible'


def test_an_ignored_later_reopen_does_not_hide_an_earlier_one_that_counts():
    item = _parked(_reopen('maintainer-mia', permission='WRITE', minutes=15), _reopen('mallory', minutes=60))
    verdict = evaluate(item, now=LATER)
    assert verdict.attempts == 1                        # the start at 00:20 after the maintainer's reopen at 00:15
    assert [r['actor'] for r in ignored_reopens(item)] == ['mallory']


def test_status_and_explain_show_the_ignored_reopen():
    item = _parked(_reopen('mallory', permission='READ'))
    entry = assess([item], now=LATER)[0]
    assert entry['reason'] == 'parked'
    assert [r['actor'] for r in entry['ignored_reopens']] == ['mallory']
    ex = explain(item, now=LATER)
    assert ex['reopened_at'] is None and ex['ignored_reopens'][0]['actor'] == 'mallory'
    assert any('by mallory ignored' in line for line in explain_lines(ex))
    assert all(s['counted'] for s in ex['starts'])


def test_an_item_built_by_hand_enforces_nothing():
    assert evaluate(_parked(_reopen('anyone'), authors=None), now=LATER).reason == 'eligible'


# -- GitHub: the permission comes from Repository.collaborators(login:) ------------------------------

def _spec(gh):
    return {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
            'sleep': lambda s: None, 'clock': lambda: LATER}


def _github_parked(gh, reopener):
    issue = gh.store.add_issue(REPO, 'parked', project=('acme', 1), status='Ready')
    for n in range(3):
        gh.store.add_comment(REPO, issue['number'], format_marker('start'), created_at=T0 + _dt.timedelta(minutes=10 * n))
        gh.store.add_comment(REPO, issue['number'], format_marker('failure'), created_at=T0 + _dt.timedelta(minutes=10 * n + 5))
    gh.store.set_state(issue, 'closed', actor='fleet-bot', at=T0 + _dt.timedelta(minutes=50))
    gh.store.set_state(issue, 'open', actor=reopener, at=T0 + _dt.timedelta(minutes=60))
    return issue


def test_github_a_reopen_by_a_member_without_write_access_is_ignored(fake_github):
    gh = fake_github(TOKEN, viewer='fleet-bot')
    gh.store.associations.update({'mallory': 'MEMBER'})     # org membership is not write access
    gh.store.permissions.update({'mallory': 'READ', 'mia': 'WRITE'})
    parked = _github_parked(gh, 'mallory')
    with open_board(_spec(gh)) as board:
        item = dict((i.number, i) for i in board.read().items)[parked['number']]
        verdict = evaluate(item, now=LATER)
        assert (verdict.reason, verdict.attempts) == ('parked', 3)
        assert [(e.actor, e.actor_type, e.permission) for e in item.events if e.kind == 'reopened'] == [('mallory', 'User', 'READ')]
        got = board.get(parked['number'])
        assert evaluate(got, now=LATER).reason == 'parked'
    assert len(gh.graphql_calls('Permission')) == 1        # once per repository and login per board instance


def test_github_a_reopen_by_a_writer_counts_and_the_fleets_own_needs_no_lookup(fake_github):
    gh = fake_github(TOKEN, viewer='fleet-bot')
    gh.store.permissions.update({'mia': 'WRITE'})
    by_mia, by_fleet = _github_parked(gh, 'mia'), _github_parked(gh, 'fleet-bot')
    with open_board(_spec(gh)) as board:
        items = dict((i.number, i) for i in board.read().items)
    assert (evaluate(items[by_mia['number']], now=LATER).reason, evaluate(items[by_mia['number']], now=LATER).attempts) == ('eligible', 0)
    assert evaluate(items[by_fleet['number']], now=LATER).reason == 'eligible'
    assert len(gh.graphql_calls('Permission')) == 1        # mia only: the fleet's own reopen is not looked up


def test_github_a_reopen_by_a_stranger_is_ignored(fake_github):
    gh = fake_github(TOKEN, viewer='fleet-bot')
    parked = _github_parked(gh, 'drive-by')                  # not a collaborator at all: no edge
    with open_board(_spec(gh)) as board:
        item = board.get(parked['number'])
    assert evaluate(item, now=LATER).reason == 'parked'
    assert 'could not tell its permission' in ignored_reopens(item)[0]['why']


# -- the ledger: only a holder of its DSN writes an event ----------------------------------------------

def test_ledger_reopens_count(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'l.sqlite3'), 'create': True}
    with open_board(spec) as board:
        board.upsert_item(number=1, title='t', status='Ready')
        for _n in range(3):
            board.post_marker(1, format_marker('start'))
            board.post_marker(1, format_marker('failure'))
        assert evaluate(board.get(1), now=LATER).reason == 'parked'
        board.upsert_item(number=1, state='closed')
        board.upsert_item(number=1, state='reopened')
        assert evaluate(board.get(1), now=LATER + _dt.timedelta(days=1)).reason == 'eligible'


def test_explain_lists_only_the_markers_eligibility_reads():
    item = _parked()
    item.comments.append(Comment(id='m', body=format_marker('start'), author='mallory', created_at=LATER))
    ex = explain(item, now=LATER)
    assert 'mallory' not in [m['author'] for m in ex['markers']] and ex['attempts'] == 3
