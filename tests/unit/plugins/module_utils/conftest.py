# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake GitHub for the board, runner and playbook tests in this directory.

``fake_github(token, **kw)`` starts a ``FakeGitHub`` on loopback that executes the public schema
(``../shared/github-schema``; the test skips, saying why, where it is absent), with the project
acme/1 already on it, and stops it when the test ends. ``kw`` goes to ``FakeGitHub`` (``rate_limit``).
"""
from __future__ import annotations

import contextlib

import pytest

from fakes.github import FakeGitHub

PROJECT = ('acme', 1)


@pytest.fixture
def fake_github(shared_dir):
    path = shared_dir / 'github-schema' / 'schema.graphql'
    if not path.is_file():
        pytest.skip('%s is absent: the fake GitHub executes that schema' % path)
    with contextlib.ExitStack() as stack:
        def start(token, **kw):
            fake = FakeGitHub(token=token, schema_path=str(path), **kw)
            fake.store.add_project(*PROJECT)
            return stack.enter_context(fake)
        yield start
