#!/usr/bin/env bash
# The behaviour of the official postgres image's entrypoint that compose files rely on, written
# for the stand-in: on an empty data directory, initdb with POSTGRES_USER and POSTGRES_PASSWORD,
# the host rule for other containers, POSTGRES_DB created by a server that listens on the Unix
# socket only (so nothing reaches it over TCP before it is ready), then the real server as PID 1.
set -Eeuo pipefail

# `docker run postgres:16 -c shared_buffers=256MB`: options go to the server.
if [ "${1:0:1}" = "-" ]; then set -- postgres "$@"; fi

if [ "$1" = "postgres" ] && [ "$(id -u)" = "0" ]; then
  # A fresh volume (or a bind mount) belongs to root: hand it to postgres, then drop root.
  mkdir -p "$PGDATA"
  chown -R postgres:postgres "$PGDATA"
  chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
fi

if [ "$1" = "postgres" ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_USER:=postgres}"
  : "${POSTGRES_DB:=$POSTGRES_USER}"
  : "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != "trust" ]; then
    echo "error: the database is uninitialized and POSTGRES_PASSWORD is not set" >&2
    echo "  (or set POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without one)" >&2
    exit 1
  fi
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options, as upstream.
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD:-}") \
    ${POSTGRES_INITDB_ARGS:-}
  printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"

  PGUSER="$POSTGRES_USER" PGPASSWORD="${POSTGRES_PASSWORD:-}" \
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
  if [ "$POSTGRES_DB" != "postgres" ]; then
    PGPASSWORD="${POSTGRES_PASSWORD:-}" psql -v ON_ERROR_STOP=1 --no-psqlrc \
      --username "$POSTGRES_USER" --dbname postgres --set db="$POSTGRES_DB" \
      <<<'CREATE DATABASE :"db";'
  fi
  for file in /docker-entrypoint-initdb.d/*; do
    [ -e "$file" ] || continue
    case "$file" in
      *.sh) echo "running $file" && . "$file" ;;
      *.sql) echo "running $file" && PGPASSWORD="${POSTGRES_PASSWORD:-}" psql -v ON_ERROR_STOP=1 \
          --no-psqlrc --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -f "$file" ;;
      *) echo "ignoring $file" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo "PostgreSQL init process complete; ready for start up."
fi

exec "$@"
