"""``make ui`` prints the URL of the experiment's runs view (``scripts/ui_url.py``)."""

from __future__ import annotations

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
