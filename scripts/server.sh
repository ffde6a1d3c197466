#!/usr/bin/env bash
# What `make server` and `make server-stop` run: PostgreSQL (Debian's package) with two databases,
# `mlflow` (the tracking server's store) and `optuna` (the sweeps' storage), and `mlflow server` on
# it with artefacts on local disk. The data lives in SERVER_DIR (default .server/ in the checkout),
# created with initdb on first use.
#
#   scripts/server.sh start    # prints what a worker exports, and its classify sweep line
#   scripts/server.sh stop
#
# Nobody gets in without a password. The first start makes random credentials, kept with mode
# 0600 under SERVER_DIR: secrets/ for the server (PostgreSQL's superuser, the `mlflow` role, the
# MLflow admin) and worker/ for the workers (the `worker` role's .pgpass, the MLflow `worker`
# account's password, and with TLS the certificate to verify). PostgreSQL asks for
# scram-sha-256 passwords (no trust); the MLflow server runs MLflow's basic-auth app. No secret
# is ever on a command line (ps shows those) or in a log.
#
# Settings (environment): SERVER_DIR, PG_PORT (5433), PORT (5000), MLFLOW (the mlflow command),
#   WORKERS  the MLflow server's worker processes (4, MLflow's default). Each imports MLflow's
#            server (about 1.5 s of CPU) and answers requests on threads of its own; on a
#            machine that also trains, fewer leave it more of the cores (the tests start it with 1).
#   LISTEN   the address both servers listen on (127.0.0.1). Any other (0.0.0.0, a LAN address)
#            opens them to other machines, and then only with TLS: PostgreSQL takes the worker
#            role over TLS only from beyond loopback, and the MLflow server speaks HTTPS only.
#   ADDRESS  the name workers reach the servers by, which the certificate names (LISTEN, or this
#            machine's name when LISTEN is 0.0.0.0).
#   TLS_CERT, TLS_KEY  your own certificate and key (PEM) instead of a self-signed one made on the
#            first open start (in SERVER_DIR/tls, valid 10 years, for ADDRESS, localhost and
#            127.0.0.1).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${SERVER_DIR:-$ROOT/.server}"
PG_PORT="${PG_PORT:-5433}"
PORT="${PORT:-5000}"
MLFLOW="${MLFLOW:-$ROOT/.venv/bin/mlflow}"
PYTHON="$(dirname "$MLFLOW")/python"
LISTEN="${LISTEN:-127.0.0.1}"
PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
PGDATA="$DIR/pgdata"
SECRETS="$DIR/secrets"
WORKER="$DIR/worker"

say() { echo "server: $*"; }
fail() { echo "server: $*" >&2; exit 1; }

# initdb and pg_ctl refuse to run as root: as root they run as the `postgres` user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
to_pg() { if [ "$(id -u)" = 0 ]; then chown postgres "$@"; fi; }

case "$LISTEN" in
  127.0.0.1 | localhost) OPEN=false ;;
  *) OPEN=true ;;
esac
if [ -z "${ADDRESS:-}" ]; then
  if [ "$LISTEN" = 0.0.0.0 ]; then ADDRESS="$(hostname -f 2>/dev/null || hostname)"; else ADDRESS="$LISTEN"; fi
fi
SCHEME=http
$OPEN && SCHEME=https
URL="$SCHEME://$ADDRESS:$PORT"

