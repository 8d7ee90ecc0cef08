#!/usr/bin/env bash
# `make demo`: the fleet's main job on a demo board -- runs launched, supervised and closed out.
# Which machine this is decides how (README "Two commands"), in this order:
#   user  a user other than root whose systemd user manager answers (`systemctl --user`): a desktop
#         or a login. This machine is the controller and the worker (localhost), the user its one
#         master, provisioned without root (roles/worker worker_rootless); the board is a SQLite
#         ledger under build/demo. It touches nothing outside build/demo and the user's own
#         manager and home, and removes on exit what it added there (units, files, a git setting).
#   bed   root with podman (a container, CI; this is the case where there is no user manager):
#         one test-bed host (tests/testbed/bed) is the worker and the PostgreSQL ledger, this
#         machine the controller; the sweep applies, the fake agent runs in real systemd units.
#   plan  otherwise: the sweep only plans, and the last line says why.
# FLEET_DEMO_CASE=user|bed|plan picks one. Cleanup runs on exit (trap), so it runs twice.
# Needs only python3 (>= 3.11; Debian: python3-venv) and the package registries: the venv is made on
# first use (the user case's is build/demo/venv, ansible-core only: demo/requirements.txt).
set -euo pipefail
REPO=$(cd "$(dirname "$0")" && pwd)
cd "$REPO"
DEMO=${FLEET_DEMO_DIR:-$REPO/build/demo}
BED=$REPO/tests/testbed/bed
# the controller's demo files (status, plan, page, metrics): build/demo/state/fleet-dispatch/<board>/
STATE=$DEMO/state/fleet-dispatch
# the working tree is the collection: expose it as ansible_collections/fleet/dispatch
mkdir -p "$DEMO/collections/ansible_collections/fleet"
ln -sfn "$REPO" "$DEMO/collections/ansible_collections/fleet/dispatch"
export ANSIBLE_COLLECTIONS_PATH="$DEMO/collections"
# and the collections the ansible package in the venv carries (community.postgresql for roles/ledger)
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=true
export ANSIBLE_CALLBACK_RESULT_FORMAT=yaml ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false
started=$SECONDS
say() { printf '\n=== %s (%d s)\n' "$*" $((SECONDS - started)); }

print_files() {
  echo "status JSON: $(ls "$STATE"/*/status.json)"
  page=$(ls "$STATE"/*/status.html)
  echo "status page: $page  (python3 -m http.server -d $(dirname "$page"))"
  echo "metrics:     $(ls "$STATE"/*/fleet-dispatch.prom)"
}

plan_demo() {   # $1: why nothing is launched
  local board="{\"dispatch_board\": {\"kind\": \"ledger\", \"path\": \"$DEMO/ledger.sqlite3\"}}"
  export XDG_STATE_HOME="$DEMO/state"
  ansible-playbook -i inventory.example playbooks/demo.yml -e "$board"
  ansible-playbook -i inventory.example playbooks/status.yml -e "$board"
  ansible-playbook -i inventory.example playbooks/sweep.yml -e "$board"
  print_files
  echo "plan JSON:   $(ls "$STATE"/*/plan.json)"
  echo "why not?:    ANSIBLE_COLLECTIONS_PATH=$DEMO/collections $VENV/bin/ansible-playbook -i inventory.example playbooks/explain.yml -e issue=4 -e '$board'"
  echo "mode:        plan only -- nothing was launched: $1 (tests/integration runs real units on test-bed hosts)"
}

# The fake agent's mode per demo item (tests/fakes/agent): the importer merges, the item whose blocker
# is closed claims without merging (a no-op), the reopened item dies on a 503 before its first turn
# (a retry), the item with two capacity deaths merges, and the left-open item hits the provider's
# limit with a stated reset (its master goes dark). Launched in item order, the limit comes last.
DEMO_MODES=1=merge,5=claim,10=die503,12=merge,13=ratelimit
DEMO_ITEMS=(1 5 10 12 13)

