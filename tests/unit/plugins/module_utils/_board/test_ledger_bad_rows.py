# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One bad ledger row is reported by item number; the rest of the board still reads (issue 14).

Real SQLite; the bad rows are written the way a foreign writer would (raw bytes, a broken time).
"""

from __future__ import annotations

import datetime as _dt
import sqlite3

from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.plan import assess

NOW = _dt.datetime(2026, 12, 1, 12, 0, tzinfo=_dt.timezone.utc)


def test_one_undecodable_or_untimed_row_marks_its_item_and_the_rest_reads(tmp_path):
    path = str(tmp_path / 'l.sqlite3')
    with open_board({'kind': 'ledger', 'path': path, 'create': True}) as board:
        for number in (1, 2, 3, 4):
            board.upsert_item(number=number, title='item %d' % number, status='Ready')
        board.post_marker(2, format_marker('start', {'unit': 'task-2'}))
    con = sqlite3.connect(path)
    con.execute("INSERT INTO comments (item, author, body, created_at) "
                "VALUES (2, 'fleet.dispatch', CAST(X'F09F9A80FF20626164' AS TEXT), '2026-12-01T10:00:00.000000Z')")
    con.execute("UPDATE items SET body = CAST(X'C328' AS TEXT) WHERE number = 3")
    con.execute("INSERT INTO events (item, kind, at, actor) VALUES (4, 'reopened', 'yesterday', 'bob')")
    con.commit()
    con.close()
    with open_board({'kind': 'ledger', 'path': path}) as board:
        items = board.read().items
        assert board.get(3).unreadable
    entries = dict((e['number'], e) for e in assess(items, now=NOW))
    assert entries[1]['reason'] == 'eligible'
    assert entries[2]['reason'] == 'unreadable' and 'comment' in entries[2]['unreadable'] \
        and 'body is not UTF-8' in entries[2]['unreadable']
    assert entries[3]['reason'] == 'unreadable' and 'body is not UTF-8' in entries[3]['unreadable']
    assert entries[4]['reason'] == 'unreadable' and "'yesterday' is not an ISO time" in entries[4]['unreadable']
    assert not [e for e in entries.values() if e['eligible'] and e['number'] != 1]
