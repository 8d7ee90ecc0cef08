# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Session chains, the pure part: the handoff file, successor names, room, who acts.

A session that closes may leave a handoff: the successor's name and its opening brief (five
fields). The agent writes it as JSON (``HANDOFF_FILE`` in its output directory); the runner
validates it here and never writes a brief of its own (D17). A chain runner on every master
decides, per waiting handoff, whether it acts (``decide``): untagged successors follow their
parent's host, ``any-<topic>`` ones go to the first runner with room (measured, D13), and a
chain deeper than the limit stops with a reason.

The rules in full, with their reasons: ``docs/chains.md``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Dict, Optional, Tuple

from ..outcome.capacity import is_dark
from ..board.naming import DISPATCH_TAG, claimed_name, dispatch_topic

HANDOFF_FILE = 'handoff.json'
"""The file the agent writes in its output directory to hand off (named in the chain brief)."""

BRIEF_FIELDS = ('asked', 'done_when', 'start_at', 'verify', 'if_landed')
"""The five fields of a successor's brief: what was asked, what counts as done, where
to start, how to verify, what to do if the work already landed. Each a non-empty string."""

MAX_FIELD = 20000
# Longest brief field accepted, in characters. UNMEASURED GUESS: it only stops a runaway file from
# landing in the ledger; the seed's briefs are a few paragraphs. Settle it: take the longest field
# written after a month of chains and keep 4x it.

DEFAULT_DEPTH_LIMIT = 12
# Hops a chain may take before the runner stops it (a stuck-chain bound, like the attempt cap).
# UNMEASURED GUESS: the seed's longest program had nine waves (nine sessions); 12 leaves room for
# three re-tries of a wave. Settle it: the deepest chain that ended in merged work, times 1.5.

DEFAULT_MAX_LOAD_PER_CPU = 1.5
# Room: 1-minute load average per CPU above which this master claims nothing. Reading: on the
# 2-core CI machine with 8 sessions sharing it the load per CPU was 2.5-10 while every test still
# passed, and idle test-bed hosts (which see the host's load) read the same; 1.5 is a guess below
# that, not a measurement of agent capacity. Settle it: the load per CPU at which a fake-agent run
# first takes twice its idle time (benchmarks/chain_latency.py prints load with each reading).

DEFAULT_MIN_MEM_AVAILABLE_KB = 1048576
# Room: MemAvailable (kB) below which this master claims nothing. Reading: one agent CLI process
# (claude -p) held 300-450 MB RSS in the corpus reports; 1 GiB is ~2.5x one run. A guess until
# measured on a real worker: peak RSS of one real run, times 2.

_TOPIC = r'[A-Za-z0-9][A-Za-z0-9._-]{0,99}'
_PLAIN_RE = re.compile(r'^(?P<topic>%s)$' % _TOPIC)
_ADDRESSED_RE = re.compile(r'^(?P<topic>%s)@(?P<host>[A-Za-z0-9][A-Za-z0-9._-]{0,62})$' % _TOPIC)


class HandoffInvalid(ValueError):
    """The handoff file does not follow the schema; the message names the field and the rule."""


def successor_kind(name: Any) -> Tuple[str, str, Optional[str]]:
    """``(kind, topic, host)`` of a successor name; ``HandoffInvalid`` for anything else.

    * ``any-<topic>`` → ``('any', topic, None)``: addressed to no machine, claimed;
    * ``<topic>@<host>`` → ``('addressed', topic, host)``: runs on the host it names;
    * ``<topic>`` → ``('follow', topic, None)``: follows its parent's host.
    """
    if not isinstance(name, str):
        raise HandoffInvalid('successor must be a string, got %r' % (name,))
    topic = dispatch_topic(name)
    if topic is not None:
        return 'any', topic, None
    if name.startswith(DISPATCH_TAG) and not _ADDRESSED_RE.match(name):
        raise HandoffInvalid('successor %r: the topic after %s must be 1-100 of letters, digits, ".", "_", "-", starting '
                             'with a letter or digit' % (name, DISPATCH_TAG))
    match = _ADDRESSED_RE.match(name)
    if match:
        return 'addressed', match.group('topic'), match.group('host')
    match = _PLAIN_RE.match(name)
    if match:
        return 'follow', match.group('topic'), None
    raise HandoffInvalid('successor %r is not any-<topic>, <topic> or <topic>@<host> (topic: 1-100 of letters, digits, '
                         '".", "_", "-", starting with a letter or digit)' % (name,))


