#!/usr/bin/env bash
# A throwaway PostgreSQL server for the PostgreSQL store's tests.
#
#   eval "$(scripts/pg-test-server.sh start)"   # prints: export ABRIDGE_PG_URL=… ABRIDGE_PG_SOCKET_URL=… ABRIDGE_PG_DIR=…
#   npm test
#   scripts/pg-test-server.sh stop              # stops the server in $ABRIDGE_PG_DIR (or the dir given) and removes it
#
# start: finds the installed server binaries (/usr/lib/postgresql/*/bin, newest first; or $PG_BIN), creates a data
# directory in a new temp dir (initdb), starts postgres on a free port of 127.0.0.1 only (its unix socket inside the
# temp dir, not /var/run), creates the database abridge_test owned by the user abridge (password login over TCP), and
# prints the export lines for eval on stdout; everything else goes to stderr. As root, initdb and postgres run as the
# `postgres` OS user (they refuse to run as root). ABRIDGE_PG_URL connects over TCP (what the tests use);
# ABRIDGE_PG_SOCKET_URL reaches the same server and database through its Unix socket (local connections are trusted),
# for measuring without the loopback TCP stack (e.g. ABRIDGE_PG_URL=$ABRIDGE_PG_SOCKET_URL node bench/store.js).
#
# The server is for tests only: fsync and synchronous commit are off (a crash of the machine may lose it, a crash of a
# client never loses a committed transaction). Set ABRIDGE_PG_DURABLE=1 to keep the defaults.
set -euo pipefail

MARKER=.abridge-pg-test-server
DB=abridge_test
DB_USER=abridge

log() { echo "pg-test-server: $*" >&2; }
die() { log "$*"; exit 1; }

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    [ -x "$PG_BIN/postgres" ] || die "PG_BIN=$PG_BIN has no postgres binary"
    echo "$PG_BIN"; return
  fi
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -rn); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then echo "$dir"; return; fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    dir="$(pg_config --bindir)"
    if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  die "no PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin, pg_config, PATH): install them, e.g. apt-get install -y postgresql"
}

# Runs a command as the server's OS user: `postgres` when we are root, ourselves otherwise.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    if command -v runuser >/dev/null 2>&1; then
      runuser -u postgres -- "$@"
    else
      su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
  else
    "$@"
  fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local bin dir port pass i started=
  bin="$(find_bin)"
  if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    die "running as root but there is no 'postgres' OS user to run the server as (initdb refuses root)"
  fi
  dir="$(mktemp -d "${TMPDIR:-/tmp}/abridge-pg.XXXXXX")"
  touch "$dir/$MARKER"
  mkdir -p "$dir/sock"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$dir"; fi
  chmod 700 "$dir"
  pass="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  printf '%s\n' "$pass" >"$dir/pwfile"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/pwfile"; fi
  chmod 600 "$dir/pwfile"

  log "initdb ($bin) in $dir/data"
  (cd "$dir" && as_owner "$bin/initdb" -D "$dir/data" -U "$DB_USER" --pwfile="$dir/pwfile" -E UTF8 --locale=C \
    --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1) || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }
  rm -f "$dir/pwfile"

  local opts="-c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir/sock -c max_connections=100"
  if [ "${ABRIDGE_PG_DURABLE:-}" != 1 ]; then opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"; fi
  for i in $(seq 1 20); do
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    port_in_use "$port" && continue
    if (cd "$dir" && as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$opts -p $port" start >&2); then
      started=1; break
    fi
    log "could not start on port $port (attempt $i); trying another"
    (cd "$dir" && as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1) || true
  done
  if [ -z "$started" ]; then
    tail -n 20 "$dir/server.log" >&2 || true
    rm -rf "$dir"
    die "postgres did not start"
  fi
  echo "$port" >"$dir/port"
  (cd "$dir" && as_owner "$bin/createdb" -h "$dir/sock" -p "$port" -U "$DB_USER" "$DB") || { stop_dir "$dir"; die "createdb failed"; }
  log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir)"
  echo "export ABRIDGE_PG_URL=postgres://$DB_USER:$pass@127.0.0.1:$port/$DB"
  echo "export ABRIDGE_PG_SOCKET_URL='postgres://$DB_USER@/$DB?host=$dir/sock&port=$port'"
  echo "export ABRIDGE_PG_DIR=$dir"
}

stop_dir() {
  local dir="$1" bin
  [ -f "$dir/$MARKER" ] || die "$dir is not a directory made by this script (no $MARKER): not touching it"
  bin="$(find_bin)"
  if [ -f "$dir/data/postmaster.pid" ]; then
    (cd "$dir" && as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2) || log "pg_ctl stop failed (server already gone?)"
  fi
  rm -rf "$dir"
  log "stopped and removed $dir"
}

case "${1:-}" in
  start) start ;;
  stop)
    dir="${2:-${ABRIDGE_PG_DIR:-}}"
    [ -n "$dir" ] || die "stop: give the directory printed by start (ABRIDGE_PG_DIR)"
    [ -d "$dir" ] || { log "$dir does not exist: nothing to stop"; exit 0; }
    stop_dir "$dir"
    ;;
  *) echo "usage: $0 start | stop [DIR]" >&2; exit 2 ;;
esac
