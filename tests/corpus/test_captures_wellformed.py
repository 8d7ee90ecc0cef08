"""The real captures (``captures/``) are well formed: the data only, not any classifier.

A capture is what a real agent CLI printed when ``tests/fakes/model_endpoint/drive.py`` ran it
against the scripted endpoint: a sample in the corpus format (README, "Captures"), whose provenance
is the run (package, ``--version``, argv, exit code, duration, the endpoint's request log) rather
than a report's URL. ``check_capture`` returns the problems of one; the self-tests prove it fails.
"""
from __future__ import annotations

import datetime
import pathlib

import pytest
import yaml

from test_corpus_wellformed import check_sample

CAPTURES = pathlib.Path(__file__).resolve().parent / 'captures'
AGENTS = ('claude', 'codex', 'gemini', 'qwen')
RUN_KEYS = ('package', 'version', 'scenario', 'argv', 'retries', 'exit_code', 'timed_out', 'duration_s', 'captured',
            'requests', 'stdout', 'stderr')
SAMPLE_KEYS = ('id', 'agent', 'stream', 'format', 'text', 'trimmed', 'expect', 'note')
OPTIONAL = ('unsure',)
# expect.outcome, a capture's own: the close-out marker (_core.outcome.closeout.EXIT) a careful human
# expects for it when the forge shows no artifact since the run's start -- what `fleet-runner classify`
# assumes. A committed but unmerged change is a noop by D2.
OUTCOMES = ('success', 'noop', 'failure', 'retry', 'capacity')


def _lines(text):
    return sorted(text.splitlines())


def check_capture(capture, agent=None) -> list:
    """Every problem with one capture, as strings (empty when it is well formed)."""
    if not isinstance(capture, dict):
        return ['not a mapping']
    cid = capture.get('id', '?')
    bad = []

    def err(msg):
        bad.append('%s: %s' % (cid, msg))

    for key in RUN_KEYS + SAMPLE_KEYS:
        if key not in capture:
            err('missing %r' % key)
    for key in capture:
        if key not in RUN_KEYS + SAMPLE_KEYS + OPTIONAL:
            err('unknown key %r' % key)
    if capture.get('agent') not in AGENTS:
        err('agent %r not in %s' % (capture.get('agent'), AGENTS))
    if agent is not None and capture.get('agent') != agent:
        err('agent %r in the %s file' % (capture.get('agent'), agent))
    package = capture.get('package')
    if not isinstance(package, str) or '@' not in package.lstrip('@') or not package.rsplit('@', 1)[1]:
        err('package must be "<npm name>@<exact version>"')
    elif package.rsplit('@', 1)[1] not in str(capture.get('version')):
        err('version %r does not name the package version %s' % (capture.get('version'), package))
    argv = capture.get('argv')
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        err('argv must be a list of strings')
    if capture.get('retries') is not None and not isinstance(capture.get('retries'), int):
        err('retries must be an integer or null (the CLI\'s default)')
    code, timed_out = capture.get('exit_code'), capture.get('timed_out')
    if not isinstance(timed_out, bool):
        err('timed_out must be true or false')
    elif timed_out != (code is None):
        err('exit_code is null exactly when the run timed out')
    if code is not None and not isinstance(code, int):
        err('exit_code must be an integer')
    if not isinstance(capture.get('duration_s'), (int, float)):
        err('duration_s must be a number')
    try:
        when = datetime.datetime.fromisoformat(str(capture.get('captured')).replace('Z', '+00:00'))
        if when.tzinfo is None:
            err('captured must carry a zone')
    except ValueError:
        err('captured must be an ISO-8601 instant')
        when = None
    if not isinstance(capture.get('requests'), list):
        err('requests must be a list (empty when nothing listened)')
    text, out, errs = capture.get('text'), capture.get('stdout'), capture.get('stderr')
    if all(isinstance(t, str) for t in (text, out, errs)) and _lines(text) != sorted(_lines(out) + _lines(errs)):
        err('text must be stdout and stderr merged (the same lines)')
    expect = capture.get('expect') if isinstance(capture.get('expect'), dict) else {}
    outcome = expect.get('outcome')
    if outcome not in OUTCOMES:
        err('expect.outcome %r not in %s' % (outcome, OUTCOMES))
    elif expect.get('kind') in ('rate_limit', 'revoked') and outcome != 'capacity':
        err('a %s is a capacity close-out, not %r (D8)' % (expect.get('kind'), outcome))
    elif outcome == 'retry' and expect.get('kind') != 'transient':
        err('only a transient reading is retried (D7), not %r' % expect.get('kind'))
    # the rest is the corpus sample's own rules; a capture's provenance is its run, not a URL
    sample = {k: capture[k] for k in SAMPLE_KEYS + OPTIONAL if k in capture}
    sample['expect'] = {k: v for k, v in expect.items() if k != 'outcome'}
    sample['agent'] = 'claude' if capture.get('agent') == 'qwen' else capture.get('agent')
    if isinstance(sample.get('id'), str) and capture.get('agent') == 'qwen':
        sample['id'] = 'claude-' + sample['id']
    sample['source'] = 'https://capture.invalid/%s' % cid
    sample['reported'] = when.date() if when else None
    bad.extend(check_sample(sample, real=True))
    return bad


