# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Registered loop results as answer records, for the controller plugins that read them (the guard action, the reaper
filter): the module's own return values, ``target`` (the loop item), ``status`` and ``msg``."""

from __future__ import annotations

_RESULT_KEYS = frozenset(['changed', 'failed', 'unreachable', 'skipped', 'skip_reason', 'false_condition', 'invocation',
                          'msg', 'item'])


def answers(results):
    """Registered loop results -> answer records: the module's return values, ``target`` (the loop
    item), ``status`` (``ok``/``failed``/``unreachable``/``skipped``) and ``msg``."""
    records = []
    for res in results or []:
        loop_var = res.get('ansible_loop_var') or 'item'
        if res.get('unreachable'):
            status = 'unreachable'
        elif res.get('failed'):
            status = 'failed'
        elif res.get('skipped'):
            status = 'skipped'
        else:
            status = 'ok'
        record = dict((k, v) for k, v in res.items()
                      if k not in _RESULT_KEYS and k != loop_var and not k.startswith(('ansible_', '_ansible')))
        record.update(target=res.get(loop_var) or {}, status=status, msg=res.get('msg') or '')
        records.append(record)
    return records
