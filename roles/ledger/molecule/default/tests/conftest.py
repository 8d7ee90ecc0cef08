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

import hashlib
import os
import pathlib
import sys
import uuid

# tests -> default -> molecule -> ledger -> roles -> the checkout
REPO = pathlib.Path(__file__).resolve().parents[5]


def _collection_root() -> pathlib.Path:
    key = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    base = pathlib.Path(os.environ.get('FLEET_COLLECTIONS_ROOT', '/tmp/fleet-dispatch-collections')) / key
    link = base / 'ansible_collections' / 'fleet' / 'dispatch'
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.is_symlink() and os.readlink(link) == str(REPO)):
        tmp = link.with_name('dispatch.%s' % uuid.uuid4().hex[:6])
        os.symlink(str(REPO), str(tmp))
        os.replace(str(tmp), str(link))
    return base


COLLECTIONS_ROOT = _collection_root()
if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))

from ansible.plugins.loader import init_plugin_loader  # noqa: E402  (needs the path set above)
from ansible.utils.collection_loader import AnsibleCollectionConfig  # noqa: E402

if not AnsibleCollectionConfig.collection_finder:
    init_plugin_loader([str(COLLECTIONS_ROOT)])
