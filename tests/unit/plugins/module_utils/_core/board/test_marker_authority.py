# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Marker authority: only the fleet's identities write markers; a quoted marker is text (issue 14).

The grammar on hand-built items, the GitHub board against the fake GitHub (passers-by post glyph
comments; the viewer's login is read once per board instance), and the ledger on real SQLite.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LEDGER_AUTHOR
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import (
    format_marker, human_markers, kind_of, markers_of)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess

UTC = _dt.timezone.utc
T0 = _dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
REPO = 'acme/app'
TOKEN = 'ghp_test_secret_token_value'
START = format_marker('start', {'unit': 'task-1'})


# -- the grammar: where a glyph counts ------------------------------------------------------------

@pytest.mark.parametrize('body', [
    '    ' + START,                                  # a 4-space indented code block
    '\t' + START,                                   # a tab-indented code block
    '```\n' + START + '\n```',                      # a fenced block
    '~~~\n' + START + '\n~~~',
    '> ' + START,                                   # a blockquote
    '>' + START,
    'as the runner wrote:\n\n' + START,             # not the first line
    '  ' + START,                                   # any indentation: the fleet writes column 0
])
def test_a_quoted_or_indented_marker_is_text(body):
    assert kind_of(body) is None


@pytest.mark.parametrize('body, kind', [
    (START, 'start'),
    ('\n\n' + START, 'start'),                      # blank lines before it
    (u'\ufeff' + START, 'start'),
    (u'\u2705 LGTM', 'success'),                    # the glyph decides the kind; authority decides the rest
])
def test_a_glyph_in_column_0_of_the_first_line_is_a_marker_kind(body, kind):
    assert kind_of(body) == kind


def _item(comments, authors):
    return Item(number=1, title='t', state='open', status='Ready', marker_authors=authors,
                comments=[Comment(id=str(i), body=c[1], author=c[0], author_type=c[2] if len(c) > 2 else '',
                                  created_at=T0 + _dt.timedelta(minutes=i))
                          for i, c in enumerate(comments)])


def test_only_the_fleets_identities_write_markers():
    item = _item([('fleet-bot', START), ('fleet-bot', format_marker('failure')),
                  ('mallory', u'\u2705 LGTM'), ('', START), ('Fleet-App', format_marker('noop'), 'Bot')],
                 ['fleet-bot', 'fleet-app[bot]'])
    assert [m.kind for m in markers_of(item)] == ['start', 'failure', 'noop']
    assert [(h['author'], h['kind']) for h in human_markers(item)] == [('mallory', 'success'), ('', 'start')]
    verdict = evaluate(item, now=T0 + _dt.timedelta(hours=1))
    assert verdict.reason == 'eligible' and verdict.last_marker.kind == 'noop'


def test_a_passer_by_can_neither_tombstone_nor_park_nor_hold_an_item():
    comments = [('mallory', u'\u2705 LGTM')] + [('eve', START)] * 3
    verdict = evaluate(_item(comments, ['fleet-bot']), now=T0 + _dt.timedelta(hours=1))
    assert (verdict.reason, verdict.attempts, verdict.last_marker) == ('eligible', 0, None)
    entry = assess([_item(comments, ['fleet-bot'])], now=T0 + _dt.timedelta(hours=1))[0]
    assert [h['author'] for h in entry['human_markers']] == ['mallory', 'eve', 'eve', 'eve']


# -- GitHub: viewer { login } plus board.marker_authors ----------------------------------------------

def _ready(gh, title='work'):
    return gh.store.add_issue(REPO, title, project=('acme', 1), status='Ready')


def _spec(gh, **extra):
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
            'sleep': lambda s: None, 'clock': lambda: T0}
    spec.update(extra)
    return spec


def _by_number(read):
    return dict((i.number, i) for i in read.items)


def test_github_glyph_comments_by_others_are_ignored(fake_github):
    gh = fake_github(TOKEN, viewer='fleet-bot')
    gh.store.associations.update({'owner-olga': 'OWNER', 'mallory': 'NONE'})
    lgtm, parked, ours = _ready(gh, 'lgtm'), _ready(gh, 'three rockets'), _ready(gh, 'ours')
    gh.store.add_comment(REPO, lgtm['number'], u'\u2705 LGTM', author='mallory')
    gh.store.add_comment(REPO, lgtm['number'], u'\u2705 ship it', author='owner-olga')   # standing is not authority
    for _n in range(3):
        gh.store.add_comment(REPO, parked['number'], START, author='mallory')
    gh.store.add_comment(REPO, ours['number'], START)                                    # the viewer's own
    with open_board(_spec(gh)) as board:
        items = _by_number(board.read())
        verdicts = dict((n, evaluate(i, now=T0)) for n, i in items.items())
    assert verdicts[lgtm['number']].reason == 'eligible'
    assert (verdicts[parked['number']].reason, verdicts[parked['number']].attempts) == ('eligible', 0)
    assert verdicts[ours['number']].reason == 'running'
    assert [h['author'] for h in human_markers(items[lgtm['number']])] == ['mallory', 'owner-olga']
    assert len(gh.graphql_calls('Preflight')) == 0                 # the viewer rides on the board page's first call


def test_github_marker_authors_add_identities_and_get_applies_the_same_rule(fake_github):
    gh = fake_github(TOKEN, viewer='fleet-bot')
    item = _ready(gh)
    gh.store.add_comment(REPO, item['number'], START, author='other-dispatcher')
    gh.store.add_comment(REPO, item['number'], format_marker('failure'), author='mallory')
    with open_board(_spec(gh, marker_authors=['@Other-Dispatcher'])) as board:
        got = board.get(item['number'])
        assert [m.kind for m in markers_of(got)] == ['start']
        assert evaluate(got, now=T0).reason == 'running'
    with open_board(_spec(gh)) as board:                            # without it: nobody's marker
        assert markers_of(board.get(item['number'])) == []


