# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ONE reading of an agent's capture (D2, D7, D8, D16, D20).

Pure functions, no I/O, no clock reads: ``now`` is a parameter. ``read_capture`` reads every
profile's output (``profiles``) through one code path: the envelope (``envelope``), the usage
(``usage``), whether a turn happened, and what the error text says (``signatures``, ``resets``).
``Reading.outcome`` turns the reading into the ``_core.outcome.retry.Outcome`` that the retry gate
and ``_core.outcome.closeout.decide`` take, so ``fleet-runner classify`` and the runner cannot
disagree. This is the only module that reads agent output.

Whether a turn happened is read from output tokens, cost and tool calls (``_work``), never from a
turn counter the CLI fills regardless; output with no envelope, no tool call and no words known is
a failure, never a success.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .capacity import MESSAGE_MAX
from .envelope import envelope_shape, json_objects, own_words
from .profiles import profile
from .resets import Stated, parse_time_safe
from .retry import Outcome
from .signatures import (BROKEN_ENVELOPE, CLAIM_DONE, CLAUDE_OK_KEYS, FAILURE_TEXT, Facts, collect_facts, decide, flat_text,
                         is_google, limit_reset, line_at)
from .usage import Spend, UsageMeter, clean_usage, gemini_usage, int_or_none, num_or_none, old_codex_usage, token_count

KINDS = ('success', 'noop_claim', 'failure', 'transient', 'rate_limit', 'revoked')

# Characters of a matched line kept as the message. Display only; unmeasured guess, see
# _core.outcome.capacity.MESSAGE_MAX (the same bound, the same experiment).
_MESSAGE_MAX = MESSAGE_MAX


@dataclass
class Reading:
    """What a capture says, for one profile: the one reading the runner and ``classify`` share."""

    profile: str
    kind: str
    envelope: Optional[dict] = None
    envelope_shape: str = ''
    turns: Optional[int] = None
    claim: Optional[str] = None             # the agent's word about itself: 'success' | 'error' | None
    signature: str = ''
    evidence: str = ''                      # 'envelope' | 'structured' | 'prose' | ''
    message: str = ''
    reset: Optional[Stated] = None
    usage: Dict[str, Any] = field(default_factory=dict)
    cost_usd: Optional[float] = None
    subtype: str = ''
    result: str = ''
    is_error: Optional[bool] = None
    worked: bool = False                    # a turn happened: output tokens, cost or a tool call (D7)
    signature_text: str = field(default='', repr=False)

    @property
    def envelope_found(self) -> bool:
        return self.envelope is not None

    spend: Optional['Spend'] = None         # every usage the capture states, read as UsageMeter reads it live

    @property
    def tokens(self) -> Optional[int]:
        """Input plus output tokens as the capture states them (``token_count``); None when it states none."""
        return token_count(self.usage)

    @property
    def transient(self) -> bool:
        return self.kind == 'transient'

    @property
    def reset_at(self) -> Optional[_dt.datetime]:
        return None if self.kind == 'revoked' or self.reset is None else self.reset.at

    @property
    def reset_text(self) -> Optional[str]:
        return None if self.kind == 'revoked' or self.reset is None else self.reset.text

    def capacity(self) -> Optional[Dict[str, Any]]:
        """The limit, as ``_core.outcome.capacity.state_from`` and the close-out take it, or None (D8, D20):
        ``{'source': 'rate_limit'|'revoked', 'signature', 'message', 'reset_text', 'reset_at'}``."""
        if self.kind not in ('rate_limit', 'revoked'):
            return None
        return {'source': self.kind, 'signature': self.signature, 'message': self.message[:_MESSAGE_MAX],
                'reset_text': self.reset_text, 'reset_at': self.reset_at}

    def outcome(self, exit_code: Optional[int] = None) -> Outcome:
        """The ``_core.outcome.retry.Outcome`` the retry gate and ``_core.outcome.closeout.decide`` read (D7: one parse)."""
        code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
        turns = (self.turns if self.envelope is not None else None) if self.worked else 0
        is_error = self.is_error
        if self.kind not in ('success', 'noop_claim') and (self.envelope is not None or self.evidence == 'structured'):
            is_error = True
        return Outcome(envelope=self.envelope, turns=turns, is_error=is_error, subtype=self.subtype, result=self.result,
                       exit_code=code, transient=self.signature if self.kind == 'transient' else '',
                       capacity=self.capacity(), signature_text=self.signature_text, worked=self.worked)


