# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What of a pull request's review and checks reaches the brief: trusted authors, unresolved, failing required."""
from __future__ import annotations

import datetime as dt

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Artifact, CheckResult, ReviewNote
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.pull_feedback import feedback, failing_checks

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
HEAD = 'c' * 40


def pr(reviews=(), checks=()):
    return Artifact(ref='o/r#7', created_at=T0, state='OPEN', head_ref='fleet/42', head_sha=HEAD,
                    reviews=list(reviews), checks=list(checks))


def note(kind, author, association, minute=0, **kw):
    return ReviewNote(kind=kind, body='%s says' % author, author=author, association=association,
                      created_at=T0 + dt.timedelta(minutes=minute), **kw)


def test_trusted_changes_requested_and_unresolved_thread_are_briefed():
    got = feedback(pr(reviews=[
        note('review', 'maint', 'COLLABORATOR', 2, state='CHANGES_REQUESTED'),
        note('thread', 'owner', 'OWNER', 1, path='a.py', line=3),
    ]))
    assert [n.author for n in got['threads']] == ['owner']
    assert [n.author for n in got['reviews']] == ['maint']
    assert got['skipped'] == []


def test_untrusted_reviewer_is_skipped_not_briefed():
    got = feedback(pr(reviews=[note('review', 'stranger', 'NONE', state='CHANGES_REQUESTED'),
                               note('thread', 'drive-by', 'CONTRIBUTOR')]))
    assert got['reviews'] == [] and got['threads'] == []
    assert sorted(n.author for n in got['skipped']) == ['drive-by', 'stranger']


def test_an_organization_member_is_skipped_unless_the_operator_opts_in():
    """MEMBER says organization membership, not access to the repository: its review steers nothing by default."""
    reviews = [note('review', 'mona', 'MEMBER', state='CHANGES_REQUESTED')]
    got = feedback(pr(reviews=reviews))
    assert got['reviews'] == [] and [n.author for n in got['skipped']] == ['mona']
    assert [n.author for n in feedback(pr(reviews=reviews), trust_members=True)['reviews']] == ['mona']


def test_fleet_identity_is_trusted():
    got = feedback(pr(reviews=[note('thread', 'fleet-app', '', author_type='Bot')]), ['fleet-app[bot]'])
    assert [n.author for n in got['threads']] == ['fleet-app']


def test_resolved_threads_approvals_and_comments_are_not_work():
    got = feedback(pr(reviews=[note('thread', 'owner', 'OWNER', resolved=True),
                               note('review', 'maint', 'MEMBER', state='APPROVED'),
                               note('review', 'maint', 'MEMBER', state='COMMENTED')]))
    assert got == {'threads': [], 'reviews': [], 'checks': [], 'skipped': []}


def test_failing_required_checks_of_the_head_only():
    checks = [CheckResult('unit', 'FAILURE', True, 'two tests failed', head_sha=HEAD),
              CheckResult('lint', 'SUCCESS', True, head_sha=HEAD),
              CheckResult('optional', 'FAILURE', False, head_sha=HEAD),
              CheckResult('stale', 'FAILURE', True, head_sha='d' * 40),
              CheckResult('running', '', True, head_sha=HEAD),
              CheckResult('status', 'ERROR', True)]
    assert [c.name for c in failing_checks(pr(checks=checks))] == ['unit', 'status']


def test_not_read_gives_nothing():
    art = Artifact(ref='o/r#7', created_at=T0)
    assert feedback(art) == {'threads': [], 'reviews': [], 'checks': [], 'skipped': []}
