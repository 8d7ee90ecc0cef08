# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who may write what on a PostgreSQL ledger: the fleet's roles, and the forge's (board version 6).

The server enforces the split, not the client, so a credential handed to the agent cannot be used to
speak as the fleet (D6, D18):

* The fleet is the owner role of the ledger's tables (``roles/ledger`` makes it; the fleet's DSN logs in
  as it). It writes everything, as before.
* Every other role that can connect is a forge: it records artifacts and the items they close, and it
  closes an item that a merged artifact of the ledger closes (a ``closed`` event), the way a forge's
  merge does (D2). It reads only an item's number and state. It cannot comment, create, edit or reopen
  an item, change blockers, or touch review notes, checks, sessions, handoffs or leases. An agent's
  forge credential (``worker_agent_credentials``) is such a role.
* A comment records the role that wrote or last edited it (``writer``, set by a trigger from
  ``session_user``; a client cannot choose it). A comment whose writer is not one of the fleet's roles
  is read as authored by that role, whatever ``author`` it names, so it is never a marker.

The fleet's roles are the owner of the tables and the roles that are members of it, superusers, the
reading session's own role, and ``board.marker_authors``. SQLite has no roles: whoever can write the
file is the fleet (one trust), and ``writer`` stays ``''``.
"""

from __future__ import annotations

ROLES_VERSION = 6
"""The board schema version that added the comments' writer and the forge's grants."""

_MERGED_CLOSES = ("SELECT c.item FROM artifact_closes c JOIN artifacts a ON a.id = c.artifact "
                  "WHERE a.merged = 1")

MIGRATION = (ROLES_VERSION, "comments record their writer's role; other roles only record artifacts", [
    "ALTER TABLE comments ADD COLUMN writer TEXT NOT NULL DEFAULT ''",
    {'postgres': "CREATE OR REPLACE FUNCTION fleet_comment_writer() RETURNS trigger LANGUAGE plpgsql AS "
                 "$$BEGIN NEW.writer := session_user; RETURN NEW; END$$"},
    {'postgres': "CREATE TRIGGER comments_writer BEFORE INSERT OR UPDATE ON comments "
                 "FOR EACH ROW EXECUTE FUNCTION fleet_comment_writer()"},
    # a forge opens the board (it reads the schema versions) and records artifacts
    {'postgres': "GRANT SELECT ON schema_version TO PUBLIC"},
    {'postgres': "GRANT SELECT, INSERT, UPDATE ON artifacts TO PUBLIC"},
    {'postgres': "GRANT SELECT, INSERT ON artifact_closes TO PUBLIC"},
    # ... and closes what a merged artifact closes: an item's number and state, nothing else of it
    {'postgres': "GRANT SELECT (number, state) ON items TO PUBLIC"},
    {'postgres': "GRANT UPDATE (state, updated_at) ON items TO PUBLIC"},
    {'postgres': "GRANT INSERT ON events TO PUBLIC"},
    # the owner and its members (with the owner's privileges) are not subject to these policies; every other role is
    {'postgres': "ALTER TABLE items ENABLE ROW LEVEL SECURITY"},
    {'postgres': "CREATE POLICY forge_read ON items FOR SELECT TO PUBLIC USING (true)"},
    {'postgres': "CREATE POLICY forge_close ON items FOR UPDATE TO PUBLIC USING (true) "
                 "WITH CHECK (state = 'closed' AND number IN (%s))" % _MERGED_CLOSES},
    {'postgres': "ALTER TABLE events ENABLE ROW LEVEL SECURITY"},
    {'postgres': "CREATE POLICY forge_closed ON events FOR INSERT TO PUBLIC WITH CHECK (kind = 'closed')"},
])

FLEET_ROLES = ("SELECT r.rolname FROM pg_roles r JOIN pg_class c ON c.oid = to_regclass('comments') "
               "WHERE r.rolsuper OR r.rolname = session_user OR pg_has_role(r.oid, c.relowner, 'MEMBER')")
"""The fleet's roles on PostgreSQL: superusers, the reading session's role, the owner of the comments
table and its members (``pg_has_role`` by oid: a role dropped since never raises)."""


def fleet_roles(tx, marker_authors=()):
    """The writers whose comments keep the author they name, or None when the store has no roles
    (SQLite: every writer is the fleet)."""
    if tx.dialect.name == 'sqlite':
        return None
    return set(row[0] for row in tx.all(FLEET_ROLES)) | set(str(a) for a in marker_authors or ())


def author(named, writer, trusted):
    """The author a comment is read with: the one it names when its writer is one of the fleet's
    roles (or not recorded: SQLite, and comments from before version 6), else the writer's role."""
    if trusted is None or not writer or writer in trusted:
        return named
    return writer
