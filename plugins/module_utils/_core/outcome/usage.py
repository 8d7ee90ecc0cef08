# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Usage and cost as the agent states them (D16, D20).

Pure: no I/O. ``token_count`` counts a usage object's input plus output tokens; ``UsageMeter`` reads the
usage events of a capture one by one -- live as it grows, and after the run -- into a ``Spend``. Nothing
is estimated or priced here: a figure the output does not state stays None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .envelope import envelope_shape, json_objects


def num_or_none(value: Any) -> Optional[float]:
    """``value`` when it is a number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def int_or_none(value: Any) -> Optional[int]:
    """``value`` when it is an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def gemini_usage(stats: Any) -> Dict[str, Any]:
    """Gemini CLI's per-model token counts (``stats.models.*.tokens``) summed per key."""
    total = {}
    models = stats.get('models') if isinstance(stats, dict) else None
    if not isinstance(models, dict):
        return total
    for model in models.values():
        tokens = model.get('tokens') if isinstance(model, dict) else None
        if isinstance(tokens, dict):
            for key, value in tokens.items():
                if int_or_none(value) is not None:
                    total[key] = total.get(key, 0) + value
    return total


def clean_usage(usage: Any) -> Dict[str, Any]:
    """The integer counts of a usage object ({} for anything else)."""
    if not isinstance(usage, dict):
        return {}
    return dict((k, v) for k, v in usage.items() if int_or_none(v) is not None)


TOKEN_KEYS = ('input_tokens', 'output_tokens', 'prompt', 'candidates')


def token_count(usage: Any) -> Optional[int]:
    """Input plus output tokens as a usage object states them: Claude Code's and Codex's ``input_tokens`` +
    ``output_tokens`` (Claude's cache reads and writes are stated apart and not counted; Codex's cached input is
    inside its ``input_tokens``), Gemini CLI's ``prompt`` + ``candidates`` (json) or ``input_tokens`` +
    ``output_tokens`` (stream-json). None when it states none: never estimated."""
    if not isinstance(usage, dict):
        return None
    counts = [usage.get(k) for k in TOKEN_KEYS if int_or_none(usage.get(k)) is not None]
    return sum(counts) if counts else None


# --- usage as the agent states it, event by event ------------------------------------------------

@dataclass
class Spend:
    """What the agent stated it spent: ``tokens`` (``token_count``) and ``cost_usd``, each None when the
    output stated none (never estimated, never priced here); ``events``: the usage events read."""

    tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    events: int = 0

    def fields(self) -> Dict[str, Any]:
        """The figures that were stated, as marker fields."""
        return dict((k, v) for k, v in (('tokens', self.tokens), ('cost_usd', self.cost_usd)) if v is not None)


class UsageMeter(object):
    """The agent's usage, read event by event: the one reading of usage, live (``feed``, as the capture
    grows) and after the run (``read_capture`` passes every object of the capture to ``add``).

    Per format: Claude Code stream-json states each model response's usage in its ``assistant`` lines (one
    line per content block, all with the message's usage: counted once per message ``id``, the last line
    wins) and the run's totals and ``total_cost_usd`` in its ``result``; Codex ``exec --json`` states the
    thread's usage so far in each ``turn.completed`` (before 0.40, ``token_count`` events'
    ``total_token_usage``); Gemini CLI states ``stats`` in its final object only (json: per model; stream-json:
    the ``result`` line). A total the CLI states and the sum of the responses it stated are both what was
    spent; the larger is kept. Pure: no I/O.
    """

    def __init__(self):
        self._messages = {}   # type: Dict[str, int]
        self._unnamed = 0
        self._total = None    # type: Optional[int]
        self._cost = None     # type: Optional[float]
        self._events = 0
        self._rest = ''

    def add(self, obj: Any) -> str:
        """Read one JSON object of the output: the kind of usage event it is (``message``, ``turn``,
        ``result``), or '' when it states no usage."""
        if not isinstance(obj, dict):
            return ''
        kind, msg = obj.get('type'), obj.get('msg')
        event, total, cost = '', None, None
        if kind == 'assistant' and isinstance(obj.get('message'), dict):
            message = obj['message']
            count = token_count(message.get('usage'))
            if count is None:
                return ''
            if isinstance(message.get('id'), str) and message['id']:
                self._messages[message['id']] = count
            else:
                self._unnamed += count
            event = 'message'
        elif kind == 'result':       # Claude Code's result; Gemini CLI stream-json's result (stats)
            total = token_count(obj.get('usage'))
            if total is None and isinstance(obj.get('stats'), dict):
                total = token_count(obj['stats'])
            cost = num_or_none(obj.get('total_cost_usd'))
            event = 'result' if total is not None or cost is not None else ''
        elif kind == 'turn.completed':
            total = token_count(obj.get('usage'))
            event = 'turn' if total is not None else ''
        elif kind is None and isinstance(msg, dict) and msg.get('type') == 'token_count':   # codex before 0.40
            info = msg.get('info') if isinstance(msg.get('info'), dict) else {}
            total = token_count(info.get('total_token_usage') if isinstance(info.get('total_token_usage'), dict) else msg)
            event = 'message' if total is not None else ''
        elif kind is None and envelope_shape(obj) == 'gemini_json':
            total = token_count(gemini_usage(obj.get('stats')))
            event = 'result' if total is not None else ''
        if not event:
            return ''
        if total is not None:
            self._total = total if self._total is None else max(self._total, total)
        if cost is not None:
            self._cost = cost
        self._events += 1
        return event

    def feed(self, text: str) -> List[Tuple[str, 'Spend']]:
        """Read the output that followed what was fed before: ``(event, spend after it)`` for each usage
        event on a completed line, in order. An unfinished last line waits for the next ``feed``; an object
        broken over several lines (Gemini CLI's pretty-printed json) is read only by ``read_capture``."""
        lines = (self._rest + (text or '')).split('\n')
        self._rest = lines.pop()
        found = []
        for line in lines:
            for obj, _start, _end in json_objects(line, strict=False):
                event = self.add(obj)
                if event:
                    found.append((event, self.spend))
        return found

    @property
    def spend(self) -> Spend:
        summed = sum(self._messages.values()) + self._unnamed if (self._messages or self._unnamed) else None
        stated = [n for n in (summed, self._total) if n is not None]
        return Spend(tokens=max(stated) if stated else None, cost_usd=self._cost, events=self._events)


def old_codex_usage(objects) -> Dict[str, Any]:
    """The last ``token_count`` event's usage of codex exec --json before 0.40 ({} when none)."""
    usage = {}
    for obj, _start, _end in objects:
        msg = obj.get('msg')
        if isinstance(msg, dict) and msg.get('type') == 'token_count':
            info = msg.get('info') if isinstance(msg.get('info'), dict) else {}
            usage = clean_usage(info.get('total_token_usage') if isinstance(info.get('total_token_usage'), dict) else msg)
    return usage


__all__ = ['Spend', 'TOKEN_KEYS', 'UsageMeter', 'clean_usage', 'gemini_usage', 'int_or_none', 'num_or_none', 'old_codex_usage',
           'token_count']
