# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print what polling a GitHub board costs, in GitHub's points, beside the hourly budget and the peer.

Each poll runs the shipped ``GitHubBoard`` (a new instance per poll, as each sweep opens one) against
the fake GitHub (tests/fakes/github), which executes the same documents with graphql-core on GitHub's
public schema and prices each call by GitHub's published formula
(docs.github.com/graphql/overview/rate-limits-and-node-limits-for-the-graphql-api). Two boards per size:

* ``all-ready``: every item is Ready and open; 5 % have no open blocker, 95 % are blocked -- the page
  pays for every item, the blockers pass for 95 %.
* ``5%-ready``: 5 % of the items are Ready, the rest sit in other columns -- the server filter keeps
  them off the page.

Three modes per board: ``no memory`` (every poll reads every Ready item in full), ``memory, cold``
(the first poll with the board option ``read_memory``: a full read) and ``memory, steady`` (the mean
of the next ``--every`` polls, one whole rotation, with ``--changes`` Ready items commented on between
polls). Printed beside them: the budget line (5,000 points an hour, a poll every ``--cadence`` s) with
the issue's goals (5 % Ready within 25 %, all Ready within 100 %), and the peer github-symphony's
page cost from its published query (``PEER``). Exit status 1 when a steady poll misses its goal.
Usage:

    python benchmarks/github_cost.py [--sizes 10000] [--every 10] [--changes 5] [--cadence 30] [--pulls 25]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import pathlib
import random
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / 'tests'))

# conftest makes ansible_collections.fleet.dispatch importable (a symlink to this checkout).
import conftest  # noqa: E402,F401  pylint: disable=unused-import
from fakes.github import FakeGitHub, analyse, load_schema  # noqa: E402
from graphql import parse, validate  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import documents as _github  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github.board import GitHubBoard  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.pr_loop import DEFAULT_MAX_ROUNDS  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.modules.board_info import _assess  # noqa: E402

TOKEN = 'benchmark-token'
BUDGET = 5000
GOALS = {'5%-ready': 0.25, 'all-ready': 1.00}
UTC = _dt.timezone.utc

PEER_SOURCE = ('hojinzs/github-symphony@c5e8195 packages/tracker-github/src/adapter.ts, PROJECT_ITEMS_QUERY '
               '(DEFAULT_PAGE_SIZE 25)')
PEER = '''
query PeerPage($id: ID!, $query: String, $after: String, $first: Boolean!) {
  node(id: $id) {
    ... on ProjectV2 {
      unfiltered: items(first: 1) @include(if: $first) { totalCount }
      items(first: 25, after: $after, query: $query) {
        nodes {
          fieldValues(first: 20) { nodes { __typename } }
          content {
            ... on Issue {
              labels(first: 20) { nodes { name } }
              assignees(first: 20) { nodes { login } }
              blockedBy(first: 100) { nodes { number } }
              closedByPullRequestsReferences(first: 20) { nodes { number } }
            }
          }
        }
      }
    }
  }
}
'''
"""The connections of the peer's page query and their sizes (the scalar fields it also selects cost
nothing by the formula and are left out): per page of 25 items, the items connection, 5 nested
connections per item and, on the first page only, a 1-item count of the unfiltered items."""

PEER_ITEMS = 500
"""The items the peer's server-side filter (non-terminal states) leaves on the board compared here."""


def peer_cost(schema):
    """(points per poll, pages) of the peer's read of ``PEER_ITEMS`` items, page by page."""
    errors = validate(schema, parse(PEER))
    if errors:
        raise SystemExit('the peer page does not validate against the schema: %s' % errors)
    pages = int(math.ceil(PEER_ITEMS / 25.0))
    points = 0
    for page in range(pages):
        result = analyse(schema, PEER, {'id': 'P', 'query': 'q', 'after': None, 'first': page == 0}, 'PeerPage')
        points += result.cost
    return points, pages


def naive_page_cost(schema):
    """The page (100 items from each end) with comments, timeline, closing PRs and blockers on every item."""
    doc = _github.DOCUMENTS['BoardPage'].replace(
        'issueDependenciesSummary { blockedBy totalBlockedBy }',
        'issueDependenciesSummary { blockedBy totalBlockedBy } ...IssueDetail')
    doc += _github._ISSUE_DETAIL_FRAGMENT + _github._PULL_FRAGMENT + _github._BLOCKER_FRAGMENT
    variables = {'owner': 'o', 'isOrg': True, 'number': 1, 'query': 'q', 'statusField': 'Status', 'after': None, 'before': None}
    return analyse(schema, doc, variables, 'BoardPage')


