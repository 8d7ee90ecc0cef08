# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON in an agent's capture, and which objects are what (D7).

Pure functions, no I/O. ``json_objects`` finds every well-formed top-level object in text that mixes
JSON with stderr noise; ``envelope_shape`` names an object that is a CLI's result envelope (Claude
Code ``type: result``, Codex ``turn.completed``, Gemini CLI ``{"response", "stats"}``); ``own_words``
marks the agent's own words and tool traffic, which are never searched for limit signatures. Which
object is a capture's envelope is decided in one place, ``capture.read_capture``.
"""

from __future__ import annotations

import json
import re
from typing import Any, List, Optional, Tuple


# Where a JSON object can start: "{" then optional whitespace then a key's quote or "}". Checked
# before calling the decoder because a failed decode costs O(position) (JSONDecodeError counts
# the lines before the error), which made a 2 MB capture with 20,000 stray braces take seconds.
_OBJECT_START = re.compile(r'\{\s*["}]')
_DECODER = json.JSONDecoder()
# strict=False: a raw newline or tab inside a JSON string (a terminal paste, a wrapped log) is kept.
_LENIENT = json.JSONDecoder(strict=False)
# First decode window, characters; grows x8 while a failure may be the window's cut. Reading
# (this machine, Python 3.11): 300 kB capture with 12,000 broken '{"key": x' fragments around
# one envelope -- whole-capture decoding 1.90 s, windowed 0.07 s. 4096 is an unmeasured choice
# within that: any window that holds a typical broken fragment gives the same order of cost.
_WINDOW = 4096


def json_objects(capture: Any, strict: bool = True) -> List[Tuple[dict, int, int]]:
    """Every top-level well-formed JSON object in ``capture``: ``(obj, start, end)``, left to right.

    Noise before, between and after is skipped; a ``{`` that does not start a well-formed object
    (stderr text, a truncated object) is skipped and scanning resumes at the next ``{``; objects
    nested inside a found object are not reported separately. Only dicts are reported.
    ``strict=False`` accepts raw control characters (a newline) inside strings.
    """
    if not isinstance(capture, str) or '{' not in capture:
        return []
    found = []
    match = _OBJECT_START.search(capture)
    while match:
        index = match.start()
        decoded = _decode_at(capture, index, _DECODER if strict else _LENIENT)
        if decoded is None:
            match = _OBJECT_START.search(capture, index + 1)
            continue
        obj, end = decoded
        if isinstance(obj, dict):
            found.append((obj, index, end))
        match = _OBJECT_START.search(capture, end)
    return found


def _decode_at(capture: str, index: int, decoder: json.JSONDecoder = _DECODER) -> Optional[Tuple[Any, int]]:
    """Decode the JSON value starting at ``index``, or None.

    Decodes a growing window rather than the whole capture: a failed decode costs O(position in
    the text it was given) (JSONDecodeError counts the lines before the error), so decoding from
    the full capture made a 300 kB capture with 12,000 broken fragments take ~2 s. A window is
    widened only when the failure could be the window's own cut (error at its end, or a string
    left unterminated); a complete object inside a window is the same object as in the capture.
    """
    size = _WINDOW
    while True:
        window = capture[index:index + size]
        try:
            obj, end = decoder.raw_decode(window)
            return obj, index + end
        except ValueError as exc:
            if index + size >= len(capture):
                return None
            pos = getattr(exc, 'pos', 0)
            msg = getattr(exc, 'msg', '')
            if pos < len(window) - 1 and not msg.startswith('Unterminated string'):
                return None
            size *= 8


ENVELOPE_SHAPES = ('claude_result', 'codex_turn', 'gemini_json')
"""The result envelopes the reading knows (``AgentProfile.envelopes`` names which ones are a profile's)."""


# The agent's own words and tool traffic: claude stream-json, gemini stream-json (init, message,
# tool_use, tool_result), codex exec --json item events and its pre-0.40 {"msg": {...}} events.
_CONVERSATION = frozenset(['assistant', 'user', 'system', 'stream_event', 'init', 'message', 'tool_use', 'tool_result'])
_CODEX_SIGNALS = frozenset(['error', 'stream_error', 'background_event'])   # old codex msg types that are not its words
_CODEX_EVENTS = frozenset(['thread.started', 'turn.started', 'turn.completed', 'turn.failed'])


def envelope_shape(obj: dict) -> str:
    """The envelope shape ``obj`` is (one of ``ENVELOPE_SHAPES``), or '' for any other object."""
    kind = obj.get('type')
    if kind == 'result':
        return 'claude_result'
    if kind == 'turn.completed':
        return 'codex_turn'
    msg = obj.get('msg')
    if kind is None and isinstance(msg, dict) and msg.get('type') == 'task_complete':
        return 'codex_turn'   # codex exec --json before 0.40: {"id": ..., "msg": {"type": "task_complete"}}
    if 'response' in obj and ('stats' in obj or 'error' not in obj) and kind is None:
        return 'gemini_json'
    return ''


def own_words(obj: dict) -> bool:
    """An object that is the agent's own words or tool traffic (never searched for signatures)."""
    kind = obj.get('type')
    if kind in _CONVERSATION or kind in ('thread.started', 'turn.started'):
        return True
    if isinstance(kind, str) and kind.startswith('item.'):
        return True
    msg = obj.get('msg')
    if kind is None and isinstance(msg, dict) and isinstance(msg.get('type'), str):
        return msg['type'] not in _CODEX_SIGNALS
    return False


__all__ = ['ENVELOPE_SHAPES', 'envelope_shape', 'json_objects', 'own_words']
