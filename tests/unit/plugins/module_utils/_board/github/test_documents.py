# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every GraphQL document the GitHub board can send, validated against GitHub's public schema.

graphql-core checks fields, arguments, types and variables; ``fakes.github.cost`` checks what
graphql-core does not: GitHub's own limits (every connection has ``first``/``last`` in 1..100,
at most 500,000 nodes) and the cost formula the page sizes in ``_board/github/documents.py`` were chosen by.
The schema is read from ../shared/github-schema (``shared_dir`` skips, saying why, where absent).
"""

from __future__ import annotations

import ast
import inspect
import re

import graphql
import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import board as _board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import client as _client
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import documents as _documents
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import mentions as _mentions
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import nodes as _nodes
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import reads as _reads
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import reports as _reports
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import transport as _transport
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github import writes as _writes
from fakes.github import analyse, load_schema


@pytest.fixture(scope='module')
def schema(shared_dir):
    path = shared_dir / 'github-schema' / 'schema.graphql'
    if not path.is_file():
        pytest.skip('%s is absent: the documents cannot be validated' % path)
    return load_schema(str(path))


DOCS = sorted(_documents.DOCUMENTS.items())


@pytest.mark.parametrize('name,document', DOCS, ids=[n for n, _d in DOCS])
def test_document_is_valid_against_the_schema(schema, name, document):
    errors = graphql.validate(schema, graphql.parse(document))
    assert [e.message for e in errors] == []


@pytest.mark.parametrize('name,document', DOCS, ids=[n for n, _d in DOCS])
def test_document_respects_githubs_own_limits(schema, name, document):
    """Every connection has a literal first/last in 1..100; the node limit holds even when every
    connection is full and every @include/@skip branch is taken (static worst case)."""
    analysis = analyse(schema, document)
    assert analysis.violations == []
    assert analysis.nodes <= 500000


@pytest.mark.parametrize('name,document', DOCS, ids=[n for n, _d in DOCS])
def test_operation_name_is_the_key_the_code_sends(name, document):
    ops = [d for d in graphql.parse(document).definitions if isinstance(d, graphql.OperationDefinitionNode)]
    assert [o.name.value for o in ops] == [name]


def test_the_code_sends_only_documents_from_the_table():
    """'Every document the code can send': each ``_graphql('X', ...)`` or ``_per_item('X', ...)`` names a DOCUMENTS key, and
    no other module-level string of the GitHub board's modules is a GraphQL operation."""
    sent = set()
    operations = set()
    for module in (_board, _client, _reads, _writes, _mentions, _reports, _documents, _nodes, _transport):
        source = inspect.getsource(module)
        sent.update(re.findall(r"_(?:graphql|per_item)\('([A-Za-z]+)'", source))
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
                value = getattr(module, node.targets[0].id, None)
                if isinstance(value, str) and re.match(r'\s*(query|mutation)\s', value):
                    operations.add(value)
    assert sent == set(_documents.DOCUMENTS), 'sent %s, table %s' % (sorted(sent), sorted(_documents.DOCUMENTS))
    assert operations == set(_documents.DOCUMENTS.values())


# -- the checker itself can fail (negative controls) ---------------------------------------------

@pytest.mark.parametrize('document,expect', [
    ('query A { viewer { login repositories { totalCount } } }', 'needs first or last'),
    ('query A { viewer { repositories(first: 101) { totalCount } } }', 'outside 1..100'),
    ('query A { viewer { repositories(last: 0) { totalCount } } }', 'outside 1..100'),
    ('query A($n: Int) { viewer { repositories(first: $n) { totalCount } } }', 'is a variable'),
])
def test_limit_checker_reports_violations(schema, document, expect):
    assert graphql.validate(schema, graphql.parse(document)) == []
    violations = analyse(schema, document).violations
    assert len(violations) == 1 and expect in violations[0]


def test_validation_catches_a_misspelled_field(schema):
    bad = _documents.DOCUMENTS['BoardPage'].replace('fieldValueByName', 'fieldValueByNam')
    assert graphql.validate(schema, graphql.parse(bad))