# A random secret in a new file of mode 0600 (printf is a shell builtin: no command line shows it).
new_secret() {
  [ -s "$1" ] && return
  (umask 077 && "$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(24))' >"$1")
}
secret() { cat "$1"; }

make_credentials() {
  (umask 077 && mkdir -p "$SECRETS" "$WORKER")
  chmod 700 "$SECRETS" "$WORKER"
  for name in postgres mlflow-db worker-db mlflow-admin; do new_secret "$SECRETS/$name.password"; done
  new_secret "$SECRETS/flask-secret.key"  # signs the MLflow UI's CSRF tokens
  new_secret "$WORKER/mlflow-password"
  (
    umask 077
    # The server's own connections (the superuser over the socket, the mlflow role over TCP).
    printf '*:%s:*:postgres:%s\n*:%s:mlflow:mlflow:%s\n' "$PG_PORT" "$(secret "$SECRETS/postgres.password")" \
      "$PG_PORT" "$(secret "$SECRETS/mlflow-db.password")" >"$SECRETS/pgpass"
    # What a worker needs: the worker role on the optuna database, from any host it names.
    printf '*:%s:optuna:worker:%s\n' "$PG_PORT" "$(secret "$SECRETS/worker-db.password")" >"$WORKER/pgpass"
    cat >"$SECRETS/basic_auth.ini" <<EOF
[mlflow]
# Workers create, resume, delete (empty child runs) and register: MANAGE on what they use;
# only the admin manages users.
default_permission = MANAGE
database_uri = sqlite:///$SECRETS/basic_auth.db
admin_username = admin
authorization_function = mlflow.server.auth:authenticate_request_basic_auth
# A login checked once a minute, not at every request: each check is a PBKDF2 hash, and with
# 8 workers on 2 cores it made every point 5x slower (benchmarks/sweep_load.py, 2026-11-26).
auth_cache_ttl_seconds = 60
EOF
  )
}

make_certificate() {
  if [ -n "${TLS_CERT:-}" ] || [ -n "${TLS_KEY:-}" ]; then
    [ -f "${TLS_CERT:-}" ] && [ -f "${TLS_KEY:-}" ] || fail "TLS_CERT and TLS_KEY must both name PEM files"
    CERT="$TLS_CERT" KEY="$TLS_KEY"
  else
    CERT="$DIR/tls/server.crt" KEY="$DIR/tls/server.key"
    if [ ! -f "$CERT" ]; then
      (umask 077 && mkdir -p "$DIR/tls")
      local san="DNS:localhost,IP:127.0.0.1"
      if [[ "$ADDRESS" =~ ^[0-9.]+$ || "$ADDRESS" == *:* ]]; then san="IP:$ADDRESS,$san"; else san="DNS:$ADDRESS,$san"; fi
      (umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$ADDRESS" \
        -addext "subjectAltName=$san" -keyout "$KEY" -out "$CERT" 2>"$DIR/tls/openssl.log") \
        || fail "openssl could not make a certificate; see $DIR/tls/openssl.log"
      say "made a self-signed certificate for $ADDRESS ($CERT)"
    fi
  fi
  cp "$CERT" "$WORKER/ca.pem"  # what workers verify the servers with (not secret)
  # PostgreSQL reads its own copy: owned by it, mode 0600.
  install -m 600 "$CERT" "$PGDATA/server.crt"
  install -m 600 "$KEY" "$PGDATA/server.key"
  to_pg "$PGDATA/server.crt" "$PGDATA/server.key"
}

# Who may connect: everyone with a password over the socket and loopback; from beyond it, only
# the worker role, to the optuna database, over TLS (open mode).
write_hba() {
  {
    echo "local all all scram-sha-256"
    echo "host all all 127.0.0.1/32 scram-sha-256"
    echo "host all all ::1/128 scram-sha-256"
    if $OPEN; then
      echo "hostssl optuna worker 0.0.0.0/0 scram-sha-256"
      echo "hostssl optuna worker ::/0 scram-sha-256"
    fi
  } >"$PGDATA/pg_hba.conf"
  to_pg "$PGDATA/pg_hba.conf"
}

# psql as the superuser over the socket; SQL on stdin (never -c: it would show on a command line).
admin_sql() {
  PGPASSFILE="$SECRETS/pgpass" "$PG_BIN/psql" -h "$DIR/run" -p "$PG_PORT" -U postgres -d postgres \
    -v ON_ERROR_STOP=1 -qtA "$@"
}

start_postgres() {
  if [ -f "$PGDATA/PG_VERSION" ] && [ ! -f "$SECRETS/pgpass" ]; then
    fail "$PGDATA was made before passwords (trust authentication); stop it (make server-stop) and start with a new SERVER_DIR, or move $PGDATA away"
  fi
  make_credentials
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    to_pg "$PGDATA"
    chmod 700 "$PGDATA"
    local pwfile="$DIR/run/initdb.pw"  # initdb reads the superuser's password from a file
    (umask 077 && cp "$SECRETS/postgres.password" "$pwfile")
    to_pg "$pwfile"
    as_pg "$PG_BIN/initdb" -D "$PGDATA" -U postgres --auth=scram-sha-256 --pwfile="$pwfile" \
      --encoding=UTF8 >"$DIR/initdb.log" 2>&1 || { rm -f "$pwfile"; fail "initdb failed; see $DIR/initdb.log"; }
    rm -f "$pwfile"
    say "created the PostgreSQL data folder $PGDATA"
  fi
  write_hba
  local tls=()
  if $OPEN; then
    make_certificate
    tls=(-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key)
  fi
  if ! as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$DIR/run/postgresql.log" -w -t 60 start \
      -o "-p $PG_PORT -c listen_addresses=$LISTEN -c unix_socket_directories=$DIR/run ${tls[*]}" >/dev/null \
      || fail "PostgreSQL did not start; see $DIR/run/postgresql.log"
  else
    as_pg "$PG_BIN/pg_ctl" -D "$PGDATA" reload >/dev/null  # pg_hba.conf as written above
  fi
  # Roles and databases, once; the passwords set again on every start (from the files).
  {
    printf "SELECT 'CREATE ROLE mlflow LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mlflow')\\\\gexec\n"
    printf "SELECT 'CREATE ROLE worker LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'worker')\\\\gexec\n"
    printf "SET password_encryption = 'scram-sha-256';\n"
    printf "ALTER ROLE mlflow PASSWORD '%s';\n" "$(secret "$SECRETS/mlflow-db.password")"
    printf "ALTER ROLE worker PASSWORD '%s';\n" "$(secret "$SECRETS/worker-db.password")"
    printf "SELECT 'CREATE DATABASE mlflow OWNER mlflow' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'mlflow')\\\\gexec\n"
    printf "SELECT 'CREATE DATABASE optuna OWNER worker' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'optuna')\\\\gexec\n"
  } | admin_sql >/dev/null || fail "could not set up the roles and databases; see $DIR/run/postgresql.log"
}

curl_health() {
  local opts=(-fs)
  $OPEN && opts+=(--cacert "$WORKER/ca.pem" --resolve "$ADDRESS:$PORT:127.0.0.1")
  curl "${opts[@]}" "$URL/health" >/dev/null 2>&1
}

start_mlflow() {
  if curl_health; then return; fi
  local options=(--host "$LISTEN" --port "$PORT" --app-name basic-auth --workers "${WORKERS:-4}")
  if $OPEN; then
    options+=(--allowed-hosts "$ADDRESS,$ADDRESS:*,localhost:*,127.0.0.1:*"
      --uvicorn-opts "--ssl-keyfile $KEY --ssl-certfile $CERT")
  fi
  # Its own session, so that stop ends the server and its workers together. Its secrets travel
  # in its environment: the admin password (used on the first start only) and the .pgpass.
  # umask 077: what it writes (the users' password hashes, artefacts) only it reads.
  umask 077
  MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false PGPASSFILE="$SECRETS/pgpass" \
    MLFLOW_AUTH_CONFIG_PATH="$SECRETS/basic_auth.ini" \
    MLFLOW_AUTH_ADMIN_PASSWORD="$(secret "$SECRETS/mlflow-admin.password")" \
    MLFLOW_FLASK_SERVER_SECRET_KEY="$(secret "$SECRETS/flask-secret.key")" \
    setsid nohup "$MLFLOW" server \
    --backend-store-uri "postgresql+psycopg2://mlflow@127.0.0.1:$PG_PORT/mlflow" \
    --artifacts-destination "$DIR/artifacts" "${options[@]}" \
    >"$DIR/mlflow.log" 2>&1 </dev/null &
  echo $! >"$DIR/mlflow.pid"
  umask 022
  say "waiting for mlflow server (a new database takes about a minute to set up)"
  for _ in $(seq 1 1200); do  # every 0.2 s, for 240 s
    curl_health && break
    kill -0 "$(cat "$DIR/mlflow.pid")" 2>/dev/null || fail "mlflow server exited; see $DIR/mlflow.log"
    sleep 0.2
  done
  curl_health || fail "mlflow server did not answer in 240 s; see $DIR/mlflow.log"
}

# The MLflow account workers log in with: created once by the admin, through the REST API.
make_worker_account() {
  SERVER_URL="$URL" CA="$($OPEN && echo "$WORKER/ca.pem")" RESOLVE="$OPEN" PORT="$PORT" \
    ADMIN_FILE="$SECRETS/mlflow-admin.password" WORKER_FILE="$WORKER/mlflow-password" \
    "$PYTHON" - <<'EOF' || fail "could not create the MLflow worker account; see $DIR/mlflow.log"
import base64, json, os, ssl, urllib.error, urllib.parse, urllib.request

url = os.environ["SERVER_URL"]
if os.environ["RESOLVE"] == "true":  # reach this machine's server by the certificate's name
    host = urllib.parse.urlsplit(url).hostname
    context = ssl.create_default_context(cafile=os.environ["CA"])
    context.check_hostname = True
    import socket
    real = socket.getaddrinfo
    socket.getaddrinfo = lambda h, *a, **k: real("127.0.0.1" if h == host else h, *a, **k)
else:
    context = None
admin = open(os.environ["ADMIN_FILE"]).read().strip()
password = open(os.environ["WORKER_FILE"]).read().strip()
token = base64.b64encode(f"admin:{admin}".encode()).decode()
request = urllib.request.Request(
    f"{url}/api/2.0/mlflow/users/create",
    data=json.dumps({"username": "worker", "password": password}).encode(),
    headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
)
try:
    urllib.request.urlopen(request, timeout=30, context=context)
except urllib.error.HTTPError as error:
    if "RESOURCE_ALREADY_EXISTS" not in error.read().decode():
        raise SystemExit(f"server: creating the worker account: {error}")
EOF
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
  start_postgres
  start_mlflow
  make_worker_account
  say "MLflow server $URL (PostgreSQL on $ADDRESS:$PG_PORT, artefacts in $DIR/artifacts)$($OPEN && echo ', TLS')"
  say "a worker needs the files in $WORKER (copy that folder to other machines; keep it private)"
  echo "export MLFLOW_TRACKING_URI=$URL"
  echo "export MLFLOW_TRACKING_USERNAME=worker"
  echo "export MLFLOW_TRACKING_PASSWORD=\"\$(cat $WORKER/mlflow-password)\""
  echo "export PGPASSFILE=$WORKER/pgpass"
  if $OPEN; then
    echo "export MLFLOW_TRACKING_SERVER_CERT_PATH=$WORKER/ca.pem"
    echo "export PGSSLMODE=verify-full"
    echo "export PGSSLROOTCERT=$WORKER/ca.pem"
  fi
  echo "classify sweep SPEC --storage postgresql://worker@$ADDRESS:$PG_PORT/optuna"
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
