"""A sweep outlives its servers: the MLflow server stopped for 10 s, PostgreSQL restarted (after
12 s, longer than the worker's heartbeat interval; the MLflow server away from then for another
12 s), then the whole stack stopped for 10 s, each
during a point of one real ``classify sweep`` worker against ``make server``'s stack. The worker
trains on, says once that a server is unreachable and once that it is back (no traceback, no
library retry warning), its Optuna heartbeat beats on, and every point ends as one FINISHED
child run with every epoch's metrics, once."""

from __future__ import annotations

import contextlib
import datetime
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator

import psycopg2
import pytest
from mlflow.tracking import MlflowClient

from classifier.runs.tracking import PARENT_TAG, SPEC_HASH_TAG
from classifier.sweeps.storage import heartbeat_interval
from tests.servers import Server, started_server, wait_for_line
from tests.sweep_helpers import spec_tree, write_spec

EPOCHS = 6
#: The worker's --grace: it beats every HEARTBEAT_S = 8 s, and no outage reaches GRACE_S (a
#: point silent for that long may be handed to another worker).
GRACE_S = 24
OUTAGE_S = 10
POSTGRES_OUTAGE_S = 12  # longer than a heartbeat's interval, so that one falls in it
HEARTBEAT_S = heartbeat_interval(GRACE_S)  # 8
MLFLOW_AWAY = r"^the MLflow server \S+ is unreachable \("  # the server's URL in between


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with started_server() as server:
        yield server


def test_a_sweep_survives_its_servers_stopping_and_restarting(
    server, fixture_data_dir, tmp_path, monkeypatch
):
    tree = spec_tree(fixture_data_dir, name="faults", experiment="sweep-faults")
    tree["points"] = [{"model.variant": "block"}]
    tree["grid"] = {"train.seed": [1, 2, 3]}
    tree["overrides"]["train.epochs"] = EPOCHS
    tree["overrides"]["data.batch_size"] = 2  # epochs long enough to stop a server in
    spec = write_spec(tmp_path / "faults.yaml", tree)
    log = tmp_path / "worker.log"
    command = [sys.executable, "-m", "classifier", "sweep", str(spec), "--storage", server.storage]
    command += ["--grace", str(GRACE_S)]
    with log.open("w") as out:
        worker = subprocess.Popen(command, env=server.env(), stdout=out, stderr=subprocess.STDOUT)
    try:
        # Point 1: the MLflow server alone, until the worker has met it stopped (an epoch's
        # end or a run heartbeat; on a slow machine an epoch may outlast OUTAGE_S).
        at = wait_for_line(log, r"^epoch  2/", worker)
        server.stop_mlflow()
        time.sleep(OUTAGE_S)
        at = wait_for_line(log, MLFLOW_AWAY, worker, at)
        server.script("start")
        # Point 2: PostgreSQL restarted, the MLflow server's store with it. The MLflow server
        # (answering 503 meanwhile) is stopped before PostgreSQL is back and started a
        # heartbeat interval and more after: the worker waits on it at an epoch's end, so its
        # point is still running when its heartbeat must beat again, however fast it trains.
        at = wait_for_line(log, r"^train \[2/3\]", worker, at)
        at = wait_for_line(log, r"^epoch  2/", worker, at)
        server.stop_postgres()
        time.sleep(POSTGRES_OUTAGE_S)
        server.stop_mlflow()
        server.start_postgres()
        back = database_now(server)
        time.sleep(HEARTBEAT_S + 4)
        server.script("start")
        # Point 3: the whole stack.
        at = wait_for_line(log, r"^train \[3/3\]", worker, at)
        at = wait_for_line(log, r"^epoch  2/", worker, at)
        server.script("stop")
        time.sleep(OUTAGE_S)
        wait_for_line(log, MLFLOW_AWAY, worker, at)
        server.script("start")
        assert worker.wait(timeout=900) == 0, log.read_text()[-3000:]
    finally:
        worker.kill()
    output = log.read_text()

    for noise in ("Traceback", "Retrying", "WARNING", "Exception in thread", "urllib3"):
        assert noise not in output, output
    said = [
        line for line in output.splitlines() if " is unreachable (" in line or " is back " in line
    ]
    mlflow_lines = [line for line in said if line.startswith("the MLflow server ")]
    storage_lines = [line for line in said if line.startswith("the sweep storage ")]
    for lines in (mlflow_lines, storage_lines):  # each outage said once, its end once
        assert lines, said
        kinds = ["down" if " is unreachable (" in line else "up" for line in lines]
        assert kinds == ["down", "up"] * (len(kinds) // 2), said
    assert len(mlflow_lines) >= 4  # the MLflow server alone, then with the whole stack

    for name, value in server.worker.items():  # the test reads as a worker
        monkeypatch.setenv(name, value)
    client = MlflowClient(server.tracking)
    experiment = client.get_experiment_by_name("sweep-faults")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in runs if SPEC_HASH_TAG in run.data.tags]
    children = [run for run in runs if run.data.tags.get(PARENT_TAG) == parent.info.run_id]
    assert len(children) == 3 and {run.info.status for run in children} == {"FINISHED"}
    assert Counter(run.data.tags["sweep_point"] for run in children) == {"1": 1, "2": 1, "3": 1}
    for child in children:
        for metric in ("val_accuracy", "train_loss", "epoch_time_s"):
            steps = [m.step for m in client.get_metric_history(child.info.run_id, metric)]
            assert sorted(steps) == list(range(1, EPOCHS + 1)), (child.info.run_id, metric)
    assert parent.info.status == "FINISHED"
    # Point 2's Optuna heartbeat beat on once PostgreSQL was back (its thread did not die).
    assert last_heartbeat(server, point=2) > back


def database_now(server: Server) -> datetime.datetime:
    with worker_connection(server) as cursor:
        cursor.execute("SELECT now()::timestamp")
        return cursor.fetchone()[0]


def last_heartbeat(server: Server, point: int) -> datetime.datetime:
    """The newest Optuna heartbeat of the point's trials."""
    with worker_connection(server) as cursor:
        cursor.execute(
            "SELECT max(h.heartbeat) FROM trial_heartbeats h JOIN trial_user_attributes a "
            "ON a.trial_id = h.trial_id WHERE a.key = 'point' AND a.value_json = %s",
            (str(point),),
        )
        return cursor.fetchone()[0]


@contextlib.contextmanager
def worker_connection(server: Server) -> Iterator:
    connection = psycopg2.connect(
        server.storage, passfile=server.worker["PGPASSFILE"], connect_timeout=10
    )
    try:
        with connection, connection.cursor() as cursor:
            yield cursor
    finally:
        connection.close()
