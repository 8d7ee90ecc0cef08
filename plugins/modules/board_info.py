#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: board_info
short_description: Read the board once and decide, for every item, whether it may run
version_added: 0.1.0
description:
  - Reads the whole board in one paginated read (the board is the queue, read live every cycle; nothing is cached).
  - Evaluates every item with the decision core and returns each item's eligibility, the single reason code that decides it,
    the attempt count derived from its markers, its last marker, its blockers and its artifacts, plus the eligible C(candidates).
  - The attempt count is counted from the item's own markers on every read and never stored.
  - An unreadable queue is the one guard that fails closed, and only when O(mode=apply); with O(mode=plan) the failure is
    reported in RV(error) and no candidates are returned. An empty queue is not a failure.
  - On the controller (a local connection, no become, no task C(environment)) its action plugin runs this module's body in the
    controller's own process, with the same options, answer, warnings and masking; anywhere else the module runs.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.board
  - fleet.dispatch.attributes
  - fleet.dispatch.attributes.info_module
options:
  mode:
    description:
      - V(plan) reports an unreadable queue and returns no candidates.
      - V(apply) fails the task when the queue cannot be read, because a dispatcher that is about to start work must not guess.
    type: str
    default: plan
    choices: [plan, apply]
  max_attempts:
    description:
      - Attempts after which an item is parked (the attempt cap bounds wasted starts; there is no concurrency cap).
      - Starts that ended in a capacity marker do not count.
    type: int
    default: 3
  max_rounds:
    description:
      - Rounds (runs that moved its head) on the open pull request the next run of an item continues, after which the item
        is held C(rounds_spent) and the announcer files one report. A run that pushed nothing is an attempt, not a round.
      - V(0) sets no cap (the attempt cap still bounds the runs that push nothing).
    type: int
    default: 4
  now:
    description:
      - The time to evaluate at, as ISO-8601. Defaults to the board's clock (RV(board_time)) as the read ended, so ages, retry
        waits and the reaper's threshold are measured on the clock the board dated the markers by; this controller's clock
        when the board's cannot be read.
      - Set it to reproduce a plan exactly.
    type: str
  numbers:
    description:
      - Only return these items (for a hand dispatch of one item). The whole board is still read, so blockers resolve.
      - Each named item that may not run is reported as a warning on stderr with its reason (unless O(warn_refusals) is false);
        nothing is written to the board.
    type: list
    elements: int
  agents:
    description:
      - The agent profiles the fleet's masters were provisioned with (C(claude), C(codex), C(gemini), C(qwen), C(custom)). An item whose
        route asks for a profile not in this list is held with reason C(unroutable) (never launched on another agent).
      - Omitted, routes are not judged here; placement still puts a routed item only on a master that offers its profile.
    type: list
    elements: str
    version_added: 0.1.0
  item_budget_tokens:
    description:
      - The budget of one item across its attempts, in tokens (input + output, as the agent CLI stated them in each run's
        close-out marker), counted over its runs since the last reopen that counts. An item whose runs reached it is held with
        reason C(budget_spent) until a human reopens it or raises the budget. V(0) is no limit.
      - An item's own budget field (the ledger's C(budget) column, the GitHub project's C(Budget) field) replaces each limit it names
        for that item.
      - Each run is also held to what is left of it (C(budget_left), passed to the runner by the dispatch role).
    type: int
    default: 0
    version_added: 0.1.0
  item_budget_usd:
    description:
      - The budget of one item across its attempts in US dollars, held like O(item_budget_tokens) against the cost the runs'
        close-out markers state. A cost is never estimated - a run that stated none adds nothing (C(priced_runs) says how many did).
      - V(0) is no limit.
    type: float
    default: 0
    version_added: 0.1.0
  warn_refusals:
    description:
      - Whether each item of O(numbers) that may not run is said on stderr. A read-back of items this cycle just launched
        sets it false (a launched item reads C(running) or C(done), which is not a refusal).
    type: bool
    default: true
    version_added: 0.1.0
  table:
    description:
      - Write every item of the board with its decision (the entries of RV(board_items)) to this JSON file on the controller,
        replaced whole, mode 0600, and return RV(board_items) only for the items of O(numbers) (none without it).
      - A sweep of a large board then carries the board across the module boundary once, as RV(candidates) and RV(counts); the
        steps that need every item read the file (the dispatch role's C(board_table.json) beside C(plan.json)).
      - C({board_id}) in the path is replaced by RV(board_id) (the board's own state subdirectory); a missing directory is made, mode 0700.
      - Written in check mode too (it is this read's output, not a change to the board); an unreadable queue writes an empty table,
        so the previous read never stands for this one.
    type: path
    version_added: 0.1.0
notes:
  - Reason codes are C(eligible), C(not_ready), C(closed), C(blocked), C(running), C(retry_wait), C(done), C(tombstone), C(parked)
    and C(unreadable) (the board could not read part of the item, for example a repository the token may not read; the item's C(unreadable)
    says why; never dispatched).
  - C(budget_spent) holds an item whose runs since the last reopen spent O(item_budget_tokens) or O(item_budget_usd) (its
    C(budget_spent) gives the figures); a reopen by a human, or a higher budget, releases it. It is not C(parked), since a stop at a budget is
    not a failure of the work.
  - C(unroutable) holds an item whose route asks for an agent profile none of O(agents) is (its C(unroutable) says which); the
    route and priority fields of each board are in docs/usage.md, "Routing and priority".
  - A GitHub board with O(board.read_memory) adds C(deferred) (this cycle did not read the item's details, because its page row
    has not moved since its last read; never dispatched until a cycle reads it, at most O(board.full_read_every) cycles later).
  - Session chains add C(chained) (the last marker is a handoff and the item's session chain is alive, or its ledger rows are not known) and
    C(chain_stopped) (its chain's last hop was refused at the depth limit; a reopen releases it). See docs/chains.md.
  - The pull-request loop adds C(rounds_spent) (the open pull request the next run would continue has had its cap of rounds that
    moved its head; a merge, closing the pull request or a reopen releases it) and C(awaiting_review) (the last run left the
    pull request's head as it is and no trusted review asking for work, nor a failing required check, has come since, so the next
    round waits for one; judged only where the review and checks were read). See docs/pull-requests.md.
    A reopen counts only when one of the fleet's identities or an account with write access to the repository made it.
seealso:
  - module: fleet.dispatch.board_marker
  - module: fleet.dispatch.board_item
'''

EXAMPLES = r'''
- name: Read the embedded ledger board and keep what could run now
  fleet.dispatch.board_info:
    board:
      kind: ledger
      path: /var/lib/fleet-dispatch/ledger.sqlite3
  register: board

- name: Read a GitHub project, failing when the queue cannot be read
  fleet.dispatch.board_info:
    board:
      kind: github
      owner: example-org
      project: 7
      token: "{{ lookup('ansible.builtin.env', 'GITHUB_TOKEN') }}"
    mode: apply
  register: board

- name: Show why each item would not run
  ansible.builtin.debug:
    msg: "#{{ item.number }} {{ item.reason }}"
  loop: "{{ board.board_items | rejectattr('eligible') }}"
  loop_control:
    label: "{{ item.number }}"
'''

RETURN = r'''
readable:
  description: Whether the queue could be read. False only in O(mode=plan); O(mode=apply) fails instead.
  returned: always
  type: bool
  sample: true
error:
  description: Why the queue could not be read, naming the fix; empty when it was read.
  returned: always
  type: str
  sample: ''
board:
  description: Where the board lives (no password or token).
  returned: always
  type: str
  sample: ledger:/var/lib/fleet-dispatch/ledger.sqlite3
board_id:
  description:
    - The board's short stable id, derived from its address without secrets (SQLite file, PostgreSQL host, port and
      database, or GitHub owner and project) - for example V(pg-fleet-1a2b3c4d). The dispatch role's lease names and state
      files carry it, so two boards on one controller never share a lock or a file.
  returned: always
  type: str
  sample: sqlite-ledger-5d41402a
now:
  description:
    - The time the items were evaluated at, on the board's clock (RV(board_time)); this controller's clock when the board's
      could not be read, or O(now) when given. Every age and wait in RV(board_items) is counted from it.
  returned: always
  type: str
  sample: '2026-11-30T01:00:00.000000Z'
board_time:
  description:
    - The board's own clock as the read ended (GitHub's Date header, the PostgreSQL ledger's database clock, a SQLite
      ledger's writer's); null when it could not be read. Runs, merges and their ages are dated on this clock.
  returned: always
  type: str
  sample: '2026-11-30T01:00:01.000000Z'
controller_now:
  description: This controller's clock when the read began (a cycle's own duration is measured on it, not on the board's).
  returned: always
  type: str
  sample: '2026-11-30T01:00:00.400000Z'
clock_offset_s:
  description:
    - Seconds this controller's clock is ahead of the board's (negative when behind), to the second on GitHub; null when
      the board's clock could not be read. A worker's own offset from the board's is its probe's C(clock_skew_s) plus
      this (the dispatch role shows it per worker in status and the metrics).
  returned: always
  type: float
  sample: -0.4
cost:
  description:
    - What the read cost where the board meters it (GitHub rate-limit points); null for the ledger.
    - For a GitHub board also C(token), the token check made once per read (kind, login, what each operation needs, C(missing),
      C(unverified) and C(fix)), and C(unreadable), the parts of the board GitHub would not return, each with its cause.
    - For a GitHub board also C(pull_details), how many eligible items continuing a pull request then had its review and checks
      read (one call each, after the page, D1) to judge C(awaiting_review).
  returned: always
  type: dict
  sample: {cost: 1, remaining: 4999, reset_at: '2026-11-30T02:00:00Z'}
counts:
  description: How many items of the board each reason code decides (every item read, whatever O(numbers) names).
  returned: always
  type: dict
  sample: {eligible: 3, done: 120, blocked: 4}
table:
  description: The file O(table) was written to (empty when O(table) is not set).
  returned: always
  type: str
  sample: /root/.local/state/fleet-dispatch/sqlite-ledger-5d41402a/board_table.json
board_items:
  description:
    - Every item on the board (or those in O(numbers)), with its decision. Not named C(items), which in a template
      is the dict's own method.
    - With O(table), only the items of O(numbers) (the whole board is in the file).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The board's own id of the item.
      type: str
    number:
      description: The item number.
      type: int
    repo:
      description: The repository of the item, on boards that span several.
      type: str
    title:
      description: The item title (board text - never passed to a shell).
      type: str
    state:
      description: C(open) or C(closed).
      type: str
    status:
      description: The board status field value.
      type: str
    eligible:
      description: Whether the item may be dispatched now.
      type: bool
    reason:
      description: The one reason code that decides it.
      type: str
      sample: tombstone
    holds:
      description:
        - Every reason that holds the item, highest precedence first; the first is RV(board_items[].reason). Empty when eligible.
        - Lifting the first hold shows the next one, so an operator sees all of them at once (see the C(explain) playbook).
      type: list
      elements: str
      sample: [parked, blocked, not_ready]
    reopened:
      description: Whether a reopen after the last marker outranks it (the last marker is then not read).
      type: bool
    attempts:
      description: Attempts so far, derived from the markers (capacity deaths excluded).
      type: int
    not_before:
      description: For C(retry_wait), when the item becomes eligible again.
      type: str
    last_marker:
      description: The last marker (kind, at, age_s, fields), or null.
      type: dict
    blockers:
      description: Dependency edges with the blocker's state; only open ones block.
      type: list
      elements: dict
    open_blockers:
      description: Numbers of the blockers that are open.
      type: list
      elements: int
    artifacts:
      description: Changes that reference the item (ref, merged, merged_at, created_at, closes, url, base, into_closing_branch).
      type: list
      elements: dict
    run_cost:
      description:
        - The item's runs as their close-out markers state them - C(runs), and the sums of C(turns), C(tokens) and
          C(cost_usd) (null when no run stated one; never estimated), C(priced_runs) the runs that stated a cost.
      type: dict
    spend_by_master:
      description:
        - The item's runs by the master that ran them, as their close-out markers name it - each C(host), C(master), C(runs),
          C(priced_runs), C(tokens) and C(cost_usd) (null when none stated; never estimated). The status page and the metrics
          sum them per master.
      type: list
      elements: dict
    spend_by_account_day:
      description:
        - The item's runs by the agent account their close-out names (C(account), set from the launch's C(FLEET_ACCOUNT)) and the
          UTC day it is dated - each C(account), C(day), C(runs), C(priced_runs), C(tokens), C(cost_usd) - for an account's daily budget.
      type: list
      elements: dict
    run_durations:
      description:
        - Seconds from each finished run's start marker to its ending marker, from the item's own markers (the
          reaper's threshold is 2x the longest on the board, see the dispatch role).
      type: list
      elements: float
    unreadable:
      description: Why the board could not read part of the item (empty when it read it whole); such an item has reason C(unreadable).
      type: str
    human_markers:
      description:
        - Glyph-led comments by authors who are not the fleet's identities (the token's login and O(board.marker_authors) on
          GitHub; the recorded author on the ledger) - human comments, never markers - each with C(id), C(author), C(kind) (what
          the glyph would mean) and C(at).
      type: list
      elements: dict
    route:
      description:
        - What the item asks for - C(agent) (an agent profile), C(model) and C(effort) - each empty when not asked.
      type: dict
      sample: {agent: claude, model: claude-sonnet-4-5, effort: high}
    unroutable:
      description: Why no configured master can serve the item's route (empty when one can, or O(agents) was omitted).
      type: str
    spend:
      description:
        - What the item's runs since the last reopen that counts stated they spent - C(runs), C(priced_runs), C(tokens) and
          C(cost_usd) (null when no run stated one; never estimated) - the figures held against the item budget.
      type: dict
      sample: {runs: 2, priced_runs: 2, tokens: 41000, cost_usd: 0.82}
    item_budget:
      description:
        - The item budget it is held to (C(tokens), C(usd)) - the dispatcher's, each limit its budget field names replaced; empty
          when there is none.
      type: dict
    budget_left:
      description:
        - What is left of the item budget for its next run (C(tokens), C(usd)); the dispatch role gives it to the runner, which stops
          the run at the smaller of it and the run's own budget. Empty without an item budget.
      type: dict
    budget_spent:
      description: Why the item's spend reached its item budget, with the figures (empty when it did not); reason C(budget_spent).
      type: str
    budget_held_by:
      description:
        - Which limits of the item budget can hold the item - C(limits) (C(tokens), C(usd)), C(short) (C(tokens and usd),
          C(tokens only), C(nothing) ...) and C(text), which says why a USD limit cannot (the agent profile it is routed to
          states no cost, or its runs since the last reopen stated none; a cost is never estimated); empty without an item budget.
      type: dict
      version_added: 0.1.0
    budget_field:
      description:
        - The item's own budget as the board gives it (the ledger's C(budget) column, the GitHub project's C(Budget) field,
          docs/usage.md), or null. Each limit it names replaces the dispatcher's item budget for this item (RV(board_items[].item_budget)).
      type: raw
    budget_note:
      description: Why the item's budget field was not read (it is not a budget), so the dispatcher's item budget holds; empty otherwise.
      type: str
    pull:
      description:
        - The open pull request a run of the fleet left and the next run continues (its workspace at the head branch), or null
          (the next run starts fresh). C(rounds) counts the runs on it that moved its head, C(spent) whether C(max_rounds) is reached.
      type: dict
      contains:
        ref:
          description: The pull request (C(owner/name#N) on GitHub, the artifact's ref on the ledger).
          type: str
        url:
          description: Where a human sees it.
          type: str
        head_ref:
          description: Its head branch.
          type: str
        head_sha:
          description: Its head commit as read.
          type: str
        rounds:
          description: Runs on it whose close-out says they moved its head.
          type: int
        max_rounds:
          description: The round cap.
          type: int
        spent:
          description: Whether the cap is reached (the item reads C(rounds_spent)).
          type: bool
        awaiting:
          description:
            - Below the cap, why the next round waits (the item reads C(awaiting_review)), or an empty string.
            - Absent when the cap is spent.
          type: str
    priority:
      description: The board's priority field value as read (C(P1), C(high), a number), or null.
      type: raw
    priority_rank:
      description: Its rank, lower first (C(P<n>) is n; urgent 0, high 1, medium 2, low 3), or null for none.
      type: float
    created_at:
      description: When the item was created (its age orders candidates of equal priority).
      type: str
    ignored_reopens:
      description:
        - Reopens that count for nothing because neither one of the fleet's identities nor an account with write access to the
          repository made them (on GitHub the permission is read from the repository's collaborators; on the ledger every
          event counts) - each with C(actor), C(at) and C(why). They neither reset the attempt count nor outrank a marker.
      type: list
      elements: dict
candidates:
  description:
    - The eligible items (same entries as RV(board_items)), by priority rank (an item without one after every item with one),
      then age (oldest first), then board order.
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._board_read import ARGUMENT_SPEC, run
# benchmarks/github_cost.py prices _assess's reads
from ansible_collections.fleet.dispatch.plugins.module_utils._board_read import _assess  # noqa: F401 pylint: disable=unused-import


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
