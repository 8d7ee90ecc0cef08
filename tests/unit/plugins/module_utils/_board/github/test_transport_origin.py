# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The token goes to the API URL's own origin only, over https (plain http only to loopback).

Found in a security review: the client followed a redirect to any host, and from https to http, with
the Authorization header. A recording session stands in for ``requests`` so every request the
transport makes, and its headers, can be seen; the same-origin 301 of a renamed repository is
followed as before (test_github_forge.py drives it against the fake GitHub).
"""

from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardUnreadable
from ansible_collections.fleet.dispatch.plugins.module_utils._board.github.transport import HttpFailure, Transport

TOKEN = 'ghp_test_secret_token_value'


class _Resp(object):
    def __init__(self, status, headers=None, text='{}'):
        self.status_code = status
        self.headers = headers or {}
        self.text = text


class _Session(object):
    """Answers each URL from ``routes`` (``url -> _Resp``) and records ``(method, url, headers)``."""

    def __init__(self, routes):
        self.routes = routes
        self.sent = []

    def request(self, method, url, headers=None, **_kw):
        self.sent.append((method, url, dict(headers or {})))
        return self.routes.get(url, _Resp(200))


def _transport(routes, api_url='https://api.github.com'):
    session = _Session(routes)
    return Transport(api_url, TOKEN, session=session, sleep=lambda s: None), session


@pytest.mark.parametrize('location', [
    'https://evil.example/graphql',                 # another host
    'http://api.github.com/graphql',                # https -> http
    'https://api.github.com:8443/graphql',          # another port
    '//evil.example/graphql',                       # scheme-relative: another host
])
def test_a_redirect_to_another_origin_is_refused_and_the_token_never_sent_there(location):
    http, session = _transport({'https://api.github.com/graphql': _Resp(307, {'Location': location})})
    with pytest.raises(HttpFailure, match='another origin'):
        http.request('POST', http.graphql_url, body={'query': '{ viewer { login } }'})
    assert [url for _m, url, _h in session.sent] == ['https://api.github.com/graphql']
    assert all(TOKEN not in str(h) for _m, url, h in session.sent if not url.startswith('https://api.github.com/'))


def test_a_same_origin_redirect_is_followed_with_the_token():
    http, session = _transport({'https://api.github.com/repos/a/old/issues/1': _Resp(301, {'Location': '/repos/a/new/issues/1'})})
    status, _headers, _data = http.request('GET', http.api_url + '/repos/a/old/issues/1')
    assert status == 200
    assert [url for _m, url, _h in session.sent] == ['https://api.github.com/repos/a/old/issues/1',
                                                     'https://api.github.com/repos/a/new/issues/1']
    assert all(h['Authorization'] == 'bearer %s' % TOKEN for _m, _u, h in session.sent)


@pytest.mark.parametrize('api_url', ['http://github.example.com/api/v3', 'http://10.0.0.5', 'ftp://api.github.com'])
def test_an_api_url_that_would_send_the_token_in_the_clear_is_refused(api_url):
    with pytest.raises(BoardUnreadable):
        _transport({}, api_url)


@pytest.mark.parametrize('api_url', ['http://127.0.0.1:8080', 'http://localhost:9', 'http://[::1]:80', 'https://ghe.example/api/v3'])
def test_loopback_http_and_any_https_api_url_are_accepted(api_url):
    http, _session = _transport({}, api_url)
    assert http.origin[1] in ('127.0.0.1', 'localhost', '::1', 'ghe.example')
