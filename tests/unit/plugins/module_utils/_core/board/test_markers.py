# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The marker grammar (D6, D12, D14)."""
from __future__ import annotations

import datetime as dt
import unicodedata

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import (
    GLYPHS, ITEM_FINAL, KINDS, TERMINAL, Marker, format_marker, kind_of, last_marker, markers_of, parse_marker)
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import Comment, Item
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.references import closing_refs

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def test_every_kind_has_its_own_single_codepoint_glyph():
    assert set(GLYPHS) == set(KINDS)
    glyphs = list(GLYPHS.values())
    assert len(set(glyphs)) == len(glyphs)
    for glyph in glyphs:
        assert len(glyph) == 1, glyph
        assert glyph != u'\ufe0f'
        # 🪫 is Unicode 14 (2021): an older Python's database (3.9 has 13.0) calls it unassigned.
        # The marker code never asks unicodedata, so the glyph still round-trips there (below).
        if unicodedata.unidata_version >= '14.0.0':
            assert unicodedata.category(glyph) == 'So'


def test_terminal_and_item_final():
    assert 'start' not in TERMINAL
    assert TERMINAL == frozenset(KINDS) - {'start', 'handoff'}   # a handoff ends no run (seed 003)
    assert 'handoff' not in ITEM_FINAL
    assert ITEM_FINAL == frozenset(['success'])
    assert 'left_open' not in ITEM_FINAL  # D6: non-terminal for eligibility


FIELDS = {
    'start': {'host': 'w1', 'master': 'agent1', 'unit': 'task-42', 'started_at': T0},
    'success': {'artifacts': ['o/r#5'], 'turns': 12},
    'noop': {'turns': 3},
    'failure': {'exit_code': 1, 'turns': 40},
    'stopped': {'signal': 'SIGTERM'},
    'capacity': {'source': 'rate_limit', 'reset_at': None},
    'retry': {'not_before': T0 + dt.timedelta(seconds=30), 'step': 1, 'signature': 'HTTP 529'},
    'reset': {'reaped_start': 'c17', 'threshold_s': 7200},
    'left_open': {'reason': 'cross-repo PR'},
    'handoff': {'session': 'task-42.r1', 'successor': 'docs', 'successor_session': 'docs-1a2b3c4d'},
    'budget': {'limit': 'tokens', 'budget': {'tokens': 400}, 'spend_at_stop': {'tokens': 450}, 'tokens': 750},
}


@pytest.mark.parametrize('kind', KINDS)
def test_round_trip_every_kind(kind):
    body = format_marker(kind, FIELDS[kind], text='human words for %s' % kind)
    assert body.startswith(GLYPHS[kind] + ' ')
    marker = parse_marker(body, at=T0, comment_id='c1')
    assert marker.kind == kind
    assert marker.at == T0 and marker.comment_id == 'c1'
    assert marker.text == 'human words for %s' % kind
    expected = dict((k, v.strftime('%Y-%m-%dT%H:%M:%S.%fZ') if isinstance(v, dt.datetime) else v)
                    for k, v in FIELDS[kind].items())
    assert marker.fields == expected


def test_default_text_and_no_fields():
    marker = parse_marker(format_marker('noop'))
    assert marker.kind == 'noop' and marker.fields == {} and marker.text
    assert marker.at is None


def test_unknown_kind_refused():
    with pytest.raises(ValueError):
        format_marker('blocked')


def test_retry_not_before_time_accessor():
    marker = parse_marker(format_marker('retry', {'not_before': T0, 'step': 2}))
    assert marker.time('not_before') == T0
    assert marker.fields['step'] == 2
    assert marker.time('missing') is None
    assert parse_marker(format_marker('retry', {'not_before': 'soon'})).time('not_before') is None


@pytest.mark.parametrize('body, kind', [
    (u'\u2705 done', 'success'),
    (u'  \n\u2705 done', 'success'),                      # leading whitespace tolerated
    (u'\ufeff\U0001F680 start', 'start'),                 # BOM tolerated
    (u'\u2705\ufe0f done', 'success'),                    # a variation selector written by another tool
    (u'\U0001F4CC left open on purpose', 'left_open'),
    (u'done \u2705', None),                               # glyph must lead
    (u'left open on purpose', None),                      # D6: no glyph, no marker
    (u'<!-- fleet.dispatch {"kind": "success"} -->', None),   # fields never decide the kind
    (u'\U0001F534 red circle is not ours', None),
    (u'', None), (u'   ', None), (None, None), (42, None),
])
def test_glyph_alone_decides(body, kind):
    assert kind_of(body) == kind
    marker = parse_marker(body)
    assert (marker.kind if marker else None) == kind


