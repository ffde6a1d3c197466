"""Many training runs from one sweep spec, grouped under one MLflow parent run.

Each point of the spec (:mod:`classifier.sweeps.spec`) is a full ``classify train`` run, logged
as a nested child of the sweep's parent run. Running the same spec again finds that parent
(tag ``sweep_spec_hash``), skips the points that already have a FINISHED child with the same
config hash, resumes KILLED or FAILED children from their checkpoints and trains the rest. A
child stopped before its training began holds nothing to resume: it is deleted (by the process
that stops, or by a later sweep once that process has died), and its point is trained afresh. At
the end the parent gets the comparison table (CSV and Markdown, :mod:`classifier.sweeps.compare`), a
bar chart of test accuracy per variant and a chart of validation accuracy per epoch, the
metrics ``best_val_accuracy`` and ``best_test_accuracy`` and the tag ``best_point``: the group
with the highest mean validation accuracy (the test split never chooses).

Example (trains every point: minutes)::

    result = run_sweep(load_spec("configs/sweeps/quick.yaml"))
    print(format_comparison(result.rows, "markdown"))
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from classifier.errors import ResumeError, RunBusy
from classifier.runs.leases import CLAIMANT_TAG, claimant_died, claimant_stamp, holder, is_live
from classifier.runs.tracking import (
    CONFIG_HASH_TAG,
    LABEL_TAG,
    PARENT_TAG,
    POINT_TAG,
    SPEC_HASH_TAG,
    configure_tracking,
    ensure_experiment,
    find_sweep_parent,
    git_commit,
    sweep_children,
)
from classifier.sweeps.compare import ComparisonRow, compare_runs, format_comparison
from classifier.sweeps.spec import SweepPoint, SweepSpec, expand, spec_hash


class SweepInterrupted(Exception):
    """A sweep was stopped with Ctrl-C: the running child and the parent are KILLED."""

    def __init__(self, run_id: str, spec_path: str | Path):
        super().__init__(
            f"interrupted: sweep run {run_id} marked KILLED, finished points are kept; "
            f"continue with: classify sweep {spec_path}"
        )
        self.run_id = run_id


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the parent run, the comparison and which points ran."""

    run_id: str
    rows: list[ComparisonRow]
    trained: list[int] = field(default_factory=list)
    resumed: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)  # being trained by another sweep process
    best: ComparisonRow | None = None


# --------------------------------------------------------------------------- running


def run_sweep(spec: SweepSpec, echo: Callable[[str], None] = print) -> SweepResult:
    """Run (or continue) a sweep: one MLflow parent run, one nested child per point.

    Points with a FINISHED child of the same config hash are skipped; KILLED or FAILED children
    are resumed from their checkpoints; the others are trained. The parent then gets the
    comparison artefacts and the best point's summary.

    Raises:
        SweepInterrupted: on Ctrl-C (the child and the parent are marked KILLED).

    Example (trains every point of a fresh sweep)::

        result = run_sweep(load_spec("configs/sweeps/quick.yaml"))
        len(result.trained) + len(result.resumed) + len(result.skipped)  # 6
    """
    import keras

    from classifier.runs.lifecycle import TrainingInterrupted, quiet_libraries
    from classifier.training.train import train

    points = expand(spec)
    configure_tracking()
    quiet_libraries()
    experiment = points[0].config.experiment
    experiment_id = ensure_experiment(experiment)
    client = MlflowClient()
    # A sweep started before the pretraining keys were added is continued too.
    found = (find_sweep_parent(experiment_id, spec_hash(points, era)) for era in (0, 1))
    previous = next((parent for parent in found if parent), None)
    if previous is None:
        previous, created = _new_parent(experiment_id, spec_hash(points), spec.name, client)
    else:
        created = False
    result = SweepResult(run_id="", rows=[])
    with mlflow.start_run(run_id=previous) as parent:
        result.run_id = run_id = parent.info.run_id
        if created:
            mlflow.log_params(
                {
                    "sweep.spec": str(spec.path),
                    "sweep.base": str(spec.base),
                    "sweep.points": len(points),
                    "sweep.grid": json.dumps(spec.grid),
                }
            )
            mlflow.log_text(spec.path.read_text(), "sweep.yaml")
        echo(
            f"sweep {spec.name}: {len(points)} points, parent run {run_id} in experiment "
            f"{experiment}" + ("" if created else " (continuing)")
        )
        try:
            for point in points:
                title = f"[{point.index}/{len(points)}] {point.name}"
                # Read afresh for every point: another sweep process may have taken it since.
                runs = _point_runs(run_id, point)
                finished = [run for run in runs if run.info.status == "FINISHED"]
                if finished:
                    echo(f"skip {title}: finished in run {finished[0].info.run_id}")
                    result.skipped.append(point.index)
                    continue
                busy = [(run.info.run_id, holder(run)) for run in runs if is_live(run)]
                if busy:
                    echo(f"skip {title}: run {busy[0][0]} is training in {busy[0][1]}")
                    result.busy.append(point.index)
                    continue
                keras.backend.clear_session()
                if runs:  # KILLED, FAILED, or RUNNING with a dead process
                    child = runs[0].info
                    echo(f"resume {title}: run {child.run_id} ({child.status})")
                    try:
                        train(resume=child.run_id, echo=echo)
                        client.update_run(child.run_id, name=point.name)
                        result.resumed.append(point.index)
                        continue
                    except RunBusy as error:
                        echo(f"skip {title}: {error}")
                        result.busy.append(point.index)
                        continue
                    except ResumeError as error:
                        echo(f"cannot resume ({error}); training the point afresh")
                        _drop_if_abandoned(runs[0], client)
                child_id = _claim_new_child(point, run_id, experiment_id, client)
                if child_id is None:
                    echo(f"skip {title}: another sweep process started it first")
                    result.busy.append(point.index)
                    continue
                echo(f"train {title} (config {point.config_hash})")
                try:
                    train(point.config, echo=echo, run_id=child_id)
                except KeyboardInterrupt:  # before the run began: nothing in it to resume
                    _drop_if_abandoned(client.get_run(child_id), client, stopping=True)
                    raise
                result.trained.append(point.index)
            result.rows = compare_runs(sweep_children(run_id), client, by_point=True)
            result.best = _log_summary(result.rows, client)
        except (TrainingInterrupted, KeyboardInterrupt):
            mlflow.end_run(status="KILLED")
            raise SweepInterrupted(run_id, spec.path) from None
    if result.rows:
        echo(format_comparison(result.rows, "table"))
    if result.best:
        best = result.best
        echo(
            f"best: {best.variant} (mean val_accuracy {best.best_val_accuracy:.4f}, "
            f"test_accuracy {best.test_accuracy_mean:.4f} ± {best.test_accuracy_std:.4f}) - "
            f"sweep run {run_id}; trained {len(result.trained)}, resumed {len(result.resumed)}, "
            f"skipped {len(result.skipped)}"
            + (f", left to other sweep processes {len(result.busy)}" if result.busy else "")
        )
    return result


