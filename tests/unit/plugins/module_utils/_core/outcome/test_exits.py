# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner's exit codes (D20): one table, every code distinct and outside the ranges systemd names."""
from __future__ import annotations

import pytest

from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome import exits
from ansible_collections.fleet.dispatch.plugins.module_utils._core.outcome.closeout import EXIT, Decision
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import run as _run
from ansible_collections.fleet.dispatch.plugins.module_utils._runner import closeout as _run_closeout
from ansible_collections.fleet.dispatch.plugins.module_utils._runner.chain import config as chain_config
from ansible_collections.fleet.dispatch.plugins.module_utils._host.worker_calls import LAUNCH_SPEC

CODES = dict((name, value) for name, value in vars(exits).items() if name.startswith('EXIT_'))
# systemd's exit-status table names these (LSB 1-7, BSD sysexits 64-78, its own 200-255): a runner code
# there reads as a reason it is not, e.g. 4/NOPERMISSION for a close-out that could not be posted
SYSTEMD_NAMED = set(range(1, 8)) | set(range(64, 79)) | set(range(200, 256))


def test_every_code_is_distinct_named_and_outside_what_systemd_names():
    assert len(set(CODES.values())) == len(CODES), CODES
    assert not set(CODES.values()) & SYSTEMD_NAMED, CODES
    assert sorted(exits.NAMES) == sorted(CODES.values())
    assert all(0 <= code <= 255 for code in CODES.values())


@pytest.mark.parametrize('module, name', [(_run, 'EXIT_USAGE'), (_run, 'EXIT_UPDATE_FAILED'), (_run_closeout, 'EXIT_CLOSEOUT_LOST'),
                                          (_run, 'EXIT_START_LOST')])
def test_the_run_program_exits_by_the_table(module, name):
    assert getattr(module, name) == CODES[name]


@pytest.mark.parametrize('name', ['EXIT_USAGE', 'EXIT_START_FAILED', 'EXIT_CLOSE_LOST', 'EXIT_LEDGER_UNREACHABLE', 'EXIT_FAILURE'])
def test_the_chain_programs_exit_by_the_table(name):
    assert getattr(chain_config, name) == CODES[name]
    assert chain_config.EXIT_OK == exits.EXIT_SUCCESS


def test_each_close_out_marker_has_its_code_and_an_unknown_kind_is_a_failure():
    assert EXIT == {'success': 0, 'noop': 10, 'failure': 11, 'capacity': 12, 'retry': 13, 'stopped': 14, 'budget': 15,
                    'left_open': 16}
    assert Decision('nonsense', '').exit_code == exits.EXIT_FAILURE


def test_only_capacity_retry_and_budget_spare_the_unit_and_launch_defaults_to_them():
    assert set(exits.NOT_UNIT_FAILURES) == {exits.EXIT_CAPACITY, exits.EXIT_RETRY, exits.EXIT_BUDGET}
    assert LAUNCH_SPEC['success_exit_status']['default'] == [exits.EXIT_CAPACITY, exits.EXIT_RETRY, exits.EXIT_BUDGET]


@pytest.mark.parametrize('given, word', [(22, 'closeout_lost'), ('23', 'start_lost'), (' 21 ', 'update_failed'),
                                         ('1', ''), ('', ''), (None, ''), ('abc', '')])
def test_name_of_reads_an_exec_main_status(given, word):
    assert exits.name_of(given) == word