class Clock(object):
    """The fake's clock: a day behind this machine (the items were last touched long before the
    polls), moved on by each poll's cadence."""

    def __init__(self):
        self.now = _dt.datetime.now(UTC) - _dt.timedelta(days=1)

    def __call__(self):
        return self.now


def build(gh, size, eligible, shape, pulls=0, clock=None):
    """The board; ``pulls`` of its unblocked Ready items carry an open pull request a run of the fleet left (a start
    marker by the fleet's identity, the pull request created after it and closing the item, a no-op), unreviewed."""
    n_eligible, ready = _build(gh, size, eligible, shape)
    at = (clock() if clock is not None else _dt.datetime.now(UTC)) - _dt.timedelta(hours=3)
    for number in ready[:min(pulls, n_eligible)]:
        gh.store.add_comment('acme/app', number, format_marker('start', {'unit': 'task-%d' % number}), created_at=at)
        gh.store.add_pr('acme/app', 'fix item %d' % number, closes=[number], created_at=at + _dt.timedelta(minutes=10))
        gh.store.add_comment('acme/app', number, format_marker('noop', {'unit': 'task-%d' % number}),
                             created_at=at + _dt.timedelta(minutes=30))
    return n_eligible, ready


def _build(gh, size, eligible, shape):
    store = gh.store
    store.add_project('acme', 1)
    blocker = store.add_issue('acme/app', 'an open blocker', project=('acme', 1), status='Backlog')
    n_eligible = max(1, int(round(size * eligible)))
    ready = []
    for n in range(size):
        if shape == 'all-ready':
            issue = store.add_issue('acme/app', 'item %d' % n, project=('acme', 1), status='Ready')
            store.add_comment('acme/app', issue['number'], 'a marker-sized comment')
            if n >= n_eligible:
                store.add_blocker('acme/app', issue['number'], 'acme/app', blocker['number'])
            ready.append(issue['number'])
        else:
            status = 'Ready' if n < n_eligible else ('Backlog' if n % 2 else 'Done')
            issue = store.add_issue('acme/app', 'item %d' % n, project=('acme', 1), status=status)
            store.add_comment('acme/app', issue['number'], 'a marker-sized comment')
            if status == 'Ready':
                ready.append(issue['number'])
    return n_eligible, ready


