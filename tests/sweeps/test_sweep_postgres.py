"""Sweeps on many machines, for real: PostgreSQL (Debian's package) and ``mlflow server`` started
by the script ``make server`` runs, two ``classify sweep`` workers of one 6-point sweep, and one
of them SIGKILLed in the middle of a point. Optuna's heartbeat hands that point to the other
worker, which continues the same MLflow child run from its checkpoint."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from classifier.runs.tracking import CONFIG_HASH_TAG, PARENT_TAG, SPEC_HASH_TAG
from tests.sweep_helpers import spec_tree, write_spec

ROOT = Path(__file__).resolve().parents[2]
EPOCHS = 3
GRACE_S = 6


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def sweep_server():
    """``scripts/server.sh start`` (what ``make server`` runs) on free ports and a fresh folder
    that the ``postgres`` user can enter; stopped and removed afterwards. Yields the MLflow URL
    and the Optuna storage URL that it prints."""
    folder = Path(tempfile.mkdtemp(prefix="classify-server-"))
    folder.chmod(0o755)
    env = {
        **os.environ,
        "SERVER_DIR": str(folder),
        "PG_PORT": str(free_port()),
        "PORT": str(free_port()),
        "MLFLOW": str(Path(sys.executable).parent / "mlflow"),
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    script = str(ROOT / "scripts" / "server.sh")
    started = subprocess.run(
        [script, "start"], env=env, capture_output=True, text=True, timeout=400
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        lines = started.stdout.splitlines()
        tracking = next(line for line in lines if line.startswith("export MLFLOW_TRACKING_URI="))
        storage = next(line for line in lines if line.startswith("classify sweep SPEC --storage "))
        yield tracking.split("=", 1)[1], storage.split("--storage ", 1)[1]
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def test_make_server_prints_what_workers_need(sweep_server):
    tracking, storage = sweep_server
    assert tracking.startswith("http://127.0.0.1:")
    assert storage.startswith("postgresql://postgres@127.0.0.1:") and storage.endswith("/optuna")


def test_a_killed_worker_hands_its_point_to_the_other(sweep_server, fixture_data_dir, tmp_path):
    tracking, storage = sweep_server
    tree = spec_tree(fixture_data_dir, name="killed", experiment="sweep-postgres")
    tree["overrides"]["train.epochs"] = EPOCHS
    tree["grid"] = {"train.seed": [1, 2, 3]}  # 2 variants x 3 seeds
    spec = write_spec(tmp_path / "killed.yaml", tree)
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking, "PYTHONUNBUFFERED": "1"}
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

    mlflow.set_tracking_uri(tracking)
    client = MlflowClient()
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
