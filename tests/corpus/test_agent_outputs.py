"""The corpus through ``fleet-runner classify``'s interface, one row per sample (issue 10, item 4).

Every real sample (claude.yml, codex.yml, gemini.yml) and, separately, every constructed one is
read by ``_runner.classify.classify`` -- the function behind ``fleet-runner classify``, which calls
the runner's own reading (``_core.outcome.capture.read_capture``) and close-out (``_core.outcome.closeout.decide``).
Asserted per sample: ``kind``; ``reset_at`` (null is a label too); and where the label states them,
``turns``, ``cost_usd``, ``usage``, ``reset_in_s`` and ``reset_local``. The reading gets what a
reader of the report had: ``now`` when the report gives it, else the report's date (a zoned clock
time is read on that day), and no zone for zone-less times.

A sample the reading deliberately does not match goes in ``EXPECTED_MISSES`` with the reason; it
is then asserted to still miss, so the list cannot go stale. ``test_hit_rate`` prints the hit rate
per agent and per kind (``-s`` shows it) and fails below ``GOAL``.
"""
from __future__ import annotations

import collections
import datetime as dt

import pytest
import yaml

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.classify import classify

from test_corpus_wellformed import CONSTRUCTED_FILE, DATA, REAL_FILES

GOAL = 0.95

# id -> why the reading deliberately differs from the label.
EXPECTED_MISSES = {
    'claude-text-success-1': 'plain prose with no envelope, no tool call and no exit code: nothing the reading '
                             'knows says the agent finished, so it is not read as a success (the label trusts '
                             'the reporter that the run completed)',
}


def _load(name):
    return yaml.safe_load((DATA / name).read_text(encoding='utf-8'))


REAL = [s for name in sorted(REAL_FILES) for s in _load(name)]
CONSTRUCTED = _load(CONSTRUCTED_FILE)


def _classify(sample):
    return classify(sample['text'], sample['agent'], now=sample.get('now'), on_date=sample.get('reported'))


def _reset_detail(sample):
    return read_capture(sample['text'], sample['agent'], now=sample.get('now'), on_date=sample.get('reported')).reset


def problems(sample):
    """What differs between the reading of ``sample`` and its label ([] when it matches)."""
    expect = sample['expect']
    got = _classify(sample)
    bad = []
    if got['kind'] != expect['kind']:
        bad.append('kind %s, labelled %s (signature %s)' % (got['kind'], expect['kind'], got['signature']))
    if got['reset_at'] != expect.get('reset_at'):
        bad.append('reset_at %s, labelled %s (read %r)' % (got['reset_at'], expect.get('reset_at'), got['reset_text']))
    for key in ('turns', 'cost_usd'):
        if expect.get(key) is not None and got[key] != expect[key]:
            bad.append('%s %r, labelled %r' % (key, got[key], expect[key]))
    if expect.get('usage') and got['usage'] != expect['usage']:
        bad.append('usage %r, labelled %r' % (got['usage'], expect['usage']))
    if expect.get('reset_in_s') is not None or expect.get('reset_local') is not None:
        stated = _reset_detail(sample)
        if expect.get('reset_in_s') is not None and (stated is None or stated.in_s != expect['reset_in_s']):
            bad.append('reset_in_s %r, labelled %r' % (stated and stated.in_s, expect['reset_in_s']))
        if expect.get('reset_local') is not None and (stated is None or stated.local != expect['reset_local']):
            bad.append('reset_local %r, labelled %r' % (stated and stated.local, expect['reset_local']))
    # the decision is the close-out's: a limit is capacity, never a retry or a failure (D7, D8)
    marker = got['decision']['marker']
    if expect['kind'] in ('rate_limit', 'revoked') and got['kind'] == expect['kind'] and marker != 'capacity':
        bad.append('decision %s for a %s' % (marker, expect['kind']))
    return bad


@pytest.mark.parametrize('sample', REAL, ids=[s['id'] for s in REAL])
def test_real_sample(sample):
    bad = problems(sample)
    if sample['id'] in EXPECTED_MISSES:
        assert bad, '%s is listed as an expected miss but now matches: remove it from EXPECTED_MISSES' % sample['id']
        return
    assert not bad, '%s (%s): %s' % (sample['id'], sample['source'], '; '.join(bad))


@pytest.mark.parametrize('sample', CONSTRUCTED, ids=[s['id'] for s in CONSTRUCTED])
def test_constructed_sample(sample):
    bad = problems(sample)
    assert not bad, '%s (constructed): %s' % (sample['id'], '; '.join(bad))


def test_expected_misses_name_real_samples_with_a_reason():
    ids = set(s['id'] for s in REAL)
    for sample_id, why in EXPECTED_MISSES.items():
        assert sample_id in ids and len(why) > 20, sample_id


def hit_rate(samples):
    """``(hits, total, per_agent, per_kind)``: a hit is a sample whose reading matches its label."""
    per_agent = collections.defaultdict(lambda: [0, 0])
    per_kind = collections.defaultdict(lambda: [0, 0])
    hits = 0
    for sample in samples:
        ok = not problems(sample)
        hits += ok
        for table, key in ((per_agent, sample['agent']), (per_kind, sample['expect']['kind'])):
            table[key][0] += ok
            table[key][1] += 1
    return hits, len(samples), dict(per_agent), dict(per_kind)


def test_hit_rate(capsys):
    hits, total, per_agent, per_kind = hit_rate(REAL)
    with capsys.disabled():
        print('\ncorpus hit rate (real samples): %d/%d = %.1f %%' % (hits, total, 100.0 * hits / total))
        for name, table in (('agent', per_agent), ('kind', per_kind)):
            print('  by %s: %s' % (name, ', '.join('%s %d/%d' % (k, v[0], v[1]) for k, v in sorted(table.items()))))
    assert hits >= GOAL * total


def test_the_hit_rate_counts_a_miss():
    wrong = dict(REAL[0], expect=dict(REAL[0]['expect'], kind='success' if REAL[0]['expect']['kind'] != 'success' else 'failure'))
    hits, total, _agents, _kinds = hit_rate([wrong, REAL[1]])
    assert (hits, total) == (1, 2)


def test_a_passed_clock_time_rolls_forward_only_with_a_now():
    sample = {'text': "You've hit your limit · resets 2pm (Asia/Shanghai)", 'agent': 'claude'}
    on_day = classify(sample['text'], 'claude', on_date='2026-05-12')
    assert on_day['reset_at'] == '2026-05-12T06:00:00Z'
    later = classify(sample['text'], 'claude', now=dt.datetime(2026, 5, 12, 7, 0, tzinfo=dt.timezone.utc))
    assert later['reset_at'] == '2026-05-13T06:00:00Z'
    assert classify(sample['text'], 'claude')['reset_at'] is None   # no day, no now: never invented
