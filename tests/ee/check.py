# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution-environment check of ``tests/run ee`` (issue 16).

    python tests/ee/check.py COLLECTION_COPY WORKDIR

1. builds the collection from COLLECTION_COPY (ansible_collections/fleet/dispatch laid out by
   tests/run) as the tarball docs/ee/execution-environment.yml expects;
2. ``ansible-builder create`` on that sample definition: it must accept it, and the generated
   context must list the collections (requirements.yml), carry the tarball, and pin the
   ansible-core that CI tests;
3. installs the tarball from the context and runs ``ansible-builder introspect`` on it: the
   collection's meta/execution-environment.yml must bring every line of requirements.txt and
   bindep.txt, attributed to fleet.dispatch -- what the image build would install.

No image is built: the base image lives in a container registry these machines cannot reach.
Prints one line counting what it checked; any miss is a failure (exit 1).
"""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = REPO / 'docs' / 'ee' / 'execution-environment.yml'


def requirement_lines(path: pathlib.Path) -> list[str]:
    """The non-comment, non-blank lines of a pip or bindep file."""
    return [ln.split('#', 1)[0].strip() for ln in path.read_text().splitlines()
            if ln.split('#', 1)[0].strip()]


def run(*argv, **kw) -> str:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, **kw)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit('ee: %s failed (exit %d)' % (argv[0], proc.returncode))
    return proc.stdout


def main(copy: str, workdir: str) -> int:
    copy_dir, work = pathlib.Path(copy), pathlib.Path(workdir)
    shutil.rmtree(work, ignore_errors=True)
    problems = []

    # 1. the tarball where the sample's additional_build_files looks for it (relative to the file)
    definition = work / 'docs' / 'ee' / SAMPLE.name
    definition.parent.mkdir(parents=True)
    shutil.copy(SAMPLE, definition)
    dist = work / 'build' / 'dist'
    dist.mkdir(parents=True)
    run('ansible-galaxy', 'collection', 'build', '--output-path', dist, '--force', cwd=copy_dir)
    built = sorted(dist.glob('fleet-dispatch-*.tar.gz'))
    if len(built) != 1:
        raise SystemExit('ee: expected one built tarball in %s, found %s' % (dist, built))
    built[0].rename(dist / 'fleet-dispatch.tar.gz')

    # 2. ansible-builder create
    context = work / 'context'
    run('ansible-builder', 'create', '-f', definition, '-c', context, '--output-filename', 'Containerfile')
    containerfile = (context / 'Containerfile').read_text()
    spec = yaml.safe_load(SAMPLE.read_text())
    base = spec['images']['base_image']['name']
    if 'EE_BASE_IMAGE="%s"' % base not in containerfile:
        problems.append('Containerfile does not build FROM the sample base image %s' % base)
    dev_core = re.search(r'^ansible-core==(\S+)', (REPO / 'requirements-dev.txt').read_text(), re.M).group(1)
    if 'ansible-core==%s' % dev_core not in containerfile:
        problems.append('the EE does not install ansible-core==%s, the one CI tests' % dev_core)
    if 'introspect' not in containerfile:
        problems.append('Containerfile has no introspect step: the collection requirements would not be installed')
    galaxy = yaml.safe_load((context / '_build' / 'requirements.yml').read_text())
    names = [c['name'] for c in galaxy.get('collections', [])]
    if not any(n.endswith('fleet-dispatch.tar.gz') for n in names) or 'community.postgresql' not in names:
        problems.append('context requirements.yml lists %s, not fleet.dispatch and community.postgresql' % names)
    tarball = context / '_build' / 'collection' / 'fleet-dispatch.tar.gz'
    with tarfile.open(tarball) as tf:
        members = set(tf.getnames())
    for needed in ('meta/execution-environment.yml', 'requirements.txt', 'bindep.txt'):
        if needed not in members:
            problems.append('the collection tarball in the context lacks %s' % needed)

    # 3. introspect the collection as the image build would
    collections = work / 'collections'
    run('ansible-galaxy', 'collection', 'install', '-p', collections, tarball, '--force', '--no-deps')  # offline
    found = yaml.safe_load(run('ansible-builder', 'introspect', collections).split('---', 1)[1])
    counts = {}
    for kind, source in (('python', 'requirements.txt'), ('system', 'bindep.txt')):
        want = requirement_lines(REPO / source)
        got = [ln.split('#', 1)[0].strip() for ln in found.get(kind) or []
               if ln.endswith('# from collection fleet.dispatch')]
        missing = [w for w in want if w not in got]
        if missing or not want:
            problems.append('introspect %s: missing %s (found %s)' % (kind, missing or 'everything', got))
        counts[kind] = len(got)

    files = sum(1 for p in context.rglob('*') if p.is_file())
    for p in problems:
        print('ee: ' + p, file=sys.stderr)
    print('ee: ansible-builder create accepted %s (context: %d files, %d collections); introspect: '
          'fleet.dispatch brings %d python and %d system requirements; %d problems; '
          'image build not run (its base image is in a registry these machines cannot reach)'
          % (SAMPLE.relative_to(REPO), files, len(names), counts.get('python', 0), counts.get('system', 0), len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
