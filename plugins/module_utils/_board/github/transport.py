# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP to GitHub: one place for requests, redirects, rate limits and the D5 type checks.

``Transport`` sends one exchange through an injectable ``requests``-like session and sleeps out
GitHub's rate limits within bounds; the helpers here name GitHub's errors in its own words. No
board decisions: the board (``board.py``) gives each failure its public name.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import json
import time
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urljoin, urlsplit

from ..protocol import BoardUnreadable
from ..._core.board.model import UTC, format_time

try:
    import requests
    HAS_REQUESTS = True
    REQUESTS_IMPORT_ERROR = None
except ImportError as _exc:  # pragma: no cover - environment dependent
    requests = None
    HAS_REQUESTS = False
    REQUESTS_IMPORT_ERROR = _exc


# -- rate limits, redirects and timeouts, each with the figure that chose it ----------------------

RATE_LIMIT_MAX_WAIT = 90.0
"""Longest wait (seconds) the client sleeps for a rate limit before giving up with the reset time.
Unmeasured guess: a sweep runs every few minutes (the sweeper's timer), so waiting longer than
about a minute and a half only delays the next cycle's fresh read; GitHub's secondary limit
asks for ``retry-after`` values of 60 s in its documentation. Settle it by logging the
``retry-after`` values a real fleet receives for a week."""

RATE_LIMIT_RETRIES = 3
"""Attempts per call when GitHub answers with a rate limit (unmeasured guess: one wait usually
clears a secondary limit; three bounds a call at 3 x RATE_LIMIT_MAX_WAIT). Experiment that settles it:
count, over a week of a real fleet's logs, how many waits each rate-limited call needed."""

SECONDARY_DEFAULT_WAIT = 60.0
"""Derived from GitHub's documented advice when a secondary rate limit names no ``retry-after``:
wait at least one minute."""

SECONDARY_MAX_TOTAL = 300.0
"""Most seconds one call sleeps for *repeated* secondary limits. GitHub: "If your request continues
to fail due to a secondary rate limit, wait for an exponentially increasing amount of time between
retries, and throw an error after a specific number of retries"
(docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit).
Each repeat waits at least twice the one before (60, 120, ...); a wait that would take the total
past this bound is not slept: the call fails with the time it would clear. Unmeasured guess: five
minutes is about one sweeper period; a week of a real fleet's secondary waits would settle it."""

MAX_REDIRECTS = 3
"""Redirects followed per call. Unmeasured guess: a renamed or transferred repository answers 301
once, so three hops allow a rename of a transfer and still stop a loop; logging the redirect
chains a real fleet meets (``Transport.redirects``) for a week would settle it."""

HTTP_TIMEOUT = (10.0, 60.0)
"""(connect, read) seconds. Unmeasured guess: GitHub ends a GraphQL query at 10 s server side,
so a 60 s read timeout only triggers on a broken connection. Experiment that settles it: log each
board read's slowest response for a week and keep the read timeout at 3x the p99 or more."""

USER_AGENT = 'fleet.dispatch-github-board'


# -- errors -------------------------------------------------------------------------------------

class RateLimited(BoardUnreadable):
    """GitHub's rate limit outlasts ``RATE_LIMIT_MAX_WAIT``; ``reset_at`` says when it clears.

    A subclass of ``BoardUnreadable`` because a read that hits it has not read the queue; a
    write that hits it is re-raised as a plain ``BoardError`` by the write paths.
    """

    def __init__(self, message, reset_at=None, kind='primary'):
        super(RateLimited, self).__init__(message)
        self.reset_at = reset_at
        self.kind = kind


class HttpFailure(Exception):
    """Internal: one HTTP exchange failed; the board methods give it its public name."""

    def __init__(self, message, status=None):
        super(HttpFailure, self).__init__(message)
        self.status = status


