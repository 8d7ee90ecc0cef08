# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent under a run: its argv, environment, credentials and sandbox, the look for its executable, and
the wait -- with the run's budget checked at every usage event it prints (D16, D20).
"""

from __future__ import annotations

import codecs
from typing import Any, Dict, List

from .._core.board.model import format_time
from .._core.outcome.agent_env import BOARD_SECRET_ENV, agent_environment
from .._core.outcome.budget import Budget, describe as describe_budget, reached, stop_for
from .._core.outcome.profiles import profile as agent_profile
from .._core.outcome.usage import UsageMeter
from .._store.sql import dsn_passwords
from .brief import BRIEF_VERSION
from .chain.items import ledger_secrets
from .spawn import confined_argv, find_agent, missing_agent, missing_agent_message, note_agent, read_agent_credentials, wait_agent
from .update import REEXEC_ENV


class AgentMixin(object):
    """The ``Run``'s agent: ``_agent_argv``, ``_agent_env``, ``_confined``, ``_agent_missing``, ``_wait``."""

    def _agent_argv(self, brief: str):
        """``(argv, stdin_path)``: ``{brief_file}`` becomes the brief's path, else the brief is the agent's standard
        input. The brief's text is never an argument (``_core.outcome.profiles.brief_in_argv``: a command holding
        ``{brief}`` is refused when the configuration is read)."""
        argv, uses = [], False
        for part in self.config.agent_command:
            if part == '{brief_file}':
                argv.append(self.brief_path)
                uses = True
            else:
                argv.append(part)
        return argv, (None if uses else self.brief_path)

    def _confined(self, argv: List[str]) -> List[str]:
        """``argv`` under the agent's own sandbox (``_core.dispatch.agent_sandbox``): the state and configuration
        directories hidden, the run's output directory writable, its brief readable, the workspace kept."""
        return confined_argv(self.config.agent_sandbox, argv, path=self._agent_env().get('PATH'), state_dir=self.config.state_dir,
                             config_dir=self.config.config_dir, out_dir=self.out_dir, brief_path=self.brief_path,
                             workdir=self.config.workdir)

    def _agent_credentials(self) -> Dict[str, str]:
        """The agent credentials file's ``NAME=value`` lines; ``ValueError`` when it is not a regular file of
        this user's with mode 0600 or stricter (it holds the agent's own key: never group- or world-readable)."""
        return read_agent_credentials(self.config.agent_credentials)

    def _agent_env(self) -> Dict[str, str]:
        # the board token and the ledger DSN stay with the runner (_core.outcome.agent_env)
        secrets = []
        for name in BOARD_SECRET_ENV:
            if self.environ.get(name):
                secrets.append(self.environ[name])
                secrets.extend(dsn_passwords(self.environ[name]))
        secrets.extend(ledger_secrets(self.environ))   # the chain ledger's DSN too (FLEET_LEDGER_DSN)
        env = agent_environment(self.environ, secrets=secrets, agent_env=self.config.agent_env,
                                credentials=self._agent_credentials())
        env.pop(REEXEC_ENV, None)
        env.update({'FLEET_ITEM': str(self.config.number), 'FLEET_REPO': self.config.repo, 'FLEET_UNIT': self.unit,
                    'FLEET_RUN_ID': self.run_id, 'FLEET_RUN_DIR': self.run_dir, 'FLEET_OUTPUT_DIR': self.out_dir,
                    'FLEET_BRIEF_FILE': self.brief_path, 'FLEET_BRIEF_VERSION': BRIEF_VERSION,
                    'FLEET_RUN_STARTED_AT': format_time(self.started_at)})
        return env

    def _wait(self):
        """Wait for the agent; ``(rc, timed_out)``; a stall sets ``self.stalled``, a stop at the run's budget
        ``self.budget_stop`` (_runner/spawn.py ``wait_agent``)."""
        watch = None
        if self.budget:
            self._meter, self._read_at = UsageMeter(), 0
            self._decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
            watch = self._over_budget
        rc, why = wait_agent(self.proc, capture_path=self.capture_path, timeout=self.config.timeout,
                             stall_timeout=self.config.stall_timeout, grace=self.config.kill_grace, log=self.log, watch=watch)
        self.stalled = why == 'stall'
        return rc, why == 'timeout'

    def _over_budget(self) -> bool:
        """Read what the agent printed since the last look and check each usage event in it, in order: True (stop
        the agent) at the first that reaches the budget while the agent goes on (``_core.outcome.budget.stop_for``)."""
        try:
            with open(self.capture_path, 'rb') as handle:
                handle.seek(self._read_at)
                data = handle.read()
        except OSError:
            return False
        self._read_at += len(data)
        for event, spend in self._meter.feed(self._decoder.decode(data)):
            limit = stop_for(self.budget, event, spend)
            if limit:
                self.budget_stop = {'limit': limit, 'budget': self.budget.fields(), 'spend': spend.fields(),
                                    'text': describe_budget(self.budget, spend, limit)}
                self.log('%s (%s usage event %d); stopping its process group' % (
                    self.budget_stop['text'], event, spend.events))
                return True
        return False

    def _budget_fields(self, reading) -> Dict[str, Any]:
        """What a close-out records of the budget: the limits, what the agent stated it spent in all (``spend``;
        the run's ``tokens``/``cost_usd`` where its envelope stated none), and ``over_budget`` when a limit was
        reached without a stop (the CLI stated it in its last word). Nothing when the run has no budget."""
        if not self.budget:
            return {}
        spend = reading.spend
        out = {'budget': self.budget.fields(), 'spend': spend.fields() if spend is not None else {}}
        for key, value in out['spend'].items():
            if getattr(reading, key, None) is None:
                out[key] = value
        limit = reached(self.budget, spend) if spend is not None else None
        if limit and self.budget_stop is None:
            out['over_budget'] = limit
        return out

    def _agent_missing(self) -> str:
        """Why the agent cannot start: its executable (or the runtime its ``#!`` asks the PATH for) is not on
        the PATH it is given; '' when it is. A found agent clears an ``agent_missing`` state."""
        argv0 = (self.config.agent_command or [''])[0]
        path = self._agent_env().get('PATH')
        what = missing_agent(argv0, path)
        message = missing_agent_message(argv0, what, path, self.config.host, self.config.master) if what else ''
        if not message and self.config.agent_sandbox == 'bwrap' and find_agent('bwrap', path) is None:
            message = ('the agent sandbox bwrap is not on the run PATH on %s/%s (%s): install bubblewrap (fleet.dispatch.worker '
                       'does with worker_packages_install) or set worker_runner_agent_sandbox: none'
                       % (self.config.host, self.config.master, path or '(no PATH)'))
        note_agent(self.capacity_path, missing=message, now=self.clock(), unit=self.unit, log=self.log)
        return message


def budget_note(configured: Budget, held: Budget, agent: str) -> str:
    """The log line saying how a run's budget is held for its agent profile: a USD limit on a CLI that states no
    cost is not held (budgeted by tokens only), and a profile whose output states usage only at its end is
    checked there, which stops nothing."""
    prof = agent_profile(agent)
    words = ['budget %s' % ', '.join('%s %s' % (k, v) for k, v in sorted(configured.fields().items()))]
    if configured.usd is not None and held.usd is None:
        words.append('the %s CLI states no cost: budgeted by tokens only' % prof.name)
    if prof.usage == 'result':
        words.append('the %s CLI states its usage only in its final result: checked there, after the work' % prof.name)
    elif prof.usage == 'turn':
        words.append('the %s CLI states its usage at each turn it reports: checked there' % prof.name)
    elif prof.usage == 'message':
        words.append('checked at every model response the %s CLI reports' % prof.name)
    return '; '.join(words)