# Git's own summary line for a commit it made ("[main 1a2b3c4] add hello", "[main (root-commit) 1a2b3c4] ..."),
# at a line start in the raw text or in a JSON string (an escaped newline): a tool really ran.
_GIT_COMMIT = re.compile(r'(?:^|\n|\\n)[ \t]*\[[\w./-]+(?: \(root-commit\))? [0-9a-f]{7,40}\] ', re.MULTILINE)
# A tool call as the CLIs' plain-text output shows it: Claude Code's "⏺ Bash(git commit ...)", Gemini
# CLI's "✓  Shell git commit ..." box line, Codex's "exec ... succeeded in 12ms:".
_TUI_TOOL = re.compile(u'^[ \t\u2502|]*(?:[\u23fa\u25cf]\\s*(?:Bash|Read|Write|Edit|MultiEdit|Update|Glob|Grep|Task|'
                       u'WebFetch|WebSearch|TodoWrite|NotebookEdit)\\(|[\u2714\u2713]\\s+(?:Shell|WriteFile|ReadFile|Edit|'
                       u'ReadFolder|FindFiles|SearchText|ReadManyFiles|WebFetch|GoogleSearch)\\b)'
                       u'|\\bsucceeded in \\d+ms:', re.MULTILINE)
# Codex item types that are the model's words or bookkeeping, not a tool call.
_CODEX_WORDS = frozenset(['agent_message', 'reasoning', 'todo_list', 'error'])
# Old codex {"msg": {...}} events that start a tool call.
_CODEX_OLD_TOOLS = frozenset(['exec_command_begin', 'patch_apply_begin', 'mcp_tool_call_begin', 'web_search_begin'])


@dataclass
class _Work:
    """What the capture shows the agent did: tool calls (None: the output cannot tell), output
    tokens (None: no usage stated), cost, and its last words."""

    tools: Optional[int] = None
    out_tokens: Optional[int] = None
    cost: float = 0.0
    said: str = ''
    worked: bool = False

    def tool(self, count: int = 1) -> None:
        self.tools = (self.tools or 0) + count

    def tokens(self, value: Any) -> None:
        if int_or_none(value) is not None:
            self.out_tokens = max(self.out_tokens or 0, value)


