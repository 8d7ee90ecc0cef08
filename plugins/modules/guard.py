#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: guard
short_description: One step of the guarded dispatch path, decided on the controller
version_added: 0.1.0
description:
  - The shared dispatch tasks (role C(fleet.dispatch.dispatch)) call this action between their remote steps. Each call takes the
    candidates still admitted and returns the ones that pass this step (RV(admitted)) and the ones refused (RV(refused)).
  - Every refusal is printed as a warning on stderr and written nowhere else - a refusal writes nothing to the board.
    A refusal needs positive evidence - a lease another dispatcher holds, a unit the probe saw live, no usable master.
  - O(stage=batch) joins the placed candidates with their workspaces into one launch call per master with work.
  - O(stage=name) gives each candidate its unit name (its lease name). O(stage=lease) keeps the candidates whose lease this
    dispatcher holds. O(stage=probe) drops the candidates already live on any master and lists the duplicates to repair (oldest
    wins). O(stage=place) reads the capacity answers, leaves dark masters out and places each candidate on the master with
    the most measured headroom, without a cap. O(stage=report) reads the launch results. O(stage=confirm) joins the launched
    runs with the masters' M(fleet.dispatch.start_info) answers and the board's markers - launched is not started (D20) - and
    says V(started), V(failed to start) followed by the runner's reason, or V(start not confirmed) for each.
  - O(stage=decide) is play 3 of the guarded path in one call (the lease is held while it runs, so each forked task there counts) -
    it reads O(worker_probes) as one answer per master, then runs the V(probe), V(place) and V(batch) steps in that order, exactly
    as their own stages do (RV(probed), RV(placed), RV(batched)), gives each worker with work its launch list (RV(work)) and reads
    the reaper's clock half (RV(reaping)). The refusals and warnings of the three steps are said on stderr as theirs are.
  - O(stage=open) opens a cycle in one step - every master of the inventory's workers (RV(masters), from the workers' host
    variables C(worker_masters), C(worker_runner_agent), C(worker_runner_agents), C(worker_agent_account) and
    C(worker_agent_credentials)) and the reaper's clock half (RV(reaping), D14) from O(items) or O(table) at O(now).
  - O(stage=announce) finds the stalls nobody is coming for (the announcer, C(_core/dispatch/announce.py)) from the board's items, this
    cycle's probe survey and capacity answers, and the previous cycle's record of consecutive failed probes; it writes nothing
    (M(fleet.dispatch.board_report) files the reports).
  - The decisions are the pure functions of C(module_utils/_core/dispatch/plan.py); this action only calls them and logs.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.attributes
  - fleet.dispatch.attributes.INFO_MODULE
attributes:
  action:
    description: Runs on the controller as an action plugin; the module file only holds the documentation.
    support: full
