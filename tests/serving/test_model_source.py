"""``classify predict`` on the fast path: the run's LiteRT bundle found in the SQLite store
without MLflow, run without TensorFlow, giving the Keras model's probabilities."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from classifier.serving.model_source import find_bundle
from classifier.serving.registry import DEFAULT_MODEL_NAME
from tests.model_helpers import NEGATIVE, POSITIVE


def test_every_model_name_finds_the_runs_bundle(trained, store, tmp_path):
    mlflow.set_tracking_uri(store)
    run = MlflowClient().get_run(trained.run_id)
    expected = Path(run.info.artifact_uri.removeprefix("file://")) / "bundle"
    assert (expected / "bundle.json").is_file()
    version = trained.model_version
    for spec in (
        None,
        f"models:/{DEFAULT_MODEL_NAME}@newest",
        f"models:/{DEFAULT_MODEL_NAME}@latest",
        f"models:/{DEFAULT_MODEL_NAME}/{version}",
        f"runs:/{trained.run_id}",
        str(expected),
        str(expected.parent),
    ):
        assert find_bundle(spec) == expected, spec
    for spec in (
        f"models:/{DEFAULT_MODEL_NAME}@nope",
        f"models:/{DEFAULT_MODEL_NAME}/999",
        f"models:/{DEFAULT_MODEL_NAME}",
        "models:/no-such-model@newest",
        f"runs:/{'0' * 32}",
        str(tmp_path),
    ):
        assert find_bundle(spec) is None, spec


def test_no_store_or_another_store_kind_means_the_slow_path(monkeypatch, tmp_path):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'absent.db'}")
    assert find_bundle(None) is None
    assert not (tmp_path / "absent.db").exists()  # read-only: nothing created
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    assert find_bundle(None) is None


def _predict(store: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLFLOW_TRACKING_URI": store}
    # -v: TensorFlow's import is not silenced, so its -X importtime lines show when it happens.
    command = [sys.executable, "-X", "importtime", "-m", "classifier", "-v", "predict", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def _imported(stderr: str) -> set[str]:
    """Top-level packages named in ``-X importtime`` lines."""
    return {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in stderr.splitlines()
        if line.startswith("import time:")
    }


def test_predict_with_the_default_model_needs_neither_tensorflow_nor_mlflow(
    trained, keras_file, store, tmp_path
):
    review = tmp_path / "review.txt"
    review.write_text(f"{POSITIVE}\n{NEGATIVE}\n")
    fast = _predict(store, "--per-line", "--format", "json", str(review))
    assert fast.returncode == 0, fast.stderr[-2000:]
    imported = _imported(fast.stderr)
    assert "ai_edge_litert" in imported
    assert not {"tensorflow", "keras", "mlflow"} & imported
    slow = _predict(
        store, "--model", str(keras_file), "--per-line", "--format", "json", str(review)
    )
    assert slow.returncode == 0, slow.stderr[-2000:]
    assert "tensorflow" in _imported(slow.stderr)
    rows = zip(json.loads(fast.stdout), json.loads(slow.stdout), strict=True)
    for bundle_row, keras_row in rows:
        assert bundle_row["label"] == keras_row["label"]
        assert bundle_row["positive_probability"] == pytest.approx(
            keras_row["positive_probability"], abs=2e-6
        )
