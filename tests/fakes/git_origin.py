# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The forge's remote as a real git repository on local disk, for tests only git itself can prove
(D10 symlinked clone and dirty tree kept, D11 fetch outcome): a bare ``origin`` with one commit on
``main``, and the ``seed`` clone that pushed it (push more through it). No network; the commit
identity and config are the test's own (``GIT_CONFIG_GLOBAL=/dev/null``), never the host's.
"""
from __future__ import annotations

import os
import subprocess

IDENTITY = (('GIT_AUTHOR_NAME', 't'), ('GIT_AUTHOR_EMAIL', 't@example.invalid'),
            ('GIT_COMMITTER_NAME', 't'), ('GIT_COMMITTER_EMAIL', 't@example.invalid'),
            ('GIT_CONFIG_GLOBAL', os.devnull), ('GIT_CONFIG_NOSYSTEM', '1'))


def git(*args, cwd=None):
    """Run git; fail the test on a non-zero exit; its stdout, stripped."""
    return subprocess.run(['git'] + list(args), cwd=cwd, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True).stdout.strip()


def make_origin(tmp_path, monkeypatch, filename='README', text='one\n', message='one'):
    """``tmp_path/origin.git`` (bare) holding one commit of ``filename`` on main, pushed from
    ``tmp_path/seed``. Returns ``(origin, seed)`` paths."""
    for key, value in IDENTITY:
        monkeypatch.setenv(key, value)
    origin = tmp_path / 'origin.git'
    git('init', '-q', '--bare', '-b', 'main', str(origin))
    seed = tmp_path / 'seed'
    git('clone', '-q', str(origin), str(seed))
    (seed / filename).write_text(text)
    git('add', filename, cwd=str(seed))
    git('commit', '-q', '-m', message, cwd=str(seed))
    git('push', '-q', 'origin', 'HEAD:main', cwd=str(seed))
    return origin, seed
