#!/usr/bin/env bash
# Start Debian's PostgreSQL for the test suite and print the admin DSN the tests use.
# Idempotent: installs the package when missing (root only), starts the default cluster,
# creates the role "fleet" (CREATEDB, CREATEROLE) with a password the tests know. Loopback only.
set -euo pipefail
# stdout carries the DSN and nothing else: every tool's chatter goes to stderr
# (pg_ctlcluster prints "Removed stale pid file." on stdout after an unclean stop).
# Not by moving stdout to another descriptor: the postmaster would inherit it and the
# caller's $(...) would wait for it forever.
log() { printf 'postgres: %s\n' "$*" >&2; }
if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
  [ "$(id -u)" = 0 ] || { log "PostgreSQL is not installed and this is not root: apt-get install postgresql"; exit 1; }
  log "installing Debian's postgresql package"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n1)
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -qx "$ver main"; then
  pg_createcluster "$ver" main >&2
fi
if ! pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $4}' | grep -q online; then
  # a postmaster killed a moment ago may still hold its socket lock: try a few times
  for try in 1 2 3 4 5; do
    pg_ctlcluster "$ver" main start >&2 && break
    [ "$try" = 5 ] && { log "the $ver/main cluster would not start: see /var/log/postgresql/"; exit 1; }
    sleep 2
  done
fi
for _ in $(seq 1 50); do
  su postgres -c "psql -qAtc 'select 1'" >/dev/null 2>&1 && break
  sleep 0.2
done
su postgres -c "psql -qAt" >/dev/null <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fleet') THEN
    CREATE ROLE fleet LOGIN CREATEDB PASSWORD 'fleet';
  END IF;
END $$;
-- the tests drop their databases WITH (FORCE): ending a straggling session of another role (a runner a
-- test started, a role the ledger tests made) needs pg_signal_backend, or the drop fails the test
GRANT pg_signal_backend TO fleet;
-- the ledger's role tests log in as a forge's role beside the owner: they create and drop such roles
ALTER ROLE fleet CREATEROLE;
SQL
port=$(pg_lsclusters -h | awk -v v="$ver" '$1==v && $2=="main" {print $3}')
echo "postgresql://fleet:fleet@127.0.0.1:${port}/postgres"
