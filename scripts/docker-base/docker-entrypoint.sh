#!/bin/sh
# The official postgres image's entrypoint, as far as the deployment uses it (compose runs
# `docker-entrypoint.sh postgres` behind its major-version guard): on first start, initdb,
# then the POSTGRES_USER role (with POSTGRES_PASSWORD) and its POSTGRES_DB; every start,
# postgres listening on all addresses with password auth. Any other command runs as given.
set -eu
if [ "${1:-postgres}" != postgres ]; then
  exec "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  createdb -U "$POSTGRES_USER" "$POSTGRES_DB"
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
