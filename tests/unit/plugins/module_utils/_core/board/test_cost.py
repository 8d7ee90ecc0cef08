# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cost of an item's runs: summed from the close-out markers, never estimated (issue 10 item 6)."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.cost import run_cost
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _item(*marks):
    comments = [Comment(id=str(i), body=format_marker(kind, fields), created_at=T0 + dt.timedelta(minutes=i))
                for i, (kind, fields) in enumerate(marks)]
    return Item(number=3, title='t', state='open', status='Ready', comments=comments)


def test_stated_figures_are_summed_and_gaps_stay_gaps():
    item = _item(('start', {}), ('failure', {'turns': 4, 'tokens': 1000, 'cost_usd': 0.25}),
                 ('start', {}), ('capacity', {'turns': 0}),
                 ('start', {}), ('noop', {'turns': 2, 'tokens': 50}),
                 ('reset', {}))
    entry = assess([item], now=T0 + dt.timedelta(hours=1))[0]
    assert entry['run_cost'] == {'runs': 3, 'turns': 6, 'tokens': 1050, 'cost_usd': 0.25, 'priced_runs': 1}


def test_no_figures_no_numbers():
    assert run_cost([]) == {'runs': 0, 'turns': None, 'tokens': None, 'cost_usd': None, 'priced_runs': 0}
