"""The agent-output corpus is well formed (issue 10, item 4).

This checks the data only -- schema, provenance, counts -- not any classifier. It loads every
file under ``agent_outputs/``; ``check_sample`` returns the problems of one sample, and the
self-tests at the bottom prove it reports bad samples, so this test can fail.
"""
from __future__ import annotations

import datetime
import pathlib
import re
from urllib.parse import urlparse

import pytest
import yaml

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / 'agent_outputs'
REAL_FILES = {'claude.yml': 'claude', 'codex.yml': 'codex', 'gemini.yml': 'gemini'}
CONSTRUCTED_FILE = 'constructed.yml'

AGENTS = {'claude', 'codex', 'gemini'}
KINDS = {'success', 'noop_claim', 'failure', 'transient', 'rate_limit', 'revoked'}
STREAMS = {'stdout', 'stderr', 'mixed', 'unknown'}
FORMATS = {'text', 'json', 'stream-json', 'jsonl'}
REQUIRED = ('id', 'agent', 'source', 'reported', 'stream', 'format', 'text', 'trimmed', 'expect', 'note')
REQUIRED_EXPECT = ('kind', 'reset_at', 'reset_text', 'turns', 'cost_usd')
OPTIONAL = {'origin', 'now', 'unsure'}
OPTIONAL_EXPECT = {'reset_local', 'reset_in_s', 'usage'}
CONSTRUCTED_EXTRA = {'constructed', 'derived_from', 'how'}
MIN_REAL = 60
MIN_PER_AGENT = 15
ID_RE = re.compile(r'^[a-z0-9]+(?:-[a-z0-9]+)*$')
TRIM_MARK = '[...]'


def _https(url) -> bool:
    if not isinstance(url, str):
        return False
    parsed = urlparse(url)
    return parsed.scheme == 'https' and bool(parsed.netloc) and ' ' not in url


def _aware(value) -> bool:
    """An ISO-8601 instant with a zone (``Z`` or an offset)."""
    if isinstance(value, datetime.datetime):
        return value.tzinfo is not None
    if not isinstance(value, str):
        return False
    try:
        parsed = datetime.datetime.fromisoformat(value.replace('Z', '+00:00'))
    except ValueError:
        return False
    return parsed.tzinfo is not None


def _naive(value) -> bool:
    """A local wall-clock date-time without a zone (the zone was not stated)."""
    if not isinstance(value, str):
        return False
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return False
    return parsed.tzinfo is None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def check_sample(sample, real: bool = True, agent: str | None = None) -> list:
    """Every problem with one sample, as strings (empty when it is well formed)."""
    if not isinstance(sample, dict):
        return ['not a mapping']
    sid = sample.get('id', '?')
    bad = []

    def err(msg):
        bad.append('%s: %s' % (sid, msg))

    for key in REQUIRED:
        if key not in sample:
            err('missing %r' % key)
    allowed = set(REQUIRED) | OPTIONAL | (set() if real else CONSTRUCTED_EXTRA)
    for key in sample:
        if key not in allowed:
            err('unknown key %r' % key)
    if not isinstance(sid, str) or not ID_RE.match(sid):
        err('id must be lower-case words joined by "-"')
    if sample.get('agent') not in AGENTS:
        err('agent %r not in %s' % (sample.get('agent'), sorted(AGENTS)))
    if agent is not None and sample.get('agent') != agent:
        err('agent %r in the %s file' % (sample.get('agent'), agent))
    if real:
        if isinstance(sid, str) and not sid.startswith('%s-' % sample.get('agent')):
            err('a real sample id starts with its agent name')
        if not _https(sample.get('source')):
            err('source must be an https URL, got %r' % (sample.get('source'),))
        if sample.get('constructed'):
            err('constructed sample in a real file')
    else:
        if sample.get('constructed') is not True:
            err('constructed.yml entries need constructed: true')
        if isinstance(sid, str) and not sid.startswith(('constructed-', 'adjacent-')):
            err('constructed ids start with constructed- or adjacent-')
        if sample.get('source') is not None:
            err('a constructed sample has no source of its own (use derived_from)')
        derived = sample.get('derived_from')
        if not isinstance(derived, list) or not derived or not all(_https(u) for u in derived):
            err('derived_from must be a non-empty list of https URLs')
        if not isinstance(sample.get('how'), str) or not sample['how'].strip():
            err('how must say what was constructed or where it came from')
    reported = sample.get('reported')
    if reported is not None and not isinstance(reported, datetime.date):
        try:
            datetime.date.fromisoformat(str(reported))
        except ValueError:
            err('reported must be a date (YYYY-MM-DD) or null')
    if sample.get('stream') not in STREAMS:
        err('stream %r not in %s' % (sample.get('stream'), sorted(STREAMS)))
    fmt = sample.get('format')
    if fmt not in FORMATS:
        err('format %r not in %s' % (fmt, sorted(FORMATS)))
    text = sample.get('text')
    if not isinstance(text, str) or not text.strip():
        err('text must be a non-empty string')
        text = ''
    if fmt in ('json', 'stream-json', 'jsonl') and '{' not in text:
        err('format %s but no JSON object in text' % fmt)
    trimmed = sample.get('trimmed')
    if not isinstance(trimmed, bool):
        err('trimmed must be true or false')
    elif trimmed != (TRIM_MARK in text):
        err('trimmed: true exactly when the text carries the %s marker' % TRIM_MARK)
    if 'now' in sample and not _aware(sample['now']):
        err('now must be an ISO-8601 instant with a zone')
    if 'unsure' in sample and (not isinstance(sample['unsure'], str) or not sample['unsure'].strip()):
        err('unsure must say what is unsure')
    if not isinstance(sample.get('note'), str) or not sample['note'].strip():
        err('note must be a non-empty line')

    expect = sample.get('expect')
    if not isinstance(expect, dict):
        err('expect must be a mapping')
        return bad
    for key in REQUIRED_EXPECT:
        if key not in expect:
            err('expect is missing %r' % key)
    for key in expect:
        if key not in set(REQUIRED_EXPECT) | OPTIONAL_EXPECT:
            err('unknown expect key %r' % key)
    kind = expect.get('kind')
    if kind not in KINDS:
        err('kind %r not in %s' % (kind, sorted(KINDS)))
    reset_at, reset_text = expect.get('reset_at'), expect.get('reset_text')
    if reset_at is not None and not _aware(reset_at):
        err('reset_at must be an ISO-8601 instant with a zone, or null')
    if reset_text is not None:
        if not isinstance(reset_text, str) or not reset_text:
            err('reset_text must be a string span or null')
        elif reset_text not in text:
            err('reset_text %r is not a span of the text' % reset_text)
    has_reset = any(expect.get(k) is not None for k in ('reset_at', 'reset_local', 'reset_in_s'))
    if has_reset and reset_text is None:
        err('a reset (reset_at, reset_local, reset_in_s) needs the reset_text that states it')
    if has_reset and kind not in ('rate_limit', 'transient'):
        err('only rate_limit or transient samples carry a reset, not %r' % kind)
    if 'reset_local' in expect and not _naive(expect['reset_local']):
        err('reset_local must be a zone-less ISO date-time')
    if 'reset_in_s' in expect and not (isinstance(expect['reset_in_s'], int) and expect['reset_in_s'] >= 0):
        err('reset_in_s must be a non-negative integer of seconds')
    turns, cost = expect.get('turns'), expect.get('cost_usd')
    if turns is not None:
        if not (isinstance(turns, int) and not isinstance(turns, bool) and turns >= 0):
            err('turns must be a non-negative integer or null')
        elif 'num_turns' not in text:
            err('turns given but the text states no num_turns')
    if cost is not None:
        if not _number(cost):
            err('cost_usd must be a non-negative number or null')
        elif repr(cost) not in text and str(cost) not in text:
            err('cost_usd %r does not appear in the text' % cost)
    usage = expect.get('usage')
    if usage is not None:
        if not isinstance(usage, dict) or not usage:
            err('usage must be a mapping of token counts')
        else:
            for name, value in usage.items():
                if not (isinstance(value, int) and value >= 0):
                    err('usage %s must be a non-negative integer' % name)
                elif '"%s":%d' % (name, value) not in text.replace('": ', '":').replace('\n ', ''):
                    err('usage %s=%d does not appear in the text' % (name, value))
    return bad


def _load(name):
    path = DATA / name
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    assert isinstance(data, list), '%s must hold a YAML list of samples' % name
    return data


def _all():
    real = {name: _load(name) for name in REAL_FILES}
    constructed = _load(CONSTRUCTED_FILE)
    return real, constructed


