# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Renamed return values: the old key stays for one major release, deprecated where it is read.

``items`` was a return key of ``board_info`` (and ``units_info``); in a template ``result.items`` is
the dict's own ``items`` method, not the list (validate-modules of ansible-core 2.21 refuses the key
for that reason). The new key carries the value; the old one carries the same value tagged with
``deprecate_value``: ansible-core 2.21 warns where a template reads it, or templates the whole
result (2.19 and 2.20 drop the tag on the way to the controller). So the tag goes only on a result
the dispatch path never templates whole: ``units_info``'s is passed whole to the guard on every
probe, and keeps its old key untagged (deprecated in its docs and the changelog).
"""

from __future__ import annotations

COLLECTION = 'fleet.dispatch'
# the collection version that drops the old keys (galaxy.yml is at 0.x: the next major)
REMOVED_IN = '1.0.0'


def keep_renamed(result, old, new, deprecate_value):
    """Set ``result[old]`` to ``result[new]``, tagged deprecated with the message that names ``new``.

    ``deprecate_value`` is ``ansible.module_utils.datatag.deprecate_value``, passed by the module
    (module_utils imports no ansible: tests/unit/repo/test_import_layers.py).
    """
    result[old] = deprecate_value(
        result[new],
        'The return value %r is renamed to %r: %r cannot be read with dot notation in a template '
        '(result.%s is the dict method)' % (old, new, old, old),
        version=REMOVED_IN, collection_name=COLLECTION,
        help_text='Read result.%s instead of result[%r].' % (new, old))
    return result
