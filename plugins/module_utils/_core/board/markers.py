# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The marker grammar: the one place that writes and reads status comments.

Pure functions, no I/O, no clock reads.

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/board/markers.py``.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .model import format_time, parse_time, to_jsonable
from .references import defang

KINDS = ('start', 'success', 'noop', 'failure', 'stopped', 'capacity', 'retry', 'reset', 'left_open', 'handoff', 'budget')

GLYPHS = {
    'start': u'\U0001F680',
    'success': u'\u2705',
    'noop': u'\u26AA',
    'failure': u'\u274C',
    'stopped': u'\U0001F6D1',
    'capacity': u'\U0001FAAB',
    'retry': u'\U0001F501',
    'reset': u'\U0001F9F9',
    'left_open': u'\U0001F4CC',
    'handoff': u'\U0001F517',
    'budget': u'\U0001F4B8',
}  # type: Dict[str, str]

KIND_OF_GLYPH = dict((glyph, kind) for kind, glyph in GLYPHS.items())

# Kinds that end a RUN (a close-out: the runner's EXIT path, or the reaper for an orphan).
# "The last marker is a start" is the only state in which a run is open.
# NOTE: this is about runs, not items. ``left_open`` ends a run but is NOT terminal for the
# item's eligibility -- see ITEM_FINAL.
# ``handoff`` is neither: it follows a run's close-out and says a session chain carries
# the item on; it ends no run (see _core/dispatch/eligibility.py, hold ``chained``).
# ``budget`` ends a run the runner stopped at its budget: not a failure of the work, yet an attempt
# (only capacity and retry endings are uncounted, _core/dispatch/eligibility.py UNCOUNTED_ENDINGS).
TERMINAL = frozenset(k for k in KINDS if k not in ('start', 'handoff'))

# Kinds that, as the last marker, say the ITEM is finished. Only a success: left_open exists
# precisely to say "finished but keep dispatching".
ITEM_FINAL = frozenset(['success'])

DEFAULT_TEXT = {
    'start': 'run started',
    'success': 'done: a merged change closes this item',
    'noop': 'run ended with no merged change (no-op)',
    'failure': 'run failed',
    'stopped': 'run stopped by an external signal; this says nothing about the work',
    'capacity': 'the worker ran out of capacity; this run does not count as an attempt',
    'retry': 'transient failure before any turn; retrying',
    'reset': 'orphaned run reset by the reaper',
    'left_open': 'finished, deliberately left open; still dispatchable',
    'handoff': 'handed off: a session chain carries this item on; not dispatched while the chain lives',
    'budget': 'run stopped at its budget; not a failure of the work, it counts as an attempt',
}

FIELDS_TAG = 'fleet.dispatch'
_FIELDS_RE = re.compile(r'<!--\s*' + re.escape(FIELDS_TAG) + r'\s+(?P<json>.*?)\s*-->', re.DOTALL)
_VS16 = u'\uFE0F'
# Inside JSON strings of the machine comment a few sequences are written as JSON escapes, so
# the raw comment can never carry "-->" (would end the HTML comment early), "<" / ">" / "&"
# (HTML), "#" or "GH-N" (closing references) or "://" (an issue URL reference) -- D14. The
# JSON still decodes to exactly the values given.
_JSON_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_PLAIN_ESCAPES = (('#', '\\u0023'), ('<', '\\u003c'), ('>', '\\u003e'), ('&', '\\u0026'), ('://', ':\\/\\/'))
_GH_RE = re.compile(r'(gh)-(?=\d)', re.IGNORECASE)


@dataclass
class Marker:
    """One parsed marker. ``at`` is the comment's time (aware UTC or None), ``fields`` its machine data."""

    kind: str
    at: Optional[_dt.datetime] = None
    fields: Dict[str, Any] = field(default_factory=dict)
    comment_id: str = ''
    text: str = ''

    @property
    def glyph(self) -> str:
        return GLYPHS[self.kind]

    def time(self, name: str) -> Optional[_dt.datetime]:
        """A time field (e.g. ``not_before``) as an aware datetime; None when absent or unparseable."""
        try:
            return parse_time(self.fields.get(name))
        except (TypeError, ValueError):
            return None


def _escape_one(match) -> str:
    text = match.group(0)
    for plain, escaped in _PLAIN_ESCAPES:
        text = text.replace(plain, escaped)
    while '--' in text:
        text = text.replace('--', '-\\u002d')
    return _GH_RE.sub(lambda m: m.group(1) + '\\u002d', text)