def parse_handoff(data: Any) -> Dict[str, Any]:
    """The validated handoff ``{successor, brief: {five fields}}`` from the decoded JSON file.

    Schema: an object with exactly ``successor`` (``successor_kind``) and ``brief``, an object with
    exactly the five ``BRIEF_FIELDS``, each a non-empty string of at most ``MAX_FIELD`` characters.
    Unknown keys are refused (a typo'd field must not silently drop a part of the brief).
    """
    if not isinstance(data, dict):
        raise HandoffInvalid('the handoff must be a JSON object, got %s' % type(data).__name__)
    extra = sorted(set(data) - {'successor', 'brief'})
    if extra:
        raise HandoffInvalid('unknown handoff key(s) %s: only "successor" and "brief"' % ', '.join(extra))
    if 'successor' not in data:
        raise HandoffInvalid('the handoff has no "successor"')
    successor_kind(data['successor'])
    brief = data.get('brief')
    if not isinstance(brief, dict):
        raise HandoffInvalid('"brief" must be an object with %s' % ', '.join(BRIEF_FIELDS))
    missing = [f for f in BRIEF_FIELDS if f not in brief]
    unknown = sorted(set(brief) - set(BRIEF_FIELDS))
    if missing or unknown:
        raise HandoffInvalid('"brief" must have exactly %s; missing: %s; unknown: %s'
                             % (', '.join(BRIEF_FIELDS), ', '.join(missing) or 'none', ', '.join(unknown) or 'none'))
    for name in BRIEF_FIELDS:
        value = brief[name]
        if not isinstance(value, str) or not value.strip():
            raise HandoffInvalid('brief.%s must be a non-empty string' % name)
        if len(value) > MAX_FIELD:
            raise HandoffInvalid('brief.%s is %d characters, more than %d' % (name, len(value), MAX_FIELD))
    return {'successor': data['successor'], 'brief': dict((f, brief[f]) for f in BRIEF_FIELDS)}


def dispatch_by_default(successor: str, enabled: bool) -> str:
    """``chain_dispatch_by_default``: on a host that should not carry work, an untagged successor
    (``<topic>``) becomes ``any-<topic>``; addressed and ``any-`` names are kept."""
    kind, topic, _host = successor_kind(successor)
    if enabled and kind == 'follow':
        return DISPATCH_TAG + topic
    return successor


def successor_session_id(parent: str, successor: str) -> str:
    """The successor's session id: ``<topic>-<8 hex of sha256(parent/successor)>``, e.g. ``docs-1a2b3c4d``.

    Zero entropy (D4): a pure function of the parent and the successor name, so every runner
    that considers one handoff computes the same id, and the ledger's primary key on it lets one
    successor row through. Safe as a systemd unit name part (topic alphabet).
    """
    _kind, topic, _host = successor_kind(successor)
    digest = hashlib.sha256(('%s/%s' % (parent, successor)).encode('utf-8')).hexdigest()[:8]
    return '%s-%s' % (topic, digest)


def successor_workspace(parent: str, successor: str, host: str) -> str:
    """The successor's worktree directory: ``<host>-<topic>-<8 hex>``, e.g. ``desk-2-docs-1a2b3c4d``.

    ``claimed_name`` of its topic on the host that runs it (the directory says where the work ran)
    and the digest of ``successor_session_id`` (two chains handing off to one topic on one host get
    two worktrees). One name for every kind of successor; the claim row and the session row store it.
    """
    ident = successor_session_id(parent, successor)
    _kind, topic, _host = successor_kind(successor)
    return '%s-%s' % (claimed_name(DISPATCH_TAG + topic, host), ident.rsplit('-', 1)[1])


def session_unit(session_id: str) -> str:
    """The successor's transient unit: ``chain-<session id>`` (not ``task-*``: it is no board item's run)."""
    return 'chain-%s' % session_id


def room(capacity_state: Optional[Dict[str, Any]], headroom: Dict[str, Any], now: Any,
         max_load_per_cpu: float = DEFAULT_MAX_LOAD_PER_CPU,
         min_mem_available_kb: int = DEFAULT_MIN_MEM_AVAILABLE_KB) -> Tuple[bool, str]:
    """``(has_room, why)``: not dark (D8) and measured headroom above the thresholds (D13).

    A figure that could not be read does not refuse (D5: guards fail open); the ``why`` says so.
    """
    dark, source, _reset, why = is_dark(capacity_state, now)
    if dark:
        return False, 'dark (%s): %s' % (source, why)
    notes = []
    load, cpus = headroom.get('load1'), headroom.get('cpus') or 1
    if load is None:
        notes.append('load unread')
    else:
        per_cpu = float(load) / float(cpus)
        if per_cpu > max_load_per_cpu:
            return False, 'load per CPU %.2f above %.2f' % (per_cpu, max_load_per_cpu)
        notes.append('load per CPU %.2f' % per_cpu)
    mem = headroom.get('mem_available_kb')
    if mem is None:
        notes.append('memory unread')
    else:
        if int(mem) < int(min_mem_available_kb):
            return False, 'MemAvailable %d kB below %d kB' % (mem, min_mem_available_kb)
        notes.append('MemAvailable %d kB' % mem)
    return True, 'room: ' + ', '.join(notes)


