"""One point of a sweep: its MLflow child run, trained, continued from its checkpoint, or read.

A point's child run is found again by its config hash under the parent run, so the worker that
takes a point over (after a worker died or was stopped in it) continues that run, never a
second one.

Example (inside a worker, for the point a trial gave it)::

    best_val = train_point(sweep, point, trial)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from classifier.errors import ResumeError, RunBusy, SweepError
from classifier.runs.leases import RUN_HEARTBEAT_S, STALE_AFTER_S
from classifier.runs.tracking import (
    CONFIG_HASH_TAG,
    LABEL_TAG,
    PARENT_TAG,
    POINT_TAG,
    sweep_children,
)
from classifier.sweeps.spec import SweepPoint


def train_point(sweep, point: SweepPoint, trial) -> float:
    """Train the point, or continue its child run, or (finished already) read it; return its
    best validation accuracy."""
    import keras

    from classifier.training.train import train

    client, title, result = sweep.client, sweep.title(point), sweep.result
    runs = point_runs(sweep.parent_id, point)
    finished = [run for run in runs if run.info.status == "FINISHED"]
    if finished:
        run_id = finished[0].info.run_id
        sweep.echo(f"skip {title}: finished in run {run_id}")
        result.skipped.append(point.index)
        trial.set_user_attr("run_id", run_id)
        return _best_val(client, run_id)
    keras.backend.clear_session()
    if runs:  # KILLED, FAILED, or RUNNING with a dead worker: its checkpoint goes on
        child = runs[0].info
        trial.set_user_attr("run_id", child.run_id)
        sweep.echo(f"resume {title}: run {child.run_id} ({child.status})")
        try:
            _resume_when_free(child.run_id, sweep.echo)
            client.update_run(child.run_id, name=point.name)
            result.resumed.append(point.index)
            return _best_val(client, child.run_id)
        except RunBusy:
            raise
        except ResumeError as error:  # nothing in it to continue
            sweep.echo(f"cannot resume ({error}); training the point afresh")
            _drop_if_empty(runs[0], client)
    child_id = new_child(point, sweep.parent_id, sweep.experiment_id, client)
    trial.set_user_attr("run_id", child_id)
    sweep.echo(f"train {title} (config {point.config_hash})")
    try:
        train(point.config, echo=sweep.echo, run_id=child_id)
    except KeyboardInterrupt:  # before the run began: nothing in it to resume
        _drop_if_empty(client.get_run(child_id), client)
        raise
    result.trained.append(point.index)
    return _best_val(client, child_id)


def _resume_when_free(run_id: str, echo: Callable[[str], None]) -> None:
    """Resume the run; while the MLflow lease of a worker that died on another machine is still
    fresh (at most :data:`STALE_AFTER_S` seconds), wait for it to go stale."""
    from classifier.training.train import train

    deadline = time.monotonic() + STALE_AFTER_S + 2 * RUN_HEARTBEAT_S
    while True:
        try:
            train(resume=run_id, echo=echo)
            return
        except RunBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(5)


def _best_val(client: MlflowClient, run_id: str) -> float:
    value = client.get_run(run_id).data.metrics.get("best_val_accuracy")
    if value is None:
        raise SweepError(f"run {run_id} ended without a best_val_accuracy")
    return float(value)


def new_child(point: SweepPoint, parent_id: str, experiment_id: str, client: MlflowClient) -> str:
    """Make the child run of a point that has none (the study gave this worker the point)."""
    tags = {
        MLFLOW_PARENT_RUN_ID: parent_id,
        PARENT_TAG: parent_id,
        POINT_TAG: str(point.index),
        LABEL_TAG: point.label,
        CONFIG_HASH_TAG: point.config_hash,
    }
    return client.create_run(experiment_id, run_name=point.name, tags=tags).info.run_id


def _drop_if_empty(run: Run, client: MlflowClient) -> None:
    """Delete a point's child run that holds nothing (its training never began), so that the
    point is trained afresh in a run of its own."""
    if client.list_artifacts(run.info.run_id):
        return
    with contextlib.suppress(MlflowException):  # another worker dropped it first
        client.delete_run(run.info.run_id)


def point_runs(parent_run_id: str, point: SweepPoint) -> list[Run]:
    """A point's child runs in a sweep (any status, newest first): those tagged with its
    config hash, or with the hash it had before the pretraining keys were added."""
    hashes = set(point.config_hashes)
    return [
        run
        for run in sweep_children(parent_run_id, finished_only=False)
        if run.data.tags.get(CONFIG_HASH_TAG) in hashes
    ]