def _new_parent(
    experiment_id: str, digest: str, name: str, client: MlflowClient
) -> tuple[str, bool]:
    """Make the sweep's parent run, unless another process made one for the same spec first:
    then join that one (the earliest parent wins; a later one is deleted). Returns the parent
    run id and whether this process made it."""
    tags = {SPEC_HASH_TAG: digest, "sweep_name": name, "git_commit": git_commit()}
    mine = client.create_run(experiment_id, run_name=name, tags=tags).info.run_id
    first = find_sweep_parent(experiment_id, digest, earliest=True)
    if first != mine:
        client.delete_run(mine)
    return first, first == mine


def _claim_new_child(point, parent_id: str, experiment_id: str, client: MlflowClient) -> str | None:
    """Make the child run of a point that has none; ``None`` when another sweep process made
    one for the same point first (the earliest run wins; this one is deleted)."""
    tags = {
        MLFLOW_PARENT_RUN_ID: parent_id,
        PARENT_TAG: parent_id,
        POINT_TAG: str(point.index),
        LABEL_TAG: point.label,
        CONFIG_HASH_TAG: point.config_hash,
        CLAIMANT_TAG: claimant_stamp(),
    }
    run = client.create_run(experiment_id, run_name=point.name, tags=tags)
    mine = (run.info.start_time, run.info.run_id)
    rivals = _point_runs(parent_id, point)
    if any((rival.info.start_time, rival.info.run_id) < mine for rival in rivals):
        client.delete_run(run.info.run_id)
        return None
    return run.info.run_id


def _drop_if_abandoned(run: Run, client: MlflowClient, stopping: bool = False) -> None:
    """Delete a child run that holds nothing (no artefact: its training never began) and that
    no process will go on with: this one is ``stopping``, the run was ended (KILLED,
    FAILED), or the process that made it has died. Left alone, it would keep its point from
    being claimed again."""
    if client.list_artifacts(run.info.run_id):
        return
    if stopping or run.info.status in ("KILLED", "FAILED") or claimant_died(run):
        with contextlib.suppress(MlflowException):  # another process dropped it first
            client.delete_run(run.info.run_id)


def _point_runs(parent_run_id: str, point: SweepPoint) -> list[Run]:
    """A point's child runs in a sweep (any status, newest first): those tagged with its
    config hash, or with the hash it had before the pretraining keys were added."""
    hashes = set(point.config_hashes)
    return [
        run
        for run in sweep_children(parent_run_id, finished_only=False)
        if run.data.tags.get(CONFIG_HASH_TAG) in hashes
    ]


def _log_summary(rows: list[ComparisonRow], client: MlflowClient) -> ComparisonRow | None:
    """Log the comparison artefacts and the best group's metrics on the active (parent) run."""
    if not rows:
        return None
    from classifier import plots

    with tempfile.TemporaryDirectory(prefix="classify-sweep-") as folder:
        folder = Path(folder)
        (folder / "comparison.csv").write_text(format_comparison(rows, "csv") + "\n")
        (folder / "comparison.md").write_text(format_comparison(rows, "markdown") + "\n")
        labels = [row.variant for row in rows]
        plots.plot_test_accuracy_by_variant(
            folder / "test_accuracy_by_variant.png",
            labels,
            [row.test_accuracy_mean for row in rows],
            [row.test_accuracy_std for row in rows],
            values=[row.test_accuracies for row in rows],
        )
        plots.plot_validation_accuracy_by_variant(
            folder / "val_accuracy_by_variant.png",
            {row.variant: row.val_accuracy_curves for row in rows},
        )
        mlflow.log_artifacts(str(folder))
    best = max(rows, key=lambda row: row.best_val_accuracy)
    mlflow.log_metrics(
        {
            "best_val_accuracy": best.best_val_accuracy,
            "best_test_accuracy": best.test_accuracy_mean,
            "points_finished": sum(len(row.run_ids) for row in rows),
        }
    )
    best_run = max(
        best.run_ids, key=lambda run_id: client.get_run(run_id).data.metrics["best_val_accuracy"]
    )
    mlflow.set_tags({"best_point": best.variant, "best_run_id": best_run})
    return best
