# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``board_table``: every item of a ``board_info`` read, whether it came back in the result or was written to its
``table`` file (``module_utils._board.table``, the one reader of that file)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.fleet.dispatch.plugins.module_utils._board.table import TableError, read_table


def board_table(result):
    """The items of ``result`` (a registered ``board_info`` answer): its ``table`` file when it wrote one, else
    its ``board_items``."""
    if not isinstance(result, dict) or not (result.get('table') or isinstance(result.get('board_items'), list)):
        raise AnsibleFilterError('board_table expects the registered answer of fleet.dispatch.board_info (its board_items '
                                 'or its table)')
    if result.get('table'):
        try:
            return read_table(result['table'])
        except TableError as exc:
            raise AnsibleFilterError(str(exc))
    return list(result['board_items'])


class FilterModule(object):
    def filters(self):
        return {'board_table': board_table}
