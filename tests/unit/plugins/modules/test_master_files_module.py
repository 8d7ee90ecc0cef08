# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet.dispatch.master_files: main() in check and diff mode, a secret file's content masked and never returned.

The converging itself is tests/unit/plugins/module_utils/_host/test_master_files.py."""
from __future__ import annotations

import json

from ansible_collections.fleet.dispatch.plugins.modules import master_files


def test_the_module_masks_a_secret_and_diffs_the_rest(run_module, tmp_path):
    args = {'dirs': [{'path': str(tmp_path / 'c'), 'mode': '0700'}],
            'files': [{'path': str(tmp_path / 'c' / 'path'), 'content': 'PATH=/bin\n', 'mode': '0644'},
                      {'path': str(tmp_path / 'c' / 'credentials.env'), 'secret_content': 'TOKEN=hunter2-xyz\n', 'mode': '0600'},
                      {'path': str(tmp_path / 'c' / 'hook'), 'state': 'absent'}]}
    kind, res, _w = run_module(master_files, args, check=True, diff=True)
    assert kind == 'exit' and res['changed'] and not (tmp_path / 'c').exists()
    assert 'TOKEN=hunter2-xyz\n' in run_module.module.no_log_values
    assert 'hunter2-xyz' not in json.dumps(res) and any(d['after'] == 'PATH=/bin\n' for d in res['diff'])
    kind, res, _w = run_module(master_files, args)
    assert kind == 'exit' and res['changed'] and 'diff' not in res
    assert (tmp_path / 'c' / 'credentials.env').read_text() == 'TOKEN=hunter2-xyz\n'
    kind, res, _w = run_module(master_files, args, diff=True)
    assert kind == 'exit' and not res['changed'] and res['diff'] == []
    bad = dict(args, files=[{'path': str(tmp_path / 'x'), 'content': 'a', 'secret_content': 'b'}])
    kind, res, _w = run_module(master_files, bad)
    assert kind == 'fail' and 'mutually exclusive' in res['msg']
