# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ledger board's schema: its forward migrations and the columns each version added.

A store is migrated forward on open, each step recorded in ``schema_version`` under its component; an
older controller or runner refuses a board at a version it does not know. The statements are the
same on SQLite and PostgreSQL (``_store.sql`` fills ``{id}``).
"""

from __future__ import annotations

from . import ledger_pulls as _pulls
from . import ledger_roles as _roles

COMPONENT = 'board'
"""The ``schema_version.component`` of the board's tables."""

MIGRATIONS = [
    (1, 'items, comments, events, dependencies', [
        "CREATE TABLE items (number INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '', "
        "status TEXT NOT NULL DEFAULT '', state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')), "
        "repo TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, updated_at TEXT NOT NULL)",
        "CREATE TABLE comments (id {id}, item INTEGER NOT NULL REFERENCES items (number), "
        "author TEXT NOT NULL DEFAULT '', body TEXT NOT NULL, created_at TEXT NOT NULL)",
        "CREATE INDEX comments_item ON comments (item, created_at)",
        "CREATE TABLE events (id {id}, item INTEGER NOT NULL REFERENCES items (number), "
        "kind TEXT NOT NULL CHECK (kind IN ('closed', 'reopened')), at TEXT NOT NULL, actor TEXT NOT NULL DEFAULT '')",
        "CREATE INDEX events_item ON events (item, at)",
        "CREATE TABLE dependencies (item INTEGER NOT NULL REFERENCES items (number), "
        "blocker INTEGER NOT NULL REFERENCES items (number), PRIMARY KEY (item, blocker), CHECK (item <> blocker))",
    ]),
    (2, 'artifacts and the items they close (D2, D16)', [
        "CREATE TABLE artifacts (id {id}, ref TEXT NOT NULL UNIQUE, title TEXT NOT NULL DEFAULT '', "
        "url TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, merged INTEGER NOT NULL DEFAULT 0, merged_at TEXT)",
        "CREATE TABLE artifact_closes (artifact BIGINT NOT NULL REFERENCES artifacts (id), "
        "item INTEGER NOT NULL REFERENCES items (number), PRIMARY KEY (artifact, item))",
    ]),
    # Marker authority: a ledger marker is a comment by one of the fleet's identities (LEDGER_AUTHOR
    # or board.marker_authors). Before version 3 the glyph alone made a marker and the writers
    # recorded no author: those comments were markers, so they are attributed to LEDGER_AUTHOR and
    # an item that was running, tombstoned or parked stays so across the upgrade.
    (3, 'markers carry their author', [
        "UPDATE comments SET author = 'fleet.dispatch' WHERE author = ''",
    ]),
    # An item's route and priority (_core/dispatch/route.py): an older controller or runner refuses a board
    # at version 4 (it does not know it) rather than launch a routed item on the wrong agent.
    (4, 'item routes and priorities', [
        "ALTER TABLE items ADD COLUMN agent TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE items ADD COLUMN model TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE items ADD COLUMN effort TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE items ADD COLUMN priority TEXT NOT NULL DEFAULT ''",
    ]),
    # An artifact's pull-request head, review notes and check results (_board/ledger_pulls.py): an older
    # controller or runner refuses a board at version 5 rather than start a fresh branch beside an open PR.
    _pulls.MIGRATION,
    # Who may write what on PostgreSQL (_board/ledger_roles.py): a comment records its writer's role, and any
    # role but the fleet's records artifacts and nothing else. SQLite gets the empty writer column only.
    _roles.MIGRATION,
    # An item's own budget (_core/dispatch/item_budget.py): an older controller refuses a board at version 7
    # rather than hold an item to a budget a human raised, or run one past the budget a human lowered.
    (7, 'item budgets', [
        "ALTER TABLE items ADD COLUMN budget TEXT NOT NULL DEFAULT ''",
    ]),
    # Room for later board migrations (version 8+). The handoff claims are NOT board
    # tables: they are their own component ('handoff', _store.handoff.MIGRATIONS through
    # _store.sql.SqlStore.migrate), so the board's schema version does not move for them. Leases are
    # not board tables either (component 'lease', _store.lease.MIGRATIONS): do not add them here.
]
"""The board's forward migrations, applied in order, each recorded in ``schema_version``."""

REPORT_COMPONENT = 'report'
"""The ``schema_version.component`` of the announcer's table: its own component, so the board's
schema version does not move and an older controller still reads the board (D14)."""

REPORT_MIGRATIONS = [
    (1, 'report items of the announcer (D14)', [
        "CREATE TABLE reports (item INTEGER PRIMARY KEY REFERENCES items (number), created_at TEXT NOT NULL)",
    ]),
]
"""A report is an ordinary item (title, body, comments, state) with a row here: ``read`` leaves it
out of the queue, so it is never a dispatch candidate whatever its status says."""

ROUTE_FIELDS = ('agent', 'model', 'effort', 'priority')
"""The route and priority columns (board version 4): text, ``''`` when not asked."""
ROUTE_VERSION = 4
BUDGET_FIELDS = ('budget',)
"""The item budget column (board version 7): text (``50k tokens``, ``$2``, ``none``), ``''`` when not set."""
BUDGET_VERSION = 7
