# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An item's budget across its attempts: the spend summed from close-out markers, the hold, what is left."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Event, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import PRECEDENCE, evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.item_budget import (
    ENV, ItemSpend, for_item, from_env, held_by, item_budget, item_spend, left_env, parse_override, remaining, spent, tighter)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess, batches
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import markers_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.budget import Budget

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
NOW = T0 + dt.timedelta(hours=10)


def t(minutes):
    return T0 + dt.timedelta(minutes=minutes)


def mk(*steps, reopen_at=None, state='open'):
    comments = [Comment(id='c%d' % i, body=format_marker(s[0], s[2] if len(s) > 2 else None), created_at=t(s[1]))
                for i, s in enumerate(steps)]
    events = []
    if reopen_at is not None:
        events = [Event(kind='closed', at=t(reopen_at - 0.5)), Event(kind='reopened', at=t(reopen_at))]
    return Item(number=42, title='x', state=state, status='Ready', comments=comments, events=events)


def runs(*spends):
    """A start and a close-out per run; each spend a (kind, tokens, cost_usd) tuple, None for not stated."""
    steps = []
    for i, (kind, tokens, cost) in enumerate(spends):
        fields = {'exit_code': 0, 'turns': 3}
        if tokens is not None:
            fields['tokens'] = tokens
        if cost is not None:
            fields['cost_usd'] = cost
        steps += [('start', i * 10), (kind, i * 10 + 5, fields)]
    return steps


def test_spend_sums_every_closed_run_and_never_fills_a_gap():
    item = mk(*runs(('failure', 1000, 0.5), ('budget', 3000, None), ('noop', None, 0.25)))
    spend = item_spend(markers_of(item))
    assert spend == ItemSpend(runs=3, priced_runs=2, tokens=4000, cost_usd=0.75)


def test_the_reaper_reset_and_an_open_start_add_no_run():
    item = mk(('start', 0), ('reset', 5), ('start', 10))
    assert item_spend(markers_of(item)) == ItemSpend(runs=0, priced_runs=0, tokens=None, cost_usd=None)


def test_a_reopen_starts_the_spend_again():
    item = mk(*runs(('budget', 5000, None), ('budget', 5000, None)), reopen_at=100)
    verdict = evaluate(item, now=NOW, item_budget=Budget(tokens=8000))
    assert verdict.eligible and verdict.spend.runs == 0 and verdict.spend.tokens is None


@pytest.mark.parametrize('cap, spends, held', [
    (Budget(tokens=8000), [('budget', 5000, None), ('failure', 3000, None)], 'tokens'),   # at the cap: held
    (Budget(tokens=8000), [('budget', 5000, None), ('failure', 2999, None)], None),
    (Budget(usd=1.0), [('failure', 10, 0.6), ('noop', 10, 0.4)], 'usd'),
    (Budget(usd=1.0), [('failure', 10, 0.6), ('noop', 90000, None)], None),   # an unpriced run adds no dollars
    (Budget(), [('failure', 10 ** 9, 100.0)], None),                          # no cap, nothing held
])
def test_spent(cap, spends, held):
    spend = item_spend(markers_of(mk(*runs(*spends))))
    assert spent(cap, spend) == held


def test_hold_reason_and_words():
    item = mk(*runs(('budget', 5000, None), ('budget', 3000, None)))
    verdict = evaluate(item, now=NOW, item_budget=Budget(tokens=8000), max_attempts=3)
    assert verdict.reason == 'budget_spent' and not verdict.eligible
    assert verdict.attempts == 2   # a budget stop is an attempt, yet the hold is its own, not parked
    assert '8000 tokens over 2 run(s) reached its item budget of 8000 tokens' in verdict.budget_spent
    assert 'reopen' in verdict.budget_spent


def test_without_a_cap_the_same_item_runs():
    item = mk(*runs(('budget', 5000, None), ('budget', 3000, None)))
    assert evaluate(item, now=NOW).eligible
    assert evaluate(item, now=NOW, item_budget=Budget(tokens=9000)).eligible


