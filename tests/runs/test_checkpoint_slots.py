"""A checkpoint in the store is whole or absent, whatever instant its process dies at.

Three epochs of checkpoints are logged the way every run logs them
(:func:`~classifier.runs.resume.log_checkpoint`), into a real SQLite store, and the process
"dies" at each upload in turn: before the file is copied, or with half of it copied (a torn
file). The store is then exactly what a ``kill -9`` at that instant leaves, and the resume must
find the newest checkpoint that was whole before it, never a mix of two epochs.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from classifier.runs.resume import drop_checkpoint, log_checkpoint, newest_whole_checkpoint

EPOCHS = 3


class Killed(BaseException):
    """The process ends here: nothing after it runs (nothing catches a BaseException here)."""


def write_epoch(folder: Path, epoch: int) -> None:
    """What a run's checkpoint folder holds after ``epoch``: the model and progress change each
    epoch; best weights appear at epoch 2 (a folder only gains files)."""
    (folder / "vocabulary.txt").write_text("[UNK]\nthe\nfilm")
    (folder / "last.keras").write_bytes(f"model of epoch {epoch}\n".encode() * 5000)
    (folder / "progress.json").write_text(json.dumps({"epoch": epoch}))
    if epoch >= 2:
        (folder / "best.weights.h5").write_bytes(f"best of epoch {epoch}\n".encode() * 3000)


def uploads_per_epoch() -> list[int]:
    """How many files each epoch uploads: its files, then the manifest."""
    return [3 + 1, 4 + 1, 4 + 1]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """One store for the module (creating one takes about a second); a run per test."""
    folder = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", uri)
        mlflow.set_tracking_uri(uri)
        yield MlflowClient().create_experiment("slots", artifact_location=str(folder / "runs"))


@pytest.fixture
def run_id(experiment):
    return MlflowClient().create_run(experiment).info.run_id


def checkpoint_epochs(run_id: str, folder: Path, die_at: int | None, torn: bool) -> None:
    """Log EPOCHS checkpoints of ``run_id``; the ``die_at``-th upload (from 1) dies, before its
    copy or (``torn``) after half of the file is in the store."""
    real, count = mlflow.log_artifact, [0]

    def log_artifact(local_path, artifact_path=None, **kwargs):
        count[0] += 1
        if count[0] == die_at:
            if torn:
                whole = Path(local_path).read_bytes()
                half = folder.parent / "torn" / Path(local_path).name
                half.parent.mkdir(exist_ok=True)
                half.write_bytes(whole[: len(whole) // 2])
                real(str(half), artifact_path, **kwargs)
            raise Killed
        return real(local_path, artifact_path, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mlflow, "log_artifact", log_artifact)
        with mlflow.start_run(run_id=run_id):
            for epoch in range(1, EPOCHS + 1):
                write_epoch(folder, epoch)
                log_checkpoint(folder, "checkpoint", epoch)


def assert_is_epoch(path: Path | None, epoch: int) -> None:
    if epoch == 0:
        assert path is None
        return
    assert json.loads((path / "progress.json").read_text()) == {"epoch": epoch}
    assert (path / "last.keras").read_bytes() == f"model of epoch {epoch}\n".encode() * 5000
    assert (path / "vocabulary.txt").read_text() == "[UNK]\nthe\nfilm"
    best = path / "best.weights.h5"
    if epoch >= 2:
        assert best.read_bytes() == f"best of epoch {epoch}\n".encode() * 3000
    else:
        assert not best.exists()


KILLS = [
    (upload, torn) for upload in range(1, sum(uploads_per_epoch()) + 1) for torn in (False, True)
]


@pytest.mark.parametrize(
    ("die_at", "torn"), KILLS, ids=[f"upload{n}-{'torn' if t else 'clean'}" for n, t in KILLS]
)
def test_a_kill_at_any_upload_leaves_the_last_whole_checkpoint(run_id, tmp_path, die_at, torn):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    with pytest.raises(Killed):
        checkpoint_epochs(run_id, folder, die_at, torn)
    # The epoch whose manifest went in whole before the kill: an epoch is whole once its
    # last upload, the manifest, is done.
    ends = [sum(uploads_per_epoch()[: epoch + 1]) for epoch in range(EPOCHS)]
    whole = sum(1 for end in ends if end < die_at)
    assert_is_epoch(newest_whole_checkpoint(run_id, "checkpoint", tmp_path / "resumed"), whole)


def test_with_no_kill_the_last_epoch_is_read(run_id, tmp_path):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    checkpoint_epochs(run_id, folder, None, False)
    assert_is_epoch(newest_whole_checkpoint(run_id, "checkpoint", tmp_path / "resumed"), EPOCHS)
    listed = {a.path for a in MlflowClient().list_artifacts(run_id, "checkpoint")}
    assert listed == {"checkpoint/odd", "checkpoint/even"}


def test_a_checkpoint_logged_before_the_slots_is_still_read(run_id, tmp_path):
    """Runs checkpointed before 2026-11-26 hold their files directly in ``checkpoint/``."""
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    write_epoch(folder, 2)
    with mlflow.start_run(run_id=run_id):
        mlflow.log_artifacts(str(folder), "checkpoint")
    assert_is_epoch(newest_whole_checkpoint(run_id, "checkpoint", tmp_path / "resumed"), 2)


def test_a_finished_runs_checkpoint_is_dropped_and_nothing_else(run_id, tmp_path):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    checkpoint_epochs(run_id, folder, None, False)
    with mlflow.start_run(run_id=run_id):
        mlflow.log_text("kept", "config.yaml")
    assert drop_checkpoint(run_id, "checkpoint") is None
    assert [a.path for a in MlflowClient().list_artifacts(run_id)] == ["config.yaml"]
    assert newest_whole_checkpoint(run_id, "checkpoint", tmp_path / "resumed") is None
    assert drop_checkpoint(run_id, "checkpoint") is None  # nothing left: nothing to say


def test_a_store_that_cannot_delete_keeps_the_checkpoint_and_says_why(
    run_id, tmp_path, monkeypatch
):
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    checkpoint_epochs(run_id, folder, None, False)

    class ReadOnly:
        def __init__(self, uri):
            pass

        def delete_artifacts(self, path):
            raise PermissionError(f"[Errno 13] Permission denied: '{path}'")

    import mlflow.store.artifact.artifact_repository_registry as registry

    with monkeypatch.context() as patch:
        patch.setattr(registry, "get_artifact_repository", ReadOnly)
        why = drop_checkpoint(run_id, "checkpoint")
    assert why == "PermissionError: [Errno 13] Permission denied: 'checkpoint'"
    assert_is_epoch(newest_whole_checkpoint(run_id, "checkpoint", tmp_path / "resumed"), EPOCHS)
