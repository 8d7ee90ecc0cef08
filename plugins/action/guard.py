# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet.dispatch.guard``: one step of the guarded dispatch path, on the controller (D4, D6, D15).

Thin: every decision is a pure function of ``module_utils/_core/plan.py``. The action exists so that
the shared dispatch tasks can (1) call those functions, and (2) say every refusal on **stderr**
as an Ansible warning -- a refusal writes nothing to the board (D6), it is logged.
"""

from __future__ import annotations

import datetime

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.fleet.dispatch.plugins.module_utils._core.model import UTC
from ansible_collections.fleet.dispatch.plugins.module_utils._core.plan import (
    batches, gate_leases, gate_place, gate_probe, name_candidates, repairs, survey,
)

STAGES = ('name', 'lease', 'probe', 'place', 'batch', 'report')


def _refusal_text(ref):
    where = ref.get('repo') + '#' if ref.get('repo') else '#'
    return '%s%s refused (%s): %s' % (where, ref.get('number'), ref.get('stage'), ref.get('why'))


def report(launches):
    """Read the registered ``launch`` results (one per master): launched, refused by the unit name
    (the second layer of D4 caught a race the lease did not cover), failed."""
    launched, refused, failed, warnings = [], [], [], []
    for res in launches or []:
        where = res.get(res.get('ansible_loop_var') or 'item') or {}
        label = '%s/%s' % (where.get('worker'), where.get('master'))
        if res.get('skipped'):
            for cand in where.get('items') or []:
                failed.append({'number': cand.get('number'), 'unit': cand.get('unit'), 'worker': where.get('worker'),
                               'master': where.get('master'), 'why': 'no PATH recorded for this master (D3)'})
                warnings.append('%s on %s: not launched: the master has no recorded PATH (~/.config/fleet-dispatch/path; '
                                'run the worker role, or set dispatch_run_path) - D3' % (cand.get('unit'), label))
            continue
        if res.get('failed') or res.get('unreachable'):
            for cand in where.get('items') or []:
                failed.append({'number': cand.get('number'), 'unit': cand.get('unit'), 'worker': where.get('worker'),
                               'master': where.get('master'), 'why': res.get('msg') or 'unreachable'})
                warnings.append('%s on %s: launch failed: %s' % (cand.get('unit'), label, res.get('msg') or 'unreachable'))
            continue
        for entry in res.get('results') or []:
            row = {'number': entry.get('number'), 'repo': entry.get('repo'), 'unit': entry.get('unit'),
                   'worker': where.get('worker'), 'master': where.get('master'), 'reason': entry.get('reason'),
                   'invocation_id': entry.get('invocation_id')}
            if entry.get('reason') in ('launched', 'would-launch'):
                launched.append(row)
            elif entry.get('reason') in ('live', 'unloading'):
                refused.append(dict(row, stage='launch', why='the unit name %s is held on %s (%s)' % (
                    entry.get('unit'), label, entry.get('reason'))))
            else:
                failed.append(dict(row, why=entry.get('stderr') or 'failed to launch'))
    return {'launched': launched, 'refused': refused, 'failed': failed, 'warnings': warnings}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        stage = args.get('stage')
        if stage not in STAGES:
            raise AnsibleActionFail('stage must be one of %s, got %r' % (', '.join(STAGES), stage))
        cands = args.get('candidates') or []
        if not isinstance(cands, list):
            raise AnsibleActionFail('candidates must be a list')
        if stage == 'name':
            out = name_candidates(cands)
        elif stage == 'lease':
            out = gate_leases(cands, args.get('leases') or [], enabled=bool(args.get('lease_enabled', True)))
        elif stage == 'probe':
            surveyed = survey(args.get('probes') or [])
            out = gate_probe(cands, surveyed)
            out['survey'] = surveyed
            out['duplicates'] = surveyed['duplicates']
            out['repairs'] = repairs(surveyed, owner=args.get('owner') or '', now=datetime.datetime.now(UTC))
            for dup in surveyed['duplicates']:
                keep = dup['keep']
                out['warnings'].append('%s is live on %d masters: keeping the oldest on %s/%s (started %s), stopping %s (D4)' % (
                    dup['unit'], 1 + len(dup['stop']), keep.get('worker'), keep.get('master'), keep.get('started_at'),
                    ', '.join('%s/%s' % (u.get('worker'), u.get('master')) for u in dup['stop'])))
        elif stage == 'place':
            out = gate_place(cands, args.get('masters') or [], args.get('capacity') or [], args.get('survey') or {})
        elif stage == 'batch':
            out = batches(cands, args.get('workspaces') or [], command=args.get('command') or [],
                          setenv=args.get('setenv') or {}, owner=args.get('owner') or '')
        else:
            out = report(args.get('launches') or [])
        for ref in out.get('refused', []):
            self._display.warning(_refusal_text(ref))
        for text in out.pop('warnings', []):
            self._display.warning(text)
        result.update(out)
        result['changed'] = False
        return result
