#!/usr/bin/env bash
# What `make server` and `make server-stop` run: PostgreSQL (Debian's package) with two databases,
# `mlflow` (the tracking server's store) and `optuna` (the sweeps' storage), and `mlflow server` on
# it with artefacts on local disk; both bound to 127.0.0.1. The data lives in SERVER_DIR (default
# .server/ in the checkout), created with initdb on first use.
#
#   scripts/server.sh start    # prints the two URLs that workers need
#   scripts/server.sh stop
#
# Settings (environment): SERVER_DIR, PG_PORT (5433), PORT (5000), MLFLOW (the mlflow command).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${SERVER_DIR:-$ROOT/.server}"
PG_PORT="${PG_PORT:-5433}"
PORT="${PORT:-5000}"
MLFLOW="${MLFLOW:-$ROOT/.venv/bin/mlflow}"
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
PGDATA="$DIR/pgdata"

say() { echo "server: $*"; }
fail() { echo "server: $*" >&2; exit 1; }

# initdb and pg_ctl refuse to run as root: as root they run as the `postgres` user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  [ -x "$PG_BIN/initdb" ] || fail "PostgreSQL is not installed: apt-get install postgresql (Debian), then make server"
  [ -x "$MLFLOW" ] || fail "$MLFLOW not found: run make install first"
  mkdir -p "$DIR/artifacts" "$DIR/run"
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$DIR/run"
    # The postgres user must reach its data folder through every parent folder.
    runuser -u postgres -- test -x "$DIR" || fail "user postgres cannot enter $DIR; set SERVER_DIR to a folder it can reach (for example /var/tmp/imdb-server)"
  fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    [ "$(id -u)" = 0 ] && chown postgres "$PGDATA"
    chmod 700 "$PGDATA"
    as_pg "$PG_BIN/initdb" -D "$PGDATA" -U postgres --auth=trust --encoding=UTF8 >"$DIR/initdb.log" 2>&1 \
      || fail "initdb failed; see $DIR/initdb.log"
    say "created the PostgreSQL data folder $PGDATA"
  fi
  if ! as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$DIR/run/postgresql.log" -w -t 60 start \
      -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$DIR/run" >/dev/null \
      || fail "PostgreSQL did not start; see $DIR/run/postgresql.log"
  fi
  for db in mlflow optuna; do
    if ! "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "select 1 from pg_database where datname='$db'" | grep -q 1; then
      "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$db"
    fi
  done
  local url="http://127.0.0.1:$PORT"
  if ! curl -fs "$url/health" >/dev/null 2>&1; then
    # Its own session, so that stop ends the server and its workers together.
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false setsid nohup "$MLFLOW" server \
      --backend-store-uri "postgresql+psycopg2://postgres@127.0.0.1:$PG_PORT/mlflow" \
      --artifacts-destination "$DIR/artifacts" --host 127.0.0.1 --port "$PORT" \
      >"$DIR/mlflow.log" 2>&1 </dev/null &
    echo $! >"$DIR/mlflow.pid"
    say "waiting for mlflow server (a new database takes about a minute to set up)"
    for _ in $(seq 1 240); do
      curl -fs "$url/health" >/dev/null 2>&1 && break
      kill -0 "$(cat "$DIR/mlflow.pid")" 2>/dev/null || fail "mlflow server exited; see $DIR/mlflow.log"
      sleep 1
    done
    curl -fs "$url/health" >/dev/null 2>&1 || fail "mlflow server did not answer in 240 s; see $DIR/mlflow.log"
  fi
  say "MLflow server $url (PostgreSQL on 127.0.0.1:$PG_PORT, artefacts in $DIR/artifacts)"
  echo "export MLFLOW_TRACKING_URI=$url"
  echo "classify sweep SPEC --storage postgresql://postgres@127.0.0.1:$PG_PORT/optuna"
}

stop() {
  if [ -f "$DIR/mlflow.pid" ]; then
    kill -TERM -- "-$(cat "$DIR/mlflow.pid")" 2>/dev/null || true
    rm -f "$DIR/mlflow.pid"
    say "stopped mlflow server"
  fi
  if [ -f "$PGDATA/postmaster.pid" ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null && say "stopped PostgreSQL"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) fail "usage: scripts/server.sh start|stop" ;;
esac
