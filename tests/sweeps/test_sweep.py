"""Sweeps on fixture data into a temporary MLflow store: the parent and its children, resuming
an interrupted sweep, and ``classify compare`` of the finished sweep in every format."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import mlflow
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

import classifier.training.train as training
from classifier.config.variants import used_params
from classifier.runs.store_paths import sqlite_path
from classifier.sweeps.compare import compare
from classifier.sweeps.spec import expand, load_spec, spec_hash
from classifier.sweeps.storage import STORAGE_FILE
from classifier.sweeps.table import COLUMNS, CSV_COLUMNS, format_comparison
from tests.conftest import empty_store
from tests.sweep_helpers import EPOCHS, EXPERIMENT, invoke


@pytest.fixture(scope="module")
def interrupted(store, spec_path):
    """First pass: Ctrl-C arrives while the third point evaluates its model."""
    real = training._evaluate_and_log
    calls = []

    def evaluate(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training, "_evaluate_and_log", evaluate)
        return invoke("sweep", str(spec_path))


@pytest.fixture(scope="module")
def swept(interrupted, spec_path):
    """Second pass of the same spec: it continues the interrupted sweep."""
    return invoke("sweep", str(spec_path))


@pytest.fixture(scope="module")
def parent(swept, store):
    mlflow.set_tracking_uri(store)
    experiment = MlflowClient().get_experiment_by_name(EXPERIMENT)
    runs = mlflow.search_runs(
        [experiment.experiment_id], "tags.sweep_spec_hash != ''", output_format="list"
    )
    assert len(runs) == 1, "one sweep, one parent run"
    return runs[0]


def children(parent_run) -> list:
    runs = mlflow.search_runs(
        [parent_run.info.experiment_id],
        f"tags.`mlflow.parentRunId` = '{parent_run.info.run_id}'",
        output_format="list",
    )
    return sorted(runs, key=lambda run: int(run.data.tags["sweep_point"]))


def lines_starting(output: str, *words: str) -> list[str]:
    return [line for line in output.splitlines() if line.split(" ")[0] in words]


# --------------------------------------------------------------------------- running


def test_ctrl_c_marks_the_sweep_killed_and_says_how_to_continue(interrupted, spec_path, store):
    assert interrupted.exit_code == 130, interrupted.output
    assert (
        interrupted.stderr.strip()
        .splitlines()[-1]
        .endswith(f"finished points are kept; continue with: classify sweep {spec_path}")
    )
    parent_id = interrupted.stderr.split("sweep run ")[1].split()[0]
    mlflow.set_tracking_uri(store)
    parent_run = MlflowClient().get_run(parent_id)
    assert parent_run.info.status == "KILLED"
    assert [run.info.status for run in children(parent_run)] == ["FINISHED", "FINISHED", "KILLED"]


def test_rerun_skips_finished_points_resumes_and_trains_the_rest(interrupted, swept, parent):
    assert swept.exit_code == 0, swept.output
    steps = lines_starting(swept.output, "skip", "resume", "train")
    # The finished points are not visited again; the handed-back point goes on in its run
    # (after point 4: Optuna hands out waiting trials in the order they were enqueued).
    assert [line.split(" ")[0] + " " + line.split(" ")[1] for line in steps] == [
        "train [4/4]",
        "resume [3/4]",
    ]
    first = interrupted.stdout.splitlines()
    start = next(i for i, line in enumerate(first) if line.startswith("train [3/4]"))
    killed_id = first[start + 1].split()[1].rstrip(":")  # "run ID: encoder, ..."
    assert f"resume [3/4] encoder seed=1: run {killed_id} (KILLED)" in swept.output
    assert parent.info.status == "FINISHED"
    assert parent.info.run_id in interrupted.stderr  # the same parent, reopened


def test_parent_and_children_structure_and_params(parent, spec_path):
    points = expand(load_spec(spec_path))
    assert parent.info.run_name == "tiny"
    assert parent.data.tags["sweep_spec_hash"] == spec_hash(points)
    runs = children(parent)
    assert len(runs) == 4
    for run, point in zip(runs, points, strict=True):
        assert run.info.status == "FINISHED"
        assert run.info.run_name == point.name
        tags = run.data.tags
        assert tags["mlflow.parentRunId"] == tags["sweep_parent"] == parent.info.run_id
        assert tags["sweep_point"] == str(point.index)
        assert tags["config_hash"] == point.config_hash
        assert tags["variant"] == point.config.model.variant
        assert tags["sweep_label"] == point.label
        for key, value in used_params(point.config.flat()).items():
            assert run.data.params[key] == str(value), key
        assert run.data.params["data.train_reviews"] == "120"
        assert int(run.data.params["model.parameters"]) > 0
        history = MlflowClient().get_metric_history(run.info.run_id, "val_accuracy")
        assert sorted(m.step for m in history) == list(range(1, EPOCHS + 1))
        assert 0.0 <= run.data.metrics["test_accuracy"] <= 1.0


def test_comparison_rows_average_the_seeds(parent):
    rows = compare(sweep_id=parent.info.run_id)
    runs = children(parent)
    assert [row.variant for row in rows] == ["attention", "encoder"]
    for row, members in zip(rows, (runs[:2], runs[2:]), strict=True):
        test = [run.data.metrics["test_accuracy"] for run in members]
        assert row.seeds == [1, 2]
        assert row.run_ids == [run.info.run_id for run in members]
        assert row.test_accuracy_mean == pytest.approx(np.mean(test))
        assert row.test_accuracy_std == pytest.approx(np.std(test))
        assert row.best_val_accuracy == pytest.approx(
            np.mean([run.data.metrics["best_val_accuracy"] for run in members])
        )
        assert row.train_time_s == pytest.approx(
            np.mean([run.data.metrics["train_time_s"] for run in members])
        )
        assert row.epochs == EPOCHS
        assert row.parameters == int(members[0].data.params["model.parameters"])
        assert len(row.val_accuracy_curves) == 2 and len(row.val_accuracy_curves[0]) == EPOCHS
    assert rows[0].key_params == "d=16 pos=none"
    assert rows[1].key_params == "d=16 h=2 ff=64 L=1 pos=learned"


def test_parent_artefacts_and_best_point(parent):
    run_id = parent.info.run_id
    client = MlflowClient()
    names = {a.path for a in client.list_artifacts(run_id)}
    assert {
        "comparison.csv",
        "comparison.md",
        "test_accuracy_by_variant.png",
        "val_accuracy_by_variant.png",
        "sweep.yaml",
    } <= names
    rows = compare(sweep_id=run_id)
    csv_text = mlflow.artifacts.load_text(f"runs:/{run_id}/comparison.csv")
    assert csv_text == format_comparison(rows, "csv") + "\n"
    markdown = mlflow.artifacts.load_text(f"runs:/{run_id}/comparison.md")
    assert markdown == format_comparison(rows, "markdown") + "\n"
    for name in ("test_accuracy_by_variant.png", "val_accuracy_by_variant.png"):
        path = mlflow.artifacts.download_artifacts(f"runs:/{run_id}/{name}")
        assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    best = max(rows, key=lambda row: row.best_val_accuracy)
    assert parent.data.tags["best_point"] == best.variant
    assert parent.data.metrics["best_val_accuracy"] == pytest.approx(best.best_val_accuracy)
    assert parent.data.metrics["best_test_accuracy"] == pytest.approx(best.test_accuracy_mean)
    assert parent.data.tags["best_run_id"] in best.run_ids


def test_a_finished_sweep_runs_nothing_again(parent, spec_path):
    before = len(children(parent))
    result = invoke("sweep", str(spec_path))
    assert result.exit_code == 0, result.output
    assert lines_starting(result.output, "skip", "resume", "train") == []
    assert "sweep tiny: finished already (4 of 4 points finished, 0 failed)" in result.output
    assert "trained 0, resumed 0, skipped 0" in result.output
    assert len(children(parent)) == before
    assert MlflowClient().get_run(parent.info.run_id).info.status == "FINISHED"


def test_a_sweep_whose_parent_run_the_store_lacks_is_refused_in_one_line(
    parent, spec_path, store, store_template, tmp_path, monkeypatch
):
    """The sweep's storage kept, its tracking store not (``mlflow.db`` deleted, or another
    store set): one line naming both, not an internal error."""
    storage = f"sqlite:///{sqlite_path(store).parent / STORAGE_FILE}"
    other = empty_store(store_template, tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", other)
    result = invoke("sweep", str(spec_path), "--storage", storage)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"classify: error: sweep tiny: the sweep storage {storage} holds it with parent run "
        f"{parent.info.run_id}, which the tracking store {other} does not have; set "
        "MLFLOW_TRACKING_URI to the store it ran in, or start it afresh with another --storage"
    ]


# --------------------------------------------------------------------------- classify compare


def test_compare_table(parent):
    result = invoke("compare", "--sweep", parent.info.run_id)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 3
    assert re.split(r"\s{2,}", lines[0]) == list(COLUMNS)
    assert lines[1].startswith("attention ") and " 1,2 " in lines[1]
    assert lines[2].startswith("encoder ") and "L=1 pos=learned" in lines[2]
    assert " ± " in lines[1]


def test_compare_markdown(parent):
    result = invoke("compare", "--sweep", parent.info.run_id, "--format", "markdown")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
    assert lines[1] == "| --- | --- | --- |" + " ---: |" * 8
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    assert cells[:3] == ["attention", "1,2", "d=16 pos=none"]
    mean, std = cells[4].split(" ± ")
    assert float(mean) >= 0 and float(std) >= 0
    f1_mean, f1_std = cells[5].split(" ± ")  # test macro-F1
    assert 0 <= float(f1_mean) <= 1 and float(f1_std) >= 0
    assert 0 <= float(cells[7]) <= 1  # test ECE, mean over the seeds


def test_compare_csv(parent):
    result = invoke("compare", "--sweep", parent.info.run_id, "--format", "csv")
    assert result.exit_code == 0, result.output
    table = list(csv.DictReader(io.StringIO(result.output)))
    assert list(table[0]) == list(CSV_COLUMNS)
    assert [row["variant"] for row in table] == ["attention", "encoder"]
    assert table[0]["seeds"] == "1,2"
    rows = compare(sweep_id=parent.info.run_id)
    assert float(table[1]["test_accuracy_mean"]) == pytest.approx(rows[1].test_accuracy_mean)
    assert int(table[1]["parameters"]) == rows[1].parameters


def test_compare_json_and_experiment(parent):
    result = invoke("compare", "--experiment", EXPERIMENT, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [row["variant"] for row in data] == ["attention", "encoder"]  # no parent row
    run_ids = {run.info.run_id for run in children(parent)}
    for row in data:
        assert row["seeds"] == [1, 2]
        assert set(row["run_ids"]) <= run_ids and len(row["run_ids"]) == 2
        assert isinstance(row["test_accuracy_mean"], float)
        assert isinstance(row["test_accuracy_std"], float)
        assert isinstance(row["parameters"], int)
        assert set(row) >= {"key_params", "best_val_accuracy", "epochs", "train_time_s"}
