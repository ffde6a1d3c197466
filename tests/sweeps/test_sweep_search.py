"""A ``search:`` spec on the fixture data: 4 trials drawn by TPE, each a child run, and the
parent with the best trial, the optimization history and the parameter importances."""

from __future__ import annotations

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from tests.sweep_helpers import invoke, spec_tree, write_spec


@pytest.fixture(scope="module")
def searched(store, fixture_data_dir, tmp_path_factory):
    tree = spec_tree(fixture_data_dir, name="search", experiment="sweep-search")
    del tree["points"], tree["grid"]
    tree["overrides"]["train.epochs"] = 1
    tree["search"] = {
        "trials": 4,
        "seed": 3,
        "space": {
            "train.learning_rate": {"low": 1e-3, "high": 3e-2, "log": True},
            "model.dropout": {"low": 0.0, "high": 0.5},
        },
    }
    spec = write_spec(tmp_path_factory.mktemp("search") / "search.yaml", tree)
    return spec, invoke("sweep", str(spec))


def test_a_search_runs_its_trials_and_logs_the_best(searched, store):
    spec, result = searched
    assert result.exit_code == 0, result.output
    assert [
        line.split(" ")[1] for line in result.output.splitlines() if line.startswith("train [")
    ] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    mlflow.set_tracking_uri(store)
    client = MlflowClient()
    experiment = client.get_experiment_by_name("sweep-search")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in runs if "sweep_spec_hash" in run.data.tags]
    children = [run for run in runs if run.data.tags.get("sweep_parent") == parent.info.run_id]
    assert len(children) == 4
    rates = {run.data.params["train.learning_rate"] for run in children}
    assert len(rates) == 4  # four different draws
    best = max(children, key=lambda run: run.data.metrics["best_val_accuracy"])
    assert parent.data.metrics["best_val_accuracy"] == pytest.approx(
        best.data.metrics["best_val_accuracy"]
    )
    (chosen,) = [
        run for run in children if run.data.tags["sweep_point"] == parent.data.tags["best_trial"]
    ]
    assert chosen.data.metrics["best_val_accuracy"] == best.data.metrics["best_val_accuracy"]
    artefacts = {item.path for item in client.list_artifacts(parent.info.run_id)}
    assert {"optimization_history.png", "param_importances.png", "comparison.csv"} <= artefacts


def test_status_of_a_finished_search(searched, store):
    spec, _ = searched
    result = invoke("sweep", str(spec), "--status")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == "4 points: 0 waiting, 0 running, 4 finished, 0 failed"
    assert [line.split()[:3] for line in lines[2:]] == [
        [str(n), "trial", str(n)] for n in range(1, 5)
    ]
    assert all("best val_accuracy " in line for line in lines[2:]), result.output