def cost_of(rate_limits: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Fold the ``rateLimit`` objects of a read's calls into ``BoardRead.cost`` (D1)."""
    total = 0
    remaining = None
    reset_at = None
    by_document = {}  # type: Dict[str, int]
    for entry in rate_limits:
        c = entry.get('cost') if isinstance(entry.get('cost'), int) else 0
        total += c
        by_document[entry['document']] = by_document.get(entry['document'], 0) + c
        if isinstance(entry.get('remaining'), int):
            remaining = entry['remaining']
        if entry.get('resetAt'):
            reset_at = entry['resetAt']
    return {'cost': total, 'remaining': remaining, 'reset_at': reset_at,
            'calls': len(rate_limits), 'by_document': by_document}


# -- the token's origin: where the Authorization header may go ---------------------------------

def origin(url: str) -> Optional[Tuple[str, str, int]]:
    """``(scheme, host, port)`` of an absolute http(s) URL (RFC 6454's origin; the default port made
    explicit, the host lower case), or None for anything else."""
    try:
        parts = urlsplit(str(url))
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ('http', 'https') or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == 'https' else 80)


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address: plain http there never leaves the machine."""
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_origin(api_url: str) -> Tuple[str, str, int]:
    """The one origin the token is sent to: the API URL's, over https -- or plain http to a loopback
    address (the fake GitHub of the tests). Anything else raises ``BoardUnreadable``: a token sent in
    the clear to another machine is read by every hop on the way."""
    found = origin(api_url)
    if found is None:
        raise BoardUnreadable('the GitHub API URL %r is not an absolute http(s) URL' % (api_url,))
    if found[0] != 'https' and not is_loopback(found[1]):
        raise BoardUnreadable('the GitHub API URL %s is plain http to another machine: the token would travel in the '
                              'clear; use https' % (api_url,))
    return found


# -- the transport: one place for HTTP, rate limits and the D5 type checks ----------------------

class Transport(object):
    """HTTP to GitHub through an injectable ``requests``-like session; no decisions."""

    def __init__(self, api_url, token, session=None, sleep=None, clock=None,
                 max_wait=RATE_LIMIT_MAX_WAIT, retries=RATE_LIMIT_RETRIES, max_total=SECONDARY_MAX_TOTAL):
        self.api_url = api_url.rstrip('/')
        self.origin = token_origin(self.api_url)
        self._token = token
        self._own_session = session is None
        if session is None:
            if not HAS_REQUESTS:
                raise BoardUnreadable('the GitHub board needs the Python library "requests" '
                                      '(pip install requests): %s' % (REQUESTS_IMPORT_ERROR,))
            session = requests.Session()
        self.session = session
        self.sleep = time.sleep if sleep is None else sleep
        self.clock = (lambda: _dt.datetime.now(UTC)) if clock is None else clock
        self.max_wait = float(max_wait)
        self.max_total = float(max_total)
        self.retries = int(retries)
        self.redirects = []  # type: List[str]
        self.last_headers = {}  # type: Dict[str, str]
        self.date_offset = None  # type: Optional[_dt.timedelta]
        """GitHub's clock minus this one, from the Date header of the last answer (to the second)."""
        self.waits = []  # type: List[float]
        """Every rate-limit wait this transport slept, in seconds (reported, never hidden)."""

    @property
    def graphql_url(self):
        # GitHub Enterprise serves REST at /api/v3 and GraphQL at /api/graphql.
        if self.api_url.endswith('/api/v3'):
            return self.api_url[:-len('/v3')] + '/graphql'
        return self.api_url + '/graphql'

    def close(self):
        if self._own_session and hasattr(self.session, 'close'):
            self.session.close()

    def _headers(self):
        return {'Authorization': 'bearer %s' % self._token,
                'Accept': 'application/vnd.github+json',
                'X-GitHub-Api-Version': '2022-11-28',
                'User-Agent': USER_AGENT}

    def request(self, method, url, *, body=None, params=None, headers=None):
        """One HTTP exchange with rate-limit waits; returns (status, headers, parsed JSON or None)."""
        attempt = 0
        secondary = []  # type: List[float]
        extra = headers
        while True:
            attempt += 1
            status, headers, data = self._exchange(method, url, body, params, extra)
            wait = self._rate_limit_wait(status, headers, data)
            if wait is None:
                self.last_headers = headers
                return status, headers, data
            seconds, kind, reset_at = wait
            if kind == 'secondary' and secondary:
                # Repeated: exponentially longer each time, bounded in total (SECONDARY_MAX_TOTAL).
                seconds = max(seconds, 2.0 * secondary[-1])
                reset_at = self.clock() + _dt.timedelta(seconds=seconds)
            over = (sum(secondary) + seconds > self.max_total) if kind == 'secondary' else (seconds > self.max_wait)
            if attempt >= self.retries or over:
                raise RateLimited('GitHub %s rate limit on %s %s: clears %s (waited %d time(s) already; '
                                  'a wait of %.0f s is over the %.0f s this client sleeps)'
                                  % (kind, method, self._safe(url),
                                     format_time(reset_at) if reset_at else 'in %.0f s' % seconds,
                                     attempt - 1, seconds, self.max_wait),
                                  reset_at=reset_at, kind=kind)
            if kind == 'secondary':
                secondary.append(seconds)
            self.waits.append(seconds)
            self.sleep(seconds)

    def _exchange(self, method, url, body, params, extra=None):
        """One request, following redirects with the same method and body: GitHub answers 301 for a
        renamed or transferred repository and asks clients to follow it, and 307 to repeat the
        request verbatim (docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api
        #follow-redirects). ``requests`` itself would turn a redirected POST or PATCH into a GET."""
        for _hop in range(MAX_REDIRECTS + 1):
            if origin(url) != self.origin:
                # never reached through a redirect (refused below); a caller's URL of another origin
                raise HttpFailure('%s %s: not the API\'s origin, so the token is not sent there' % (method, self._safe(url)))
            try:
                resp = self.session.request(method, url, headers=dict(self._headers(), **(extra or {})), json=body,
                                            params=params, timeout=HTTP_TIMEOUT, allow_redirects=False)
            except Exception as exc:  # requests.RequestException and anything a session raises
                raise HttpFailure('%s %s did not answer: %s' % (method, self._safe(url), type(exc).__name__ + ': ' + str(exc)))
            status = int(resp.status_code)
            headers = dict((str(k).lower(), v) for k, v in (resp.headers or {}).items())
            dated = _http_date(headers.get('date'))
            if dated is not None:   # a Date is cut to its second: the middle of that second is the best guess
                self.date_offset = dated + _dt.timedelta(seconds=0.5) - self.clock()
            location = headers.get('location')
            if status in (301, 302, 307, 308) and isinstance(location, str) and location:
                location = urljoin(url, location)
                if origin(location) != self.origin:
                    # another host, port or scheme (https -> http too): the token goes to the API's own
                    # origin only, so the redirect is refused rather than followed with it or without it
                    where = origin(location)
                    raise HttpFailure('%s %s: GitHub redirected to %s, another origin than %s://%s:%s; not followed, '
                                      'the token is only sent to the API URL\'s own origin'
                                      % (method, self._safe(url), '%s://%s:%s' % where if where else 'a URL that is not http(s)',
                                         self.origin[0], self.origin[1], self.origin[2]))
                url = location
                self.redirects.append(self._safe(location))
                continue
            return status, headers, self._parse(resp)
        raise HttpFailure('%s %s: more than %d redirects' % (method, self._safe(url), MAX_REDIRECTS))

    def _safe(self, url):
        if url.startswith(self.api_url):
            return url[len(self.api_url):] or '/'
        where = origin(url)
        return '%s://%s:%s/...' % where if where else '(a URL that is not http(s))'

    @staticmethod
    def _parse(resp):
        text = resp.text if hasattr(resp, 'text') else resp.content.decode('utf-8', 'replace')
        if text is None or not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            return NotJson(text)

    def _rate_limit_wait(self, status, headers, data):
        """(seconds, kind, reset_at) when this answer is a rate limit, else None.

        GitHub's rules: a ``retry-after`` header means wait that long (secondary limit, or a
        primary one on some endpoints); ``x-ratelimit-remaining: 0`` means wait until
        ``x-ratelimit-reset`` (epoch seconds); a secondary limit with neither header means wait
        at least a minute. GraphQL reports an exhausted primary limit as HTTP 200 with an
        ``errors`` entry of type ``RATE_LIMITED``.
        """
        errors = data.get('errors') if isinstance(data, dict) and isinstance(data.get('errors'), list) else []
        # GraphQL names an exhausted primary limit RATE_LIMITED (docs.github.com/en/graphql/overview/
        # rate-limits-and-query-limits-for-the-graphql-api#exceeding-the-rate-limit); clients report
        # RATE_LIMIT with code graphql_rate_limit too (yanyongyu/githubkit#271).
        graphql_limited = any(isinstance(e, dict) and e.get('type') in ('RATE_LIMITED', 'RATE_LIMIT') for e in errors)
        # A secondary limit is named by its message ("You have exceeded a secondary rate limit"), on
        # a 403/429 or inside a GraphQL errors list of an HTTP 200 (octokit/plugin-throttling.js#636).
        graphql_secondary = any(isinstance(e, dict) and 'secondary rate limit' in str(e.get('message', '')).lower()
                                for e in errors)
        if status not in (403, 429) and not graphql_limited and not graphql_secondary:
            return None
        now = self.clock()
        retry_after = headers.get('retry-after')
        if retry_after is not None:
            try:
                seconds = max(0.0, float(retry_after))
            except ValueError:
                when = _http_date(retry_after)
                seconds = max(0.0, (when - now).total_seconds()) if when else SECONDARY_DEFAULT_WAIT
            return seconds, 'secondary', now + _dt.timedelta(seconds=seconds)
        if headers.get('x-ratelimit-remaining') == '0' and headers.get('x-ratelimit-reset'):
            try:
                reset_at = _dt.datetime.fromtimestamp(int(headers['x-ratelimit-reset']), UTC)
            except ValueError:
                reset_at = None
            if reset_at is not None:
                # +1 s: the reset epoch is whole seconds, rounded down by GitHub.
                return max(0.0, (reset_at - now).total_seconds()) + 1.0, 'primary', reset_at
        message = data.get('message', '') if isinstance(data, dict) else ''
        if graphql_limited or graphql_secondary or 'rate limit' in str(message).lower():
            return (SECONDARY_DEFAULT_WAIT, 'primary' if graphql_limited and not graphql_secondary else 'secondary',
                    now + _dt.timedelta(seconds=SECONDARY_DEFAULT_WAIT))
        return None  # a plain 403: permissions, not a rate limit


