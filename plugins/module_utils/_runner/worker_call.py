# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python3 -m ansible_collections.fleet.dispatch.plugins.module_utils._runner.worker_call``: a worker's
probe or launch call run from the runner code the worker role installed.

The action plugins ``fleet.dispatch.worker_probe``/``worker_launch`` send one JSON request on stdin:
``{"call": "probe"|"launch", "digest": <code_digest of the controller's module_utils>, "check": bool,
"params": <options validated on the controller>}``. When this code is not the controller's byte for
byte, the answer is ``{"unavailable": why}`` and nothing ran (the action then runs the module). Otherwise
it is ``{"result": ..., "warnings": [...], "masked": [...]}``: the same functions the modules call
(``_host.worker_calls``, D15), with ``SubprocessRunner`` for ``run_command``. One JSON document on stdout;
the exit code is 0 whenever that document was written.
"""
from __future__ import annotations

import json
import os
import shutil
import sys

from .._host.cmd import SubprocessRunner
from .._host.worker_calls import LAUNCH_BINS, PROBE_BINS, CallError, code_digest, launch_worker, probe_worker

MODULE_UTILS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the directories get_bin_path adds to PATH (a root call over SSH may have a short PATH)
SBIN = ('/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin')


def find_bins(names):
    """``{name: path}``, as ``AnsibleModule.get_bin_path(required=True)``: a missing one raises ``CallError``."""
    search = os.pathsep.join([os.environ.get('PATH', '')] + list(SBIN))
    out = {}
    for name in names:
        found = shutil.which(name, path=search)
        if not found:
            raise CallError('Failed to find required executable "%s" in paths: %s' % (name, search))
        out[name] = found
    return out


def answer(request, module_utils=MODULE_UTILS):
    """The answer document of one request (never raises on a bad request: it says what was wrong)."""
    if not isinstance(request, dict) or request.get('call') not in ('probe', 'launch') or not isinstance(request.get('params'), dict):
        return dict(unavailable='not a worker call request (want {"call": "probe"|"launch", "params": {...}, "digest": ...})')
    have = code_digest(module_utils)
    if request.get('digest') != have:
        return dict(unavailable='the runner code in %s is not this controller\'s collection (code digest %s, the controller\'s %s): '
                                'run the fleet.dispatch.worker role to install this version' % (module_utils, have[:12], str(request.get('digest'))[:12]))
    warnings, masked = [], []
    runner = SubprocessRunner()
    try:
        if request['call'] == 'probe':
            result = probe_worker(request['params'], runner, find_bins(PROBE_BINS), warnings.append)
        else:
            result, masked = launch_worker(request['params'], runner, find_bins(LAUNCH_BINS), bool(request.get('check')), warnings.append)
    except CallError as exc:
        result = dict(failed=True, msg=str(exc))
    return dict(result=result, warnings=warnings, masked=masked)


def main(stdin=None, stdout=None):
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        request = json.loads(stdin.read())
    except ValueError as exc:
        request = None
        doc = dict(unavailable='the request is not JSON: %s' % exc)
    if request is not None:
        doc = answer(request)
    stdout.write(json.dumps(doc, sort_keys=True) + '\n')
    stdout.flush()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
