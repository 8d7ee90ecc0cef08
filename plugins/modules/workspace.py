#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: workspace
short_description: One git worktree per run, detached at a fresh origin branch and verified
version_added: 0.1.0
description:
  - O(state=present) fetches O(branch) from O(remote) in the clone, adds a B(detached) worktree at the fetched commit, then verifies
    that git works inside it (its top level is the workspace and C(HEAD) is the fetched commit) before returning. A run's
    workspace is never shared; two items on one clone get two trees.
  - The clone and the workspace root are resolved physically first (through a symlinked clone, git writes a worktree pointer
    naming a path that does not exist and every git command inside the run dies with C(not a git repository)).
  - An existing workspace that verifies is returned unchanged and B(never) reset or moved - it may be a live run's checkout (
    a second run's reset once destroyed the first run's edits). RV(fresh) says whether it is still at the remote's tip.
  - O(state=absent) removes a clean workspace. One holding work - modified, staged or untracked files, or commits no remote ref
    contains - is B(kept) and named in a warning and in the result (keep, do not wipe).
  - The fetch is checked by its outcome - the remote-tracking ref must equal C(FETCH_HEAD) - not by its exit code.
  - Run it as the master (C(become_user)).
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the clone and the worktree; fetches, creates and removes nothing. The predicted commit is the clone's current
        remote-tracking ref, which a real run would fetch first.
  diff_mode:
    support: full
    details:
      - The diff shows the workspace path and whether it exists before and after.
options:
  state:
    description: Whether the workspace should exist.
    type: str
    default: present
    choices: [present, absent]
  clone:
    description: The master's clone of the repository (it may be given through a symlink).
    type: path
    required: true
  number:
    description: The item number; the workspace is named after the item and O(host).
    type: int
    required: true
  repo:
    description: The item's repository as C(owner/name) on a multi-repo board; empty otherwise.
    type: str
    default: ''
  host:
    description: The worker's name in the workspace name. Defaults to this machine's host name.
    type: str
  root:
    description: The directory that holds the workspaces. Defaults to C(~/fleet/workspaces) of the user the module runs as.
    type: path
  branch:
    description: The branch whose fresh tip the workspace starts from.
    type: str
    default: main
  remote:
    description: The remote to fetch from.
    type: str
    default: origin
seealso:
  - module: fleet.dispatch.launch
'''

EXAMPLES = r'''
- name: Give item 42 its own workspace on this worker
  fleet.dispatch.workspace:
    clone: "~/fleet/clones/widgets"
    number: 42
    host: "{{ inventory_hostname }}"
  become: true
  become_user: "{{ master }}"
  register: ws

- name: Release it after the run (kept if it holds work)
  fleet.dispatch.workspace:
    clone: "~/fleet/clones/widgets"
    number: 42
    host: "{{ inventory_hostname }}"
    state: absent
  become: true
  become_user: "{{ master }}"
'''

RETURN = r'''
path:
  description: The workspace's physical path (hand this to the run as its working directory).
  returned: always
  type: str
  sample: /home/m/fleet/workspaces/task-42@w1
name:
  description: The workspace directory name.
  returned: always
  type: str
  sample: task-42@w1
clone:
  description: The clone's physical path.
  returned: always
  type: str
sha:
  description: The commit the workspace is at (present), or was at (absent); null when unknown.
  returned: always
  type: str
created:
  description: Whether the workspace was created (would be, in check mode).
  returned: always
  type: bool
existing:
  description: Whether a registered workspace already existed at the path.
  returned: always
  type: bool
fresh:
  description:
    - Whether the workspace is at the remote's tip as the clone last fetched it (null when it cannot be told).
    - An existing workspace is not fetched for; a new one is always made at a tip fetched by this call.
  returned: always
  type: bool
removed:
  description: Whether a clean workspace was removed (would be, in check mode).
  returned: always
  type: bool
kept:
  description: Whether a workspace was kept because it holds work or could not be proven clean.
  returned: always
  type: bool
reason:
  description: Why a workspace was kept.
  returned: when kept
  type: str
dirty_files:
  description: C(git status --porcelain) lines of a kept workspace.
  returned: always
  type: list
  elements: str
unpushed:
  description: Commits in the workspace that no remote-tracking ref contains.
  returned: always
  type: int
pruned:
  description: Whether a stale registration (its directory gone) was pruned.
  returned: always
  type: bool
'''

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._host.cmd import ModuleRunner
from ansible_collections.fleet.dispatch.plugins.module_utils._host.files import home_dir
from ansible_collections.fleet.dispatch.plugins.module_utils._host.git import Git, GitError, Workspace
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import worktree_name


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', default='present', choices=['present', 'absent']),
            clone=dict(type='path', required=True),
            number=dict(type='int', required=True),
            repo=dict(type='str', default=''),
            host=dict(type='str'),
            root=dict(type='path'),
            branch=dict(type='str', default='main'),
            remote=dict(type='str', default='origin'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        name = worktree_name(p['number'], p['host'] or socket.gethostname(), p['repo'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    git = Git(ModuleRunner(module), git=module.get_bin_path('git', required=True), remote=p['remote'])
    root = p['root'] or os.path.join(home_dir(), 'fleet', 'workspaces')
    ws = Workspace(git, p['clone'], os.path.join(root, name), branch=p['branch'])
    try:
        if p['state'] == 'present':
            res = ws.present(check=module.check_mode)
        else:
            res = ws.absent(check=module.check_mode)
    except GitError as exc:
        module.fail_json(msg=str(exc), path=ws.path, name=name, clone=ws.clone)
    if p['state'] == 'present':
        changed = bool(res['created'] or res['pruned'])
        before, after = ('present' if res['existing'] else 'absent'), 'present'
    else:
        changed = bool(res['removed'] or res['pruned'])
        before = 'present' if (res['existing'] or res['kept']) else 'absent'
        after = 'present' if res['kept'] else 'absent'
    if res['kept']:
        module.warn('workspace kept: %s' % res.get('reason', res['path']))
    res.update(name=name, changed=changed,
               diff=dict(before='%s: %s\n' % (res['path'], before), after='%s: %s\n' % (res['path'], after)))
    module.exit_json(**res)


if __name__ == '__main__':
    main()
