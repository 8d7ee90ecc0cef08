# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake GitHub for tests: graphql-core executing the real public schema over in-memory data,
served over HTTP on loopback with the REST endpoints the GitHub board uses.

    from fakes.github import FakeGitHub
    with FakeGitHub(token='t') as gh:
        gh.store.add_project('acme', 1)
        gh.store.add_issue('acme/app', 'work', project=('acme', 1), status='Ready')
        board = GitHubBoard({'owner': 'acme', 'project': 1, 'token': 't', 'api_url': gh.url})

The schema comes from ../shared/github-schema (never copied into this repository).
"""

from .cost import Analysis, analyse
from .executor import SCHEMA_PATH, load_schema
from .server import FakeGitHub
from .store import Store

__all__ = ['Analysis', 'analyse', 'FakeGitHub', 'load_schema', 'SCHEMA_PATH', 'Store']
