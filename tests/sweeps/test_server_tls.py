"""``make server LISTEN=...`` opens the stack to other machines, and then only with TLS that
workers verify: the MLflow server speaks HTTPS only, PostgreSQL lets the worker role in from
beyond loopback over TLS only, and a worker without the certificate gets one line."""

from __future__ import annotations

import http.client
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator

import psycopg2
import pytest

from tests.servers import Server, started_server
from tests.sweep_helpers import one_point_spec


@pytest.fixture(scope="module")
def open_server() -> Iterator[Server]:
    """Listening on every address, reached by the name ``localhost`` (which its self-signed
    certificate names)."""
    with started_server(LISTEN="0.0.0.0", ADDRESS="localhost") as server:
        yield server


def test_an_open_server_prints_what_a_worker_verifies_it_with(open_server):
    worker = f"{open_server.folder}/worker"
    assert open_server.tracking.startswith("https://localhost:")
    assert open_server.storage.startswith("postgresql://worker@localhost:")
    assert open_server.worker["MLFLOW_TRACKING_SERVER_CERT_PATH"] == f"{worker}/ca.pem"
    assert open_server.worker["PGSSLMODE"] == "verify-full"
    assert open_server.worker["PGSSLROOTCERT"] == f"{worker}/ca.pem"
    hba = (open_server.folder / "pgdata" / "pg_hba.conf").read_text().splitlines()
    beyond_loopback = [line for line in hba if "/0" in line]
    assert beyond_loopback == [
        "hostssl optuna worker 0.0.0.0/0 scram-sha-256",
        "hostssl optuna worker ::/0 scram-sha-256",
    ]


def test_a_worker_trains_a_point_over_verified_tls(open_server, fixture_data_dir, tmp_path):
    """A real point: TensorFlow in the worker, then TLS to PostgreSQL (which segfaulted before
    libpq was loaded first: classifier.cli.startup.load_libpq_first) and HTTPS to MLflow."""
    spec = one_point_spec(tmp_path, fixture_data_dir, "sweep-tls")
    result = open_server.classify("sweep", str(spec), "--storage", open_server.storage)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "best: attention" in result.stdout and "Traceback" not in result.stderr

    # The worker role's connection is encrypted, and verified (PGSSLMODE=verify-full): asked
    # in a fresh interpreter, as a worker would.
    ask = (
        "import os, psycopg2; c = psycopg2.connect(os.environ['STORAGE'], connect_timeout=10); "
        "k = c.cursor(); k.execute('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()'); "
        "print(k.fetchone()[0])"
    )
    env = open_server.env(STORAGE=open_server.storage)
    answer = subprocess.run(
        [sys.executable, "-c", ask], env=env, capture_output=True, text=True, timeout=60
    )
    assert answer.stdout == "True\n", answer.stderr


def test_plain_http_is_not_answered(open_server):
    plain = open_server.tracking.replace("https://", "http://") + "/health"
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):
        urllib.request.urlopen(plain, timeout=10)


def test_a_worker_without_the_certificate_gets_one_line(open_server):
    result = open_server.classify(
        "compare", "--experiment", "none", MLFLOW_TRACKING_SERVER_CERT_PATH=None
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"classify: error: cannot reach the MLflow tracking server {open_server.tracking} "
        "(MLFLOW_TRACKING_URI): its TLS certificate is not trusted (set "
        "MLFLOW_TRACKING_SERVER_CERT_PATH to the certificate make server made: "
        "SERVER_DIR/worker/ca.pem)\n"
    )


def test_postgresql_refuses_a_connection_without_tls_from_beyond_loopback(open_server):
    addresses = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    beyond = [address for address in addresses if "." in address and not address.startswith("127.")]
    assert beyond, "this machine has no address beyond loopback to try"
    port = int(open_server.storage.rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(psycopg2.OperationalError, match="no pg_hba.conf entry .* no encryption"):
        psycopg2.connect(
            host=beyond[0],
            port=port,
            user="worker",
            dbname="optuna",
            passfile=open_server.worker["PGPASSFILE"],
            sslmode="disable",
            connect_timeout=10,
        )
