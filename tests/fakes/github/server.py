# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake GitHub over HTTP on loopback: ``POST /graphql`` plus the REST endpoints the board uses.

REST: issues (``GET``/``POST /repos/O/R/issues``, ``GET``/``PATCH /repos/O/R/issues/N``), comments (``GET``/``POST .../comments``,
``GET /repos/O/R/issues/comments/ID``), dependencies (``GET``/``POST .../dependencies/blocked_by``,
``DELETE .../blocked_by/ID``), notifications (``GET /notifications``,
``PATCH /notifications/threads/ID``). Anything else is a 404 with GitHub's JSON error body.

Faults are scripted with ``FakeGitHub.inject`` (status, body, headers, how many times), so tests
can play a secondary rate limit, a 404 body or a 200 with ``errors`` exactly as GitHub sends them.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional
from urllib.parse import parse_qs, urlsplit

from . import executor as _executor
from .auth import Grant
from .store import Store, UTC, iso

NOT_FOUND = {'message': 'Not Found', 'documentation_url': 'https://docs.github.com/rest', 'status': '404'}


class FakeGitHub(object):
    """A GitHub that answers on ``http://127.0.0.1:<ephemeral>`` from a thread.

    ``with FakeGitHub(token='t') as gh: gh.store.add_issue(...); spec['api_url'] = gh.url``.
    ``gh.log`` records every request (method, path, operation name, status).
    """

    def __init__(self, token: str = 'test-token', viewer: str = 'fleet-bot', clock=None, rate_limit: int = 5000,
                 schema_path: Optional[str] = None, scopes=None, permissions=None, forbidden_repos=(),
                 content_per_minute: int = 80, graphql_points_per_minute: int = 2000, date_clock=None):
        self.token = token
        # the clock of the answers' Date header: the real one unless given (the store's clock dates the data, and
        # tests set it apart from the Date to age what the board holds); GitHub's own clock is both
        self.date_clock = date_clock
        self.grant = Grant(token, scopes=scopes, permissions=permissions, forbidden_repos=forbidden_repos)
        self.content_per_minute = content_per_minute
        self.graphql_points_per_minute = graphql_points_per_minute
        self._minute = {}  # type: Dict[str, List[Any]]
        self.store = Store(viewer=viewer, clock=clock)
        self.schema = _executor.load_schema(schema_path)
        reset = (_dt.datetime.now(UTC) + _dt.timedelta(hours=1)).replace(microsecond=0)
        self.rate_limit = {'limit': rate_limit, 'used': 0, 'resetAt': iso(reset), 'reset_epoch': int(reset.timestamp())}
        self.log = []  # type: List[Dict[str, Any]]
        self._faults = []  # type: List[Dict[str, Any]]
        self._server = None
        self._thread = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> 'FakeGitHub':
        handler = type('Handler', (_Handler,), {'fake': self})
        self._server = ThreadingHTTPServer(('127.0.0.1', 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={'poll_interval': 0.02},
                                        name='fake-github', daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return 'http://%s:%d' % (host, port)

    # -- scripting --------------------------------------------------------------------------
    def inject(self, status: int, body: Any = None, *, headers: Optional[Dict[str, str]] = None, method: str = '*',
               path: str = '.*', operation: Optional[str] = None, times: int = 1, node: Optional[str] = None) -> None:
        """Answer the next ``times`` matching requests with this status/body/headers instead.

        ``node``: only GraphQL requests whose ``ids`` variable holds this node id (one item's batch)."""
        self._faults.append({'status': status, 'body': body, 'headers': headers or {}, 'method': method,
                             'path': re.compile(path), 'operation': operation, 'times': times, 'node': node})

    def graphql_calls(self, operation: Optional[str] = None) -> List[Dict[str, Any]]:
        return [e for e in self.log if e['path'] == '/graphql' and (operation is None or e['operation'] == operation)]

    def _fault_for(self, method: str, path: str, operation: Optional[str], payload: Any = None):
        for fault in self._faults:
            if fault['times'] <= 0:
                continue
            if fault['method'] not in ('*', method) or not fault['path'].fullmatch(path):
                continue
            if fault['operation'] is not None and fault['operation'] != operation:
                continue
            if fault.get('node') is not None:
                variables = payload.get('variables') if isinstance(payload, dict) else None
                ids = variables.get('ids') if isinstance(variables, dict) else None
                if not isinstance(ids, list) or fault['node'] not in ids:
                    continue
            fault['times'] -= 1
            return fault
        return None

    # -- request handling (called from the handler thread) -----------------------------------
    def handle(self, method: str, raw_path: str, headers: Dict[str, str], body: Optional[bytes]):
        parts = urlsplit(raw_path)
        path = parts.path.rstrip('/') or '/'
        query = dict((k, v[-1]) for k, v in parse_qs(parts.query).items())
        query['__if_modified_since'] = headers.get('if-modified-since')
        payload = None
        if body:
            try:
                payload = json.loads(body.decode('utf-8'))
            except ValueError:
                return self._record(method, path, None, 400, {'message': 'Problems parsing JSON'}, {})
        operation = payload.get('operationName') if isinstance(payload, dict) and path == '/graphql' else None
        fault = self._fault_for(method, path, operation, payload)
        if fault is not None:
            return self._record(method, path, operation, fault['status'], fault['body'], fault['headers'])
        auth = headers.get('authorization', '')
        scheme, _sep, token = auth.partition(' ')
        if scheme.lower() not in ('bearer', 'token') or token != self.token:
            return self._record(method, path, operation, 401,
                                {'message': 'Bad credentials', 'documentation_url': 'https://docs.github.com/rest',
                                 'status': '401'}, {})
        limited = self._secondary_limit(method, path, payload)
        if limited is not None:
            return self._record(method, path, operation, 403, limited, dict(self._rate_headers(), **{'retry-after': '60'}))
        extra = {}  # type: Dict[str, str]
        try:
            status, out = self._route(method, path, query, payload, extra)
        except KeyError:
            status, out = 404, dict(NOT_FOUND)
        headers = self._rate_headers()
        headers.update(self.grant.headers())
        headers.update(extra)
        return self._record(method, path, operation, status, out, headers)

    def _rate_headers(self) -> Dict[str, str]:
        rl = self.rate_limit
        return {'x-ratelimit-limit': str(rl['limit']), 'x-ratelimit-remaining': str(rl['limit'] - rl['used']),
                'x-ratelimit-used': str(rl['used']), 'x-ratelimit-reset': str(rl['reset_epoch'])}

    def _secondary_limit(self, method, path, payload):
        """Secondary rate limits that arise from load, by the fake's clock minute
        (docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
        no more than 80 content-generating requests per minute, and no more than 2,000 points per
        minute on the GraphQL endpoint, where a query is 1 point and a mutation 5 (the secondary
        limit's own points, not the primary cost). Answered 403 with ``retry-after`` and the message
        GitHub sends."""
        minute = self.store.clock().strftime('%Y-%m-%dT%H:%M')
        if path == '/graphql' and method == 'POST':
            query = payload.get('query') if isinstance(payload, dict) else ''
            points = 5 if re.match(r'\s*mutation\b', query or '') else 1
            bucket = self._minute.setdefault('graphql', [minute, 0])
            kind = 'graphql'
            limit = self.graphql_points_per_minute
        elif method == 'POST' and path.endswith('/comments'):
            points = 1
            bucket = self._minute.setdefault('content', [minute, 0])
            kind = 'content'
            limit = self.content_per_minute
        else:
            return None
        if bucket[0] != minute:
            bucket[0], bucket[1] = minute, 0
        if bucket[1] + points > limit:
            if kind == 'content':
                return {'message': 'You have exceeded a secondary rate limit and have been temporarily blocked from '
                                   'content creation. Please retry your request again later.',
                        'documentation_url': 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api'}
            return {'message': 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
                    'documentation_url': 'https://docs.github.com/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api'}
        bucket[1] += points
        return None

    def _refused(self, extra, needs):
        """403 for a permission the token lacks, with the header that names it (auth.py)."""
        if not self.grant.scoped:
            extra['x-accepted-github-permissions'] = needs
        return 403, {'message': self.grant.forbidden_message(),
                     'documentation_url': 'https://docs.github.com/rest', 'status': '403'}

    def _record(self, method, path, operation, status, body, headers):
        self.log.append({'method': method, 'path': path, 'operation': operation, 'status': status})
        return status, body, headers

    def _route(self, method, path, query, payload, extra):
        if path == '/graphql' and method == 'POST':
            if not isinstance(payload, dict) or not isinstance(payload.get('query'), str):
                return 400, {'message': 'A query attribute must be specified and must be a string.'}
            return 200, _executor.execute(self.store, self.rate_limit, payload['query'], payload.get('variables'),
                                          payload.get('operationName'), schema=self.schema, grant=self.grant)
        m = re.fullmatch(r'/repos/([^/]+/[^/]+)(/.*)?', path)
        if m and m.group(1) in self.store.renamed:
            # A renamed or transferred repository: 301 to the new URL, for every method
            # (docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#follow-redirects).
            extra['location'] = '%s/repos/%s%s' % (self._api(), self.store.renamed[m.group(1)], m.group(2) or '')
            return 301, {'message': 'Moved Permanently', 'url': extra['location'],
                         'documentation_url': 'https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects'}
        if m and m.group(1) in self.grant.forbidden_repos:
            raise KeyError(path)  # a repository the token may not see is a 404, as GitHub hides it
        m = re.fullmatch(r'/repos/([^/]+/[^/]+)/issues/comments/(\d+)', path)
        if m and method == 'GET':
            comment = self.store.db_ids[int(m.group(2))]
            if comment.get('__typename') != 'IssueComment':
                raise KeyError(path)
            return 200, self._rest_comment(comment)
        m = re.fullmatch(r'/repos/([^/]+/[^/]+)/issues', path)
        if m and method in ('GET', 'POST'):
            return self._issues_route(method, m.group(1), query, payload, extra)
        m = re.fullmatch(r'/repos/([^/]+/[^/]+)/issues/(\d+)(/.*)?', path)
        if m:
            repo, number, rest = m.group(1), int(m.group(2)), m.group(3) or ''
            if (repo, number) in self.store.deleted:
                # A deleted issue: 410 Gone (the @octokit/openapi description lists 410 for
                # GET /repos/{owner}/{repo}/issues/{issue_number} and its comments).
                return 410, {'message': 'This issue was deleted', 'documentation_url': 'https://docs.github.com/rest/issues/issues#get-an-issue',
                             'status': '410'}
            issue = self.store.issue(repo, number)
            write = method in ('POST', 'PATCH', 'PUT', 'DELETE')
            if not self.grant.can('issues', 'write' if write else 'read', repo):
                return self._refused(extra, 'issues=write' if write else 'issues=read')
            return self._issue_route(method, issue, rest, payload)
        if path == '/rate_limit' and method == 'GET':
            # GET /rate_limit costs nothing against the limits it reports (docs.github.com/en/rest/rate-limit)
            rl = self.rate_limit
            core = {'limit': rl['limit'], 'used': rl['used'], 'remaining': rl['limit'] - rl['used'], 'reset': rl['reset_epoch']}
            return 200, {'resources': {'core': core, 'graphql': dict(core)}, 'rate': core}
        if path == '/notifications' and method == 'GET':
            if not self.grant.scoped:
                # GET /notifications is for classic and OAuth tokens only: @octokit/openapi marks it
                # enabledForGitHubApps: false, and it is not among the endpoints a fine-grained token can call.
                return 403, {'message': self.grant.forbidden_message(), 'status': '403',
                             'documentation_url': 'https://docs.github.com/rest/activity/notifications#list-notifications-for-the-authenticated-user'}
            return self._notifications(query, extra)
        m = re.fullmatch(r'/notifications/threads/(\d+)', path)
        if m and method == 'PATCH':
            if not self.grant.scoped:
                return 403, {'message': self.grant.forbidden_message(), 'status': '403'}
            for thread in self.store.notifications:
                if thread['id'] == m.group(1):
                    thread['unread'] = False
                    return 205, None
            raise KeyError(path)
        raise KeyError(path)

    def _issues_route(self, method, repo, query, payload, extra):
        """``GET /repos/O/R/issues`` (list: ``state`` open|closed|all, ``labels`` comma-separated, an
        issue must carry all of them, ``per_page`` at most 100, ``page``; pull requests are issues to
        this endpoint, but the fake keeps its pull requests apart, so none are listed) and ``POST``
        (create: ``title`` required, ``body``, ``labels`` as names; unknown labels are created), as
        docs.github.com/en/rest/issues/issues#list-repository-issues and #create-an-issue describe."""
        if repo not in self.store.repos:
            raise KeyError(repo)
        write = method == 'POST'
        if not self.grant.can('issues', 'write' if write else 'read', repo):
            return self._refused(extra, 'issues=write' if write else 'issues=read')
        if write:
            body = payload if isinstance(payload, dict) else {}
            if not isinstance(body.get('title'), str) or not body['title']:
                return 422, {'message': 'Validation Failed', 'errors': [{'resource': 'Issue', 'field': 'title', 'code': 'missing_field'}],
                             'status': '422'}
            labels = [str(x) for x in body.get('labels') or []]
            issue = self.store.add_issue(repo, body['title'], body=str(body.get('body') or ''), labels=labels,
                                         author=self.store.viewer)
            return 201, self._rest_issue(issue)
        state = query.get('state') or 'open'
        wanted = [x for x in (query.get('labels') or '').split(',') if x]
        per_page = min(int(query.get('per_page') or 30), 100)
        page = int(query.get('page') or 1)
        found = [i for _n, i in sorted(self.store.repos[repo]['issues'].items())
                 if (state == 'all' or i['state'].lower() == state) and all(w in i.get('labels', []) for w in wanted)]
        found.sort(key=lambda i: i['createdAt'], reverse=True)   # GitHub's default: created, desc
        return 200, [self._rest_issue(i) for i in found[(page - 1) * per_page:page * per_page]]

    def _issue_route(self, method, issue, rest, payload):
        store = self.store
        if rest == '' and method == 'GET':
            return 200, self._rest_issue(issue)
        if rest == '' and method == 'PATCH':
            state = (payload or {}).get('state')
            if state is not None:
                if state not in ('open', 'closed'):
                    return 422, {'message': 'Validation Failed', 'errors': [{'field': 'state', 'code': 'invalid'}]}
                store.set_state(issue, state)
            return 200, self._rest_issue(issue)
        if rest == '/comments' and method == 'GET':
            return 200, [self._rest_comment(c) for c in issue['comments']]
        if rest == '/comments' and method == 'POST':
            body = (payload or {}).get('body')
            if not isinstance(body, str) or not body:
                return 422, {'message': 'Validation Failed', 'errors': [{'field': 'body', 'code': 'missing_field'}]}
            comment = store.add_comment(issue['repository']['nameWithOwner'], issue['number'], body)
            return 201, self._rest_comment(comment)
        if rest == '/dependencies/blocked_by' and method == 'GET':
            return 200, [self._rest_issue(b) for b in issue['blocked_by']]
        if rest == '/dependencies/blocked_by' and method == 'POST':
            blocker = store.db_ids.get((payload or {}).get('issue_id'))
            if blocker is None or blocker.get('__typename') != 'Issue':
                return 422, {'message': 'Validation Failed', 'errors': [{'field': 'issue_id', 'code': 'invalid'}]}
            store.add_blocker(issue['repository']['nameWithOwner'], issue['number'],
                              blocker['repository']['nameWithOwner'], blocker['number'])
            return 201, self._rest_issue(blocker)
        m = re.fullmatch(r'/dependencies/blocked_by/(\d+)', rest)
        if m and method == 'DELETE':
            blocker = store.db_ids.get(int(m.group(1)))
            if blocker is None or not store.remove_blocker(issue['repository']['nameWithOwner'], issue['number'], blocker):
                raise KeyError(rest)
            return 200, self._rest_issue(blocker)
        raise KeyError(rest)

    def _api(self) -> str:
        return self.url if self._server is not None else 'http://127.0.0.1'

    def _rest_issue(self, issue):
        repo = issue['repository']['nameWithOwner']
        return {'id': issue['databaseId'], 'node_id': issue['id'], 'number': issue['number'], 'title': issue['title'],
                'body': issue['body'], 'state': issue['state'].lower(), 'html_url': issue['url'],
                'url': '%s/repos/%s/issues/%d' % (self._api(), repo, issue['number']),
                'created_at': issue['createdAt'], 'updated_at': issue['updatedAt'], 'closed_at': issue['closedAt'],
                'user': {'login': issue['author']['login']},
                'labels': [{'name': name} for name in issue.get('labels', [])]}

    def _rest_comment(self, comment):
        issue = comment['issue']
        repo = issue['repository']['nameWithOwner']
        author = comment['author']
        # REST names an app's account "slug[bot]" with type Bot, where GraphQL says "slug" (typename Bot)
        login = author['login'] + ('[bot]' if author.get('__typename') == 'Bot' else '')
        return {'id': comment['databaseId'], 'node_id': comment['id'], 'body': comment['body'],
                'user': {'login': login, 'type': author.get('__typename', 'User')}, 'created_at': comment['createdAt'],
                'updated_at': comment.get('lastEditedAt') or comment['createdAt'], 'html_url': comment['url'],
                'url': '%s/repos/%s/issues/comments/%d' % (self._api(), repo, comment['databaseId']),
                'issue_url': '%s/repos/%s/issues/%d' % (self._api(), repo, issue['number'])}

    def _notifications(self, query, extra):
        """GET /notifications with GitHub's polling contract: ``X-Poll-Interval`` (seconds the
        client should wait) and ``Last-Modified``; ``If-Modified-Since`` equal to it answers 304
        (docs.github.com/en/rest/activity/notifications#about-github-notifications)."""
        extra['x-poll-interval'] = '60'
        stamp = max([t['updated_at'] for t in self.store.notifications] or ['1970-01-01T00:00:00Z'])
        last_modified = _http_date(stamp)
        extra['last-modified'] = last_modified
        if query.get('__if_modified_since') == last_modified:
            return 304, None
        show_all = query.get('all') == 'true'
        threads = [t for t in self.store.notifications if show_all or t['unread']]
        threads.sort(key=lambda t: t['updated_at'], reverse=True)
        per_page = min(int(query.get('per_page', 50)), 100)
        page = int(query.get('page', 1))
        chosen = threads[(page - 1) * per_page: page * per_page]
        api = self._api()
        out = [{'id': t['id'], 'unread': t['unread'], 'reason': t['reason'], 'updated_at': t['updated_at'],
                'repository': {'full_name': t['repo']},
                'subject': {'title': t['title'], 'type': 'Issue',
                            'url': '%s/repos/%s/issues/%d' % (api, t['repo'], t['number']),
                            'latest_comment_url': '%s/repos/%s/issues/comments/%d'
                            % (api, t['repo'], t['comment']['databaseId'])}}
               for t in chosen]
        return 200, out


def _http_date(stamp: str) -> str:
    from email.utils import format_datetime
    when = _dt.datetime.strptime(stamp[:19], '%Y-%m-%dT%H:%M:%S').replace(tzinfo=UTC)
    return format_datetime(when, usegmt=True)


class _Handler(BaseHTTPRequestHandler):
    fake = None  # type: FakeGitHub
    protocol_version = 'HTTP/1.1'
    # One buffered write per answer, Nagle off: headers and body in separate small segments cost
    # a delayed-ACK round trip (~40 ms on Linux) per request.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet: tests read FakeGitHub.log instead
        return

    def date_time_string(self, timestamp=None):
        """The Date header, on the fake's ``date_clock`` when it has one."""
        if self.fake.date_clock is None:
            return BaseHTTPRequestHandler.date_time_string(self, timestamp)
        from email.utils import format_datetime
        return format_datetime(self.fake.date_clock().astimezone(UTC), usegmt=True)

    def _serve(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else None
        headers = dict((k.lower(), v) for k, v in self.headers.items())
        try:
            status, out, extra = self.fake.handle(self.command, self.path, headers, body)
        except Exception as exc:  # a bug in the fake must show, not hang the client
            status, out, extra = 500, {'message': 'fake github crashed: %r' % (exc,)}, {}
        data = b'' if out is None else (out if isinstance(out, bytes) else
                                        (out.encode() if isinstance(out, str) else json.dumps(out).encode()))
        self.send_response(status)
        self.send_header('Content-Type', 'application/json; charset=utf-8')
        self.send_header('Content-Length', str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if data:
            self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve
