# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Closing references, defang and attribution by time (D2, D14, D16)."""
from __future__ import annotations

import datetime as dt

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Artifact
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import attribute, closed_numbers, closing_refs, defang

UTC = dt.timezone.utc
START = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def at(seconds):
    return START + dt.timedelta(seconds=seconds)


@pytest.mark.parametrize('text, refs', [
    ('Closes #12', [('', 12)]),
    ('closes #12', [('', 12)]),
    ('CLOSED #12', [('', 12)]),
    ('Fix #1', [('', 1)]), ('fixes #2', [('', 2)]), ('fixed #3', [('', 3)]),
    ('resolve #4', [('', 4)]), ('resolves #5', [('', 5)]), ('Resolved #6', [('', 6)]),
    ('close #7', [('', 7)]),
    ('Fixes: #12', [('', 12)]),
    ('Fixes:#12', [('', 12)]),
    ('Fixes   #12', [('', 12)]),
    ('Fixes\n#12', [('', 12)]),
    ('fixes acme/widgets#12', [('acme/widgets', 12)]),
    ('fixes Acme/Widgets#12', [('acme/widgets', 12)]),
    ('fixes https://github.com/acme/widgets/issues/12', [('acme/widgets', 12)]),
    ('resolves GH-12', [('', 12)]),
    ('Closes #1, closes #2 and fixes #1', [('', 1), ('', 2)]),
    ('> Closes #12', [('', 12)]),            # the forge ignores quoting (D14)
    ('(fixes #12)', [('', 12)]),
    # D16: the verb's object is not the reference
    ('This PR fixes the failing criterion from VERIFY #6038', []),
    ('fixes issue #12', []),
    ('Closes #1, #2', [('', 1)]),            # the forge needs a keyword per reference
    ('fixes the bug in #12', []),
    # not keywords
    ('prefixes #3', []), ('unfixed #3', []), ('closure #3', []), ('fixing #3', []), ('closes_#3', []),
    # bare numbers are never references
    ('2026-11-30 12:00:01 6038 ERROR worker died', []),
    ('6038', []),
    ('Closes #60381', [('', 60381)]),          # D16: digits are a whole number, never a prefix
    ('see log: 6038 started; fixes #603', [('', 603)]),
    ('#6038', []),
    ('fixes #12abc', []),
    ('', []), (None, []),
])
def test_closing_refs(text, refs):
    assert closing_refs(text) == refs


NASTY = [
    'Close #12',
    'Remedy: Close #12 once the dependency lands.',
    '> Close #12\n> (quoted verbatim, to refute it)',
    '> > Fixes: #12',
    '**Fixes** #12',
    '_closes_ #12',
    '`fixes #12`',
    '```\nfixes #12\n```',
    'fixes fixes #12',
    'closes closes closes: #12',
    'Fixes #1, fixes #2, resolves o/r#3, close GH-4, fixed https://github.com/o/r/issues/5',
    'FIXES\t:\t#12',
    'fixes\n> #12',
    'Fixes [#12](https://github.com/o/r/issues/12)',
    'fixes&nbsp;#12',
    u'fixes\u00a0#12',
    'close #12close #13',
]


@pytest.mark.parametrize('text', NASTY)
def test_defang_leaves_no_live_reference(text):
    out = defang(text)
    assert closing_refs(out) == []
    assert defang(out) == out                      # idempotent
    for ref_digit in ('12', '13', '1', '2'):       # the human still reads the numbers
        if ref_digit in text:
            assert ref_digit in out


@pytest.mark.parametrize('text', [
    'fixes issue #12',
    'This PR fixes the failing criterion from VERIFY #6038',
    'no references here',
    '',
])
def test_defang_leaves_harmless_text_alone(text):
    assert defang(text) == text


def test_defang_keeps_readable_sentence():
    assert defang('Close #12 by hand.') == 'Close issue #12 by hand.'
    assert defang('fixes: o/r#3') == 'fixes: issue o/r#3'


def art(created, merged_at, closes=(42,), merged=True, ref='o/r#100'):
    return Artifact(ref=ref, created_at=at(created), merged=merged,
                    merged_at=at(merged_at) if merged_at is not None else None, closes=list(closes))


