# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An item's route (agent profile, model, effort) and its priority: pure, no I/O.

An item may ask for an agent profile, a model and an effort (the board's route fields). It runs
only on a master whose worker was provisioned with that profile; an item no configured master
offers is held (``unroutable``), never launched on another agent. A worker may offer several
profiles (``offered_profiles``): the launch names the one the item was placed for
(``PROFILE_ENV``) and the runner runs that one, or refuses a profile its worker does not offer
(``run_profile``). The model and effort reach the
agent as the launch's non-secret environment, under the names its CLI reads (``ROUTE_ENV``), and the
runner gives them to the CLI as its own arguments where it takes them (``_core.outcome.profiles.route_argv``).

Candidates are ordered by priority (lower rank first; an item without one after every item with
one), then by age (oldest first), then board order. The order decides who is placed first and on
the emptiest master; it caps nothing (D13: no concurrency cap, every candidate is still placed).

The field names, the priority words and the environment: ``docs/usage.md``, "Routing and priority".
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..outcome.profiles import PROFILES as PROFILE_ARGS

PROFILES = ('claude', 'codex', 'gemini', 'qwen', 'custom')
"""The agent profiles a worker can be provisioned with (``worker_runner_agent``; ``_core.outcome.profiles``)."""

PRIORITY_WORDS = {'urgent': 0, 'critical': 0, 'highest': 0, 'high': 1, 'medium': 2, 'normal': 2, 'low': 3, 'lowest': 4}
"""Priority words and their rank (0 first); ``P<n>`` and a number are their own rank."""

_P = re.compile(r'^p(\d{1,3})$')

ROUTE_ENV = {
    'claude': {'model': 'ANTHROPIC_MODEL', 'effort': 'CLAUDE_CODE_EFFORT_LEVEL'},
    'gemini': {'model': 'GEMINI_MODEL'},
    'qwen': {'model': 'OPENAI_MODEL'},
    'codex': {},
    'custom': {},
}
"""The environment names each profile's CLI reads its model and effort from (Claude Code's
``ANTHROPIC_MODEL`` and ``CLAUDE_CODE_EFFORT_LEVEL``, Gemini CLI's ``GEMINI_MODEL``, Qwen Code's
``OPENAI_MODEL``; Codex CLI reads neither from its environment). Every run with a route also gets ``AGENT_MODEL`` and ``AGENT_EFFORT``
(``GENERIC_ENV``): the runner reads them to pass the CLI's own arguments (Codex ``-m``/``-c
model_reasoning_effort=``, Claude ``--model``, Gemini and Qwen ``-m``), and a custom agent's wrapper reads them."""

GENERIC_ENV = {'model': 'AGENT_MODEL', 'effort': 'AGENT_EFFORT'}

PROFILE_ENV = 'FLEET_AGENT_PROFILE'
"""The launch environment naming the agent profile the dispatcher placed the run for (non-secret)."""


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _text(value: Any) -> str:
    return '' if value is None else str(value).strip()


def route_of(item: Any) -> Dict[str, str]:
    """The item's route: ``{'agent', 'model', 'effort'}``, each ``''`` when not asked (the agent in
    lower case: profile names are)."""
    return {'agent': _text(_get(item, 'agent', '')).lower(), 'model': _text(_get(item, 'model', '')),
            'effort': _text(_get(item, 'effort', ''))}


def priority_rank(value: Any) -> Optional[float]:
    """The rank of a priority field value, lower first: a number is itself, ``P<n>`` is ``n``, a word of
    ``PRIORITY_WORDS`` its rank; ``None`` (no priority) for empty or anything else."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    text = str(value).strip().lower()
    if not text:
        return None
    found = _P.match(text)
    if found:
        return float(found.group(1))
    if text in PRIORITY_WORDS:
        return float(PRIORITY_WORDS[text])
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def order_key(entry: Any):
    """The sort key of one candidate (an assessed dict or an item): priority, then age, oldest first."""
    rank = _get(entry, 'priority_rank', None)
    if rank is None:
        rank = priority_rank(_get(entry, 'priority', None))
    created = _get(entry, 'created_at', None)
    created = '' if created is None else (created if isinstance(created, str) else created.isoformat())
    return (rank is None, rank if rank is not None else 0.0, created == '', created)


def ordered(cands: Iterable[Any]) -> List[Any]:
    """``cands`` by priority, then age, then their board order (a stable sort)."""
    return sorted(list(cands or []), key=order_key)


def offers(master: Dict[str, Any], agent: str) -> bool:
    """Does ``master`` serve an item asking for ``agent``? Any master serves an item that asks for no
    profile; otherwise only one whose ``agents`` (the profiles its worker was provisioned with) name it.
    A master whose profiles are not known serves no routed item (never the wrong agent)."""
    if not agent:
        return True
    return agent in [str(a).strip().lower() for a in master.get('agents') or ()]


def unroutable(item: Any, offered: Optional[Iterable[str]]) -> str:
    """Why no configured master can serve ``item``, or ``''``. ``offered``: the profiles the fleet's
    masters were provisioned with; ``None`` (not known) judges nothing here (placement still does)."""
    if offered is None:
        return ''
    agent = route_of(item)['agent']
    have = sorted(set(str(a).strip().lower() for a in offered if str(a).strip()))
    if not agent or agent in have:
        return ''
    return 'it asks for the agent profile %r, and no configured master offers it (offered: %s)' % (
        agent, ', '.join(have) or 'none')


def offered_profiles(provisioned: Any, further: Any = None) -> List[str]:
    """The profiles a worker's masters offer, each once, in lower case: its provisioned one first (an item that
    asks for none runs with it), then the ``further`` ones. ``ValueError`` for a name that is not a profile."""
    out = []
    for name in [provisioned or 'custom'] + list(further or []):
        name = str(name).strip().lower()
        if name not in PROFILES:
            raise ValueError('%r is not an agent profile (%s)' % (name, ', '.join(PROFILES)))
        if name not in out:
            out.append(name)
    return out


def run_profile(provisioned: Any, offered: Any, asked: Any) -> Tuple[str, str]:
    """The agent profile a run uses: ``(profile, '')``, or ``('', why)`` when it must not run. ``asked`` is the
    launch's ``PROFILE_ENV`` (empty: none, the ``provisioned`` profile); ``offered`` the runner config's profiles
    (None: the provisioned one only). A profile the worker does not offer is refused, never run as another."""
    mine = str(provisioned or 'custom').strip().lower()
    have = [str(a).strip().lower() for a in (offered if offered else [mine])]
    want = str(asked or '').strip().lower()
    if not want:
        return mine, ''
    if want not in have:
        return '', ('the dispatcher placed this run for the agent profile %r and this worker offers %s: it does not '
                    'run on another agent' % (want, ', '.join(have)))
    return want, ''


def route_env(route: Dict[str, str], profile: str) -> Dict[str, str]:
    """The launch environment that gives ``route``'s model and effort to an agent of ``profile``."""
    env = {}
    native = ROUTE_ENV.get(str(profile or '').lower(), {})
    for key in ('model', 'effort'):
        value = _text((route or {}).get(key))
        if not value:
            continue
        env[GENERIC_ENV[key]] = value
        if key in native:
            env[native[key]] = value
    return env


def route_gaps(route: Dict[str, str], profile: str) -> List[str]:
    """What of ``route`` the agent's own CLI will not read, from its environment nor from the arguments the
    runner gives it (``_core.outcome.profiles.AgentProfile.route_args``): only the generic name carries it."""
    name = str(profile or '').lower()
    native = set(ROUTE_ENV.get(name, {}))
    if name in PROFILE_ARGS:
        native.update(key for key, _option, _prefix in PROFILE_ARGS[name].route_args)
    return [key for key in ('model', 'effort') if _text((route or {}).get(key)) and key not in native]


__all__ = ['PROFILES', 'PRIORITY_WORDS', 'ROUTE_ENV', 'GENERIC_ENV', 'PROFILE_ENV', 'offered_profiles', 'run_profile', 'route_of',
           'priority_rank', 'order_key', 'ordered', 'offers', 'unroutable', 'route_env', 'route_gaps']
