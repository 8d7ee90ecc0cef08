# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The import graph of plugins/ (read with ast, every import, also those inside functions):
no cycle anywhere, and imports only point down the layers of docs/architecture.md --

    decisions (_core)  <  adapters (_board, _store, _host)  <  the runner (_runner)  <  thin
    (modules, lookup, action, filter, doc_fragments, and the flat module_utils helpers they share)

Inside the decisions, the topics are layered too: board (the model, markers, references, naming)
< outcome (what a run's end means) < chains < dispatch (the guarded path's steps).

Nothing in module_utils imports Ansible (the runner and the decisions run without it), and the
decisions import no I/O, process or clock module (time is a parameter).
"""
from __future__ import annotations

import ast
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
PREFIX = 'ansible_collections.fleet.dispatch.'
LAYERS = {'decisions': 0, 'adapters': 1, 'runner': 2, 'thin': 3}
MU = 'plugins.module_utils.'
PACKAGES = {'_core': 'decisions', '_board': 'adapters', '_store': 'adapters', '_host': 'adapters', '_runner': 'runner'}
TOPICS = {'board': 0, 'outcome': 1, 'chains': 2, 'dispatch': 3}
"""The sub-packages of ``_core``, lowest first: a topic imports only its own and lower ones."""
NO_IO = frozenset(['os', 'io', 'subprocess', 'socket', 'sqlite3', 'shutil', 'time', 'tempfile', 'fcntl', 'signal',
                   'urllib', 'http', 'requests', 'psycopg', 'pwd'])


def layer(module):
    """The layer of a dotted module name under plugins/."""
    if module.startswith(MU):
        head = module[len(MU):].split('.')[0]
        return PACKAGES.get(head, 'thin')     # a flat module_utils file is a helper of the thin layer
    return 'thin'


def modules(root=REPO):
    """``{dotted name: path}`` of every Python file under plugins/ (a package is its ``__init__``)."""
    out = {}
    for path in sorted((root / 'plugins').rglob('*.py')):
        parts = list(path.relative_to(root).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        out['.'.join(parts)] = path
    return out


def imports_of(name, path, known):
    """``(targets in the tree, external top-level names)`` that ``name`` imports."""
    tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    inside, outside = set(), set()

    def add(dotted, names=()):
        if dotted.startswith(PREFIX):
            dotted = dotted[len(PREFIX):]
        elif dotted.split('.')[0] != 'plugins':
            outside.add(dotted.split('.')[0])
            return
        hit = False
        for alias in names:
            if '%s.%s' % (dotted, alias) in known:   # from package import module
                inside.add('%s.%s' % (dotted, alias))
                hit = True
        if not hit and dotted in known:
            inside.add(dotted)
        elif not hit:
            raise AssertionError('%s imports %s, which is not a file under plugins/' % (name, dotted))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')
                base = base[:len(base) - (node.level - 1)]
                dotted = '.'.join(base + ([node.module] if node.module else []))
            else:
                dotted = node.module
            if dotted == '__future__':
                continue
            add(dotted, [a.name for a in node.names])
    inside.discard(name)
    return inside, outside


def graph(root=REPO):
    known = modules(root)
    edges, external = {}, {}
    for name, path in known.items():
        edges[name], external[name] = imports_of(name, path, known)
    return edges, external


def cycles(edges):
    """Every strongly connected component with more than one module (Tarjan), as sorted lists."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def upward(edges):
    """Every import that points up a layer, as ``'a (layer) -> b (layer)'``."""
    return ['%s (%s) -> %s (%s)' % (a, layer(a), b, layer(b))
            for a in sorted(edges) for b in sorted(edges[a]) if LAYERS[layer(b)] > LAYERS[layer(a)]]


def topic(module):
    """The ``_core`` topic of a dotted module name under plugins/, or None outside ``_core``."""
    if module.startswith(MU + '_core.'):
        return module[len(MU + '_core.'):].split('.')[0]
    return None


def upward_topics(edges):
    """Every import inside ``_core`` that points up a topic (or into a topic not in TOPICS)."""
    bad = []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            ta, tb = topic(a), topic(b)
            if ta is None or tb is None:
                continue
            if ta not in TOPICS or tb not in TOPICS or TOPICS[tb] > TOPICS[ta]:
                bad.append('%s (%s) -> %s (%s)' % (a, ta, b, tb))
    return bad


