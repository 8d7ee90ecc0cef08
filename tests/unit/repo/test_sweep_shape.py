# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep's shape, read from its task files (never its times): what a cycle costs must not grow with the board.

* No message loop: a debug task says one summary a cycle, never one task result per item.
* The board crosses the module boundary once: the sweep's read writes its table (board_info ``table``), and every
  task of the sweep that reads ``_dispatch_board.board_items`` does so only where the read wrote no table.
* One controller write step a cycle: every file the cycle keeps on the controller is written by one
  ``fleet.dispatch.state_files`` task on each exit path (ok, failed), never by a ``copy`` or ``template`` task.
"""
from __future__ import annotations

import pathlib
import re

import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
TASKS = REPO / 'roles' / 'dispatch' / 'tasks'
LOOPS = ('loop', 'with_items', 'with_list', 'with_dict', 'with_subelements', 'with_sequence')
DEBUG = ('debug', 'ansible.builtin.debug', 'ansible.legacy.debug')


def _entries():
    """The task files of the dispatch cycle (playbooks/dispatch_cycle.yml's tasks_from, and what they include)."""
    cycle = yaml.safe_load((REPO / 'playbooks' / 'dispatch_cycle.yml').read_text())
    todo = [t['ansible.builtin.' + kind]['tasks_from'] + '.yml' for play in cycle for t in play['tasks']
            for kind in ('import_role', 'include_role') if 'ansible.builtin.' + kind in t]
    seen = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        todo.extend(re.findall(r'(?:include|import)_tasks: (\w+\.yml)', (TASKS / name).read_text()))
    return sorted(seen)


def _tasks(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _tasks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _tasks(value)


def test_the_scan_follows_the_cycle():
    names = _entries()
    assert {'cycle.yml', 'main.yml', 'read.yml', 'reap.yml', 'decide.yml', 'finish.yml', 'apply_finish.yml',
            'announce.yml', 'page.yml'} <= set(names), names


def test_no_debug_task_loops_over_items():
    found = []
    for name in _entries():
        for task in _tasks(yaml.safe_load((TASKS / name).read_text())):
            if any(k in task for k in DEBUG) and any(k in task for k in LOOPS):
                found.append('%s: %s' % (name, task.get('name')))
    assert not found, 'one message a cycle, not one per item: %s' % found


def test_the_sweep_reads_the_board_into_its_table():
    read = yaml.safe_load((TASKS / 'read.yml').read_text())[0]
    assert 'table' in read['fleet.dispatch.board_info'] and '_dispatch_read_table' in read['fleet.dispatch.board_info']['table']
    main = yaml.safe_load((TASKS / 'main.yml').read_text())
    assert [t for t in main if 'read.yml' in (t.get('ansible.builtin.import_tasks'), t.get('ansible.builtin.include_tasks'))
            ][0]['vars'] == {'_dispatch_read_table': True}
    found = []
    for name in _entries():
        for task in _tasks(yaml.safe_load((TASKS / name).read_text())):
            if 'name' not in task or 'block' in task:
                continue
            body = yaml.safe_dump(task)
            if '_dispatch_board.board_items' in body and '_dispatch_board.table' not in body:
                found.append('%s: %s' % (name, task['name']))
    assert not found, 'these tasks read the whole board through a template: %s' % found


WRITES = ('fleet.dispatch.state_files', 'ansible.builtin.copy', 'ansible.builtin.template', 'copy', 'template',
          'ansible.builtin.file', 'file')


def test_one_controller_write_step_a_cycle():
    """finish.yml writes every file of the cycle in one step (and one in its rescue); the only other write in
    the cycle's task files is page.yml's, which the status entry point uses and the cycle turns off."""
    writes = {}
    for name in _entries():
        for task in _tasks(yaml.safe_load((TASKS / name).read_text())):
            if 'name' in task and any(k in task for k in WRITES):
                writes.setdefault(name, []).append(task)
    assert sorted(writes) == ['finish.yml', 'page.yml'], writes
    assert all('fleet.dispatch.state_files' in t for ts in writes.values() for t in ts), 'no copy, template or file task'
    finish = yaml.safe_load((TASKS / 'finish.yml').read_text())[0]
    [ok] = [t for t in finish['block'] if 'fleet.dispatch.state_files' in t]
    [failed] = [t for t in finish['rescue'] if 'fleet.dispatch.state_files' in t]
    assert len(writes['finish.yml']) == 2, 'one write on each exit path'
    for step in (ok, failed):
        assert '_dispatch_cycle_record_file' in step['fleet.dispatch.state_files']['files']
    [page_write] = writes['page.yml']
    assert page_write['when'] == '_dispatch_page_write | default(true) | bool'
    [page] = [t for t in finish['block'] if t.get('ansible.builtin.import_tasks') == 'page.yml']
    assert page['vars']['_dispatch_page_write'] is False
    for part in ('_dispatch_plan_record', '_dispatch_announce_files', '_dispatch_page_files', '_dispatch_cycle_record_file'):
        assert part in ok['fleet.dispatch.state_files']['files'], part


def test_no_loop_over_the_masters_in_the_cycle():
    """The probe play reads every master, one call per worker, the workers in parallel: the reaper and the announcer
    read its answers. A controller task that loops over the masters (delegate_to each, one after another) costs a
    round trip per master per cycle. What still loops: the repair (one task per duplicate found) and the start
    confirmation (one per master that got a launch this cycle)."""
    looped = []
    for name in _entries():
        for task in _tasks(yaml.safe_load((TASKS / name).read_text())):
            if 'name' in task and any(k in task for k in LOOPS):
                assert '_dispatch_masters' not in str(task.get('loop', '')), '%s: %s' % (name, task['name'])
                if 'delegate_to' in task:
                    looped.append((name, str(task['loop'])))
    assert sorted(looped) == [('apply_finish.yml', "{{ _dispatch_probed.repairs | default([]) }}"),
                              ('confirm.yml', "{{ _dispatch_batched.batches | default([]) }}")], looped
    for name in ('reap.yml', 'announce.yml'):
        body = (TASKS / name).read_text()
        assert 'units_info' not in body and 'capacity_info' not in body, '%s probes on its own' % name
