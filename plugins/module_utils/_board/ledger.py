# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger board: the ``Board`` protocol over SQL (SQLite file, or PostgreSQL).

The embedded default board (demo, single controller) and the shared board of a fleet with
several dispatchers; the same code and the same statements on both (``_store.sql``). Its schema is in
``ledger_schema.py``, the reading of its rows into items in ``ledger_rows.py``.

The rules in full, with their reasons: ``docs/internals.md``, section ``_board/ledger.py``.
"""

from __future__ import annotations

import datetime as _dt

from .protocol import Board, BoardError, BoardRead, BoardUnreadable, ItemNotFound
from .._core.dispatch.announce import REPORT_STATUS, SILENCED_STATUS
from .._core.board.model import Comment, format_time, parse_time
from .._core.board.naming import item_number
from .._core.dispatch.item_budget import parse_override
from . import ledger_pulls as _pulls
from . import ledger_roles as _roles
from .ledger_rows import load_items
from .ledger_schema import (BUDGET_FIELDS, BUDGET_VERSION, COMPONENT, MIGRATIONS, REPORT_COMPONENT, REPORT_MIGRATIONS,
                            ROUTE_FIELDS, ROUTE_VERSION)
from .._store.sql import DEFAULT_TIMEOUT, SqlError, SqlStore, SqlUnavailable

LEDGER_AUTHOR = 'fleet.dispatch'
"""The author a comment records when its writer names none (``board_marker``, the runner): a
ledger comment's author is never empty. Only comments by it or a ``board.marker_authors`` login
are markers; a glyph-led comment recorded under any other name is a human comment."""

STATES = ('open', 'closed')
_STATE_ALIASES = {'open': 'open', 'opened': 'open', 'reopened': 'open', 'closed': 'closed'}
_ITEM_FIELDS = ('number', 'title', 'body', 'status', 'state', 'repo')
_SPEC_KEYS = ('path', 'dsn', 'clock', 'timeout', 'create', 'migrations', 'marker_authors', 'trust_members')


def _utcnow():
    return _dt.datetime.now(_dt.timezone.utc)


def _state(value):
    found = _STATE_ALIASES.get(str(value).lower()) if value is not None else None
    if found is None:
        raise BoardError('item state must be one of open, closed, reopened; got %r' % (value,))
    return found


def _number(value, what='item number'):
    """A positive item number from an int or ASCII digits (``'42'``, ``'#42'``), within ``MAX_ITEM``."""
    try:
        return item_number(value)
    except ValueError as exc:
        raise BoardError(str(exc).replace('item number', what, 1))


class LedgerBoard(Board):
    """The ledger board over a SQLite file (``path``) or PostgreSQL (``dsn``).

    ``create`` lets a missing SQLite file be created (default: missing is unreadable -- D20);
    ``clock`` is a callable returning an aware UTC datetime (tests inject one); ``timeout``
    bounds lock waits and connecting; ``migrations`` replaces ``MIGRATIONS`` (tests of
    forward migration only). Opening applies pending migrations.
    """

    kind = 'ledger'

    def __init__(self, path=None, dsn=None, clock=None, timeout=DEFAULT_TIMEOUT, create=False, migrations=None,
                 marker_authors=None, trust_members=False):
        self._clock = clock or _utcnow
        self.marker_authors = [LEDGER_AUTHOR] + [str(a) for a in marker_authors or () if str(a).strip()]
        # a review note's MEMBER standing is trusted only when the operator says so (_core.board.mentions)
        self.trust_members = trust_members is True
        self._migrations = list(MIGRATIONS if migrations is None else migrations)
        # a store migrated only part of the way (tests of forward migration) has no route columns
        self._routes = any(m[0] == ROUTE_VERSION for m in self._migrations)
        self._pull_columns = any(m[0] == _pulls.PULLS_VERSION for m in self._migrations)
        self._budgets = any(m[0] == BUDGET_VERSION for m in self._migrations)
        # the item columns after the first version's: the route and priority, the item budget
        self._columns = (ROUTE_FIELDS if self._routes else ()) + (BUDGET_FIELDS if self._budgets else ())
        self._writers = any(m[0] == _roles.ROLES_VERSION for m in self._migrations)
        try:
            self._store = SqlStore(path=path, dsn=dsn, timeout=timeout, create=create)
        except SqlError as exc:
            raise BoardUnreadable(str(exc))
        self.location = self._store.location
        self.backend = self._store.dialect.name
        # PostgreSQL stamps writes with the database server's clock: every writer (a controller,
        # runners on several workers) then records times on one clock, so a worker whose clock
        # lags cannot date its start marker before a merge that followed it (D16). SQLite is one
        # machine's file: its writers share that machine's clock. An injected clock (tests) wins.
        self._db_clock = clock is None and self.backend == 'postgres'
        try:
            self.migrated = self._store.migrate(COMPONENT, self._migrations, format_time(self._now()))
            self._reports, self.migrated_reports = migrations is None, []
            if self._reports:
                self.migrated_reports = self._store.migrate(REPORT_COMPONENT, REPORT_MIGRATIONS, format_time(self._now()))
        except SqlError as exc:
            self._store.close()
            raise BoardUnreadable('cannot prepare the ledger schema: %s' % exc)

    @classmethod
    def from_spec(cls, spec):
        """Build from an ``open_board`` spec.

        Only the ledger's keys (``_SPEC_KEYS``) are used; the rest (``kind``, and the GitHub
        options a module's argument spec fills with defaults: ``owner_type``, ``ready``,
        ``api_url``...) are ignored -- the module's argument spec already rejects unknown names.
        """
        return cls(**dict((k, v) for k, v in spec.items() if k in _SPEC_KEYS))

    # -- plumbing ---------------------------------------------------------------------------
    def _now(self, tx=None):
        """The time of a write: the database's clock inside ``tx`` on PostgreSQL, else the clock."""
        if tx is not None and self._db_clock:
            now = tx.one('SELECT clock_timestamp()')[0]
            if isinstance(now, _dt.datetime) and now.tzinfo is not None:
                return now.astimezone(_dt.timezone.utc)
        now = self._clock()
        if not isinstance(now, _dt.datetime) or now.tzinfo is None:
            raise BoardError('the ledger clock must return an aware datetime, got %r' % (now,))
        return now.astimezone(_dt.timezone.utc)

    def board_time(self):
        """The clock the ledger stamps its writes with: the database's on PostgreSQL, else the writer's."""
        return self._tx(self._now, unreadable=True) if self._db_clock else self._now()

    @staticmethod
    def _fixed(at):
        """A time passed in (``at=``), validated before any transaction; ``None`` means "the clock"."""
        try:
            return parse_time(at)
        except (TypeError, ValueError) as exc:
            raise BoardError('not a time: %r (%s); give ISO-8601 such as 2026-03-01T09:00:00Z' % (at, exc))

    def _stamp(self, fixed, tx=None):
        """The time of a write: the one passed in, or the clock read now.

        Called inside the write transaction, after the row lock is held, so the times of the
        writes to one item follow the order in which they committed (a time read before
        waiting for the lock once put a ``reopened`` event before the ``closed`` it followed).
        """
        return format_time(fixed if fixed is not None else self._now(tx))

    def _tx(self, body, write=False, dry_run=False, unreadable=False):
        try:
            return self._store.transaction(body, write=write, dry_run=dry_run)
        except BoardError:
            raise
        except SqlUnavailable as exc:
            raise BoardUnreadable(str(exc))
        except SqlError as exc:
            if unreadable:
                raise BoardUnreadable(str(exc))
            raise BoardError(str(exc))
        except ValueError as exc:
            if not unreadable:
                raise
            # A row the model cannot hold (a time that does not parse): the queue is not readable
            # as a whole, and guessing around the row could misread eligibility.
            raise BoardUnreadable('the ledger at %s holds a value that does not parse (%s): repair the row by hand'
                                  % (self.location, exc))

    def close(self):
        self._store.close()

    def schema_version(self):
        """The highest board schema version recorded in the store."""
        try:
            versions = self._store.schema_versions(COMPONENT)
        except SqlError as exc:
            raise BoardUnreadable(str(exc))
        return max(versions) if versions else 0

    @staticmethod
    def _require(tx, number):
        row = tx.one('SELECT number, title, body, status, state, repo FROM items WHERE number = ?' + tx.dialect.for_update,
                     (number,))
        if row is None:
            raise ItemNotFound('the ledger has no item #%d: create it first (fleet.dispatch.board_item)' % number)
        return row

    # -- reads ------------------------------------------------------------------------------
    def read(self, *, now=None):
        """Every item, fully populated, from one snapshot; ``cost`` is ``None`` (nothing metered).

        ``now`` is accepted for the protocol and unused: the ledger has no time-dependent read.
        """
        items = self._tx(lambda tx: load_items(tx, None, self._reports, self._columns, self._pull_columns, self._writer_check()),
                         unreadable=True)
        for item in items:
            item.marker_authors = list(self.marker_authors)
            item.trust_members = self.trust_members
        self._attach_sessions(items, None)
        return BoardRead(items=items, cost=None)

    def _attach_sessions(self, items, number):
        """The session rows of each item (``Item.sessions``), when this store also holds the
        sessions (``_store/sessions.py``); a ``handoff`` marker's hold reads them (_core/dispatch/eligibility.py).
        A store without the table leaves ``sessions`` None (not known). Read after the items: the
        runner records a session's close before it posts the handoff marker, so a marker read here
        always has its row."""
        from .._store.sessions import COLUMNS as SESSION_COLUMNS   # the sessions' own reader stays there

        def body(tx):
            if not self._store._has_table(tx, 'sessions'):
                return None
            return tx.all('SELECT %s FROM sessions WHERE item IS NOT NULL%s ORDER BY started_at, id'
                          % (', '.join(SESSION_COLUMNS), ' AND item = ?' if number is not None else ''),
                          (number,) if number is not None else ())
        rows = self._tx(body, unreadable=True)
        if rows is None:
            return
        by_item = {}
        for row in rows:
            data = dict(zip(SESSION_COLUMNS, row))
            data.pop('brief', None)   # the successor's brief is not the item's business here
            by_item.setdefault(data['item'], []).append(data)
        for item in items:
            item.sessions = by_item.get(item.number, [])

    def get(self, number):
        number = _number(number)
        items = self._tx(lambda tx: load_items(tx, number, columns=self._columns, pulls=self._pull_columns,
                                               writers=self._writer_check()), unreadable=True)
        if not items:
            raise ItemNotFound('the ledger has no item #%d: create it first (fleet.dispatch.board_item)' % number)
        items[0].marker_authors = list(self.marker_authors)
        items[0].trust_members = self.trust_members
        self._attach_sessions(items, number)
        return items[0]

    def _writer_check(self):
        """What ``load_items`` reads comments' writers with: the ``marker_authors``, or None before version 6."""
        return list(self.marker_authors) if self._writers else None

    def reports(self):
        """The announcer's report items (D14): ``{number, title, state, status, silenced, created_at,
        updated_at}``, read live from the store (never a cache or an index). A report is silenced
        when a human closed it with the status ``Silenced``."""
        def body(tx):
            return tx.all('SELECT i.number, i.title, i.state, i.status, i.created_at, i.updated_at FROM items i '
                          'JOIN reports r ON r.item = i.number ORDER BY i.number')
        rows = self._tx(body, unreadable=True)
        return [{'number': num, 'title': title, 'state': state, 'status': status,
                 'silenced': state == 'closed' and status == SILENCED_STATUS, 'created_at': created,
                 'updated_at': updated, 'url': ''} for num, title, state, status, created, updated in rows]

    def create_report(self, title, body, *, at=None, dry_run=False):
        """File one report item, unless an open report with this exact title exists (idempotent by
        title, checked inside the write transaction, under the lock that mints item numbers, so two
        dispatchers cannot both file it). Returns ``{'number', 'created'}``."""
        if not title:
            raise BoardError('a report needs a title')
        fixed = self._fixed(at)

        def write(tx):
            tx.lock('items.number')
            row = tx.one("SELECT i.number FROM items i JOIN reports r ON r.item = i.number "
                         "WHERE i.title = ? AND i.state = 'open' ORDER BY i.number", (title,))
            if row is not None:
                return {'number': row[0], 'created': False}
            num = tx.one('SELECT COALESCE(MAX(number), 0) + 1 FROM items')[0]
            when = self._stamp(fixed, tx)
            tx.run('INSERT INTO items (number, title, body, status, state, repo, created_at, updated_at) '
                   'VALUES (?, ?, ?, ?, ?, ?, ?, ?)', (num, title, body or '', REPORT_STATUS, 'open', '', when, when))
            tx.run('INSERT INTO reports (item, created_at) VALUES (?, ?)', (num, when))
            return {'number': num, 'created': True}
        return self._tx(write, write=True, dry_run=dry_run)

    def mentions(self, number):
        """The ledger has no mention notifications (D19 is a forge feature): always ``[]``."""
        return []

    def mark_read(self, ids):
        return None

    # -- writes -----------------------------------------------------------------------------
    def comment(self, number, body, *, author='', at=None):
        """Add a comment (human text or a marker) at ``at`` (default: the clock, read once).

        ``author`` is recorded, ``LEDGER_AUTHOR`` when none is named: a glyph-led comment is a
        marker only when that author is one of the ledger's ``marker_authors``.
        """
        number = _number(number)
        if body is None or str(body) == '':
            raise BoardError('a comment needs a body')
        fixed = self._fixed(at)
        author = str(author or '').strip() or LEDGER_AUTHOR

        def write(tx):
            self._require(tx, number)
            write.when = when = self._stamp(fixed, tx)
            cid = tx.insert('INSERT INTO comments (item, author, body, created_at) VALUES (?, ?, ?, ?)',
                            (number, author, str(body), when))
            tx.run('UPDATE items SET updated_at = ? WHERE number = ? AND updated_at < ?', (when, number, when))
            return cid
        cid = self._tx(write, write=True)
        return Comment(id=str(cid), body=str(body), created_at=parse_time(write.when), author=author)

    @staticmethod
    def _set_state(tx, number, state, when, actor):
        """Change the state and record the event; returns whether it changed. The caller holds the row."""
        changed = tx.run('UPDATE items SET state = ?, updated_at = ? WHERE number = ? AND state <> ?',
                         (state, when, number, state))
        if changed:
            tx.run('INSERT INTO events (item, kind, at, actor) VALUES (?, ?, ?, ?)',
                   (number, 'closed' if state == 'closed' else 'reopened', when, actor or ''))
        return bool(changed)

    def set_state(self, number, state, *, at=None, actor=''):
        """Open or close an item. A change records a ``closed``/``reopened`` event with its time
        (a reopen is an explicit event the decision core ranks against markers). Setting
        the state it already has changes nothing and records nothing.
        """
        number = _number(number)
        state = _state(state)
        fixed = self._fixed(at)

        def write(tx):
            self._require(tx, number)
            return self._set_state(tx, number, state, self._stamp(fixed, tx), actor)
        return self._tx(write, write=True)

    def _not_a_report(self, tx, number, status):
        """Refuse a work status on a report of the announcer. Reports share the number sequence with work (as
        issues do on GitHub); a work status on one would turn the announcer's report into work the sweep runs."""
        if status is not None and status not in (REPORT_STATUS, SILENCED_STATUS) and self._reports \
                and tx.one('SELECT 1 FROM reports WHERE item = ?', (number,)) is not None:
            raise BoardError('#%d is a report of the announcer, not a work item: its status is %s or %s '
                             '(silenced); create work without a number, or with a free one'
                             % (number, REPORT_STATUS, SILENCED_STATUS))

    def set_status(self, number, status, *, at=None):
        """Set the status field; returns whether it changed."""
        number = _number(number)
        fixed = self._fixed(at)

        def write(tx):
            self._require(tx, number)
            self._not_a_report(tx, number, status)
            return bool(tx.run('UPDATE items SET status = ?, updated_at = ? WHERE number = ? AND status <> ?',
                               (status or '', self._stamp(fixed, tx), number, status or '')))
        return self._tx(write, write=True)

    def post_marker(self, number, body, *, close=False, author='', at=None):
        """Post a marker, then close if asked -- two commits, in that order (🔴 D12).

        The comment is committed on its own before the close is attempted, so neither a close
        that finds the item already closed (the merged artifact's close got there first) nor a
        close that fails can drop it. Each write takes its own time (``at`` if given, else the
        clock inside its transaction), so the close is never before the comment. Returns ``{'comment', 'closed', 'state'}`` as
        ``Board.post_marker`` documents.
        """
        fixed = self._fixed(at)
        posted = self.comment(number, body, author=author, at=fixed)
        result = {'comment': posted, 'closed': False, 'state': None}
        if close:
            result['closed'] = self.set_state(number, 'closed', at=fixed, actor=author)
            result['state'] = 'closed'
        return result

    def upsert_item(self, number=None, title=None, body=None, status=None, state=None, blocked_by=None,
                    repo=None, *, at=None, actor='', dry_run=False, agent=None, model=None, effort=None, priority=None,
                    budget=None):
        """Create or update one item; ``None`` leaves a field as it is.

        ``agent``, ``model``, ``effort`` and ``priority`` are the item's route and priority
        (``_core.dispatch.route``), text, ``''`` clears one; ``budget`` the item's own budget
        (``_core.dispatch.item_budget.parse_override``: a value that is not a budget is refused).

        ``number=None`` creates a new item with the next free number. ``state`` takes ``open``,
        ``closed`` or ``reopened`` (an alias of open: a closed item that opens records a
        ``reopened`` event). ``blocked_by`` replaces the item's blocker edges with exactly this
        list (``[]`` removes them all); each blocker must exist.

        ``dry_run`` runs the very same transaction and rolls it back (check mode). Returns
        ``{'number', 'created', 'changed', 'before', 'after'}``; ``before``/``after`` are
        plain dicts of the fields and ``blocked_by`` (``before`` is ``None`` on create), ready
        for ``--diff``.
        """
        if number is not None:
            number = _number(number)
        if state is not None:
            state = _state(state)
        blockers = None
        if blocked_by is not None:
            blockers = sorted(set(_number(b, 'blocker number') for b in blocked_by))
            if number is not None and number in blockers:
                raise BoardError('item #%d cannot block itself' % number)
        fixed = self._fixed(at)
        route = dict((k, '' if v is None else str(v).strip()) for k, v in
                     (('agent', agent), ('model', model), ('effort', effort), ('priority', priority)) if v is not None)
        if route and not self._routes:
            raise BoardError('this ledger has no route columns (board schema version %d): open it with this '
                             'collection\'s migrations' % ROUTE_VERSION)
        if budget is not None:
            if not self._budgets:
                raise BoardError('this ledger has no item budget column (board schema version %d): open it with this '
                                 'collection\'s migrations' % BUDGET_VERSION)
            try:
                parse_override(str(budget))
            except ValueError as exc:
                raise BoardError('item budget: %s' % exc)
            route['budget'] = str(budget).strip()

        def write(tx):
            num = number
            row = self._require_or_none(tx, num) if num is not None else None
            if row is None:
                tx.lock('items.number')
                if num is None:
                    num = tx.one('SELECT COALESCE(MAX(number), 0) + 1 FROM items')[0]
                else:
                    row = self._require_or_none(tx, num)
            if blockers is not None and num in blockers:
                raise BoardError('item #%d cannot block itself' % num)
            if row is not None:
                self._not_a_report(tx, num, status)
            if blockers:
                found = set(r[0] for r in tx.all('SELECT number FROM items WHERE number IN (%s)'
                                                 % ', '.join('?' * len(blockers)), blockers))
                missing = [b for b in blockers if b not in found]
                if missing:
                    raise ItemNotFound('blocker item(s) %s do not exist on the ledger: create them first'
                                       % ', '.join('#%d' % b for b in missing))
            when = self._stamp(fixed, tx)
            if row is None:
                if not title:
                    raise BoardError('a new item needs a title')
                before = None
                tx.run('INSERT INTO items (number, title, body, status, state, repo, created_at, updated_at) '
                       'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                       (num, title, body or '', status or '', 'open', repo or '', when, when))
                current = {'number': num, 'title': title, 'body': body or '', 'status': status or '',
                           'state': 'open', 'repo': repo or '', 'blocked_by': []}
                current.update((k, '') for k in self._columns)
            else:
                current = dict(zip(_ITEM_FIELDS, row))
                current['blocked_by'] = [r[0] for r in tx.all(
                    'SELECT blocker FROM dependencies WHERE item = ? ORDER BY blocker', (num,))]
                if self._columns:
                    current.update(zip(self._columns, tx.one('SELECT %s FROM items WHERE number = ?'
                                                             % ', '.join(self._columns), (num,))))
                before = dict(current)
            fields = {}
            for key, value in (('title', title), ('body', body), ('status', status), ('repo', repo)) + tuple(sorted(route.items())):
                if value is not None and value != current[key]:
                    fields[key] = value
            if fields:
                assignments = ', '.join('%s = ?' % k for k in sorted(fields))
                tx.run('UPDATE items SET %s, updated_at = ? WHERE number = ?' % assignments,
                       [fields[k] for k in sorted(fields)] + [when, num])
                current.update(fields)
            if state is not None and state != current['state']:
                self._set_state(tx, num, state, when, actor)
                current['state'] = state
            if blockers is not None and blockers != current['blocked_by']:
                for old in current['blocked_by']:
                    if old not in blockers:
                        tx.run('DELETE FROM dependencies WHERE item = ? AND blocker = ?', (num, old))
                for new in blockers:
                    if new not in current['blocked_by']:
                        tx.run('INSERT INTO dependencies (item, blocker) VALUES (?, ?)', (num, new))
                current['blocked_by'] = list(blockers)
            return {'number': num, 'created': before is None, 'changed': before != current,
                    'before': before, 'after': current}
        return self._tx(write, write=True, dry_run=dry_run)

    @staticmethod
    def _require_or_none(tx, number):
        return tx.one('SELECT number, title, body, status, state, repo FROM items WHERE number = ?' + tx.dialect.for_update,
                      (number,))

    def add_blocker(self, number, blocker):
        """Add the edge "``blocker`` blocks ``number``"; returns whether it was new."""
        number, blocker = _number(number), _number(blocker, 'blocker number')
        if number == blocker:
            raise BoardError('item #%d cannot block itself' % number)

        def write(tx):
            self._require(tx, number)
            self._require(tx, blocker)
            return bool(tx.run('INSERT INTO dependencies (item, blocker) VALUES (?, ?) ON CONFLICT (item, blocker) DO NOTHING',
                               (number, blocker)))
        return self._tx(write, write=True)

    def remove_blocker(self, number, blocker):
        """Remove the edge; returns whether there was one."""
        number, blocker = _number(number), _number(blocker, 'blocker number')
        return self._tx(lambda tx: bool(tx.run('DELETE FROM dependencies WHERE item = ? AND blocker = ?', (number, blocker))),
                        write=True)

    def add_artifact(self, ref, created_at=None, merged=False, merged_at=None, closes=(), title='', url='', actor=None,
                     head_ref=None, head_sha=None, state=None):
        """Record (or update, by ``ref``) an artifact and the items its closing reference names.

        A MERGED artifact closes every open item it closes, like a forge: the item goes
        to ``closed`` with a ``closed`` event at ``merged_at`` (actor: the artifact's ref). An
        unmerged artifact closes nothing (an open pull request is not finished). Re-recording
        the same ref updates title/url/merged/merged_at and adds closes; ``created_at`` keeps
        its first value (D16 attributes by it). Returns
        ``{'ref', 'id', 'created', 'closed': [numbers this call closed]}``.

        ``head_ref``/``head_sha``/``state`` (board version 5): the pull request's branch, its tip and
        ``OPEN``/``CLOSED``/``MERGED``; None leaves a recorded value as it is (a push records the new tip).
        """
        if not ref:
            raise BoardError('an artifact needs a ref')
        pull = dict((k, v) for k, v in (('head_ref', head_ref), ('head_sha', head_sha), ('state', state)) if v is not None)
        if 'state' in pull:
            pull['state'] = str(pull['state']).upper()
            if pull['state'] not in _pulls.STATES:
                raise BoardError('an artifact state is one of %s, not %r' % (', '.join(_pulls.STATES[1:]), state))
        if pull and not self._pull_columns:
            raise BoardError('this ledger has no pull request columns (board schema version %d)' % _pulls.PULLS_VERSION)
        created, merged_fixed, merged = self._fixed(created_at), self._fixed(merged_at), bool(merged)
        numbers = sorted(set(_number(n) for n in (closes or ())))

        def write(tx):
            for n in numbers:
                # the number alone: a forge's role reads nothing else of an item (_board/ledger_roles.py)
                if tx.one('SELECT number FROM items WHERE number = ?' + tx.dialect.for_update, (n,)) is None:
                    raise ItemNotFound('the ledger has no item #%d: create it first (fleet.dispatch.board_item)' % n)
            now = self._now(tx) if created is None or (merged and merged_fixed is None) else None
            created_text = format_time(created or now)
            merged_text = format_time(merged_fixed or now) if merged else None
            row = tx.one('SELECT id FROM artifacts WHERE ref = ?' + tx.dialect.for_update, (ref,))
            if row is None:
                aid = tx.insert('INSERT INTO artifacts (ref, title, url, created_at, merged, merged_at) VALUES (?, ?, ?, ?, ?, ?)',
                                (ref, title or '', url or '', created_text, int(merged), merged_text))
            else:
                aid = row[0]
                tx.run('UPDATE artifacts SET title = ?, url = ?, merged = ?, merged_at = ? WHERE id = ?',
                       (title or '', url or '', int(merged), merged_text, aid))
            for n in numbers:
                tx.run('INSERT INTO artifact_closes (artifact, item) VALUES (?, ?) ON CONFLICT (artifact, item) DO NOTHING',
                       (aid, n))
            for column in sorted(pull):
                tx.run('UPDATE artifacts SET %s = ? WHERE id = ?' % column, (pull[column], aid))
            closed = []
            if merged:
                targets = [r[0] for r in tx.all('SELECT item FROM artifact_closes WHERE artifact = ? ORDER BY item', (aid,))]
                for n in targets:
                    if self._set_state(tx, n, 'closed', merged_text, actor if actor is not None else ref):
                        closed.append(n)
            return {'ref': ref, 'id': aid, 'created': row is None, 'closed': closed}
        return self._tx(write, write=True)

    # -- pull-request details (board version 5, _board/ledger_pulls.py) ------------------------------

    def add_review(self, ref, body, *, kind='review', author='', association='', state='', path='', line=None, at=None):
        """Record a review note on the artifact ``ref``: a ``review`` (``state`` CHANGES_REQUESTED, APPROVED,
        COMMENTED, DISMISSED) or a ``thread`` comment (unresolved until ``resolve_review``). Returns its id."""
        if kind not in _pulls.KINDS:
            raise BoardError('a review note is one of %s, not %r' % (', '.join(_pulls.KINDS), kind))
        fixed = self._fixed(at)

        def write(tx):
            aid = _pulls.artifact_id(tx, ref, BoardError)
            return _pulls.add_review(tx, aid, kind=kind, body=str(body or ''), author=author, association=association,
                                     state=state, path=path, line=line, at=format_time(fixed or self._now(tx)))
        return self._tx(write, write=True)

    def record_review(self, ref, body, *, kind='review', author='', association='', state='', path='', line=None,
                      resolved=None, at=None):
        """Record a review note on the artifact ``ref`` once (``add_review``): a note the artifact already holds
        (``_board/ledger_pulls.py`` ``note_key``) is not recorded again, and ``resolved`` (None: as recorded, a new
        note unresolved) is set on it. Returns ``{'id', 'created', 'resolved'}``, ``resolved`` True when this call
        changed the note's resolution."""
        if kind not in _pulls.KINDS:
            raise BoardError('a review note is one of %s, not %r' % (', '.join(_pulls.KINDS), kind))
        fixed = self._fixed(at)
        key = _pulls.note_key(kind, body, author, state, path, line)

        def write(tx):
            aid = _pulls.artifact_id(tx, ref, BoardError)
            found = _pulls.find_review(tx, aid, key)
            created = found is None
            if created:
                nid = _pulls.add_review(tx, aid, kind=kind, body=str(body or ''), author=author, association=association,
                                        state=state, path=path, line=line, at=format_time(fixed or self._now(tx)))
                was = False
            else:
                nid, was = found
            flip = resolved is not None and bool(resolved) != was
            if flip:
                _pulls.resolve_review(tx, nid, resolved)
            return {'id': nid, 'created': created, 'resolved': flip}
        return self._tx(write, write=True)

    def resolve_review(self, note_id, resolved=True):
        """Mark a review thread's note resolved (or not); returns whether it exists."""
        return self._tx(lambda tx: _pulls.resolve_review(tx, note_id, resolved), write=True)

    def set_check(self, ref, name, conclusion, *, head_sha='', required=True, summary='', url='', at=None):
        """Record the latest result of check ``name`` on the artifact's head ``head_sha`` (``''`` while it runs)."""
        fixed = self._fixed(at)

        def write(tx):
            aid = _pulls.artifact_id(tx, ref, BoardError)
            _pulls.set_check(tx, aid, name=name, head_sha=head_sha, conclusion=conclusion, required=required,
                             summary=summary, url=url, at=format_time(fixed or self._now(tx)))
        return self._tx(write, write=True)
