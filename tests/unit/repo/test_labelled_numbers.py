# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""D13 🔴: "the codebase labels its own unmeasured numbers, writing down the experiment that would
settle each". Every module-level numeric constant of the shipped Python (a tunable: a timeout, a
size, a cap, a ladder) must say, in the comment around it or the docstring right after it, whether
it was measured (a reading) or is a guess -- and a guess must name the experiment that settles it.
Identifiers that are not tunables (exit codes, format versions, keys, limits set by another
program) are listed below with the reason, so a new number cannot slip in unlabelled.
"""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
SOURCES = sorted(p for d in ('plugins/module_utils', 'plugins/modules', 'plugins/lookup', 'plugins/action', 'plugins/filter')
                 for p in (REPO / d).rglob('*.py'))

NOT_TUNABLES = {
    'EXIT_SUCCESS': 'an exit code (the one table: _core/outcome/exits.py)',
    'EXIT_NOOP': 'an exit code',
    'EXIT_FAILURE': 'an exit code',
    'EXIT_CAPACITY': 'an exit code',
    'EXIT_RETRY': 'an exit code',
    'EXIT_STOPPED': 'an exit code',
    'EXIT_BUDGET': 'an exit code',
    'EXIT_LEFT_OPEN': 'an exit code',
    'EXIT_USAGE': 'an exit code (an identifier, documented in the runner docstring)',
    'EXIT_UPDATE_FAILED': 'an exit code',
    'EXIT_CLOSEOUT_LOST': 'an exit code',
    'EXIT_START_LOST': 'an exit code',
    'EXIT_START_FAILED': 'an exit code',
    'EXIT_CLOSE_LOST': 'an exit code',
    'EXIT_RUNNING_ELSEWHERE': 'an exit code',
    'EXIT_LEDGER_UNREACHABLE': 'an exit code',
    'EXIT_OPENED': 'an exit code (fleet-runner check-board)',
    'EXIT_UNREADABLE': 'an exit code (fleet-runner check-board)',
    'FILE_FORMAT': 'the lease file format version',
    'MEMORY_FORMAT': "the GitHub board's read memory file format version",
    'ROUTE_VERSION': 'the ledger board schema version that added the route columns',
    'PULLS_VERSION': 'the ledger board schema version that added the pull-request columns and tables',
    'ROLES_VERSION': "the ledger board schema version that added the comments' writer and the forge's grants",
    'BUDGET_VERSION': 'the ledger board schema version that added the item budget column',
    'MIGRATION_LOCK_KEY': 'an advisory-lock key: any fixed value works',
    '_MAX_UNIT': "systemd's own limit (UNIT_NAME_MAX), not ours to tune",
    'RETURNING_MIN_SQLITE': 'the SQLite release that added INSERT ... RETURNING, a fact about SQLite',
    'MAX_ITEM': "the SQL INTEGER / GraphQL Int range, another system's limit",
    'ARGV_BRIEF_MAX': "Linux's MAX_ARG_STRLEN, the kernel's limit",
}
# "derived": computed from a published figure (GitHub's cost formula), the figure written beside it
LABEL = re.compile(r'measured|reading|guess|derived', re.I)
EXPERIMENT = re.compile(r'experiment|settle|re-?measure|re-?run|rerun|take the|time ``|log ``', re.I)
UNMEASURED = re.compile(r'unmeasured|guess', re.I)


def _numeric(node):
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    if isinstance(node, ast.Call):
        return getattr(node.func, 'attr', getattr(node.func, 'id', '')) == 'timedelta'
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    return False


def _label(lines, body, index, node):
    """The comment block right above, the comments on and after the assignment, and a docstring after it."""
    text = []
    i = node.lineno - 2
    while i >= 0 and lines[i].lstrip().startswith('#'):
        text.append(lines[i])
        i -= 1
    text.extend(lines[node.lineno - 1:node.end_lineno])
    j = node.end_lineno
    while j < len(lines) and lines[j].lstrip().startswith('#'):
        text.append(lines[j])
        j += 1
    following = body[index + 1] if index + 1 < len(body) else None
    if isinstance(following, ast.Expr) and isinstance(getattr(following, 'value', None), ast.Constant) \
            and isinstance(following.value.value, str):
        text.append(following.value.value)
    return '\n'.join(text)


def _constants():
    for path in SOURCES:
        source = path.read_text(encoding='utf-8')
        lines = source.splitlines()
        body = ast.parse(source).body
        for index, node in enumerate(body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name.lstrip('_').isupper() and _numeric(node.value):
                    yield '%s:%s' % (path.relative_to(REPO), name), name, _label(lines, body, index, node)


CONSTANTS = list(_constants())


def test_the_scan_finds_the_known_tunables():
    names = set(c[1] for c in CONSTANTS)
    assert {'DEFAULT_TTL', 'DEFAULT_BACKOFF', 'DEFAULT_MAX_ATTEMPTS', 'KILL_GRACE', 'PAGE_SIZE'} <= names, names


@pytest.mark.parametrize('where, name, text', CONSTANTS, ids=[c[0] for c in CONSTANTS])
def test_every_tunable_number_says_whether_it_was_measured(where, name, text):
    if name in NOT_TUNABLES:
        return
    assert LABEL.search(text), '%s has no label: say "measured"/"reading" or "unmeasured guess" beside it (D13)' % where
    measured = re.search(r'\breading\b|\bmeasured\b(?! here)', re.sub('unmeasured', '', text, flags=re.I), re.I)
    if UNMEASURED.search(text) and not measured:
        assert EXPERIMENT.search(text), '%s is an unmeasured guess that names no experiment to settle it (D13)' % where
