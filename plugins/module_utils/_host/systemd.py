# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``systemctl --user`` and ``systemd-run --user``, declared once (the CLI-wrapper shape).

A *run* is one transient user unit ``task-<item>`` on one master. Everything this fleet
asks of a master's user manager goes through ``SystemdUser``: which argv, which environment,
how the output is read. The runner is injected (``_host.cmd``), so tests replay exact argv.

The rules in full, with their reasons: ``docs/internals.md``, section ``_host/systemd.py``.
"""

from __future__ import annotations

import datetime as _dt
import os
import re

from .._core.board.naming import item_of_unit

# ActiveState values (systemd.unit(5), "ActiveState"): a unit in these states has a live process
# tree that a second start must not join.
LIVE_STATES = frozenset(('active', 'activating', 'reloading'))
# Being stopped: processes may still exist, the name frees itself when the stop completes.
UNLOADING_STATES = frozenset(('deactivating',))
# Stopped but still loaded (not yet garbage-collected; ``--collect`` frees it shortly).
STOPPED_STATES = frozenset(('inactive', 'failed'))

# What one probe reads per unit. ExecMainStartTimestampMonotonic is the start we report as
# ``start_us``: it is stamped when the main process is forked, i.e. when the run began to do work
# (oldest wins because it has done the most work). ActiveEnterTimestampMonotonic is the
# fallback for a unit that has no main process stamp yet (0); for a systemd-run service of the
# default Type=simple the two differ by the fork-to-active step only.
#
# CLOCK_MONOTONIC counts from each machine's boot, so ``start_us`` orders runs on ONE worker only.
# For ordering across workers the same probe also reads the wall-clock ExecMainStartTimestamp
# (``--timestamp=us+utc`` prints it with microseconds, e.g. "Mon 2026-11-30 01:01:48.705688 UTC",
# read on the test bed's systemd 252) and returns it as ``start_wall_us`` (epoch µs) and ``started_at``.
UNIT_PROPS = ('Id', 'LoadState', 'ActiveState', 'SubState', 'InvocationID', 'MainPID',
              'ExecMainStartTimestampMonotonic', 'ActiveEnterTimestampMonotonic',
              'ExecMainStartTimestamp', 'ActiveEnterTimestamp')
SHOW_OPTS = ('--timestamp=us+utc',)

TASK_GLOB = 'task-*.service'

_RUNTIME_DIR_RE = re.compile(r'^/run/user/(\d+)/?$')


class SystemdError(Exception):
    """``systemctl``/``systemd-run`` failed in a way the caller must see (message names the fix)."""

    def __init__(self, message, argv=None, rc=None, stderr=''):
        super(SystemdError, self).__init__(message)
        self.argv = list(argv or [])
        self.rc = rc
        self.stderr = stderr


def parse_show(text):
    """Parse ``systemctl show`` output into a list of ``{Key: value}`` blocks (blank-line separated).

    A value may itself contain ``=``; only the first one splits. Lines without ``=`` are ignored.
    """
    blocks, current = [], {}
    for line in (text or '').splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition('=')
        if sep:
            current[key.strip()] = value
    if current:
        blocks.append(current)
    return blocks


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def classify(state):
    """D20: name the state of a unit from its properties.

    Returns ``live`` (ActiveState active/activating/reloading), ``unloading`` (deactivating, or
    loaded but inactive/failed and not yet collected), or ``absent`` (not loaded: the name is free).
    """
    active = state.get('ActiveState', '')
    load = state.get('LoadState', '')
    if active in LIVE_STATES:
        return 'live'
    if active in UNLOADING_STATES:
        return 'unloading'
    if load and load != 'not-found':
        # Loaded (or in an error load state) but not running: the name is still taken until the
        # manager collects it. An unknown ActiveState also lands here: not "live" without positive
        # evidence, but not free either.
        return 'unloading'
    return 'absent'


def parse_wall_us(value):
    """``Mon 2026-11-30 01:01:48.705688 UTC`` (``--timestamp=us+utc``, C locale) → epoch µs, or None."""
    text = (value or '').strip()
    if not text or text == 'n/a':
        return None
    try:
        when = _dt.datetime.strptime(text, '%a %Y-%m-%d %H:%M:%S.%f UTC')
    except ValueError:
        return None
    delta = when - _dt.datetime(1970, 1, 1)
    return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds


def _iso_of_us(value):
    if not value:
        return None
    when = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=value)
    return when.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def unit_record(block):
    """One ``show`` block → the record ``units_info``/``launch`` return (``start_us`` as documented above)."""
    unit_id = block.get('Id', '')
    name = unit_id[:-len('.service')] if unit_id.endswith('.service') else unit_id
    start = _int(block.get('ExecMainStartTimestampMonotonic')) or _int(block.get('ActiveEnterTimestampMonotonic'))
    wall = parse_wall_us(block.get('ExecMainStartTimestamp')) or parse_wall_us(block.get('ActiveEnterTimestamp'))
    item = item_of_unit(name) if name else None
    return {
        'name': name,
        'unit': unit_id,
        'item': item,
        'load_state': block.get('LoadState', ''),
        'active_state': block.get('ActiveState', ''),
        'sub_state': block.get('SubState', ''),
        'invocation_id': block.get('InvocationID', '') or None,
        'main_pid': _int(block.get('MainPID')) or None,
        'start_us': start or None,
        'start_wall_us': wall,
        'started_at': _iso_of_us(wall),
        'state': classify(block),
    }


def runtime_env(uid, environ=None):
    """The environment additions ``systemctl --user`` needs for ``uid`` (see module docstring)."""
    environ = os.environ if environ is None else environ
    want = '/run/user/%d' % int(uid)
    have = environ.get('XDG_RUNTIME_DIR', '')
    match = _RUNTIME_DIR_RE.match(have)
    if not have or (match and int(match.group(1)) != int(uid)):
        return {'XDG_RUNTIME_DIR': want}
    return {}


def unit_problems(path, environment_file=None, success_exit_status=None):
    """Why ``systemd-run`` could not start a run with these unit settings (empty: it can).

    The one check of them: ``SystemdUser.transient_argv`` raises on it, and ``launch`` runs it for
    the whole call before any unit is touched. D3: the PATH is explicit, a transient unit does
    not inherit the caller's.
    """
    problems = []
    if not (path or '').strip():
        problems.append("an explicit PATH is required: a transient unit does not inherit the caller's PATH")
    if environment_file and not os.path.isabs(environment_file):
        problems.append('EnvironmentFile must be an absolute path: %s' % (environment_file,))
    for code in success_exit_status or ():
        if isinstance(code, bool) or not isinstance(code, int) or not 0 < code < 256:
            problems.append('success exit status %r is not an exit code from 1 to 255' % (code,))
    return problems


def property_problems(properties):
    """Why these extra ``Key=value`` unit properties cannot be passed (empty: they can): one line each, a key."""
    problems = []
    for prop in properties or ():
        key, sep, _value = str(prop).partition('=')
        if not sep or not re.match(r'^[A-Za-z][A-Za-z0-9]*$', key) or any(c in str(prop) for c in '\n\r\x00'):
            problems.append('unit property %r is not one Key=value line' % (prop,))
    return problems


def command_problems(argv, workdir=None):
    """Why one run's command could not be started (empty: it can): a command, an absolute workdir."""
    problems = []
    if not argv:
        problems.append("the run's command is empty")
    if workdir and not os.path.isabs(workdir):
        problems.append('the working directory must be an absolute path: %s' % (workdir,))
    return problems


