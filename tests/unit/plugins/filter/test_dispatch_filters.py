# -*- coding: utf-8 -*-
"""The table filters format what board_info returned, loaded the way Ansible loads them."""
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader


def filt(name):
    plugin = filter_loader.get('fleet.dispatch.%s' % name)
    return getattr(plugin, 'j2_function', plugin)


ITEMS = [
    {'number': 1, 'title': 'one', 'state': 'open', 'status': 'Ready', 'eligible': True, 'reason': 'eligible',
     'attempts': 0, 'max_attempts': 3, 'last_marker': None},
    {'number': 4, 'title': 'x' * 80, 'state': 'open', 'status': 'Ready', 'eligible': False, 'reason': 'blocked',
     'open_blockers': [1, 2], 'attempts': 1, 'max_attempts': 3,
     'last_marker': {'kind': 'failure', 'age_s': 7500}},
    {'number': 7, 'title': 'r', 'state': 'open', 'status': 'Ready', 'eligible': False, 'reason': 'retry_wait',
     'not_before': '2026-11-30T12:30:00Z', 'attempts': 1, 'max_attempts': 3,
     'last_marker': {'kind': 'retry', 'age_s': 30}},
]


def test_status_table_one_line_per_item_with_reason_and_age():
    lines = filt('status_table')(ITEMS).splitlines()
    assert len(lines) == 2 + len(ITEMS)
    assert lines[3].split()[:2] == ['#4', 'x' * 39 + '…'] and 'blocked' in lines[3] and '2h' in lines[3]
    assert 'retry' in lines[4] and '30s' in lines[4]


def test_plan_table_says_where_and_why_not():
    plan = filt('place')([ITEMS[0]], [{'worker': 'w1', 'master': 'a'},
                                      {'worker': 'w2', 'master': 'b', 'dark': True, 'source': 'revoked'}])
    text = filt('plan_table')(plan, ITEMS)
    assert '#1    launch    w1/a' in text
    assert 'blocked by #1, #2' in text
    assert 'retry_wait until 2026-11-30T12:30:00Z' in text
    assert 'revoked until a human clears it (fleet.dispatch.clear_capacity)' in text and 'unknown' not in text
    # finished work holds no decision: one line a reason when there are several, an item's own line when it is alone
    done = [dict(ITEMS[1], number=n, reason='done', open_blockers=[]) for n in (20, 21, 22)]
    rows = filt('plan_table')({'assignments': []}, ITEMS + done + [dict(ITEMS[1], number=30, reason='closed')]).splitlines()
    assert [r.split()[:2] for r in rows if 'done' in r or 'closed' in r] == [['skip', '-'], ['#30', 'skip']]
    assert [r for r in rows if 'done: 3 items (finished; each in the board table)' in r] and 'blocked by #1, #2' in text


def test_status_table_leads_the_last_marker_with_its_glyph_and_keeps_the_columns_aligned():
    items = [dict(ITEMS[0], last_marker={'kind': 'success', 'age_s': 60}), dict(ITEMS[2], title='rr')]
    lines = filt('status_table')(items).splitlines()
    assert '\u2705 success' in lines[2] and '\U0001F501 retry' in lines[3]
    # the age column starts at the same terminal column on every row (a glyph is two columns wide)
    from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import text_width as _width
    assert _width(lines[2][:lines[2].index('1m')]) == _width(lines[3][:lines[3].index('30s')])


@pytest.mark.parametrize('name,arg', [('status_table', 'nope'), ('plan_table', [])])
def test_wrong_input_names_the_expected_one(name, arg):
    with pytest.raises(AnsibleFilterError):
        filt(name)(arg)


def test_status_table_shows_the_stated_cost_of_the_runs():
    items = [dict(ITEMS[0], run_cost={'runs': 2, 'cost_usd': 0.657, 'priced_runs': 1}),
             dict(ITEMS[0], number=2, run_cost={'runs': 1, 'cost_usd': None, 'priced_runs': 0})]
    lines = filt('status_table')(items).splitlines()
    assert lines[0].split()[-3:] == ['cost', 'pull', 'request']
    assert lines[2].split()[-2] == '$0.66+' and lines[3].split()[-2] == '-'


