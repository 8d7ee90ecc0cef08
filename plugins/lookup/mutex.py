# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``fleet.dispatch.mutex`` lookup: a thin shell over ``module_utils/_store/lease.py``."""

from __future__ import annotations

DOCUMENTATION = r"""
name: mutex
author:
  - fleet.dispatch contributors (@fleet-dispatch)
version_added: 0.1.0
short_description: Acquire or release a named lease held across the probe and the launch
description:
  - Acquires (O(state=acquired)) or releases (O(state=released)) one lease per term in a lease store, and returns
    the lease. This is the third layer of the duplicate-run guarantee -
    one lock held from the probe of live units through the launch, so that a second dispatcher's probe sees the
    first dispatcher's unit instead of racing it.
  - The lease is data in a store (owner, fencing token, expiry), not a held file descriptor, because a lookup runs
    in a process that exits after its task.
  - Idempotent for the same O(owner) - acquiring a live lease you already hold returns the same token and extends
    its expiry to now + O(ttl). A different owner gets RV(_raw[].acquired=false) and the RV(_raw[].holder); this is
    not an error.
  - An expired lease is taken over by the next owner that asks, with a larger token. Nothing a crash leaves behind
    needs a human.
  - With O(heartbeat) (the default), a lease is stored for O(heartbeat) seconds and a detached keeper process renews it
    while the C(ansible-playbook) process that took it lives, up to O(ttl). A dispatcher killed while holding a lease
    (SIGKILL, a crashed controller) frees it within about one heartbeat, not one ttl. The keeper stops at the first
    refused renewal (released, or taken over under a larger token), so it never takes a lease back.
  - Fails B(open) - when the store cannot be written or reached the lease comes back with
    RV(_raw[].acquired=true) and RV(_raw[].degraded=true), and a warning on stderr names the failure and the fix.
    Other mistakes (no O(owner), an empty term, a non-positive O(ttl), an unknown O(backend)) are errors.
  - A lookup is evaluated again every time a templated variable that uses it is rendered. Pin the result once
    with M(ansible.builtin.set_fact), and release the lease in the C(always) section of a block.
  - Lookups also run in check mode, so a plan run takes and releases the lease like an apply run does.
options:
  _terms:
    description:
      - Lease names, one per item, for example V(task-42) (the run's unit name).
    type: list
    elements: str
    required: true
  owner:
    description:
      - The owner token of this dispatcher run. Every acquisition and the release of one dispatch must use the same
        value, and two dispatchers must never share one. Generate it once per play and pin it with
        M(ansible.builtin.set_fact).
    type: str
    required: true
    vars:
      - name: fleet_dispatch_lease_owner
  ttl:
    description:
      - Lifetime of the lease in seconds, counted from this acquisition.
      - The lease is released in C(always), so the TTL only matters after a crash - then the item waits up to one
        TTL before another dispatcher may take it. Too short is the dangerous side - a lease that expires while its
        holder is between probe and launch reopens the window it exists to close.
      - The default of 600 seconds is an unmeasured guess, twenty times the 26-27 seconds guard-to-launch the
        seed fleet measured. Settle it by logging how long each dispatch holds its lease for a week, then use twice
        the longest hold observed.
    type: float
    default: 600
    env:
      - name: FLEET_DISPATCH_LEASE_TTL
    vars:
      - name: fleet_dispatch_lease_ttl
  heartbeat:
    description:
      - Seconds a lease is stored for before its keeper renews it (three renewals per heartbeat, never past O(ttl)).
        A holder that is gone frees its leases within about this long. V(0) turns the keeper off - the lease is
        stored for the whole O(ttl), as without a heartbeat.
      - 30 seconds leaves a loaded controller two missed renewals (ten seconds apart) before a living holder's lease
        would expire, and is the longest an item waits after its dispatcher died.
    type: float
    default: 30
    env:
      - name: FLEET_DISPATCH_LEASE_HEARTBEAT
    vars:
      - name: fleet_dispatch_lease_heartbeat
  backend:
    description:
      - V(sqlite) keeps leases in a SQLite file on this controller (table C(leases), its own migration component in
        C(schema_version)); it covers the sweeper's timer and the hand dispatches of ONE controller - single-controller
        only. A dispatcher on another controller, or in an AWX job whose container is thrown away, does not see them.
      - V(postgres) (or V(postgresql)) keeps them in PostgreSQL - the same table and statements - and judges expiry by
        the database clock; use it when dispatchers run on several machines or in AWX.
    type: str
    choices: [sqlite, postgres, postgresql]
    default: sqlite
    env:
      - name: FLEET_DISPATCH_LEASE_BACKEND
    vars:
      - name: fleet_dispatch_lease_backend
  path:
    description:
      - The SQLite file of the V(sqlite) backend, on the controller; when it names an existing directory, the file
        C(leases.sqlite3) in it. The file and its directory (mode 0700) are created if missing.
      - Unset - C(leases.sqlite3) in the dispatcher's state directory, C($XDG_STATE_HOME/fleet-dispatch) or
        C(~/.local/state/fleet-dispatch). The C(fleet.dispatch.dispatch) role passes the ledger file when the board is
        a SQLite ledger and a file in the board's state directory otherwise.
      - Every dispatcher of one controller (the sweeper's user and an operator's) must name the SAME file - two files
        are two locks, which is no lock; a directory they share must be writable by all of them.
    type: path
    env:
      - name: FLEET_DISPATCH_LEASE_PATH
      - name: FLEET_DISPATCH_LEASE_DIR
    vars:
      - name: fleet_dispatch_lease_path
      - name: fleet_dispatch_lease_dir
  dsn:
    description:
      - PostgreSQL connection string of the V(postgres) backend (URL or key=value form). Required with
        O(backend=postgres).
      - It carries a credential, so treat it as C(no_log) - a lookup has no argument spec to mark it, so the lookup itself
        never echoes the password in results (RV(_raw[].store) and RV(_raw[].why)), warnings or errors (it is replaced by
        V(********)), and the dispatch tasks that call it set C(no_log) when the DSN comes from O(dsn),
        C(fleet_dispatch_lease_dsn) or the environment variable. It is the only option that can carry a secret.
        Prefer the environment variable over a literal in a playbook.
      - The table C(leases) (migration component C(lease) in C(schema_version)) is created if missing.
    type: str
    env:
      - name: FLEET_DISPATCH_LEASE_DSN
    vars:
      - name: fleet_dispatch_lease_dsn
  state:
    description:
      - V(acquired) takes (or renews) the lease. V(released) gives it back; a release by anyone but the holder is a
        no-op that says so in RV(_raw[].why).
    type: str
    choices: [acquired, released]
    default: acquired
notes:
  - Requires C(psycopg) (version 3) on the controller for O(backend=postgres). Without it the lease is degraded, not
    failed.
  - Each acquisition or release is one write transaction of the store - SQLite C(BEGIN IMMEDIATE), PostgreSQL a row
    lock - so two dispatchers racing for one name never both win. The SQLite file must be on a local filesystem.
"""

