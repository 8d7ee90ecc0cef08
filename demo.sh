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