options:
  stage:
    description:
      - Which step to run. Each stage takes its own options (those naming it below); an option of another stage fails the
        task rather than being ignored.
    type: str
    required: true
    choices: [open, name, lease, probe, place, batch, decide, report, confirm, announce]
  candidates:
    description: The candidates still admitted (from RV(fleet.dispatch.board_info#module:candidates), then from the previous step).
    type: list
    elements: dict
    default: []
  leases:
    description:
      - The answers of the C(fleet.dispatch.mutex) lookup for the candidates' unit names (O(stage=lease)).
      - Required unless O(plan), which takes no lease.
    type: list
    elements: dict
  lease_enabled:
    description:
      - V(false) runs the production path without the lease - a test flag that lets the race harness show what the lease
        prevents. Every admitted candidate is then named in a warning.
    type: bool
    default: true
  probe_always:
    description:
      - O(stage=lease) - probe every worker this cycle even when no candidate holds its lease (the sweep repairs duplicates, D4).
        RV(probe_hosts) lists the workers the probe play calls.
    type: bool
    default: false
  plan:
    description:
      - O(stage=lease) and O(stage=decide) - plan mode, nothing held and nothing launched. O(stage=lease) takes no lease, admits
        every candidate and names every worker to probe (RV(read_only) tells the probe play to run in check mode).
        O(stage=decide) reads a master that did not answer the probe as configured, names it in RV(unprobed), gives no worker
        any work (RV(work) is empty) and returns the table's input as RV(plan).
    type: bool
    default: false
  probes:
    description: The registered loop results of M(fleet.dispatch.units_info), one per master, loop item C({worker, master}).
    type: list
    elements: dict
    default: []
  owner:
    description: The lease owner token of this dispatcher run, written into the note of a deliberate stop.
    type: str
    default: ''
  masters:
    description: Every configured master as C({worker, master, account}) (O(stage=lease), O(stage=place), O(stage=decide) and O(stage=announce)).
    type: list
    elements: dict
    default: []
  capacity:
    description: The registered loop results of M(fleet.dispatch.capacity_info), one per master (O(stage=place) and O(stage=announce)).
    type: list
    elements: dict
    default: []
  survey:
    description: RV(survey) of the probe step; its live-run counts override the capacity reading and its blind masters get nothing.
    type: dict
    default: {}
  workspaces:
    description:
      - The registered loop results of M(fleet.dispatch.workspace), one per placed candidate (O(stage=batch)).
      - Omitted, the workspaces are made in the launch call itself (M(fleet.dispatch.worker_launch)) and C({workdir}) in O(command)
        is left for it to fill in.
    type: list
    elements: dict
  command:
    description:
      - The run's argv (O(stage=batch)); V({number}), V({repo}), V({unit}) and V({workdir}) are filled in per item.
    type: list
    elements: str
    default: []
  setenv:
    description:
      - Extra non-secret environment for every run (O(stage=batch)); C(FLEET_ITEM), C(FLEET_REPO), C(FLEET_UNIT),
        C(FLEET_DISPATCH_OWNER) and C(FLEET_LEASE_FENCE) are always set.
      - Not C(no_log) and not masked, because RV(batches) is the input of M(fleet.dispatch.launch) and a mask would be launched.
        A secret-looking name (as M(fleet.dispatch.launch) judges it) is named in a warning, never its value.
    type: dict
    default: {}
  launches:
    description: The registered loop results of M(fleet.dispatch.launch), one per master, loop item a RV(batches) entry (O(stage=report)).
    type: list
    elements: dict
    default: []
  worker_launches:
    description:
      - O(stage=report) - worker name to its M(fleet.dispatch.worker_launch) result, instead of O(launches); each of O(batches) is then
        answered from its worker's result (a worker missing here, failed or unreachable fails its runs), and RV(timing) adds
        C(launched), the step's start.
      - Mutually exclusive with O(launches); requires O(batches).
    type: dict
  batches:
    description: O(stage=report) with O(worker_launches) - RV(batches) of the V(batch) step.
    type: list
    elements: dict
  previous:
    description: The previous cycle's RV(record) (O(stage=announce)); empty or unreadable restarts every count at one.
    type: dict
    default: {}
  previous_path:
    description:
      - O(stage=announce) - the file holding the previous cycle's RV(record) (the announcer's record), read by this action on the
        controller instead of O(previous). A missing file reads as empty; an unreadable one too, with a warning.
      - Mutually exclusive with O(previous).
    type: path
  unreaped:
    description: Orphans the reaper held because a master was blind, each C({number, repo, started_at, why}) (O(stage=announce)).
    type: list
    elements: dict
    default: []
  now:
    description:
      - The cycle's time as ISO-8601 (O(stage=announce)); defaults to the clock.
      - The board's time (RV(fleet.dispatch.board_info#module:now), O(stage=open), O(stage=decide) and O(stage=place)); omitted - no
        RV(reaping) due.
    type: str
  blind_cycles:
    description: Consecutive cycles of a failed probe (or an C(update_failed) reading) before it is announced (O(stage=announce)).
    type: int
    default: 3
  capacity_window:
    description: Seconds within which one item's capacity deaths on different accounts are announced (O(stage=announce)).
    type: int
    default: 21600
  board_id:
    description:
      - The board's id (RV(fleet.dispatch.board_info#module:board_id)); O(stage=name) names each candidate's lease
        C(<unit>@<board_id>), so two boards on one controller never share a lock. Empty - the lease name is the unit name.
      - With O(stage=lease) and O(plan), the step names the candidates first, as O(stage=name) does (plan mode takes no
        lease, so its candidates need no step between the two). Empty there - the candidates are taken as named.
    type: str
    default: ''
  launched:
    description: The RV(launched) rows of O(stage=report) (O(stage=confirm)).
    type: list
    elements: dict
    default: []
  starts:
    description: The registered loop results of M(fleet.dispatch.start_info), one per master, loop item a RV(batches) entry
      (O(stage=confirm)).
    type: list
    elements: dict
    default: []
  items:
    description:
      - The board's items, RV(fleet.dispatch.board_info#module:board_items) (O(stage=announce); O(stage=open) and O(stage=decide) read the
        reaper's clock half from them).
      - The board's items of the started runs, from M(fleet.dispatch.board_info) (O(stage=confirm)); a started run must have a
        marker of its run id on this board. Omit it (null) when the board was not read; the board check is then skipped.
    type: list
    elements: dict
  table:
    description:
      - Read O(items) from this file, the O(fleet.dispatch.board_info#module:table) a sweep's board read wrote (O(stage=open),
        O(stage=announce), O(stage=decide)), so the whole board never passes through a template. Mutually exclusive with O(items).
    type: path
    version_added: 0.1.0
  wait:
    description: The start check's bound in seconds, for the words of an unconfirmed start (O(stage=confirm)).
    type: float
    default: 0
  worker_probes:
    description:
      - O(stage=decide) - worker name to its M(fleet.dispatch.worker_probe) result; a worker missing here or whose result failed or
        was unreachable leaves its masters blind (a failed answer, D5).
      - Required when O(probe_now) is V(true).
    type: dict
  board_offset_s:
    description:
      - O(stage=decide) - seconds this controller's clock is ahead of the board's (M(fleet.dispatch.board_info)'s
        RV(fleet.dispatch.board_info#module:clock_offset_s)); each worker's clock is then measured against the board's, the one
        runs are dated by. Omitted or null - against this controller's.
    type: float
    version_added: 0.1.0
  probe_now:
    description: O(stage=decide) - V(false) when this cycle probed nobody (a hand dispatch without a candidate); every master is skipped.
    type: bool
    default: true
  clones:
    description: O(stage=decide) - the clone on the workers per repository (owner/name), for RV(work).
    type: dict
    default: {}
  clone:
    description: O(stage=decide) - the clone on the workers of an item whose repository is not in O(clones).
    type: str
    default: ''
  branch:
    description: O(stage=decide) - the branch each workspace is made from.
    type: str
    default: main
  reap_floor:
    description: O(stage=open) and O(stage=decide) - the reaper's floor in seconds (C(dispatch_reap_floor)); with O(items) and O(now) it gives RV(reaping).
    type: float
    default: 1800
  reaping:
    description:
      - O(stage=decide) - the reaper's clock half taken before the probe (the C(fleet.dispatch.reap_due) filter's answer), so the
        due items' leases could be held across the probe; without it the step computes it from O(items), O(now) and O(reap_floor).
        The probe half (RV(reaped)) is read from this cycle's probe answers (D14).
      - Mutually exclusive with O(reap_floor).
    type: dict
  reap_leases:
    description: O(stage=decide) - the due items' leases (the C(fleet.dispatch.mutex) answers), read with O(reap_lease_enabled).
    type: list
    elements: dict
    default: []
  reap_lease_enabled:
    description: O(stage=decide) - a due item is reset only when this run holds its lease in O(reap_leases) (apply mode, the sweep).
    type: bool
    default: false
  account_budget:
    description:
      - O(stage=place) and O(stage=decide) - an agent account's daily budget, C(tokens) and/or C(usd) (C(dispatch_account_budget_tokens),
        C(dispatch_account_budget_usd)); with O(items) and O(now), every master of an account whose runs closed today (UTC) stated
        that much is dark with source C(budget) until 00:00 UTC. A cost is never estimated. Empty - no daily budget.
      - With O(stage=place) it requires O(items) and O(now).
    type: dict
  workers_group:
    description: O(stage=open) - the inventory group of the workers (C(dispatch_workers_group)); RV(masters) lists their masters.
    type: str
    default: workers
  reap:
    description: O(stage=open) - V(false) gives no RV(reaping) due (the reaper is off, or the board was not read).
    type: bool
    default: true
  timing:
    description:
      - The cycle's epoch stamps so far. O(stage=lease) - RV(timing) adds C(leased) (the step's start, when the leases are held);
        O(stage=decide) - C(probed) (the step's start) and C(placed) (its end); O(stage=report) with O(worker_launches) - C(launched).
    type: dict
    default: {}
  launch_args:
    description:
      - O(stage=decide) - the options every M(fleet.dispatch.worker_launch) call of the launch play takes besides its items
        (C(path), C(environment_file), C(notifier), C(runner_version)); returned as RV(launch_args), so the launch play reads
        one registered result.
    type: dict
    default: {}
  lease_store:
    description:
      - O(stage=decide) - the lease store the candidates' leases were taken in (the P(fleet.dispatch.mutex#lookup) lookup's
        backend, path and dsn). Just before the launch, each admitted candidate's lease is read there; one
        that this O(owner) no longer holds under its fencing token (taken over by another dispatcher after this one
        stalled, or expired) is refused with stage C(lease) and launched nowhere (D4). A store that cannot be read
        fences nothing and says so (D5). Omitted, nothing is fenced.
    type: dict
    suboptions:
      backend:
        description: V(sqlite) or V(postgres).
        type: str
        default: sqlite
      path:
        description: The SQLite store's file.
        type: str
        default: ''
      dsn:
        description: The PostgreSQL store's DSN (a secret).
        type: str
        default: ''