class NotJson(str):
    """A body that did not parse as JSON (kept, to quote in the error)."""


def _http_date(text):
    try:
        from email.utils import parsedate_to_datetime
        value = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def error_text(status, data) -> str:
    """What GitHub said, from a body of any JSON type (D5: never assume a type)."""
    if isinstance(data, dict):
        msg = data.get('message')
        if isinstance(msg, str) and msg:
            return 'HTTP %s: %s' % (status, msg)
        errors = data.get('errors')
        if isinstance(errors, list) and errors:
            return 'HTTP %s: %s' % (status, '; '.join(one_error(e) for e in errors[:5]))
        return 'HTTP %s: %s' % (status, json.dumps(data)[:200])
    if isinstance(data, NotJson):
        return 'HTTP %s: a body that is not JSON: %r' % (status, str(data)[:200])
    if data is None:
        return 'HTTP %s with an empty body' % status
    return 'HTTP %s: unexpected %s body' % (status, type(data).__name__)


def is_placed(err) -> bool:
    """An error GitHub placed under a path of the data (partial data), not a rate limit."""
    return (isinstance(err, dict) and isinstance(err.get('path'), list) and len(err['path']) > 0
            and err.get('type') not in ('RATE_LIMITED', 'RATE_LIMIT'))


def errors_by_index(errors, prefix) -> Tuple[Dict[int, List[Dict[str, Any]]], List[Dict[str, Any]]]:
    """Split placed errors into those under ``prefix + [i]`` (by ``i``) and the rest."""
    mine = {}  # type: Dict[int, List[Dict[str, Any]]]
    rest = []
    n = len(prefix)
    for err in errors or []:
        path = err.get('path') if isinstance(err, dict) else None
        if isinstance(path, list) and len(path) > n and list(path[:n]) == list(prefix) and isinstance(path[n], int) \
                and not isinstance(path[n], bool):
            mine.setdefault(path[n], []).append(err)
        else:
            rest.append(err)
    return mine, rest


