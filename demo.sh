#!/usr/bin/env bash
# `make demo`: a sweep against the embedded ledger board and a localhost worker.
# Builds a demo board with every reason code, prints the status table, then the sweep's plan.
# Needs only python3 (>= 3.11) and the package registries: the venv is made on first use.
set -euo pipefail
REPO=$(cd "$(dirname "$0")" && pwd)
cd "$REPO"
VENV=${FLEET_VENV:-$REPO/.venv}
DEMO=${FLEET_DEMO_DIR:-$REPO/build/demo}
tests/bootstrap-venv "$VENV" >&2
export PATH="$VENV/bin:$PATH"
# the working tree is the collection: expose it as ansible_collections/fleet/dispatch
mkdir -p "$DEMO/collections/ansible_collections/fleet"
ln -sfn "$REPO" "$DEMO/collections/ansible_collections/fleet/dispatch"
export ANSIBLE_COLLECTIONS_PATH="$DEMO/collections"
export ANSIBLE_CALLBACK_RESULT_FORMAT=yaml ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false
export XDG_STATE_HOME="$DEMO/state"
board="{\"dispatch_board\": {\"kind\": \"ledger\", \"path\": \"$DEMO/ledger.sqlite3\"}}"
ansible-playbook -i inventory.example playbooks/demo.yml -e "$board"
ansible-playbook -i inventory.example playbooks/status.yml -e "$board"
ansible-playbook -i inventory.example playbooks/sweep.yml -e "$board"
echo "status JSON: $(ls "$XDG_STATE_HOME"/fleet-dispatch/*/status.json)"
echo "plan JSON:   $(ls "$XDG_STATE_HOME"/fleet-dispatch/*/plan.json)"
page=$(ls "$XDG_STATE_HOME"/fleet-dispatch/*/status.html)
echo "status page: $page  (python3 -m http.server -d $(dirname "$page"))"
echo "metrics:     $(ls "$XDG_STATE_HOME"/fleet-dispatch/*/fleet-dispatch.prom)"
echo "why not?:    ANSIBLE_COLLECTIONS_PATH=$DEMO/collections $VENV/bin/ansible-playbook -i inventory.example playbooks/explain.yml -e issue=4 -e '$board'"
# Which machine this is decides whether real runs could be shown here; say which, and why this demo planned only.
if systemctl --user show-environment >/dev/null 2>&1; then
  why="this machine has a systemd user manager for $(id -un), but provisioning a worker without root is not built yet"
elif [ "$(id -u)" = 0 ] && command -v podman >/dev/null 2>&1; then
  why="there is no systemd user manager here; a real-run demo on a test-bed host is not built yet"
else
  why="there is no systemd user manager for $(id -un) here (a container or CI?), and no root with podman for a test-bed host"
fi
echo "mode:        plan only -- nothing was launched: $why (tests/integration runs real units on test-bed hosts)"
