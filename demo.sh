#!/usr/bin/env bash
# `make demo`: the fleet's main job on a demo board -- runs launched, supervised and closed out.
# Which machine this is decides how (README "Two commands"):
#   bed   root with podman (a container, CI; this is the case where there is no user manager):
#         one test-bed host (tests/testbed/bed) is the worker and the PostgreSQL ledger, this
#         machine the controller; the sweep applies, the fake agent runs in real systemd units.
#   plan  otherwise: the sweep only plans, and the last line says why.
# FLEET_DEMO_CASE=bed|plan picks one. The host is removed on exit (trap), so it runs twice.
# Needs only python3 (>= 3.11) and the package registries: the venv is made on first use.
set -euo pipefail
REPO=$(cd "$(dirname "$0")" && pwd)
cd "$REPO"
VENV=${FLEET_VENV:-$REPO/.venv}
DEMO=${FLEET_DEMO_DIR:-$REPO/build/demo}
BED=$REPO/tests/testbed/bed
tests/bootstrap-venv "$VENV" >&2
export PATH="$VENV/bin:$PATH"
# the working tree is the collection: expose it as ansible_collections/fleet/dispatch
mkdir -p "$DEMO/collections/ansible_collections/fleet"
ln -sfn "$REPO" "$DEMO/collections/ansible_collections/fleet/dispatch"
export ANSIBLE_COLLECTIONS_PATH="$DEMO/collections"
# and the collections the ansible package in the venv carries (community.postgresql for roles/ledger)
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=true
export ANSIBLE_CALLBACK_RESULT_FORMAT=yaml ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false
export XDG_STATE_HOME="$DEMO/state"
started=$SECONDS
say() { printf '\n=== %s (%d s)\n' "$*" $((SECONDS - started)); }

print_files() {
  echo "status JSON: $(ls "$XDG_STATE_HOME"/fleet-dispatch/*/status.json)"
  page=$(ls "$XDG_STATE_HOME"/fleet-dispatch/*/status.html)
  echo "status page: $page  (python3 -m http.server -d $(dirname "$page"))"
  echo "metrics:     $(ls "$XDG_STATE_HOME"/fleet-dispatch/*/fleet-dispatch.prom)"
}

plan_demo() {   # $1: why nothing is launched
  local board="{\"dispatch_board\": {\"kind\": \"ledger\", \"path\": \"$DEMO/ledger.sqlite3\"}}"
  ansible-playbook -i inventory.example playbooks/demo.yml -e "$board"
  ansible-playbook -i inventory.example playbooks/status.yml -e "$board"
  ansible-playbook -i inventory.example playbooks/sweep.yml -e "$board"
  print_files
  echo "plan JSON:   $(ls "$XDG_STATE_HOME"/fleet-dispatch/*/plan.json)"
  echo "why not?:    ANSIBLE_COLLECTIONS_PATH=$DEMO/collections $VENV/bin/ansible-playbook -i inventory.example playbooks/explain.yml -e issue=4 -e '$board'"
  echo "mode:        plan only -- nothing was launched: $1 (tests/integration runs real units on test-bed hosts)"
}

# The fake agent's mode per demo item (tests/fakes/agent): the importer merges, the item whose blocker
# is closed claims without merging (a no-op), the reopened item dies on a 503 before its first turn
# (a retry), the item with two capacity deaths merges, and the left-open item hits the provider's
# limit with a stated reset (its master goes dark). Launched in item order, the limit comes last.
DEMO_MODES=1=merge,5=claim,10=die503,12=merge,13=ratelimit