def _work(text: str, objects, envelope: Optional[dict], shape: str) -> _Work:
    """Did a turn happen (D7 fact 3, D16)? Decided from output tokens, cost and tool calls -- never from
    a counter the CLI fills regardless (Claude Code's and Qwen Code's error envelopes say
    ``num_turns: 1`` with zero usage after every request failed) -- nor from a missing envelope when
    the output shows tool calls or git's own commit line."""
    work = _Work()
    seen_ids = set()
    for obj, _start, _end in objects:
        kind = obj.get('type')
        message = obj.get('message') if isinstance(obj.get('message'), dict) else None
        if kind == 'assistant' and message is not None:          # claude / qwen stream lines
            work.tool(0)
            usage = message.get('usage') if isinstance(message.get('usage'), dict) else {}
            work.tokens(usage.get('output_tokens'))
            for block in message.get('content') or []:
                if isinstance(block, dict) and block.get('type') == 'tool_use':
                    work.tool()
                elif isinstance(block, dict) and block.get('type') == 'text' and isinstance(block.get('text'), str):
                    work.said = block['text']
        elif kind == 'tool_use':                                  # gemini stream-json
            work.tool()
        elif kind == 'message' and obj.get('role') == 'assistant':
            work.tool(0)
            if isinstance(obj.get('content'), str):
                work.said = (work.said + obj['content']) if obj.get('delta') else obj['content']
        elif kind in ('thread.started', 'turn.started'):         # codex exec --json
            work.tool(0)
        elif isinstance(kind, str) and kind.startswith('item.') and isinstance(obj.get('item'), dict):
            item = obj['item']
            work.tool(0)
            if item.get('type') == 'agent_message' and isinstance(item.get('text'), str):
                work.said = item['text']
            elif item.get('type') not in _CODEX_WORDS and item.get('id') not in seen_ids:
                seen_ids.add(item.get('id'))
                work.tool()
        elif kind == 'turn.completed' and isinstance(obj.get('usage'), dict):
            work.tokens(obj['usage'].get('output_tokens'))
        elif kind is None and isinstance(obj.get('msg'), dict):  # codex before 0.40
            msg = obj['msg']
            if msg.get('type') in _CODEX_OLD_TOOLS:
                work.tool()
            elif msg.get('type') == 'agent_message' and isinstance(msg.get('message'), str):
                work.tool(0)
                work.said = msg['message']
            elif msg.get('type') == 'token_count':
                info = msg.get('info') if isinstance(msg.get('info'), dict) else {}
                total = info.get('total_token_usage') if isinstance(info.get('total_token_usage'), dict) else msg
                work.tokens(total.get('output_tokens'))
    error = False
    if envelope is not None:
        usage = envelope.get('usage') if isinstance(envelope.get('usage'), dict) else None
        stats = envelope.get('stats') if isinstance(envelope.get('stats'), dict) else None
        if usage is not None:
            work.tokens(usage.get('output_tokens'))
        if stats is not None:
            work.tokens(stats.get('output_tokens'))               # gemini stream-json result
            if int_or_none(stats.get('tool_calls')) is not None:
                work.tool(stats['tool_calls'])
            for model in (stats.get('models') or {}).values() if isinstance(stats.get('models'), dict) else []:
                tokens = model.get('tokens') if isinstance(model, dict) and isinstance(model.get('tokens'), dict) else {}
                work.tokens(tokens.get('candidates'))             # gemini json
                if isinstance(model, dict):
                    work.tokens(model.get('output_tokens'))
            tools = stats.get('tools') if isinstance(stats.get('tools'), dict) else {}
            if int_or_none(tools.get('totalCalls')) is not None:
                work.tool(tools['totalCalls'])
        cost = num_or_none(envelope.get('total_cost_usd'))
        work.cost = cost or 0.0
        error = (envelope.get('is_error') is True or str(envelope.get('status', '')).lower() == 'error'
                 or isinstance(envelope.get('error'), dict)
                 or str(envelope.get('subtype') or 'success') != 'success')
        if (shape == 'claude_result' and work.tools is None and not error
                and int_or_none(envelope.get('num_turns')) == 1):
            work.tool(0)   # json mode lists no tools, but a tool call needs a second turn to answer it
    commits = len(_GIT_COMMIT.findall(text)) + len(_TUI_TOOL.findall(text))
    if commits:
        work.tool(commits)
    if (work.tools or 0) > 0 or (work.out_tokens or 0) > 0 or work.cost > 0:
        work.worked = True
    elif envelope is not None and work.out_tokens is None:
        # no usage stated: a success envelope, or one that stopped at its turn limit, is taken at its word --
        # unless it says num_turns 0 (a counter may overstate work, D7; saying none is believed, D16)
        work.worked = (not error or envelope.get('subtype') == 'error_max_turns') and envelope.get('num_turns') != 0
    return work


