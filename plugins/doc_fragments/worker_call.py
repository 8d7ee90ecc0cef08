# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The per-worker calls' option for running from the worker's installed runner code, said once."""

    DOCUMENTATION = r'''
options:
  runner_dir:
    description:
      - Where the C(fleet.dispatch.worker) role installed the runner's code on this worker (its
        O(fleet.dispatch.worker#role:main:worker_runner_code_dir)).
      - When set, the action plugin first runs the call from that code (C(python3 -m ...module_utils._runner.worker_call), the
        same functions this module calls), which skips Ansible's module wrapper, but only when that code is this controller's
        collection byte for byte (a digest of its C(module_utils)); otherwise, or when it cannot be run, the module itself runs.
        RV(call_path) says which.
      - Empty (the default) always runs the module.
    type: str
    default: ''
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details:
      - An action plugin of the same name runs the call from the worker's runner code or, failing that, this module.
'''