def test_status_table_shows_the_pull_request_a_run_continues_and_its_round():
    pull = {'ref': 'o/r#7', 'rounds': 2, 'max_rounds': 4, 'read': False}
    items = [dict(ITEMS[0], pull=pull), dict(ITEMS[0], number=2, reason='rounds_spent', pull=dict(pull, rounds=4))]
    lines = filt('status_table')(items).splitlines()
    assert lines[2].rstrip().endswith('o/r#7 r2/4') and lines[3].rstrip().endswith('o/r#7 r4/4')
    from ansible_collections.fleet.dispatch.plugins.filter.dispatch import why_held
    assert why_held(items[1]) == 'rounds_spent: o/r#7 had 4 rounds (cap 4)'


def test_status_table_shows_glyph_comments_by_humans_as_human_comments():
    items = [dict(ITEMS[0], human_markers=[{'author': 'eve', 'kind': 'start'}, {'author': 'mallory', 'kind': 'success'}]),
             dict(ITEMS[0], number=2)]
    lines = filt('status_table')(items).splitlines()
    assert 'human glyphs' in lines[0]
    assert 'mallory:success +1' in lines[2] and 'mallory' not in lines[3]


def test_status_table_shows_a_reopen_that_does_not_count():
    items = [dict(ITEMS[0], human_markers=[], ignored_reopens=[{'actor': 'mallory', 'at': None, 'why': 'no write access'}])]
    assert 'mallory:reopen' in filt('status_table')(items).splitlines()[2]


def test_a_hand_dispatch_whose_run_failed_to_start_is_not_ok():
    """Launched is not started (D20): a script must see a failed start as a failure, with the runner's reason."""
    from ansible_collections.fleet.dispatch.plugins.filter.dispatch import dispatch_outcome, start_line
    row = {'number': 5, 'unit': 'task-5', 'worker': 'w1', 'master': 'd1', 'start': 'failed',
           'start_text': 'failed to start: the runner on w1/d1 cannot open the board'}
    out = dispatch_outcome([], 5, launched=[row])
    assert out['ok'] is False and 'failed to start: the runner on w1/d1 cannot open the board' in out['text']
    ok = dispatch_outcome([], 5, launched=[dict(row, start='started', start_text='started')])
    assert ok['ok'] is True and ok['text'].endswith(': started')
    assert start_line(row) == 'task-5 on w1/d1: failed to start: the runner on w1/d1 cannot open the board'


def test_credential_account_shares_one_key_and_sets_no_account_without_one():
    same = filt('credential_account')({'KEY': 'k1'})
    assert same == filt('credential_account')({'KEY': 'k1'}) != filt('credential_account')({'KEY': 'k2'})
    assert filt('credential_account')({}) == '' and filt('credential_account')(None) == ''
    with pytest.raises(AnsibleFilterError):
        filt('credential_account')('KEY=k1')


def test_the_page_and_the_metrics_read_the_board_from_its_table(tmp_path):
    """A sweep hands the page its board table's path, never the board through a template: the page and the
    metrics render from the file exactly what they render from the items given inline."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._board.table import write_table
    now = '2026-11-30T12:00:00.000000Z'
    write_table(str(tmp_path / 'board_table.json'), ITEMS, now)
    inline = {'items': ITEMS, 'now': now, 'board': 'ledger:x', 'readable': True}
    filed = dict(inline, items=[], table=str(tmp_path / 'board_table.json'))
    assert filt('status_page')(filed) == filt('status_page')(inline)
    assert filt('status_metrics')(filed) == filt('status_metrics')(inline)
    assert filt('plan_table')({'assignments': []}, {'table': str(tmp_path / 'board_table.json')}) == \
        filt('plan_table')({'assignments': []}, ITEMS)
    with pytest.raises(AnsibleFilterError, match='cannot read the board table'):
        filt('status_page')(dict(filed, table=str(tmp_path / 'gone.json')))
