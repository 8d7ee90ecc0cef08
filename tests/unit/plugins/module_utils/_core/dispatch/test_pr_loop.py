# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pull-request loop: continue the open pull request, count rounds that moved its head, hold at the cap."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker, markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import (
    Artifact, CheckResult, Comment, Event, Item, ReviewNote)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch import pr_loop
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import count_attempts, evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
NOW = T0 + dt.timedelta(days=1)
REF = 'o/r#7'


def t(minutes):
    return T0 + dt.timedelta(minutes=minutes)


def pull(created=10, **kw):
    base = dict(ref=REF, created_at=t(created), closes=[42], state='OPEN', head_ref='fleet/42', head_sha='a' * 40,
                cross_repo=False, into_closing_branch=True)
    base.update(kw)
    return Artifact(**base)


def moved(sha_before='a', sha_after='b', ref=REF):
    return pr_loop.round_fields(pull(head_sha=sha_before * 40), sha_after * 40 if sha_after else None) if ref == REF else \
        dict(pr_loop.round_fields(pull(head_sha=sha_before * 40), sha_after * 40), pr=ref)


def item(*steps, artifacts=(), reopen_at=None):
    comments = [Comment(id='c%d' % i, body=format_marker(s[0], s[2] if len(s) > 2 else None), created_at=t(s[1]))
                for i, s in enumerate(steps)]
    events = []
    if reopen_at is not None:
        events = [Event(kind='closed', at=t(reopen_at - 1)), Event(kind='reopened', at=t(reopen_at))]
    return Item(number=42, title='x', state='open', status='Ready', comments=comments, events=events,
                artifacts=list(artifacts))


def test_open_pull_left_by_a_run_is_continued():
    it = item(('start', 0), ('noop', 20), artifacts=[pull()])
    loop = pr_loop.plan(it, markers_of(it))
    assert loop.pull.ref == REF and loop.rounds == 0 and not loop.spent
    assert loop.view()['head_ref'] == 'fleet/42'


@pytest.mark.parametrize('why, art', [
    ('merged', pull(merged=True, state='MERGED', merged_at=t(30))),
    ('closed unmerged', pull(state='CLOSED')),
    ('a stranger opened it before any run', pull(created=-5)),
    ('a fork: not the fleet\'s branch to push', pull(cross_repo=True)),
    ('head branch not known', pull(head_ref='')),
    ('into a branch that does not close items', pull(into_closing_branch=False)),
    ('closes another item', pull(closes=[43])),
])
def test_fresh_start(why, art):
    it = item(('start', 0), ('noop', 20), artifacts=[art])
    assert pr_loop.plan(it, markers_of(it)).pull is None, why


def test_no_run_yet_starts_fresh():
    it = item(artifacts=[pull()])
    assert pr_loop.plan(it, markers_of(it)).pull is None


def test_newest_open_pull_wins():
    older, newer = pull(created=5, ref='o/r#6'), pull(created=30, ref='o/r#9')
    it = item(('start', 0), ('noop', 40), artifacts=[newer, older])
    assert pr_loop.plan(it, markers_of(it)).pull.ref == 'o/r#9'


def test_round_that_pushes_nothing_is_an_attempt_not_a_round():
    it = item(('start', 0), ('noop', 20), ('start', 30), ('noop', 40, moved('a', 'a')), artifacts=[pull()])
    markers = markers_of(it)
    assert pr_loop.count_rounds(markers, REF) == 0
    assert count_attempts(markers) == 2


def test_round_that_moves_the_head_is_a_round_not_an_attempt():
    it = item(('start', 0), ('noop', 20), ('start', 30), ('noop', 40, moved('a', 'b')), artifacts=[pull()])
    markers = markers_of(it)
    assert pr_loop.count_rounds(markers, REF) == 1
    assert count_attempts(markers) == 1


def test_unknown_head_is_not_a_round():
    it = item(('start', 0), ('noop', 20), ('start', 30), ('failure', 40, moved('a', None)), artifacts=[pull()])
    markers = markers_of(it)
    assert pr_loop.count_rounds(markers, REF) == 0 and count_attempts(markers) == 2


def test_rounds_on_another_pull_do_not_count():
    it = item(('start', 0), ('noop', 20), ('start', 30), ('noop', 40, moved(ref='o/r#6')), artifacts=[pull()])
    assert pr_loop.count_rounds(markers_of(it), REF) == 0


def _rounds(n):
    steps = [('start', 0), ('noop', 5)]
    for i in range(n):
        steps += [('start', 10 + 10 * i), ('noop', 15 + 10 * i, moved('a', 'b'))]
    return steps


