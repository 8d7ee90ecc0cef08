# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitHub Projects v2 board: the ``Board`` protocol over GitHub's GraphQL and REST APIs.

The board *is* the queue, read live: one paginated GraphQL query a cycle with the status filter on
the server, cheap fields on the page, expensive ones per candidate. This file sets a board up from its
spec; the calls are in ``client.py``, the reads in ``reads.py``, the writes in ``writes.py``, the
mentions in ``mentions.py`` and the announcer's reports in ``reports.py``. The documents it sends are in
``documents.py``, the HTTP in ``transport.py``, the reading of GitHub's nodes in ``nodes.py`` and
the token preflight in ``tokens.py``.

The rules in full, with their reasons: ``docs/internals.md``, section "The GitHub board".
"""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any, Dict, List, Optional, Tuple

from . import tokens
from .memory import DEFAULT_FULL_READ_EVERY
from .mentions import GitHubMentions
from .nodes import ROUTE_FIELDS
from .reports import GitHubReports
from .transport import RATE_LIMIT_MAX_WAIT, SECONDARY_MAX_TOTAL, Transport
from .writes import GitHubWrites
from ..protocol import Board, BoardError, BoardUnreadable


class GitHubBoard(GitHubMentions, GitHubReports, GitHubWrites, Board):
    """The GitHub Projects v2 board (see the module docstring for D1, D2, D5, D9, D12, D16, D19).

    Spec keys: ``owner``, ``project`` (number), ``status_field`` (``Status``), ``ready``
    (``Ready``), ``agent_field``/``model_field``/``effort_field``/``priority_field``/``budget_field`` (the route,
    priority and item budget fields, ``Agent``/``Model``/``Effort``/``Priority``/``Budget``), ``token`` (else the
    first of ``tokens.TOKEN_ENV`` set), ``api_url``
    (``https://api.github.com``), ``owner_type`` (``organization``/``user``/``auto``), ``repo``
    (optional ``owner/name`` for bare item numbers), ``read_memory`` (a file path: skip re-reading
    items whose page row has not moved, ``memory.py``) and ``full_read_every`` (cycles, default
    ``memory.DEFAULT_FULL_READ_EVERY``). For tests and the runner: ``session`` (a
    ``requests.Session``-like object), ``sleep`` (callable), ``clock`` (callable -> aware datetime),
    ``rate_limit_max_wait`` (seconds).
    """

    kind = 'github'

    def __init__(self, spec: Dict[str, Any]):
        spec = dict(spec or {})
        self.owner = spec.get('owner') or ''
        try:
            self.project = int(spec.get('project'))
        except (TypeError, ValueError):
            raise BoardError('a github board needs "project": the project number (the N in '
                             '/orgs/OWNER/projects/N), got %r' % (spec.get('project'),))
        if not self.owner:
            raise BoardError('a github board needs "owner": the organization or user that owns the project')
        self.status_field = spec.get('status_field') or 'Status'
        # the route and priority fields (docs/usage.md "Routing and priority"); a project without one reads no route
        self.route_fields = dict((key, str(spec.get(key + '_field') or default)) for key, default in ROUTE_FIELDS)
        self.ready = spec.get('ready') or 'Ready'
        self.owner_type = spec.get('owner_type') or 'auto'
        if self.owner_type not in ('auto', 'organization', 'user'):
            raise BoardError('owner_type must be auto, organization or user, got %r' % (self.owner_type,))
        self.default_repo = spec.get('repo') or ''
        self.base_branch = spec.get('base_branch') or ''
        self.mention_mode = spec.get('mentions') or 'comments'
        if self.mention_mode not in ('comments', 'notifications'):
            raise BoardError('mentions must be comments or notifications, got %r' % (self.mention_mode,))
        self.mention_handles = [str(h) for h in spec.get('mention_handles') or []]
        self.marker_authors = [str(a) for a in spec.get('marker_authors') or []]
        # MEMBER (organization membership) is trusted standing only when the operator says so (_core.board.mentions)
        self.trust_members = spec.get('trust_members') is True
        api_url = spec.get('api_url') or 'https://api.github.com'
        self.location = '%s %s/projects/%s' % (api_url.rstrip('/'), self.owner, self.project)
        self.read_memory = spec.get('read_memory') or ''
        every = spec.get('full_read_every')
        self.full_read_every = DEFAULT_FULL_READ_EVERY if every is None else every
        if isinstance(self.full_read_every, bool) or not isinstance(self.full_read_every, int) or self.full_read_every < 1:
            raise BoardError('full_read_every must be a positive number of cycles, got %r' % (every,))
        token = spec.get('token') or next((os.environ[n] for n in tokens.TOKEN_ENV if os.environ.get(n)), '')
        if not token:
            raise BoardUnreadable('no GitHub token: set the board option "token" (no_log) or one of the '
                                  'environment variables %s on the machine that reads the board' % ', '.join(tokens.TOKEN_ENV))
        self._http = Transport(api_url, token, session=spec.get('session'), sleep=spec.get('sleep'),
                               clock=spec.get('clock'),
                               max_wait=spec.get('rate_limit_max_wait', RATE_LIMIT_MAX_WAIT),
                               max_total=spec.get('rate_limit_max_total', SECONDARY_MAX_TOTAL))
        self._rate_limits = []  # type: List[Dict[str, Any]]
        self._is_org = None  # type: Optional[bool]
        self._field = None  # type: Optional[Dict[str, Any]]
        self._project_id = None  # type: Optional[str]
        # (repo, number) -> (project item id, status): filled by reads of this instance only.
        self._project_items = {}  # type: Dict[Tuple[str, int], Tuple[str, str]]
        self._token = token
        self._checked = None  # type: Optional[Dict[str, Any]]
        self._login = ''
        self._refused = set()  # type: set
        self._posted = set()  # type: set
        self._skipped = {}  # type: Dict[str, List[Dict[str, Any]]]
        self._permissions = {}  # type: Dict[Tuple[str, str], str]
        # GET /notifications polling state, this instance only (no state file): Last-Modified,
        # the time X-Poll-Interval allows the next poll, and the threads of the last 200.
        self._last_modified = None  # type: Optional[str]
        self._poll_after = None  # type: Optional[_dt.datetime]
        self._threads = None  # type: Optional[List[Dict[str, Any]]]
