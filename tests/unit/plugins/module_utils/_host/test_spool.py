# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The close-out spool's format and its exactly-once claim (_host/spool.py), on real files."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._host import spool
from ansible_collections.fleet.dispatch.plugins.module_utils._host.probe import read_spool

ENTRY = {'run': 'abc123', 'unit': 'task-7', 'item': 7, 'repo': '', 'kind': 'noop', 'body': 'the marker', 'close': False,
         'spooled_at': '2026-12-05T08:00:00Z'}


def test_a_written_close_out_is_pending_private_and_reported(tmp_path):
    path = spool.write(str(tmp_path), ENTRY)
    assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    ((got_path, entry),), problems = spool.pending(str(tmp_path))
    assert got_path == path and entry == ENTRY and problems == []
    warns = []
    out = read_spool(warns.append, str(tmp_path))
    assert out['spooled'] == [{'unit': 'task-7', 'item': 7, 'repo': '', 'run': 'abc123', 'kind': 'noop',
                               'spooled_at': '2026-12-05T08:00:00Z'}] and warns == []


def test_one_claim_wins_and_a_claimed_file_is_not_pending(tmp_path):
    path = spool.write(str(tmp_path), ENTRY)
    claimed = spool.claim(path)
    assert claimed is not None and spool.claim(path) is None
    assert spool.pending(str(tmp_path)) == ([], [])
    spool.release(claimed)
    assert [p for p, _e in spool.pending(str(tmp_path))[0]] == [path]
    spool.delivered(spool.claim(path))
    assert os.listdir(os.path.dirname(path)) == []


def test_written_claimed_it_is_invisible_until_released(tmp_path):
    claimed = spool.write(str(tmp_path), ENTRY, claimed=True)
    assert spool.pending(str(tmp_path)) == ([], [])
    spool.release(claimed)
    assert len(spool.pending(str(tmp_path))[0]) == 1


def test_a_bad_file_is_reported_not_delivered_and_no_spool_is_nothing(tmp_path):
    assert spool.pending(str(tmp_path)) == ([], [])
    os.makedirs(spool.spool_dir(str(tmp_path)))
    with open(os.path.join(spool.spool_dir(str(tmp_path)), 'x.json'), 'w') as handle:
        json.dump({'run': 'x'}, handle)
    entries, problems = spool.pending(str(tmp_path))
    assert entries == [] and 'not a spooled close-out' in problems[0]
    warns = []
    assert read_spool(warns.append, str(tmp_path))['spooled'] == [] and 'close-out spool' in warns[0]


@pytest.mark.parametrize('run', ['', '../x', '.hidden'])
def test_a_run_id_never_names_a_path_outside_the_spool(tmp_path, run):
    with pytest.raises(ValueError):
        spool.write(str(tmp_path), dict(ENTRY, run=run))


def test_a_claim_left_by_a_killed_runner_is_given_back(tmp_path):
    """A runner killed while it retried (the unit's time limit, SIGKILL) leaves its claim: once that process is
    gone the file is pending again, so the next run delivers it."""
    import subprocess
    import sys
    gone = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'], capture_output=True, text=True, check=True).stdout.strip()
    claimed = spool.write(str(tmp_path), ENTRY, claimed=True)
    os.rename(claimed, claimed.rsplit('.', 1)[0] + '.' + gone)
    ((path, entry),), problems = spool.pending(str(tmp_path))
    assert path.endswith('abc123.json') and entry['run'] == 'abc123' and problems == []
    # a live claimer's file stays invisible
    mine = spool.write(str(tmp_path), dict(ENTRY, run='def456'), claimed=True)
    assert [e['run'] for _p, e in spool.pending(str(tmp_path))[0]] == ['abc123'] and os.path.exists(mine)


def test_a_read_only_look_reports_a_dead_claim_and_renames_nothing(tmp_path):
    """Plan and check mode probe with ``release_dead=False``: the dead runner's close-out is reported as spooled
    (the reaper must hold its item) but its file is left as it is; only a probe that may act gives it back."""
    import subprocess
    import sys
    gone = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'], capture_output=True, text=True, check=True).stdout.strip()
    claimed = spool.write(str(tmp_path), ENTRY, claimed=True)
    dead = claimed.rsplit('.', 1)[0] + '.' + gone
    os.rename(claimed, dead)
    before = sorted(os.listdir(spool.spool_dir(str(tmp_path))))
    assert [r['run'] for r in spool.summary(str(tmp_path), release_dead=False)['spooled']] == ['abc123']
    assert sorted(os.listdir(spool.spool_dir(str(tmp_path)))) == before and os.path.exists(dead)
    assert [r['run'] for r in spool.summary(str(tmp_path))['spooled']] == ['abc123'] and not os.path.exists(dead)