# -- the cost formula against GitHub's published examples ----------------------------------------

def test_cost_formula_matches_githubs_worked_example(schema):
    """docs.github.com rate-limits page: 1 + 100 + 5,000 requests = 5,101 -> 51 points."""
    doc = '''query A { viewer { login repositories(first: 100) { edges { node { id
             issues(first: 50) { edges { node { id labels(first: 60) { edges { node { id name } } } } } } } } } } }'''
    a = analyse(schema, doc)
    assert (a.requests, a.cost) == (5101, 51)


@pytest.mark.parametrize('doc,nodes', [
    ('query A { viewer { repositories(first: 50) { edges { repository:node { name issues(first: 10) { totalCount '
     'edges { node { title bodyHTML } } } } } } } }', 550),
    ('query A { viewer { repositories(first: 50) { edges { repository:node { name '
     'pullRequests(first: 20) { edges { pullRequest:node { title comments(first: 10) { edges { comment:node { bodyHTML } } } } } } '
     'issues(first: 20) { totalCount edges { issue:node { title bodyHTML comments(first: 10) { edges { comment:node { bodyHTML } } } } } } '
     '} } } followers(first: 10) { edges { follower:node { login } } } } }', 22060),
])
def test_node_count_matches_githubs_worked_examples(schema, doc, nodes):
    assert analyse(schema, doc).nodes == nodes


def test_a_call_costs_at_least_one_point(schema):
    assert analyse(schema, 'query A { viewer { login } }').cost == 1


# -- the figures the page sizes were chosen by (D1) ----------------------------------------------

def _vars(name):
    return {
        'BoardPage': {'owner': 'o', 'isOrg': True, 'number': 1, 'query': 'q', 'statusField': 'Status', 'after': 'a',
                      'before': 'b'},
        'Details': {'ids': ['x'] * _documents.DETAIL_BATCH},
        'Blockers': {'ids': ['x'] * _documents.BLOCKER_BATCH},
    }[name]


@pytest.mark.parametrize('name,points', [('BoardPage', 1), ('Details', 1), ('Blockers', 1)])
def test_each_full_batch_costs_the_figure_written_next_to_its_size(schema, name, points):
    a = analyse(schema, _documents.DOCUMENTS[name], _vars(name), name)
    print('%s: %d requests, %d nodes, %d point(s)' % (name, a.requests, a.nodes, a.cost))
    assert a.cost == points


def test_page_carries_no_expensive_connection(schema):
    """D1's failure story: one field cost 143 points against 9 for the page. The page pass has
    no connection but the items (one page from the front, one from the back), so nothing per item
    is priced on it: 2 requests, 1 point for 200 items."""
    a = analyse(schema, _documents.DOCUMENTS['BoardPage'], _vars('BoardPage'), 'BoardPage')
    assert [c.split('.')[-1] for c in a.connections] == ['items', 'tail'] and a.requests == 2
    for expensive in ('comments', 'timelineItems', 'closedByPullRequestsReferences', 'blockedBy('):
        assert expensive not in _documents.DOCUMENTS['BoardPage']


def test_closing_prs_are_asked_for_including_closed_ones():
    """D2/D16: a merged PR is a closed PR; without includeClosedPrs GitHub omits it."""
    for name in ('Details', 'Issue'):
        assert 'closedByPullRequestsReferences(last: 100, includeClosedPrs: true)' in _documents.DOCUMENTS[name]


def test_the_comment_page_size_constant_is_the_one_in_the_documents():
    for name in ('Details', 'Issue', 'MoreComments'):
        assert 'comments(last: %d' % _documents.COMMENTS_PER_PAGE in _documents.DOCUMENTS[name]
    assert 'items(first: %d,' % _documents.PAGE_SIZE in _documents.DOCUMENTS['BoardPage']
    assert 'tail: items(last: %d,' % _documents.PAGE_SIZE in _documents.DOCUMENTS['BoardPage']