class SystemdUser(object):
    """A master's user manager, reached through an injected runner.

    ``systemctl``/``systemd_run`` are the program paths (modules pass absolute ones found with
    ``get_bin_path``, so an explicit PATH without ``/usr/bin`` cannot hide systemd-run itself).
    """

    def __init__(self, runner, uid=None, environ=None, systemctl='systemctl', systemd_run='systemd-run'):
        self.runner = runner
        self.uid = os.getuid() if uid is None else int(uid)
        self.env = runtime_env(self.uid, environ)
        self.systemctl = systemctl
        self.systemd_run = systemd_run

    # -- reading -------------------------------------------------------------------------

    def _ctl(self, args):
        argv = [self.systemctl, '--user'] + list(args)
        rc, out, err = self.runner.run(argv, env=dict(self.env))
        return argv, rc, out, err

    def show(self, unit, props=UNIT_PROPS):
        """``systemctl --user show UNIT --property=...`` → ``{Key: value}`` (a missing unit reads as not-found)."""
        argv, rc, out, err = self._ctl(['show', unit, '--property=' + ','.join(props)] + list(SHOW_OPTS))
        if rc != 0:
            raise SystemdError('systemctl --user show %s failed (rc=%s): %s' % (unit, rc, err.strip()), argv, rc, err)
        blocks = parse_show(out)
        return blocks[0] if blocks else {}

    def state(self, unit):
        """The unit's record (``unit_record``) including its ``state`` classification."""
        block = self.show(unit)
        if 'Id' not in block or not block.get('Id'):
            block = dict(block, Id=unit if unit.endswith('.service') else unit + '.service')
        return unit_record(block)

    def list_task_units(self):
        """Every loaded ``task-*`` service of this master in ONE call.

        ``systemctl --user show 'task-*.service'`` expands the glob against loaded units and prints
        one block per unit with exactly the properties we need (list-units' JSON lacks
        InvocationID and the timestamps, so it would cost a second call). Units whose name does
        not parse as an item are returned with ``item: None``, never dropped (a parser that
        silently stops matching empties the live set).
        """
        argv, rc, out, err = self._ctl(['show', TASK_GLOB, '--property=' + ','.join(UNIT_PROPS)] + list(SHOW_OPTS))
        if rc != 0:
            raise SystemdError('systemctl --user show %s failed (rc=%s): %s' % (TASK_GLOB, rc, err.strip()), argv, rc, err)
        units = []
        for block in parse_show(out):
            unit_id = block.get('Id', '')
            if not (unit_id.startswith('task-') and unit_id.endswith('.service')):
                continue
            if block.get('LoadState') == 'not-found':
                continue
            units.append(unit_record(block))
        units.sort(key=lambda u: (u['start_us'] or 0, u['name']))
        return units

    def live_units(self):
        """The ``live`` subset of ``list_task_units`` (ActiveState active/activating/reloading)."""
        return [u for u in self.list_task_units() if u['state'] == 'live']

    # -- acting --------------------------------------------------------------------------

    def transient_argv(self, unit, argv, path, environment_file=None, on_failure=None, workdir=None, setenv=None,
                       success_exit_status=None, properties=None):
        """The exact ``systemd-run`` argv for one run (pure; see ``run_transient``).

        ``properties``: further ``Key=value`` unit properties, one ``-p`` each, after the fleet's own
        (the run's sandbox, ``_core.dispatch.sandbox.properties``; ``docs/sandbox.md``).

        ``success_exit_status``: exit codes that are not a failure of the unit, so ``OnFailure=`` does
        not fire for them (a retry or a capacity ending is the mechanism working, and an
        announcer that reports it trains the human to ignore the channel).
        """
        problems = unit_problems(path, environment_file, success_exit_status) + command_problems(argv, workdir)
        problems += property_problems(properties)
        if problems:
            raise ValueError('; '.join(problems))
        out = [self.systemd_run, '--user', '--unit=%s' % unit, '--collect', '-p', 'Type=exec', '--setenv=PATH=%s' % path]
        for key in sorted(setenv or {}):
            out.append('--setenv=%s=%s' % (key, setenv[key]))
        if environment_file:
            out += ['-p', 'EnvironmentFile=%s' % environment_file]
        if on_failure:
            out += ['-p', 'OnFailure=%s' % on_failure]
        codes = []
        for code in success_exit_status or ():
            if code not in codes:
                codes.append(code)
        if codes:
            out += ['-p', 'SuccessExitStatus=%s' % ' '.join(str(c) for c in codes)]
        for prop in properties or ():
            out += ['-p', prop]
        if workdir:
            out.append('--working-directory=%s' % workdir)
        out.append('--')
        out.extend(argv)
        return out

    def run_transient(self, unit, argv, path, environment_file=None, on_failure=None, workdir=None, setenv=None,
                      success_exit_status=None, properties=None):
        """Start one run. Returns ``(rc, stderr)``; never raises on a refusal (the caller reads the state)."""
        full = self.transient_argv(unit, argv, path, environment_file, on_failure, workdir, setenv, success_exit_status,
                                   properties)
        env = dict(self.env)
        env['PATH'] = path
        rc, out, err = self.runner.run(full, env=env)
        return rc, (err or '').strip()

    def stop(self, unit):
        """``systemctl --user stop UNIT``; raises ``SystemdError`` when systemd refuses."""
        argv, rc, out, err = self._ctl(['stop', unit])
        if rc != 0:
            raise SystemdError('systemctl --user stop %s failed (rc=%s): %s' % (unit, rc, err.strip()), argv, rc, err)
        return True


