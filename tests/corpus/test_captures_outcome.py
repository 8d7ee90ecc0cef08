"""Every real capture (``captures/``) through the shipped classifier: the outcome a careful human reads.

Each capture is read by ``_runner.classify.classify`` -- the function behind ``fleet-runner
classify``, which calls the runner's own reading (``_core.outcome.capture.read_capture``) and
close-out (``_core.outcome.closeout.decide``) -- with what the runner had: the capture's exit code,
``now`` = when the run ended (``captured``) and the capturing host's zone (UTC). Asserted per
capture: the reading's ``kind``, the close-out marker (``expect.outcome``: a transient failure
before any turn is retried, a limit is capacity, D7, D8) and, for a capacity close-out of a rate
limit, the reset it darkens the master until (``reset_at``; null is a label too).

Each capture is read with its own CLI's profile (``claude``, ``codex``, ``gemini``, ``qwen``).
"""
from __future__ import annotations

import json
import pathlib

import pytest
import yaml

from ansible_collections.fleet.dispatch.plugins.module_utils._runner.classify import classify

CAPTURES = pathlib.Path(__file__).resolve().parent / 'captures'
SAMPLES = [c for path in sorted(CAPTURES.glob('*.yml')) for c in yaml.safe_load(path.read_text(encoding='utf-8'))]


def read(capture):
    return classify(capture['text'], capture['agent'], exit_code=capture['exit_code'],
                    now=capture['captured'], tz='UTC')


def problems(capture):
    """What differs between the shipped reading of ``capture`` and its label ([] when it matches)."""
    expect, got = capture['expect'], read(capture)
    marker = got['decision']['marker']
    bad = []
    if got['kind'] != expect['kind']:
        bad.append('kind %s, labelled %s (signature %s)' % (got['kind'], expect['kind'], got['signature']))
    if marker != expect['outcome']:
        bad.append('close-out %s, labelled %s (%s)' % (marker, expect['outcome'], got['decision']['text']))
    if expect['kind'] == 'rate_limit' and got['reset_at'] != expect['reset_at']:
        bad.append('reset_at %s, labelled %s (read %r)' % (got['reset_at'], expect['reset_at'], got['reset_text']))
    return bad


def test_every_capture_is_read():
    assert len(SAMPLES) >= 40 and {c['agent'] for c in SAMPLES} == {'claude', 'codex', 'gemini', 'qwen'}


@pytest.mark.parametrize('capture', SAMPLES, ids=[c['id'] for c in SAMPLES])
def test_capture_outcome(capture):
    bad = problems(capture)
    assert not bad, '%s (%s): %s' % (capture['id'], capture['package'], '; '.join(bad))


def test_a_miss_is_reported():
    capture = dict(SAMPLES[0], expect=dict(SAMPLES[0]['expect'], outcome='capacity' if SAMPLES[0]['expect']['outcome'] != 'capacity' else 'retry'))
    assert any('close-out' in p for p in problems(capture))


def _capture(name):
    return next(c for c in SAMPLES if c['id'] == name)


@pytest.mark.parametrize('name, marker', [
    ('codex-refused', 'retry'), ('claude-refused', 'retry'), ('gemini-refused', 'retry'), ('qwen-refused', 'retry'),
    ('codex-commit', 'failure'), ('claude-commit', 'failure'), ('gemini-commit', 'failure'), ('qwen-commit', 'failure')])
def test_a_capture_the_stall_limit_stopped(name, marker):
    """``classify --stalled``: a run stopped by the stall limit before any turn (Codex CLI reconnecting forever
    prints only the same line) is a retry, ``stopped: stall``; one that had made a turn is a stall failure."""
    capture = _capture(name)
    got = classify(capture['text'], capture['agent'], exit_code=-15, now=capture['captured'], tz='UTC', stalled=60)
    decision = got['decision']
    assert (decision['marker'], decision['fields']['stall_timeout']) == (marker, 60), decision
    if marker == 'retry':
        assert decision['text'].startswith('stopped: stall') and decision['fields']['signature'] == 'stall', decision
    else:
        assert decision['fields']['cause'] == 'stall' and 'printed nothing for 60s' in decision['text'], decision


def test_classify_takes_the_stall_from_its_command_line(tmp_path, capsys):
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.classify import main
    path = tmp_path / 'capture.log'
    path.write_text(_capture('codex-refused')['text'])
    assert main(['--agent', 'codex', '--stalled', '45', '--now', '2026-12-05T03:17:44Z', '--tz', 'UTC', str(path)]) == 0
    decision = json.loads(capsys.readouterr().out)['decision']
    assert decision['marker'] == 'retry' and decision['fields']['stall_timeout'] == 45, decision
    assert any('-15' in a for a in decision['assumes']), decision


QWEN = [c for c in SAMPLES if c['agent'] == 'qwen']


@pytest.mark.parametrize('capture', QWEN, ids=[c['id'] for c in QWEN])
def test_fleet_runner_classify_reads_each_qwen_capture_as_its_own_profile(capture, tmp_path, capsys):
    """``fleet-runner classify --agent qwen`` on the capture file: the kind and close-out its label states, and the
    ``qwen`` profile's reading (its Claude-shaped result envelope; a turn only from usage or a tool call)."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._runner.classify import main
    path = tmp_path / 'capture.log'
    path.write_text(capture['text'])
    code = [] if capture['exit_code'] is None else ['--exit-code', str(capture['exit_code'])]   # None: stopped at the timeout
    assert main(['--agent', 'qwen'] + code + ['--now', capture['captured'], '--tz', 'UTC', str(path)]) == 0
    got = json.loads(capsys.readouterr().out)
    expect = capture['expect']
    assert (got['profile'], got['kind'], got['decision']['marker']) == ('qwen', expect['kind'], expect['outcome']), got
    if capture['expect']['turns'] is not None:
        assert got['turns'] == capture['expect']['turns'], got


def test_the_qwen_captures_cover_every_outcome():
    assert {c['expect']['outcome'] for c in QWEN} == {'noop', 'retry', 'capacity', 'failure'}
    assert {c['expect']['kind'] for c in QWEN} >= {'success', 'noop_claim', 'transient', 'rate_limit', 'revoked', 'failure'}
