# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkout made importable as ``ansible_collections.fleet.dispatch``, through a symlink in a
per-checkout cache directory -- no copy, so every test runs the shipped bytes (D15's testing
corollary). Shared by tests/conftest.py and the molecule verifiers that import the collection.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import uuid


def collection_root(repo) -> pathlib.Path:
    """The directory holding ``ansible_collections/fleet/dispatch`` -> ``repo`` (made atomically)."""
    repo = pathlib.Path(repo)
    key = hashlib.sha256(str(repo).encode()).hexdigest()[:12]
    base = pathlib.Path(os.environ.get('FLEET_COLLECTIONS_ROOT', '/tmp/fleet-dispatch-collections')) / key
    link = base / 'ansible_collections' / 'fleet' / 'dispatch'
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.is_symlink() and os.readlink(link) == str(repo)):
        tmp = link.with_name('dispatch.%s' % uuid.uuid4().hex[:6])
        os.symlink(str(repo), str(tmp))
        os.replace(str(tmp), str(link))
    return base
