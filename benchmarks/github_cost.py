# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print the GraphQL cost, in GitHub's points, of one GitHub board read (D1).

The read runs the shipped ``GitHubBoard`` against the fake GitHub (tests/fakes/github), which
executes the same documents with graphql-core on GitHub's public schema and prices each call by
GitHub's published formula. Two boards per size:

* ``all-ready``: every item matches the server filter (open, status Ready); 5 % pass the cheap
  filter (no open blocker) and 95 % are blocked -- the page pass pays for every item.
* ``5%-ready``: 5 % of the items are Ready, the rest sit in other columns -- the server filter
  keeps them off the page altogether.

Also printed: what the page would cost with the expensive fields on it (the D1 failure story:
one field cost 143 points against 9 for the page). Exit status 1 if the page pass costs more
than 1 point per 100 paged items (the budget in the issue). Usage:

    /tmp/fdvenv/bin/python benchmarks/github_cost.py [--sizes 100,1000,5000] [--eligible 0.05]
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / 'tests'))

# conftest makes ansible_collections.fleet.dispatch importable (a symlink to this checkout).
import conftest  # noqa: E402,F401  pylint: disable=unused-import
from fakes.github import FakeGitHub, analyse, load_schema  # noqa: E402

from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import documents as _github  # noqa: E402
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github.board import GitHubBoard  # noqa: E402

TOKEN = 'benchmark-token'


def build(gh, size, eligible, shape):
    store = gh.store
    store.add_project('acme', 1)
    blocker = store.add_issue('acme/app', 'an open blocker', project=('acme', 1), status='Backlog')
    n_eligible = max(1, int(round(size * eligible)))
    for n in range(size):
        if shape == 'all-ready':
            issue = store.add_issue('acme/app', 'item %d' % n, project=('acme', 1), status='Ready')
            store.add_comment('acme/app', issue['number'], 'a marker-sized comment')
            if n >= n_eligible:
                store.add_blocker('acme/app', issue['number'], 'acme/app', blocker['number'])
        else:
            status = 'Ready' if n < n_eligible else ('Backlog' if n % 2 else 'Done')
            issue = store.add_issue('acme/app', 'item %d' % n, project=('acme', 1), status=status)
            store.add_comment('acme/app', issue['number'], 'a marker-sized comment')
    return n_eligible


def naive_page_cost(schema):
    """The page with comments, timeline, closing PRs and blockers on every item."""
    doc = _github.DOCUMENTS['BoardPage'].replace(
        'issueDependenciesSummary { blockedBy totalBlockedBy }',
        'issueDependenciesSummary { blockedBy totalBlockedBy } ...IssueDetail')
    doc += _github._ISSUE_DETAIL_FRAGMENT + _github._PULL_FRAGMENT + _github._BLOCKER_FRAGMENT
    variables = {'owner': 'o', 'isOrg': True, 'number': 1, 'query': 'q', 'statusField': 'Status', 'after': None}
    return analyse(schema, doc, variables, 'BoardPage')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--sizes', default='100,1000,5000')
    parser.add_argument('--eligible', type=float, default=0.05)
    args = parser.parse_args(argv)
    schema = load_schema()
    naive = naive_page_cost(schema)
    print('page of 100 with the expensive fields on it: %d requests = %d points (shipped page: 1 point)'
          % (naive.requests, naive.cost))
    print('%-10s %6s %6s %9s %7s %9s %8s %6s %6s %9s %8s' % (
        'board', 'items', 'paged', 'eligible', 'pages', 'page pts', 'blk pts', 'det pts', 'total', 'pts/100', 'seconds'))
    print('(pts/100: page points per 100 paged items; a call costs at least 1 point, so a board '
          'with fewer than 100 paged items pays 1)')
    ok = True
    for size in [int(s) for s in args.sizes.split(',')]:
        for shape in ('all-ready', '5%-ready'):
            with FakeGitHub(token=TOKEN, rate_limit=10 ** 9) as gh:
                n_eligible = build(gh, size, args.eligible, shape)
                board = GitHubBoard({'owner': 'acme', 'project': 1, 'token': TOKEN, 'api_url': gh.url,
                                     'owner_type': 'organization'})
                started = time.perf_counter()
                read = board.read()
                seconds = time.perf_counter() - started
                board.close()
                pages = len(gh.graphql_calls('BoardPage'))
            by_doc = read.cost['by_document']
            paged = len(read.items)
            page_pts = by_doc.get('BoardPage', 0)
            per_100 = page_pts * 100.0 / paged if paged else float(page_pts)
            budget = max(1, math.ceil(paged / 100.0))
            ok = ok and page_pts <= budget
            print('%-10s %6d %6d %9d %7d %9d %8d %6d %6d %9.2f %8.2f' % (
                shape, size, paged, read.cost['candidates'], pages, page_pts,
                by_doc.get('Blockers', 0), by_doc.get('Details', 0), read.cost['cost'], per_100, seconds))
            if read.cost['candidates'] != n_eligible:
                print('  ! expected %d candidates, read %d' % (n_eligible, read.cost['candidates']))
                ok = False
    print('page pass within 1 point per 100 items: %s' % ('yes' if ok else 'NO'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