@pytest.mark.parametrize('machine', [
    '<!-- fleet.dispatch {"step": 2, -->',          # broken JSON
    '<!-- fleet.dispatch [1, 2] -->',               # JSON but not an object (D5 type check)
    '<!-- fleet.dispatch "text" -->',
    '<!-- fleet.dispatch -->',
    '<!-- something else {"a": 1} -->',
    '',
])
def test_broken_fields_still_parse_as_kind(machine):
    marker = parse_marker(GLYPHS['retry'] + u' fleet.dispatch: retry\n\n' + machine)
    assert marker.kind == 'retry'
    assert marker.fields == {}
    assert marker.time('not_before') is None


@pytest.mark.parametrize('text', [
    'Closes #12',
    'fixes: o/r#3 and resolves GH-4',
    '> Close #12 (the remedy, quoted to refute it)',
    'Fix https://github.com/o/r/issues/9',
    '**Fixes** #12',
])
def test_format_marker_defangs_human_text(text):
    """D14: generated text never carries a live closing keyword."""
    body = format_marker('failure', {'message': text, 'remedy': 'Close #12 by hand'}, text=text)
    assert closing_refs(body) == []
    marker = parse_marker(body)
    assert marker.fields['message'] == text              # machine data round-trips exactly
    assert marker.text.replace('issue ', '') == text     # the human reads the same sentence


def test_fields_cannot_end_the_html_comment():
    body = format_marker('failure', {'message': 'a --> b <!-- c -- d'})
    assert body.count('-->') == 1
    assert parse_marker(body).fields == {'message': 'a --> b <!-- c -- d'}


def test_multiline_text_folds_to_one_line():
    marker = parse_marker(format_marker('failure', text='line one\nline two'))
    assert marker.text == 'line one line two'


def _item(*bodies, start=T0, step=60):
    comments = [Comment(id='c%d' % i, body=b, created_at=start + dt.timedelta(seconds=step * i))
                for i, b in enumerate(bodies)]
    return Item(number=42, title='t', state='open', comments=comments)


def test_markers_of_skips_human_comments_and_keeps_order():
    item = _item(format_marker('start'), 'a human comment', format_marker('failure'), format_marker('start'))
    kinds = [m.kind for m in markers_of(item)]
    assert kinds == ['start', 'failure', 'start']
    assert [m.comment_id for m in markers_of(item)] == ['c0', 'c2', 'c3']
    assert last_marker(item).kind == 'start'


def test_markers_of_sorts_by_time_stably():
    comments = [Comment(id='late', body=format_marker('noop'), created_at=T0 + dt.timedelta(seconds=9)),
                Comment(id='early', body=format_marker('start'), created_at=T0),
                Comment(id='tie', body=format_marker('failure'), created_at=T0)]
    item = Item(number=1, title='t', state='open', comments=comments)
    assert [m.comment_id for m in markers_of(item)] == ['early', 'tie', 'late']


def test_markers_of_accepts_dicts():
    item = {'comments': [{'id': 1, 'body': format_marker('start'), 'created_at': '2026-11-30T12:00:00Z'}]}
    (marker,) = markers_of(item)
    assert marker.kind == 'start' and marker.at == T0 and marker.comment_id == '1'


def test_markers_of_empty():
    assert markers_of(Item(number=1, title='t', state='open')) == []
    assert last_marker(Item(number=1, title='t', state='open')) is None


@pytest.mark.parametrize('with_glyph, last_kind', [(False, 'success'), (True, 'left_open')])
def test_d6_story_invisible_non_terminal_marker(with_glyph, last_kind):
    """D6: the 'finished but left open' marker was first written with no glyph, reasoning the
    item would stay dispatchable. Without a glyph it is not a marker, so the success posted
    seconds earlier stays the last word. With its glyph it displaces the success."""
    left_open = format_marker('left_open', {'reason': 'cross-repo PR cannot close this issue'})
    if not with_glyph:
        left_open = left_open[1:].lstrip()
    item = _item(format_marker('start'), format_marker('success'), left_open, step=5)
    assert last_marker(item).kind == last_kind


def test_marker_is_a_dataclass_with_contract_fields():
    marker = Marker(kind='start', at=T0, fields={'a': 1}, comment_id='x')
    assert marker.glyph == GLYPHS['start']


def test_human_text_cannot_smuggle_fields():
    smuggled = 'see <!-- fleet.dispatch {"not_before": "2099-01-01T00:00:00Z"} --> here'
    body = format_marker('retry', {'not_before': T0}, text=smuggled)
    marker = parse_marker(body)
    assert marker.time('not_before') == T0
    assert body.count('<!--') == 1 and body.count('-->') == 1


def test_last_fields_comment_wins():
    body = GLYPHS['retry'] + ' x <!-- fleet.dispatch {"step": 1} -->\n\n<!-- fleet.dispatch {"step": 2} -->'
    assert parse_marker(body).fields == {'step': 2}
