# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet.dispatch.worker_probe``: the module, or the same call from the worker's installed runner code
when that code is this collection's (``runner_dir``; plugins/plugin_utils/worker_call.py)."""

from __future__ import annotations

from ansible_collections.fleet.dispatch.plugins.module_utils._host.worker_calls import PROBE_SPEC
from ansible_collections.fleet.dispatch.plugins.plugin_utils.worker_call import WorkerCallAction


class ActionModule(WorkerCallAction):
    CALL = 'probe'
    MODULE = 'fleet.dispatch.worker_probe'
    SPEC = PROBE_SPEC
    RETRY_AFTER_START = True
