"""A run SIGKILLed at any instant resumes: from its last whole checkpoint, or from the start.

The kills land inside the artefact uploads (a hook in the killed process, not a timer), so
each test reaches its instant on any CPU; ``tests/runs/test_checkpoint_slots.py`` walks every
instant of the checkpoint store itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import classifier.training.finish as finish
from classifier.config.schema import load_config
from classifier.training.train import train
from tests.conftest import empty_store, fixture_data_overrides

#: Runs ``classify`` with ``mlflow.log_artifact`` wrapped: after the upload of a file named
#: KILL_AFTER into an artefact folder starting with KILL_UNDER (the KILL_NTH such upload),
#: the process SIGKILLs itself.
KILLING_CLASSIFY = textwrap.dedent(
    """
    import os, signal, sys
    import mlflow

    name, folder, nth = os.environ["KILL_AFTER"], os.environ["KILL_UNDER"], int(os.environ["KILL_NTH"])
    real, seen = mlflow.log_artifact, []

    def log_artifact(local_path, artifact_path=None, **kwargs):
        real(local_path, artifact_path, **kwargs)
        if os.path.basename(local_path) == name and (artifact_path or "").startswith(folder):
            seen.append(local_path)
            if len(seen) == nth:
                os.kill(os.getpid(), signal.SIGKILL)

    mlflow.log_artifact = log_artifact
    from classifier.cli.main import main
    sys.argv = ["classify", *sys.argv[1:]]
    main()
    """
)


@pytest.fixture
def store(tmp_path, monkeypatch, store_template):
    uri = empty_store(store_template, tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    return uri


def overrides(fixture_data_dir, epochs: int = 3) -> list[str]:
    return [
        *fixture_data_overrides(fixture_data_dir, 16),
        "model.variant=block",
        f"train.epochs={epochs}",
        "train.early_stopping_patience=null",
        "train.registered_model=kill-test",
        "experiment=kill-tests",
    ]


def killed_run(store: str, sets: list[str], after: str, under: str, nth: int = 1) -> str:
    """Run ``classify train`` until the hook SIGKILLs it; return the run's id."""
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": store,
        "KILL_AFTER": after,
        "KILL_UNDER": under,
        "KILL_NTH": str(nth),
    }
    args = [arg for item in sets for arg in ("--set", item)]
    process = subprocess.run(
        [sys.executable, "-c", KILLING_CLASSIFY, "train", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert process.returncode == -9, process.stderr[-3000:]
    return process.stdout.split("run ", 1)[1].split(":", 1)[0]


def steps(run_id: str, name: str) -> list[int]:
    return [metric.step for metric in MlflowClient().get_metric_history(run_id, name)]


def test_a_kill_inside_the_first_checkpoint_upload_resumes(store, fixture_data_dir):
    """The issue's reproduction: SIGKILL once the first checkpoint's ``last.keras`` is in the
    store and before the rest of that checkpoint is; the resume used to die with
    ``FileNotFoundError`` (no ``vocabulary.txt``)."""
    run_id = killed_run(store, overrides(fixture_data_dir), "last.keras", "checkpoint")
    assert MlflowClient().get_run(run_id).info.status == "RUNNING"  # as a SIGKILL leaves it
    assert steps(run_id, "val_accuracy") == []

    lines: list[str] = []
    result = train(resume=run_id, echo=lines.append)
    assert lines[0].endswith("resuming after epoch 0")  # no whole checkpoint: from the start
    assert result.epochs_run == 3
    for name in ("val_accuracy", "train_loss", "epoch_time_s"):
        assert steps(run_id, name) == [1, 2, 3], name
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"


def test_a_kill_inside_the_second_checkpoint_upload_resumes_after_epoch_1(store, fixture_data_dir):
    run_id = killed_run(store, overrides(fixture_data_dir), "last.keras", "checkpoint", nth=2)
    assert steps(run_id, "val_accuracy") == [1]
    lines: list[str] = []
    train(resume=run_id, echo=lines.append)
    assert lines[0].endswith("resuming after epoch 1")
    assert steps(run_id, "val_accuracy") == [1, 2, 3]
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"


def test_a_run_killed_after_registering_resumes_without_a_second_version(
    store, fixture_data_dir, monkeypatch
):
    """A kill between the registration and the run's end (here: an error where the alias is
    set) used to register the model again on resume. The refit is redone on resume; its
    per-epoch metrics keep one value a step."""
    cfg = load_config(None, [*overrides(fixture_data_dir, epochs=2), "train.refit=true"])
    real = finish.describe_version

    def crash(*args, **kwargs):
        raise RuntimeError("killed while describing the version")

    monkeypatch.setattr(finish, "describe_version", crash)
    lines: list[str] = []
    with pytest.raises(RuntimeError, match="killed while describing"):
        train(cfg, echo=lines.append)
    run_id = lines[0].split()[1].rstrip(":")
    versions = MlflowClient().search_model_versions("name = 'kill-test'")
    assert [v.run_id for v in versions] == [run_id]

    monkeypatch.setattr(finish, "describe_version", real)
    result = train(resume=run_id, echo=lambda line: None)
    versions = MlflowClient().search_model_versions("name = 'kill-test'")
    assert [str(v.version) for v in versions] == ["1"] and result.model_version == "1"
    assert MlflowClient().get_model_version("kill-test", "1").tags["variant"] == "block"
    for name in ("refit_train_loss", "refit_epoch_time_s", "val_accuracy"):
        assert steps(run_id, name) == [1, 2], name
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"