def test_precedence_running_outranks_budget_spent_and_it_outranks_blocked():
    assert PRECEDENCE.index('running') < PRECEDENCE.index('budget_spent') < PRECEDENCE.index('blocked')
    live = mk(*(runs(('budget', 9000, None)) + [('start', 50)]))
    assert evaluate(live, now=NOW, item_budget=Budget(tokens=8000)).reason == 'running'
    parked = mk(*runs(('failure', 3000, None), ('failure', 3000, None), ('failure', 3000, None)))
    verdict = evaluate(parked, now=NOW, item_budget=Budget(tokens=8000))
    assert verdict.holds == ['parked', 'budget_spent']


def test_remaining_and_its_launch_environment():
    spend = ItemSpend(runs=2, priced_runs=1, tokens=3000, cost_usd=0.4)
    left = remaining(Budget(tokens=8000, usd=1.0), spend)
    assert left == Budget(tokens=5000, usd=0.6)
    assert left_env(left.fields()) == {ENV['tokens']: '5000', ENV['usd']: '0.6'}
    assert remaining(Budget(tokens=1000), spend) == Budget(tokens=0)
    assert left_env({}) == {}


def test_from_env_reads_what_the_dispatcher_set_and_ignores_junk():
    assert from_env({ENV['tokens']: '5000', ENV['usd']: '0.6'}) == Budget(tokens=5000, usd=0.6)
    assert from_env({ENV['tokens']: '0'}) == Budget(tokens=0)
    assert from_env({}) is None
    assert from_env({ENV['tokens']: 'lots', ENV['usd']: '-1'}) is None


def test_a_run_is_held_to_the_smaller_limit():
    assert tighter(Budget(tokens=10000), Budget(tokens=4000, usd=2.0)) == Budget(tokens=4000, usd=2.0)
    assert tighter(Budget(tokens=3000, usd=5.0), Budget(tokens=4000, usd=2.0)) == Budget(tokens=3000, usd=2.0)
    assert tighter(Budget(tokens=3000), None) == Budget(tokens=3000)


def test_item_budget_options():
    assert item_budget(0, 0) == Budget()
    assert item_budget(8000, 0.5) == Budget(tokens=8000, usd=0.5)
    with pytest.raises(ValueError):
        item_budget(-1, 0)


def test_assess_shows_spend_and_what_is_left_and_batches_pass_it_on():
    item = mk(*runs(('failure', 3000, 0.5)))
    entry = assess([item], now=NOW, item_budget=Budget(tokens=8000, usd=2.0))[0]
    assert entry['eligible']
    assert entry['spend'] == {'runs': 1, 'priced_runs': 1, 'tokens': 3000, 'cost_usd': 0.5}
    assert entry['item_budget'] == {'tokens': 8000, 'usd': 2.0}
    assert entry['budget_left'] == {'tokens': 5000, 'usd': 1.5}
    cand = dict(entry, unit='task-42', worker='w1', master='m1')
    env = batches([cand])['batches'][0]['launch'][0]['setenv']
    assert env[ENV['tokens']] == '5000' and env[ENV['usd']] == '1.5'
    plain = assess([item], now=NOW)[0]
    assert plain['spend']['tokens'] == 3000 and plain['budget_left'] == {} and plain['item_budget'] == {}
    env = batches([dict(plain, unit='task-42', worker='w1', master='m1')])['batches'][0]['launch'][0]['setenv']
    assert ENV['tokens'] not in env and ENV['usd'] not in env