EXAMPLES = r"""
- name: Name this dispatcher run once (a lookup or a random filter re-evaluates on every use)
  ansible.builtin.set_fact:
    dispatch_owner: "{{ 'dispatch-' ~ inventory_hostname ~ '-' ~ (2147483647 | random) }}"

- name: Hold the lease of task-42 across the probe and the launch
  block:
    - name: Acquire once and pin the answer with set_fact
      ansible.builtin.set_fact:
        lease: "{{ lookup('fleet.dispatch.mutex', 'task-42', owner=dispatch_owner, ttl=600) }}"

    - name: Say so when the store failed open
      ansible.builtin.debug:
        msg: "{{ lease.why }}"
      when: lease.degraded

    - name: Probe and launch only while holding the lease
      ansible.builtin.include_tasks: probe_and_launch.yml
      when: lease.acquired

    - name: Another dispatcher holds it; refuse silently (nothing is written to the board)
      ansible.builtin.debug:
        msg: "task-42 is held by {{ lease.holder }} until {{ lease.expires_at }}"
      when: not lease.acquired
  always:
    - name: Release the lease whatever happened (a no-op when another owner holds it)
      ansible.builtin.set_fact:
        lease_released: "{{ lookup('fleet.dispatch.mutex', 'task-42', owner=dispatch_owner, state='released') }}"

- name: Several candidates at once, shared by dispatchers on several machines
  ansible.builtin.set_fact:
    leases: "{{ query('fleet.dispatch.mutex', 'task-42', 'task-43', owner=dispatch_owner,
                      backend='postgres', dsn=lookup('ansible.builtin.env', 'FLEET_LEDGER_DSN')) }}"

- name: Keep only the candidates whose lease this run holds
  ansible.builtin.set_fact:
    held: "{{ leases | selectattr('acquired') | map(attribute='name') | list }}"
"""

