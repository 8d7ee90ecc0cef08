# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A controller module's body run in the controller's own process, by its action plugin.

A module task on the controller pays for a module payload, a temporary directory and a new interpreter that imports
``ansible.module_utils.basic`` again: most of a small board read's task time (``board_info``, 0.7-1.0 s of about 1 s
on a 2-core machine). When the task runs on the controller as the controller's user, its action calls the same
``run(module)`` the module calls, with ``InProcessModule`` standing in for ``AnsibleModule``: the options validated
with the module's own argument spec, its warnings said on stderr, and every ``no_log`` value masked in the result as
``AnsibleModule`` masks it. Elsewhere (a delegated host, become, a task ``environment``) the module runs as ever.
"""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values


class _Done(Exception):
    """``exit_json`` or ``fail_json`` was called: the module's answer."""

    def __init__(self, result):
        super(_Done, self).__init__('module done')
        self.result = result


class InProcessModule(object):
    """What a controller module's ``run(module)`` uses of ``AnsibleModule``: ``params``, ``check_mode``, ``warn``,
    ``exit_json`` and ``fail_json`` (neither returns)."""

    def __init__(self, params, check_mode=False):
        self.params = params
        self.check_mode = check_mode
        self.warnings = []

    def warn(self, warning):
        self.warnings.append(warning)

    def exit_json(self, **kwargs):
        raise _Done(kwargs)

    def fail_json(self, msg, **kwargs):
        raise _Done(dict(kwargs, msg=msg, failed=True))


def local_controller_task(connection, play_context, task):
    """Whether the task runs here, as this process's user, with this process's environment: a local connection, no
    become and no task ``environment`` (anything else runs the module)."""
    transport = getattr(connection, 'transport', None) or getattr(connection, '_load_name', '')
    environment = getattr(task, 'environment', None) or []
    if isinstance(environment, dict):
        environment = [environment]
    return (str(transport).rsplit('.', maxsplit=1)[-1] == 'local' and not getattr(play_context, 'become', False)
            and not any(environment))


def run_in_process(run, argument_spec, args, check_mode=False):
    """``run(module)`` on ``args`` validated by ``argument_spec``: ``(result, warnings)``, both with every ``no_log``
    value masked; a validation error is a failed result with the validator's message, as the module's would be."""
    validated = ArgumentSpecValidator(argument_spec).validate(args)
    # what AnsibleModule masks with
    no_log = validated._no_log_values  # pylint: disable=protected-access
    if validated.error_messages:
        return {'failed': True, 'msg': remove_values('; '.join(validated.error_messages), no_log)}, []
    module = InProcessModule(validated.validated_parameters, check_mode=check_mode)
    try:
        run(module)
        result = {'failed': True, 'msg': 'the module returned without an answer'}
    except _Done as done:
        result = done.result
    return remove_values(result, no_log), [remove_values(w, no_log) for w in module.warnings]