def poll(gh, memory, every, now=None, pull_points=0):
    """One sweep's board read, then ``board_info``'s verdicts (``_assess``): the ``PullDetails`` calls it sends for the
    eligible items continuing an unread pull request are counted in ``cost['pull_details_points']``."""
    spec = {'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url, 'owner_type': 'organization'}
    if memory:
        spec.update(read_memory=memory, full_read_every=every)
    board = GitHubBoard(spec)
    try:
        read = board.read(now=now)
        before = len(gh.graphql_calls('PullDetails'))
        decide = dict(now=now or _dt.datetime.now(UTC), ready='Ready', max_attempts=3, agents=None, item_budget=None,
                      max_rounds=DEFAULT_MAX_ROUNDS)
        _assess(board, read.items, None, decide)
        calls = len(gh.graphql_calls('PullDetails')) - before
        read.cost.update(pull_details=calls, pull_details_points=calls * pull_points)
        return read
    finally:
        board.close()


def columns(reads):
    """Mean points per poll: page, blockers, details, the rest (preflight, older comments ...), total of the read,
    the pull-request loop's ``PullDetails`` after it, and the total with them."""
    n = float(len(reads))
    by = [r.cost['by_document'] for r in reads]
    page = sum(b.get('BoardPage', 0) for b in by) / n
    blk = sum(b.get('Blockers', 0) for b in by) / n
    det = sum(b.get('Details', 0) for b in by) / n
    total = sum(r.cost['cost'] for r in reads) / n
    pulls = sum(r.cost.get('pull_details_points', 0) for r in reads) / n
    return page, blk, det, total - page - blk - det, total, pulls, total + pulls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--sizes', default='10000', help='board sizes, comma-separated (default 10000)')
    parser.add_argument('--eligible', type=float, default=0.05, help='share of items Ready / unblocked (0.05)')
    parser.add_argument('--every', type=int, default=10, help='full_read_every of the memory (10)')
    parser.add_argument('--changes', type=int, default=5, help='Ready items commented on between two polls (5)')
    parser.add_argument('--cadence', type=float, default=30.0, help='seconds between polls (30)')
    parser.add_argument('--pulls', type=int, default=25,
                        help='unblocked Ready items with an open, unreviewed pull request a run left (25)')
    args = parser.parse_args(argv)
    schema = load_schema()
    pull_points = analyse(schema, _github.DOCUMENTS['PullDetails'], {'id': 'PR_1'}, 'PullDetails').cost
    polls_per_hour = 3600.0 / args.cadence
    print('budget: %d points an hour; a poll every %g s = %g polls an hour' % (BUDGET, args.cadence, polls_per_hour))
    for shape, share in sorted(GOALS.items()):
        print('  goal %-9s: within %d %% = %d points an hour = %.1f points a poll'
              % (shape, share * 100, BUDGET * share, BUDGET * share / polls_per_hour))
    peer_points, peer_pages = peer_cost(schema)
    print('peer github-symphony, its published page query (%s): %d items = %d pages x 1 point = %d points a poll '
          '= %d %% of the budget' % (PEER_SOURCE, PEER_ITEMS, peer_pages, peer_points,
                                     round(100.0 * peer_points * polls_per_hour / BUDGET)))
    naive = naive_page_cost(schema)
    print('our page of 200 (100 from each end) with the expensive fields on it: %d requests = %d points (shipped page: 1 point)'
          % (naive.requests, naive.cost))
    print('pull-request loop: %d unblocked Ready items with an open, unreviewed pull request a run left; one PullDetails '
          'call each on a poll that reads the item in full = %d point(s) a call' % (args.pulls, pull_points))
    print()
    head = '%-9s %6s %5s  %-14s %6s %5s %5s %5s %5s %7s %7s %6s %-4s %5s %7s %7s %s'
    row = '%-9s %6d %5d  %-14s %6d %5.1f %5.1f %5.1f %5.1f %7.1f %6d%% %5d%% %-4s %5.1f %7.1f %6d%% %s'
    print(head % ('board', 'items', 'ready', 'mode', 'polls', 'page', 'blk', 'det', 'other', 'pts/poll',
                  'budget', 'goal', 'met', 'pr', '+pr', 'budget', 'met'))
    ok = True
    rng = random.Random(31)
    for size in [int(s) for s in args.sizes.split(',')]:
        for shape in ('5%-ready', 'all-ready'):
            clock = Clock()
            with FakeGitHub(token=TOKEN, rate_limit=10 ** 9, clock=clock) as gh, \
                    tempfile.TemporaryDirectory(prefix='github-cost.') as tmp:
                n_eligible, ready = build(gh, size, args.eligible, shape, args.pulls, clock)
                started = time.perf_counter()
                plain = poll(gh, None, args.every, clock.now, pull_points)
                memory = str(pathlib.Path(tmp) / 'read-memory.json')
                cold = poll(gh, memory, args.every, clock.now, pull_points)
                steady = []
                for _cycle in range(args.every):
                    clock.now += _dt.timedelta(seconds=args.cadence)
                    for number in rng.sample(ready, min(args.changes, len(ready))):
                        gh.store.add_comment('acme/app', number, 'a comment between two polls')
                    steady.append(poll(gh, memory, args.every, clock.now, pull_points))
                seconds = time.perf_counter() - started
            if plain.cost['candidates'] != n_eligible:
                print('  ! expected %d candidates, read %d' % (n_eligible, plain.cost['candidates']))
                ok = False
            for mode, reads in (('no memory', [plain]), ('memory, cold', [cold]), ('memory, steady', steady)):
                page, blk, det, other, total, pulls, with_pulls = columns(reads)
                share = total * polls_per_hour / BUDGET
                met = share <= GOALS[shape]
                share_pr = with_pulls * polls_per_hour / BUDGET
                if mode == 'memory, steady':
                    ok = ok and met
                print(row % (shape, size, len(ready), mode, len(reads), page, blk, det, other, total,
                             round(share * 100), round(GOALS[shape] * 100), 'yes' if met else 'NO', pulls, with_pulls,
                             round(share_pr * 100), 'yes' if share_pr <= GOALS[shape] else 'NO'))
            print('%-9s (%d polls in %.0f s on the fake; a steady poll deferred %d of %d Ready items on average)'
                  % ('', 2 + len(steady), seconds, sum(r.cost['deferred'] for r in steady) / len(steady), len(ready)))
    print('every steady poll within its goal: %s' % ('yes' if ok else 'NO'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
