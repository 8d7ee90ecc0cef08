# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The announcer's writes on both boards (D14): the ledger on real SQLite and PostgreSQL, GitHub
through the fake GitHub. One report per stall, none twice, a cleared stall closes its report with a
comment first, a report is never work, a silenced title stays silent."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError
from ansible_collections.fleet.dispatch.plugins.module_utils._board.report import announce
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import announce as core
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import closing_refs

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
REPO = 'acme/app'
TOKEN = 'ghp_test_secret_token_value'


def found(board):
    return core.stalls(assess(board.read().items, now=NOW), now=NOW)


def tombstone_on(board, number):
    board.comment(number, format_marker('start', {'host': 'w1', 'master': 'a'}))
    board.comment(number, format_marker('success', {}))


# -- the ledger ------------------------------------------------------------------------------------

@pytest.fixture
def ledger(ledger_url):
    board = LedgerBoard(create=True, **ledger_url)
    yield board
    board.close()


def test_ledger_files_one_report_per_tombstone_and_closes_it_when_it_clears(ledger):
    ledger.upsert_item(number=1, title='work', status='Ready')
    ledger.upsert_item(number=2, title='other', status='Ready')
    tombstone_on(ledger, 1)
    first = announce(ledger, found(ledger), now=NOW)
    assert [f['kind'] for f in first['filed']] == ['tombstone']
    report = first['filed'][0]['number']
    # the report is not work: the queue read leaves it out; it is an item with status Report
    assert [i.number for i in ledger.read().items] == [1, 2]
    assert ledger.get(report).status == core.REPORT_STATUS
    assert closing_refs(ledger.get(report).body) == []
    for _rerun in range(3):
        again = announce(ledger, found(ledger), now=NOW)
        assert again['filed'] == [] and [k['number'] for k in again['keep']] == [report]
    assert len([r for r in ledger.reports() if r['state'] == 'open']) == 1
    ledger.upsert_item(number=1, state='closed')
    ledger.upsert_item(number=1, state='reopened')            # the human's remedy: a reopen outranks the marker
    cleared = announce(ledger, found(ledger), now=NOW)
    assert cleared['closed'] == [{'number': report, 'title': first['filed'][0]['title']}]
    item = ledger.get(report)
    assert item.state == 'closed' and 'cleared' in item.comments[-1].body
    assert item.events[-1].at >= item.comments[-1].created_at  # the comment first, then the close
    assert announce(ledger, found(ledger), now=NOW)['closed'] == []


def test_ledger_dry_run_writes_nothing_and_a_silenced_title_stays_silent(ledger):
    ledger.upsert_item(number=1, title='work', status='Ready')
    tombstone_on(ledger, 1)
    plan = announce(ledger, found(ledger), now=NOW, dry_run=True)
    assert len(plan['file']) == 1 and plan['filed'] == [] and ledger.reports() == []
    made = ledger.create_report(plan['file'][0]['title'], 'b')
    ledger.upsert_item(number=made['number'], state='closed', status=core.SILENCED_STATUS)
    again = announce(ledger, found(ledger), now=NOW)
    assert again['filed'] == [] and len(again['silenced']) == 1


