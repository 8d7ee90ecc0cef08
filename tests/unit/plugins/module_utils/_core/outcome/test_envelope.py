# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON in a capture, and which object is the envelope (D7).

``json_objects`` finds the objects; the one reading, ``_core.outcome.capture.read_capture``, picks the
envelope among them: the last object of the profile's envelope shape, whatever noise surrounds it."""
from __future__ import annotations

import json

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.capture import read_capture
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.envelope import json_objects

ENVELOPE = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 12,
            "result": "Opened PR; {braces} and \"quotes\" inside", "usage": {"input_tokens": 10, "nested": {"a": [1, {"b": 2}]}}}
ENV = json.dumps(ENVELOPE)
EARLIER = json.dumps({"type": "result", "subtype": "success", "num_turns": 2, "result": "an earlier turn"})


def picked(capture):
    """The envelope the one reading picks in ``capture`` (Claude Code's shape)."""
    return read_capture(capture, 'claude').envelope


@pytest.mark.parametrize('name, capture, expected', [
    ('clean envelope', ENV, ENVELOPE),
    ('stderr noise before and after', 'warning: {not json\n' + ENV + '\nnpm notice } trailing {', ENVELOPE),
    ('D7 story: envelope wrapped in merged stderr', '(node:123) Warning: something {"partial": \n' + ENV + '\n', ENVELOPE),
    ('last of several envelopes; other objects are not one', '{"a": 1}\n' + EARLIER + '\n' + ENV + '\n{"b": 2}', ENVELOPE),
    ('nested objects are not separate', ENV, ENVELOPE),
    ('truncated final object is skipped', ENV + '\n{"type": "result", "num_turns": 3, "result": "cut of', ENVELOPE),
    ('braces inside strings of noise', 'error: unexpected "{" at 3\n' + ENV, ENVELOPE),
    ('arrays are not objects', '[1, 2, 3]', None),
    ('no json at all', 'Error: connect ECONNREFUSED 127.0.0.1:443', None),
    ('empty', '', None),
    ('not text', None, None),
])
def test_the_reading_picks_the_envelope(name, capture, expected):
    assert picked(capture) == expected, name


def test_an_error_body_is_never_the_envelope():
    error_body = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    assert [obj for obj, _s, _e in json_objects(error_body)] == [json.loads(error_body)]
    assert picked(error_body) is None
    assert picked(ENV + '\n' + error_body) == ENVELOPE


def test_json_objects_positions():
    capture = 'xx{"a": {"b": 1}} yy {"c": 2}'
    found = json_objects(capture)
    assert [obj for obj, _s, _e in found] == [{"a": {"b": 1}}, {"c": 2}]
    for obj, start, end in found:
        assert json.loads(capture[start:end]) == obj


def test_scan_cost_on_a_large_noisy_capture():
    """Not a timing assertion: a 2 MB capture with thousands of stray braces still parses right."""
    noise = ''.join('line %d: {unclosed brace and "quote\n' % i for i in range(20000))
    assert picked(noise + ENV + noise[:1000]) == ENVELOPE
    partial = ''.join('line %d: {"key": broken\n' % i for i in range(3000))   # each a failed decode
    assert picked(partial + ENV + partial) == ENVELOPE


@pytest.mark.parametrize('size', list(range(4040, 4110, 3)) + [40000, 300000])
def test_large_envelopes_across_decode_windows(size):
    """The decoder works on growing windows; objects of every size around a window edge still parse."""
    for pad in ('', 'x' * 13):
        env = {"type": "result", "num_turns": 12345678, "result": 'a{"b"}\\' * (size // 7) + pad, "z": [1.5e10, None, True]}
        text = json.dumps(env)
        assert picked('noise {"k": bad\n' + text + '\n{"tail": 1') == env
        assert picked(text[:-1]) is None          # truncated: not an object
