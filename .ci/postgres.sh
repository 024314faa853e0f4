#!/usr/bin/env bash
# Install (if needed) and start Debian's PostgreSQL on 127.0.0.1 for the store tests; print the URL.
# Idempotent; meant for CI and developers' machines (runs as root).
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if ! pg_lsclusters -h 2>/dev/null | grep -q "^$ver main"; then
  pg_createcluster "$ver" main >&2
fi
conf=/etc/postgresql/$ver/main/postgresql.conf
grep -q "^listen_addresses = '127.0.0.1'" "$conf" || echo "listen_addresses = '127.0.0.1'" >> "$conf"
pg_ctlcluster "$ver" main start >&2 2>/dev/null || pg_ctlcluster "$ver" main status >/dev/null
for _ in $(seq 1 30); do
  su postgres -c "psql -qAt -c 'select 1'" >/dev/null 2>&1 && break
  sleep 1
done
su postgres -c "psql -qAt -c \"select 1 from pg_roles where rolname='mysched'\"" | grep -q 1 \
  || su postgres -c "psql -q -c \"create role mysched login password 'mysched-test'\"" >&2
su postgres -c "psql -qAt -c \"select 1 from pg_database where datname='mysched'\"" | grep -q 1 \
  || su postgres -c "createdb -O mysched mysched" >&2
echo "postgresql+psycopg2://mysched:mysched-test@127.0.0.1:5432/mysched"