def forbidden_externals(external):
    """module_utils imports no Ansible; the decisions import no I/O, process or clock module."""
    bad = []
    for name in sorted(external):
        if name.startswith(MU) and 'ansible' in external[name]:
            bad.append('%s imports ansible' % name)
        if layer(name) == 'decisions':
            bad += ['%s (a decision) imports %s' % (name, m) for m in sorted(external[name] & NO_IO)]
    return bad


EDGES, EXTERNAL = graph()


def test_the_graph_sees_relative_and_lazy_imports():
    """A graph that lost its edges would pass every check below: pin a few known ones."""
    assert MU + '_core.board.markers' in EDGES[MU + '_runner.run']                   # from .._core.board.markers import
    assert MU + '_board.ledger' in EDGES[MU + '_board.factory']                # lazy, inside open_board
    assert MU + '_core.dispatch.plan' in EDGES['plugins.action.guard']                  # absolute collection import
    assert {layer(m) for m in EDGES} == set(LAYERS)


def test_no_import_cycle():
    found = cycles(EDGES)
    assert not found, 'import cycles (move the shared part down a file):\n' + '\n'.join(' <-> '.join(c) for c in found)


def test_imports_point_down_the_layers():
    found = upward(EDGES)
    assert not found, 'imports that point up a layer:\n' + '\n'.join(found)


def test_decision_topics_point_down():
    found = upward_topics(EDGES)
    assert not found, 'imports that point up a _core topic (%s, lowest first):\n' % ', '.join(
        sorted(TOPICS, key=TOPICS.get)) + '\n'.join(found)


def test_every_decision_is_in_a_topic():
    loose = sorted(m for m in EDGES if m.startswith(MU + '_core.') and topic(m) not in TOPICS)
    assert not loose, 'decisions outside the topics %s: %s' % (sorted(TOPICS), loose)


def test_the_topic_check_catches_a_violation():
    edges = {MU + '_core.board.naming': {MU + '_core.dispatch.plan'}, MU + '_core.dispatch.plan': {MU + '_core.board.model'},
             MU + '_core.stray': set()}
    assert upward_topics(edges) == [MU + '_core.board.naming (board) -> ' + MU + '_core.dispatch.plan (dispatch)']


def test_module_utils_imports_no_ansible_and_decisions_no_io():
    found = forbidden_externals(EXTERNAL)
    assert not found, '\n'.join(found)


@pytest.mark.parametrize('edges, cyc, up', [
    ({MU + '_core.a': {MU + '_core.b'}, MU + '_core.b': {MU + '_core.a'}}, [[MU + '_core.a', MU + '_core.b']], []),
    ({MU + '_core.a': {MU + '_host.cmd'}, MU + '_host.cmd': set()}, [], [MU + '_core.a (decisions) -> ' + MU + '_host.cmd (adapters)']),
    ({MU + '_board.x': {MU + '_runner.run'}, MU + '_runner.run': {MU + '_board.x'}},
     [[MU + '_board.x', MU + '_runner.run']], [MU + '_board.x (adapters) -> ' + MU + '_runner.run (runner)']),
    ({MU + '_host.cmd': {MU + '_argspec'}, MU + '_argspec': set()}, [], [MU + '_host.cmd (adapters) -> ' + MU + '_argspec (thin)']),
])
def test_the_checks_catch_a_violation(edges, cyc, up):
    """The checks themselves fail on a cycle and on an upward import (negative controls)."""
    assert cycles(edges) == cyc
    assert upward(edges) == up


def test_the_external_check_catches_ansible_and_io():
    ext = {MU + '_host.cmd': {'ansible', 'os'}, MU + '_core.x': {'time', 're'}, 'plugins.modules.launch': {'ansible'}}
    assert forbidden_externals(ext) == [MU + '_core.x (a decision) imports time', MU + '_host.cmd imports ansible']


def _closure(roots):
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(EDGES.get(name, ()))
    return seen


def test_the_guard_action_warms_what_the_filters_and_the_lookups_import():
    """The cycle's controller tasks inherit plugins/action/guard.py's imports (the strategy loads an action's class
    in the controller's own process, before it forks the task workers): it imports every module of the collection
    that a filter or a lookup plugin imports (and so psycopg, when the lease store has it), or a task that names
    one filter pays for all of them in its own worker again."""
    plugins = [m for m in EDGES if m.startswith(('plugins.filter.', 'plugins.lookup.'))]
    assert plugins, 'no filter or lookup plugin found'
    needed = set(m for m in _closure(plugins) if not m.startswith(('plugins.filter.', 'plugins.lookup.')))
    missing = sorted(needed - _closure(['plugins.action.guard']))
    assert not missing, 'plugins/action/guard.py does not import (warm) %s' % missing
