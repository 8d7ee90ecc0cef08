# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python3 -m ansible_collections.fleet.dispatch.plugins.module_utils._runner``: the runner program."""

from __future__ import annotations

from .cli import main
from .spawn import keep_environment_private

if __name__ == '__main__':
    keep_environment_private()   # the board's secrets in this process's environment stay its own
    raise SystemExit(main())
