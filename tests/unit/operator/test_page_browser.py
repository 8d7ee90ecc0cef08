# -*- coding: utf-8 -*-
"""The status page in a real headless Chromium (Debian's ``chromium``) and the textfile through
``promtool check metrics`` (Debian's ``prometheus``). tests/run's bootstrap installs both for the
unit phase; without them these tests skip and say so (FLEET_REQUIRE_BROWSER=1 makes that a failure).

The screenshot is a test artifact: ``$FLEET_TEST_ARTIFACTS`` (tests/run sets it under its build
directory), else the test's tmp_path.
"""
from __future__ import annotations

import html.parser
import os
import pathlib
import shutil
import subprocess

import pytest

from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import render_metrics, render_page

from page_data import HOSTILE, RESET, cycle


def _tool(name):
    path = shutil.which(name)
    if path is None:
        if os.environ.get('FLEET_REQUIRE_BROWSER') == '1':
            pytest.fail('%s is not installed (apt-get install %s): FLEET_REQUIRE_BROWSER=1 needs it'
                        % (name, 'chromium' if name == 'chromium' else 'prometheus'))
        pytest.skip('%s is not installed (apt-get install %s; tests/run installs it as root)'
                    % (name, 'chromium' if name == 'chromium' else 'prometheus'))
    return path


def chromium(tmp_path, *args):
    exe = _tool('chromium')
    home = tmp_path / 'chromium-home'
    home.mkdir(exist_ok=True)
    argv = [exe, '--headless', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
            '--user-data-dir=%s' % home, '--disable-dev-shm-usage']
    if os.geteuid() == 0:
        argv.append('--no-sandbox')      # Chromium refuses to run as root with its sandbox
    res = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=120, check=False,
                         env=dict(os.environ, HOME=str(home)))
    assert res.returncode == 0, res.stderr[-3000:]
    return res


class Dom(html.parser.HTMLParser):
    """The DOM Chromium serialised: the rows by class, each row's cells' text."""

    def __init__(self):
        super().__init__()
        self.rows, self.scripts, self._row, self._cell = [], 0, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == 'script':
            self.scripts += 1
        if tag == 'tr':
            self._row = {'attrs': attrs, 'cells': []}
            self.rows.append(self._row)
        elif tag == 'td' and self._row is not None:
            self._cell = {'class': attrs.get('class', ''), 'text': ''}
            self._row['cells'].append(self._cell)

    def handle_endtag(self, tag):
        if tag == 'td':
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell['text'] += data


def test_chromium_loads_the_page_every_item_the_dark_masters_and_the_reset_shown(tmp_path):
    data = cycle()
    page = tmp_path / 'status.html'
    page.write_text(render_page(data), encoding='utf-8')
    res = chromium(tmp_path, '--dump-dom', page.as_uri())
    dom = Dom()
    dom.feed(res.stdout)
    assert dom.scripts == 0, 'board text became a script element'
    items = [r for r in dom.rows if 'item' in r['attrs'].get('class', '').split()]
    assert sorted(int(r['attrs']['data-number']) for r in items) == sorted(i['number'] for i in data['items'])
    assert items[0]['cells'][1]['text'] == HOSTILE       # shown as text, whole
    masters = dict((r['attrs']['data-master'], r) for r in dom.rows if 'data-master' in r['attrs'])
    assert set(masters) == {'w1/agent1', 'w1/agent2', 'w2/agent1', 'w2/agent2'}
    dark = sorted(k for k, r in masters.items() if 'dark' in r['attrs']['class'].split())
    assert dark == ['w1/agent2', 'w2/agent1']
    reset = dict((k, [c['text'] for c in r['cells'] if c['class'] == 'reset'][0]) for k, r in masters.items())
    assert reset['w1/agent2'].startswith(RESET) and 'in 2h' in reset['w1/agent2']
    assert reset['w2/agent1'] == 'until a human clears it (fleet.dispatch.clear_capacity)'   # revoked: no time
    state = [c['text'] for c in masters['w2/agent1']['cells'] if c['class'] == 'state'][0]
    assert state == 'dark: revoked'

    out = pathlib.Path(os.environ.get('FLEET_TEST_ARTIFACTS') or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    shot = out / 'status-page.png'
    if shot.exists():
        shot.unlink()
    chromium(tmp_path, '--screenshot=%s' % shot, '--window-size=1280,1100', '--hide-scrollbars', page.as_uri())
    assert shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and shot.stat().st_size > 10000
    print('status page screenshot: %s' % shot)


def test_promtool_accepts_the_textfile(tmp_path):
    exe = _tool('promtool')
    text = render_metrics(cycle(extra=3))
    res = subprocess.run([exe, 'check', 'metrics'], input=text, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == '' and res.stderr.strip() == '', 'promtool linted: %s %s' % (res.stdout, res.stderr)
    bad = text.replace('# TYPE fleet_dispatch_items gauge', '# TYPE fleet_dispatch_items gauge\n# TYPE fleet_dispatch_items gauge')
    res = subprocess.run([exe, 'check', 'metrics'], input=bad, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode != 0, 'promtool accepted a duplicate TYPE line: the check checks nothing'
