# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit and worktree names, and the oldest-wins repair of duplicate runs.

Pure functions, no I/O, no clock reads.

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/board/naming.py``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

PREFIX = 'task-'
_SAFE = re.compile(r'[A-Za-z0-9:_.]')
_NAME_RE = re.compile(r'^task-(?:(?P<repo>[A-Za-z0-9:_.\\-]+)-)?(?P<number>[1-9][0-9]*)$')
_MAX_UNIT = 255  # systemd: unit names are at most 255 characters including the suffix (UNIT_NAME_MAX)


MAX_ITEM = 2147483647
"""The largest item number: PostgreSQL's ``INTEGER`` (the ledger's ``items.number``) and GraphQL's
``Int`` (GitHub's ``Issue.number``) are both signed 32-bit."""
_ASCII_DIGITS = re.compile(r'^#?([0-9]+)$')


def item_number(value: Any) -> int:
    """An item number from an int or ASCII digits (``'42'``, ``'#42'``), 1..``MAX_ITEM``; else ``ValueError``.

    Only ASCII digits: Python's ``int()`` reads ``'٥'`` (Arabic-Indic five) as 5, so such a number
    would alias item 5. The upper bound is the SQL column's, checked before any statement runs, so a
    huge number is a message that names the limit rather than an overflow from the driver.
    """
    if isinstance(value, bool):
        raise ValueError('item number must be a positive integer, not %r' % (value,))
    if isinstance(value, str):
        match = _ASCII_DIGITS.match(value.strip())
        if not match:
            raise ValueError('item number must be a positive integer in ASCII digits (0-9), not %r' % (value,))
        value = int(match.group(1))
    if not isinstance(value, int) or value < 1 or value > MAX_ITEM:
        raise ValueError('item number must be a positive integer from 1 to %d (the SQL INTEGER and GitHub Int range), not %r'
                         % (MAX_ITEM, value))
    return value


_number = item_number


def _norm_repo(repo: Any) -> str:
    repo = (repo or '').strip().lower()
    if not repo:
        return ''
    owner, sep, name = repo.partition('/')
    if not sep or not owner or not name or '/' in name:
        raise ValueError('repo must be "owner/name", not %r' % (repo,))
    return repo


def systemd_escape(text: str) -> str:
    """``systemd-escape`` (non-path mode): ``/`` -> ``-``, anything outside ``[A-Za-z0-9:_.]`` -> ``\\xNN``
    per UTF-8 byte, and a leading ``.`` -> ``\\x2e``."""
    out = []
    for index, char in enumerate(text):
        if char == '/':
            out.append('-')
        elif _SAFE.match(char) and not (index == 0 and char == '.'):
            out.append(char)
        else:
            out.extend('\\x%02x' % byte for byte in char.encode('utf-8'))
    return ''.join(out)


def systemd_unescape(text: str) -> str:
    """Inverse of ``systemd_escape``. Raises ``ValueError`` on a malformed escape."""
    data = bytearray()
    index = 0
    while index < len(text):
        char = text[index]
        if char == '-':
            data.extend(b'/')
            index += 1
        elif char == '\\':
            if text[index + 1:index + 2] != 'x' or not re.match(r'^[0-9a-fA-F]{2}$', text[index + 2:index + 4]):
                raise ValueError('malformed escape in %r' % (text,))
            data.append(int(text[index + 2:index + 4], 16))
            index += 4
        else:
            data.extend(char.encode('utf-8'))
            index += 1
    return data.decode('utf-8')


def unit_name(number: Any, repo: str = '') -> str:
    """``task-42``, or ``task-<escaped repo>-42`` on a multi-repo board (D4: zero entropy).

    Raises ``ValueError`` for a number that is not a positive integer or a repo that is not
    ``owner/name``.
    """
    num = _number(number)
    norm = _norm_repo(repo)
    name = PREFIX + ('%s-' % systemd_escape(norm) if norm else '') + str(num)
    if len(name) + len('.service') > _MAX_UNIT:
        raise ValueError('unit name for %s#%d is longer than systemd allows' % (norm, num))
    return name


def item_of_unit(name: Any) -> Optional[Dict[str, Any]]:
    """``{'number': 42, 'repo': ''}`` for a name ``unit_name`` produces (``.service`` suffix allowed).

    Anything else is ``None``: other units, template instances (``fleet-notify@task-42.service``),
    non-canonical spellings (``task-042``), and names carrying entropy (``task-42-1700000000-ab12``).
    The round trip ``unit_name(**item_of_unit(n)) == n`` holds for every accepted name.
    """
    if not isinstance(name, str):
        return None
    base = name[:-len('.service')] if name.endswith('.service') else name
    match = _NAME_RE.match(base)
    if not match:
        return None
    repo = ''
    if match.group('repo') is not None:
        try:
            repo = systemd_unescape(match.group('repo'))
            _norm_repo(repo)
        except (ValueError, UnicodeDecodeError):
            return None
    number = int(match.group('number'))
    try:
        if unit_name(number, repo) != base:
            return None
    except ValueError:
        return None
    return {'number': number, 'repo': repo}


def _host_part(host: Any) -> str:
    text = str(host or '').strip().lower()
    if not text:
        raise ValueError('worktree_name needs a host')
    return re.sub(r'[^a-z0-9._-]', '_', text)


def worktree_name(number: Any, host: Any, repo: str = '') -> str:
    """The per-run workspace directory name: ``task-42@w1``.

    Derived from the unit name (so one live run per item per worker maps to one workspace) plus
    the host, so workspaces stay distinct if the workspace root is ever shared between workers.
    The unit name's ``\\`` escapes become ``%`` (``%`` itself never survives systemd escaping, so
    the mapping stays one-to-one) to keep the path free of backslashes.
    """
    return unit_name(number, repo).replace('\\', '%') + '@' + _host_part(host)


