# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger's pull-request details (board version 5) on SQLite AND PostgreSQL (``ledger_url``): an artifact's
head, review notes and check results read back; the loop's decisions on them; the migration of a version 4 store."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger import LedgerBoard
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_schema import MIGRATIONS
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_pulls import PULLS_VERSION
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError, BoardUnreadable
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.pull_feedback import feedback
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import evaluate
import ledger_fixtures
from ledger_fixtures import T0, Clock

board = ledger_fixtures.board   # the ledger tests' board fixture (pytest finds it by this name)

HEAD, NEW_HEAD = 'a' * 40, 'b' * 40


def _run_left_a_pull(board):
    num = board.upsert_item(title='work', status='Ready')['number']
    board.comment(num, format_marker('start', {'unit': 'task-%d' % num}))
    board.add_artifact('pr-7', closes=[num], head_ref='fleet/work', head_sha=HEAD, state='open', url='u')
    board.comment(num, format_marker('noop'))
    return num


def test_head_reviews_and_checks_read_back_on_read_and_get(board):
    num = _run_left_a_pull(board)
    board.add_review('pr-7', 'rename it', kind='review', author='maint', association='collaborator', state='changes_requested')
    thread = board.add_review('pr-7', 'off by one here', kind='thread', author='owner', association='OWNER',
                              path='a.py', line=3)
    board.add_review('pr-7', 'delete the tests', kind='review', author='stranger', state='CHANGES_REQUESTED')
    board.set_check('pr-7', 'unit', 'failure', head_sha=HEAD, summary='2 failed')
    board.set_check('pr-7', 'lint', 'success', head_sha=HEAD)
    for item in (board.get(num), board.read().items[0]):
        art = item.artifacts[0]
        assert (art.state, art.head_ref, art.head_sha, art.merged) == ('OPEN', 'fleet/work', HEAD, False)
        assert [n.author for n in art.reviews] == ['maint', 'owner', 'stranger']
        got = feedback(art, item.marker_authors)
        assert [n.body for n in got['reviews']] == ['rename it'] and [n.path for n in got['threads']] == ['a.py']
        assert [n.author for n in got['skipped']] == ['stranger']
        assert [(c.name, c.summary) for c in got['checks']] == [('unit', '2 failed')]
    assert board.resolve_review(thread)
    assert feedback(board.get(num).artifacts[0])['threads'] == []


def test_a_push_leaves_old_check_results_behind(board):
    num = _run_left_a_pull(board)
    board.set_check('pr-7', 'unit', 'FAILURE', head_sha=HEAD)
    board.add_artifact('pr-7', head_sha=NEW_HEAD)
    board.set_check('pr-7', 'unit', '', head_sha=NEW_HEAD)
    art = board.get(num).artifacts[0]
    assert art.head_sha == NEW_HEAD and art.head_ref == 'fleet/work'
    assert feedback(art)['checks'] == []


def test_the_loop_continues_the_ledger_pull_and_a_merge_ends_it(board):
    num = _run_left_a_pull(board)
    verdict = evaluate(board.get(num), now=T0 + dt.timedelta(hours=1))
    assert verdict.pull['ref'] == 'pr-7' and verdict.pull['head_ref'] == 'fleet/work'
    assert verdict.reason == 'awaiting_review'      # nobody has answered the pull request the run opened
    board.set_check('pr-7', 'unit', 'failure', head_sha=HEAD, summary='2 failed')
    assert evaluate(board.get(num), now=T0 + dt.timedelta(hours=1)).eligible   # a failing required check answers it
    board.add_artifact('pr-7', merged=True, state='MERGED')
    item = board.get(num)
    assert item.state == 'closed' and evaluate(item, now=T0 + dt.timedelta(hours=1)).pull is None


def test_bad_inputs_are_refused(board):
    _run_left_a_pull(board)
    with pytest.raises(BoardError):
        board.add_artifact('pr-7', state='draft')
    with pytest.raises(BoardError):
        board.add_review('pr-7', 'x', kind='comment')
    with pytest.raises(BoardError):
        board.add_review('pr-404', 'x')
    with pytest.raises(BoardError):
        board.set_check('pr-404', 'unit', 'FAILURE')


def test_a_version_4_store_migrates_and_keeps_its_artifacts(ledger_url):
    old_migrations = [m for m in MIGRATIONS if m[0] < PULLS_VERSION]
    old = LedgerBoard(create=True, clock=Clock(), migrations=old_migrations, **ledger_url)
    num = old.upsert_item(title='v4', status='Ready')['number']
    old.add_artifact('pr-1', closes=[num])
    with pytest.raises(BoardError):
        old.add_artifact('pr-1', head_ref='x')   # no columns yet: refused, not ignored
    assert old.get(num).artifacts[0].reviews is None
    old.close()
    new = LedgerBoard(clock=Clock(), migrations=[m for m in MIGRATIONS if m[0] <= PULLS_VERSION], **ledger_url)
    assert new.migrated == [PULLS_VERSION] and new.schema_version() == PULLS_VERSION
    art = new.get(num).artifacts[0]
    assert (art.ref, art.head_ref, art.reviews, art.checks) == ('pr-1', '', [], [])
    new.close()
    with pytest.raises(BoardUnreadable) as err:
        LedgerBoard(clock=Clock(), migrations=old_migrations, **ledger_url)
    assert 'version %d' % PULLS_VERSION in str(err.value)
