# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verifier's controller side imports the collection's own ledger board and lease store, as
the repository's tests/conftest.py does: the checkout is made importable as
``ansible_collections.fleet.dispatch`` through a symlink (no copy: the shipped bytes are tested).
Nothing is exported to the environment: the verifier's own ansible-playbook run (the second
converge) must see the same collections as molecule's runs.
"""
from __future__ import annotations

import pathlib
import sys

# tests -> default -> molecule -> ledger -> roles -> the checkout
REPO = pathlib.Path(__file__).resolve().parents[5]

sys.path.insert(0, str(REPO / 'tests'))
from collection_path import collection_root  # noqa: E402  (the one implementation, tests/collection_path.py)

COLLECTIONS_ROOT = collection_root(REPO)
if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))

from ansible.plugins.loader import init_plugin_loader  # noqa: E402  (needs the path set above)
from ansible.utils.collection_loader import AnsibleCollectionConfig  # noqa: E402

if not AnsibleCollectionConfig.collection_finder:
    init_plugin_loader([str(COLLECTIONS_ROOT)])