def test_explain_gives_the_figures():
    item = mk(*runs(('budget', 5000, None), ('budget', 3000, None)))
    ex = explain(item, now=NOW, item_budget=Budget(tokens=8000))
    assert ex['reason'] == 'budget_spent'
    assert ex['holds'][0]['reason'] == 'budget_spent' and '8000 tokens over 2 run(s)' in ex['holds'][0]['why']
    assert ex['budget_left'] == {'tokens': 0}
    lines = explain_lines(ex)
    assert any(line.startswith('spend since the last reopen: 8000 tokens, no cost stated over 2 run(s)')
               and 'item budget 8000 tokens, left 0 tokens' in line for line in lines)


@pytest.mark.parametrize('value, named', [
    (None, {}), ('', {}), ('  ', {}),
    (50000, {'tokens': 50000}), (0, {'tokens': None}),
    ('50000', {'tokens': 50000}), ('50k tokens', {'tokens': 50000}), ('2M', {'tokens': 2000000}),
    ('1.5k tok', {'tokens': 1500}),
    ('$2.50', {'usd': 2.5}), ('2.5 usd', {'usd': 2.5}), ('$0', {'usd': None}),
    ('50k tokens, $2', {'tokens': 50000, 'usd': 2.0}), ('$2 50000', {'usd': 2.0, 'tokens': 50000}),
    ('none', {'tokens': None, 'usd': None}), ('None', {'tokens': None, 'usd': None}),
])
def test_the_budget_field_names_limits(value, named):
    assert parse_override(value) == named


@pytest.mark.parametrize('value', ['lots', '-5', '$2k', '1.5 tokens', '5000 6000', '$1 $2', 'none, $2', 1.5, -3, True,
                                   float('nan'), '50000 tokens; rm -rf /'])
def test_a_budget_field_that_is_not_a_budget_is_refused(value):
    with pytest.raises(ValueError):
        parse_override(value)


def test_the_field_replaces_only_the_limits_it_names_and_junk_changes_nothing():
    default = Budget(tokens=8000, usd=1.0)
    assert for_item(default, None) == (default, '')
    assert for_item(default, '20k') == (Budget(tokens=20000, usd=1.0), '')
    assert for_item(default, '$3') == (Budget(tokens=8000, usd=3.0), '')
    assert for_item(default, 'none') == (Budget(), '')
    assert for_item(None, '$3') == (Budget(usd=3.0), '')
    got, note = for_item(default, 'plenty')
    assert got == default and "'plenty' is not a budget" in note and "dispatcher's item budget holds" in note


def test_the_budget_field_raises_a_held_items_budget_and_the_verdict_says_which():
    steps = runs(('budget', 5000, None), ('budget', 3000, None))
    held = evaluate(mk(*steps), now=NOW, item_budget=Budget(tokens=8000))
    assert held.reason == 'budget_spent' and held.item_budget == Budget(tokens=8000)
    raised = mk(*steps)
    raised.budget = '20k tokens'
    verdict = evaluate(raised, now=NOW, item_budget=Budget(tokens=8000))
    assert verdict.eligible and verdict.item_budget == Budget(tokens=20000)
    entry = assess([raised], now=NOW, item_budget=Budget(tokens=8000))[0]
    assert entry['item_budget'] == {'tokens': 20000} and entry['budget_left'] == {'tokens': 12000}
    assert entry['budget_field'] == '20k tokens' and entry['budget_note'] == ''
    # a lower field holds an item the dispatcher's budget would let run; 'none' lifts the budget of one item
    lower = mk(*runs(('failure', 3000, None)))
    lower.budget = 3000
    assert evaluate(lower, now=NOW, item_budget=Budget(tokens=8000)).reason == 'budget_spent'
    lower.budget = 'none'
    verdict = evaluate(lower, now=NOW, item_budget=Budget(tokens=1000))
    assert verdict.eligible and verdict.item_budget is None


