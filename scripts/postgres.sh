#!/usr/bin/env bash
# A local PostgreSQL server for running the Postgres tests (and poking at
# what they write) without the throwaway one `npm test` starts by itself.
#
#   npm run postgres                 # = start: create once, start, print the URL
#   npm run postgres -- stop         # stop it (the data stays)
#   npm run postgres -- status       # running or not, and the URL
#   npm run postgres -- url          # just the URL
#   npm run postgres -- destroy      # stop and delete the data
#
#   POSTGRES_URL=$(npm run -s postgres -- url) npm run test:node
#
# Uses Debian's server binaries (apt-get install postgresql; the newest
# /usr/lib/postgresql/<version>/bin, or $POSTGRES_BIN). Listens on 127.0.0.1
# only, port $PGPORT (default 54329), trust authentication for user
# "postgres", data in $LGIDB_POSTGRES_DIR (default $TMPDIR/lgidb-postgres-dev),
# durability off (fsync, synchronous_commit): test data only. As root, the
# server runs as the "postgres" user (PostgreSQL refuses to run as root).
set -euo pipefail

port="${PGPORT:-54329}"
dir="${LGIDB_POSTGRES_DIR:-${TMPDIR:-/tmp}/lgidb-postgres-dev}"
data="$dir/data"
url="postgresql://postgres@127.0.0.1:${port}/postgres"

find_bin() {
  if [ -n "${POSTGRES_BIN:-}" ] && [ -x "$POSTGRES_BIN/pg_ctl" ]; then echo "$POSTGRES_BIN"; return; fi
  local candidate
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then echo "$candidate"; return; fi
  done
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return; fi
  echo "postgres.sh: no PostgreSQL server binaries found (initdb, pg_ctl)." >&2
  echo "  Install Debian's server: sudo apt-get install postgresql   (or set POSTGRES_BIN)" >&2
  exit 1
}

# Runs a server binary as the postgres user when we are root.
as_server_user() {
  if [ "$(id -u)" -eq 0 ]; then
    if ! id -u postgres >/dev/null 2>&1; then
      echo "postgres.sh: running as root but there is no 'postgres' user (install Debian's postgresql package)." >&2
      exit 1
    fi
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running() {
  [ -f "$data/postmaster.pid" ] && as_server_user "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

bin="$(find_bin)"

case "${1:-start}" in
  start)
    if [ ! -d "$data" ]; then
      mkdir -p "$dir"
      [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
      as_server_user "$bin/initdb" -D "$data" -A trust -U postgres -E UTF8 --locale=C --no-sync >/dev/null
    fi
    if running; then
      echo "postgres.sh: already running" >&2
    else
      as_server_user "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null
      echo "postgres.sh: started (log: $dir/server.log)" >&2
    fi
    echo "POSTGRES_URL=$url"
    ;;
  stop)
    if running; then as_server_user "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
    echo "postgres.sh: stopped" >&2
    ;;
  status)
    if running; then echo "running: $url"; else echo "stopped"; exit 3; fi
    ;;
  url)
    echo "$url"
    ;;
  destroy)
    if running; then as_server_user "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null; fi
    rm -rf "$dir"
    echo "postgres.sh: deleted $dir" >&2
    ;;
  *)
    echo "usage: $0 [start|stop|status|url|destroy]" >&2
    exit 2
    ;;
esac
