#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: board_item
short_description: Create or update an item on the board (ledger), or set its status (GitHub)
version_added: 0.1.0
description:
  - On the ledger board, creates or updates an item - title, body, status, dependency edges, open/closed/reopened - and records
    artifacts as a forge would - a merged change and the items it closes; an open pull request with its head, its review
    notes and its check results, which the next run of the item continues and reads in its brief.
  - On a GitHub board, sets the project status field and the issue state; items themselves are created on GitHub.
  - A reopen is recorded as an event with its time, and it outranks every older marker.
  - Dependencies are edges, evaluated at selection - never a hold written in prose.
author:
  - fleet.dispatch contributors (@fleet-dispatch)
extends_documentation_fragment:
  - fleet.dispatch.board
  - fleet.dispatch.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports what would change, and the diff, without writing.
  diff_mode:
    support: full
options:
  number:
    description:
      - The item number. An item that does not exist yet is created with this number (ledger).
      - Omit it to create a new item with the next free number (not idempotent).
      - An integer or ASCII digits from 1 to 2147483647 (the SQL C(INTEGER) and GitHub C(Int) range); anything else is refused
        before the board is opened (C(٥) is not item 5).
    type: raw
  title:
    description: The item title. Required to create an item.
    type: str
  body:
    description: The item body.
    type: str
  status:
    description: The board status field value, for example C(Ready) or C(Backlog).
    type: str
  state:
    description:
      - V(open) or V(closed) sets the item state.
      - V(reopened) opens a closed item and records a reopen event, which outranks older markers. On an open item it changes nothing.
    type: str
    choices: [open, closed, reopened]
  blocked_by:
    description:
      - The complete list of item numbers that block this one. Edges not listed are removed. Omit to leave edges alone.
      - This replaces every edge from one read, so two operators editing edges at once can lose an edit. To add or remove
        one edge, use O(add_blocked_by) or O(remove_blocked_by), which write each edge on its own.
    type: list
    elements: int
  agent:
    description:
      - The agent profile the item must run with (C(claude), C(codex), C(gemini), C(qwen), C(custom)); the dispatcher places it only on
        a master whose worker was provisioned with it, and holds it (C(unroutable)) when none is. An empty string clears it.
      - Ledger board only (on GitHub it is the project's C(Agent) field, docs/usage.md).
    type: str
    version_added: 0.1.0
  model:
    description:
      - The model the item's agent is given (for example C(claude-sonnet-4-5)); an empty string clears it. Ledger board only.
    type: str
    version_added: 0.1.0
  effort:
    description:
      - The effort the item's agent is given (for example C(high)); an empty string clears it. Ledger board only.
    type: str
    version_added: 0.1.0
  priority:
    description:
      - The item's priority, C(P0) (first) to C(P9), a word (C(urgent), C(high), C(medium), C(low)) or a number, lower first.
        Candidates go by priority, then age. An empty string clears it. Ledger board only.
    type: str
    version_added: 0.1.0
  budget:
    description:
      - The item's own budget across its attempts - terms such as C(50000), C(50k tokens), C($2.50), or C(none) - each limit
        it names replaces the dispatcher's item budget (C(dispatch_item_budget_tokens), C(dispatch_item_budget_usd)) for this
        item, which is how a human raises the budget of an item held C(budget_spent); C(none) lifts both. An empty string
        clears it. A value that is not a budget fails, and nothing is written. Ledger board only (on GitHub it is the
        project's C(Budget) field, docs/usage.md).
    type: str
    version_added: 0.1.0
  add_blocked_by:
    description:
      - Add these dependency edges (each number blocks this item), one atomic write per edge; other edges are left alone.
      - Adding an edge that exists changes nothing. Ledger board only.
    type: list
    elements: int
  remove_blocked_by:
    description:
      - Remove these dependency edges, one atomic write per edge; other edges are left alone. Removing a missing edge changes
        nothing. Ledger board only.
    type: list
    elements: int
  comment:
    description:
      - Post this plain human comment on the item (for example what an operator did and why). Every call posts it again.
      - It is never a marker - text that would parse as one (it starts with a marker glyph) is refused, because only the
        fleet's identities write markers.
    type: str
  comment_author:
    description: Who the comment is from, as the ledger records it (a GitHub board posts as the token's login).
    type: str
    default: operator
  artifact:
    description:
      - Record a change on the ledger board. A merged artifact that closes items closes them, as a forge closes an issue when the
        pull request that references it merges.
    type: dict
    suboptions:
      ref:
        description: A unique reference, for example C(PR-17).
        type: str
        required: true
      title:
        description: The change title. Omitted, a recorded change keeps its own (a new one has none).
        type: str
      url:
        description: Where a human can see the change. Omitted, a recorded change keeps its own.
        type: str
      created_at:
        description: When the change was created (ISO-8601). Defaults to now; a recorded change keeps its first.
        type: str
      merged:
        description: Whether the change merged. Omitted, a recorded change keeps its own (a new one is not merged).
        type: bool
      merged_at:
        description: When it merged (ISO-8601). Defaults to now when O(artifact.merged=true) (a recorded merge keeps its time).
        type: str
      closes:
        description: The item numbers the change closes. Defaults to O(number).
        type: list
        elements: int
      state:
        description:
          - The pull request's state as the forge shows it. An open, unmerged one that closes the item is the pull request
            the item's next run continues (docs/pull-requests.md). Omitted, the recorded state is kept.
        type: str
        choices: [OPEN, CLOSED, MERGED]
        version_added: 0.1.0
      head_ref:
        description: The branch the pull request merges from (the next run's worktree is detached at its head). Omitted, kept.
        type: str
        version_added: 0.1.0
      head_sha:
        description: The commit at the tip of that branch; a push records the new one. Omitted, kept.
        type: str
        version_added: 0.1.0
      reviews:
        description:
          - Review notes on the pull request, as the forge records them - a review (O(artifact.reviews[].state)
            C(CHANGES_REQUESTED), C(APPROVED), C(COMMENTED), C(DISMISSED)) or a comment of a review thread. The next run's
            brief carries the unresolved threads and the changes requested by trusted authors only.
          - A note the change already holds (the same kind, author, state, body, path and line) is not recorded again, so the
            task is idempotent; its O(artifact.reviews[].resolved) is set when given.
        type: list
        elements: dict
        version_added: 0.1.0
        suboptions:
          body:
            description: The note's text.
            type: str
            required: true
          kind:
            description: V(review) for a submitted review, V(thread) for a comment of a review thread.
            type: str
            choices: [review, thread]
            default: review
          author:
            description: Who wrote it (the forge's login).
            type: str
            default: ''
          association:
            description:
              - The author's standing as the recorder states it, in GitHub's words (C(OWNER), C(MEMBER), C(COLLABORATOR),
                C(CONTRIBUTOR), C(NONE) ...). Only C(OWNER), C(MEMBER), C(COLLABORATOR) or a fleet identity is briefed;
                empty is not trusted.
            type: str
            default: ''
          state:
            description: A review's state (C(CHANGES_REQUESTED), C(APPROVED), C(COMMENTED), C(DISMISSED)).
            type: str
            default: ''
          path:
            description: The file a thread comment is on.
            type: str
            default: ''
          line:
            description: The line a thread comment is on.
            type: int
          resolved:
            description: Whether the thread is resolved (a resolved one is no longer briefed). Omitted, as recorded.
            type: bool
          created_at:
            description: When it was written (ISO-8601). Defaults to now.
            type: str
      checks:
        description:
          - Check results on the pull request's head, one per name and head commit (a later result of the same check on the
            same head replaces the earlier). The next run's brief carries the failing required checks of the current head.
        type: list
        elements: dict
        version_added: 0.1.0
        suboptions:
          name:
            description: The check's name.
            type: str
            required: true
          conclusion:
            description: The result in GitHub's words (C(SUCCESS), C(FAILURE), C(TIMED_OUT), C(CANCELLED) ...); empty while it runs.
            type: str
            default: ''
          head_sha:
            description: The commit it ran on. Defaults to O(artifact.head_sha), else the head the ledger records.
            type: str
          required:
            description: Whether the branch protection requires it.
            type: bool
            default: true
          summary:
            description: What it said, first line first.
            type: str
            default: ''
          url:
            description: Where a human can see it.
            type: str
            default: ''
seealso:
  - module: fleet.dispatch.board_info
  - module: fleet.dispatch.board_marker
'''

EXAMPLES = r'''
- name: An item that waits on two others
  fleet.dispatch.board_item:
    board:
      path: /var/lib/fleet-dispatch/ledger.sqlite3
    number: 12
    title: Migrate the importer
    status: Ready
    blocked_by: [10, 11]

- name: Item 12 now also waits on item 13 (the other edges are left as they are)
  fleet.dispatch.board_item:
    board: "{{ fleet_board }}"
    number: 12
    add_blocked_by: [13]

- name: Say on the item why it was held
  fleet.dispatch.board_item:
    board: "{{ fleet_board }}"
    number: 12
    comment: Held until the schema migration lands; ask in the ops channel.
    comment_author: alice

- name: Reopen an item that was closed too early
  fleet.dispatch.board_item:
    board: "{{ fleet_board }}"
    number: 9
    state: reopened

- name: Record the merged change that finished item 12
  fleet.dispatch.board_item:
    board: "{{ fleet_board }}"
    number: 12
    artifact:
      ref: PR-31
      merged: true

- name: Record a review asking for changes and a failing check on the open pull request of item 14 (as a forge would)
  fleet.dispatch.board_item:
    board: "{{ fleet_board }}"
    number: 14
    artifact:
      ref: PR-40
      state: OPEN
      head_ref: fleet/14
      head_sha: 3f2a9c1e
      reviews:
        - body: Call it load_config, and test the empty file.
          author: alice
          association: MEMBER
          state: CHANGES_REQUESTED
      checks:
        - name: unit
          conclusion: FAILURE
          summary: test_load_config failed
'''

RETURN = r'''
number:
  description: The item number (the new one when the item was created).
  returned: always
  type: int
created:
  description: Whether the item was created by this call.
  returned: always
  type: bool
before:
  description: The item's fields before the call (empty when it did not exist).
  returned: always
  type: dict
after:
  description: The item's fields after the call (or as they would be, in check mode).
  returned: always
  type: dict
comment:
  description: The comment posted (C(id), C(created_at)); null when none was asked for or in check mode.
  returned: always
  type: dict
recorded:
  description:
    - What O(artifact) wrote (or would write, in check mode) beyond the change itself - C(reviews), the review notes recorded
      (C(body), C(author), C(kind), C(state)) or whose resolution changed (C(resolved)); C(checks), the check results recorded
      or changed (C(name), C(head_sha), C(conclusion)); C(head), the head or state it changed (C(state), C(head_ref), C(head_sha)).
  returned: always
  type: dict
  version_added: 0.1.0
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.naming import item_number

from ansible_collections.fleet.dispatch.plugins.module_utils._argspec import board_argspec, board_spec, resolve_now
from ansible_collections.fleet.dispatch.plugins.module_utils._board.protocol import BoardError, ItemNotFound
from ansible_collections.fleet.dispatch.plugins.module_utils._board.factory import open_board
from ansible_collections.fleet.dispatch.plugins.module_utils._board.ledger_pulls import note_key
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.markers import kind_of
from ansible_collections.fleet.dispatch.plugins.module_utils._core.board.model import format_time, parse_time
from ansible_collections.fleet.dispatch.plugins.module_utils._core.dispatch.item_budget import parse_override

FIELDS = ('title', 'body', 'status', 'state', 'blocked_by')
ROUTE = ('agent', 'model', 'effort', 'priority', 'budget')
PULL = ('state', 'head_ref', 'head_sha')


def _summary(item):
    if item is None:
        return {}
    return dict(title=item.title, body=item.body, status=item.status, state=item.state,
                blocked_by=sorted(b.number for b in item.blockers),
                artifacts=sorted(a.ref for a in item.artifacts),
                **dict((k, '' if getattr(item, k, None) is None else str(getattr(item, k))) for k in ROUTE))


def _desired(before, params):
    after = dict(before) if before else dict(title=None, body='', status='', state='open', blocked_by=[], artifacts=[],
                                             **dict((k, '') for k in ROUTE))
    for key in ROUTE:
        if params[key] is not None:
            after[key] = params[key].strip()
    for key in ('title', 'body', 'status'):
        if params[key] is not None:
            after[key] = params[key]
    if params['state'] is not None:
        after['state'] = 'open' if params['state'] == 'reopened' else params['state']
    if params['blocked_by'] is not None:
        after['blocked_by'] = sorted(set(params['blocked_by']))
    if params['add_blocked_by'] or params['remove_blocked_by']:
        edges = set(after.get('blocked_by') or []) | set(params['add_blocked_by'] or [])
        after['blocked_by'] = sorted(edges - set(params['remove_blocked_by'] or []))
    if params['artifact']:
        refs = set(after.get('artifacts') or [])
        refs.add(params['artifact']['ref'])
        after['artifacts'] = sorted(refs)
    return after


def _artifact_args(artifact, number, now, recorded=None):
    """``add_artifact``'s arguments: what the task names, and for what it omits the recorded change's own."""
    merged = artifact['merged'] if artifact['merged'] is not None else bool(recorded is not None and recorded.merged)
    if artifact['merged_at']:
        merged_at = parse_time(artifact['merged_at'])
    elif merged:
        merged_at = recorded.merged_at if recorded is not None and recorded.merged and recorded.merged_at else now
    else:
        merged_at = None
    keep = dict((k, artifact[k] if artifact[k] is not None else (getattr(recorded, k, '') or '' if recorded is not None else ''))
                for k in ('title', 'url'))
    return dict(
        ref=artifact['ref'], title=keep['title'], url=keep['url'],
        created_at=parse_time(artifact['created_at']) if artifact['created_at'] else now,
        merged=merged, merged_at=merged_at,
        closes=list(artifact['closes']) if artifact['closes'] is not None else ([number] if number else []),
        **dict((k, artifact[k]) for k in PULL if artifact[k] is not None))


def _recorded_artifact(item, ref):
    for art in (item.artifacts if item is not None else ()) or ():
        if art.ref == ref:
            return art
    return None


def _pull_writes(artifact, args, recorded):
    """What recording ``artifact`` writes beyond what the board holds (``recorded``, the item's artifact of that ref, or
    None): the change itself, its head and state, each review note not held yet (or whose resolution differs, by the
    ledger's ``note_key``) and each check result that differs. Empty lists and dicts: nothing to write."""
    out = dict(artifact={}, head={}, reviews=[], checks=[])
    if recorded is None:
        out['artifact'] = dict(ref=args['ref'], created=True)
    else:
        for key in ('title', 'url', 'merged'):
            if args[key] != getattr(recorded, key):
                out['artifact'][key] = args[key]
        if sorted(set(args['closes']) - set(recorded.closes or ())):
            out['artifact']['closes'] = sorted(set(args['closes']) - set(recorded.closes or ()))
    for key in PULL:
        if key in args and args[key] != (getattr(recorded, key, '') or ''):
            out['head'][key] = args[key]
    notes = dict()
    for note in (getattr(recorded, 'reviews', None) or ()):
        notes.setdefault(note_key(note.kind, note.body, note.author, note.state, note.path, note.line), note)
    for review in artifact['reviews'] or ():
        held = notes.get(note_key(review['kind'], review['body'], review['author'], review['state'], review['path'],
                                  review['line']))
        flip = review['resolved'] is not None and (held is None and review['resolved'] or held is not None
                                                   and bool(held.resolved) != review['resolved'])
        if held is None or flip:
            out['reviews'].append(dict(body=review['body'], author=review['author'], kind=review['kind'],
                                       state=review['state'].upper(), created=held is None,
                                       resolved=bool(review['resolved']) if review['resolved'] is not None else False))
    held_checks = dict(((c.name, c.head_sha or ''), c) for c in (getattr(recorded, 'checks', None) or ()))
    head = args.get('head_sha') if args.get('head_sha') is not None else (getattr(recorded, 'head_sha', '') or '')
    for check in artifact['checks'] or ():
        sha = check['head_sha'] if check['head_sha'] is not None else head
        want = dict(name=check['name'], head_sha=sha, conclusion=check['conclusion'].upper(), required=check['required'],
                    summary=check['summary'], url=check['url'])
        held = held_checks.get((check['name'], sha))
        if held is None or (held.conclusion, bool(held.required), held.summary, held.url) != (
                want['conclusion'], want['required'], want['summary'], want['url']):
            out['checks'].append(want)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            board=board_argspec(),
            number=dict(type='raw'),
            title=dict(type='str'),
            body=dict(type='str'),
            status=dict(type='str'),
            state=dict(type='str', choices=['open', 'closed', 'reopened']),
            blocked_by=dict(type='list', elements='int'),
            add_blocked_by=dict(type='list', elements='int'),
            remove_blocked_by=dict(type='list', elements='int'),
            agent=dict(type='str'),
            model=dict(type='str'),
            effort=dict(type='str'),
            priority=dict(type='str'),
            budget=dict(type='str'),
            comment=dict(type='str'),
            comment_author=dict(type='str', default='operator'),
            artifact=dict(type='dict', options=dict(
                ref=dict(type='str', required=True),
                title=dict(type='str'),
                url=dict(type='str'),
                created_at=dict(type='str'),
                merged=dict(type='bool'),
                merged_at=dict(type='str'),
                closes=dict(type='list', elements='int'),
                state=dict(type='str', choices=['OPEN', 'CLOSED', 'MERGED']),
                head_ref=dict(type='str'),
                head_sha=dict(type='str'),
                reviews=dict(type='list', elements='dict', options=dict(
                    body=dict(type='str', required=True),
                    kind=dict(type='str', choices=['review', 'thread'], default='review'),
                    author=dict(type='str', default=''),
                    association=dict(type='str', default=''),
                    state=dict(type='str', default=''),
                    path=dict(type='str', default=''),
                    line=dict(type='int'),
                    resolved=dict(type='bool'),
                    created_at=dict(type='str'),
                )),
                checks=dict(type='list', elements='dict', options=dict(
                    name=dict(type='str', required=True),
                    conclusion=dict(type='str', default=''),
                    head_sha=dict(type='str'),
                    required=dict(type='bool', default=True),
                    summary=dict(type='str', default=''),
                    url=dict(type='str', default=''),
                )),
            )),
        ),
        mutually_exclusive=[('blocked_by', 'add_blocked_by'), ('blocked_by', 'remove_blocked_by')],
        supports_check_mode=True,
    )
    p = module.params
    if p['number'] is not None:
        try:
            p['number'] = item_number(p['number'])
        except ValueError as exc:
            module.fail_json(msg='number: %s' % exc, changed=False)
    if p['comment'] is not None and (not p['comment'].strip() or kind_of(p['comment']) is not None):
        module.fail_json(msg='comment: %s; write plain text (only the fleet posts markers)' % (
            'it is empty' if not p['comment'].strip() else 'it starts like a %s marker' % kind_of(p['comment'])))
    if p['budget'] is not None:
        try:
            parse_override(p['budget'])
        except ValueError as exc:
            module.fail_json(msg='budget: %s' % exc, changed=False)
    both = set(p['add_blocked_by'] or []) & set(p['remove_blocked_by'] or [])
    if both:
        module.fail_json(msg='add_blocked_by and remove_blocked_by both name %s: name each edge once'
                             % ', '.join('#%s' % n for n in sorted(both)))
    try:
        now = resolve_now(None)
        for review in (p['artifact'] or {}).get('reviews') or ():
            review['at'] = parse_time(review['created_at']) if review['created_at'] else None
        if p['artifact']:
            _artifact_args(p['artifact'], p['number'], now)   # its times, before the board is opened
    except ValueError as exc:
        module.fail_json(msg='artifact time: %s; give ISO-8601 such as 2026-11-30T01:00:00Z' % exc)
    result = dict(changed=False, created=False, number=p['number'], before={}, after={}, comment=None,
                  recorded=dict(head={}, reviews=[], checks=[]))
    try:
        spec = board_spec(p['board'])
        spec['create'] = True  # the writer that makes a new ledger; readers treat a missing file as unreadable
        with open_board(spec) as board:
            current = None
            if p['number'] is not None:
                try:
                    current = board.get(p['number'])
                except ItemNotFound:
                    current = None
            if current is None and not p['title']:
                module.fail_json(msg='item %s does not exist: give a title to create it' % (p['number'],), **result)
            before = _summary(current)
            after = _desired(before, p)
            reopen = p['state'] == 'reopened' and current is not None and current.state == 'closed'
            artifact, writes = None, None
            if p['artifact']:
                recorded = _recorded_artifact(current, p['artifact']['ref'])
                artifact = _artifact_args(p['artifact'], p['number'], now, recorded)
                writes = _pull_writes(p['artifact'], artifact, recorded)
                result['recorded'] = dict((k, writes[k]) for k in ('head', 'reviews', 'checks'))
            result.update(before=before, after=after, created=current is None,
                          changed=(before != after) or reopen or p['comment'] is not None
                          or bool(writes and any(writes.values())))
            result['diff'] = dict(before=before, after=after)
            if module.check_mode or not result['changed']:
                module.exit_json(**result)
            number, posted = _apply(module, board, current, p, artifact, writes)
            result['number'] = number
            result['comment'] = posted
            result['after'] = _summary(board.get(number))
    except BoardError as exc:
        module.fail_json(msg=str(exc), **result)
    module.exit_json(**result)


def _apply(module, board, current, p, artifact, writes):
    """Write the change through the board's own methods; the ledger can do all of it."""
    upsert = getattr(board, 'upsert_item', None)
    wants_ledger = (current is None or any(p[k] is not None for k in ('title', 'body', 'blocked_by') + ROUTE) or artifact
                    or p['add_blocked_by'] or p['remove_blocked_by'])
    if wants_ledger and upsert is None:
        module.fail_json(msg='a %s board cannot create items, edit titles, bodies, routes, priorities or dependency edges, or '
                             'record artifacts through this module: do that on the board itself (routes and priority are '
                             'project fields there, docs/usage.md); this module can set status and state there'
                             % board.kind)
    number = p['number']
    if upsert is not None:
        res = upsert(number=number, title=p['title'], body=p['body'], status=p['status'],
                     state=None, blocked_by=p['blocked_by'], **dict((k, p[k]) for k in ROUTE if p[k] is not None))
        number = res['number'] if isinstance(res, dict) else res
    elif p['status'] is not None:
        board.set_status(number, p['status'])
    if p['state'] is not None:
        board.set_state(number, 'open' if p['state'] == 'reopened' else p['state'])
    if artifact is not None:
        if not artifact['closes']:
            artifact['closes'] = [number]
        if writes['artifact'] or writes['head']:
            board.add_artifact(**artifact)
        for review in p['artifact']['reviews'] or ():
            board.record_review(artifact['ref'], review['body'], kind=review['kind'], author=review['author'],
                                association=review['association'], state=review['state'], path=review['path'],
                                line=review['line'], resolved=review['resolved'], at=review['at'])
        for check in writes['checks']:
            board.set_check(artifact['ref'], check['name'], check['conclusion'], head_sha=check['head_sha'],
                            required=check['required'], summary=check['summary'], url=check['url'])
    # one edge per write, each its own transaction: a concurrent edit of another edge is never lost
    for blocker in sorted(set(p['add_blocked_by'] or [])):
        board.add_blocker(number, blocker)
    for blocker in sorted(set(p['remove_blocked_by'] or [])):
        board.remove_blocker(number, blocker)
    posted = None
    if p['comment'] is not None:
        got = board.comment(number, p['comment'], author=p['comment_author'])
        posted = dict(id=got.id, created_at=format_time(got.created_at))
    return number, posted


if __name__ == '__main__':
    main()
