# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet.dispatch.board_info``: on the controller, the module's own body in this process (no module payload, no
new interpreter: ``plugin_utils/in_process.py``); anywhere else, the module."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.fleet.dispatch.plugins.module_utils._board_read import ARGUMENT_SPEC, run
from ansible_collections.fleet.dispatch.plugins.plugin_utils.in_process import local_controller_task, run_in_process


class ActionModule(ActionBase):
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        if not local_controller_task(self._connection, self._play_context, self._task):
            result.update(self._execute_module(module_name='fleet.dispatch.board_info', module_args=self._task.args,
                                               task_vars=task_vars))
            return result
        answer, warnings = run_in_process(run, ARGUMENT_SPEC, dict(self._task.args), check_mode=bool(self._play_context.check_mode))
        for text in warnings:
            self._display.warning(text)
        result.update(answer)
        result.setdefault('changed', False)
        return result
