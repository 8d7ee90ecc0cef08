# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fan-out's joins: per-worker calls in, per-master answers out (D15).

The dispatch path calls ``worker_probe`` and ``worker_launch`` once per worker, the workers in
parallel (a play over them). The guard's steps (``_core.dispatch.plan``) read one answer per master, in
the shape of a registered loop result (``ansible_loop_var`` naming the target). These pure
functions turn one into the other, and build each worker's launch list from the batches:

* ``configured_masters(workers)``: every master of the inventory's workers, with its agent profiles and account.
* ``probe_workers(masters, admitted, always)``: which workers the probe play calls, and for which masters.
* ``probe_answers(masters, probes)``: ``probes`` maps worker -> its ``worker_probe`` result (or
  None: not probed). A worker that did not answer makes each of its masters a failed answer
  (a blind master, D5); a worker not probed on purpose makes them skipped.
* ``plan_answers(answers)``: plan mode's reading of those answers (a master that did not answer is placed as
  configured and named ``unprobed``).
* ``launch_work(batches, clones, clone, branch)``: worker -> the ``worker_launch`` items.
* ``launch_answers(batches, launches)``: the ``worker_launch`` results -> one answer per batch.
* ``worker_clocks(probes, controller_offset_s)``, ``clock_warnings``: each worker's clock against the board's.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..board.model import CLOCK_SKEW_WARN, skew_text
from ..outcome.capacity import credential_account

LOOP_VAR = '_dispatch_m'
_STATUS_KEYS = ('failed', 'unreachable', 'skipped')


def configured_masters(workers: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every master of the inventory's workers, in inventory order, as ``{worker, master, dark, headroom, agents,
    account}``. ``workers`` are ``{worker, masters, runner_agent, runner_agents, agent_account, agent_credentials}`` (the
    ``worker_*`` variables of each host). ``agents``: the worker's agent profiles, lower case, once each (``custom``
    when none is set); ``account``: the master's ``agent_account``, else the worker's, else the fingerprint of the
    worker's credentials with the master's on top (D8: one key on two masters is one account)."""
    out = []
    for w in workers or []:
        agents = []
        for name in [w['runner_agent'] if 'runner_agent' in w else 'custom'] + list(w.get('runner_agents') or []):
            name = str(name).lower()
            if name not in agents:
                agents.append(name)
        for m in w.get('masters') or []:
            creds = dict(w.get('agent_credentials') or {})
            creds.update(m.get('agent_credentials') or {})
            account = (m.get('agent_account') or w.get('agent_account') or
                       credential_account(dict((str(k), str(v)) for k, v in creds.items())))
            out.append({'worker': w.get('worker'), 'master': m.get('name'), 'dark': False, 'headroom': {},
                        'agents': list(agents), 'account': account})
    return out


def _worker_status(res: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The failed/unreachable/skipped keys (and msg) of one worker's whole call."""
    if res is None:
        return {'skipped': True, 'msg': 'not probed'}
    out = dict((k, True) for k in _STATUS_KEYS if res.get(k))
    if out:
        out['msg'] = res.get('msg') or ('unreachable' if res.get('unreachable') else 'failed')
    return out


def _answer(target, body) -> Dict[str, Any]:
    return dict(body, ansible_loop_var=LOOP_VAR, **{LOOP_VAR: target})


def probe_workers(masters: List[Dict[str, Any]], admitted: List[Dict[str, Any]], always: bool = False) -> Dict[str, Any]:
    """The probe play's calls: ``probe_masters`` (worker -> its master names, every configured master),
    ``probe_now`` (a candidate holds its lease, or ``always``: the sweep probes to repair duplicates, D4) and
    ``probe_hosts`` (the workers called this cycle: every worker when ``probe_now``, else none)."""
    by_worker = {}   # type: Dict[str, List[str]]
    for target in masters or []:
        by_worker.setdefault(target.get('worker'), []).append(target.get('master'))
    now = bool(admitted) or bool(always)
    return {'probe_masters': by_worker, 'probe_now': now, 'probe_hosts': sorted(by_worker) if now else []}


