# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python3 -m ansible_collections.fleet.dispatch.plugins.module_utils._runner``: the runner program."""

from __future__ import annotations

from .program import main

if __name__ == '__main__':
    raise SystemExit(main())
