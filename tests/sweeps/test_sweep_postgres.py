"""Sweeps on many machines, for real: PostgreSQL (Debian's package) and ``mlflow server`` started
by the script ``make server`` runs, two ``classify sweep`` workers of one 6-point sweep, and one
of them SIGKILLed in the middle of a point. Optuna's heartbeat hands that point to the other
worker, which continues the same MLflow child run from its checkpoint."""

from __future__ import annotations

import base64
import contextlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest
from mlflow.tracking import MlflowClient

from classifier.runs.tracking import CONFIG_HASH_TAG, PARENT_TAG, SPEC_HASH_TAG
from tests.servers import Server, started_server
from tests.sweep_helpers import spec_tree, write_spec

ROOT = Path(__file__).resolve().parents[2]
EPOCHS = 3
GRACE_S = 6


@pytest.fixture(scope="session")
def sweep_server() -> Iterator[Server]:
    """The server on 127.0.0.1, as ``make server`` starts it by default."""
    with started_server() as server:
        yield server


def test_make_server_prints_what_workers_need(sweep_server):
    worker = f"{sweep_server.folder}/worker"
    port = sweep_server.tracking.rsplit(":", 1)[1]
    assert sweep_server.printed.splitlines()[-5:] == [
        f"export MLFLOW_TRACKING_URI=http://127.0.0.1:{port}",
        "export MLFLOW_TRACKING_USERNAME=worker",
        f'export MLFLOW_TRACKING_PASSWORD="$(cat {worker}/mlflow-password)"',
        f"export PGPASSFILE={worker}/pgpass",
        f"classify sweep SPEC --storage {sweep_server.storage}",
    ]
    assert sweep_server.storage.startswith("postgresql://worker@127.0.0.1:")
    assert sweep_server.storage.endswith("/optuna")
    assert len(sweep_server.worker["MLFLOW_TRACKING_PASSWORD"]) >= 32


