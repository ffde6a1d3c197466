"""``make ui`` prints the URL of the experiment's runs view (``scripts/ui_url.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import mlflow

from classifier.runs.tracking import ensure_experiment

ROOT = Path(__file__).resolve().parents[2]


def ui_url(*args: str) -> str:
    script = ROOT / "scripts" / "ui_url.py"
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.strip()


def test_the_url_opens_the_experiment_runs_view(tmp_path, monkeypatch):
    db = tmp_path / "mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    ensure_experiment("other")
    experiment_id = ensure_experiment("imdb-classifier")
    assert ui_url("5001", str(db)) == f"http://127.0.0.1:5001/#/experiments/{experiment_id}/runs"


def test_without_a_store_or_experiment_the_list_of_experiments(tmp_path):
    assert ui_url("5000", str(tmp_path / "absent.db")) == "http://127.0.0.1:5000/#/experiments"


def test_without_the_default_experiment_the_one_of_the_newest_run(tmp_path):
    db = tmp_path / "mlflow.db"
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    older, newer = ensure_experiment("older"), ensure_experiment("imdb-smoke")
    for experiment_id in (older, newer, older, newer):
        with mlflow.start_run(experiment_id=experiment_id):
            time.sleep(0.01)  # start times in milliseconds: no two alike
    assert ui_url("5000", str(db)) == f"http://127.0.0.1:5000/#/experiments/{newer}/runs"


def test_runs_with_metrics_open_a_saved_view_of_their_key_metrics(tmp_path):
    db = tmp_path / "mlflow.db"
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    experiment_id = ensure_experiment("imdb-classifier")
    with mlflow.start_run(experiment_id=experiment_id):
        mlflow.log_metrics({"test_accuracy": 0.91, "train_time_s": 12.0, "val_loss": 0.3})
    url = ui_url("5000", str(db))
    base = f"http://127.0.0.1:5000/#/experiments/{experiment_id}/runs?viewStateShareKey="
    assert url.startswith(base)
    key = url.removeprefix(base)
    tags = mlflow.MlflowClient().get_experiment(experiment_id).tags
    state = json.loads(tags[f"mlflow.sharedViewState.{key}"])
    assert state["selectedColumns"][-2:] == ["metrics.`test_accuracy`", "metrics.`train_time_s`"]
    assert (state["orderByKey"], state["orderByAsc"]) == ("metrics.`test_accuracy`", False)
    assert ui_url("5000", str(db)) == url  # the same view, the same key: one tag
    shared = [
        name
        for name in mlflow.MlflowClient().get_experiment(experiment_id).tags
        if "shared" in name
    ]
    assert shared == [f"mlflow.sharedViewState.{key}"]