def test_round_cap_holds_with_its_own_reason():
    it = item(*_rounds(pr_loop.DEFAULT_MAX_ROUNDS), artifacts=[pull(created=2)])
    verdict = evaluate(it, now=NOW)
    assert verdict.reason == 'rounds_spent' and verdict.attempts == 1
    assert verdict.pull['rounds'] == pr_loop.DEFAULT_MAX_ROUNDS and verdict.pull['spent']


def test_below_the_cap_is_eligible_and_names_the_pull():
    it = item(*_rounds(pr_loop.DEFAULT_MAX_ROUNDS - 1), artifacts=[pull(created=2)])
    verdict = evaluate(it, now=NOW)
    assert verdict.eligible and verdict.pull['ref'] == REF
    assert verdict.pull['rounds'] == pr_loop.DEFAULT_MAX_ROUNDS - 1


def test_closing_the_pull_releases_the_cap():
    it = item(*_rounds(pr_loop.DEFAULT_MAX_ROUNDS), artifacts=[pull(created=2, state='CLOSED')])
    verdict = evaluate(it, now=NOW)
    assert verdict.eligible and verdict.pull is None


def test_a_reopen_starts_the_round_count_again():
    steps = _rounds(pr_loop.DEFAULT_MAX_ROUNDS)
    it = item(*steps, artifacts=[pull(created=2)], reopen_at=steps[-1][1] + 5)
    verdict = evaluate(it, now=NOW)
    assert verdict.eligible and verdict.pull['rounds'] == 0 and verdict.pull['ref'] == REF


def test_no_cap():
    it = item(*_rounds(9), artifacts=[pull(created=2)])
    assert pr_loop.plan(it, markers_of(it), max_rounds=None).spent is False
    with pytest.raises(ValueError):
        pr_loop.plan(it, markers_of(it), max_rounds=0)


def test_round_text_names_the_pull_and_the_move():
    assert 'head moved' in pr_loop.round_text(moved('a', 'b')) and REF in pr_loop.round_text(moved('a', 'b'))
    assert 'nothing was pushed' in pr_loop.round_text(moved('a', 'a'))
    assert pr_loop.round_fields(pull(head_sha=''), 'b' * 40)['head_moved'] is None


def test_the_announcer_files_one_report_for_a_spent_cap():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.announce import item_titles, stalls
    entry = {'number': 42, 'repo': '', 'reason': 'rounds_spent', 'state': 'open',
             'pull': {'ref': REF, 'rounds': 4, 'max_rounds': 4}}
    found = stalls([entry], now=NOW)
    assert [s['kind'] for s in found] == ['rounds_spent']
    assert found[0]['title'] in item_titles(entry) and REF.replace('#', '') in found[0]['body'].replace('#', '')
    assert stalls([dict(entry, reason='eligible')], now=NOW) == []


def test_explain_shows_the_pull_its_round_threads_and_failing_checks():
    art = pull(created=2, reviews=[
        ReviewNote('thread', 'off by one\nsecond line', author='owner', association='OWNER', path='a.py', line=3),
        ReviewNote('review', 'rename it', author='maint', association='COLLABORATOR', state='CHANGES_REQUESTED'),
        ReviewNote('review', 'mine crypto', author='stranger', association='NONE', state='CHANGES_REQUESTED')],
        checks=[CheckResult('unit', 'FAILURE', True, '2 failed', head_sha='a' * 40)])
    it = item(*_rounds(1), artifacts=[art])
    ex = explain(it, now=NOW)
    assert ex['pull']['rounds'] == 1 and ex['pull']['threads'][0]['text'] == 'off by one ...'
    text = '\n'.join(explain_lines(ex))
    assert 'pull request: %s (branch fleet/42' % REF in text and '1 round(s) of 4' in text
    assert 'thread by owner on a.py:3: off by one' in text and 'changes requested by maint: rename it' in text
    assert 'failing check unit: FAILURE -- 2 failed' in text and 'left out (not trusted): stranger' in text
    assert 'mine crypto' not in text
    held = explain(item(*_rounds(4), artifacts=[art]), now=NOW)
    assert held['reason'] == 'rounds_spent' and 'the cap is 4' in held['holds'][0]['why']


def test_the_status_page_shows_the_pull_and_its_round():
    from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import render_page
    row = {'number': 42, 'title': 'x', 'reason': 'eligible', 'eligible': True, 'holds': [],
           'pull': {'ref': REF, 'rounds': 1, 'max_rounds': 4, 'read': True, 'threads': [{}], 'changes_requested': [],
                    'failing_checks': [{}, {}]}}
    page = render_page({'items': [row], 'masters': []})
    assert '<td class="pull">o/r#7 r1/4: 1 thread(s), 0 change request(s), 2 failing check(s)</td>' in page


