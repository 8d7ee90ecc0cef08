# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The ledger location (``path``/``dsn``) of modules that use the ledger itself (spec: module_utils/_argspec.py ledger_argspec)."""

    DOCUMENTATION = r'''
options:
  path:
    description:
      - The SQLite ledger file, for a single controller whose runners share one filesystem.
      - A missing file is an unreachable ledger, never an empty one, and is never created here - create the ledger with
        M(fleet.dispatch.board_item) or the demo playbook.
      - Defaults to C($XDG_DATA_HOME/fleet-dispatch/ledger.sqlite3) (C(~/.local/share/...)), the ledger board's default, when neither
        O(path) nor O(dsn) is set.
      - Mutually exclusive with O(dsn).
    type: path
  dsn:
    description:
      - A PostgreSQL connection string for the ledger shared by every runner of the fleet.
      - C(no_log) (the argument spec marks it so) - never logged; a password in it is masked in every message, warning and
        exception text.
      - Mutually exclusive with O(path).
    type: str
'''
