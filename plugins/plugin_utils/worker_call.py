# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action side of ``fleet.dispatch.worker_probe``/``worker_launch``.

Inside the lease (held from the probe to the launch, D4) each worker gets two calls; most of a module call's time on a worker is Ansible's
module wrapper (unpacking the payload and compiling ``ansible.module_utils.basic`` on every call,
docs/dispatch.md). When ``runner_dir`` names the runner code the worker role installed and that
code is this collection's ``module_utils`` byte for byte (``code_digest``, checked on the worker),
the options are validated here with the module's own spec and the call runs from that code as
``python3 -m ..._runner.worker_call``, the request on stdin (nothing from the board on a command
line), in one SSH exec with the task's become. The module runs instead when ``runner_dir`` is empty,
the code differs, or the call could not start; a launch that started and then broke is a failure,
never run twice. The runner code's warnings are said on stderr, as the module's are (D6).
"""
from __future__ import annotations

import json
import os
import shlex

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_bytes
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.plugins.action import ActionBase

from ansible_collections.fleet.dispatch.plugins.module_utils._host.worker_calls import code_digest
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.boot import python_argv

MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'module_utils')
ENTRY = 'ansible_collections.fleet.dispatch.plugins.module_utils._runner.worker_call'
_DIGEST = {}


def controller_digest():
    """The digest of this collection's module_utils (once per process)."""
    if 'value' not in _DIGEST:
        _DIGEST['value'] = code_digest(MODULE_UTILS)
    return _DIGEST['value']


def first_json(text):
    """The first line of ``text`` that is a JSON object, or None (login banners and the like come first)."""
    for line in (text or '').splitlines():
        line = line.strip()
        if line.startswith('{'):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict):
                return doc
    return None


class WorkerCallAction(ActionBase):
    """Run ``CALL`` from the worker's runner code when it is this collection's, else the module ``MODULE``."""

    CALL = None      # 'probe' or 'launch'
    MODULE = None    # the module's FQCN
    SPEC = None      # the module's argument spec
    RETRY_AFTER_START = False   # may the module run after the runner call started and broke? (probe: yes, it only reads)

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(WorkerCallAction, self).run(tmp, task_vars)
        args = dict(self._task.args)
        runner_dir = args.get('runner_dir') or ''
        reason = ''
        if runner_dir:
            fast, reason = self._from_runner(args, runner_dir, task_vars)
            if fast is not None:
                result.update(fast)
                result.update(call_path='runner', call_path_reason='')
                return result
        out = self._execute_module(module_name=self.MODULE, module_args=args, task_vars=task_vars)
        result.update(out)
        result.update(call_path='module', call_path_reason=reason)
        return result

    def _interpreter(self, task_vars):
        given = task_vars.get('ansible_python_interpreter')
        if given:
            given = self._templar.template(given)
            if not str(given).startswith('auto'):
                return str(given)
        facts = task_vars.get('ansible_facts') or {}
        return facts.get('discovered_interpreter_python') or '/usr/bin/python3'

    def _from_runner(self, args, runner_dir, task_vars):
        """``(result, '')`` from the runner code, or ``(None, why the module must run)``."""
        validator = ArgumentSpecValidator(self.SPEC)
        checked = validator.validate(args)
        if checked.error_messages:
            return None, ''    # the module says what is wrong, in its own words
        request = json.dumps(dict(call=self.CALL, digest=controller_digest(), check=bool(self._play_context.check_mode),
                                  params=checked.validated_parameters), sort_keys=True)
        # from /, isolated: nothing in the master's home or a workspace is imported (boot.py)
        cmd = 'cd / && exec %s' % ' '.join(shlex.quote(a) for a in python_argv(self._interpreter(task_vars), runner_dir, ENTRY))
        try:
            # bytes, as the module path sends its payload: the local connection writes in_data to a pipe as is
            res = self._low_level_execute_command(cmd, sudoable=True, in_data=to_bytes(request, errors='surrogate_or_strict'))
        except (AnsibleError, OSError, TypeError, ValueError) as exc:
            # nothing was started: the call did not reach the worker
            return None, 'the runner call could not be sent (%s)' % exc
        doc = first_json(res.get('stdout'))
        if doc is None:
            why = 'the runner call in %s answered no JSON (rc %s): %s' % (runner_dir, res.get('rc'), (res.get('stderr') or '').strip()[-300:])
            if res.get('rc') in (126, 127) or 'No module named' in (res.get('stderr') or '') or self.RETRY_AFTER_START:
                return None, why
            return dict(failed=True, changed=False, msg=why + '; nothing was retried (the call may have started runs)'), ''
        if 'unavailable' in doc:
            return None, doc['unavailable']
        for text in doc.get('warnings') or []:
            self._display.warning(text)
        out = dict(doc.get('result') or {})
        masked = set(doc.get('masked') or [])
        if masked:
            out = remove_values(out, masked)
        return out, ''
