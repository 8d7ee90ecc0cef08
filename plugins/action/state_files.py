# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fleet.dispatch.state_files``: every file a dispatcher cycle keeps on the controller, in one step.

The cycle's records (plan, status, cycle record, page, metrics, fleet snapshot) are written here, in
the controller's own process: no module is shipped and no interpreter started per file, which is what
``ansible.builtin.copy`` costs twice per file. Each file is replaced whole and atomically (a reader sees
the old or the new file, never half of one); a file whose content and mode already match is left alone.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile

from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.parsing.ajson import AnsibleJSONEncoder
from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = dict(
    dirs=dict(type='list', elements='path', default=[]),
    files=dict(type='list', elements='dict', default=[], options=dict(
        path=dict(type='path', required=True),
        content=dict(type='raw'),
        data=dict(type='raw'),
        mode=dict(type='raw', default='0600'),
    ), mutually_exclusive=[('content', 'data')], required_one_of=[('content', 'data')]),
    dir_mode=dict(type='raw', default='0700'),
)


def file_mode(value, where):
    """An octal mode given as '0600', 0o600 or 384 -> int; a ValueError names ``where``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value), 8)
    except ValueError:
        raise ValueError('%s: mode %r is not an octal mode such as 0600' % (where, value))


def file_bytes(spec):
    """What ``spec`` asks to be written: its ``content`` as given, or its ``data`` as indented JSON."""
    if spec.get('data') is not None or spec.get('content') is None:
        text = json.dumps(spec.get('data'), cls=AnsibleJSONEncoder, indent=4, sort_keys=True, separators=(',', ': '),
                          ensure_ascii=False) + '\n'
    else:
        text = to_text(spec['content'])
    return to_bytes(text, errors='surrogate_or_strict')


def needs_write(path, data, mode):
    """Whether ``path`` differs from ``data``/``mode`` (a missing file differs)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return True
    if stat.S_IMODE(st.st_mode) != mode or st.st_size != len(data):
        return True
    with open(path, 'rb') as f:
        return f.read() != data


def replace_file(path, data, mode):
    """Write ``data`` to ``path`` through a temporary file beside it, then rename it over ``path``."""
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=directory or '.', prefix='.%s.' % name)
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validated, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        check = bool(self._task.check_mode)
        made, written, unchanged = [], [], []
        try:
            dir_mode = file_mode(args['dir_mode'], 'dir_mode')
            for d in args['dirs']:
                if not os.path.isdir(d):
                    made.append(d)
                    if not check:
                        os.makedirs(d, mode=dir_mode, exist_ok=True)
                        os.chmod(d, dir_mode)   # makedirs' mode passes through the umask
            for i, spec in enumerate(args['files']):
                path = spec['path']
                mode = file_mode(spec['mode'], 'files[%d] (%s)' % (i, path))
                data = file_bytes(spec)
                if not needs_write(path, data, mode):
                    unchanged.append(path)
                    continue
                written.append(path)
                if not check:
                    replace_file(path, data, mode)
        except (OSError, ValueError) as e:
            where = getattr(e, 'filename', None)
            result.update(failed=True, dirs_made=made, written=written, unchanged=unchanged,
                          msg='could not write the dispatcher state%s: %s (the state directory must be writable by the'
                              ' user running ansible-playbook: dispatch_state_dir)' % (' at %s' % where if where else '', e))
            return result
        result.update(changed=bool(made or written), dirs_made=made, written=written, unchanged=unchanged)
        return result
