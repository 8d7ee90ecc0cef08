# -*- coding: utf-8 -*-
# Copyright: fleet.dispatch contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The ``board`` option shared by the board modules (spec in module_utils/_argspec.py)."""

    DOCUMENTATION = r'''
options:
  board:
    description:
      - Which board is the queue and how to reach it.
      - C(kind=ledger) is the embedded ledger board, an SQLite file by default or PostgreSQL with O(board.dsn).
      - C(kind=github) is a GitHub Projects v2 board.
    type: dict
    required: true
    suboptions:
      kind:
        description: The board kind.
        type: str
        default: ledger
        choices: [ledger, github]
      path:
        description:
          - The SQLite ledger file. Only M(fleet.dispatch.board_item) creates a missing one; to every reader a missing file is an
            unreadable queue, never an empty one.
          - Defaults to C($XDG_DATA_HOME/fleet-dispatch/ledger.sqlite3) (C(~/.local/share/...)) when neither O(board.path) nor O(board.dsn) is set.
        type: path
      dsn:
        description:
          - A PostgreSQL connection string for the ledger on a server shared by several dispatchers.
          - C(no_log) (the argument spec marks it so) - never logged; a password in it is masked in every message, warning and
            exception text, in every spelling (URL with spaces, C(@) or C(%), quoted key=value, C(sslpassword)).
        type: str
      owner:
        description: The GitHub organization or user that owns the project. Required with C(kind=github).
        type: str
      owner_type:
        description: Whether O(board.owner) is an organization or a user; C(auto) asks GitHub.
        type: str
        default: auto
        choices: [auto, organization, user]
      project:
        description: The GitHub project number. Required with C(kind=github).
        type: int
      status_field:
        description: The name of the project's single-select status field.
        type: str
        default: Status
      ready:
        description: The status value that makes an item ready to run.
        type: str
        default: Ready
      agent_field:
        description:
          - C(kind=github) only. The project field (single select or text) naming the agent profile an item must run with
            (C(claude), C(codex), C(gemini), C(qwen), C(custom)). A project without it routes nothing. The ledger has columns instead.
        type: str
        default: Agent
      model_field:
        description: C(kind=github) only. The project field (single select or text) naming the model the item's agent is given.
        type: str
        default: Model
      effort_field:
        description: C(kind=github) only. The project field (single select or text) naming the effort the item's agent is given.
        type: str
        default: Effort
      priority_field:
        description:
          - C(kind=github) only. The project field giving the item's priority - a single select (C(P0) first to C(P9), or
            C(Urgent), C(High), C(Medium), C(Low)), a number (lower first) or a text of either. Candidates go by it, then age.
        type: str
        default: Priority
      budget_field:
        description:
          - C(kind=github) only. The project field giving the item's own budget across its attempts - a number (tokens) or a text
            such as C(50k tokens), C($2.50), C(50k, $2) or C(none). Each limit it names replaces the dispatcher's item budget for
            that item; a value that is not a budget is not read (the dispatcher's holds). The ledger has a column instead.
        type: str
        default: Budget
      token:
        description:
          - The GitHub token. When unset, the first of the environment variables E(FLEET_GITHUB_TOKEN), E(GITHUB_TOKEN) and
            E(GH_TOKEN) that is set is used (the environment is never logged either).
          - C(no_log) (the argument spec marks it so) - never logged, never put on a command line, never in the agent's environment.
        type: str
      api_url:
        description: The GitHub API root (a GitHub Enterprise server, or a fake GitHub in tests).
        type: str
        default: https://api.github.com
      repo:
        description:
          - For C(kind=github), the repository (C(owner/name)) of bare item numbers.
          - Without it a write looks the number up on the whole project (about 1 point per 100 items), and a number that two
            repositories share is refused.
        type: str
      base_branch:
        description:
          - For C(kind=github), the branch whose merges complete an item.
          - When unset, each repository's default branch, which is the branch GitHub itself closes issues from; a pull request
            merged into any other branch is not credited.
        type: str
      mentions:
        description:
          - For C(kind=github), where the mentions handed to a run come from.
          - V(comments) reads them from the item's own comments (works with every token kind, including GitHub App installation
            tokens); a mention counts when it names the token's login or a O(board.mention_handles) entry, comes from a trusted
            author (the repository's owner or a collaborator, a member with O(board.trust_members), or a
            O(board.marker_authors) login), and no run has started since.
          - V(notifications) also requires an unread notification thread; it needs a classic personal access token.
        type: str
        choices: [comments, notifications]
        default: comments
      mention_handles:
        description:
          - For C(kind=github), more handles that address the fleet (for example V(@acme/fleet-team)), besides the token's login.
        type: list
        elements: str
      marker_authors:
        description:
          - The fleet's identities besides its own, whose glyph-led comments are markers.
          - For C(kind=github), logins besides the token's own (C(viewer { login })); an app is named by its login with or without
            C([bot]). Their mentions are trusted too, besides those of the repository's owner and collaborators (and members with
            O(board.trust_members)).
          - For C(kind=ledger), recorded authors besides C(fleet.dispatch), which every comment written without an author records.
          - A glyph-led comment by anyone else is a human comment (shown by C(status)), never a marker; a human changes an item's
            eligibility by reopening it or with M(fleet.dispatch.board_marker).
        type: list
        elements: str
      trust_members:
        description:
          - Whether an author whose GitHub C(authorAssociation) is C(MEMBER) - a member of the organization that owns the
            repository - has standing, as the repository's owner and collaborators do. It decides whose mentions and review
            notes reach the brief, and whether the item's own title and text are briefed as trusted.
          - C(false) (the default) - membership of an organization is not access to this repository (anyone the organization
            hired is a member), so a member's text is briefed as untrusted and their mentions and reviews are skipped.
            Set C(true) for an organization whose members all may steer the fleet.
          - On the ledger board it applies to the recorded standing of review notes.
        type: bool
        default: false
      read_memory:
        description:
          - For C(kind=github), a file where the board remembers, between cycles, which Ready items it read and the page row
            (C(updatedAt) and dependency counts) it read them under. A cycle then skips the details of an item whose page row has
            not moved since; that item is reported with reason C(deferred) and never dispatched until a cycle reads it.
          - It holds no status, marker or decision, only what to skip; a missing or unreadable file means a full read.
            A read that names items (O(fleet.dispatch.board_info#module:numbers), a hand dispatch) never uses it.
          - Unset (the default), every cycle reads every Ready item in full.
        type: path
      full_read_every:
        description:
          - For C(kind=github) with O(board.read_memory), every item is read in full at least once in this many cycles, changed
            or not (the longest a deferred item waits).
        type: int
        default: 10
'''