def test_explain_names_the_budget_field_and_one_it_could_not_read():
    item = mk(*runs(('budget', 5000, None)))
    item.budget = '$1 6000'
    lines = explain_lines(explain(item, now=NOW, item_budget=Budget(tokens=8000)))
    assert "budget field: '$1 6000' -- each limit it names replaces the dispatcher's item budget" in lines
    assert any('item budget 6000 tokens, $1, left 1000 tokens, $1' in line for line in lines)
    item.budget = 'lots'
    ex = explain(item, now=NOW, item_budget=Budget(tokens=4000))
    assert ex['reason'] == 'budget_spent' and ex['item_budget'] == {'tokens': 4000}
    assert any(line.startswith("budget field: 'lots' -- its budget field is not read") for line in explain_lines(ex))


@pytest.mark.parametrize('cap, spend, agent, limits, short, why', [
    (None, ItemSpend(), '', None, None, None),
    (Budget(tokens=8000), ItemSpend(runs=2, tokens=900), '', ['tokens'], 'tokens', ''),
    (Budget(tokens=8000, usd=2.0), ItemSpend(), '', ['tokens', 'usd'], 'tokens and usd', ''),     # no run yet: its CLI may price
    (Budget(tokens=8000, usd=2.0), ItemSpend(runs=2, priced_runs=1, tokens=900, cost_usd=0.2), '', ['tokens', 'usd'],
     'tokens and usd', ''),
    (Budget(tokens=8000, usd=2.0), ItemSpend(runs=2, tokens=900), '', ['tokens'], 'tokens only', 'its 2 run(s)'),
    (Budget(tokens=8000, usd=2.0), ItemSpend(), 'Codex', ['tokens'], 'tokens only', 'the codex profile'),
    (Budget(usd=2.0), ItemSpend(runs=1, tokens=900), '', [], 'nothing', 'stated no cost and it has no token limit'),
    (Budget(usd=2.0), ItemSpend(), 'gemini', [], 'nothing', 'the gemini profile'),
    (Budget(usd=2.0), ItemSpend(runs=1, priced_runs=1, cost_usd=0.1), 'claude', ['usd'], 'usd', ''),
])
def test_held_by_says_which_limits_can_hold_the_item(cap, spend, agent, limits, short, why):
    got = held_by(cap, spend, agent)
    if cap is None:
        assert got == {}
        return
    assert (got['limits'], got['short']) == (limits, short)
    assert (why in got['text'] and 'never estimated' in got['text']) if why else got['text'] == short, got


def test_an_item_held_by_tokens_only_says_so_in_assess_explain_the_status_table_and_the_page():
    from ansible_collections.fleet.dispatch.plugins.filter.dispatch import status_table
    from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import render_page
    cap = Budget(tokens=8000, usd=1.0)
    item = mk(*runs(('budget', 5000, None), ('budget', 3000, None)))     # its runs stated tokens, never a cost
    (entry,) = assess([item], now=NOW, item_budget=cap)
    assert entry['reason'] == 'budget_spent' and entry['budget_held_by']['short'] == 'tokens only'
    lines = explain_lines(explain(item, now=NOW, item_budget=cap))
    assert any('held by tokens only: its 2 run(s) since the last reopen stated no cost' in line for line in lines), lines
    table = status_table([entry]).splitlines()
    assert table[0].split()[10:13] == ['spend', 'held', 'by'] and 'tokens only' in table[2], table
    page = render_page({'items': [entry], 'now': '2026-11-30T22:00:00Z'})
    assert '<th>budget held by</th>' in page and '>tokens only</td>' in page
    assert 'title="tokens only: its 2 run(s) since the last reopen stated no cost' in page
    (priced,) = assess([mk(*runs(('failure', 500, 0.1)))], now=NOW, item_budget=cap)
    assert priced['budget_held_by']['short'] == 'tokens and usd'
    assert status_table([priced]).splitlines()[2].count('tokens and usd') == 1
    (free,) = assess([mk(*runs(('failure', 500, 0.1)))], now=NOW)
    assert free['budget_held_by'] == {} and '<td class="held" title="">-</td>' in render_page({'items': [free], 'now': '2026-11-30T22:00:00Z'})
