# -*- coding: utf-8 -*-
"""benchmarks/github_cost.py prices the pull-request loop's reads: after a poll's read, board_info's own ``_assess``
sends one PullDetails call per eligible item continuing an unread pull request -- and none for a deferred one."""
from __future__ import annotations

import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / 'benchmarks'))

import github_cost  # noqa: E402
from fakes.github import FakeGitHub  # noqa: E402


def test_a_poll_counts_one_pull_details_call_per_item_awaiting_review():
    clock = github_cost.Clock()
    with FakeGitHub(token=github_cost.TOKEN, rate_limit=10 ** 9, clock=clock) as gh:
        n_eligible, ready = github_cost.build(gh, 40, 0.1, '5%-ready', pulls=3, clock=clock)
        assert n_eligible == 4
        plain = github_cost.poll(gh, None, 10, clock.now, pull_points=1)
        assert (plain.cost['pull_details'], plain.cost['pull_details_points']) == (3, 3)
        page, blk, det, other, total, pulls, with_pulls = github_cost.columns([plain])
        assert (pulls, with_pulls) == (3, total + 3)
        with tempfile.TemporaryDirectory() as tmp:
            memory = str(pathlib.Path(tmp) / 'memory.json')
            github_cost.poll(gh, memory, 10, clock.now, pull_points=1)
            steady = github_cost.poll(gh, memory, 10, clock.now, pull_points=1)
        assert steady.cost['pull_details'] < 3, 'an item the memory defers is not read again, nor its pull request'
