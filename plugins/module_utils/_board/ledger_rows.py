# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger board's rows -> ``Item`` objects: each table read once in one transaction, joined in Python.

A row that cannot be decoded (text that is not UTF-8, a time that does not parse) makes its item shown
but never judged (``Item.unreadable``): a lost marker could be its start.
"""

from __future__ import annotations

from . import ledger_pulls as _pulls
from . import ledger_roles as _roles
from .ledger_schema import BUDGET_FIELDS, ROUTE_FIELDS
from .._core.board.model import Artifact, Blocker, Comment, Event, Item, parse_time
from .._store.sql import Undecodable


def _bad_columns(*pairs):
    """The columns of one row whose TEXT is not UTF-8 (``_store.sql.Undecodable``)."""
    return ['%s is not UTF-8' % name for name, value in pairs if isinstance(value, Undecodable)]


def _row_time(value, bad, name):
    """A row's time, or None with the reason added to ``bad`` (the row is then reported, not fatal)."""
    try:
        return parse_time(value)
    except (TypeError, ValueError):
        bad.append('%s %r is not an ISO time' % (name, str(value)[:40]))
        return None


def load_items(tx, number, reports=True, columns=ROUTE_FIELDS + BUDGET_FIELDS, pulls=True, writers=None):
    """Fetch each table once (filtered to one item when ``number`` is given) and join in Python.

    ``writers`` (the ``marker_authors``; None on a store before version 6) turns on the comments'
    writer check: a comment a role outside the fleet wrote is read as that role's (``_board/ledger_roles.py``).
    """
    if number is None:
        where, args = '', ()
    else:
        where, args = ' WHERE item = ?', (number,)
    # the announcer's reports are not work: the queue read leaves them out (a get by number does not)
    rows = tx.all('SELECT number, title, body, status, state, repo, created_at, updated_at%s FROM items'
                  % ''.join(', ' + c for c in columns)
                  + (' WHERE number = ?' if number is not None
                     else (' WHERE number NOT IN (SELECT item FROM reports)' if reports else '')) + ' ORDER BY number', args)
    items = {}
    for row in rows:
        num, title, body, status, state, repo, created, updated = row[:8]
        route = dict(zip(columns, row[8:]))
        bad = _bad_columns(('title', title), ('body', body), ('status', status), ('state', state), ('repo', repo),
                           *sorted(route.items()))
        created_at, updated_at = _row_time(created, bad, 'created_at'), _row_time(updated, bad, 'updated_at')
        items[num] = Item(number=num, title=title, state=state, status=status, body=body, id=str(num),
                          repo=repo, created_at=created_at, updated_at=updated_at)
        if not bad:
            for key in ('agent', 'model', 'effort'):
                setattr(items[num], key, route.get(key) or '')
            items[num].priority = route.get('priority') or None
            items[num].budget = route.get('budget') or None
        if bad:
            items[num].unreadable = 'its row in items: %s' % ', '.join(bad)
    trusted = _roles.fleet_roles(tx, writers) if writers is not None else None
    for cid, item, author, body, created, writer in tx.all(
            'SELECT id, item, author, body, created_at, %s FROM comments' % ('writer' if writers is not None else "''")
            + where + ' ORDER BY created_at, id', args):
        if item in items:
            bad = _bad_columns(('author', author), ('body', body), ('writer', writer))
            author = _roles.author(author, writer, trusted) if not bad else author
            when = _row_time(created, bad, 'created_at')
            if bad:
                # one bad comment: this item is shown, never judged (a lost marker could be its start)
                items[item].unreadable = 'its comment %s: %s' % (cid, ', '.join(bad))
                continue
            items[item].comments.append(Comment(id=str(cid), body=body, created_at=when, author=author))
    for item, kind, at, actor in tx.all('SELECT item, kind, at, actor FROM events' + where + ' ORDER BY at, id', args):
        if item in items:
            bad = _bad_columns(('actor', actor))
            when = _row_time(at, bad, 'at')
            if bad:
                items[item].unreadable = 'its %s event: %s' % (kind, ', '.join(bad))
                continue
            # only a holder of the ledger's DSN writes an event: write access (a reopen counts, eligibility)
            items[item].events.append(Event(kind=kind, at=when, actor=actor, permission='WRITE'))
    # A blocker's state and repo come from its own row: one join in SQL keeps this one query
    # even when reading a single item.
    for item, blocker, state, repo in tx.all(
            'SELECT d.item, d.blocker, b.state, b.repo FROM dependencies d JOIN items b ON b.number = d.blocker'
            + where.replace('item', 'd.item') + ' ORDER BY d.item, d.blocker', args):
        if item in items:
            items[item].blockers.append(Blocker(number=blocker, state=state, repo=repo))
    closes = {}
    links = tx.all('SELECT c.artifact, c.item FROM artifact_closes c ORDER BY c.artifact, c.item')
    for artifact, item in links:
        closes.setdefault(artifact, []).append(item)
    wanted = set(a for a, i in links if number is None or i == number)
    by_id = {}
    for row in tx.all('SELECT id, ref, title, url, created_at, merged, merged_at%s FROM artifacts ORDER BY created_at, id'
                      % (', state, head_ref, head_sha' if pulls else '')):
        aid, ref, title, url, created, merged, merged_at = row[:7]
        state, head_ref, head_sha = row[7:] if pulls else ('', '', '')
        if aid not in wanted:
            continue
        for item in closes.get(aid, []):
            if item in items:
                art = Artifact(ref=ref, created_at=parse_time(created), merged=bool(merged), merged_at=parse_time(merged_at),
                               closes=list(closes[aid]), url=url, title=title,
                               state=state or ('MERGED' if merged else ''), head_ref=head_ref, head_sha=head_sha,
                               cross_repo=False if head_ref else None)
                items[item].artifacts.append(art)
                by_id.setdefault(aid, []).append(art)
    if pulls:
        _pulls.attach(tx, by_id, number)
    return [items[k] for k in sorted(items)]