bed_demo() {
  local host=${FLEET_DEMO_HOST:-fleet-demo} ip=${FLEET_DEMO_IP:-10.88.240.10} work=$DEMO/bed reset since password
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  say "the test bed: one host, $host ($ip), worker and ledger"
  "$BED" setup >&2
  "$BED" image >&2
  eval "$("$BED" env)"
  "$BED" down "$host" >/dev/null 2>&1 || true    # a host a killed demo left behind
  # shellcheck disable=SC2064  # expand now: the names are fixed for this run
  trap "echo 'demo: removing the test-bed host $host' >&2; '$BED' down '$host' >/dev/null 2>&1 || true" EXIT
  FLEET_TESTBED_OWNER='' "$BED" up "$host" "$ip" >&2
  rm -rf "$work" "$XDG_STATE_HOME"
  mkdir -p "$work/group_vars"
  "$BED" inventory "$work/inventory.ini" "$host"
  printf '\n[ledger:children]\ntestbed\n\n[workers:children]\ntestbed\n' >> "$work/inventory.ini"
  reset=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:00Z)
  (umask 077
   cat > "$work/group_vars/all.yml" <<EOF
# Written by demo.sh for one demo run (the host is removed at its end).
ledger_password: $password
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
# the fake agent's forge half merges with its own credential (never the runner's credentials.env)
worker_agent_credentials:
  FAKE_FORGE_DSN: "postgresql://fleet:{{ ledger_password }}@$ip:5432/fleet"
# a long first retry wait, so the status after the runs still shows the retry in its wait
worker_runner_backoff: [1800, 1800, 1800]
EOF
   cat > "$work/ledger.yml" <<'EOF'
- name: Provision the ledger
  hosts: ledger
  become: true
  roles:
    - fleet.dispatch.ledger
EOF
  )
  local inv=(-i "$work/inventory.ini")
  say "the repository the runs work on (a bare git repository on the host)"
  "$BED" ssh "$host" 'sudo sh -s' <<'EOF'
set -eu
tmp=$(mktemp -d)
git -C "$tmp" init -q -b main && echo demo > "$tmp/README"
git -C "$tmp" add README && git -C "$tmp" -c user.name=demo -c user.email=demo@localhost commit -q -m init
git clone -q --bare "$tmp" /srv/demo.git && chmod -R a+rX /srv/demo.git && rm -rf "$tmp"
EOF
  say "the ledger: PostgreSQL on the host (roles/ledger)"
  ansible-playbook "${inv[@]}" "$work/ledger.yml"
  say "the worker: master fleet1, the runner, the PATH file, the notifier (fleet.dispatch.provision), and the fake agent"
  ansible "${inv[@]}" workers -m ansible.builtin.copy -a "src=$REPO/tests/fakes/agent/fake_agent.py dest=/usr/local/lib/fake_agent.py mode=0644"
  ansible-playbook "${inv[@]}" fleet.dispatch.provision
  say "the demo board, on the ledger (#13 held back in Backlog: the rate limit comes last, by hand)"
  ansible-playbook "${inv[@]}" fleet.dispatch.demo
  ansible "${inv[@]}" localhost -m fleet.dispatch.board_item -a 'board={{ dispatch_board }} number=13 status=Backlog'
  ansible-playbook "${inv[@]}" fleet.dispatch.status
  # the board's DSN reaches the wait through its environment, not its command line
  export FLEET_DEMO_BOARD="{\"kind\": \"ledger\", \"dsn\": \"postgresql://fleet:$password@$ip:5432/fleet\"}"
  since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  say "the sweep, in apply mode (the fake agent's mode by item: $DEMO_MODES); the runs, as they go"
  PYTHONPATH="$DEMO/collections" python3 "$REPO/demo/wait.py" --since "$since" &
  local follower=$!
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
  PYTHONPATH="$DEMO/collections" python3 "$REPO/demo/wait.py" --summary "$(dirname "$(ls "$XDG_STATE_HOME"/fleet-dispatch/*/plan.json)")"
  print_files
  echo "mode:        apply on the test-bed host $host: runs launched as systemd user units of fleet1 and closed out from the board ($((SECONDS - started)) s)"
}

demo_case=${FLEET_DEMO_CASE:-}
why=''
if [ -z "$demo_case" ]; then
  if systemctl --user show-environment >/dev/null 2>&1; then
    why="this machine has a systemd user manager for $(id -un), but provisioning a worker without root is not built yet"
  fi
  if [ "$(id -u)" = 0 ] && command -v podman >/dev/null 2>&1; then
    demo_case=bed
  else
    demo_case=plan
    why=${why:-"there is no systemd user manager for $(id -un) here (a container or CI?), and no root with podman for a test-bed host"}
  fi
fi
case $demo_case in
  bed) bed_demo ;;
  plan) plan_demo "${why:-FLEET_DEMO_CASE=plan asked for it}" ;;
  *) echo "demo: FLEET_DEMO_CASE=$demo_case: use bed or plan" >&2; exit 2 ;;
esac
