# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who a token is and what it may do, as GitHub documents it: the fake's permission model.

Token kinds by prefix (docs.github.com/en/authentication/keeping-your-account-and-data-secure/
about-authentication-to-github#githubs-token-formats): ``ghp_`` personal access token (classic),
``github_pat_`` fine-grained personal access token, ``gho_`` OAuth access token, ``ghu_`` GitHub App
user access token, ``ghs_`` GitHub App installation access token, ``ghr_`` refresh token. A token
without a known prefix is taken as classic (the fake's old tests use such tokens).

* Classic and OAuth tokens carry *scopes*; GitHub lists them in the ``X-OAuth-Scopes`` response
  header (docs.github.com/en/apps/oauth-apps/building-oauth-apps/scopes-for-oauth-apps). ``repo``
  covers issues and pull requests of private repositories; ``project`` is read/write of projects,
  ``read:project`` read only; ``notifications`` (or ``repo``) reads notifications.
* Fine-grained and installation tokens carry *permissions* (``issues``, ``pull_requests``,
  ``organization_projects``, ``metadata``: ``read``/``write``); a refused REST call answers 403 with
  ``X-Accepted-GitHub-Permissions`` naming what it needs, sets separated by ``;``
  (github.blog/changelog/2023-08-10-x-accepted-github-permissions-header-for-fine-grained-permission-actors),
  and a GraphQL field answers ``null`` with a FORBIDDEN error at its path (partial data).
"""

from __future__ import annotations

from typing import Dict, Iterable, Optional

PREFIXES = (('github_pat_', 'fine_grained'), ('ghp_', 'classic'), ('gho_', 'oauth'), ('ghu_', 'user_to_server'),
            ('ghs_', 'installation'), ('ghr_', 'refresh'))

SCOPED = ('classic', 'oauth')
"""Kinds with OAuth scopes (and the only ones ``GET /notifications`` accepts: the endpoint is marked
``enabledForGitHubApps: false`` in @octokit/openapi, and fine-grained tokens are not listed for it)."""

ALL_SCOPES = ('repo', 'project', 'read:org', 'notifications')
ALL_PERMISSIONS = {'issues': 'write', 'pull_requests': 'write', 'organization_projects': 'write', 'metadata': 'read',
                   'contents': 'write'}
_LEVEL = {'none': 0, 'read': 1, 'write': 2, 'admin': 3}


def token_kind(token: str) -> str:
    for prefix, kind in PREFIXES:
        if str(token or '').startswith(prefix):
            return kind
    return 'classic'


class Grant(object):
    """What the fake's one token may do. ``scopes``/``permissions``: ``None`` means everything."""

    def __init__(self, token: str, scopes: Optional[Iterable[str]] = None, permissions: Optional[Dict[str, str]] = None,
                 forbidden_repos: Iterable[str] = ()):
        self.token = token
        self.kind = token_kind(token)
        self.scopes = list(ALL_SCOPES if scopes is None else scopes)
        self.permissions = dict(ALL_PERMISSIONS if permissions is None else permissions)
        self.forbidden_repos = set(forbidden_repos)

    @property
    def scoped(self) -> bool:
        return self.kind in SCOPED

    def can(self, permission: str, level: str = 'read', repo: Optional[str] = None) -> bool:
        if repo is not None and repo in self.forbidden_repos:
            return False
        if self.scoped:
            if permission in ('issues', 'pull_requests', 'contents', 'metadata'):
                return 'repo' in self.scopes or 'public_repo' in self.scopes
            if permission == 'organization_projects':
                return 'project' in self.scopes or (level == 'read' and 'read:project' in self.scopes)
            if permission == 'notifications':
                return 'notifications' in self.scopes or 'repo' in self.scopes
            return False
        if permission == 'notifications':
            return False
        return _LEVEL.get(self.permissions.get(permission, 'none'), 0) >= _LEVEL[level]

    def forbidden_message(self) -> str:
        """GitHub's words for a refusal by permission (the message differs by actor)."""
        if self.kind == 'fine_grained':
            return 'Resource not accessible by personal access token'
        return 'Resource not accessible by integration'

    def headers(self) -> Dict[str, str]:
        """Headers GitHub adds to every answer for this token."""
        if self.scoped:
            return {'x-oauth-scopes': ', '.join(self.scopes)}
        return {}