def _load(path):
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    assert isinstance(data, list), '%s must hold a YAML list of captures' % path.name
    return data


FILES = sorted(CAPTURES.glob('*.yml'))


def test_files_are_per_agent():
    assert FILES and {p.stem for p in FILES} <= set(AGENTS), [p.name for p in FILES]


@pytest.mark.parametrize('path', FILES, ids=[p.name for p in FILES])
def test_captures_wellformed(path):
    problems = []
    for capture in _load(path):
        problems.extend(check_capture(capture, agent=path.stem))
    assert not problems, '\n'.join(problems)


def test_capture_ids_unique():
    ids = [c.get('id') for p in FILES for c in _load(p)]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


GOOD = {
    'id': 'codex-throttle', 'agent': 'codex', 'package': '@openai/codex@0.171.0', 'version': 'codex-cli 0.171.0',
    'scenario': 'throttle', 'argv': ['codex', 'exec', '--json', '-'], 'retries': 1, 'exit_code': 1,
    'timed_out': False, 'duration_s': 21.0, 'captured': '2026-12-05T03:20:00Z', 'requests': ['POST /v1/responses -> 429'],
    'stream': 'mixed', 'format': 'jsonl', 'text': '{"type":"turn.started"}\nwarn\n',
    'stdout': '{"type":"turn.started"}\n', 'stderr': 'warn\n', 'trimmed': False,
    'expect': {'kind': 'transient', 'outcome': 'retry', 'reset_at': None, 'reset_text': None, 'turns': None,
               'cost_usd': None},
    'note': 'example',
}


def test_checker_accepts_the_good_example():
    assert check_capture(GOOD) == []


@pytest.mark.parametrize('changes, fragment', [
    ({'version': 'codex-cli 0.170.0'}, 'does not name'),
    ({'package': '@openai/codex'}, 'package must'),
    ({'exit_code': None}, 'timed out'),
    ({'text': 'other\n'}, 'merged'),
    ({'captured': '2026-12-05 03:20'}, 'zone'),
    ({'agent': 'copilot'}, 'agent'),
    ({'source': 'https://example.com'}, 'unknown key'),
    ({'expect': {'kind': 'throttle', 'outcome': 'retry', 'reset_at': None, 'reset_text': None, 'turns': None,
                 'cost_usd': None}}, 'kind'),
    ({'expect': dict(GOOD['expect'], outcome=None)}, 'expect.outcome'),
    ({'expect': dict(GOOD['expect'], kind='rate_limit', outcome='retry')}, 'capacity close-out'),
    ({'expect': dict(GOOD['expect'], kind='failure', outcome='retry')}, 'only a transient'),
])
def test_checker_rejects(changes, fragment):
    problems = check_capture(dict(GOOD, **changes))
    assert any(fragment in p for p in problems), problems