def test_ledger_create_report_is_idempotent_by_title_under_concurrent_writers(ledger_url):
    LedgerBoard(create=True, **ledger_url).close()
    results, errors = [], []

    def one():
        try:
            board = LedgerBoard(**ledger_url)
            try:
                results.append(board.create_report('[fleet] tombstone: #1', 'body'))
            finally:
                board.close()
        except Exception as exc:  # noqa: BLE001 - counted below
            errors.append(exc)
    threads = [threading.Thread(target=one) for _i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(1 for r in results if r['created']) == 1 and len(set(r['number'] for r in results)) == 1


# -- GitHub (the fake) -----------------------------------------------------------------------------

@pytest.fixture
def gh(fake_github):
    return fake_github(TOKEN)


def github(gh, **extra):
    spec = {'kind': 'github', 'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
            'status_field': 'Status', 'ready': 'Ready', 'sleep': lambda s: None, 'clock': lambda: NOW}
    spec.update(extra)
    return open_board(spec)


def test_github_files_a_labelled_issue_never_on_the_project_and_closes_it_when_cleared(gh):
    issue = gh.store.add_issue(REPO, 'work', project=('acme', 1), status='Ready')
    gh.store.add_issue(REPO, 'a human issue with a similar title: [fleet] tombstone')
    board = github(gh)
    tombstone_on(board, issue['number'])
    first = announce(board, found(board), now=NOW)
    assert [f['kind'] for f in first['filed']] == ['tombstone']
    number = first['filed'][0]['number']
    report = gh.store.issue(REPO, number)
    assert report['labels'] == [core.REPORT_LABEL] and report['project_items'] == []
    assert closing_refs(report['body']) == [] and closing_refs(report['title']) == []
    assert [i.number for i in github(gh).read().items] == [issue['number']]       # never a candidate
    for _rerun in range(2):
        again = announce(github(gh), found(github(gh)), now=NOW)
        assert again['filed'] == [] and [k['number'] for k in again['keep']] == [number]
    posts = [e for e in gh.log if e['method'] == 'POST' and e['path'] == '/repos/%s/issues' % REPO]
    assert len(posts) == 1
    # a reopen outranks the success marker - one that is later than it (a marker at the very second of
    # the reopen stands, _core/dispatch/eligibility.py), so the fake's clock is not left to decide
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=1)
    gh.store.set_state(issue, 'closed', at=later)
    gh.store.set_state(issue, 'open', at=later + dt.timedelta(seconds=1))
    cleared = announce(github(gh), found(github(gh)), now=NOW)
    assert [c['number'] for c in cleared['closed']] == [number]
    report = gh.store.issue(REPO, number)
    assert report['state'] == 'CLOSED' and 'cleared' in report['comments'][-1]['body']
    assert gh.store.issue(REPO, 2)['state'] == 'OPEN'    # a human's issue is never closed


def test_github_silenced_report_is_read_and_suppresses_its_title(gh):
    issue = gh.store.add_issue(REPO, 'work', project=('acme', 1), status='Ready')
    board = github(gh, repo=REPO)
    tombstone_on(board, issue['number'])
    title = found(board)[0]['title']
    gh.store.add_issue(REPO, title, state='closed', labels=[core.REPORT_LABEL, core.SILENCED_LABEL])
    out = announce(github(gh, repo=REPO), found(board), now=NOW)
    assert out['filed'] == [] and len(out['silenced']) == 1


def test_github_needs_the_repository_when_the_project_spans_several(gh):
    gh.store.add_issue(REPO, 'a', project=('acme', 1), status='Ready')
    gh.store.add_issue('acme/other', 'b', project=('acme', 1), status='Ready')
    board = github(gh)
    board.read()
    with pytest.raises(Exception, match='board option "repo"'):
        board.reports()


def test_a_report_is_not_turned_into_work_by_editing_its_number(ledger):
    """Reports take numbers from the items' sequence: ``board_item number=N status=Ready`` on a report's
    number once silently made the announcer's report a work item the sweep would run."""
    report = ledger.create_report('fleet-dispatch: a worker is blind', 'the body')
    with pytest.raises(BoardError, match='is a report of the announcer, not a work item'):
        ledger.upsert_item(number=report['number'], status='Ready')
    assert [r['number'] for r in ledger.reports()] == [report['number']]
    assert report['number'] not in [i.number for i in ledger.read().items]
    # nor by setting its status field alone
    with pytest.raises(BoardError, match='is a report of the announcer, not a work item'):
        ledger.set_status(report['number'], 'Ready')
    assert report['number'] not in [i.number for i in ledger.read().items]
    # new work takes the next free number, never the report's
    assert ledger.upsert_item(title='work')['number'] != report['number']