def test_a_continued_pull_request_this_run_pushed_is_credited_when_it_merges():
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import attribute
    merged = pull(created=2, merged=True, state='MERGED', merged_at=t(50))
    assert attribute([merged], 42, t(30), False) == []                       # D16: created before the run started
    assert attribute([merged], 42, t(30), False, pushed=REF) == [merged]      # ... but this run moved its head
    assert attribute([merged], 42, t(30), False, pushed='o/r#8') == []
    assert attribute([pull(created=2, merged=True, state='MERGED', merged_at=t(20))], 42, t(30), False, pushed=REF) == []
    assert attribute([merged], 42, t(30), True, pushed=REF) == []            # zero turns: never


def test_a_pull_request_event_names_the_item_whose_next_run_continues_it():
    """A review or a finished check on o/r#7 dispatches #42, whose run left it; the owner/name is case-insensitive."""
    continued = item(('start', 0), ('noop', 20), artifacts=[pull()])
    other = Item(number=43, title='y', state='open', status='Ready')
    rows = [{'number': 42, 'pull': pr_loop.plan(continued, markers_of(continued)).view()},
            {'number': 43, 'pull': pr_loop.plan(other, markers_of(other)).view()}]
    assert pr_loop.continuing(rows, 'o/r#7') == [42]
    assert pr_loop.continuing(rows, 'O/R#7') == [42]


@pytest.mark.parametrize('why, art, ref', [
    ('another pull request', pull(), 'o/r#8'),
    ('another repository', pull(), 'o/s#7'),
    ('a stranger\'s pull request, opened before any run', pull(created=-5), 'o/r#7'),
    ('merged: the item is done, nothing to continue', pull(merged=True, state='MERGED', merged_at=t(30)), 'o/r#7'),
    ('no number', pull(), 'o/r#'),
    ('empty', pull(), ''),
])
def test_a_pull_request_event_names_no_item(why, art, ref):
    it = item(('start', 0), ('noop', 20), artifacts=[art])
    assert pr_loop.continuing([{'number': 42, 'pull': pr_loop.plan(it, markers_of(it)).view()}], ref) == [], why


def test_a_spent_cap_still_names_its_item_for_the_refusal():
    it = item(('start', 0), ('noop', 20, moved()), ('start', 30), ('noop', 40, moved('b', 'c')), artifacts=[pull()])
    loop = pr_loop.plan(it, markers_of(it), max_rounds=2)
    assert loop.spent
    assert pr_loop.continuing([{'number': 42, 'pull': loop.view()}], 'o/r#7') == [42]


@pytest.mark.parametrize('value, cap', [(4, 4), (1, 1), (0, None)])
def test_round_cap_as_an_option_states_it(value, cap):
    assert pr_loop.round_cap(value) == cap


@pytest.mark.parametrize('value', [-1, True, '4', 2.5, None])
def test_round_cap_refuses_what_is_not_a_count(value):
    with pytest.raises(ValueError):
        pr_loop.round_cap(value)


def note(minutes, *, kind='review', state='CHANGES_REQUESTED', association='COLLABORATOR', resolved=False):
    return ReviewNote(kind=kind, body='rename it', author='rev', association=association, state=state,
                      resolved=resolved, created_at=t(minutes))


def pushed(*, reviews=(), checks=(), head='b', **kw):
    """#42: a run opened o/r#7 (head a); a round moved it a -> b and closed out at minute 40."""
    art = pull(head_sha=head * 40, reviews=list(reviews), checks=list(checks), **kw)
    return item(('start', 0), ('noop', 20), ('start', 30), ('noop', 40, moved('a', 'b')), artifacts=[art])


def verdict_of(it, **kw):
    return evaluate(it, now=NOW, max_attempts=10, **kw)


def test_a_round_nothing_has_answered_waits_for_review():
    v = verdict_of(pushed())
    assert (v.reason, v.eligible) == ('awaiting_review', False)
    assert 'o/r#7' in v.pull['awaiting'] and 'bbbbbbbbbbbb' in v.pull['awaiting']


@pytest.mark.parametrize('why, kw', [
    ('a trusted review asking for changes, after the round', dict(reviews=[note(50)])),
    ('an unresolved thread comment of a trusted author, after the round', dict(reviews=[note(50, kind='thread', state='')])),
    ('a failing required check on the head', dict(checks=[CheckResult(name='ci', conclusion='FAILURE', required=True,
                                                                      head_sha='b' * 40)])),
    ('someone else pushed: the head is not the one the round left', dict(head='c')),
    ('review and checks not read (GitHub, no details): fail open', dict(reviews=None, checks=None)),
])
def test_what_releases_the_wait(why, kw):
    if kw.get('reviews', ()) is None:
        it = item(('start', 0), ('noop', 20), ('start', 30), ('noop', 40, moved('a', 'b')), artifacts=[pull(head_sha='b' * 40)])
    else:
        it = pushed(**kw)
    v = verdict_of(it)
    assert v.reason == 'eligible', (why, v.holds, v.pull)