def _escape_json_strings(text: str) -> str:
    return _JSON_STRING_RE.sub(_escape_one, text)


def dump_fields(fields: Optional[Dict[str, Any]]) -> str:
    """The machine fields as the JSON written into the marker (datetimes as ISO ``Z``)."""
    data = to_jsonable(dict(fields or {}))
    return _escape_json_strings(json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(', ', ': ')))


def format_marker(kind: str, fields: Optional[Dict[str, Any]] = None, text: str = '') -> str:
    """The comment body for a marker of ``kind``.

    ``text`` is the human line (defaults to a short description of the kind); it is passed
    through ``_core.board.references.defang`` so a marker never carries a live closing keyword, and
    folded to one line. ``fields`` are written as JSON inside an HTML comment. Raises
    ``ValueError`` for an unknown kind.
    """
    if kind not in GLYPHS:
        raise ValueError('unknown marker kind %r (known: %s)' % (kind, ', '.join(KINDS)))
    human = ' '.join((text or DEFAULT_TEXT[kind]).split())
    human = defang(human)
    # the human line can never open or close an HTML comment (it would hide text, or smuggle fields)
    human = human.replace('<!--', '&lt;!--').replace('-->', '--&gt;')
    return u'%s %s: %s\n\n<!-- %s %s -->' % (GLYPHS[kind], FIELDS_TAG, human, FIELDS_TAG, dump_fields(fields))


def _lead(body: str) -> str:
    """The body from its first non-blank line on: blank lines and a BOM go, indentation stays."""
    text = body.lstrip(u'\ufeff')
    while True:
        line, sep, rest = text.partition('\n')
        if sep and not line.strip():
            text = rest
            continue
        return text


def kind_of(body: Any) -> Optional[str]:
    """The marker kind of a comment body, by its glyph in column 0 of the first non-blank line; None if not a marker.

    Indented text (a Markdown code block), a fence and a blockquote start with something else, so a
    marker quoted in any of them is text, never a marker. Who wrote it is ``is_marker_author``'s rule.
    """
    if not isinstance(body, str):
        return None
    lead = _lead(body)
    if not lead:
        return None
    return KIND_OF_GLYPH.get(lead[0])


def identity(login: Any, kind: Any = '') -> str:
    """An author as compared for marker authority: lower case, no ``@``, and an app's account
    always with its ``[bot]`` suffix (GraphQL names an app's comments ``fleet-app`` with the type
    ``Bot`` while ``viewer`` says ``fleet-app[bot]``). ``kind`` is the account type where the board
    knows it (``Bot``, ``User``; ``''`` unknown): a ``User`` named ``fleet-app`` is not the app
    ``fleet-app[bot]``, so the suffix is how the two are told apart."""
    text = str(login or '').strip().lstrip('@').lower()
    if str(kind or '') == 'Bot' and text and not text.endswith('[bot]'):
        text += '[bot]'
    return text


def is_marker_author(author: Any, authors: Any, kind: Any = '') -> bool:
    """Whether ``author`` (of account type ``kind``, where known) is one of the fleet's identities
    ``authors``; ``None`` means the caller built the item by hand and enforces nothing. An empty
    author is never one. An identity is named as the API names the account: an app as
    ``slug[bot]`` (what ``viewer { login }`` answers for it), a person or machine user by login."""
    if authors is None:
        return True
    who = identity(author, kind)
    return bool(who) and who in set(identity(a) for a in authors)


def not_marker_author(comment: Any, authors: Any) -> Optional[str]:
    """Why a comment cannot be a marker by its authorship, or None when it can (``authors`` None:
    an item built by hand, nothing enforced).

    Its author must be one of the fleet's identities (with the account type, ``identity``), and a
    comment edited since (``edited_at``) must have been edited by one of them too: GitHub lets a
    repository's maintainers edit anyone's comment, so an edited marker carries the editor's text
    under the fleet's name, and it is a human comment from then on. An edit by an account the board
    could not name (``editor`` empty: a deleted account) is not the fleet's.
    """
    if authors is None:
        return None
    author = _get(comment, 'author', '')
    if not is_marker_author(author, authors, kind=_get(comment, 'author_type', '')):
        return '%s is not one of the fleet\'s identities' % (str(author or '') or 'an unknown account')
    if _get(comment, 'edited_at', None) is not None:
        editor = _get(comment, 'editor', '')
        if not is_marker_author(editor, authors, kind=_get(comment, 'editor_type', '')):
            return 'edited by %s, not one of the fleet\'s identities' % (str(editor or '') or 'an unknown account')
    return None


