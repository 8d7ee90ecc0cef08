# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet-runner classify [--agent NAME] FILE|-``: what the runner reads in a capture, and what it would post.

It calls the functions the runner's close-out calls -- ``_core.outcome.capture.read_capture`` (the one
reading of every agent profile) and ``_core.outcome.closeout.decide`` -- so an operator can ask "why was
this run marked X?" of any ``capture.log``, on a worker or on the controller. Prints one JSON
object; the page is ``docs/classify.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
from typing import Any, Dict, Optional

from .._core.outcome.capture import read_capture, summary
from .._core.outcome.profiles import PROFILES
from .._core.outcome.closeout import decide
from .._core.board.model import Item, format_time, parse_time

UTC = _dt.timezone.utc


def local_zone() -> Any:
    """This machine's zone: ``TZ`` if it names a zone, else ``/etc/localtime``'s name, else the
    current UTC offset. The agent printed zone-less reset times in the zone of the machine it ran on."""
    try:
        from zoneinfo import ZoneInfo
    except ImportError:  # pragma: no cover - Python < 3.9
        ZoneInfo = None
    name = os.environ.get('TZ', '').lstrip(':')
    candidates = [name] if name else []
    try:
        target = os.path.realpath('/etc/localtime')
        if 'zoneinfo/' in target:
            candidates.append(target.split('zoneinfo/', 1)[1])
    except OSError:
        pass
    for candidate in candidates:
        if ZoneInfo is None or not candidate:
            continue
        try:
            return ZoneInfo(candidate)
        except Exception:  # noqa: BLE001 - not a zone name: try the next
            continue
    return _dt.datetime.now().astimezone().tzinfo


def classify(capture: str, agent: Any = None, *, exit_code: Optional[int] = None, now: Any = None, tz: Any = None,
             on_date: Any = None, decision_now: Any = None, stalled: float = 0) -> Dict[str, Any]:
    """The classify object for one capture: the reading (``_core.outcome.capture.summary``) plus ``decision``.

    ``now``/``tz``/``on_date`` are the reading's (see ``read_capture``). ``decision`` is what the
    close-out would post if the forge reports NO artifact since the run's start (``assumes`` says
    so): a merged closing pull request would make any of these a success (D2). Without an exit
    code, the exit is taken as 0 for a success reading and 1 otherwise (``assumes`` says so). ``stalled``:
    the stall limit (seconds) stopped the run, as ``closeout.decide`` takes it.
    """
    reading = read_capture(capture, agent, exit_code=exit_code, now=now, tz=tz, on_date=on_date)
    out = summary(reading)
    assumes = ['the forge reports no artifact for the item since the run started']
    code = exit_code
    if stalled:
        assumes.append('the stall limit (%gs) stopped the agent' % stalled)
    if code is None and stalled:
        code = -15
        assumes.append('exit code -15 (SIGTERM of the stall limit; none given)')
    if code is None:
        code = 0 if reading.kind in ('success', 'noop_claim') else 1
        assumes.append('exit code %d (none given)' % code)
    when = parse_time(decision_now) or parse_time(now) or _dt.datetime.now(UTC)
    item = Item(number=1, title='', state='open')   # any number: an item without artifacts decides alike
    decision = decide(reading.outcome(code), item, number=1, started_at=when - _dt.timedelta(seconds=1), now=when,
                      exit_code=code, capture=capture, stalled=stalled)
    out['decision'] = {'marker': decision.kind, 'exit_code': decision.exit_code, 'text': decision.text,
                       'fields': _jsonable(decision.fields), 'assumes': assumes}
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return dict((str(k), _jsonable(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, _dt.datetime):
        return format_time(value)
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog='fleet-runner classify',
        description='Print one JSON object: what the runner reads in an agent capture (profile, envelope_found, turns, '
                    'claim, kind, transient, signature, reset_at, reset_text, usage, cost_usd) and the close-out it '
                    'would post (decision). The same functions the runner uses.')
    p.add_argument('file', help='a capture (the run directory\'s capture.log), or - for standard input')
    p.add_argument('--agent', choices=sorted(PROFILES), default=None,
                   help='the agent profile (default: "agent" of the runner config, else custom)')
    p.add_argument('--exit-code', type=int, default=None, help='the agent\'s exit code, when known')
    p.add_argument('--stalled', type=float, default=0, metavar='SECONDS',
                   help='the stall limit stopped the agent after SECONDS without a new line (worker_runner_stall_timeout)')
    p.add_argument('--now', default=None,
                   help='when the capture was printed, ISO (default: the file\'s modification time; stdin: now); '
                        '"unknown": durations and passed clock times stay unresolved')
    p.add_argument('--on-date', default=None,
                   help='with --now unknown: the day it was printed (YYYY-MM-DD); a zoned clock time is read on that day')
    p.add_argument('--tz', default=None,
                   help='the zone of times that name none (default: "tz" of the runner config, else this machine\'s)')
    p.add_argument('--config', default=None, help='the runner config JSON to read "agent" and "tz" from')
    return p


def _conf(path: Optional[str], environ) -> Dict[str, Any]:
    path = path or environ.get('FLEET_RUNNER_CONFIG') or os.path.expanduser('~/.config/fleet-dispatch/runner.json')
    try:
        with open(path, 'r', encoding='utf-8') as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def main(argv, *, stdin=None, stdout=None, environ=None) -> int:
    """``fleet-runner classify ...`` (``argv`` without the ``classify`` word); 0, or 2 on a usage error."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    environ = os.environ if environ is None else environ
    args = parser().parse_args(argv)
    conf = _conf(args.config, environ)
    agent = args.agent or conf.get('agent') or 'custom'
    if agent not in PROFILES:
        sys.stderr.write('fleet-runner classify: unknown agent %r in the runner config\n' % (agent,))
        return 2
    try:
        if args.file == '-':
            capture = stdin.read()
            default_now = _dt.datetime.now(UTC)
        else:
            with open(args.file, 'r', encoding='utf-8', errors='replace') as handle:
                capture = handle.read()
            default_now = _dt.datetime.fromtimestamp(os.path.getmtime(args.file), UTC)
        if args.now and args.now.strip().lower() in ('unknown', 'none', 'null'):
            now = None
        else:
            now = parse_time(args.now) if args.now else default_now
        on_date = _dt.date.fromisoformat(args.on_date[:10]) if args.on_date else None
    except (OSError, ValueError) as exc:
        sys.stderr.write('fleet-runner classify: %s\n' % exc)
        return 2
    tz = args.tz or conf.get('tz') or local_zone()
    result = classify(capture, agent, exit_code=args.exit_code, now=now, tz=tz, on_date=on_date, stalled=args.stalled)
    stdout.write(json.dumps(result, sort_keys=False) + '\n')
    return 0
