# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Closing references, defanging of generated text, and artifact attribution by time.

Pure functions, no I/O, no clock reads.

The rules in full, with their reasons: ``docs/internals.md``, section ``_core/board/references.py``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, List, Optional, Tuple

KEYWORDS = ('close', 'closes', 'closed', 'fix', 'fixes', 'fixed', 'resolve', 'resolves', 'resolved')

# The keyword must be a whole word: "prefixes #3" or "unfixed #3" are not keywords. The
# separator is an optional colon and whitespace only (D16 adjacency: "nothing else").
_KW = r'(?<![\w])(?P<kw>close[sd]?|fix(?:e[sd])?|resolve[sd]?)'
_KEYWORD = _KW + r'(?P<sep>\s*:?\s*)'
# defang is deliberately looser than the forge: markdown emphasis, blockquote marks, link
# brackets and colons between keyword and reference are all treated as "adjacent", because
# for generated text over-defanging costs one extra word and under-defanging closes an issue.
_KEYWORD_LOOSE = _KW + r'(?P<sep>(?:[\s:*_~`>|\[(]|&nbsp;)*)'
_OWNER_REPO = r'[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+'
_REF = (r'(?P<ref>'
        r'(?:https?://[^\s/]+/(?P<urlrepo>' + _OWNER_REPO + r')/(?:issues|pull)/(?P<urlnum>\d+))'
        r'|(?:(?P<repo>' + _OWNER_REPO + r')?#(?P<num>\d+))'
        r'|(?:GH-(?P<ghnum>\d+))'
        r')(?![\w])')
_CLOSING = re.compile(_KEYWORD + _REF, re.IGNORECASE)
_LOOSE = re.compile(_KEYWORD_LOOSE + _REF, re.IGNORECASE)

# What defang puts between the keyword and the reference: a word that is not a keyword and
# not a reference, so the keyword's object is no longer the reference, and the sentence still
# reads naturally ("Closes issue #12").
_DEFANG_WORD = 'issue'


def _ref_of(match) -> Tuple[str, int]:
    if match.group('urlnum'):
        return match.group('urlrepo').lower(), int(match.group('urlnum'))
    if match.group('num'):
        return (match.group('repo') or '').lower(), int(match.group('num'))
    return '', int(match.group('ghnum'))


def closing_refs(text: Optional[str]) -> List[Tuple[str, int]]:
    """Return the ``(repo, number)`` pairs that ``text`` would close on the forge.

    ``repo`` is ``''`` for a same-repository reference (``#12``, ``GH-12``) and the lower-cased
    ``owner/repo`` otherwise. Order of first appearance, no duplicates.
    """
    if not text:
        return []
    found = []  # type: List[Tuple[str, int]]
    for match in _CLOSING.finditer(text):
        ref = _ref_of(match)
        if ref not in found:
            found.append(ref)
    return found


def closed_numbers(text: Optional[str], repo: str = '') -> List[int]:
    """Item numbers ``text`` closes in ``repo``: same-repo references, plus ``owner/repo`` ones naming ``repo``.

    What a board adapter stores in ``Artifact.closes`` from a PR body (D16 adjacency applied).
    With ``repo`` empty, only same-repository references count.
    """
    want = (repo or '').strip().lower()
    numbers = []  # type: List[int]
    for ref_repo, number in closing_refs(text):
        if (not ref_repo or (want and ref_repo == want)) and number not in numbers:
            numbers.append(number)
    return numbers


def _defang_one(match) -> str:
    return match.group('kw') + match.group('sep').rstrip() + ' ' + _DEFANG_WORD + ' ' + match.group('ref')


