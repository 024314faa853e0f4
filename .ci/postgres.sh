#!/usr/bin/env bash
# Install (if needed) and start Debian's PostgreSQL on 127.0.0.1 for the store tests; print the URL.
# Idempotent and non-interactive (CI=true safe); runs as root. Only the URL goes to stdout (its
# last line); progress and errors go to stderr. MYSCHED_PG_PASSWORD overrides the test password.
set -euo pipefail
password=${MYSCHED_PG_PASSWORD:-mysched-test}
export DEBIAN_FRONTEND=noninteractive

if [ "$(id -u)" -ne 0 ]; then
  echo "postgres.sh: must run as root (installs packages, starts the cluster as postgres)" >&2
  exit 1
fi
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || ! command -v pg_ctlcluster >/dev/null; then
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi

ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if ! pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {found=1} END {exit !found}'; then
  pg_createcluster "$ver" main >&2
fi

# Loopback only: the last listen_addresses line wins; restart a running cluster if we changed it.
conf=/etc/postgresql/$ver/main/postgresql.conf
changed=no
if [ "$(grep -E "^[[:space:]]*listen_addresses" "$conf" | tail -n 1 | tr -d ' ')" != "listen_addresses='127.0.0.1'" ]; then
  echo "listen_addresses = '127.0.0.1'" >> "$conf"
  changed=yes
fi
status=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {print $4}')
if [ "$status" = online ] && [ "$changed" = yes ]; then
  pg_ctlcluster "$ver" main restart >&2
elif [ "$status" != online ]; then
  pg_ctlcluster "$ver" main start >&2
fi
port=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {print $3}')

cd /  # the postgres user may not be able to enter the caller's directory
psql_admin() { runuser -u postgres -- psql -p "$port" -qAt -v ON_ERROR_STOP=1 -c "$1"; }
for _ in $(seq 1 30); do
  psql_admin "select 1" >/dev/null 2>&1 && break
  sleep 1
done
psql_admin "select 1" >/dev/null

# Role and database; the password is (re)set every time so the printed URL always works.
if [ "$(psql_admin "select 1 from pg_roles where rolname = 'mysched'")" != 1 ]; then
  psql_admin "create role mysched login" >&2
fi
psql_admin "alter role mysched login password '${password//\'/\'\'}'" >&2
if [ "$(psql_admin "select 1 from pg_database where datname = 'mysched'")" != 1 ]; then
  runuser -u postgres -- createdb -p "$port" -O mysched mysched >&2
fi

# Prove the URL works over TCP with the password before printing it.
PGPASSWORD=$password psql -h 127.0.0.1 -p "$port" -U mysched -d mysched -qAt -c "select 1" >/dev/null
enc=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$password")
echo "postgresql+psycopg2://mysched:$enc@127.0.0.1:$port/mysched"
