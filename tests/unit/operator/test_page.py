# -*- coding: utf-8 -*-
"""The status page and the textfile from one cycle (plugin_utils/page.py): every item, every
master with its state, hostile board text escaped; the metrics say what the cycle saw."""
from __future__ import annotations

import html.parser
import json

from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import fleet, recent_runs, render_metrics, render_page

from page_data import HOSTILE, NOW, RESET, cycle


class Collect(html.parser.HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parsed(page):
    p = Collect()
    p.feed(page)
    return p


def test_every_item_and_master_is_on_the_page_and_board_text_stays_text():
    data = cycle()
    page = render_page(data)
    p = parsed(page)
    rows = [a for t, a in p.tags if t == 'tr' and 'item' in a.get('class', '').split()]
    assert sorted(int(a['data-number']) for a in rows) == sorted(i['number'] for i in data['items'])
    assert [t for t, _a in p.tags if t in ('script', 'img')] == []
    assert not any(k.startswith('on') for _t, a in p.tags for k in a)
    assert HOSTILE in ''.join(p.text)
    masters = dict((a['data-master'], a['class']) for t, a in p.tags if t == 'tr' and 'data-master' in a)
    assert masters == {'w1/agent1': 'master usable', 'w1/agent2': 'master dark', 'w2/agent1': 'master dark',
                       'w2/agent2': 'master usable'}
    assert RESET in page and 'unknown' in page and 'blind: ssh: &lt;unreachable&gt;' in page
    assert 'start is 7200s old &lt;x&gt;' in page       # the reaper's actions, escaped
    assert '"result"' not in page and 'success' in page  # the heartbeat as fields
    assert '&lt;unreadable&gt; queue' in page and 'failed' in page   # the previous cycle's record
    assert 'a live unit runs this item' in page and 'stalled: &lt;b&gt;#5&lt;/b&gt;' in page


def test_reaper_and_announcer_sections_only_when_given():
    data = cycle()
    data.pop('reaper')
    data.pop('announcer')
    page = render_page(data)
    assert 'Reaper' not in page and 'Announcer' not in page
    data['announcer'] = []
    assert '<h2>Announcer</h2>' in render_page(data)


def test_fleet_and_recent_runs():
    data = cycle()
    rows = dict(('%s/%s' % (m['worker'], m['master']), m) for m in fleet(data['configured'], data['masters'], data['survey'], data['now']))
    assert rows['w1/agent2']['reset_in_s'] == 9000 and rows['w2/agent1']['reset_at'] == 'unknown'
    assert rows['w2/agent2']['probe'].startswith('blind') and rows['w1/agent1']['probe'] == 'ok'
    assert fleet(data['configured'], None, None, data['now'])[0]['probe'] == 'not probed'
    runs = recent_runs(data['items'], data['now'])
    assert [(r['number'], r['outcome']) for r in runs] == [(5, 'retry'), (2, 'running'), (3, 'success')]
    assert runs[1]['duration_s'] == 1800 and runs[0]['duration_s'] == 60 and runs[2]['duration_s'] == 1800 and runs[2]['cost_usd'] == 0.42


def test_metrics_say_what_the_cycle_saw():
    text = render_metrics(cycle())
    lines = set(text.splitlines())
    for want in ('fleet_dispatch_items{reason="eligible"} 1', 'fleet_dispatch_items{reason="running"} 1',
                 'fleet_dispatch_live_runs{master="agent1",worker="w1"} 1',
                 'fleet_dispatch_dark_masters{source="rate_limit"} 1', 'fleet_dispatch_dark_masters{source="revoked"} 1',
                 'fleet_dispatch_reset_seconds{master="agent2",source="rate_limit",worker="w1"} 9000',
                 'fleet_dispatch_lease_hold_seconds{lease="task-1"} 72',
                 'fleet_dispatch_cycle_duration_seconds 12', 'fleet_dispatch_github_points_remaining 4321',
                 'fleet_dispatch_runs{outcome="success"} 1', 'fleet_dispatch_run_cost_usd{outcome="success"} 0.42',
                 'fleet_dispatch_board_readable 1'):
        assert want in lines, want
    assert not any(line.startswith('fleet_dispatch_live_runs{master="agent2",worker="w2"}') for line in lines)


def test_metric_label_values_are_escaped():
    data = cycle()
    data['configured'] = [{'worker': 'w"1\\\n', 'master': 'a'}]
    data['survey'] = {'masters': {'w"1\\\n/a': 2}}
    data['masters'] = None
    assert 'fleet_dispatch_live_runs{master="a",worker="w\\"1\\\\\\n"} 2' in render_metrics(data).splitlines()


def test_a_cycle_that_probes_nothing_shows_the_last_sweep_fleet_dated():
    """A hand status after a sweep keeps the sweep's dark masters and resets, saying when they were probed."""
    from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import fleet_record
    sweep = cycle()
    record = fleet_record(fleet(sweep['configured'], sweep['masters'], sweep['survey'], sweep['now']), sweep['now'])
    status = cycle()
    status.update(masters=None, survey=None, mode='status', now='2026-11-30T12:20:00Z', previous_fleet=record)
    page = render_page(status)
    p = parsed(page)
    masters = dict((a['data-master'], a['class']) for t, a in p.tags if t == 'tr' and 'data-master' in a)
    assert masters == {'w1/agent1': 'master usable', 'w1/agent2': 'master dark', 'w2/agent1': 'master dark',
                       'w2/agent2': 'master usable'}
    assert RESET in page and '(in 2h)' in page            # the reset counted from the status's now
    assert 'not probed now; at %s (20m ago): ok' % sweep['now'] in page
    assert 'blind: ssh: &lt;unreachable&gt;' in page       # the sweep's blind master stays blind, dated
    metrics = render_metrics(status)
    assert 'fleet_dispatch_dark_masters{source="rate_limit"} 1' in metrics
    assert 'fleet_dispatch_reset_seconds{master="agent2",source="rate_limit",worker="w1"} 7800' in metrics
    assert 'fleet_dispatch_live_runs{' not in metrics     # counts of an earlier probe are not this cycle's
    assert "fleet_dispatch_fleet_probe_timestamp_seconds %d" % NOW.timestamp() in metrics   # the sweep's probe, not now
    # without a record (no sweep has probed yet) every master is "not probed", nothing dark
    status.pop('previous_fleet')
    bare = render_page(status)
    assert 'master dark' not in bare and bare.count('not probed') == 4
    assert not [ln for ln in render_metrics(status).splitlines() if ln.startswith('fleet_dispatch_fleet_probe_timestamp_seconds')]


def test_status_fleet_filter_keeps_only_what_was_probed():
    from ansible_collections.fleet.dispatch.plugins.filter.operator import status_fleet
    data = cycle()
    rec = status_fleet(data)
    assert rec['at'] == data['now']
    assert sorted('%s/%s' % (m['worker'], m['master']) for m in rec['masters']) == ['w1/agent1', 'w1/agent2', 'w2/agent1', 'w2/agent2']
    data.update(masters=None, survey=None)
    assert status_fleet(data) is None                     # a status cycle never overwrites the sweep's record
    data['survey'] = {'masters': {'w1/agent1': 2}, 'blind': []}
    assert [m['master'] for m in status_fleet(data)['masters']] == ['agent1']


def test_the_board_comes_first_and_the_cycle_record_is_a_few_readable_lines():
    data = cycle()
    data['cycle_text'] = json.dumps({
        'result': 'ok', 'reason': '', 'failed_task': '', 'at': '2026-11-30T11:59:00Z', 'dispatcher': 'sweep', 'mode': 'apply',
        'launched': ['task-1', 'task-2'], 'reaped': [], 'candidates': [1, 2], 'plan_json': '/x/plan.json',
        'lease_store': {'backend': 'postgres', 'deprecated': False}})
    page = render_page(data)
    assert page.index('<h2>Board</h2>') < page.index('<h2>Fleet</h2>') < page.index('<h2>Heartbeat</h2>')
    block = page[page.index('<h3>previous cycle</h3>'):page.index('<h3>sweeper heartbeat</h3>')]
    assert '<dd>task-1, task-2</dd>' in block and '<dt>by</dt><dd>sweep</dd>' in block
    assert 'lease_store' not in block and 'plan_json' not in block and "{'" not in block and '[' not in block
    assert '<dt>reason</dt>' not in block            # an ok cycle has no reason to show


def test_marker_kinds_lead_with_their_glyph_and_a_revoked_master_never_reads_until_unknown():
    data = cycle()
    page = render_page(data)
    assert '\u2705 success' in page
    rows = dict(('%s/%s' % (m['worker'], m['master']), m) for m in fleet(data['configured'], data['masters'], data['survey'], data['now']))
    from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import _master_row
    assert 'until unknown' not in _master_row(dict(rows['w2/agent1'], source='revoked', reset_at=None, reset_in_s=None))


def test_the_fleet_text_says_dark_masters_with_source_and_reset_and_never_calls_unprobed_usable():
    from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import fleet_text
    data = cycle()
    lines = fleet_text(data).splitlines()
    dark = [x for x in lines if x.startswith('w1/agent2')][0]
    assert 'dark: rate_limit' in dark and 'until %s' % RESET in dark, dark
    assert 'until a human clears it' in [x for x in lines if x.startswith('w2/agent1')][0]
    data.update(masters=None, survey=None, previous_fleet_text='')
    assert all(' unknown ' in x for x in fleet_text(data).splitlines()[2:])


def test_a_worker_clock_off_the_board_s_is_in_the_fleet_tables_and_the_metrics_and_survives_into_status():
    from ansible_collections.fleet.dispatch.plugins.plugin_utils.page import fleet_record, fleet_text
    sweep = cycle()
    sweep['survey'] = dict(sweep['survey'], clocks={'w1': {'controller_skew_s': -599.0, 'board_skew_s': -600.4},
                                                    'w2': {'controller_skew_s': 1.0, 'board_skew_s': 1.2}})
    lines = fleet_text(sweep).splitlines()
    assert 'clock vs board' in lines[0]
    assert all('-600 s: fix time sync' in x for x in lines if x.startswith('w1/'))
    assert all('+1 s ' in x and 'fix time' not in x for x in lines if x.startswith('w2/'))
    assert '<td class="clock">-600 s: fix time sync</td>' in render_page(sweep)
    metrics = render_metrics(sweep).splitlines()
    skews = [ln for ln in metrics if ln.startswith('fleet_dispatch_worker_clock_skew_seconds{')]
    assert skews == ['fleet_dispatch_worker_clock_skew_seconds{worker="w1"} -600.4',
                     'fleet_dispatch_worker_clock_skew_seconds{worker="w2"} 1.2'], skews   # one per worker, not per master
    # status probes nothing: the last sweep's reading, in its table; no gauge (it is not this cycle's measure)
    status = cycle()
    status.update(masters=None, survey=None, mode='status', now='2026-11-30T12:20:00Z',
                  previous_fleet=fleet_record(fleet(sweep['configured'], sweep['masters'], sweep['survey'], sweep['now']),
                                              sweep['now']))
    assert all('-600 s: fix time sync' in x for x in fleet_text(status).splitlines() if x.startswith('w1/'))
    assert 'fleet_dispatch_worker_clock_skew_seconds{' not in render_metrics(status)
    # a cycle whose probe measured no clock says it does not know
    unknown = fleet_text(cycle()).splitlines()
    column = unknown[0].index('clock vs board')
    assert len(unknown) == 6 and all(x[column:column + 2] == '? ' for x in unknown[2:]), unknown
