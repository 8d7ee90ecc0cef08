#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: master_files
short_description: Converge a master's directories and files on a worker in one step
version_added: 0.1.0
description:
  - Makes each directory of O(dirs) and each file of O(files) what it says, in their order, in one module execution on the
    worker (the C(ansible.builtin.file), C(copy) and C(template) tasks it replaces cost one execution each, a loop item
    counted).
  - A directory is made with its missing parents (all with its owner, group and mode); an existing one gets its owner, group
    and mode fixed, and a mode left unset is left alone. A symlink to a directory is followed.
  - A file whose content differs is replaced whole and atomically (a temporary file beside it, already owned and moded,
    renamed over it), so no reader sees half a file and a 0600 file is never readable by others for a moment. A file whose
    content matches only gets its owner, group and mode fixed. A file's path is never followed; a symlink there is replaced
    (or, with O(files[].force=false), left alone).
  - Render the contents on the controller (C(lookup('ansible.builtin.template', ...))). Give a secret
    file's content as O(files[].secret_content), never as O(files[].content); it is C(no_log), left out of every diff and
    every result, and masked wherever it would appear.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes nothing; reports what it would make, write, fix and remove (a file in a directory that would be made is
        reported as written).
  diff_mode:
    support: full
    details:
      - A file's content before and after; a directory's or an attribute's change as a line. Never a secret file's content.
options:
  dirs:
    description: The directories, parents first.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The directory (absolute).
        type: path
        required: true
      owner:
        description: Its owner, a user name or a uid. Unset leaves an existing directory's owner alone.
        type: str
      group:
        description: Its group, a group name or a gid. Unset leaves an existing directory's group alone.
        type: str
      mode:
        description: Its mode, in octal (V('0750')). Unset leaves an existing directory's mode alone and gives a new one the umask's.
        type: raw
  files:
    description: The files, each after the directory it goes in.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file (absolute).
        type: path
        required: true
      state:
        description: V(file) makes it hold its content; V(absent) removes it (a directory with what is in it).
        type: str
        choices: [file, absent]
        default: file
      content:
        description: The file's text. At most one of O(files[].content) and O(files[].secret_content); neither means empty.
        type: str
      secret_content:
        description:
          - The text of a file that holds a secret. It is C(no_log) (never logged, nor in the worker's journal), and never in a
            diff or a result.
        type: str
      force:
        description:
          - V(false) only makes sure the file exists (empty when new); an existing one keeps its content and times and only
            gets its owner, group and mode fixed.
        type: bool
        default: true
      owner:
        description: Its owner, a user name or a uid. Unset leaves an existing file's owner alone.
        type: str
      group:
        description: Its group, a group name or a gid. Unset leaves an existing file's group alone.
        type: str
      mode:
        description: Its mode, in octal (V('0600')). Unset keeps an existing file's mode and gives a new one the umask's.
        type: raw
'''

EXAMPLES = r'''
- name: Write the directories and files of one master in one step
  fleet.dispatch.master_files:
    dirs:
      - {path: /home/m1/.config/fleet-dispatch, owner: m1, group: m1, mode: '0700'}
    files:
      - path: /home/m1/.config/fleet-dispatch/path
        content: "/home/m1/.local/bin:/usr/bin:/bin\n"
        owner: m1
        group: m1
        mode: '0644'
      - path: /home/m1/.config/fleet-dispatch/credentials.env
        secret_content: "{{ lookup('ansible.builtin.template', 'credentials.env.j2') }}"
        owner: m1
        group: m1
        mode: '0600'
      - path: /home/m1/.gitconfig
        force: false
        owner: m1
        group: m1
'''

RETURN = r'''
dirs_made:
  description: The directories that were missing (made, or in check mode, that would be made).
  returned: always
  type: list
  elements: str
written:
  description: The files whose content differed or that were missing (replaced, or in check mode, that would be).
  returned: always
  type: list
  elements: str
fixed:
  description: The directories and files whose content was right but whose owner, group or mode was not (fixed, or would be).
  returned: always
  type: list
  elements: str
removed:
  description: The paths of O(files[].state=absent) entries that existed (removed, or would be).
  returned: always
  type: list
  elements: str
unchanged:
  description: The paths that already were what their entry says.
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.fleet.dispatch.plugins.module_utils._host.master_files import MasterFilesError, converge

_ATTRS = dict(owner=dict(type='str'), group=dict(type='str'), mode=dict(type='raw'))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dirs=dict(type='list', elements='dict', default=[],
                      options=dict(path=dict(type='path', required=True), **_ATTRS)),
            files=dict(type='list', elements='dict', default=[],
                       options=dict(path=dict(type='path', required=True),
                                    state=dict(type='str', default='file', choices=['file', 'absent']),
                                    content=dict(type='str'),
                                    secret_content=dict(type='str', no_log=True),
                                    force=dict(type='bool', default=True),
                                    **_ATTRS),
                       mutually_exclusive=[['content', 'secret_content']]),
        ),
        supports_check_mode=True,
    )
    entries = [dict(spec, state='directory') for spec in module.params['dirs']]
    for spec in module.params['files']:
        secret = spec['secret_content'] is not None
        entries.append(dict(spec, content=spec['secret_content'] if secret else spec['content'], sensitive=secret))
    try:
        res = converge(entries, check=module.check_mode)
    except (MasterFilesError, OSError) as exc:
        module.fail_json(msg=str(exc))
    diff = res.pop('diff')
    if module._diff:
        res['diff'] = diff
    module.exit_json(**res)


if __name__ == '__main__':
    main()
