# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host measurements for placement by headroom: load, memory and CPUs of this machine.

A figure that cannot be read is None and ``warn`` says why: a measurement never refuses.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Tuple


def parse_loadavg(text: str) -> Tuple[float, float, float]:
    """``/proc/loadavg`` → ``(load1, load5, load15)``; ValueError when it does not read."""
    parts = (text or '').split()
    if len(parts) < 3:
        raise ValueError('unexpected /proc/loadavg: %r' % (text,))
    return float(parts[0]), float(parts[1]), float(parts[2])


def parse_meminfo(text: str) -> Dict[str, int]:
    """``/proc/meminfo`` → ``{'MemAvailable': kB, 'MemTotal': kB, ...}`` (kB as the kernel prints them)."""
    out = {}
    for line in (text or '').splitlines():
        key, sep, rest = line.partition(':')
        fields = rest.split()
        if sep and fields and fields[0].isdigit():
            out[key.strip()] = int(fields[0])
    return out


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))   # honours cpusets (containers), unlike os.cpu_count()
    except (AttributeError, OSError):
        return os.cpu_count()


def measure(warn: Callable[[str], Any], proc: str = '/proc') -> Dict[str, Any]:
    """Load, memory and CPUs; ``live_runs`` is None here (the caller counts units)."""
    head = dict(load1=None, load5=None, load15=None, mem_available_kb=None, mem_total_kb=None, cpus=cpu_count(), live_runs=None)
    try:
        head['load1'], head['load5'], head['load15'] = parse_loadavg(_read(os.path.join(proc, 'loadavg')))
    except (IOError, OSError, ValueError) as exc:
        warn('load average not read: %s' % exc)
    try:
        mem = parse_meminfo(_read(os.path.join(proc, 'meminfo')))
        head['mem_available_kb'] = mem.get('MemAvailable')
        head['mem_total_kb'] = mem.get('MemTotal')
        if head['mem_available_kb'] is None:
            warn('MemAvailable missing from %s/meminfo' % proc)
    except (IOError, OSError) as exc:
        warn('memory not read: %s' % exc)
    return head
