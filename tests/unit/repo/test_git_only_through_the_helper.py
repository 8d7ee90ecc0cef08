# -*- coding: utf-8 -*-
"""Every git command the fleet runs is built by ``_host/git.py`` (``hardened_argv``): no other Python
file under plugins/ spells a git argv, so none can skip the hardening (the clone is the agent's)."""
from __future__ import annotations

import pathlib
import re

PLUGINS = pathlib.Path(__file__).resolve().parents[3] / 'plugins'
HELPER = PLUGINS / 'module_utils' / '_host' / 'git.py'
# a git argv: the word git (or a variable holding it) followed by -C, a subcommand the fleet runs, or -c
ARGV = re.compile(r"""\[\s*(['"]git['"]|[\w.]*git[\w.]*)\s*,\s*['"](-C|-c|fetch|worktree|status|checkout|rev-parse|rev-list|clone)['"]""")


def test_no_git_argv_outside_the_helper():
    found = []
    for path in sorted(PLUGINS.rglob('*.py')):
        if path == HELPER:
            continue
        for number, line in enumerate(path.read_text(encoding='utf-8').splitlines(), 1):
            if ARGV.search(line):
                found.append('%s:%d: %s' % (path.relative_to(PLUGINS), number, line.strip()))
    assert found == [], 'git argv outside _host/git.py (use Git / hardened_argv):\n' + '\n'.join(found)


def test_the_pattern_finds_the_argv_it_is_for():
    assert ARGV.search("rc, _o, err = git.runner.run([git.git, '-C', code_dir, 'checkout', sha])")
    assert ARGV.search("argv = ['git', 'fetch', 'origin']")