@pytest.mark.parametrize('name, artifacts, zero_turns, repo, credited', [
    ('merged after start, closes this item', [art(60, 120)], False, '', [0]),
    # D16: a quota-limited run merged nothing and was credited with a previous run's PR
    ('created and merged before start', [art(-3600, -3000)], False, '', []),
    ('created before start, merged after', [art(-60, 60)], False, '', []),
    # D16: two five-second runs were credited with a PR in another repo
    ('zero turns: nothing, by construction', [art(2, 4)], True, '', []),
    ('D2: an open PR is not finished', [art(60, None, merged=False)], False, '', []),
    ('merged flag without time', [art(60, None, merged=True)], False, '', []),
    ('closes another item', [art(60, 120, closes=(43,))], False, '', []),
    ('tie with the start is not credited', [art(0, 30)], False, '', []),
    ('repo-qualified reference to this repo', [art(60, 120, closes=['o/r#42'])], False, 'o/r', [0]),
    ('repo-qualified reference to another repo', [art(60, 120, closes=['x/y#42'])], False, 'o/r', []),
    ('tuple reference', [art(60, 120, closes=[('O/R', 42)])], False, 'o/r', [0]),
    ('mixed', [art(-60, -30), art(60, 120), art(60, None, merged=False), art(70, 130)], False, '', [1, 3]),
])
def test_attribute(name, artifacts, zero_turns, repo, credited):
    got = attribute(artifacts, 42, START, zero_turns, repo=repo)
    assert got == [artifacts[i] for i in credited], name


def test_attribute_unknown_start_credits_nothing():
    assert attribute([art(60, 120)], 42, None, False) == []
    assert attribute([art(60, 120)], 42, 'not a time', False) == []


def test_attribute_accepts_dicts_and_iso_strings():
    artifact = {'ref': 'o/r#1', 'created_at': '2026-11-30T12:01:00Z', 'merged': True,
                'merged_at': '2026-11-30T12:02:00Z', 'closes': [42]}
    assert attribute([artifact], 42, '2026-11-30T12:00:00Z', False) == [artifact]
    broken = dict(artifact, merged_at='yesterday')
    assert attribute([broken], 42, START, False) == []


@pytest.mark.parametrize('name, artifacts, started, credited', [
    ('open PR since start is a side effect', [art(60, None, merged=False)], START, [0]),
    ('merged since start', [art(60, 120)], START, [0]),
    ('old PR is not', [art(-60, -30)], START, []),
    ('other item', [art(60, 120, closes=(7,))], START, []),
    ('unknown creation time counts (cannot prove it is older)', [Artifact(ref='x', created_at=None, closes=[42])], START, [0]),
    ('unknown start: every closing artifact counts', [art(-60, -30), art(60, None, merged=False)], None, [0, 1]),
])
def test_artifacts_since(name, artifacts, started, credited):
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import artifacts_since
    assert artifacts_since(artifacts, 42, started) == [artifacts[i] for i in credited], name


def test_artifacts_since_ignores_turns_unlike_attribute():
    """D7 fact 4 must not be vacuous: attribute() is empty for zero turns, artifacts_since is not."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import artifacts_since
    pr = art(2, 4)
    assert attribute([pr], 42, START, True) == []
    assert artifacts_since([pr], 42, START) == [pr]


@pytest.mark.parametrize('text, repo, numbers', [
    ('Closes #12 and fixes o/r#13, resolves x/y#14', 'o/r', [12, 13]),
    ('Closes #12 and fixes o/r#13, resolves x/y#14', '', [12]),
    ('Closes #12, closes #12', 'O/R', [12]),
    ('This PR fixes the failing criterion from VERIFY #6038', 'o/r', []),
])
def test_closed_numbers(text, repo, numbers):
    assert closed_numbers(text, repo) == numbers


def test_defang_fuzz():
    """Seeded combinations of keywords, separators, quoting and reference forms: never a live ref."""
    import random
    rng = random.Random(14)
    keywords = ['close', 'Closes', 'CLOSED', 'fix', 'Fixes', 'fixed', 'resolve', 'Resolves', 'resolved']
    seps = ['', ' ', '  ', ':', ': ', ' : ', '\n', '\t', ':\n', '** ', '**: ', '_ ', '` ', '\n> ', ' [', '&nbsp;', u'\u00a0']
    refs = ['#12', 'o/r#12', 'Org-1/re.po_2#12', 'GH-12', 'gh-12', 'https://github.com/o/r/issues/12', 'http://ghe.local/o/r/pull/12']
    wraps = ['%s', '> %s', '> > %s', '**%s**', '`%s`', '(%s)', '- %s', '%s.', 'x %s y', '%s %s']
    for _dummy in range(3000):
        piece = rng.choice(keywords) + rng.choice(seps) + rng.choice(refs)
        wrap = rng.choice(wraps)
        text = wrap % ((piece,) * wrap.count('%s'))
        out = defang(text)
        assert closing_refs(out) == [], (text, out)
        assert defang(out) == out


def test_d14_story_pr_quoting_a_generated_report():
    """D14: every remedy said 'Close #N'; a PR quoted it verbatim in a blockquote to refute it, and
    the merge closed the issue the PR existed to protect. Generated text goes through defang, so
    quoting it (in any markup) carries no live reference."""
    from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import format_marker
    remedy = format_marker('failure', {'remedy': 'Close #12 when the dependency lands'},
                           text='Remedy: Close #12 when the dependency lands')
    pr_body = 'This PR refutes the report:\n\n' + '\n'.join('> ' + line for line in remedy.splitlines()) + '\n\nFixes #99'
    assert closing_refs(pr_body) == [('', 99)]
