"""Sweeps on fixture data into a temporary MLflow store: the parent and its children, resuming
an interrupted sweep, the comparison table and ``classify compare`` in every format."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import mlflow
import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

import classifier.train as training
from classifier.cli import cli
from classifier.config import ConfigError
from classifier.sweep import (
    COLUMNS,
    CSV_COLUMNS,
    ComparisonRow,
    compare,
    expand,
    format_comparison,
    group_key,
    group_labels,
    key_params,
    load_spec,
    spec_hash,
)

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "sweep-tests"
REGISTERED = "imdb-sweep-test"
EPOCHS = 2


def spec_tree(fixture_data_dir: Path, **changes) -> dict:
    """Two variants times two seeds, two epochs each, on the fixture data."""
    tree = {
        "name": "tiny",
        "base": str(ROOT / "configs" / "default.yaml"),
        "experiment": EXPERIMENT,
        "overrides": {
            "data.data_dir": str(fixture_data_dir),
            "data.download": False,
            "data.train_size": 120,
            "data.val_size": 40,
            "data.test_size": 80,
            "data.vocab_size": 64,
            "data.sequence_length": 24,
            "data.batch_size": 16,
            "model.num_layers": 1,
            "train.epochs": EPOCHS,
            "train.early_stopping_patience": None,
            "train.learning_rate": 0.01,
            "train.registered_model": REGISTERED,
        },
        "points": [
            {"model.variant": "attention"},
            {"model.variant": "encoder", "model.position": "learned"},
        ],
        "grid": {"train.seed": [1, 2]},
    }
    tree.update(changes)
    return tree


def write_spec(path: Path, tree: dict) -> Path:
    path.write_text(yaml.safe_dump(tree, sort_keys=False))
    return path


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), prog_name="classify")


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory, fixture_data_dir) -> Path:
    return write_spec(tmp_path_factory.mktemp("spec") / "tiny.yaml", spec_tree(fixture_data_dir))


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


# --------------------------------------------------------------------------- spec and points


def test_spec_expands_points_times_grid(spec_path):
    points = expand(load_spec(spec_path))
    assert [p.name for p in points] == [
        "attention seed=1",
        "attention seed=2",
        "encoder seed=1",
        "encoder seed=2",
    ]
    assert points[2].overrides == {
        "model.variant": "encoder",
        "model.position": "learned",
        "train.seed": 1,
    }
    cfg = points[3].config
    assert (cfg.experiment, cfg.model.variant, cfg.model.position) == (
        EXPERIMENT,
        "encoder",
        "learned",
    )
    assert (cfg.train.seed, cfg.train.epochs, cfg.data.train_size) == (2, EPOCHS, 120)
    assert cfg.train.early_stopping_patience is None
    assert len({p.config_hash for p in points}) == 4


def test_dry_run_lists_points_without_touching_mlflow(spec_path, tmp_path, monkeypatch):
    database = tmp_path / "untouched.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{database}")
    result = invoke("sweep", str(spec_path), "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    points = expand(load_spec(spec_path))
    assert lines[0].startswith(f"sweep tiny: 4 points in experiment {EXPERIMENT} (base ")
    assert lines[0].endswith(f"spec hash {spec_hash(points)})")
    assert lines[1].startswith("every point: data.data_dir=")
    for line, point in zip(lines[2:], points, strict=True):
        assert line.split()[0] == str(point.index)
        assert point.name in line
        assert "train.seed=" in line and line.endswith(f"config {point.config_hash}")
    assert not database.exists()


def test_yaml_values_survive_the_override_round_trip(tmp_path, fixture_data_dir):
    tree = spec_tree(fixture_data_dir, points=None, grid={"train.learning_rate": [1.0e-5, 0.5]})
    tree["overrides"]["data.data_dir"] = "null"  # a string, not null: kept as the text "null"
    points = expand(load_spec(write_spec(tmp_path / "s.yaml", tree)))
    assert [p.config.train.learning_rate for p in points] == [1.0e-5, 0.5]
    assert points[0].config.data.data_dir == "null"
    assert [p.label for p in points] == [  # no points: the base config's variant
        "attention (learning_rate=1e-05)",
        "attention (learning_rate=0.5)",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "unknown key 'colour'; a sweep spec takes name, base, experiment"),
        ({"base": "missing.yaml"}, "base config not found: "),
        ({"name": 3}, "name must be a non-empty string, got 3"),
        ({"points": {"model.variant": "mha"}}, "points must be a non-empty list of overrides"),
        ({"grid": {"train.seed": 1}}, "grid.train.seed must be a non-empty list of values, got 1"),
        ({"grid": {"train.seed": []}}, "grid.train.seed must be a non-empty list of values"),
        ({"points": [{"model.colour": "red"}]}, "unknown config key 'model.colour'"),
        ({"points": [{"model.variant": "rnn"}]}, "model.variant='rnn' is not one of"),
        (
            {"grid": {"model.num_heads": [2, 3]}},
            "model.embed_dim=16 is not divisible by model.num_heads=3",
        ),
        ({"grid": {"train.epochs": ["many"]}}, "train.epochs must be int, got str 'many'"),
        (
            {"points": [{"experiment": "other"}]},
            "points[1].experiment: a sweep cannot set 'experiment'",
        ),
        (
            {"points": [{"model.variant": "mha"}, {"model.variant": "mha"}]},
            "points 1 and 3 are the same run",
        ),
        ({"overrides": {"train.seed": [1, 2]}}, "overrides.train.seed must be a single value"),
    ],
)
def test_bad_specs_are_rejected_naming_the_key(tmp_path, fixture_data_dir, change, message):
    spec = write_spec(tmp_path / "bad.yaml", spec_tree(fixture_data_dir, **change))
    with pytest.raises(ConfigError) as error:
        expand(load_spec(spec))
    assert message in str(error.value)
    assert str(error.value).startswith(f"sweep spec {spec}")


def test_bad_spec_is_one_line_with_exit_code_2(tmp_path, fixture_data_dir):
    spec = write_spec(
        tmp_path / "bad.yaml", spec_tree(fixture_data_dir, grid={"model.dropout": [1.5]})
    )
    result = invoke("sweep", str(spec), "--dry-run")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"classify: error: sweep spec {spec}, point 1 (")
    assert "model.dropout must be in [0, 1), got 1.5" in result.output
    missing = invoke("sweep", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "not found" in missing.output


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
    assert [line.split(" ")[0] + " " + line.split(" ")[1] for line in steps] == [
        "skip [1/4]",
        "skip [2/4]",
        "resume [3/4]",
        "train [4/4]",
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
        for key, value in point.config.flat().items():
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
    steps = lines_starting(result.output, "skip", "resume", "train")
    assert [line.split(" ")[0] for line in steps] == ["skip"] * 4
    assert "trained 0, resumed 0, skipped 4" in result.output
    assert len(children(parent)) == before
    assert MlflowClient().get_run(parent.info.run_id).info.status == "FINISHED"


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
    assert lines[1] == "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    assert cells[:3] == ["attention", "1,2", "d=16 pos=none"]
    mean, std = cells[4].split(" ± ")
    assert float(mean) >= 0 and float(std) >= 0


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


def test_compare_errors_are_one_line(store):
    both = invoke("compare", "--sweep", "abc", "--experiment", "x")
    assert both.exit_code == 2
    assert both.output == "classify: error: give --experiment or --sweep, not both\n"
    missing = invoke("compare", "--sweep", "0123456789abcdef0123456789abcdef")
    assert missing.exit_code == 2 and missing.output.startswith("classify: error: no run ")
    unknown = invoke("compare", "--experiment", "no-such-experiment")
    assert unknown.exit_code == 2
    assert unknown.output == (f"classify: error: no experiment 'no-such-experiment' in {store}\n")


# --------------------------------------------------------------------------- pure functions


def test_group_labels_name_what_tells_groups_apart():
    base = {"model.variant": "encoder", "model.position": "sinusoidal", "model.num_layers": "2"}
    keys = [
        group_key(base),
        group_key({**base, "model.position": "learned"}),
        group_key({**base, "model.variant": "mha"}),
        group_key({**base, "train.seed": "7"}),  # the seed does not make a group
    ]
    labels = group_labels(keys)
    assert labels[keys[0]] == "encoder (position=sinusoidal)"
    assert labels[keys[1]] == "encoder (position=learned)"
    assert labels[keys[2]] == "mha"
    assert keys[3] == keys[0]


def test_key_params_per_variant():
    params = {
        "model.embed_dim": "32",
        "model.num_heads": "4",
        "model.ff_dim": "64",
        "model.num_layers": "2",
        "model.position": "learned",
        "model.norm_first": "True",
    }
    assert key_params({**params, "model.variant": "attention"}) == "d=32 pos=none"
    assert key_params({**params, "model.variant": "mha"}) == "d=32 h=4 pos=none"
    assert (
        key_params({**params, "model.variant": "block_pos"}) == "d=32 h=4 ff=64 pos=learned pre-LN"
    )
    assert key_params({**params, "model.variant": "encoder"}) == (
        "d=32 h=4 ff=64 L=2 pos=learned pre-LN"
    )


def test_formats_of_one_row():
    row = ComparisonRow(
        variant="encoder (position=learned)",
        seeds=[3],
        key_params="d=16 h=2 ff=64 L=2 pos=learned",
        best_val_accuracy=0.87654,
        test_accuracy_mean=0.87123,
        test_accuracy_std=0.0,
        epochs=7.0,
        train_time_s=512.34,
        parameters=171234,
        run_ids=["r1"],
    )
    table = format_comparison([row], "table").splitlines()
    assert table[1].split("  ")[0] == "encoder (position=learned)"
    assert "0.8765" in table[1] and "0.8712 ± 0.0000" in table[1] and "171,234" in table[1]
    assert format_comparison([row], "markdown").splitlines()[2] == (
        "| encoder (position=learned) | 3 | d=16 h=2 ff=64 L=2 pos=learned | 0.8765 | "
        "0.8712 ± 0.0000 | 7.0 | 512.3 | 171,234 |"
    )
    assert format_comparison([row], "csv").splitlines()[1] == (
        "encoder (position=learned),3,d=16 h=2 ff=64 L=2 pos=learned,0.87654,0.87123,0.0,7.0,"
        "512.34,171234"
    )
    assert json.loads(format_comparison([row], "json"))[0]["test_accuracy_std"] == 0.0
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        format_comparison([row], "xml")
