# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator's view as files: the status page (HTML) and the Prometheus textfile.

Thin: both render ``plugin_utils.page`` (which escapes all board text) from the cycle's data.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.fleet.dispatch.plugins.module_utils._board.table import TableError, read_table
from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import (
    account_text, fleet, fleet_record, fleet_text, render_metrics, render_page, spend_text)


def _check(name, data, items=True):
    if not isinstance(data, dict):
        raise AnsibleFilterError('%s expects a dict of the cycle (items, now, board, masters, ...), not %s'
                                 % (name, type(data).__name__))
    data = dict(data)
    if items and data.get('table'):   # the board table a sweep's read wrote (board_info's table): its items, read here
        try:
            data['items'] = read_table(data['table'])
        except TableError as exc:
            raise AnsibleFilterError('%s: %s' % (name, exc))
    return data


def status_page(data):
    """The status page as one self-contained HTML document."""
    return render_page(_check('status_page', data))


def status_metrics(data):
    """The cycle as a Prometheus textfile."""
    return render_metrics(_check('status_metrics', data))


def status_fleet(data):
    """What this cycle probed of the fleet, for the cycles that probe nothing (fleet.json); ``None`` when it probed nothing."""
    data = _check('status_fleet', data, items=False)
    if data.get('masters') is None and data.get('survey') is None:
        return None
    return fleet_record(fleet(data.get('configured') or [], data.get('masters'), data.get('survey'), data.get('now')),
                        data.get('now'))


def status_fleet_table(data):
    """Every configured master, usable or dark with its source and reset, as an aligned text table."""
    return fleet_text(_check('status_fleet_table', data, items=False))


def status_spend_table(data):
    """What each master's runs stated they spent (tokens, cost), as an aligned text table."""
    return spend_text(_check('status_spend_table', data))


def status_account_table(data):
    """What each agent account's runs stated they spent per UTC day, against its daily budget, as an aligned text table."""
    return account_text(_check('status_account_table', data))


class FilterModule(object):
    def filters(self):
        return {
            'status_page': status_page,
            'status_metrics': status_metrics,
            'status_fleet': status_fleet,
            'status_fleet_table': status_fleet_table,
            'status_spend_table': status_spend_table,
            'status_account_table': status_account_table,
        }