seealso:
  - module: fleet.dispatch.start_info
  - module: fleet.dispatch.units_info
  - module: fleet.dispatch.capacity_info
  - module: fleet.dispatch.launch
'''

EXAMPLES = r'''
- name: Keep the candidates whose lease this run holds
  fleet.dispatch.guard:
    stage: lease
    candidates: "{{ named.admitted }}"
    leases: "{{ leases }}"
  register: leased

- name: Drop the candidates already live on any master
  fleet.dispatch.guard:
    stage: probe
    candidates: "{{ leased.admitted }}"
    probes: "{{ probe.results }}"
  register: probed
'''

RETURN = r'''
admitted:
  description: The candidates that pass this step (each with C(unit); after O(stage=place) also C(worker) and C(master)).
  returned: when O(stage) is V(name), V(lease), V(probe), V(place) or V(decide)
  type: list
  elements: dict
refused:
  description: The candidates refused by this step, each with C(number), C(repo), C(unit), C(stage) and C(why). Also warned on stderr.
  returned: always
  type: list
  elements: dict
survey:
  description: O(stage=probe) - C(live) (unit name to its live units), C(duplicates), C(blind) (masters whose probe failed), C(masters).
  returned: when O(stage=probe)
  type: dict
duplicates:
  description: O(stage=probe) - units live on more than one master, with C(keep) (the oldest) and C(stop).
  returned: when O(stage=probe)
  type: list
  elements: dict