def probe_answers(masters: List[Dict[str, Any]], probes: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One loop-shaped answer per configured master from the per-worker probe results."""
    out = []
    for target in masters or []:
        res = (probes or {}).get(target.get('worker'))
        status = _worker_status(res)
        if status:
            out.append(_answer(target, status))
            continue
        by_name = dict((m.get('master'), m) for m in res.get('masters') or [])
        mine = by_name.get(target.get('master'))
        if mine is None:
            out.append(_answer(target, {'failed': True, 'msg': 'the worker did not answer for master %s' % target.get('master')}))
        elif mine.get('failed'):
            out.append(_answer(target, {'failed': True, 'msg': mine.get('msg') or 'failed'}))
        else:
            body = dict((k, v) for k, v in mine.items() if k not in ('master', 'failed', 'msg'))
            out.append(_answer(target, body))
    return out


def plan_answers(answers: List[Dict[str, Any]]):
    """Plan mode's reading of ``probe_answers``: ``(answers, unprobed)``. A master that answered is read as apply
    reads it (its live units, dark or not, headroom); one that did not is placed as configured (not dark, nothing
    live) and listed in ``unprobed`` ``[{worker, master, why}]``, so a preview before the fleet answers still says
    where work would go -- and says that apply gives such a master nothing until it answers (D5)."""
    out, unprobed = [], []
    for res in answers or []:
        if res.get('failed') or res.get('unreachable'):
            target = res.get(LOOP_VAR) or {}
            why = res.get('msg') or 'no answer'
            unprobed.append({'worker': target.get('worker'), 'master': target.get('master'), 'why': why})
            out.append(_answer(target, {'dark': False, 'units': [], 'headroom': {}, 'unprobed': why}))
        else:
            out.append(res)
    return out, unprobed


def launch_work(batches: List[Dict[str, Any]], clones: Dict[str, str], clone: str, branch: str,
                items: Any = None) -> Dict[str, List[Dict[str, Any]]]:
    """worker -> the items of its one ``worker_launch`` call (each with its master, clone and branch).

    ``items``: the ``board_info`` items; one whose ``pull`` names the open pull request its next run continues
    (``_core.dispatch.pr_loop``) gets that pull request's head branch instead of ``branch``: its workspace is
    detached at the head (D10), not at a fresh ``branch``."""
    heads = dict(((i.get('repo') or '', i.get('number')), (i.get('pull') or {}).get('head_ref'))
                 for i in items or [] if isinstance(i, dict) and isinstance(i.get('pull'), dict))
    work = {}
    for batch in batches or []:
        for entry in batch.get('launch') or []:
            repo = entry.get('repo') or ''
            work.setdefault(batch['worker'], []).append({
                'master': batch['master'], 'number': entry['number'], 'repo': repo,
                'clone': (clones or {}).get(repo) or clone, 'branch': heads.get((repo, entry['number'])) or branch,
                'host': batch['worker'],
                'command': list(entry.get('command') or []), 'setenv': dict(entry.get('setenv') or {}),
            })
    return work


def launch_answers(batches: List[Dict[str, Any]], launches: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One loop-shaped ``launch`` answer per batch (worker/master) from the per-worker results."""
    out = []
    for batch in batches or []:
        res = (launches or {}).get(batch.get('worker'))
        status = _worker_status(res)
        if status:
            if status.get('skipped'):
                status = {'failed': True, 'msg': 'the launch on this worker did not run'}
            out.append(_answer(batch, status))
            continue
        by_name = dict((m.get('master'), m) for m in res.get('masters') or [])
        mine = by_name.get(batch.get('master'))
        if mine is None:
            out.append(_answer(batch, {'failed': True, 'msg': 'the worker did not answer for master %s' % batch.get('master')}))
            continue
        body = dict((k, v) for k, v in mine.items() if k not in ('master', 'failed', 'msg'))
        # a master whose whole call failed still answers each run: launch_report names every one
        out.append(_answer(batch, body))
    return out


# the stamps the dispatch path takes, in order, and the phase each one ends
PHASES = (('leased', 'lease'), ('probed', 'probe'), ('placed', 'place'), ('launched', 'workspace_launch'),
          ('released', 'release'))


def phase_timings(stamps: Dict[str, Any]) -> Dict[str, Any]:
    """Seconds per phase from the epoch stamps (``start`` then PHASES); a phase with a missing stamp is None.

    ``guard_to_launch`` is lease acquired -> launch answered (the window D4's lease covers)."""
    out, prev = {}, stamps.get('start')
    for key, phase in PHASES:
        now = stamps.get(key)
        out[phase] = None if now is None or prev is None else round(float(now) - float(prev), 3)
        prev = now if now is not None else prev
    leased, launched = stamps.get('leased'), stamps.get('launched')
    out['guard_to_launch'] = None if leased is None or launched is None else round(float(launched) - float(leased), 3)
    return out


def worker_clocks(probes: Dict[str, Any], controller_offset_s: Optional[float] = None) -> Dict[str, Dict[str, Any]]:
    """worker -> ``{controller_skew_s, board_skew_s}``: its clock against the controller's (``worker_probe``'s
    ``clock_skew_s``) and against the board's, the one runs are dated by (that plus ``controller_offset_s``, the
    controller's clock ahead of the board's, ``board_info``'s ``clock_offset_s``). A figure not known is None."""
    out = {}
    for worker in sorted(probes or {}):
        res = probes[worker]
        skew = res.get('clock_skew_s') if isinstance(res, dict) else None
        if not _number(skew):
            continue
        board = round(skew + controller_offset_s, 1) if _number(controller_offset_s) else None
        out[worker] = {'controller_skew_s': skew, 'board_skew_s': board}
    return out


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def clock_warnings(probes: Dict[str, Any], limit: float = CLOCK_SKEW_WARN,
                   controller_offset_s: Optional[float] = None) -> List[str]:
    """One warning per worker whose clock differs from the board's by more than ``limit`` seconds; from the
    controller's when the board's clock is unknown (``controller_offset_s`` None). A missing figure says nothing."""
    out = []
    for worker, clocks in sorted(worker_clocks(probes, controller_offset_s).items()):
        if clocks['board_skew_s'] is not None:
            skew, against = clocks['board_skew_s'], 'the board'
        else:
            skew, against = clocks['controller_skew_s'], 'this controller'
        if abs(skew) > limit:
            out.append(skew_text('worker %s' % worker, skew, against))
    return out
