# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's stop signals (D12): SIGTERM/SIGINT become ``Signalled``, held while a marker is being written.

A stop that arrives inside a critical section (a marker being posted) is recorded and raised when the
section ends; after the close-out the run dies of the signal (``default_reraise``), so systemd records it.
"""

from __future__ import annotations

import os
import signal
import time


class Signalled(BaseException):
    """An external SIGTERM/SIGINT arrived (BaseException: no ``except Exception`` may swallow it)."""

    def __init__(self, signum):
        super(Signalled, self).__init__(signum)
        self.signum = signum


def default_reraise(signum):
    """Die of ``signum`` with the default action, so systemd records the signal."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    time.sleep(5)  # the default action of SIGTERM/SIGINT terminates before this returns
    os._exit(128 + signum)


class SignalsMixin(object):
    """The ``Run``'s signal handling: ``_install``/``_restore`` the handlers, ``_enter_critical``/``_leave_critical``."""

    def _on_signal(self, signum, _frame):
        if self._pending is None:
            self._pending = signum
        if self._critical or self._stopping:
            return  # recorded; raised when the critical section ends, or already stopping
        self._stopping = True
        raise Signalled(signum)

    def _install(self):
        if not self.install_signals:
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _restore(self):
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers = {}

    def _enter_critical(self):
        self._critical += 1

    def _leave_critical(self):
        self._critical -= 1
        if not self._critical and self._pending is not None and not self._stopping and not self.closeout_posted:
            self._stopping = True
            raise Signalled(self._pending)