repairs:
  description: O(stage=probe) - the stops that repair the duplicates, each with C(worker), C(master), C(unit) and the C(note) to write.
  returned: when O(stage=probe)
  type: list
  elements: dict
plan:
  description:
    - O(stage=place) - C(assignments), C(unplaced) and C(dark) (as the C(fleet.dispatch.place) filter returns them).
    - O(stage=decide) with O(plan) - the input of the C(fleet.dispatch.plan_table) filter - C(assignments) (each with
      C(probed)), C(unplaced) (a candidate live elsewhere, or no usable master), C(dark) and C(unprobed).
  returned: when O(stage=place), or O(stage=decide) with O(plan)
  type: dict
masters:
  description:
    - O(stage=place) - the usable masters with C(dark), C(source), C(reset_at), C(why) and C(headroom).
    - O(stage=open) - every configured master, C({worker, master, dark, headroom, agents, account}), in inventory order; C(account)
      is the master's C(agent_account), else the worker's, else a fingerprint of the agent credentials (never the credentials).
  returned: when O(stage=place) or O(stage=open)
  type: list
  elements: dict
batches:
  description: O(stage=batch) - one entry per master with work, C({worker, master, items, launch}) - one launch call each; C(launch)
    is the launch-ready item list.
  returned: when O(stage=batch)
  type: list
  elements: dict
launched:
  description:
    - O(stage=report) - the units started (would be, in check mode).
    - O(stage=confirm) - the same rows, each with C(start) (V(started), V(failed), V(unconfirmed)), C(start_cause),
      C(start_reason) and C(start_text), the words the sweep output, C(plan.json) and C(status) show.
  returned: when O(stage) is V(report) or V(confirm)
  type: list
  elements: dict
failed:
  description: O(stage=report) - the units that failed to launch, with C(why).
  returned: when O(stage=report)
  type: list
  elements: dict
stalls:
  description: O(stage=announce) - one entry per stall, C({kind, subject, title, body, since}); titles and bodies are defanged.
  returned: when O(stage=announce)
  type: list
  elements: dict
unsure:
  description: O(stage=announce) - report titles whose evidence was not read this cycle (a master whose capacity was not read);
    M(fleet.dispatch.board_report) neither files nor closes them.
  returned: when O(stage=announce)
  type: list
  elements: str
