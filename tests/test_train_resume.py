"""Interrupted and crashed runs: KILLED or FAILED in MLflow, checkpoint kept, resume continues."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

import classifier.train as training
from classifier.cli import cli
from classifier.train import ResumeError, train
from tests.conftest import fixture_data_overrides

EPOCHS = 8


@pytest.fixture
def store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def overrides(fixture_data_dir, epochs=EPOCHS, batch_size=2) -> list[str]:
    # Many small steps (batch 2): an epoch lasts long enough to be interrupted in.
    return [
        *fixture_data_overrides(fixture_data_dir, batch_size),
        "model.variant=encoder",
        "model.num_layers=1",
        f"train.epochs={epochs}",
        "train.early_stopping_patience=null",  # every epoch runs
        "train.registered_model=imdb-resume-test",
        "experiment=resume-tests",
    ]


def checkpoint_progress(run_id: str) -> dict:
    path = mlflow.artifacts.download_artifacts(f"runs:/{run_id}/checkpoint/progress.json")
    return json.loads(Path(path).read_text())


def metric_steps(run_id: str, name: str = "val_accuracy") -> list[int]:
    return sorted(m.step for m in MlflowClient().get_metric_history(run_id, name))


def test_ctrl_c_marks_the_run_killed_and_resume_continues(store, fixture_data_dir):
    sets = [arg for item in overrides(fixture_data_dir) for arg in ("--set", item)]
    env = {**os.environ, "MLFLOW_TRACKING_URI": store, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "classifier", "train", *sets],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    run_id = None
    for line in process.stdout:
        if line.startswith("run "):
            run_id = line.split()[1].rstrip(":")
        if line.startswith("epoch  2/"):
            process.send_signal(signal.SIGINT)
            break
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted: run {run_id} marked KILLED, its last checkpoint is kept; "
        f"continue with: classify train --resume {run_id}"
    )
    assert "Traceback" not in stderr
    mlflow.set_tracking_uri(store)
    assert MlflowClient().get_run(run_id).info.status == "KILLED"
    done = checkpoint_progress(run_id)["epoch"]
    assert 2 <= done < EPOCHS
    assert metric_steps(run_id) == list(range(1, done + 1))

    lines: list[str] = []
    result = train(resume=run_id, echo=lines.append)
    assert result.run_id == run_id
    assert lines[0].endswith(f"resuming after epoch {done}")
    epochs = [int(line.split()[1].split("/")[0]) for line in lines if line.startswith("epoch ")]
    assert epochs == list(range(done + 1, EPOCHS + 1))
    assert metric_steps(run_id) == list(range(1, EPOCHS + 1))
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"


def test_a_crash_marks_the_run_failed_and_resume_finishes_it(store, fixture_data_dir, monkeypatch):
    from classifier.config import load_config

    cfg = load_config(None, overrides(fixture_data_dir, epochs=2, batch_size=16))
    real_evaluate = training._evaluate_and_log

    def crash(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(training, "_evaluate_and_log", crash)
    lines: list[str] = []
    with pytest.raises(RuntimeError, match="disk full"):
        train(cfg, echo=lines.append)
    run_id = lines[0].split()[1].rstrip(":")
    assert MlflowClient().get_run(run_id).info.status == "FAILED"
    assert checkpoint_progress(run_id)["epoch"] == 2

    monkeypatch.setattr(training, "_evaluate_and_log", real_evaluate)
    resumed: list[str] = []
    result = train(resume=run_id, echo=resumed.append)
    assert not [line for line in resumed if line.startswith("epoch ")]  # nothing left to train
    assert result.epochs_run == 2
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"
    with pytest.raises(ResumeError, match="already finished"):
        train(resume=run_id)


def test_resume_errors_are_one_line(store):
    result = CliRunner().invoke(cli, ["train", "--resume", "nope"])
    assert result.exit_code == 2
    assert result.output.startswith("classify: error: no run 'nope' in sqlite:///")
    result = CliRunner().invoke(cli, ["train", "--resume", "abc", "--set", "train.epochs=2"])
    assert result.exit_code == 2
    assert result.output == (
        "classify: error: --resume continues with the run's own config; drop --config and --set\n"
    )
