# -*- coding: utf-8 -*-
"""Shared pieces of the EDA tests: the collections path where ansible-rulebook finds ``fleet.dispatch``
(this checkout).

The local rulebook's webhook source is ``eda.builtin.webhook``, which ships inside ansible-rulebook
(PyPI): no collection is needed to run it. ``ansible.eda`` (Galaxy only, out of reach here) is
needed only by the AWX rulebook's source, checked by its schema where it is installed
(tests/eda/eda_paths.py)."""
from __future__ import annotations

import pathlib

import pytest

from collection_path import collection_root

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='session')
def collections_path():
    """ANSIBLE_COLLECTIONS_PATH value: this checkout as fleet.dispatch."""
    return str(collection_root(REPO))