def notifier_unit(template, unit):
    """``fleet-notify@`` + ``task-42`` → ``fleet-notify@task-42.service`` (literal; '' disables)."""
    if not template:
        return None
    if template.endswith('.service'):
        template = template[:-len('.service')]
    if not template.endswith('@'):
        raise ValueError('the notifier must be a template unit name ending in "@": %r' % (template,))
    return '%s%s.service' % (template, unit)


def launch(sd, unit, argv, path, environment_file=None, on_failure=None, workdir=None, setenv=None, check=False,
           success_exit_status=None, properties=None):
    """Launch one run on ``sd`` (a ``SystemdUser``) with the D4/D20 refusals. Never raises for a refusal.

    1. Read the unit first; a ``live`` one is refused without being touched (the pre-flight layer of D4).
    2. ``systemd-run``. In check mode nothing is started (``reason: would-launch``).
    3. On failure, read the unit again and name the refusal from its *state* (D20), never from the
       error text: ``live`` (someone else won the name), ``unloading`` (stopping, or stopped and not
       yet collected: retry next cycle), else ``failed-to-launch`` with systemd-run's stderr.

    Returns ``{unit, launched, reason, invocation_id, start_us, active_state, stderr}``.
    """
    res = {'unit': unit, 'launched': False, 'reason': None, 'invocation_id': None, 'start_us': None,
           'active_state': None, 'stderr': ''}

    def _take(record):
        res.update(invocation_id=record['invocation_id'], start_us=record['start_us'], active_state=record['active_state'])

    before = sd.state(unit)
    if before['state'] == 'live':
        _take(before)
        res['reason'] = 'live'
        return res
    extra = {'properties': properties} if properties else {}   # a SystemdUser stand-in without them still fits
    full = sd.transient_argv(unit, argv, path, environment_file, on_failure, workdir, setenv, success_exit_status, **extra)
    if check:
        res['active_state'] = before['active_state']
        res['reason'] = 'would-launch'
        res['argv'] = full
        return res
    rc, err = sd.run_transient(unit, argv, path, environment_file, on_failure, workdir, setenv, success_exit_status, **extra)
    after = sd.state(unit)
    _take(after)
    if rc == 0:
        res.update(launched=True, reason='launched')
        return res
    res['stderr'] = err
    res['reason'] = after['state'] if after['state'] in ('live', 'unloading') else 'failed-to-launch'
    return res