def _get(unit: Any, key: str) -> Any:
    if isinstance(unit, dict):
        return unit.get(key)
    return getattr(unit, key, None)


def _start(unit: Any, key: str) -> Optional[int]:
    value = _get(unit, key)
    if isinstance(value, bool):
        return None
    try:
        value = int(value)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _tiebreak(unit: Any) -> Tuple[str, ...]:
    return tuple(str(_get(unit, key) or '') for key in ('host', 'master', 'name', 'invocation_id'))


def start_key(units: List[Any]) -> str:
    """Which start stamp orders ``units``: ``start_us`` (monotonic) unless they span hosts.

    ``CLOCK_MONOTONIC`` counts from each machine's boot, so monotonic stamps order units on ONE
    worker only. When the units name more than one ``host`` and every one carries
    ``start_wall_us`` (wall-clock µs, as ``_host.systemd.unit_record`` reports), that is used instead;
    NTP skew between workers (milliseconds) is far below the measured gap between duplicate
    launches (5-11 s). Units that span hosts without wall stamps fall back to ``start_us``:
    still deterministic, but then "oldest" is only as good as the boot times line up.
    """
    hosts = set(str(_get(u, 'host') or '') for u in units)
    if len(hosts) > 1 and all(_start(u, 'start_wall_us') is not None for u in units):
        return 'start_wall_us'
    return 'start_us'


def oldest_wins(units: List[Any], key: Optional[str] = None) -> Tuple[Optional[Any], List[Any]]:
    """Repair coexisting duplicates of one item: keep the oldest live unit, stop the others (D4).

    Order: start stamp ascending (``key``, default ``start_key(units)``: monotonic ``start_us``
    on one worker, wall-clock ``start_wall_us`` across workers) -- the oldest has done the most
    work. A unit without a usable stamp (missing, 0, unparseable) sorts after every unit with
    one, because stopping a unit of known age to keep one of unknown age is a guess. Ties -- and
    only ties -- fall back to ``(host, master, name, invocation_id)`` as text, so the answer never
    depends on input order. Returns ``(keep, stop)``; ``(None, [])`` for no units.
    """
    units = list(units or [])
    if not units:
        return None, []
    field_name = key or start_key(units)

    def order(unit):
        start = _start(unit, field_name)
        return (start is None, start or 0) + _tiebreak(unit)
    ordered = sorted(units, key=order)
    return ordered[0], ordered[1:]


# --------------------------------------------------------------------------------------------
# dispatched successors (``any-<topic>``) and the winner's workspace name

DISPATCH_TAG = 'any-'
"""The tag that addresses a successor to no machine ("a successor named any-<topic> is
addressed to no machine. Every runner on the fleet is eligible")."""

_TOPIC_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$')


def dispatch_topic(name: Any) -> Optional[str]:
    """The ``<topic>`` of a dispatched successor name ``any-<topic>``; ``None`` for any other name.

    The tag is literal and lower-case (``ANY-x`` is not a dispatch). The topic is 1-100 characters
    of ``[A-Za-z0-9._-]`` starting with a letter or digit, so it is safe as part of a directory
    name. No normalisation: every runner reads the same successor text from the ledger, and the
    claim id is built from that text verbatim (two spellings are two successors, not one).
    """
    if not isinstance(name, str) or not name.startswith(DISPATCH_TAG):
        return None
    topic = name[len(DISPATCH_TAG):]
    return topic if _TOPIC_RE.match(topic) else None


def is_dispatch_name(name: Any) -> bool:
    """``is_dispatch_name('any-foo')`` is true: the successor belongs to no machine and must be claimed."""
    return dispatch_topic(name) is not None


def claimed_name(successor: Any, host: Any) -> str:
    """The winner's name for a dispatched successor: the ``any-`` tag dropped, the host's name taken.

    ``claimed_name('any-docs', 'desk-2')`` is ``desk-2-docs``. "the winner's worktree drops
    the any- tag and takes its own host's name, so the directory tells you where the work actually
    ran." Zero entropy: the same successor and host always give the same name. The host part is
    ``worktree_name``'s (lower-cased, anything outside ``[a-z0-9._-]`` becomes ``_``).
    Raises ``ValueError`` for a name that is not ``any-<topic>`` or an empty host.
    """
    topic = dispatch_topic(successor)
    if topic is None:
        raise ValueError('%r is not a dispatched successor name (any-<topic>)' % (successor,))
    return '%s-%s' % (_host_part(host), topic)


# --- a namespace per board --------------------------------------------------------------

def board_id(kind: str, label: str, identity: str) -> str:
    """The board's short stable id: ``<kind>-<label>-<8 hex of sha256(identity)>``, e.g. ``pg-fleet-1a2b3c4d``.

    ``identity`` is the board's canonical address without secrets (``_board.factory.board_identity``);
    ``label`` only makes the id readable (a file stem, a database name, an owner and project). The
    dispatcher's lease names and its state files carry it, so two boards on one controller never
    share a lock or a file. Zero entropy, like the unit name: the same board always gives the same id.
    """
    import hashlib
    tail = hashlib.sha256(str(identity).encode('utf-8')).hexdigest()[:8]
    part = re.sub(r'[^a-z0-9]+', '-', str(label or '').lower()).strip('-')[:40]
    return '-'.join(p for p in (re.sub(r'[^a-z0-9]+', '', str(kind).lower()) or 'board', part, tail) if p)


def lease_name(unit: str, board: str = '') -> str:
    """The lease of a run: its unit name, in the board's namespace (``task-42@pg-fleet-1a2b3c4d``)."""
    return '%s@%s' % (unit, board) if board else unit
