"""What resuming a run needs from MLflow, for training and pretraining alike: the run's own
config and last checkpoint, the per-epoch metrics that a hard kill kept from the store, and
the order a checkpoint is logged in.

Example (resuming a run)::

    cfg, checkpoint = load_resume_state(run_id, workdir, "checkpoint")  # checkpoint may be None
    log_missing_metrics(run_id, progress.history)  # inside the resumed run
    log_checkpoint(folder, "checkpoint")  # after each epoch, progress.json last
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import yaml

from classifier.config.schema import Config, from_dict
from classifier.errors import ResumeError

PRETRAIN_TAG = "pretrain_objective"  # on every pretraining run (and on no training run)
PROGRESS_FILE = "progress.json"  # in a checkpoint folder: the epochs it holds


def log_checkpoint(folder: Path, artifact_path: str) -> None:
    """Log a checkpoint folder's files under ``artifact_path``, its ``progress.json`` last.

    A process killed part-way (``kill -9``; stop signals wait for the whole checkpoint) then
    leaves at worst the new model beside the old progress, so that a resume trains one epoch
    more rather than skip one.
    """
    files = (path for path in folder.iterdir() if path.is_file())
    for path in sorted(files, key=lambda path: (path.name == PROGRESS_FILE, path.name)):
        mlflow.log_artifact(str(path), artifact_path)


def load_resume_state(
    run_id: str, workdir: Path, checkpoint_dir: str, pretraining: bool = False
) -> tuple[Config, Path | None]:
    """The run's config and its downloaded checkpoint folder (None when no epoch had ended).

    Raises:
        ResumeError: the run finished, has no ``config.yaml``, or is a pretraining run when
            ``pretraining`` is False (a training run when it is True).
    """
    client = mlflow.tracking.MlflowClient()
    run = client.get_run(run_id)  # it exists: leases.claimed checked
    if run.info.status == "FINISHED":
        raise ResumeError(f"run {run_id} already finished; nothing to resume")
    if (PRETRAIN_TAG in run.data.tags) != pretraining:
        kind, command = ("training", "train") if pretraining else ("pretraining", "pretrain")
        raise ResumeError(
            f"run {run_id} is a {kind} run; continue it with: classify {command} --resume {run_id}"
        )
    names = {a.path for a in client.list_artifacts(run_id)}
    if "config.yaml" not in names:
        raise ResumeError(f"run {run_id} has no config.yaml artefact; it cannot be resumed")
    config_path = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path="config.yaml", dst_path=str(workdir)
    )
    cfg = from_dict(yaml.safe_load(Path(config_path).read_text()))
    if checkpoint_dir not in names:
        return cfg, None
    path = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path=checkpoint_dir, dst_path=str(workdir / "resumed")
    )
    return cfg, Path(path)


def log_missing_metrics(run_id: str, history: dict[str, list[float]]) -> None:
    """Log the metrics of checkpointed epochs that the store lacks (a SIGKILL can fall between
    an epoch's checkpoint and its metrics), so that the history stays contiguous."""
    client = mlflow.tracking.MlflowClient()
    for name, values in history.items():
        logged = {metric.step for metric in client.get_metric_history(run_id, name)}
        for step, value in enumerate(values, start=1):
            if step not in logged:
                mlflow.log_metric(name, value, step=step)