RETURN = r"""
_raw:
  description:
    - One lease per term, in the order of the terms.
  type: list
  elements: dict
  contains:
    name:
      description: The lease name (the term).
      type: str
      sample: task-42
    acquired:
      description:
        - True when this owner holds the lease now, or when the store failed and RV(_raw[].degraded) is true
          (fail open). Always false for O(state=released).
      type: bool
      sample: true
    owner:
      description: The owner token that asked.
      type: str
      sample: dispatch-controller-1234
    holder:
      description: Who holds the lease now - this owner when acquired, the other owner when refused, empty when free.
      type: str
      sample: dispatch-laptop-99
    token:
      description:
        - Fencing token of the lease this owner holds (or just released). Increases with every new acquisition of a
          name; a takeover always carries a larger token than the lease it replaced. The same owner renewing a live
          lease keeps its token. Null when refused or degraded.
      type: int
      sample: 17
    expires_at:
      description: Expiry of the holder's lease, ISO 8601 UTC. Null when the lease is free or degraded.
      type: str
      sample: '2026-01-01T12:10:00.000000Z'
    backend:
      description: The backend that answered - V(sqlite) or V(postgres).
      type: str
      sample: sqlite
    store:
      description: Where the lease lives - the SQLite file, or the DSN with its password replaced by C(********).
      type: str
      sample: /home/fleet/.local/state/fleet-dispatch/leases.sqlite3
    degraded:
      description: True when the store could not be used and the answer fails open; a warning says why.
      type: bool
      sample: false
    released:
      description: True when O(state=released) gave back a lease this owner held.
      type: bool
      sample: false
    why:
      description: One sentence for a human - what happened, and for a degraded lease the fix.
      type: str
      sample: acquired a new lease (token 17)
"""

import datetime as _dt

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import format_time, parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._store.lease import LeaseError, open_store, redact_dsn, scrub
from ansible_collections.fleet.dispatch.plugins.plugin_utils import lease_keeper

display = Display()


class LookupModule(LookupBase):
    """Thin: options -> ``open_store`` -> acquire/release per term; warn on degraded."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        owner = self.get_option('owner')
        ttl = self.get_option('ttl')
        backend = self.get_option('backend')
        path = self.get_option('path')
        dsn = self.get_option('dsn') or ''
        state = self.get_option('state')
        heartbeat = float(self.get_option('heartbeat') or 0)
        # with a keeper, the store holds the lease for one heartbeat at a time, never past the ttl
        beats = state == 'acquired' and 0 < heartbeat < float(ttl)

        if not owner or not str(owner).strip():
            raise AnsibleLookupError('fleet.dispatch.mutex needs owner= (a token naming this dispatcher run)')
        try:
            store = open_store(backend, path=path, dsn=dsn)
        except LeaseError as exc:
            raise AnsibleLookupError(scrub(str(exc), dsn))

        ret = []
        try:
            for term in terms:
                try:
                    if state == 'acquired':
                        lease = store.acquire(term, str(owner), heartbeat if beats else ttl)
                    else:
                        lease = store.release(term, str(owner))
                except LeaseError as exc:
                    raise AnsibleLookupError(scrub(str(exc), dsn))
                result = lease.as_dict()
                # Never echo the credential, whatever path a message took.
                result['why'] = scrub(result['why'], dsn)
                result['store'] = redact_dsn(dsn) if dsn and result['backend'] == 'postgres' else result['store']
                if result['degraded']:
                    display.warning('fleet.dispatch.mutex %s: %s' % (term, result['why']))
                ret.append(result)
            if beats:
                self._keep(store, ret, str(owner), heartbeat, float(ttl))
        finally:
            store.close()
        return ret

    @staticmethod
    def _keep(store, leases, owner, heartbeat, ttl):
        """Start one keeper for the leases this call holds; if it cannot start, hold them for the ttl."""
        held = [lease for lease in leases if lease['acquired'] and not lease['degraded'] and lease['token'] is not None]
        if not held:
            return
        until = format_time(parse_time(held[0]['expires_at']) + _dt.timedelta(seconds=ttl - heartbeat))
        where = {'backend': store.backend, 'path': store.path, 'dsn': store.dsn}
        if lease_keeper.start(where, dict((lease['name'], lease['token']) for lease in held), owner, heartbeat, until,
                              lease_keeper.holder()):
            return
        display.warning('fleet.dispatch.mutex: the lease keeper could not start; holding %d lease(s) for the whole ttl'
                        % len(held))
        for lease in held:
            lease.update(store.acquire(lease['name'], owner, ttl).as_dict(), why=lease['why'], store=lease['store'])