reconcile:
  description:
    - O(stage=announce) - whether M(fleet.dispatch.board_report) has anything to do this cycle. V(false) when there is no stall
      and the previous record says for certain that no report of ours is open (C(reports_known), C(open), C(filed)) - nothing to
      file, nothing to close, so the board is not read for reports.
  returned: when O(stage=announce)
  type: bool
record:
  description: O(stage=announce) - this cycle's record to keep for the next one, C({time, blind, update_failed}), each a map of
    C(worker/master) to C({cycles, since}).
  returned: when O(stage=announce)
  type: dict
started:
  description: O(stage=confirm) - the launched runs that started (their start marker is on this board).
  returned: when O(stage=confirm)
  type: list
  elements: dict
failed_to_start:
  description:
    - O(stage=confirm) - the launched runs that did not start, each with C(start_cause) (V(board_unreachable),
      V(board_unwritable), V(start_marker_lost), V(no_start_record), V(other_board)) and C(start_reason), the runner's words.
  returned: when O(stage=confirm)
  type: list
  elements: dict
probe:
  description: O(stage=decide) - C(results), the per-master probe answers in the shape of registered loop results (loop var C(_dispatch_m)).
  returned: when O(stage=decide)
  type: dict
probed:
  description:
    - O(stage=decide) - the answer of the V(probe) step (C(admitted), C(refused), C(survey), C(duplicates), C(repairs)).
    - It also has C(clocks), each probed worker's C(controller_skew_s) and C(board_skew_s) (its clock ahead of the board's,
      null without O(board_offset_s)).
  returned: when O(stage=decide)
  type: dict
placed:
  description: O(stage=decide) - the answer of the V(place) step (C(admitted), C(refused), C(plan), C(masters)).
  returned: when O(stage=decide)
  type: dict
batched:
  description: O(stage=decide) - the answer of the V(batch) step (C(batches), C(refused)).
  returned: when O(stage=decide)
  type: dict
work:
  description: O(stage=decide) - worker name to the items of its one M(fleet.dispatch.worker_launch) call.
  returned: when O(stage=decide)
  type: dict
reaping:
  description: O(stage=open) and O(stage=decide) - the reaper's clock half, C(threshold) and C(due) (as the C(fleet.dispatch.reap_due)
    filter returns it).
  returned: when O(stage=open) or O(stage=decide)
  type: dict
reaped:
  description:
    - O(stage=decide) - the reaper's decision on this cycle's probe, C(reap) (each with the reset marker's C(fields) and C(text))
      and C(held) (each with C(why); C(blind) names the masters that did not answer), as C(fleet.dispatch.reap_decide) returns it.
      A master the probe did not answer is blind, in plan mode too (blind is not dead, D5, D14, D20).
  returned: when O(stage=decide)
  type: dict
timing:
  description: O(stage=lease) - O(timing) with C(leased); O(stage=decide) - with C(probed) and C(placed); O(stage=report) with
    O(worker_launches) - with C(launched).
  returned: when O(stage) is V(lease) or V(decide), or O(stage=report) with O(worker_launches)
  type: dict
probe_masters:
  description: O(stage=lease) - worker name to the names of its configured masters (O(masters)).
  returned: when O(stage=lease)
  type: dict
probe_now:
  description: O(stage=lease) - whether this cycle probes (a candidate holds its lease, or O(probe_always)).
  returned: when O(stage=lease)
  type: bool
probe_hosts:
  description: O(stage=lease) - the workers the probe play calls this cycle (every worker of O(masters) when RV(probe_now), else none).
  returned: when O(stage=lease)
  type: list
  elements: str
read_only:
  description: O(stage=lease) - O(plan) as given - the probe play probes in check mode, writing nothing on the workers.
  returned: when O(stage=lease)
  type: bool
unprobed:
  description: O(stage=decide) with O(plan) - the masters the probe could not read, C(worker), C(master), C(why).
  returned: when O(stage=decide) and O(plan)
  type: list
  elements: dict
ineligible:
  description:
    - O(stage=decide) - the numbers of the items of O(items) (or O(table)) that may not run, in board order (the plan's
      C(skipped); C(skipped) itself is a result key Ansible reserves for a skipped task).
  returned: when O(stage=decide)
  type: list
  elements: int
launch_args:
  description: O(stage=decide) - O(launch_args) as given.
  returned: when O(stage=decide)
  type: dict
unconfirmed:
  description: O(stage=confirm) - the launched runs with no start record within the wait (still running) or no answer.
  returned: when O(stage=confirm)
  type: list
  elements: dict
'''
