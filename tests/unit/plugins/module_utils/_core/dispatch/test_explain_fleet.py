# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Explain places an item on the masters as the last probing sweep saw them (fleet.json): a master dark for a rate
limit or a spent daily budget stays dark while its stated reset is ahead, and the placement names what holds it."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.explain import explain, explain_lines, masters_seen

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 12, 6, 15, 0, tzinfo=UTC)

CONFIGURED = [{'worker': 'w1', 'master': 'a1', 'dark': False, 'headroom': {}, 'agents': ['claude']},
              {'worker': 'w2', 'master': 'b1', 'dark': False, 'headroom': {}, 'agents': ['claude']},
              {'worker': 'w3', 'master': 'c1', 'dark': False, 'headroom': {}, 'agents': ['claude']}]
SPENT = 'the agent account spent its daily budget (budget): gets nothing until 2026-12-07T00:00:00Z, the next day'


def record(**rows):
    masters = [dict({'worker': 'w1', 'master': 'a1', 'dark': True, 'source': 'budget', 'reset_at': '2026-12-07T00:00:00Z',
                     'why': SPENT, 'headroom': {'live_runs': 0}}),
               dict({'worker': 'w2', 'master': 'b1', 'dark': True, 'source': 'rate_limit', 'reset_at': '2026-12-06T14:00:00Z',
                     'why': 'rate limit', 'headroom': {'live_runs': 4}})]
    for m in masters:
        m.update(rows.get(m['master'], {}))
    return {'at': '2026-12-06T14:55:00Z', 'masters': masters}


def test_a_dark_master_stays_dark_until_its_stated_reset_and_one_past_it_is_usable():
    got = dict((m['master'], m) for m in masters_seen(CONFIGURED, record(), NOW))
    assert got['a1']['dark'] and got['a1']['source'] == 'budget' and got['a1']['why'] == SPENT + ' (the sweep at 2026-12-06T14:55:00Z)'
    assert not got['b1']['dark'] and got['b1']['headroom'] == {'live_runs': 4}   # its reset passed: the clock cleared it
    assert not got['c1']['dark'] and got['c1']['headroom'] == {}                  # not in the record: as configured
    revoked = masters_seen(CONFIGURED, record(b1={'source': 'revoked', 'reset_at': 'unknown'}), NOW)
    assert revoked[1]['dark'] and revoked[1]['source'] == 'revoked'
    garbled = masters_seen(CONFIGURED, record(b1={'reset_at': 'soon'}), NOW)
    assert garbled[1]['dark']


def test_no_record_places_the_masters_as_given():
    assert masters_seen(CONFIGURED, None, NOW) == CONFIGURED
    assert masters_seen(CONFIGURED, {'at': 'x'}, NOW) == CONFIGURED
    assert masters_seen(CONFIGURED, ['not', 'a', 'record'], NOW) == CONFIGURED
    assert masters_seen(None, record(), NOW) is None


def test_explain_names_the_spent_account_that_holds_the_placement():
    item = Item(number=7, title='t', state='open', status='Ready')
    only_spent = [CONFIGURED[0]]
    ex = explain(item, now=NOW, masters=masters_seen(only_spent, record(), NOW))
    assert ex['eligible'] and not ex['placement']['placed']
    line = [x for x in explain_lines(ex) if x.startswith('placement now:')][0]
    assert 'no usable master' in line and 'w1/a1 ' + SPENT in line
    ex = explain(item, now=NOW, masters=masters_seen(CONFIGURED, record(), NOW))
    assert ex['placement']['placed'] and ex['placement']['master'] in ('b1', 'c1')
    assert 'dark: w1/a1 ' + SPENT in ex['placement']['why']
