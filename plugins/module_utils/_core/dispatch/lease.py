# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease rule, pure (D4's third layer; D5 fail-open): owner, fencing token, expiry, heartbeat, takeover.

A lease is a record ``{owner, token, acquired_at, expires_at, released_at}`` (times as
``format_time`` text). ``decide_acquire``/``decide_release`` take the stored record and ``now`` and
return the record to write and the answer; ``_store/lease.py`` reads and writes it inside one
transaction of the SQL store. The rules in full: ``docs/internals.md``, section ``_store/lease.py``.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple

from ..board.model import format_time, parse_time


class LeaseError(ValueError):
    """A caller error (empty name, empty owner, non-positive ttl). Never raised for a store
    failure: those fail open and come back as a degraded ``Lease``."""


@dataclass
class Lease:
    """The answer of every store operation.

    ``acquired``: the caller holds the lease now (or the store failed and ``degraded`` is true:
    proceed, and say so). ``owner``: the caller's owner token. ``holder``: who holds the lease now
    (the caller when acquired; the other owner when refused; ``''`` when free). ``token``: the
    fencing token of the lease the caller holds or just released (``None`` when refused or
    degraded). ``expires_at``: ISO-8601 UTC expiry of the holder's lease (``None`` when free).
    ``released``: a release removed the caller's lease. ``why``: one sentence for a human.
    """

    name: str
    acquired: bool
    owner: str
    holder: str
    token: Optional[int]
    expires_at: Optional[str]
    backend: str
    degraded: bool
    why: str
    released: bool = False
    store: str = ''

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def check_request(name: Any, owner: Any = 'x', ttl: Any = 1) -> None:
    """Reject caller errors loudly (they are bugs in the playbook, not store failures)."""
    if not isinstance(name, str) or not name.strip():
        raise LeaseError('a lease name must be a non-empty string, got %r' % (name,))
    if not isinstance(owner, str) or not owner.strip():
        raise LeaseError('an owner token must be a non-empty string, got %r' % (owner,))
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise LeaseError('ttl must be a positive number of seconds, got %r' % (ttl,))


def _live(record: Optional[Dict[str, Any]], now: _dt.datetime) -> bool:
    """A record is a live lease when it has an owner and its expiry is still in the future."""
    if not record or not record.get('owner'):
        return False
    expires = parse_time(record.get('expires_at'))
    return expires is not None and expires > now


def decide_acquire(record: Optional[Dict[str, Any]], name: str, owner: str, ttl: float,
                   now: _dt.datetime, backend: str = 'sqlite') -> Tuple[Optional[Dict[str, Any]], Lease]:
    """The acquisition rule, pure: ``record`` is the stored lease (or ``None``).

    Returns ``(new_record, lease)``; ``new_record`` is ``None`` when nothing must be written
    (a refusal). Same owner and live -> same token, expiry extended. Free, released or expired
    -> token + 1 (per name, so strictly larger than the lease taken over). Live and held by
    someone else -> refused with the holder.
    """
    expires = now + _dt.timedelta(seconds=ttl)
    prev_token = 0
    if record and isinstance(record.get('token'), int) and not isinstance(record.get('token'), bool):
        prev_token = record['token']
    if _live(record, now):
        holder = record['owner']
        if holder == owner:
            new = dict(record, expires_at=format_time(expires))
            return new, Lease(name, True, owner, owner, prev_token, new['expires_at'], backend, False,
                              'already held by this owner (token %d); expiry extended to %s' % (prev_token, new['expires_at']))
        return None, Lease(name, False, owner, holder, None, record.get('expires_at'), backend, False,
                           'held by %s (token %s) until %s' % (holder, record.get('token'), record.get('expires_at')))
    token = prev_token + 1
    new = {'name': name, 'owner': owner, 'token': token,
           'acquired_at': format_time(now), 'expires_at': format_time(expires)}
    if not record:
        why = 'acquired a new lease (token %d)' % token
    elif not record.get('owner'):
        why = 'acquired after release (token %d)' % token
    else:
        why = 'took over the expired lease of %s (token %s, expired %s); new token %d' % (
            record.get('owner'), record.get('token'), record.get('expires_at'), token)
    return new, Lease(name, True, owner, owner, token, new['expires_at'], backend, False, why)