def test_the_mlflow_server_runs_as_many_workers_as_it_is_given(sweep_server):
    """WORKERS=1 (what the tests start): uvicorn answers in its own process, spawning none (MLflow's
    default, 4, spawns 4 worker processes and a resource tracker)."""
    group = int((sweep_server.folder / "mlflow.pid").read_text())
    listed = subprocess.run(
        ["ps", "-ww", "-o", "args=", "-g", str(group)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(listed) == 2, listed  # `mlflow server` and the uvicorn it starts
    (_,) = [line for line in listed if "/mlflow server " in line]  # (pids wrap around)
    (uvicorn,) = [line for line in listed if "-m uvicorn " in line]
    assert "--workers 1 " in uvicorn, listed


def test_a_killed_worker_hands_its_point_to_the_other(
    sweep_server, fixture_data_dir, tmp_path, monkeypatch
):
    tracking, storage = sweep_server.tracking, sweep_server.storage
    tree = spec_tree(fixture_data_dir, name="killed", experiment="sweep-postgres")
    tree["overrides"]["train.epochs"] = EPOCHS
    tree["grid"] = {"train.seed": [1, 2, 3]}  # 2 variants x 3 seeds
    spec = write_spec(tmp_path / "killed.yaml", tree)
    env = sweep_server.env()
    command = [
        sys.executable,
        "-m",
        "classifier",
        "sweep",
        str(spec),
        "--storage",
        storage,
        "--grace",
        str(GRACE_S),
    ]
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    workers = []
    for log in logs:
        with log.open("w") as out:
            workers.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT))
        time.sleep(2)  # the second worker joins a launched sweep
    victim, survivor = workers

    # Kill the first worker once it has checkpointed the first epoch of a point.
    deadline = time.monotonic() + 300
    killed_run = None
    while killed_run is None:
        assert time.monotonic() < deadline, logs[0].read_text()[-3000:]
        assert victim.poll() is None, logs[0].read_text()[-3000:]
        lines = logs[0].read_text().splitlines()
        for number, line in enumerate(lines):
            if line.startswith(f"epoch  1/{EPOCHS}"):
                killed_run = next(
                    prior.split()[1].rstrip(":")
                    for prior in reversed(lines[:number])
                    if prior.startswith("run ")
                )
                break
        time.sleep(0.2)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert survivor.wait(timeout=600) == 0, logs[1].read_text()[-3000:]
    survived = logs[1].read_text()
    assert f"run {killed_run} (RUNNING)" in survived  # resumed, not trained afresh

    for name, value in sweep_server.worker.items():  # the test reads as a worker
        monkeypatch.setenv(name, value)
    client = MlflowClient(tracking)
    experiment = client.get_experiment_by_name("sweep-postgres")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in runs if SPEC_HASH_TAG in run.data.tags]
    children = [run for run in runs if run.data.tags.get(PARENT_TAG) == parent.info.run_id]
    assert len(children) == 6 and {run.info.status for run in children} == {"FINISHED"}
    assert set(Counter(run.data.tags[CONFIG_HASH_TAG] for run in children).values()) == {1}
    history = client.get_metric_history(killed_run, "val_accuracy")
    assert sorted(metric.step for metric in history) == list(range(1, EPOCHS + 1))
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["points_finished"] == 6

    status = subprocess.run(
        [*command[:5], "--storage", storage, "--status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[0] == (
        f"sweep killed: parent run {parent.info.run_id}, storage "
        f"{storage.replace('postgresql://', 'postgresql+psycopg2://')}"
    )
    assert lines[1] == "6 points: 0 waiting, 0 running, 6 finished, 0 failed"
    assert sum("(2 attempts)" in line for line in lines[2:]) == 1  # the killed point

    late = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert late.returncode == 0, late.stderr
    assert "sweep killed: finished already (6 of 6 points finished, 0 failed)" in late.stdout


def secrets_of(server: Server) -> list[str]:
    folder = server.folder
    files = [
        *(folder / "secrets").glob("*.password"),
        folder / "secrets" / "flask-secret.key",
        folder / "worker" / "mlflow-password",
    ]
    return [path.read_text().strip() for path in files]


def test_the_credentials_are_private_and_never_shown(sweep_server):
    folder = sweep_server.folder
    for private in (folder / "secrets", folder / "worker"):
        assert private.stat().st_mode & 0o777 == 0o700, private
        for path in private.iterdir():
            assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others"
    secrets = secrets_of(sweep_server)
    assert len(secrets) == 6 and all(len(secret) >= 32 for secret in secrets)
    logs = [folder / "mlflow.log", folder / "run" / "postgresql.log", folder / "initdb.log"]
    shown = [sweep_server.printed, *(path.read_text() for path in logs)]
    for proc in Path("/proc").glob("[0-9]*"):  # every command line ps could show
        with contextlib.suppress(OSError):
            shown.append((proc / "cmdline").read_bytes().decode(errors="replace"))
    assert not [secret for secret in secrets if any(secret in text for text in shown)]
    hba = (folder / "pgdata" / "pg_hba.conf").read_text()
    assert "trust" not in hba and "scram-sha-256" in hba


def test_nobody_gets_in_without_the_password(sweep_server):
    def status(**auth: str) -> int:
        request = urllib.request.Request(
            f"{sweep_server.tracking}/api/2.0/mlflow/experiments/search?max_results=1"
        )
        if auth:
            token = base64.b64encode(f"{auth['user']}:{auth['password']}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    password = sweep_server.worker["MLFLOW_TRACKING_PASSWORD"]
    assert status() == 401
    assert status(user="worker", password="guess") == 401
    assert status(user="admin", password="password1234") == 401  # MLflow's old default
    assert status(user="worker", password=password) == 200

    port = int(sweep_server.storage.rsplit(":", 1)[1].split("/")[0])
    for user, database, password in [
        ("worker", "optuna", ""),
        ("worker", "optuna", "guess"),
        ("postgres", "postgres", ""),
        ("mlflow", "mlflow", ""),
    ]:
        with pytest.raises(psycopg2.OperationalError, match="password"):
            psycopg2.connect(
                host="127.0.0.1",
                port=port,
                user=user,
                dbname=database,
                password=password,
                passfile="/nonexistent/pgpass",
                connect_timeout=10,
            )


def test_a_wrong_or_missing_password_is_one_line(sweep_server, tmp_path):
    classify = sweep_server.classify
    where = f"the MLflow tracking server {sweep_server.tracking} (MLFLOW_TRACKING_URI)"
    wrong = classify("compare", "--experiment", "none", MLFLOW_TRACKING_PASSWORD="guess")
    assert (wrong.returncode, wrong.stdout) == (2, "")
    assert wrong.stderr == (
        f"classify: error: {where} refused user 'worker': wrong or missing "
        "MLFLOW_TRACKING_PASSWORD\n"
    )
    missing = classify(
        "compare",
        "--experiment",
        "none",
        MLFLOW_TRACKING_USERNAME=None,
        MLFLOW_TRACKING_PASSWORD=None,
    )
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == (
        f"classify: error: {where} asks for a login: set MLFLOW_TRACKING_USERNAME and "
        "MLFLOW_TRACKING_PASSWORD (make server prints them)\n"
    )
    pgpass = tmp_path / "pgpass"
    pgpass.write_text("*:*:optuna:worker:guess\n")
    pgpass.chmod(0o600)
    spec = write_spec(tmp_path / "s.yaml", spec_tree(tmp_path, name="s", experiment="s"))
    shown = sweep_server.storage.replace("postgresql://", "postgresql+psycopg2://")
    for changes in ({"PGPASSFILE": str(pgpass)}, {"PGPASSFILE": str(tmp_path / "absent")}):
        result = classify(
            "sweep", str(spec), "--status", "--storage", sweep_server.storage, **changes
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"classify: error: --storage {shown}: cannot open it: ")
        assert "password" in result.stderr and len(result.stderr.splitlines()) == 1
