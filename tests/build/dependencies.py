# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every collection the shipped content uses is declared: galaxy.yml for what ships, tests/requirements.yml
for what only the tests use (molecule's podman driver, its callbacks).

A collection reference is a module/action key of a task, an ``include_role``/``import_role``/``roles:`` name,
a ``lookup(...)``/``query(...)`` name, a filter or test after ``|``/``is``, an ``extends_documentation_fragment``,
or any other dotted triple whose ``namespace.name`` is a collection known here (the pinned ``ansible``
package's collections). ``ansible.builtin`` and this collection need no declaration.

    python tests/build/dependencies.py [REPO]    # prints the count; exit 1 naming each undeclared one
    python tests/build/dependencies.py --install-declared DEST   # galaxy.yml's dependencies, offline
"""
from __future__ import annotations

import ast
import importlib.util
import json
import pathlib
import re
import shutil
import sys

import yaml

OWN = 'fleet.dispatch'
BUILTIN = frozenset(('ansible.builtin', 'ansible.legacy', OWN))
# The parts of the tree that ship (galaxy.yml's build_ignore keeps tests/ and molecule out of users' hands
# only in spirit: molecule/ is inside roles/, so it is split off by path below).
SHIPPED = ('roles', 'playbooks', 'plugins', 'extensions', 'meta')
# where the tests use collections (the unit tests' fixtures name collections as data, not as uses)
TESTS = ('tests/integration', 'tests/testbed')
TEXT_SUFFIXES = ('.yml', '.yaml', '.j2', '.py')
TRIPLE = re.compile(r'(?<![\w.\-/])([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)(?![\w\-/])')
CALL = re.compile(r"""\b(?:lookup|query|q)\(\s*['"]([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*)['"]""")
PIPE = re.compile(r'(?:\||\bis(?:\s+not)?)\s*([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*)\b')
TASK_KEYS = frozenset((
    'name', 'when', 'loop', 'with_items', 'register', 'vars', 'tags', 'become', 'become_user', 'become_method',
    'delegate_to', 'delegate_facts', 'run_once', 'notify', 'listen', 'changed_when', 'failed_when', 'until',
    'retries', 'delay', 'ignore_errors', 'ignore_unreachable', 'no_log', 'environment', 'args', 'loop_control',
    'check_mode', 'diff', 'async', 'poll', 'any_errors_fatal', 'throttle', 'timeout', 'connection', 'module_defaults',
    'block', 'rescue', 'always', 'collections', 'debugger', 'local_action', 'action',
))


def known_collections(roots):
    """``namespace.name`` of every collection installed under the given ``ansible_collections`` roots."""
    found = set()
    for root in roots:
        root = pathlib.Path(root)
        for manifest in root.glob('*/*/MANIFEST.json'):
            found.add('%s.%s' % (manifest.parent.parent.name, manifest.parent.name))
    return found


def default_roots():
    roots = []
    for entry in sys.path:
        cand = pathlib.Path(entry) / 'ansible_collections'
        if cand.is_dir():
            roots.append(cand)
    return roots


def _tasks(node, out):
    """Collect FQCN action keys and role names from a parsed task/play list."""
    if isinstance(node, list):
        for n in node:
            _tasks(n, out)
        return
    if not isinstance(node, dict):
        return
    for key in ('tasks', 'pre_tasks', 'post_tasks', 'handlers', 'block', 'rescue', 'always'):
        if key in node:
            _tasks(node[key], out)
    for role in node.get('roles', []) if isinstance(node.get('roles'), list) else []:
        name = role.get('role', role.get('name')) if isinstance(role, dict) else role
        if isinstance(name, str):
            out.add(name)
    for key, value in node.items():
        if key in TASK_KEYS or not isinstance(key, str) or key.count('.') != 2:
            continue
        out.add(key)
        if key.endswith(('.include_role', '.import_role')) and isinstance(value, dict) and isinstance(value.get('name'), str):
            out.add(value['name'])
    if isinstance(node.get('action'), str):
        out.add(node['action'].split()[0])


def _plugin_docs(text):
    """The YAML documentation strings of a plugin file (DOCUMENTATION, EXAMPLES, RETURN)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    docs = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            if any(isinstance(t, ast.Name) and t.id in ('DOCUMENTATION', 'EXAMPLES', 'RETURN') for t in node.targets):
                docs.append(node.value.value)
    return docs


def references(path, text, known):
    """Every collection FQCN ``path`` refers to (a set of 'ns.name.thing')."""
    refs = set()
    chunks = [text]
    if path.suffix == '.py':
        for chunk in _plugin_docs(text):
            try:
                doc = yaml.safe_load(chunk)
            except yaml.YAMLError:
                continue
            _tasks(doc, refs)
            if isinstance(doc, dict):
                frag = doc.get('extends_documentation_fragment') or []
                for f in [frag] if isinstance(frag, str) else frag:
                    if isinstance(f, str) and f.count('.') >= 2:
                        refs.add(f)
    elif path.suffix in ('.yml', '.yaml'):
        try:
            _tasks(yaml.safe_load(text), refs)
        except yaml.YAMLError:
            pass
    for chunk in chunks:
        refs.update(m.group(1) for m in CALL.finditer(chunk))
        refs.update(m.group(1) for m in PIPE.finditer(chunk))
        for m in TRIPLE.finditer(chunk):
            if '%s.%s' % (m.group(1), m.group(2)) in known and not (path.suffix == '.py' and _python_module(m.group(0))):
                refs.add(m.group(0))
    return {r for r in refs if r.count('.') >= 2}


def _python_module(dotted):
    """True for a Python import path of ansible-core (``ansible.utils.display``), which is no collection."""
    if not dotted.startswith('ansible.'):
        return False
    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError):
        return False


def collection_of(fqcn):
    return '.'.join(fqcn.split('.')[:2])


def declared(repo):
    galaxy = yaml.safe_load((repo / 'galaxy.yml').read_text()) or {}
    shipped = set((galaxy.get('dependencies') or {}).keys())
    tests = set()
    req = repo / 'tests' / 'requirements.yml'
    if req.exists():
        for c in (yaml.safe_load(req.read_text()) or {}).get('collections', []) or []:
            tests.add(c['name'] if isinstance(c, dict) else c)
    return shipped, tests


def files(repo, tops):
    for top in tops:
        base = repo / top
        if not base.exists():
            continue
        for p in sorted(base.rglob('*')):
            if p.is_file() and p.suffix in TEXT_SUFFIXES and '__pycache__' not in p.parts:
                yield p


def builtin_redirects():
    """``{name: target}`` for each ``ansible.builtin.<name>`` that ansible-core only redirects to another
    collection (``config/ansible_builtin_runtime.yml``) and does not ship itself: ``ansible.builtin.filetree``
    is community.general's lookup, so a role using it needs community.general declared."""
    import ansible
    core = pathlib.Path(ansible.__file__).parent
    routing = (yaml.safe_load((core / 'config' / 'ansible_builtin_runtime.yml').read_text(encoding='utf-8')) or {})
    shipped = set(p.stem for p in core.glob('modules/*.py')) | set(p.stem for p in core.glob('plugins/*/*.py'))
    out = {}
    for _kind, entries in (routing.get('plugin_routing') or {}).items():
        for name, route in (entries or {}).items():
            target = (route or {}).get('redirect') or ''
            if target and not target.startswith('ansible.builtin.') and name not in shipped:
                out[name] = target
    return out


def check(repo, known=None, redirects=None):
    """(problems, summary): one problem line per undeclared collection, naming a file that uses it."""
    repo = pathlib.Path(repo)
    redirects = builtin_redirects() if redirects is None else redirects
    known = set(known if known is not None else known_collections(default_roots()))
    shipped_decl, tests_decl = declared(repo)
    known |= shipped_decl | tests_decl
    used = {}   # collection -> (kind, first file)
    count = 0
    for kind, tops in (('shipped', SHIPPED), ('tests', TESTS)):
        for path in files(repo, tops):
            rel = path.relative_to(repo)
            k = 'tests' if kind == 'tests' or 'molecule' in rel.parts else 'shipped'
            for ref in references(path, path.read_text(encoding='utf-8', errors='replace'), known):
                if ref.startswith('ansible.builtin.') and ref.split('.', 2)[2] in redirects:
                    ref = '%s (redirected from %s)' % (redirects[ref.split('.', 2)[2]], ref)
                coll = collection_of(ref.split(' ')[0])
                if coll in BUILTIN:
                    count += 1
                    continue
                if coll.startswith('ansible.') and coll not in known:
                    continue    # a Python import path (ansible.module_utils.basic), not a collection
                count += 1
                prev = used.get(coll)
                if prev is None or (prev[0] == 'tests' and k == 'shipped'):
                    used[coll] = (k, str(rel), ref)
    problems = []
    for coll, (k, rel, ref) in sorted(used.items()):
        if k == 'shipped' and coll not in shipped_decl:
            problems.append("%s (%s in %s) is not declared in galaxy.yml 'dependencies': add it there with the "
                            "version range the content needs" % (coll, ref, rel))
        elif k == 'tests' and coll not in shipped_decl | tests_decl:
            problems.append("%s (%s in %s) is used by the tests only and is not in tests/requirements.yml: add it there"
                            % (coll, ref, rel))
    summary = '%d collection references; collections used: %s' % (
        count, ', '.join(sorted(set(used) | {'ansible.builtin', OWN})))
    return problems, summary


def install_declared(repo, dest, roots=None):
    """Copy each collection galaxy.yml declares from the pinned ``ansible`` package into ``dest`` (offline).

    Returns the problems (a declared collection no root ships)."""
    shipped_decl = declared(pathlib.Path(repo))[0]
    roots = default_roots() if roots is None else roots
    problems = []
    for coll in sorted(shipped_decl):
        ns, name = coll.split('.')
        src = next((pathlib.Path(r) / ns / name for r in roots if (pathlib.Path(r) / ns / name / 'MANIFEST.json').is_file()), None)
        if src is None:
            problems.append("%s is declared in galaxy.yml but the pinned ansible package (requirements-dev.txt) does "
                            "not ship it: pin a package that does, or add an offline source for it" % coll)
            continue
        target = pathlib.Path(dest) / 'ansible_collections' / ns / name
        if target.exists():
            shutil.rmtree(str(target))
        shutil.copytree(str(src), str(target), ignore=shutil.ignore_patterns('__pycache__'))
        version = json.loads((src / 'MANIFEST.json').read_text())['collection_info']['version']
        print('dependencies: %s %s installed offline from %s' % (coll, version, src))
    return problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['--install-declared']:
        problems = install_declared(pathlib.Path(__file__).resolve().parents[2], argv[1])
        for p in problems:
            print('dependencies: ' + p, file=sys.stderr)
        return 1 if problems else 0
    repo = pathlib.Path(argv[0] if argv else pathlib.Path(__file__).resolve().parents[2])
    problems, summary = check(repo)
    for p in problems:
        print('dependencies: ' + p, file=sys.stderr)
    print('dependencies: ' + summary + ('' if not problems else '; %d undeclared' % len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