# The board and the runs, the same on every worker: the board (demo_board), the sweep (followed by demo/wait.py), #13's limit by
# hand, the board after, a last sweep that finds the master dark, a summary. $1: where the runs ran.
# Needs inv (the inventory arguments) and FLEET_DEMO_BOARD (the board spec, for demo/wait.py).
demo_board() {
  say "the demo board, on the ledger (#13 held back in Backlog: the rate limit comes last, by hand)"
  ansible-playbook "${inv[@]}" fleet.dispatch.demo
  ansible "${inv[@]}" localhost -m fleet.dispatch.board_item -a 'board={{ dispatch_board }} number=13 status=Backlog'
  ansible-playbook "${inv[@]}" fleet.dispatch.status
}

demo_runs() {
  local where=$1 since follower
  since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  say "the sweep, in apply mode (the fake agent's mode by item: $DEMO_MODES); the runs, as they go"
  PYTHONPATH="$DEMO/collections" python3 "$REPO/demo/wait.py" --since "$since" --items 1,5,10,12 &
  follower=$!
  ansible-playbook "${inv[@]}" fleet.dispatch.sweep -e dispatch_mode=apply
  wait "$follower"
  say "#13 by hand: the provider's limit, with a stated reset, darkens its master (D8)"
  ansible "${inv[@]}" localhost -m fleet.dispatch.board_item -a 'board={{ dispatch_board }} number=13 status=Ready'
  ansible-playbook "${inv[@]}" fleet.dispatch.dispatch -e issue=13 -e wait=true
  say "the board after the runs"
  ansible-playbook "${inv[@]}" fleet.dispatch.status
  say "a last sweep: the importer's dependant (#4) is unblocked and the no-op (#5) eligible again, but the only master is dark"
  ansible-playbook "${inv[@]}" fleet.dispatch.sweep -e dispatch_mode=apply
  say "what the demo did"
  PYTHONPATH="$DEMO/collections" python3 "$REPO/demo/wait.py" --summary "$(dirname "$(ls "$STATE"/*/plan.json)")"
  print_files
  echo "mode:        apply on $where: runs launched as systemd user units and closed out from the board ($((SECONDS - started)) s)"
}

bed_demo() {
  local host=${FLEET_DEMO_HOST:-fleet-demo} ip=${FLEET_DEMO_IP:-10.88.240.10} work=$DEMO/bed reset password forge_password
  export XDG_STATE_HOME="$DEMO/state"
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  forge_password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  say "the test bed: one host, $host ($ip), worker and ledger"
  "$BED" setup >&2
  "$BED" image >&2
  eval "$("$BED" env)"
  "$BED" down "$host" >/dev/null 2>&1 || true    # a host a killed demo left behind
  # shellcheck disable=SC2064  # expand now: the names are fixed for this run
  trap "echo 'demo: removing the test-bed host $host' >&2; '$BED' down '$host' >/dev/null 2>&1 || true" EXIT
  FLEET_TESTBED_OWNER='' "$BED" up "$host" "$ip" >&2
  rm -rf "$work" "$STATE"
  mkdir -p "$work/group_vars"
  "$BED" inventory "$work/inventory.ini" "$host"
  printf '\n[ledger:children]\ntestbed\n\n[workers:children]\ntestbed\n' >> "$work/inventory.ini"
  reset=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:00Z)
  (umask 077
   cat > "$work/group_vars/all.yml" <<EOG
# Written by demo.sh for one demo run (the host is removed at its end).
ledger_password: $password
ledger_forge_password: $forge_password
ledger_listen_addresses: ['*']
ledger_allowed_networks: [10.88.0.0/16]
dispatch_board:
  kind: ledger
  dsn: "postgresql://fleet:{{ ledger_password }}@$ip:5432/fleet"
worker_masters:
  - name: fleet1
worker_clones:
  - name: main
    repo: /srv/demo.git
worker_runner_agent_command: [/usr/bin/python3, /usr/local/lib/fake_agent.py, --mode, merge, --modes, "$DEMO_MODES"]
worker_runner_agent_env:
  FAKE_AGENT_RESET: "$reset"
# the fake agent's forge half merges with its own role, which may record merges and nothing else
# (never the runner's credentials.env)
worker_agent_credentials:
  FAKE_FORGE_DSN: "postgresql://fleet_forge:{{ ledger_forge_password }}@$ip:5432/fleet"
# a long first retry wait, so the status after the runs still shows the retry in its wait
worker_runner_backoff: [1800, 1800, 1800]
EOG
   cat > "$work/ledger.yml" <<'EOG'
- name: Provision the ledger
  hosts: ledger
  become: true
  roles:
    - fleet.dispatch.ledger
EOG
  )
  inv=(-i "$work/inventory.ini")
  say "the repository the runs work on (a bare git repository on the host)"
  "$BED" ssh "$host" 'sudo sh -s' <<'EOG'
set -eu
tmp=$(mktemp -d)
git -C "$tmp" init -q -b main && echo demo > "$tmp/README"
git -C "$tmp" add README && git -C "$tmp" -c user.name=demo -c user.email=demo@localhost commit -q -m init
git clone -q --bare "$tmp" /srv/demo.git && chmod -R a+rX /srv/demo.git && rm -rf "$tmp"
EOG
  say "the ledger: PostgreSQL on the host (roles/ledger)"
  ansible-playbook "${inv[@]}" "$work/ledger.yml"
  say "the worker: master fleet1, the runner, the PATH file, the notifier (fleet.dispatch.provision), and the fake agent"
  ansible "${inv[@]}" workers -m ansible.builtin.copy -a "src=$REPO/tests/fakes/agent/fake_agent.py dest=/usr/local/lib/fake_agent.py mode=0644"
  ansible-playbook "${inv[@]}" fleet.dispatch.provision
  # the board's DSN reaches the wait through its environment, not its command line
  export FLEET_DEMO_BOARD="{\"kind\": \"ledger\", \"dsn\": \"postgresql://fleet:$password@$ip:5432/fleet\"}"
  demo_board
  demo_runs "the test-bed host $host (master fleet1)"
}

# What the user case provisions in the home (roles/worker with worker_rootless): found there before
# the demo, a path means this user is already a fleet master, and the demo leaves it alone.
USER_OWN=(.config/fleet-dispatch .config/systemd/user/fleet-notify@.service .config/environment.d/50-fleet-path.conf
          .local/bin/fleet-runner .local/libexec/fleet-dispatch .local/lib/fleet-dispatch)
# ... and the directories it may create or add to: on exit, each entry the demo added is removed
# (the directories themselves only when the demo made them and they are empty again).
USER_DIRS=(.local/state/fleet-dispatch fleet/workspaces fleet/clones fleet .local/libexec .local/lib .local/bin
           .local/state .local .config/environment.d .config/systemd/user .config/systemd .config)

user_master_already() {   # prints the first provisioned path found in the home, if any
  local p
  for p in "${USER_OWN[@]}"; do
    if [ -e "$HOME/$p" ] || [ -L "$HOME/$p" ]; then echo "$HOME/$p"; return 0; fi
  done
  return 1
}

user_cleanup() {   # $1: the demo's work dir (its record of what the home had before)
  local work=$1 me unit p entry
  me=$(id -un)
  echo "demo: stopping the demo's units and removing what it added under $HOME" >&2
  for unit in "${DEMO_ITEMS[@]}"; do
    systemctl --user stop "task-$unit.service" >/dev/null 2>&1 || true
    systemctl --user reset-failed "task-$unit.service" "fleet-notify@task-$unit.service" >/dev/null 2>&1 || true
  done
  for p in "${USER_OWN[@]}"; do rm -rf "${HOME:?}/$p"; done
  systemctl --user daemon-reload >/dev/null 2>&1 || true
  # the entries the demo added to the directories that may hold the user's own files
  for p in "${USER_DIRS[@]}"; do
    [ -d "$HOME/$p" ] || continue
    if [ -f "$work/before/$p.entries" ]; then
      for entry in "$HOME/$p"/* "$HOME/$p"/.[!.]*; do
        [ -e "$entry" ] || [ -L "$entry" ] || continue
        grep -qxF "$(basename "$entry")" "$work/before/$p.entries" || rm -rf "$entry"
      done
    elif [ ! -e "$work/before/$p.existed" ]; then
      case $p in
        .local/state/fleet-dispatch|fleet/*) rm -rf "${HOME:?}/$p" ;;   # the fleet's own, made by the demo
        *) rmdir "$HOME/$p" 2>/dev/null || true ;;                     # shared: only if empty again
      esac
    fi
  done
  # the worker role trusts the demo's origin in ~/.gitconfig (safe.directory): that one value goes again
  if [ ! -e "$work/before/gitconfig.trusted" ]; then
    git config --global --fixed-value --unset-all safe.directory "$work/repo.git" 2>/dev/null || true
    if [ ! -e "$work/before/gitconfig.existed" ] && [ -f "$HOME/.gitconfig" ] && ! grep -q '[^[:space:]]' <(git config --global --list 2>/dev/null); then
      rm -f "$HOME/.gitconfig"
    fi
  fi
  [ -e "$work/before/ansible.existed" ] || rm -rf "${HOME:?}/.ansible"
  echo "demo: $me's other units and files were not touched" >&2
}

user_demo() {
  local me work=$DEMO/user reset p
  me=$(id -un)
  say "this machine is the worker (localhost) and $me its one master: $me's systemd user manager runs the runs, no root"
  if p=$(user_master_already); then
    echo "demo: $me is already provisioned as a fleet master here ($p exists): the user case would overwrite it." >&2
    echo "demo: run it as another user, or FLEET_DEMO_CASE=bed (root with podman) or FLEET_DEMO_CASE=plan" >&2
    exit 2
  fi
  rm -rf "$work" "$STATE"
  mkdir -p "$work/group_vars" "$work/before"
  # what the home had before: the cleanup removes only what the demo added
  for p in "${USER_DIRS[@]}"; do
    if [ -d "$HOME/$p" ]; then
      mkdir -p "$(dirname "$work/before/$p")"
      touch "$work/before/$p.existed"
      case $p in .local/state/fleet-dispatch|fleet/*|fleet|.local/bin|.local/lib|.local/libexec|.config/environment.d|.config/systemd/user)
        (cd "$HOME/$p" && ls -A) > "$work/before/$p.entries" ;;
      esac
    fi
  done
  [ -e "$HOME/.gitconfig" ] && touch "$work/before/gitconfig.existed"
  [ -e "$HOME/.ansible" ] && touch "$work/before/ansible.existed"
  # Ansible's own temporary files in build/demo, not ~/.ansible
  export ANSIBLE_LOCAL_TEMP="$work/ansible-tmp" ANSIBLE_REMOTE_TEMP="$work/ansible-tmp"
  git config --global --get-all safe.directory 2>/dev/null | grep -qxF "$work/repo.git" && touch "$work/before/gitconfig.trusted"
  # shellcheck disable=SC2064  # expand now: the work dir is fixed for this run
  trap "user_cleanup '$work'" EXIT
  reset=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:00Z)
  cat > "$work/inventory.ini" <<EOG
# Written by demo.sh: this machine is the controller and the worker, the current user its master.
# ansible_become=false: nothing switches user here (the role's and the dispatch's become_user is $me).
[workers]
localhost ansible_connection=local ansible_python_interpreter="{{ ansible_playbook_python }}" ansible_become=false
EOG
  cat > "$work/group_vars/all.yml" <<EOG
# Written by demo.sh for one demo run (removed with build/demo/user at the next one).
dispatch_board:
  kind: ledger
  path: "$work/ledger.sqlite3"
# the controller's status, plan, page and metrics under build/demo; the master's own state stays
# where its runner and the worker-side modules both look (~/.local/state/fleet-dispatch)
dispatch_state_dir: "$STATE"
# the per-worker calls run as the master itself (no switch of identity: _host/identity.py)
dispatch_worker_become: false
worker_rootless: true
worker_masters:
  - name: "$me"
worker_clones:
  - name: main
    repo: "$work/repo.git"
worker_runner_agent_command: [/usr/bin/python3, "$REPO/tests/fakes/agent/fake_agent.py", --mode, merge, --modes, "$DEMO_MODES"]
worker_runner_agent_env:
  FAKE_AGENT_RESET: "$reset"
  # the fake forge's own way to the board (a SQLite path, no secret): not the runner's credentials
  FAKE_AGENT_BOARD: '{"kind": "ledger", "path": "$work/ledger.sqlite3"}'
# a long first retry wait, so the status after the runs still shows the retry in its wait
worker_runner_backoff: [1800, 1800, 1800]
EOG
  inv=(-i "$work/inventory.ini")
  say "the repository the runs work on (a bare git repository in build/demo)"
  (tmp=$(mktemp -d) && git -C "$tmp" init -q -b main && echo demo > "$tmp/README" &&
   git -C "$tmp" add README && git -C "$tmp" -c user.name=demo -c user.email=demo@localhost commit -q -m init &&
   git clone -q --bare "$tmp" "$work/repo.git" && rm -rf "$tmp")
  # first the board: the provision checks that the master's runner opens it (fleet-runner check-board)
  demo_board
  say "the worker: master $me, the runner, the PATH file, the notifier (fleet.dispatch.provision, worker_rootless)"
  ansible-playbook "${inv[@]}" fleet.dispatch.provision
  export FLEET_DEMO_BOARD="{\"kind\": \"ledger\", \"path\": \"$work/ledger.sqlite3\"}"
  demo_runs "this machine (master $me, its own user manager)"
}

demo_case=${FLEET_DEMO_CASE:-}
why=''
if [ -z "$demo_case" ]; then
  if [ "$(id -u)" != 0 ] && systemctl --user show-environment >/dev/null 2>&1; then
    if p=$(user_master_already); then
      why="$(id -un) has a systemd user manager here but is already a fleet master ($p): the demo leaves it alone"
    else
      demo_case=user
    fi
  fi
  if [ -z "$demo_case" ] && [ "$(id -u)" = 0 ] && command -v podman >/dev/null 2>&1; then
    demo_case=bed
  fi
  if [ -z "$demo_case" ]; then
    demo_case=plan
    why=${why:-"there is no systemd user manager for $(id -un) here (a container or CI?), or it is root's, and no root with podman for a test-bed host"}
  fi
fi
# The user case needs ansible-core only (its own venv, build/demo/venv); the others the project's (.venv).
if [ "$demo_case" = user ] && [ -z "${FLEET_VENV:-}" ]; then
  VENV=$DEMO/venv
  tests/bootstrap-venv "$VENV" "$REPO/demo/requirements.txt" >&2
else
  VENV=${FLEET_VENV:-$REPO/.venv}
  tests/bootstrap-venv "$VENV" >&2
fi
export PATH="$VENV/bin:$PATH"
case $demo_case in
  user) user_demo ;;
  bed) bed_demo ;;
  plan) plan_demo "${why:-FLEET_DEMO_CASE=plan asked for it}" ;;
  *) echo "demo: FLEET_DEMO_CASE=$demo_case: use user, bed or plan" >&2; exit 2 ;;
esac