def read_capture(capture: Any, agent: Any = None, *, exit_code: Optional[int] = None, now: Any = None, tz: Any = None,
                 on_date: Any = None) -> Reading:
    """Read one run's capture as profile ``agent`` (default ``custom``): envelope, turns, claim,
    usage, cost, and the kind -- ``success``, ``noop_claim``, ``failure``, ``transient``,
    ``rate_limit`` or ``revoked`` -- with its signature and any stated reset.

    ``now``: when the capture was printed (resolves durations and bare clock times; a passed clock
    time rolls to the next day). ``tz``: the printing machine's zone for times that name none
    (None: such times stay unresolved). ``on_date``: without ``now``, the day it was printed (a
    zoned clock time is read on that day). ``exit_code``: the agent's exit code, when known.
    """
    prof = profile(agent)
    text = capture if isinstance(capture, str) else ''
    when = parse_time_safe(now) if now is not None else None
    day = on_date if isinstance(on_date, _dt.date) else None
    if day is None and on_date:
        try:
            day = _dt.date.fromisoformat(str(on_date)[:10])
        except ValueError:
            day = None
    objects = json_objects(text, strict=False)
    envelope, env_shape, env_end = None, '', 0
    for obj, _start, end in objects:
        shape = envelope_shape(obj)
        if shape and shape in prof.envelopes:
            envelope, env_shape, env_end = obj, shape, end
    work = _work(text, objects, envelope, env_shape)
    meter = UsageMeter()
    for obj, _start, _end in objects:
        meter.add(obj)
    reading = Reading(profile=prof.name, kind='failure', envelope=envelope, envelope_shape=env_shape, spend=meter.spend)
    env_error = False
    if envelope is not None:
        if env_shape == 'claude_result':
            reading.turns = int_or_none(envelope.get('num_turns'))
            reading.cost_usd = num_or_none(envelope.get('total_cost_usd'))
            reading.usage = clean_usage(envelope.get('usage'))
            reading.subtype = str(envelope.get('subtype') or '')
            reading.result = envelope.get('result') if isinstance(envelope.get('result'), str) else ''
            reading.is_error = envelope.get('is_error') if isinstance(envelope.get('is_error'), bool) else None
            env_error = (reading.is_error is True or (reading.subtype not in ('', 'success'))
                         or envelope.get('terminal_reason') not in (None, '', 'completed')
                         or str(envelope.get('status', '')).lower() == 'error')   # gemini stream-json's result line
            if not reading.usage and isinstance(envelope.get('stats'), dict):
                reading.usage = clean_usage(envelope['stats'])
        elif env_shape == 'codex_turn':
            reading.usage = clean_usage(envelope.get('usage')) or old_codex_usage(objects)
        elif env_shape == 'gemini_json':
            reading.usage = gemini_usage(envelope.get('stats'))
            reading.result = envelope.get('response') if isinstance(envelope.get('response'), str) else ''
            env_error = isinstance(envelope.get('error'), dict)
        reading.claim = 'error' if env_error else 'success'
    # the signature text: the capture minus the agent's own words (conversation lines, a success
    # envelope, codex item events) -- and, after a success envelope, only what follows it
    pieces, cursor, facts = [], 0, Facts()
    for obj, start, end in objects:
        shape = envelope_shape(obj)
        own = own_words(obj)
        if obj is envelope and not env_error:
            own = True
        if shape and obj is not envelope:
            own = True   # an earlier envelope: superseded
        if own:
            pieces.append(text[cursor:start])
        else:
            pieces.append(text[cursor:end])
            collect_facts(obj, facts)
            if obj is envelope:
                for key in ('result', 'errors'):
                    value = obj.get(key)
                    values = value if isinstance(value, list) else [value]
                    pieces.extend(str(v) for v in values if isinstance(v, str))
        cursor = end
    pieces.append(text[cursor:])
    if envelope is not None and not env_error:
        tail = text[env_end:]
        pieces = [tail]
        facts = Facts()
        for obj, start, _end in objects:
            if start >= env_end and not own_words(obj):
                collect_facts(obj, facts)
    sig = '\n'.join(p for p in pieces if p)
    reading.signature_text = sig
    flat = flat_text(sig)
    for message in facts.messages:
        flat += '\n' + message
    kind, signature, evidence, match_line = decide(facts, flat, when=when, tz=tz, day=day, google=prof.name == 'gemini')
    reading.worked = work.worked
    if envelope is not None and env_shape == 'claude_result' and not work.worked:
        reading.turns = 0   # the CLI's num_turns counts an attempt that never got an answer (D7)
    if not reading.result and work.said:
        reading.result = work.said
    if kind is None:
        claim_done = bool(CLAIM_DONE.search(reading.result or ''))
        exited = isinstance(exit_code, int) and not isinstance(exit_code, bool)
        if envelope is not None and not env_error:
            if work.tools == 0 and claim_done:
                kind, signature, evidence = 'noop_claim', 'claim_without_tool_use', 'envelope'
            else:
                kind, signature, evidence = 'success', 'envelope', 'envelope'
        elif env_error:
            kind, signature, evidence = 'failure', reading.subtype or 'error_envelope', 'envelope'
        elif exited and exit_code != 0:
            kind, signature, evidence = 'failure', 'exit_code', ''
        else:
            found = FAILURE_TEXT.search(flat) if exit_code is None else None
            if found or facts.statuses or facts.types:
                kind, signature, evidence = 'failure', 'error_text' if found else 'error_body', 'prose' if found else 'structured'
                if found:
                    match_line = line_at(flat, found.start(), found.end())
            elif work.worked and work.tools:
                kind, signature, evidence = 'success', 'tool_calls', 'structured'
            elif work.worked and claim_done and work.tools == 0:
                kind, signature, evidence = 'noop_claim', 'claim_without_tool_use', 'structured'
            elif BROKEN_ENVELOPE.search(text) or (CLAUDE_OK_KEYS[0].search(text) and CLAUDE_OK_KEYS[1].search(text)):
                kind, signature, evidence = 'success', 'envelope_text', 'prose'   # a paste cut or elided it
            else:
                # no envelope, no tool call, no words we know: nothing says the agent finished (D2)
                kind, signature, evidence = 'failure', 'unrecognised', ''
    reading.kind, reading.signature, reading.evidence = kind, signature, evidence
    reading.message = (match_line or '')[:_MESSAGE_MAX]
    if kind in ('rate_limit', 'transient'):
        reading.reset = limit_reset(kind, signature, facts, flat, when=when, tz=tz, day=day,
                                    google=prof.name == 'gemini' or is_google(facts, flat))
    return reading


