"""A sweep stopped between claiming a point and training it: the empty child run it leaves
must not keep the point from being trained by the next sweep."""

from __future__ import annotations

import subprocess

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import classifier.training.train as training
from classifier.runs.leases import CLAIMANT_TAG
from classifier.sweeps.run import _claim_new_child
from classifier.sweeps.spec import expand, load_spec
from tests.sweep_helpers import invoke, one_point_spec


def children(experiment: str) -> list:
    experiment_id = MlflowClient().get_experiment_by_name(experiment).experiment_id
    return mlflow.search_runs([experiment_id], "tags.sweep_point = '1'", output_format="list")


def stop_while_loading_data(spec) -> str:
    """Run the sweep with Ctrl-C arriving while its point reads the reviews; the parent id."""

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training, "load_raw_splits", stop)
        result = invoke("sweep", str(spec))
    assert result.exit_code == 130, result.output
    return result.stderr.split("sweep run ")[1].split()[0]


def test_a_point_stopped_before_training_leaves_no_child_and_trains_next_time(
    store, fixture_data_dir, tmp_path
):
    spec = one_point_spec(tmp_path, fixture_data_dir, "claims-stopped")
    stop_while_loading_data(spec)
    mlflow.set_tracking_uri(store)
    assert children("claims-stopped") == []
    again = invoke("sweep", str(spec))
    assert again.exit_code == 0, again.output
    assert "train [1/1]" in again.output and "skip [1/1]" not in again.output
    assert [run.info.status for run in children("claims-stopped")] == ["FINISHED"]


def test_an_empty_child_whose_sweep_process_died_is_replaced(store, fixture_data_dir, tmp_path):
    spec = one_point_spec(tmp_path, fixture_data_dir, "claims-dead")
    parent_id = stop_while_loading_data(spec)
    mlflow.set_tracking_uri(store)
    # What a hard kill (SIGKILL) between claiming the point and training it leaves behind.
    client = MlflowClient()
    (point,) = expand(load_spec(spec))
    experiment_id = client.get_run(parent_id).info.experiment_id
    empty = _claim_new_child(point, parent_id, experiment_id, client)
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = client.get_run(empty).data.tags[CLAIMANT_TAG].split()[0]
    client.set_tag(empty, CLAIMANT_TAG, f"{host} {dead.pid}")
    again = invoke("sweep", str(spec))
    assert again.exit_code == 0, again.output
    assert f"resume [1/1] attention seed=1: run {empty} (RUNNING)" in again.output
    assert "train [1/1]" in again.output
    (finished,) = children("claims-dead")
    assert finished.info.status == "FINISHED" and finished.info.run_id != empty
