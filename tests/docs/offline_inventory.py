# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write the intersphinx fallback inventories the antsibull-docs Sphinx config names
(``../ansible_devel.inv``, ``../python3.inv``, ...) for a build on a machine with no network.

    python tests/docs/offline_inventory.py SITE_DIR

Sphinx tries each inventory's URL first and reads the file only when the URL cannot be reached,
so on a machine with network the real inventories win. The ansible_devel labels our pages link to
are listed in tests/docs/intersphinx-ansible-devel.txt (label, page#anchor, title), with their
place on the Ansible docs site: a page that links to an unlisted label fails the build (-W) and
names it, and the label goes in that file.
"""
from __future__ import annotations

import pathlib
import sys
import zlib

HERE = pathlib.Path(__file__).resolve().parent


def write_inventory(path: pathlib.Path, project: str, entries) -> None:
    lines = ''.join('%s std:label -1 %s %s\n' % (name, uri, title) for name, uri, title in entries)
    header = ('# Sphinx inventory version 2\n# Project: %s\n# Version: offline\n'
              '# The remainder of this file is compressed using zlib.\n' % project)
    path.write_bytes(header.encode() + zlib.compress(lines.encode()))


def main(site: str) -> int:
    site_dir = pathlib.Path(site)
    entries = []
    for line in (HERE / 'intersphinx-ansible-devel.txt').read_text().splitlines():
        if line.strip() and not line.startswith('#'):
            name, uri, title = line.split(None, 2)
            entries.append((name, uri, title))
    write_inventory(site_dir / 'ansible_devel.inv', 'Ansible (offline labels)', entries)
    for name in ('python2', 'python3', 'jinja2'):
        write_inventory(site_dir / ('%s.inv' % name), name + ' (offline, empty)', [])
    print('docs: offline intersphinx fallback with %d ansible_devel labels' % len(entries))
    return 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