def is_clean_run(exit_code: Any, capture: Any, agent: Any = None) -> bool:
    """"The next clean run deletes the file" (D8): zero exit AND no limit in the capture, read by
    ``read_capture`` -- the same reading the retry gate and the close-out use (D7) -- so a success
    envelope that merely discusses quotas is not a limit, while a trailing limit notice after a
    zero exit is."""
    if isinstance(exit_code, bool) or exit_code != 0:
        return False
    return read_capture(capture, agent, exit_code=exit_code).capacity() is None


def summary(reading: Reading) -> Dict[str, Any]:
    """The reading as the JSON fields ``fleet-runner classify`` prints (``decision`` added by the caller)."""
    at = reading.reset_at
    return {
        'profile': reading.profile,
        'envelope_found': reading.envelope_found,
        'turns': reading.turns,
        'claim': reading.claim,
        'kind': reading.kind,
        'transient': reading.transient,
        'signature': reading.signature,
        'reset_at': at.strftime('%Y-%m-%dT%H:%M:%SZ') if at is not None else None,
        'reset_text': reading.reset_text,
        'usage': dict(reading.usage),
        'cost_usd': reading.cost_usd,
        'spend': reading.spend.fields() if reading.spend is not None else {},
    }


__all__ = ['KINDS', 'Reading', 'is_clean_run', 'read_capture', 'summary']
