# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Agent profiles: how one agent CLI is run and how its output is read (D2, D16).

Pure functions, no I/O. A profile names the argv, how the brief is passed (never on argv), which
result envelopes are its own, where its output states usage, and how its CLI takes an item's model
and effort (``route_argv``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .envelope import ENVELOPE_SHAPES


@dataclass(frozen=True)
class AgentProfile:
    """How one agent CLI is run and read.

    ``argv``: the command; ``brief``: ``stdin`` (the brief file is the agent's standard input) or
    ``file`` (``{brief_file}`` in argv); never argv for the brief itself (``brief_in_argv``). ``envelopes``: which
    result shapes count as this agent's envelope (``claude_result``: the last ``type: result``
    object of ``-p --output-format json|stream-json``; ``codex_turn``: the last ``turn.completed``
    event of ``codex exec --json``; ``gemini_json``: the ``{"response", "stats"}`` object of
    ``gemini -p --output-format json``). Qwen Code prints Claude Code's ``type: result`` object, last in a
    JSON array (json) or as the last line (stream-json).
    """

    name: str
    argv: Tuple[str, ...]
    brief: str
    envelopes: Tuple[str, ...]
    doc: str = ''
    usage: str = ''                  # where its output states usage: USAGE_WHEN
    states_cost: Optional[bool] = None   # whether it states a cost at all (None: the command decides)
    stream_argv: Tuple[str, ...] = ()    # the argv whose output states usage as it streams, when argv's does not
    route_args: Tuple[Tuple[str, str, str], ...] = ()   # how its CLI takes an item's model/effort: (key, option, prefix)
    route_at: int = 1                    # where in argv they go (after the executable, or its subcommand)
    unattended: Tuple[str, ...] = ()     # its non-interactive permission switch: a run has nobody to approve a tool call


# Where a profile's output states the agent's usage, so when a run budget can be checked (UsageMeter):
# ``message`` after every model response (Claude Code and Qwen Code stream-json ``assistant`` lines), ``turn`` at
# each turn the CLI reports (Codex ``turn.completed``; ``codex exec`` runs one turn, so at its end), ``result`` only in
# the final result (Gemini CLI json and stream-json ``stats``), ``any`` whatever the command prints.
USAGE_WHEN = ('message', 'turn', 'result', 'any')

PROFILES = {
    'claude': AgentProfile(
        'claude', ('claude', '-p', '--output-format', 'json'), 'stdin', ('claude_result',),
        'Claude Code: the brief on stdin; one JSON result object (stream-json: the last type=result line); '
        'num_turns, total_cost_usd, usage; errors in result/errors/api_error_status; rate_limit_event lines',
        usage='message', states_cost=True,
        stream_argv=('claude', '-p', '--output-format', 'stream-json', '--verbose'),
        route_args=(('model', '--model', ''),), unattended=('--dangerously-skip-permissions',)),
    'codex': AgentProfile(
        'codex', ('codex', 'exec', '--json', '-'), 'stdin', ('codex_turn',),
        'OpenAI Codex CLI: "-" reads the brief from stdin; JSONL events (thread.started, turn.started, item.*, '
        'turn.completed with usage, turn.failed, error); no cost is stated', usage='turn', states_cost=False,
        route_args=(('model', '-m', ''), ('effort', '-c', 'model_reasoning_effort=')), route_at=2,
        unattended=('--dangerously-bypass-approvals-and-sandbox', '--skip-git-repo-check')),
    'gemini': AgentProfile(
        'gemini', ('gemini', '--output-format', 'json', '-p', 'Follow the brief given on standard input.'), 'stdin',
        ('gemini_json', 'claude_result'),
        'Gemini CLI: the brief on stdin (appended to -p); one JSON object {"response", "stats", "error"}; '
        'token counts per model in stats; no cost or turn count is stated', usage='result', states_cost=False,
        route_args=(('model', '-m', ''),), unattended=('--yolo',)),
    'qwen': AgentProfile(
        'qwen', ('qwen', '--output-format', 'json', '-p', 'Follow the brief given on standard input.'), 'stdin',
        ('claude_result',),
        'Qwen Code: the brief on stdin (appended to -p); one JSON array whose last type=result object is Claude '
        "Code's shape (subtype, is_error, num_turns, usage; errors as \"[API Error: ...]\" in error.message); "
        'no cost is stated; stream-json prints each assistant message with its usage',
        usage='message', states_cost=False,
        stream_argv=('qwen', '--output-format', 'stream-json', '-p', 'Follow the brief given on standard input.'),
        route_args=(('model', '-m', ''),), unattended=('--yolo',)),
    'custom': AgentProfile(
        'custom', (), 'stdin', ENVELOPE_SHAPES,
        "the runner config's agent_command ({brief_file} in it, else the brief on stdin); any known envelope",
        usage='any'),
}
DEFAULT_PROFILE = 'custom'


def profile(name: Any) -> AgentProfile:
    """The profile called ``name`` (None or '' -> ``custom``); ValueError for an unknown name."""
    key = str(name or DEFAULT_PROFILE).strip().lower()
    if key not in PROFILES:
        raise ValueError('unknown agent %r: one of %s' % (name, ', '.join(sorted(PROFILES))))
    return PROFILES[key]


BRIEF_ARGV = '{brief}'
"""The placeholder that once put the brief's text in the agent's argv. It is refused (``brief_in_argv``)."""


def brief_in_argv(command: Any) -> str:
    """Why ``command`` (an agent argv) cannot run, or '' when it can: a word holding ``{brief}`` would put
    the private brief (the item's text and its mentions) in ``/proc/PID/cmdline``, which every user of the
    worker reads. The brief goes on standard input (every profile: Claude Code ``-p`` and Gemini CLI read
    it there, Codex CLI ``exec -``) or as a file only the agent reads (``{brief_file}``)."""
    for word in command or ():
        if BRIEF_ARGV in str(word):
            return ('agent_command %r puts the brief on the command line ({brief}), where every user of the worker '
                    'reads it in /proc/PID/cmdline: remove {brief} from worker_runner_agent_command and give the '
                    'agent the brief on stdin (the default) or as {brief_file}' % (str(word)[:60],))
    return ''


def agent_argv(name: Any, agent_command: Optional[List[str]] = None, streaming: bool = False, given: Any = ()) -> List[str]:
    """The argv a profile runs: an explicit ``agent_command`` wins (``custom`` needs one). ``streaming``: the
    argv whose output states usage as it streams (``stream_argv``: a run with a budget), where the profile has one.
    A profile's argv ends with its non-interactive permission switch (``unattended``: nobody is there to approve
    a tool call), but for a word the worker's own arguments ``given`` already hold (Codex CLI refuses a flag
    given twice); the caller appends ``given`` after it."""
    prof = profile(name)
    if agent_command:
        return list(agent_command)
    if not prof.argv:
        raise ValueError('the custom agent needs agent_command')
    have = set(str(word) for word in given or ())
    return list(prof.stream_argv if streaming and prof.stream_argv else prof.argv) + [w for w in prof.unattended if w not in have]


_ROUTE_VALUE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$')
"""A model or effort name given to a CLI as an argument: a word of name characters that cannot be read
as an option (no leading ``-``) nor as more than one value (no space, ``=``, quote or comma)."""


def _sets(given: Any, option: str, prefix: str) -> bool:
    """Whether the arguments ``given`` already set what ``option`` (with ``prefix``) would: the same option, or
    for a ``-c key=`` override the same key (also as ``--config key=...`` or Codex's ``-c model=`` for ``-m``)."""
    words = [str(w) for w in given or ()]
    key = prefix.rstrip('=') if prefix else ('model' if option in ('-m', '--model') else '')
    for index, word in enumerate(words):
        if not prefix and (word == option or word.startswith(option + '=') or word in ('-m', '--model')
                           or word.startswith('--model=')):
            return True
        if key and word in ('-c', '--config') and index + 1 < len(words) and words[index + 1].split('=', 1)[0].strip() == key:
            return True
        if key and word.startswith('--config=') and word[len('--config='):].split('=', 1)[0].strip() == key:
            return True
    return False


def route_argv(name: Any, argv: List[str], route: Dict[str, str], given: Any = ()) -> Tuple[List[str], List[str]]:
    """``argv`` with the item's model and effort as the profile's CLI takes them (``AgentProfile.route_args``:
    Codex CLI ``-m MODEL -c model_reasoning_effort=EFFORT`` after ``exec``, Claude Code ``--model MODEL``,
    Gemini CLI and Qwen Code ``-m MODEL``), and what was left out: ``(argv, refused)``, each refusal a sentence. A value
    that is not a plain name (``_ROUTE_VALUE``) is never put on the command line; a custom profile takes
    none (its command reads ``AGENT_MODEL``/``AGENT_EFFORT``). ``given``: the worker's own agent arguments; one
    that already sets the option (``-m X``, ``--model=X``, ``-c model_reasoning_effort=...``) wins, as the
    worker's environment does."""
    prof = profile(name)
    added, refused = [], []
    for key, option, prefix in prof.route_args:
        value = str((route or {}).get(key) or '').strip()
        if not value:
            continue
        if _sets(given, option, prefix):
            continue
        if not _ROUTE_VALUE.match(value):
            refused.append('the item\'s %s %r is not a plain name: not passed to the %s CLI' % (key, value[:60], prof.name))
            continue
        added.extend([option, prefix + value])
    out = list(argv)
    return out[:prof.route_at] + added + out[prof.route_at:], refused


__all__ = ['AgentProfile', 'BRIEF_ARGV', 'DEFAULT_PROFILE', 'PROFILES', 'USAGE_WHEN', 'agent_argv', 'brief_in_argv', 'profile',
           'route_argv']