def decide_release(record: Optional[Dict[str, Any]], name: str, owner: str,
                   now: _dt.datetime, backend: str = 'sqlite') -> Tuple[Optional[Dict[str, Any]], Lease]:
    """The release rule, pure. Only the owner releases; the record keeps its token (so the next
    acquisition of this name still gets a larger one) and loses its owner. Anyone else's release
    is a no-op that names the holder -- it must never free a lease it does not hold."""
    if record and record.get('owner') == owner:
        new = dict(record, owner='', expires_at=None, released_at=format_time(now))
        was_live = _live(record, now)
        why = 'released (token %s)' % record.get('token') if was_live else \
            'released; it had already expired at %s (token %s)' % (record.get('expires_at'), record.get('token'))
        return new, Lease(name, False, owner, '', record.get('token'), None, backend, False, why, released=True)
    if _live(record, now):
        return None, Lease(name, False, owner, record['owner'], None, record.get('expires_at'), backend, False,
                           'not released: held by %s (token %s) until %s; a release by a non-owner is a no-op'
                           % (record['owner'], record.get('token'), record.get('expires_at')))
    return None, Lease(name, False, owner, '', None, None, backend, False,
                       'not released: this owner holds no lease on %s (it is free); nothing to do' % name)


def decide_renew(record: Optional[Dict[str, Any]], name: str, owner: str, token: int, heartbeat: float,
                 until: Any, now: _dt.datetime, backend: str = 'sqlite') -> Tuple[Optional[Dict[str, Any]], Lease]:
    """The heartbeat rule, pure: a live lease held by ``owner`` with fencing ``token`` is extended to
    ``now + heartbeat``, never past ``until`` (the hold's cap: its acquisition plus the ttl). Anything
    else -- released, taken over (another token), expired, or at its cap -- is not renewed, and the
    answer says why: a renewal never takes a lease, it only keeps one."""
    cap = parse_time(until)
    if not (_live(record, now) and record.get('owner') == owner and record.get('token') == token):
        if _live(record, now):
            why = 'not renewed: held by %s (token %s) until %s' % (record['owner'], record.get('token'), record.get('expires_at'))
            return None, Lease(name, False, owner, record['owner'], None, record.get('expires_at'), backend, False, why)
        return None, Lease(name, False, owner, '', None, None, backend, False,
                           'not renewed: token %s of %s is released or expired' % (token, owner))
    expires = now + _dt.timedelta(seconds=heartbeat)
    if cap is not None and expires > cap:
        expires = cap
    if expires <= now:
        return None, Lease(name, False, owner, owner, token, record.get('expires_at'), backend, False,
                           'not renewed: the hold reached its ttl at %s' % format_time(cap))
    new = dict(record, expires_at=format_time(expires))
    return new, Lease(name, True, owner, owner, token, new['expires_at'], backend, False,
                      'renewed (token %d) until %s' % (token, new['expires_at']))


def fence(record: Optional[Dict[str, Any]], name: str, owner: str, token: int, now: _dt.datetime) -> str:
    """The fencing check just before a launch: '' when ``owner`` still holds ``name`` under ``token`` and it is live;
    else why not (another owner took it over under a larger token, or it expired or was released). A holder that
    stalled past its lease (a suspended controller) is refused here instead of launching on a stale probe (D4). No
    record at all is no evidence against it (a store that lost its rows): it proceeds, as a guard fails open (D5)."""
    if record is None or (record.get('owner') == owner and record.get('token') == token and _live(record, now)):
        return ''
    if record and record.get('token') != token:
        return ('its lease was taken over before the launch (token %s, this dispatcher held %s; holder %s)'
                % (record.get('token'), token, record.get('owner') or 'none now, released'))
    return 'its lease (token %s) expired or was released before the launch' % token


def describe(record: Optional[Dict[str, Any]], name: str, now: _dt.datetime, backend: str = 'sqlite') -> Lease:
    """The current state of a lease as a ``Lease`` with ``acquired: false``."""
    if _live(record, now):
        return Lease(name, False, '', record['owner'], record.get('token'), record.get('expires_at'), backend, False,
                     'held by %s (token %s) until %s' % (record['owner'], record.get('token'), record.get('expires_at')))
    return Lease(name, False, '', '', None, None, backend, False, 'free')


def degraded(name: str, owner: str, backend: str, failure: str, fix: str, store: str = '',
             acquire: bool = True) -> Lease:
    """Fail OPEN (D4's table, D5): the store could not be used, so the caller proceeds *without*
    the lock -- and the ``why`` says which failure and which fix, for the stderr warning."""
    if acquire:
        why = ('lease store unusable (%s): proceeding WITHOUT the lock on %s, so a second dispatcher is '
               'not excluded (fail open); fix: %s' % (failure, name, fix))
    else:
        why = 'lease store unusable (%s): could not release %s; it expires by itself; fix: %s' % (failure, name, fix)
    return Lease(name, acquire, owner, owner if acquire else '', None, None, backend, True, why, store=store)