def decide(parent: Dict[str, Any], host: str, room_verdict: Tuple[bool, str],
           depth_limit: int = DEFAULT_DEPTH_LIMIT) -> Tuple[str, str]:
    """What this runner does with the waiting handoff of ``parent`` (a session row): ``(action, why)``.

    ``action`` is ``refuse`` (the chain is deeper than ``depth_limit``: stopped, with the reason
    recorded so nobody asks again), ``skip`` (not this runner's: another host's, or no room), or
    ``claim`` (an ``any-`` successor: claim it) / ``start`` (this host's successor: no claim needed,
    the successor row's primary key still lets one master through).
    """
    successor = parent['handoff']
    kind, _topic, addressed = successor_kind(successor)
    if kind == 'follow' and parent.get('host') != host:
        return 'skip', 'follows its parent on %s' % parent.get('host')
    if kind == 'addressed' and addressed != host:
        return 'skip', 'addressed to %s' % addressed
    depth = int(parent.get('depth') or 0) + 1
    if depth > depth_limit:   # after the host rule: the chain is stopped where it would have run
        return 'refuse', 'chain depth %d is above the limit %d: the chain stops here (raise chain_depth_limit to go on)' % (
            depth, depth_limit)
    if kind == 'any':
        ok, why = room_verdict
        if not ok:
            return 'skip', 'no room: %s' % why
        return 'claim', why
    return 'start', 'successor of a session on this host' if kind == 'follow' else 'addressed to this host'


def item_chain(rows: Any, session: Any) -> Optional[Dict[str, Any]]:
    """Where the chain that went on from ``session`` (the id a ``handoff`` marker names) stands now.

    ``rows``: session rows (``_store/sessions.py`` columns). Walks from ``session`` to the newest
    hop and returns ``{session, tail, depth, host, master, state, reason, handoff, alive, stopped}``;
    ``None`` when no row has the id ``session`` (no evidence either way). ``alive``: the last hop
    runs (``open``) or closed with a handoff nobody started yet; ``stopped``: the last hop was
    ``refused`` (the depth limit), which needs a human. Anything else -- the last hop ``failed`` to
    start, or closed without a handoff and without a marker of its own -- ended the chain.
    """
    by_id = dict((r.get('id'), r) for r in rows or [] if isinstance(r, dict))
    at = by_id.get(session)
    if at is None:
        return None
    children = {}
    for row in by_id.values():
        if row.get('parent'):
            children.setdefault(row['parent'], []).append(row)
    seen = set()
    while children.get(at['id']) and at['id'] not in seen:   # one successor row per parent (its primary key)
        seen.add(at['id'])
        at = sorted(children[at['id']], key=lambda r: (str(r.get('started_at') or ''), r['id']))[0]
    state = at.get('state')
    alive = state == 'open' or (state == 'closed' and bool(at.get('handoff')))
    return {'session': session, 'tail': at['id'], 'depth': at.get('depth'), 'host': at.get('host'),
            'master': at.get('master'), 'state': state, 'reason': at.get('reason'), 'handoff': at.get('handoff'),
            'alive': alive, 'stopped': state == 'refused'}


def chain_status(rows: Any, claims: Any, now: Any) -> Dict[str, Any]:
    """What ``status`` shows of the chains: ``{chains, waiting}`` from the session rows and claim rows.

    ``chains``: one entry per first session (no parent), its hops in order, each with ``hop``
    (depth), ``id``, ``name``, ``host``, ``master``, ``state``, ``reason``, ``handoff`` and, for a
    claimed successor, ``claimed_by``/``claimed_at``. ``waiting``: closed sessions whose handoff no
    runner has started, with ``since`` (the close) and ``waited_s`` at ``now``.
    """
    from ..board.model import parse_time
    when = parse_time(now)
    rows = list(rows or [])
    claimed = dict(('%s/%s' % (c['parent'], c['successor']), c) for c in claims or [])
    children = {}
    for row in rows:
        if row.get('parent'):
            children.setdefault(row['parent'], []).append(row)
    chains = []
    for root in [r for r in rows if not r.get('parent')]:
        hops, at = [], root
        while at is not None:
            claim = claimed.get('%s/%s' % (at.get('parent'), at.get('name'))) if at.get('parent') else None
            hops.append({'hop': at.get('depth'), 'id': at['id'], 'name': at.get('name'), 'host': at.get('host'),
                         'master': at.get('master'), 'state': at.get('state'), 'reason': at.get('reason'),
                         'handoff': at.get('handoff'), 'claimed_by': claim['holder'] if claim else None,
                         'claimed_at': claim['claimed_at'] if claim else None})
            nxt = children.get(at['id']) or []
            at = nxt[0] if nxt else None
        chains.append({'root': root['id'], 'hops': hops})
    waiting = []
    for row in rows:
        if row.get('state') == 'closed' and row.get('handoff') and not children.get(row['id']):
            since = parse_time(row.get('closed_at'))
            waiting.append({'parent': row['id'], 'successor': row['handoff'], 'host': row.get('host'),
                            'since': row.get('closed_at'),
                            'waited_s': round((when - since).total_seconds(), 1) if since and when else None})
    return {'chains': chains, 'waiting': waiting}
