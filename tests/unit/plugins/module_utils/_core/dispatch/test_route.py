# -*- coding: utf-8 -*-
"""Routing per item (agent profile, model, effort) and priority order, through the placement and the
eligibility the dispatch path calls: profile honoured, model passed, unservable held, priority kept
under shortage, no cap (D13)."""
from __future__ import annotations

import datetime as _dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.eligibility import PRECEDENCE, REASONS, evaluate
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import (
    assess, batches, candidates, gate_place, place)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.route import (
    PROFILE_ENV, offered_profiles, ordered, priority_rank, route_env, route_gaps, run_profile)

NOW = _dt.datetime(2026, 12, 1, 12, 0, tzinfo=_dt.timezone.utc)


def item(number, days_old=0, **kw):
    kw.setdefault('status', 'Ready')
    return Item(number=number, title='t%d' % number, state='open', created_at=NOW - _dt.timedelta(days=days_old), **kw)


def master(worker, name, agents, live=0, dark=False):
    return {'worker': worker, 'master': name, 'dark': dark, 'agents': list(agents), 'source': 'rate_limit' if dark else None,
            'headroom': {'live_runs': live, 'load1': 0.0, 'cpus': 2, 'mem_available_kb': 1000}}


def cands(*items, agents=None):
    return candidates(assess(list(items), now=NOW, agents=agents))


# -- the profile -------------------------------------------------------------------------------

def test_a_routed_item_goes_only_to_a_master_with_its_profile_even_when_another_has_more_room():
    plan = place(cands(item(1, agent='codex')), [master('w1', 'a', ['claude']), master('w2', 'b', ['codex'], live=5)])
    assert [(a['number'], a['worker'], a['agent']) for a in plan['assignments']] == [(1, 'w2', 'codex')]


def test_an_item_without_a_route_goes_anywhere_by_headroom():
    plan = place(cands(item(1)), [master('w1', 'a', ['codex'], live=3), master('w2', 'b', ['claude'])])
    assert [(a['worker'], a['agent']) for a in plan['assignments']] == [('w2', 'claude')]


def test_the_profile_name_is_case_blind():
    plan = place(cands(item(1, agent=' Gemini ')), [master('w1', 'a', ['gemini'])])
    assert plan['assignments'][0]['agent'] == 'gemini'


def test_a_master_whose_profiles_are_not_known_takes_no_routed_item():
    plan = place(cands(item(1, agent='claude')), [{'worker': 'w1', 'master': 'a', 'dark': False, 'headroom': {}}])
    assert plan['assignments'] == []
    assert 'no usable master offers the agent profile' in plan['unplaced'][0]['why']


def test_when_every_master_with_the_profile_is_dark_the_item_is_unplaced_never_put_on_another_agent():
    plan = place(cands(item(1, agent='codex'), item(2)),
                 [master('w1', 'a', ['codex'], dark=True), master('w2', 'b', ['claude'])])
    assert [(a['number'], a['agent']) for a in plan['assignments']] == [(2, 'claude')]
    assert [u['number'] for u in plan['unplaced']] == [1]
    assert '1 dark one(s) do' in plan['unplaced'][0]['why']


def test_gate_place_refuses_at_the_place_stage_and_carries_the_profile_to_the_launch():
    masters = [{'worker': 'w1', 'master': 'a', 'agents': ['claude']}, {'worker': 'w2', 'master': 'b', 'agents': ['codex']}]
    capacity = [{'target': {'worker': 'w1', 'master': 'a'}, 'status': 'ok', 'dark': False, 'headroom': {}},
                {'target': {'worker': 'w2', 'master': 'b'}, 'status': 'ok', 'dark': True, 'source': 'rate_limit',
                 'reset_at': '2026-12-01T13:00:00Z', 'headroom': {}}]
    found = gate_place(cands(item(1, agent='claude'), item(2, agent='codex')), masters, capacity)
    assert [(c['number'], c['worker'], c['agent']) for c in found['admitted']] == [(1, 'w1', 'claude')]
    assert [(r['number'], r['stage']) for r in found['refused']] == [(2, 'place')]


# -- a worker offering several profiles ----------------------------------------------------------

def test_a_worker_offers_its_provisioned_profile_first_then_the_further_ones_each_once():
    assert offered_profiles('claude', ['Codex', 'claude', 'gemini']) == ['claude', 'codex', 'gemini']
    assert offered_profiles('qwen', ['claude']) == ['qwen', 'claude']
    assert offered_profiles(None) == ['custom']
    with pytest.raises(ValueError):
        offered_profiles('claude', ['gpt'])


