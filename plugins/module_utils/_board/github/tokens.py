# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a GitHub token is and what the board needs it to do: the token preflight's facts.

Pure functions over the token's prefix and the headers GitHub answered with; no I/O. The board
(``board.py``) calls ``preflight`` once per instance and shows the result in its read's
``cost['token']`` (board_info, status). Which token for which role: ``docs/github-tokens.md``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

# GitHub's token formats (docs.github.com/en/authentication/keeping-your-account-and-data-secure/
# about-authentication-to-github#githubs-token-formats). Longest prefix first.
KINDS = (
    ('github_pat_', 'fine_grained', 'fine-grained personal access token'),
    ('ghp_', 'classic', 'personal access token (classic)'),
    ('gho_', 'oauth', 'OAuth app access token'),
    ('ghu_', 'user_to_server', 'GitHub App user access token'),
    ('ghs_', 'installation', 'GitHub App installation access token'),
    ('ghr_', 'refresh', 'GitHub App refresh token (not usable for API calls)'),
)

TOKEN_ENV = ('FLEET_GITHUB_TOKEN', 'GITHUB_TOKEN', 'GH_TOKEN')
"""Where the token comes from when the board option ``token`` is unset, first set wins: the fleet's own name
(what roles/sweeper and roles/worker put in their 0600 credentials files), then the names ``gh`` and
Actions use."""

SCOPED = ('classic', 'oauth')
"""Kinds with OAuth scopes, listed by GitHub in the ``X-OAuth-Scopes`` header of every answer
(docs.github.com/en/apps/oauth-apps/building-oauth-apps/scopes-for-oauth-apps)."""

# What each board operation needs, in both models. Fine-grained names are GitHub's permission
# names (docs.github.com/en/rest/authentication/permissions-required-for-fine-grained-personal-access-tokens
# and .../permissions-required-for-github-apps): "Issues" covers issue comments and state,
# "Pull requests" the closing pull requests, "Projects" (organization permission; for a user's
# project a fine-grained token's account permission) the board and its status field.
NEEDS = (
    # operation, fine-grained permission, classic scopes that grant it (any one)
    ('read the board', 'Projects: read', ('read:project', 'project')),
    ('read items and comments', 'Issues: read', ('repo', 'public_repo')),
    ('read completion (closing pull requests)', 'Pull requests: read', ('repo', 'public_repo')),
    ('set the status field', 'Projects: write', ('project',)),
    ('post markers and close items', 'Issues: write', ('repo', 'public_repo')),
)

NOTIFICATIONS = ('read notifications (option mentions: notifications)', 'not available', ('notifications', 'repo'))
"""``GET /notifications`` takes a classic or OAuth token only (@octokit/openapi marks it
``enabledForGitHubApps: false``; fine-grained tokens are not listed for it)."""


def kind_of(token: str) -> Dict[str, str]:
    """``{'kind', 'name'}`` from the token's prefix; a token without one is ``unknown`` (a classic
    token from before 2021's formats, or one of a GitHub Enterprise Server that predates them)."""
    text = str(token or '')
    for prefix, kind, name in KINDS:
        if text.startswith(prefix):
            return {'kind': kind, 'name': name}
    return {'kind': 'unknown', 'name': 'token without a known prefix (a classic token from before 2021?)'}


def scopes_of(headers: Dict[str, str]) -> Optional[List[str]]:
    """The ``X-OAuth-Scopes`` header as a list, or ``None`` when GitHub sent none (not a scoped token)."""
    value = (headers or {}).get('x-oauth-scopes')
    if value is None:
        return None
    return [s.strip() for s in str(value).split(',') if s.strip()]


def accepted_permissions(headers: Dict[str, str]) -> List[List[str]]:
    """``X-Accepted-GitHub-Permissions``: alternative sets separated by ``;``, each a ``,`` list of
    ``name=level`` (github.blog/changelog/2023-08-10-x-accepted-github-permissions-header-for-fine-grained-permission-actors)."""
    value = (headers or {}).get('x-accepted-github-permissions')
    if not value:
        return []
    return [[p.strip() for p in one.split(',') if p.strip()] for one in str(value).split(';') if one.strip()]


def preflight(token: str, headers: Dict[str, str], *, login: str = '', mentions: str = 'comments',
              refused: Iterable[str] = ()) -> Dict[str, Any]:
    """The preflight record: token kind, identity, what each operation needs, what is missing, the fix.

    A scoped token (classic, OAuth) is judged by its scopes. A fine-grained or installation token
    cannot be asked for its own permissions; its ``missing`` is what GitHub refused so far
    (``refused``: fine-grained permission names, from FORBIDDEN answers), and the write
    permissions it was never refused are ``unverified`` -- found out by the first write.
    """
    kind = kind_of(token)
    scopes = scopes_of(headers)
    scoped = kind['kind'] in SCOPED or (kind['kind'] == 'unknown' and scopes is not None)
    needs = list(NEEDS) + ([NOTIFICATIONS] if mentions == 'notifications' else [])
    ops = []
    missing = []
    unverified = []
    refused = list(refused or ())
    for operation, permission, grant in needs:
        entry = {'operation': operation, 'needs': ' or '.join('scope %s' % g for g in grant) if scoped else permission}
        if scoped:
            ok = scopes is None or any(g in scopes for g in grant)
            entry['ok'] = ok
        elif permission == 'not available':
            entry['ok'] = False
        elif permission in refused:
            entry['ok'] = False
        else:
            entry['ok'] = None if permission.endswith(': write') else True
        if entry['ok'] is False:
            missing.append(entry['needs'] if scoped or permission != 'not available' else operation)
        elif entry['ok'] is None:
            unverified.append(permission)
        ops.append(entry)
    fix = ''
    if missing:
        if scoped:
            wanted = set(m.replace('scope ', '').split(' or ')[0] for m in missing)
            if 'project' in wanted:
                wanted.discard('read:project')  # project is read and write
            fix = 'add the scopes %s to the token (github.com/settings/tokens), or use a GitHub App' % ', '.join(sorted(wanted))
        elif kind['kind'] == 'installation':
            fix = 'grant the GitHub App %s (app settings, Permissions) and accept the new permissions on the installation' % \
                ', '.join(sorted(set(missing)))
        else:
            fix = 'give the token %s (github.com/settings/personal-access-tokens), for every repository on the board' % \
                ', '.join(sorted(set(missing)))
        if mentions == 'notifications' and not scoped:
            fix += '; mentions: notifications needs a classic token -- use the default, mentions from comments'
    return {'kind': kind['kind'], 'name': kind['name'], 'login': login, 'scopes': scopes, 'operations': ops,
            'missing': missing, 'unverified': unverified, 'fix': fix, 'ok': not missing}


__all__ = ['KINDS', 'NEEDS', 'kind_of', 'scopes_of', 'accepted_permissions', 'preflight']
