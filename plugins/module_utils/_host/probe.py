# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the dispatch path reads of one master inside the lease: its task units and its capacity (D4, D8, D13).

``read_units`` is ``units_info``'s answer (live and unloading ``task-*`` units from ONE
``systemctl --user show``); ``read_capacity`` is ``capacity_info``'s (the capacity state file and
whether it makes the master dark). ``worker_probe`` runs both as each master of its worker in
one call (``_host.identity``); headroom (load, memory, CPUs) is the worker's and is measured
once per call by the caller.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .._core.outcome.capacity import is_dark
from .._core.board.model import format_time
from . import spool
from .files import default_state_path, read_capacity_file
from .systemd import SystemdUser

UNIT_KEYS = ('name', 'item', 'active_state', 'sub_state', 'invocation_id', 'start_us', 'start_wall_us', 'started_at',
             'main_pid')


def read_units(sd: SystemdUser, warn: Callable[[str], Any]) -> Dict[str, Any]:
    """``{units (live), unloading, live_runs, live_items}`` of this master (SystemdError: not read)."""
    units = sd.list_task_units()
    live = [dict((k, u[k]) for k in UNIT_KEYS) for u in units if u['state'] == 'live']
    unloading = [dict((k, u[k]) for k in UNIT_KEYS) for u in units if u['state'] != 'live']
    for unit in live + unloading:
        if unit['item'] is None:
            warn('unit %s does not name an item the way fleet.dispatch names units; it is listed with item null' % unit['name'])
    return dict(units=live, unloading=unloading, live_runs=len(live),
                live_items=[u['item']['number'] for u in live if u['item']])


def read_capacity(now, warn: Callable[[str], Any], path: Optional[str] = None) -> Dict[str, Any]:
    """``{dark, source, reset_at, why, state_file, state_present, message}`` of this master (fails open, D5)."""
    path = path or default_state_path()
    state, why_ignored, present = read_capacity_file(path)
    dark, source, reset_at, why = is_dark(state, now)
    if state is None:
        why = 'not dark: %s (%s); guards fail open' % (why_ignored, path)
        if present:
            warn('capacity state %s ignored: %s' % (path, why_ignored))
    elif why_ignored:
        why = '%s; note: %s' % (why, why_ignored)
    return dict(dark=bool(dark), source=source, reset_at=format_time(reset_at), why=why, state_file=path,
                state_present=state is not None, message=(state or {}).get('message', ''))


def read_spool(warn: Callable[[str], Any], state_dir: Optional[str] = None, check: bool = False) -> Dict[str, Any]:
    """``{spooled, spool_problems}``: the close-outs this master's runs could not post yet (``_host.spool``);
    the reaper leaves their items alone (D12). ``check``: a read-only look that gives back no dead claim."""
    import os
    out = spool.summary(state_dir or os.path.dirname(default_state_path()), release_dead=not check)
    for text in out['spool_problems']:
        warn('close-out spool: %s' % text)
    return out