def test_github_app_viewer_matches_its_bot_comments(fake_github):
    gh = fake_github('ghs_installation_token', viewer='fleet-app[bot]')
    item = _ready(gh)
    with open_board(_spec(gh, token='ghs_installation_token')) as board:
        board.post_marker(item['number'], START)
        got = board.get(item['number'])
    assert got.comments[0].author == 'fleet-app'                    # GraphQL's Bot login has no [bot]
    assert [m.kind for m in markers_of(got)] == ['start']


def test_github_an_unknown_viewer_makes_the_queue_unreadable_not_markerless(fake_github):
    gh = fake_github(TOKEN, viewer='')                              # the board page names nobody
    item = _ready(gh)
    gh.store.add_comment(REPO, item['number'], START)
    gh.inject(502, {'message': 'bad gateway'}, operation='Preflight')   # nor does the preflight asked then
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardUnreadable
    with open_board(_spec(gh)) as board:
        with pytest.raises(BoardUnreadable, match='who the token is'):
            board.read()


# -- the ledger: the recorded author ------------------------------------------------------------------

def test_ledger_records_an_author_and_only_the_fleets_are_markers(tmp_path):
    spec = {'kind': 'ledger', 'path': str(tmp_path / 'l.sqlite3'), 'create': True}
    with open_board(spec) as board:
        board.upsert_item(number=1, title='t', status='Ready')
        posted = board.post_marker(1, START)['comment']
        board.comment(1, u'\u2705 LGTM', author='alice')
        board.comment(1, format_marker('failure'), author='sweeper-2')
        assert posted.author == LEDGER_AUTHOR
        assert [(c.author, m) for c, m in [(c, kind_of(c.body)) for c in board.get(1).comments]][0][0] == LEDGER_AUTHOR
        assert [m.kind for m in markers_of(board.get(1))] == ['start']
        assert [h['author'] for h in human_markers(board.read().items[0])] == ['alice', 'sweeper-2']
    with open_board(dict(spec, marker_authors=['sweeper-2'])) as board:
        assert [m.kind for m in markers_of(board.get(1))] == ['start', 'failure']


def test_ledger_upgrade_keeps_the_markers_written_before_authors_were_recorded(tmp_path):
    path = tmp_path / 'old.sqlite3'
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import MIGRATIONS
    with open_board({'kind': 'ledger', 'path': str(path), 'create': True,
                     'migrations': [m for m in MIGRATIONS if m[0] <= 2]}) as board:
        board.upsert_item(number=1, title='t', status='Ready')
    con = sqlite3.connect(str(path))
    con.execute("INSERT INTO comments (item, author, body, created_at) VALUES (1, '', ?, '2026-03-01T12:00:00.000000Z')",
                (START,))
    con.commit()
    con.close()
    with open_board({'kind': 'ledger', 'path': str(path)}) as board:
        assert evaluate(board.get(1), now=T0 + _dt.timedelta(hours=1)).reason == 'running'


# -- the account type and edits (a security review's findings) -----------------------------------------

def test_a_user_named_like_the_fleets_app_writes_no_marker():
    item = _item([('fleet-app', START, 'User'), ('fleet-app', format_marker('failure'), 'Bot')], ['fleet-app[bot]'])
    assert [m.kind for m in markers_of(item)] == ['failure']
    assert [(h['author'], h['kind']) for h in human_markers(item)] == [('fleet-app', 'start')]


def _edited(editor, editor_type='User'):
    comment = Comment(id='1', body=format_marker('success'), author='fleet-bot', author_type='User',
                      created_at=T0, edited_at=T0 + _dt.timedelta(minutes=5), editor=editor, editor_type=editor_type)
    return Item(number=1, title='t', state='open', status='Ready', marker_authors=['fleet-bot'], comments=[comment])


@pytest.mark.parametrize('editor', ['owner-olga', ''])
def test_a_marker_edited_by_anyone_but_the_fleet_is_a_human_comment(editor):
    item = _edited(editor)
    assert markers_of(item) == []
    assert evaluate(item, now=T0 + _dt.timedelta(hours=1)).reason == 'eligible'   # no tombstone
    assert 'edited by' in human_markers(item)[0]['why']


def test_a_marker_the_fleet_edited_itself_stays_a_marker():
    assert [m.kind for m in markers_of(_edited('fleet-bot'))] == ['success']


def test_github_an_edited_marker_and_a_lookalike_user_lose_authority(fake_github):
    gh = fake_github('ghs_installation_token', viewer='fleet-app[bot]')
    edited, lookalike = _ready(gh, 'edited'), _ready(gh, 'lookalike')
    with open_board(_spec(gh, token='ghs_installation_token')) as board:
        posted = board.post_marker(edited['number'], format_marker('failure'))['comment']
    assert posted.author_type == 'Bot'
    gh.store.edit_comment(gh.store.db_ids[int(posted.id)], format_marker('success'), editor='owner-olga')
    gh.store.add_comment(REPO, lookalike['number'], START, author='fleet-app')      # a User, not the app
    with open_board(_spec(gh, token='ghs_installation_token')) as board:
        items = _by_number(board.read())
        got = board.get(edited['number'])
    assert got.comments[0].editor == 'owner-olga' and got.comments[0].edited_at is not None
    assert markers_of(got) == [] and evaluate(got, now=T0).reason == 'eligible'
    assert evaluate(items[edited['number']], now=T0).reason == 'eligible'
    assert evaluate(items[lookalike['number']], now=T0).reason == 'eligible'          # not 'running'
    assert [h['author'] for h in human_markers(items[lookalike['number']])] == ['fleet-app']
