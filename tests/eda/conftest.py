# -*- coding: utf-8 -*-
"""Shared pieces of the EDA tests: the rulebooks, and a collections path where ansible-rulebook
finds both ``fleet.dispatch`` (this checkout) and ``ansible.eda`` (its webhook source).

``ansible.eda`` is published only on Galaxy, which these machines cannot reach, and no PyPI package
ships it; its code is not copied here. Where it is installed (``ansible-galaxy collection install
ansible.eda``, in any standard collections path or ``FLEET_EDA_COLLECTIONS_PATH``), the live test runs;
elsewhere it skips and says why."""
from __future__ import annotations

import pathlib

import pytest

from collection_path import collection_root
from eda_paths import eda_root

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='session')
def collections_path():
    """ANSIBLE_COLLECTIONS_PATH value: the installed ansible.eda, then this checkout as fleet.dispatch; None
    when ansible.eda is not installed."""
    root = eda_root()
    if root is None:
        return None
    return '%s:%s' % (root, collection_root(REPO))
