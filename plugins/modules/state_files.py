#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: state_files
short_description: Write the files a dispatcher cycle keeps on the controller, in one step
version_added: 0.1.0
description:
  - Makes the missing directories of O(dirs), then replaces each file of O(files) whole and atomically (a temporary file
    beside it, renamed over it), so a reader such as node_exporter's textfile collector or the status page's browser never
    sees half a file. A file whose content and mode already match is not touched.
  - Runs in the controller's own process and always writes on the controller, whatever host the task runs for. One task
    writes every file of a step (the plan, the status, the page, the metrics, the cycle record) without a module
    transfer per file.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
attributes:
  action:
    description: Runs on the controller as an action plugin; the module file only holds the documentation.
    support: full
  check_mode:
    support: full
    details:
      - "Reports what it would write and writes nothing. The dispatch role's records set C(check_mode: false): a check run
        keeps its record too."
  diff_mode:
    support: none
options:
  dirs:
    description: Directories to make (with their parents) when missing. Existing directories are left as they are.
    type: list
    elements: path
    default: []
  dir_mode:
    description: The mode of the directories this step makes.
    type: raw
    default: '0700'
  files:
    description: The files to write. Their directories must exist (list them in O(dirs)).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where the file goes.
        type: path
        required: true
      content:
        description: The file's text, written as given. Exactly one of O(files[].content) and O(files[].data).
        type: raw
      data:
        description:
          - Any data, written as indented JSON with sorted keys and a final newline (what C(to_nice_json) writes), without
            templating it into one large string first.
        type: raw
      mode:
        description: The file's mode.
        type: raw
        default: '0600'
'''

EXAMPLES = r'''
- name: Write the plan and the status page in one step
  fleet.dispatch.state_files:
    dirs:
      - "{{ state_dir }}"
    files:
      - path: "{{ state_dir }}/plan.json"
        data: "{{ plan }}"
      - path: "{{ state_dir }}/status.html"
        content: "{{ view | fleet.dispatch.status_page }}"
        mode: "0644"
  check_mode: false
'''

RETURN = r'''
dirs_made:
  description: The directories that were missing (made, or in check mode, that would be made).
  returned: always
  type: list
  elements: str
written:
  description: The files whose content or mode differed (replaced, or in check mode, that would be replaced).
  returned: always
  type: list
  elements: str
unchanged:
  description: The files that already held this content and mode.
  returned: always
  type: list
  elements: str
'''
