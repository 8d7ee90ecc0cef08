# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One master's launch call: the checks of the whole call, then the per-item loop (D3, D4, D11, D20).

``fleet.dispatch.launch`` (one master, run as it) and ``fleet.dispatch.worker_launch`` (every
master of a worker, one call) are two thin callers of these functions (D15: one implementation).
``call_problems`` finds the configuration errors before any unit is touched; ``stale_runners``
asks each runner program its version (D11); ``launch_items`` starts each item with
``_host.systemd.launch`` and names each outcome. ``properties`` are extra unit properties the
caller threads through to ``systemd-run`` (None: none).
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Callable, Dict, List, Optional

from .._core.outcome.agent_env import AGENT_SETENV, SECRET_NAME
from .._core.board.naming import unit_name
from .._core.dispatch.sandbox import properties as sandbox_properties, protected_paths
from .._core.outcome.exits import NOT_UNIT_FAILURES
from .files import home_dir
from .sandbox import default_sandbox_path, read_sandbox_file, run_properties
from .systemd import command_problems, launch, notifier_unit, unit_problems


# the path option's default in worker_launch: the PATH the worker role recorded for the master (D3)
RECORDED_PATH = os.path.join('.config', 'fleet-dispatch', 'path')


def recorded_path(home: str) -> Optional[str]:
    """The PATH ``fleet.dispatch.worker`` recorded in ``home`` (None when there is none)."""
    try:
        with open(os.path.join(home, RECORDED_PATH)) as handle:
            text = handle.read().strip()
    except (IOError, OSError):
        return None
    return text or None


def call_problems(items, path, environment_file, success_exit_status, warn: Callable[[str], Any],
                  mask: Callable[[str], Any]) -> List[str]:
    """Configuration errors of the whole call (checked before any unit is touched)."""
    problems = unit_problems(path, environment_file, success_exit_status)
    if environment_file and os.path.isabs(environment_file):
        if not os.path.isfile(environment_file):
            problems.append('environment_file %s does not exist: the unit would fail to start' % environment_file)
        elif os.stat(environment_file).st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            warn('environment_file %s is readable by group or others; it holds credentials (chmod 0600)' % environment_file)
    for item in items:
        problems += ['item %s: %s' % (item['number'], why) for why in command_problems(item['command'], item['workdir'])]
        for key in item.get('setenv') or {}:
            if key == 'PATH':
                problems.append('item %s: PATH goes in the path option, not setenv' % item['number'])
            elif SECRET_NAME.search(key):
                value = str(item['setenv'][key])
                if value:
                    mask(value)
                warn('item %s: setenv %s looks like a secret; its value is masked here but is visible in systemctl show '
                     'and ps on the worker: secrets belong in environment_file' % (item['number'], key))
    return problems


def stale_runners(runner, items, path, expected) -> List[str]:
    """D11: ask each distinct runner program its version; a refusal names both versions (empty list: all current)."""
    problems = []
    for program in sorted(set(item['command'][0] for item in items)):
        rc, out, err = runner.run([program, '--version'], env={'PATH': path})
        found = None
        try:
            data = json.loads(out)
            if isinstance(data, dict) and isinstance(data.get('version'), str):  # the type before trusting it
                found = data['version']
        except ValueError:
            found = None
        if rc != 0 or found is None:
            problems.append('cannot read the runner version from %s --version (rc=%s): %s; refusing to launch a runner of unknown '
                            'version (expected %s)' % (program, rc, (err or out or '').strip()[:300], expected))
        elif found != expected:
            problems.append('stale runner refused: %s reports version %s, the dispatcher expects %s; update the worker '
                            '(fleet.dispatch.worker, worker_runner_version) or the runner\'s checkout' % (program, found, expected))
    return problems


def agent_setenv(setenv):
    """The agent inherits the launch's non-secret setenv names, and only those (``_core.outcome.agent_env``)."""
    names = sorted(k for k in setenv if not k.startswith('FLEET_') and not SECRET_NAME.search(k))
    return {AGENT_SETENV: ','.join(names)} if names else {}


def sandbox_settings(option=None):
    """The run units' hardening - ``option``, else this master's sandbox file (``{}``: none).

    Checked once for the call: ValueError (naming the file or the key and the fix) before any unit starts."""
    settings = option
    if settings is None:
        settings = read_sandbox_file(default_sandbox_path()) or {}
    sandbox_properties(settings, readonly=protected_paths(home_dir()))
    return settings


def unit_names(items, notifier):
    """``(units, notifiers)`` of the items (ValueError: an item that names no unit)."""
    units = [unit_name(item['number'], item.get('repo') or '') for item in items]
    return units, [notifier_unit(notifier, unit) for unit in units]


def launch_items(sd, items, path, environment_file=None, notifier='fleet-notify@', runner_version=None,
                 success_exit_status=NOT_UNIT_FAILURES, check=False, warn: Callable[[str], Any] = lambda _text: None,
                 properties: Optional[List[str]] = None, sandbox: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Start each item on this master (``sd``); ``{results, launched, refused, failed_to_launch}``.

    ``sandbox``: the settings of ``sandbox_settings``; each run's properties get them, with its workdir writable
    and the runner's own files read-only (``sandbox.run_properties``).

    Raises ValueError (an item's unit name) and ``SystemdError`` (the manager could not be read)
    with the answers so far on the exception's ``partial`` attribute."""
    units, notifiers = unit_names(items, notifier)
    results, launched, refused, failed = [], [], [], []
    planned = set()
    for item, unit, on_failure in zip(items, units, notifiers):
        setenv = dict((str(k), str(v)) for k, v in (item.get('setenv') or {}).items())
        if runner_version:
            setenv.setdefault('FLEET_RUNNER_EXPECTED_VERSION', runner_version)
        setenv.update(agent_setenv(setenv))
        if unit in planned and check:
            # The same item twice in one call: the first start would hold the name.
            res = dict(unit=unit, launched=False, reason='live', invocation_id=None, start_us=None,
                       active_state=None, stderr='')
        else:
            props = list(properties or []) + run_properties(sandbox, item['workdir'])
            extra = {'properties': props} if props else {}
            try:
                res = launch(sd, unit, item['command'], path, environment_file=environment_file,
                             on_failure=on_failure, workdir=item['workdir'], setenv=setenv, check=check,
                             success_exit_status=list(success_exit_status), **extra)
            except Exception as exc:
                exc.partial = dict(results=results, launched=launched, refused=refused, failed_to_launch=failed)
                exc.unit = unit
                raise
        res.pop('argv', None)
        entry = dict(number=item['number'], repo=item.get('repo') or '', unit=unit, launched=res['launched'],
                     reason=res['reason'], invocation_id=res['invocation_id'], start_us=res['start_us'],
                     active_state=res['active_state'], stderr=res['stderr'])
        results.append(entry)
        if res['reason'] in ('launched', 'would-launch'):
            launched.append(unit)
            planned.add(unit)
        elif res['reason'] in ('live', 'unloading'):
            refused.append(unit)
        else:
            failed.append(unit)
            warn('%s failed to launch: %s' % (unit, res['stderr'] or 'no reason given'))
    return dict(results=results, launched=launched, refused=refused, failed_to_launch=failed)