_PERMISSION_OF_FIELD = (
    (('closedByPullRequestsReferences', 'closer', 'associatedPullRequests'), 'Pull requests: read'),
    (('comments', 'timelineItems', 'content', 'blockedBy', 'issueDependenciesSummary'), 'Issues: read'),
)


def unreadable_cause(errors, repo: str = '') -> str:
    """What could not be read of one item, in GitHub's words, with the fix for a FORBIDDEN."""
    text = '; '.join(one_error(e) for e in errors[:3])
    needs = []
    for err in errors:
        if not isinstance(err, dict) or err.get('type') != 'FORBIDDEN':
            continue
        fields = [p for p in err.get('path') or [] if isinstance(p, str)]
        for names, permission in _PERMISSION_OF_FIELD:
            if any(f in names for f in fields) and permission not in needs:
                needs.append(permission)
                break
    if needs:
        text += ' -- the token may not read this%s: a fine-grained or app token needs %s there (a classic token: scope repo)' % (
            ' on %s' % repo if repo else '', ' and '.join(needs))
    return text


def one_error(err) -> str:
    if isinstance(err, dict):
        parts = [str(err.get('type') or '').strip(), str(err.get('message') or '').strip()]
        path = err.get('path')
        if isinstance(path, list) and path:
            parts.append('at ' + '.'.join(str(p) for p in path))
        return ' '.join(p for p in parts if p) or json.dumps(err)[:200]
    return repr(err)[:200]
