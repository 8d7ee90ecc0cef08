# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fan-out: per-worker calls in, per-master answers out (thin: ``_core/dispatch/fanout.py``)."""

from __future__ import annotations

from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.fanout import (
    launch_answers, launch_work, phase_timings, probe_answers)


class FilterModule(object):
    def filters(self):
        return {
            'probe_answers': probe_answers,
            'launch_work': launch_work,
            'launch_answers': launch_answers,
            'phase_timings': phase_timings,
        }
