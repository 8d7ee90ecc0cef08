# -*- coding: utf-8 -*-
"""Where ansible.eda is installed, if anywhere (see tests/eda/conftest.py)."""
from __future__ import annotations

import os
import pathlib

EDA_MISSING = ('ansible.eda is not installed: it is published only on Galaxy, which this machine cannot reach, '
               'and no PyPI package ships it (install it with `ansible-galaxy collection install ansible.eda`, '
               'or point FLEET_EDA_COLLECTIONS_PATH at a collections path that has it)')


def eda_root():
    """The collections path (the directory holding ansible_collections/) that has ansible.eda, or None."""
    candidates = [p for p in os.environ.get('FLEET_EDA_COLLECTIONS_PATH', '').split(':') if p]
    candidates += [os.path.expanduser('~/.ansible/collections'), '/usr/share/ansible/collections']
    for cand in candidates:
        if (pathlib.Path(cand) / 'ansible_collections' / 'ansible' / 'eda' / 'extensions' / 'eda' / 'plugins'
                / 'event_source' / 'webhook.py').is_file():
            return pathlib.Path(cand)
    return None