@pytest.mark.parametrize('why, kw', [
    ('the review the round already had', dict(reviews=[note(25)])),
    ('a stranger\'s review', dict(reviews=[note(50, association='NONE')])),
    ('an approval asks for nothing', dict(reviews=[note(50, state='APPROVED')])),
    ('a resolved thread', dict(reviews=[note(50, kind='thread', state='', resolved=True)])),
    ('a failing check on the old head', dict(checks=[CheckResult(name='ci', conclusion='FAILURE', required=True, head_sha='a' * 40)])),
    ('a failing check that is not required', dict(checks=[CheckResult(name='lint', conclusion='FAILURE', head_sha='b' * 40)])),
    ('checks still running', dict(checks=[CheckResult(name='ci', conclusion='', required=True, head_sha='b' * 40)])),
])
def test_what_does_not_release_the_wait(why, kw):
    assert verdict_of(pushed(**kw)).reason == 'awaiting_review', why


def test_the_run_that_opened_the_pull_request_waits_too():
    opened = item(('start', 0), ('noop', 20), artifacts=[pull(reviews=[], checks=[])])
    assert verdict_of(opened).reason == 'awaiting_review'
    answered = item(('start', 0), ('noop', 20), artifacts=[pull(reviews=[note(30)], checks=[])])
    assert verdict_of(answered).reason == 'eligible'


def test_a_run_that_pushed_nothing_does_not_wait():
    """It spent an attempt, not a round: the attempt cap bounds those, not the wait."""
    it = item(('start', 0), ('noop', 20), ('start', 30), ('noop', 40, moved('a', 'a')),
              artifacts=[pull(reviews=[], checks=[])])
    assert verdict_of(it).reason == 'eligible'


def test_a_spent_cap_outranks_the_wait():
    v = verdict_of(pushed(), max_rounds=1)
    assert v.reason == 'rounds_spent' and 'awaiting_review' not in v.holds


def test_explain_says_why_the_round_waits():
    ex = explain(pushed(), now=NOW, max_attempts=10)
    assert ex['reason'] == 'awaiting_review'
    assert any('waits for a reviewer or the checks' in line for line in explain_lines(ex))


def test_unread_pulls_are_the_eligible_rows_whose_review_was_not_read():
    rows = [{'number': 1, 'repo': 'o/r', 'eligible': True, 'pull': {'ref': 'o/r#7', 'read': False}},
            {'number': 2, 'repo': 'o/r', 'eligible': True, 'pull': {'ref': 'o/r#8', 'read': True}},
            {'number': 3, 'repo': 'o/r', 'eligible': False, 'pull': {'ref': 'o/r#9', 'read': False}},
            {'number': 4, 'repo': 'o/r', 'eligible': True, 'pull': None}]
    assert pr_loop.unread_pulls(rows) == [(1, 'o/r')]
    assert pr_loop.unread_pulls(rows, numbers=[2, 3]) == []


def test_the_run_gets_the_round_cap_it_was_held_to():
    """The dispatcher's cap reaches the run's environment, so its brief names the same 'round N of M'."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import batches
    cand = {'number': 42, 'repo': '', 'unit': 'task-42', 'worker': 'w1', 'master': 'm1',
            'pull': {'ref': REF, 'max_rounds': 6}}
    env = batches([cand])['batches'][0]['launch'][0]['setenv']
    assert env[pr_loop.ROUNDS_ENV] == '6' and pr_loop.rounds_from_env(env) == 6
    assert batches([dict(cand, pull={'ref': REF, 'max_rounds': None})])['batches'][0]['launch'][0]['setenv'][pr_loop.ROUNDS_ENV] == '0'
    assert pr_loop.ROUNDS_ENV not in batches([dict(cand, pull=None)])['batches'][0]['launch'][0]['setenv']


@pytest.mark.parametrize('environ, cap', [({}, pr_loop.DEFAULT_MAX_ROUNDS), ({'FLEET_MAX_ROUNDS': '0'}, None),
                                          ({'FLEET_MAX_ROUNDS': '2'}, 2), ({'FLEET_MAX_ROUNDS': 'x'}, pr_loop.DEFAULT_MAX_ROUNDS),
                                          ({'FLEET_MAX_ROUNDS': '-1'}, pr_loop.DEFAULT_MAX_ROUNDS)])
def test_rounds_from_env(environ, cap):
    assert pr_loop.rounds_from_env(environ) == cap
