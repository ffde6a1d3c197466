"""Two ``classify sweep`` processes of one spec at once share its parent run and split the
points between them: every point is trained exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import mlflow
from mlflow.tracking import MlflowClient

from classifier.runs.tracking import CONFIG_HASH_TAG, PARENT_TAG, SPEC_HASH_TAG
from tests.sweep_helpers import EXPERIMENT, spec_tree, write_spec


def test_two_sweeps_of_one_spec_split_the_points(fixture_data_dir, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(store)
    MlflowClient().search_experiments()  # the store exists before the two processes start
    spec = write_spec(tmp_path / "tiny.yaml", spec_tree(fixture_data_dir))
    env = {**os.environ, "MLFLOW_TRACKING_URI": store, "PYTHONUNBUFFERED": "1"}
    # --threads 1: two workers on one machine take a core each, as docs/tracking.md advises.
    command = [sys.executable, "-m", "classifier", "sweep", str(spec), "--threads", "1"]
    processes = [
        subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=900) for process in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr[-3000:]

    client = MlflowClient()
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id])
    parents = [run for run in runs if SPEC_HASH_TAG in run.data.tags]
    assert len(parents) == 1  # both joined one parent run
    children = [run for run in runs if run.data.tags.get(PARENT_TAG) == parents[0].info.run_id]
    trained = Counter(run.data.tags[CONFIG_HASH_TAG] for run in children)
    assert len(trained) == 4 and set(trained.values()) == {1}  # each point once
    assert {run.info.status for run in children} == {"FINISHED"}
    started = [
        line for stdout, _ in outputs for line in stdout.splitlines() if line.startswith("train [")
    ]
    assert len(started) == 4
