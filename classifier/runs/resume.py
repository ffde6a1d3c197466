"""What resuming a run needs from MLflow, for training and pretraining alike: the run's own
config and last whole checkpoint, the per-epoch metrics that a hard kill kept from the store,
and how a checkpoint is logged so that it is whole or absent.

A checkpoint goes to one of two slots of the run's ``checkpoint/`` artefacts, ``odd`` or
``even`` by its epoch, so that the slot being written is never the last whole one. Its files
are logged first, then ``manifest.json`` (the epoch and each file's SHA-256): a slot counts only
when its manifest is whole and every file matches it. A process killed at any instant
(``kill -9`` during an upload, a file half copied) leaves the other slot whole, or none before
the first epoch's manifest, and a resume continues from the newest whole slot, or from the
start. Epoch metrics are logged after the manifest, so no logged epoch is ever lost.

Example (resuming a run)::

    cfg, checkpoint = load_resume_state(run_id, workdir, "checkpoint")  # checkpoint may be None
    log_missing_metrics(run_id, progress.history)  # inside the resumed run
    log_checkpoint(folder, "checkpoint", epoch)  # after each epoch, manifest.json last
    drop_checkpoint(run_id, "checkpoint")  # once the run has finished
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import mlflow
import yaml
from mlflow.exceptions import MlflowException

from classifier.config.schema import Config, from_dict
from classifier.errors import ConfigError, ResumeError, first_line

PRETRAIN_TAG = "pretrain_objective"  # on every pretraining run (and on no training run)
PROGRESS_FILE = "progress.json"  # in a checkpoint folder: the epochs it holds
MANIFEST_FILE = "manifest.json"  # in a checkpoint slot, logged last: its epoch and files
SLOTS = ("even", "odd")  # epoch N's checkpoint goes to SLOTS[N % 2]
#: The files every checkpoint holds (a subclass may add more, listed in the manifest).
REQUIRED_FILES = ("vocabulary.txt", "last.keras", PROGRESS_FILE)


def log_checkpoint(folder: Path, artifact_path: str, epoch: int) -> None:
    """Log epoch ``epoch``'s checkpoint folder into its slot of ``artifact_path``: every file,
    then ``manifest.json`` naming them with their SHA-256 (the slot is whole once it is in).

    Example (after epoch 3, into ``checkpoint/odd``)::

        log_checkpoint(Path("work/checkpoint"), "checkpoint", 3)
    """
    slot = f"{artifact_path}/{SLOTS[epoch % 2]}"
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != MANIFEST_FILE)
    manifest = {"epoch": epoch, "files": {path.name: file_sha256(path) for path in files}}
    for path in files:
        mlflow.log_artifact(str(path), slot)
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, sort_keys=True))
    mlflow.log_artifact(str(folder / MANIFEST_FILE), slot)


def drop_checkpoint(run_id: str, artifact_path: str) -> str | None:
    """Delete the ``artifact_path`` artefacts of a finished run: nothing resumes a finished run
    (:func:`load_resume_state` refuses it), and the checkpoint is the model twice over with its
    optimizer's moments (about 900 MB of ``make train``'s 1.8 GB). Returns None, or one line
    saying why they stay (a store that deletes nothing, a server gone).

    Example (after the run has ended)::

        drop_checkpoint(run_id, "checkpoint")  # None: deleted
    """
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    try:
        uri = mlflow.tracking.MlflowClient().get_run(run_id).info.artifact_uri
        get_artifact_repository(uri).delete_artifacts(artifact_path)
    except Exception as error:  # noqa: BLE001 - any store's failure leaves the run as it is
        return f"{type(error).__name__}: {first_line(error)}"
    return None


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex), read a megabyte at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def whole_epoch(folder: Path) -> int | None:
    """The epoch of the checkpoint slot downloaded to ``folder`` if it is whole (its manifest
    parses, lists the required files, and every file it lists has its SHA-256), else None.
    Files the manifest does not list (left from an older epoch) are removed."""
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
        epoch, files = int(manifest["epoch"]), dict(manifest["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not set(REQUIRED_FILES) <= set(files):
        return None
    for name, digest in files.items():
        path = folder / name
        if not path.is_file() or file_sha256(path) != digest:
            return None
    for path in folder.iterdir():
        if path.name not in files and path.name != MANIFEST_FILE:
            path.unlink()
    return epoch


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
    try:
        cfg = from_dict(yaml.safe_load(Path(config_path).read_text()))
    except (yaml.YAMLError, ConfigError, TypeError) as error:  # killed while it was logged
        raise ResumeError(
            f"run {run_id} has no whole config.yaml ({first_line(error)}); it cannot be resumed"
        ) from None
    if checkpoint_dir not in names:
        return cfg, None
    return cfg, newest_whole_checkpoint(run_id, checkpoint_dir, workdir / "resumed")


def newest_whole_checkpoint(run_id: str, checkpoint_dir: str, folder: Path) -> Path | None:
    """The run's newest whole checkpoint, downloaded under ``folder``, or None where there is
    none (killed inside the first one's upload: the run starts from the beginning).

    A run checkpointed before the slots (its files directly in ``checkpoint/``) is taken as it
    is when it holds every required file: those runs logged ``progress.json`` last."""
    client = mlflow.tracking.MlflowClient()
    listed = {Path(a.path).name for a in client.list_artifacts(run_id, checkpoint_dir)}
    whole: list[tuple[int, Path]] = []
    for slot in sorted(set(SLOTS) & listed):
        try:
            path = Path(
                mlflow.artifacts.download_artifacts(
                    run_id=run_id,
                    artifact_path=f"{checkpoint_dir}/{slot}",
                    dst_path=str(folder / slot),
                )
            )
        except (MlflowException, OSError):  # a file the store listed but cannot give back
            continue  # (its disk filled while the slot was written): not whole
        epoch = whole_epoch(path)
        if epoch is not None:
            whole.append((epoch, path))
    if not whole and set(REQUIRED_FILES) <= listed:  # the layout before the slots
        path = folder / "flat"
        for name in listed - set(SLOTS):
            mlflow.artifacts.download_artifacts(
                run_id=run_id, artifact_path=f"{checkpoint_dir}/{name}", dst_path=str(path)
            )
        return path
    return max(whole)[1] if whole else None


def log_missing_metrics(run_id: str, history: dict[str, list[float]]) -> None:
    """Log the metrics of checkpointed epochs that the store lacks (a SIGKILL can fall between
    an epoch's checkpoint and its metrics), so that the history stays contiguous."""
    client = mlflow.tracking.MlflowClient()
    for name, values in history.items():
        logged = {metric.step for metric in client.get_metric_history(run_id, name)}
        for step, value in enumerate(values, start=1):
            if step not in logged:
                mlflow.log_metric(name, value, step=step)
