"""A sweep logged through a real ``mlflow server`` process shows up through its REST API, with
its artefacts proxied by the server and its model registered there."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from classifier.cli.main import cli
from classifier.sweeps.run import run_sweep
from classifier.sweeps.spec import load_spec
from tests.servers import wait_until_answering

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = "sweep-server-test"
REGISTERED = "imdb-sweep-server-test"
MLFLOW = Path(sys.executable).parent / "mlflow"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rest(base: str, endpoint: str, body: dict | None = None, **query) -> dict:
    """GET (or POST with a JSON body) an MLflow REST endpoint; return the decoded answer."""
    url = f"{base}/api/2.0/mlflow/{endpoint}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


@pytest.fixture
def server(tmp_path):
    """``mlflow server`` on a free 127.0.0.1 port with a fresh store; stopped by its PID."""
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    command = [
        str(MLFLOW),
        "server",
        "--backend-store-uri",
        f"sqlite:///{tmp_path / 'mlflow.db'}",
        # Artefacts are proxied: clients upload them to the server, which writes them here.
        "--artifacts-destination",
        str(tmp_path / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(
            f"{base}/health", process, tmp_path / "server.log", timeout=60, interval=0.5
        )
        yield base, tmp_path / "artifacts"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
        log.close()


def test_sweep_through_a_tracking_server(server, tmp_path, fixture_overrides, monkeypatch):
    base, artifacts = server
    overrides = {k: yaml.safe_load(v) for k, v in (i.split("=", 1) for i in fixture_overrides)}
    overrides.update(
        {
            "model.num_layers": 1,
            "train.epochs": 1,
            "train.early_stopping_patience": None,
            "train.registered_model": REGISTERED,
        }
    )
    spec = tmp_path / "one.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "one-point",
                "base": str(ROOT / "configs" / "default.yaml"),
                "experiment": EXPERIMENT,
                "overrides": overrides,
                "points": [{"model.variant": "attention"}],
                "grid": {"train.seed": [1]},
            }
        )
    )
    monkeypatch.setenv("MLFLOW_TRACKING_URI", base)
    result = run_sweep(load_spec(spec), echo=lambda line: None)
    assert result.trained == [1]

    experiment = rest(base, "experiments/get-by-name", experiment_name=EXPERIMENT)["experiment"]
    assert experiment["artifact_location"].startswith("mlflow-artifacts:")
    runs = rest(base, "runs/search", {"experiment_ids": [experiment["experiment_id"]]})["runs"]
    assert len(runs) == 2
    tags = {
        run["info"]["run_id"]: {t["key"]: t["value"] for t in run["data"]["tags"]} for run in runs
    }
    (parent_id,) = [run_id for run_id, t in tags.items() if "sweep_spec_hash" in t]
    (child_id,) = [run_id for run_id, t in tags.items() if run_id != parent_id]
    assert parent_id == result.run_id
    assert tags[child_id]["mlflow.parentRunId"] == tags[child_id]["sweep_parent"] == parent_id
    assert tags[parent_id]["best_point"] == "attention"
    assert {run["info"]["status"] for run in runs} == {"FINISHED"}
    child = next(run for run in runs if run["info"]["run_id"] == child_id)
    params = {p["key"]: p["value"] for p in child["data"]["params"]}
    assert params["model.variant"] == "attention" and params["train.epochs"] == "1"

    # The artefacts went through the server into its --artifacts-destination.
    listed = rest(base, "artifacts/list", run_id=parent_id)
    assert {"comparison.csv", "comparison.md"} <= {f["path"] for f in listed.get("files", [])}
    assert list(artifacts.rglob("comparison.csv"))
    assert list(artifacts.rglob("model.keras"))

    # The child's model is registered in the server's registry.
    version = rest(base, "registered-models/alias", name=REGISTERED, alias="newest")
    assert version["model_version"]["run_id"] == child_id

    shown = CliRunner().invoke(cli, ["compare", "--sweep", parent_id, "--format", "json"])
    assert shown.exit_code == 0, shown.output
    assert [row["run_ids"] for row in json.loads(shown.output)] == [[child_id]]