def test_files_present():
    names = sorted(p.name for p in DATA.glob('*.yml'))
    assert names == sorted(list(REAL_FILES) + [CONSTRUCTED_FILE]), names


@pytest.mark.parametrize('name', sorted(REAL_FILES))
def test_real_samples_wellformed(name):
    problems = []
    for sample in _load(name):
        problems.extend(check_sample(sample, real=True, agent=REAL_FILES[name]))
    assert not problems, '\n'.join(problems)


def test_constructed_samples_wellformed():
    problems = []
    for sample in _load(CONSTRUCTED_FILE):
        problems.extend(check_sample(sample, real=False))
    assert not problems, '\n'.join(problems)


def test_ids_unique_across_files():
    real, constructed = _all()
    ids = [s.get('id') for samples in real.values() for s in samples] + [s.get('id') for s in constructed]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, dupes


def test_counts():
    real = _all()[0]
    per_agent = {agent: len(real[name]) for name, agent in REAL_FILES.items()}
    total = sum(per_agent.values())
    assert total >= MIN_REAL, 'only %d real samples (need %d): %s' % (total, MIN_REAL, per_agent)
    thin = {a: n for a, n in per_agent.items() if n < MIN_PER_AGENT}
    assert not thin, 'agents under %d real samples: %s' % (MIN_PER_AGENT, thin)


def test_every_kind_is_represented():
    real, constructed = _all()
    kinds = {s['expect']['kind'] for samples in real.values() for s in samples}
    kinds |= {s['expect']['kind'] for s in constructed}
    assert kinds == KINDS, 'kinds without any sample: %s' % sorted(KINDS - kinds)


# --- the checker itself must catch bad samples --------------------------------------------------

GOOD = {
    'id': 'claude-example-1', 'agent': 'claude', 'source': 'https://github.com/o/r/issues/1',
    'reported': datetime.date(2025, 6, 14), 'stream': 'unknown', 'format': 'text',
    'text': 'Claude usage limit reached. Your limit will reset at 1pm (Etc/GMT+5).', 'trimmed': False,
    'expect': {'kind': 'rate_limit', 'reset_at': '2025-06-14T18:00:00Z', 'reset_text': 'reset at 1pm (Etc/GMT+5)',
               'turns': None, 'cost_usd': None},
    'note': 'example',
}


def _variant(**changes):
    sample = dict(GOOD, expect=dict(GOOD['expect']))
    for key, value in changes.items():
        if key.startswith('expect_'):
            sample['expect'][key[len('expect_'):]] = value
        elif value is KeyError:
            sample.pop(key)
        else:
            sample[key] = value
    return sample


def test_checker_accepts_the_good_example():
    assert check_sample(GOOD) == []


@pytest.mark.parametrize('changes, fragment', [
    ({'source': 'http://example.com/x'}, 'https URL'),
    ({'source': None}, 'https URL'),
    ({'note': KeyError}, "missing 'note'"),
    ({'agent': 'copilot'}, 'agent'),
    ({'stream': 'tty'}, 'stream'),
    ({'format': 'xml'}, 'format'),
    ({'expect_kind': 'quota'}, 'kind'),
    ({'expect_reset_at': '2025-06-14 18:00'}, 'reset_at'),
    ({'expect_reset_text': 'resets at noon'}, 'not a span'),
    ({'expect_reset_text': None}, 'needs the reset_text'),
    ({'expect_kind': 'failure'}, 'carry a reset'),
    ({'trimmed': True}, 'marker'),
    ({'text': 'cut [...] here'}, 'marker'),
    ({'expect_turns': 3}, 'num_turns'),
    ({'expect_cost_usd': 0.5}, 'does not appear'),
    ({'id': 'Bad ID'}, 'id must be'),
    ({'id': 'codex-example-1'}, 'starts with its agent'),
    ({'extra': 1}, 'unknown key'),
    ({'format': 'json'}, 'no JSON object'),
])
def test_checker_rejects(changes, fragment):
    problems = check_sample(_variant(**changes))
    assert any(fragment in p for p in problems), problems


def test_checker_rejects_constructed_without_provenance():
    sample = _variant(id='constructed-example-1', source=None)
    sample['constructed'] = True
    problems = check_sample(sample, real=False)
    assert any('derived_from' in p for p in problems), problems
    assert any('how must' in p for p in problems), problems
    assert check_sample(sample, real=True)  # a constructed sample is never a real one
