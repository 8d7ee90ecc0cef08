# -*- coding: utf-8 -*-
"""Shared pieces of the EDA tests: the rulebooks, and a collections path where ansible-rulebook
finds both ``fleet.dispatch`` (this checkout) and ``ansible.eda`` (its webhook source, vendored in
tests/eda/vendor/ansible.eda because Galaxy is out of reach)."""
from __future__ import annotations

import pathlib

import pytest

from collection_path import collection_root

REPO = pathlib.Path(__file__).resolve().parents[2]
VENDOR = REPO / 'tests' / 'eda' / 'vendor' / 'ansible.eda'


@pytest.fixture(scope='session')
def collections_path(tmp_path_factory):
    """ANSIBLE_COLLECTIONS_PATH value: the vendored ansible.eda, then this checkout as fleet.dispatch."""
    root = tmp_path_factory.mktemp('eda-collections')
    eda = root / 'ansible_collections' / 'ansible' / 'eda'
    source = eda / 'extensions' / 'eda' / 'plugins' / 'event_source'
    source.mkdir(parents=True)
    (source / 'webhook.py').write_text((VENDOR / 'webhook.py.txt').read_text())
    (eda / 'galaxy.yml').write_text('namespace: ansible\nname: eda\nversion: 2.13.0\nreadme: README.md\n'
                                    'authors: [ansible.eda maintainers (vendored webhook source)]\n')
    (eda / 'README.md').write_text('vendored: ' + str(VENDOR / 'README.md') + '\n')
    return '%s:%s' % (root, collection_root(REPO))