def test_a_master_offering_several_takes_each_routed_item_with_its_own_profile_and_the_launch_names_it():
    both = master('w1', 'a', offered_profiles('claude', ['codex']))
    plan = place(cands(item(1, agent='codex'), item(2, agent='claude', days_old=1), item(3, days_old=2), item(4, agent='gemini')),
                 [both, master('w2', 'b', ['gemini'], live=9)])
    assert sorted((a['number'], a['worker'], a['agent']) for a in plan['assignments']) == [
        (1, 'w1', 'codex'), (2, 'w1', 'claude'), (3, 'w1', 'claude'), (4, 'w2', 'gemini')]   # no route: the provisioned one
    admitted = [dict(cand, unit='task-%d' % cand['number']) for cand in
                gate_place(cands(item(1, agent='codex'), item(3, days_old=2)),
                           [{'worker': 'w1', 'master': 'a', 'agents': ['claude', 'codex']}],
                           [{'target': {'worker': 'w1', 'master': 'a'}, 'status': 'ok', 'dark': False, 'headroom': {}}])['admitted']]
    launch = dict((e['number'], e['setenv']) for e in batches(admitted, command=['x'])['batches'][0]['launch'])
    assert launch[1][PROFILE_ENV] == 'codex' and launch[3][PROFILE_ENV] == 'claude'


@pytest.mark.parametrize('provisioned, offered, asked, got', [
    ('claude', ['claude', 'codex'], 'codex', 'codex'),
    ('claude', ['claude', 'codex'], ' CLAUDE ', 'claude'),
    ('claude', ['claude', 'codex'], '', 'claude'),      # an older dispatcher names none: the provisioned one
    ('codex', None, '', 'codex'),
    ('codex', None, 'codex', 'codex'),                    # an older runner config lists none: its own profile only
])
def test_the_runner_runs_the_profile_the_run_was_placed_for(provisioned, offered, asked, got):
    assert run_profile(provisioned, offered, asked) == (got, '')


def test_the_runner_refuses_a_profile_its_worker_does_not_offer_and_never_runs_another():
    profile, why = run_profile('claude', ['claude', 'codex'], 'gemini')
    assert profile == '' and "placed this run for the agent profile 'gemini'" in why and 'claude, codex' in why
    assert run_profile('codex', None, 'claude')[0] == ''


# -- model and effort reach the agent ------------------------------------------------------------

def test_model_and_effort_reach_a_claude_agent_under_the_names_its_cli_reads():
    admitted = [dict(c, unit='task-%d' % c['number'], worker='w1', master='a', agent='claude')
                for c in cands(item(1, agent='claude', model='claude-opus-4-1', effort='high'))]
    env = batches(admitted, command=['fleet-runner'])['batches'][0]['launch'][0]['setenv']
    assert env['ANTHROPIC_MODEL'] == 'claude-opus-4-1' and env['CLAUDE_CODE_EFFORT_LEVEL'] == 'high'
    assert env['AGENT_MODEL'] == 'claude-opus-4-1' and env['AGENT_EFFORT'] == 'high'


def test_the_item_route_wins_over_the_dispatcher_setenv_and_an_item_without_one_adds_nothing():
    admitted = [dict(c, unit='task-%d' % c['number'], worker='w1', master='a', agent='gemini')
                for c in cands(item(1, model='gemini-2.5-pro'), item(2, days_old=1))]
    launch = batches(admitted, command=['x'], setenv={'GEMINI_MODEL': 'default-model'})['batches'][0]['launch']
    by = dict((entry['number'], entry['setenv']) for entry in launch)
    assert by[1]['GEMINI_MODEL'] == 'gemini-2.5-pro'
    assert by[2]['GEMINI_MODEL'] == 'default-model' and 'AGENT_MODEL' not in by[2]


def test_a_profile_whose_cli_reads_no_variable_gets_the_generic_names_and_its_arguments():
    assert route_env({'model': 'gpt-5-codex', 'effort': 'high'}, 'codex') == {'AGENT_MODEL': 'gpt-5-codex', 'AGENT_EFFORT': 'high'}
    assert route_gaps({'model': 'gpt-5-codex', 'effort': 'high'}, 'codex') == []   # the runner's -m and -c
    assert route_gaps({'model': 'gpt-5-codex', 'effort': 'high'}, 'custom') == ['model', 'effort']
    assert route_gaps({'model': 'm', 'effort': 'high'}, 'gemini') == ['effort']
    assert route_gaps({'model': 'm', 'effort': 'high'}, 'claude') == []


