# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which inventory worker runs an item's run: the start marker's host, matched through the probe. Pure.

A start marker names the worker by the name the runner knows itself by (the worker's host name), and an
inventory names it by whatever the operator chose (``w1 ansible_host=...``). So the worker that runs a run
is the inventory worker whose probe answered with that host name (or whose inventory name is it), and,
when no answer carries the name, the one worker whose master has the run's unit live. A worker that did
not answer is never guessed at: with no match the answer says which workers could not be asked, so the
caller changes nothing (D6: a refusal writes nothing to the board).
"""

from __future__ import annotations

from typing import Any, Dict, List


def _short(name: str) -> str:
    return (name or '').split('.', 1)[0].lower()


def _live(probe: Dict[str, Any], master: str, unit: str) -> bool:
    for m in probe.get('masters') or []:
        if m.get('master') == master and not m.get('failed'):
            names = [u.get('name', '') for u in (m.get('units') or [])]
            if unit in names or unit + '.service' in names:
                return True
    return False


def run_worker(marker: Dict[str, Any], probes: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The inventory worker of the run a start marker names: ``{worker, master, unit, live, why}``.

    ``marker``: the start marker's fields (``host``, ``master``, ``unit``). ``probes``: one per inventory
    worker asked, ``{worker, hostname, failed, msg, masters}`` (``masters`` as ``worker_probe`` answers).
    ``worker`` is '' when no worker is the run's; ``why`` then says so, naming the workers not reached.
    ``live`` says whether the unit is live on that worker's master.
    """
    host, master = marker.get('host') or '', marker.get('master') or ''
    unit = marker.get('unit') or ''
    answered = [p for p in probes if not p.get('failed')]
    silent = [p for p in probes if p.get('failed')]
    named = [p for p in answered if _short(host) and _short(host) in (_short(p.get('hostname', '')), _short(p.get('worker', '')))]
    if len(named) > 1:
        named = [p for p in named if _live(p, master, unit)] or named
    if len(named) == 1:
        p = named[0]
        return {'worker': p['worker'], 'master': master, 'unit': unit, 'live': _live(p, master, unit), 'why': ''}
    if len(named) > 1:
        return {'worker': '', 'master': master, 'unit': unit, 'live': False,
                'why': 'several inventory workers answer as %s (%s) and none runs %s' % (
                    host, ', '.join(p['worker'] for p in named), unit)}
    running = [p for p in answered if _live(p, master, unit)]
    if len(running) == 1:
        p = running[0]
        return {'worker': p['worker'], 'master': master, 'unit': unit, 'live': True, 'why': ''}
    heard = ', '.join('%s (%s)' % (p['worker'], p.get('hostname') or '?') for p in answered) or 'none'
    why = 'no inventory worker answers as %s, the host of its start marker (answered: %s)' % (host, heard)
    if silent:
        why += '; not reached: %s' % '; '.join('%s: %s' % (p['worker'], p.get('msg') or 'no answer') for p in silent)
    return {'worker': '', 'master': master, 'unit': unit, 'live': False, 'why': why}