def parse_marker(body: Any, at: Any = None, comment_id: str = '') -> Optional[Marker]:
    """Parse one comment body; ``None`` when it is not a marker (no recognised leading glyph).

    ``at`` (datetime or ISO text) is the comment's time. Broken or non-object JSON gives empty
    fields, never an error: the glyph already decided the kind.
    """
    kind = kind_of(body)
    if kind is None:
        return None
    stripped = _lead(body)[1:]
    if stripped.startswith(_VS16):
        stripped = stripped[1:]
    fields = {}  # type: Dict[str, Any]
    matches = list(_FIELDS_RE.finditer(stripped))
    match = matches[-1] if matches else None  # the writer puts its fields last
    if match:
        try:
            data = json.loads(match.group('json'))
        except ValueError:
            data = None
        if isinstance(data, dict):
            fields = data
        stripped = stripped[:match.start()] + stripped[match.end():]
    first = stripped.strip().split('\n', 1)[0].strip() if stripped.strip() else ''
    prefix = FIELDS_TAG + ':'
    if first.startswith(prefix):
        first = first[len(prefix):].strip()
    try:
        when = parse_time(at)
    except (TypeError, ValueError):
        when = None
    return Marker(kind=kind, at=when, fields=fields, comment_id=str(comment_id or ''), text=first)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def markers_of(item: Any) -> List[Marker]:
    """Every marker among an item's comments, in time order (stable for equal times).

    ``item`` is a ``_core.board.model.Item`` (or a dict with ``comments``); comments are ``_core.board.model.Comment``
    objects or dicts with ``body``, ``created_at``, ``id``. Comments without a time keep their
    position relative to each other and sort before timed ones only if they came first.

    Marker authority: only a comment whose author is one of the item's ``marker_authors`` (set by
    the board that read it: GitHub's ``viewer`` plus ``board.marker_authors``; the ledger's
    recorded author) is a marker; anyone else's glyph-led comment is a human comment
    (``human_markers``), so "✅ LGTM" from a passer-by tombstones nothing (D6).
    """
    return [m for m, _author in authored_markers(item)]


def authored_markers(item: Any) -> List[Any]:
    """``markers_of`` with each marker's comment author: ``[(Marker, author)]`` in the same order."""
    found = []
    authors = _get(item, 'marker_authors', None)
    for index, comment in enumerate(_get(item, 'comments', None) or ()):
        if not_marker_author(comment, authors) is not None:
            continue
        marker = parse_marker(_get(comment, 'body', ''), at=_get(comment, 'created_at'), comment_id=_get(comment, 'id', ''))
        if marker is not None:
            found.append((index, marker, str(_get(comment, 'author', '') or '')))
    if all(m.at is not None for _i, m, _a in found):
        found.sort(key=lambda row: (row[1].at, row[0]))
    return [(m, author) for _i, m, author in found]


def human_markers(item: Any) -> List[Dict[str, Any]]:
    """The glyph-led comments that are NOT markers because their author, or their last editor, is not
    one of the fleet's identities (``not_marker_author``): ``{'id', 'author', 'kind', 'at', 'why'}``
    each, oldest first (``status`` shows them)."""
    authors = _get(item, 'marker_authors', None)
    out = []
    for comment in _get(item, 'comments', None) or ():
        author = _get(comment, 'author', '')
        kind = kind_of(_get(comment, 'body', ''))
        why = not_marker_author(comment, authors) if kind is not None else None
        if why is not None:
            at = _get(comment, 'created_at')
            out.append({'id': str(_get(comment, 'id', '') or ''), 'author': str(author or ''), 'kind': kind,
                        'at': at if isinstance(at, str) or at is None else format_time(at), 'why': why})
    return out


def last_marker(item: Any) -> Optional[Marker]:
    """The last marker of an item (the one that decides eligibility, D6), or None."""
    markers = markers_of(item)
    return markers[-1] if markers else None


__all__ = ['KINDS', 'GLYPHS', 'KIND_OF_GLYPH', 'TERMINAL', 'ITEM_FINAL', 'Marker', 'format_marker', 'parse_marker',
           'kind_of', 'identity', 'is_marker_author', 'not_marker_author', 'markers_of', 'human_markers', 'last_marker', 'dump_fields',
           'format_time']