def test_no_route_name_is_a_fleet_or_secret_looking_name_so_the_launch_passes_it_to_the_agent():
    from ansible_collections.fleet.dispatch.plugins.module_utils._host.launcher import agent_setenv
    env = route_env({'model': 'm', 'effort': 'e'}, 'claude')
    assert set(agent_setenv(env)['FLEET_AGENT_SETENV'].split(',')) == set(env)


# -- nobody can serve it: held, with its reason ------------------------------------------------

def test_an_item_asking_for_a_profile_nobody_offers_is_held_unroutable():
    verdict = evaluate(item(1, agent='codex'), now=NOW, agents=['claude', 'gemini'])
    assert (verdict.eligible, verdict.reason) == (False, 'unroutable')
    assert "'codex'" in verdict.unroutable and 'claude, gemini' in verdict.unroutable


def test_unroutable_is_a_reason_with_a_place_in_the_precedence():
    assert 'unroutable' in REASONS and 'unroutable' in PRECEDENCE
    # it outranks what releases by itself (blockers) and the status a human has not set yet
    verdict = evaluate(item(1, agent='codex', status='Backlog'), now=NOW, agents=['claude'])
    assert verdict.holds == ['unroutable', 'not_ready']


def test_routes_are_not_judged_when_the_offered_profiles_are_not_known():
    assert evaluate(item(1, agent='codex'), now=NOW).eligible
    assert evaluate(item(1), now=NOW, agents=[]).eligible   # no route: any master, even none configured yet


def test_explain_says_which_route_holds_an_item_and_where_a_routed_one_would_go():
    ex = explain(item(7, agent='codex', model='gpt-5-codex'), now=NOW, agents=['claude'],
                 masters=[master('w1', 'a', ['claude'])])
    assert ex['reason'] == 'unroutable' and ex['route']['agent'] == 'codex'
    text = '\n'.join(explain_lines(ex))
    assert "agent profile 'codex'" in text and 'route: agent codex, model gpt-5-codex' in text
    ok = explain(item(8, agent='codex', model='gpt-5-codex'), now=NOW, agents=['claude', 'codex'],
                 masters=[master('w1', 'a', ['claude']), master('w2', 'b', ['codex'], live=3)])
    assert (ok['placement']['placed'], ok['placement']['worker']) == (True, 'w2')
    assert 'AGENT_MODEL' not in ok['placement']['why']   # Codex CLI takes it as -m from the runner
    custom = explain(item(9, agent='custom', model='m1'), now=NOW, agents=['custom'], masters=[master('w3', 'c', ['custom'])])
    assert 'AGENT_MODEL' in custom['placement']['why']


# -- priority ----------------------------------------------------------------------------------

@pytest.mark.parametrize('value,rank', [('P0', 0), ('p2', 2), (' P3 ', 3), ('urgent', 0), ('High', 1), ('medium', 2),
                                        ('low', 3), (1, 1), (2.5, 2.5), ('4', 4), ('', None), (None, None),
                                        ('whenever', None), (True, None), ('nan', None)])
def test_priority_rank(value, rank):
    assert priority_rank(value) == rank


def test_candidates_go_by_priority_then_age_then_board_order():
    got = cands(item(1, days_old=1), item(2, days_old=9, priority='P2'), item(3, days_old=2, priority='P0'),
                item(4, days_old=5), item(5, days_old=1, priority='P2'), item(6, days_old=1))
    assert [c['number'] for c in got] == [3, 2, 5, 4, 1, 6]


def test_under_shortage_the_highest_go_first_on_the_emptiest_master_and_none_is_dropped():
    masters = [master('w1', 'a', ['claude'], dark=True), master('w2', 'b', ['claude'], dark=True),
               master('w3', 'c', ['claude'], live=4), master('w4', 'd', ['claude'], live=0)]
    many = [item(n, days_old=n, priority=('P%d' % (n % 4))) for n in range(1, 13)]
    plan = place(cands(*many), masters)
    numbers = [a['number'] for a in plan['assignments']]
    ranks = [priority_rank('P%d' % (n % 4)) for n in numbers]
    assert ranks == sorted(ranks)                                      # priority order kept
    assert plan['assignments'][0]['worker'] == 'w4'                    # the highest gets the emptiest master
    assert sorted(numbers) == list(range(1, 13)) and plan['unplaced'] == []   # D13: no cap, nothing held back


def test_place_orders_candidates_it_is_given_in_any_order():
    plan = place([{'number': 1, 'priority': 'low'}, {'number': 2, 'priority': 'P0'}], [master('w1', 'a', ['claude'])])
    assert [a['number'] for a in plan['assignments']] == [2, 1]


def test_ordered_is_stable_for_equal_keys():
    rows = [{'number': n} for n in (5, 3, 9)]
    assert [r['number'] for r in ordered(rows)] == [5, 3, 9]
