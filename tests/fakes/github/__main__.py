# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Serve the fake GitHub by hand, for trying a playbook or the runner against it:

    cd tests && /tmp/fdvenv/bin/python -m fakes.github --token t --demo
    # prints the URL; use board: {kind: github, owner: acme, project: 1, token: t, api_url: URL}

``--demo`` seeds project acme/1 with a few items: ready, blocked, freed by a closed blocker,
backlog. Stop with Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import time

from .server import FakeGitHub


def seed_demo(store):
    store.add_project('acme', 1)
    blocker = store.add_issue('acme/app', 'blocker', project=('acme', 1), status='Backlog')
    store.add_issue('acme/app', 'ready work', project=('acme', 1), status='Ready')
    held = store.add_issue('acme/app', 'held work', project=('acme', 1), status='Ready')
    store.add_blocker('acme/app', held['number'], 'acme/app', blocker['number'])
    done = store.add_issue('acme/app', 'finished blocker', state='closed')
    freed = store.add_issue('acme/app', 'freed work', project=('acme', 1), status='Ready')
    store.add_blocker('acme/app', freed['number'], 'acme/app', done['number'])


def main(argv=None):
    parser = argparse.ArgumentParser(description='Serve the fake GitHub on 127.0.0.1.')
    parser.add_argument('--token', default='test-token')
    parser.add_argument('--demo', action='store_true', help='seed project acme/1 with a few items')
    args = parser.parse_args(argv)
    fake = FakeGitHub(token=args.token)
    if args.demo:
        seed_demo(fake.store)
    with fake:
        print(fake.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == '__main__':
    sys.exit(main())
