# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the reaper step (roles/dispatch/tasks/reap.yml): thin over ``_core.dispatch.reaper`` (D14).

``reap_due`` is the clock half (which starts are older than the threshold, and the threshold with
its reading); ``reap_decide`` the probe half (which of them no master runs, with every master
answering); ``reap_said`` the cycle's one message. The decisions are ``module_utils._core.dispatch.reaper``; the probe answers are read exactly as
the guard reads them (``plugins/action/guard.py``: ``answers``, ``_core.dispatch.plan.survey``).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.fleet.dispatch.plugins.plugin_utils.loop_results import answers
from ansible_collections.fleet.dispatch.plugins.filter.board_table import board_table
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import survey
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.reaper import DEFAULT_FLOOR_S, decide, reaping


def reap_due(items, now, floor=DEFAULT_FLOOR_S):
    """``{threshold: {...}, due: [...]}`` for the board_info ``items`` (or its whole answer: ``board_table``) at ``now``."""
    if isinstance(items, dict):
        items = board_table(items)
    if not isinstance(items, list):
        raise AnsibleFilterError('reap_due expects the items list of fleet.dispatch.board_info')
    try:
        return reaping(items, now=now, floor=floor)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('reap_due: %s' % exc)


def reap_decide(reaping, probes, masters, now, leases=None, lease_enabled=True):
    """``{reap: [...], held: [...]}``: ``reaping`` is ``reap_due``'s answer, ``probes`` the registered
    ``units_info`` loop results of this cycle, ``masters`` every master of the fleet."""
    if not isinstance(reaping, dict) or 'due' not in reaping:
        raise AnsibleFilterError('reap_decide expects the answer of fleet.dispatch.reap_due')
    try:
        return decide(reaping['due'], survey(answers(probes or [])), masters, now=now, limit=reaping['threshold'],
                      leases=leases or [], lease_enabled=bool(lease_enabled))
    except (TypeError, ValueError, KeyError) as exc:
        raise AnsibleFilterError('reap_decide: %s' % exc)


def reap_said(reaped, reset=''):
    """The reaper's cycle in lines, for one message: each held item with why, then (when ``reset`` names what becomes
    of them: plan mode, check mode, a hand dispatch) each item it would reset."""
    if not isinstance(reaped, dict):
        raise AnsibleFilterError('reap_said expects the answer of fleet.dispatch.reap_decide')
    lines = ['#%s (%s, started %s): %s' % (h.get('number'), h.get('unit'), h.get('started_at'), h.get('why'))
             for h in reaped.get('held') or []]
    if reset:
        lines.extend('#%s: %s - %s' % (r.get('number'), reset, r.get('text')) for r in reaped.get('reap') or [])
    return lines


class FilterModule(object):
    def filters(self):
        return {'reap_due': reap_due, 'reap_decide': reap_decide, 'reap_said': reap_said}