def defang(text: Optional[str]) -> str:
    """Rewrite live closing references so ``closing_refs(result) == []`` (D14).

    ``"Close #12"`` becomes ``"Close issue #12"``: a human reads the same instruction, the forge
    reads no keyword adjacent to a reference. Applied until nothing is left to rewrite, so
    overlapping or repeated keywords ("fixes fixes #3") cannot leave one live.
    """
    if not text:
        return ''
    out = text
    for _dummy in range(100):  # each pass removes every match it sees; 100 is a safety bound
        new = _LOOSE.sub(_defang_one, out)
        if new == out:
            return out
        out = new
    return out


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def closes_item(entry: Any, number: int, repo: str) -> bool:
    """One entry of an artifact's ``closes`` list: an int, ``(repo, n)``, ``'owner/repo#n'`` or ``'#n'``."""
    if isinstance(entry, bool):
        return False
    if isinstance(entry, int):
        return entry == number
    if isinstance(entry, (tuple, list)) and len(entry) == 2:
        ref_repo, ref_num = entry
    elif isinstance(entry, str):
        text = entry.strip()
        if text.isdigit():
            return int(text) == number
        if '#' not in text:
            return False
        ref_repo, _sep, ref_num = text.rpartition('#')
    else:
        return False
    try:
        ref_num = int(ref_num)
    except (TypeError, ValueError):
        return False
    ref_repo = (ref_repo or '').strip().lower()
    return ref_num == number and (not ref_repo or not repo or ref_repo == repo.strip().lower())


def artifacts_since(artifacts: Iterable[Any], number: int, run_started_at: Any, repo: str = '') -> list:
    """Every artifact closing this item created strictly after the run started, merged OR NOT (D7 fact 4).

    The retry gate's "no side effects" test: an open pull request is a side effect even though it
    is not a success. Unlike ``attribute`` this ignores turns -- for a zero-turn run
    ``attribute`` is empty by construction, which would make the fact vacuous. An unknown start
    (None or unparseable) cannot prove anything postdates it: every closing artifact is returned,
    so the gate sees side effects rather than none.
    """
    from .model import parse_time

    try:
        started = parse_time(run_started_at)
    except ValueError:
        started = None
    found = []
    for artifact in artifacts or ():
        if not any(closes_item(entry, number, repo) for entry in (_get(artifact, 'closes') or ())):
            continue
        if started is not None:
            try:
                created = parse_time(_get(artifact, 'created_at'))
            except ValueError:
                created = None
            if created is not None and created <= started:
                continue
        found.append(artifact)
    return found


def attribute(artifacts: Iterable[Any], number: int, run_started_at: Any, zero_turns: bool, repo: str = '',
              pushed: str = '') -> list:
    """The artifacts that may be credited to the run that started at ``run_started_at`` (D2, D16).

    An artifact counts only when all hold:

    * the run consumed turns -- ``zero_turns`` means no tool call was ever made, so any
      artifact found is by construction someone else's (D16: two five-second runs credited with
      a PR in another repo), and the answer is empty without looking;
    * it is merged (D2: an OPEN pull request is not finished) with a known ``merged_at``;
    * it merged into the branch the forge closes items from (``into_closing_branch`` is not
      ``False``): GitHub closes an issue only for a merge into the default branch, so a merge
      into a release branch is not this item's completion;
    * it closes this item (``closes`` holds ``number``; an entry naming another repository than
      ``repo`` does not count when ``repo`` is given);
    * it was created AND merged strictly after the run started (D16: a quota-limited run that
      merged nothing was credited with the previous run's PR). Strictly: on a tie the artifact
      is not credited, because a false success is invisible while a missing one is a loud no-op.
      One exception, ``pushed``: the ref of the open pull request this run continued and whose head
      the forge shows moved during the run (``_core.dispatch.pr_loop.round_fields``, read from the
      board, not the agent's word) -- it predates the run by construction, so only its merge must.

    ``run_started_at`` of ``None`` means the run's start is unknown: nothing can be proved to
    postdate it, so nothing is credited. Artifacts may be ``_core.board.model.Artifact`` objects or dicts;
    datetimes or ISO strings.
    """
    from .model import parse_time  # local: keep this module importable on its own for defang

    if zero_turns:
        return []
    try:
        started = parse_time(run_started_at)
    except ValueError:
        return []
    if started is None:
        return []
    credited = []
    for artifact in artifacts or ():
        if not _get(artifact, 'merged', False):
            continue
        if _get(artifact, 'into_closing_branch', None) is False:
            continue
        try:
            created = parse_time(_get(artifact, 'created_at'))
            merged_at = parse_time(_get(artifact, 'merged_at'))
        except ValueError:
            continue
        if created is None or merged_at is None:
            continue
        continued = bool(pushed) and str(_get(artifact, 'ref', '')) == pushed
        if not ((created > started or continued) and merged_at > started):
            continue
        if not any(closes_item(entry, number, repo) for entry in (_get(artifact, 'closes') or ())):
            continue
        credited.append(artifact)
    return credited
