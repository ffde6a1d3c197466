"""Interrupted and crashed runs: KILLED or FAILED in MLflow, checkpoint kept, resume continues."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import keras
import mlflow
import numpy as np
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

import classifier.training.train as training
from classifier.cli.main import cli
from classifier.data.pipeline import resumed_seed
from classifier.errors import ResumeError, RunBusy, TrainingDiverged
from classifier.runs.leases import HEARTBEAT_TAG, claimed, is_live
from classifier.runs.resume import newest_whole_checkpoint
from classifier.training.train import train
from tests.conftest import empty_store, fixture_data_overrides

EPOCHS = 8


@pytest.fixture
def store(tmp_path, monkeypatch, store_template):
    uri = empty_store(store_template, tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def overrides(fixture_data_dir, epochs=EPOCHS, batch_size=2) -> list[str]:
    # Many small steps (batch 2): an epoch lasts long enough to be interrupted in.
    return [
        *fixture_data_overrides(fixture_data_dir, batch_size),
        "model.variant=encoder",
        "model.num_layers=1",
        f"train.epochs={epochs}",
        "train.early_stopping_patience=null",  # every epoch runs
        "train.registered_model=imdb-resume-test",
        "experiment=resume-tests",
    ]


def checkpoint_progress(run_id: str) -> dict:
    """The progress of the run's newest whole checkpoint."""
    with tempfile.TemporaryDirectory() as folder:
        path = newest_whole_checkpoint(run_id, "checkpoint", Path(folder))
        return json.loads((path / "progress.json").read_text())


def metric_steps(run_id: str, name: str = "val_accuracy") -> list[int]:
    return sorted(m.step for m in MlflowClient().get_metric_history(run_id, name))


def test_ctrl_c_marks_the_run_killed_and_resume_continues(store, fixture_data_dir):
    sets = [arg for item in overrides(fixture_data_dir) for arg in ("--set", item)]
    env = {**os.environ, "MLFLOW_TRACKING_URI": store, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "classifier", "train", *sets],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    run_id = None
    for line in process.stdout:
        if line.startswith("run "):
            run_id = line.split()[1].rstrip(":")
        if line.startswith("epoch  2/"):
            process.send_signal(signal.SIGINT)
            break
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted: run {run_id} marked KILLED, its last checkpoint is kept; "
        f"continue with: classify train --resume {run_id}"
    )
    assert "Traceback" not in stderr
    mlflow.set_tracking_uri(store)
    assert MlflowClient().get_run(run_id).info.status == "KILLED"
    done = checkpoint_progress(run_id)["epoch"]
    assert 2 <= done < EPOCHS
    assert metric_steps(run_id) == list(range(1, done + 1))

    lines: list[str] = []
    result = train(resume=run_id, echo=lines.append)
    assert result.run_id == run_id
    assert lines[0].endswith(f"resuming after epoch {done}")
    epochs = [int(line.split()[1].split("/")[0]) for line in lines if line.startswith("epoch ")]
    assert epochs == list(range(done + 1, EPOCHS + 1))
    assert metric_steps(run_id) == list(range(1, EPOCHS + 1))
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"


def test_a_crash_marks_the_run_failed_and_resume_finishes_it(store, fixture_data_dir, monkeypatch):
    from classifier.config.schema import load_config

    cfg = load_config(None, overrides(fixture_data_dir, epochs=2, batch_size=16))
    real_evaluate = training._evaluate_and_log

    def crash(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(training, "_evaluate_and_log", crash)
    lines: list[str] = []
    with pytest.raises(RuntimeError, match="disk full"):
        train(cfg, echo=lines.append)
    run_id = lines[0].split()[1].rstrip(":")
    assert MlflowClient().get_run(run_id).info.status == "FAILED"
    assert checkpoint_progress(run_id)["epoch"] == 2

    monkeypatch.setattr(training, "_evaluate_and_log", real_evaluate)
    seeds: list[int] = []

    def spy(data_cfg, raw, vectorizer, seed):
        seeds.append(seed)
        return real_make_datasets(data_cfg, raw, vectorizer, seed=seed)

    real_make_datasets = training.make_datasets
    monkeypatch.setattr(training, "make_datasets", spy)
    resumed: list[str] = []
    result = train(resume=run_id, echo=resumed.append)
    # A new process draws tf.data's passes from the seed afresh: the resumed run shuffles with
    # a seed of its own, or its next epoch would replay epoch 1's order.
    assert seeds == [resumed_seed(cfg.train.seed, 2)] and seeds[0] != cfg.train.seed
    assert not [line for line in resumed if line.startswith("epoch ")]  # nothing left to train
    assert result.epochs_run == 2
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"
    with pytest.raises(ResumeError, match="already finished"):
        train(resume=run_id)


@pytest.mark.parametrize(
    "variant", [["model.variant=nbow"], ["model.variant=bow", "train.lazy_adam=true"]]
)
def test_an_nbow_run_resumes_with_its_optimizers_state(
    store, fixture_data_dir, monkeypatch, variant
):
    """``nbow`` trains a view over its n-gram features (``bow`` with lazy Adam too); its
    checkpoint is the classifier with the optimizer's moments and step count, and a resumed run
    goes on from them."""
    from classifier.config.schema import load_config

    extra = [*variant, "train.epochs=4", "train.keep_checkpoint=true"]  # read once finished
    cfg = load_config(None, [*overrides(fixture_data_dir, batch_size=16), *extra])
    real_epoch_end = training.EpochTracker.on_epoch_end

    def power_cut_after_epoch_2(self, epoch, logs=None):
        real_epoch_end(self, epoch, logs)
        if epoch + 1 == 2:
            raise RuntimeError("power cut")

    monkeypatch.setattr(training.EpochTracker, "on_epoch_end", power_cut_after_epoch_2)
    lines: list[str] = []
    with pytest.raises(RuntimeError, match="power cut"):
        train(cfg, echo=lines.append)
    run_id = lines[0].split()[1].rstrip(":")
    assert checkpoint_progress(run_id)["epoch"] == 2
    monkeypatch.setattr(training.EpochTracker, "on_epoch_end", real_epoch_end)
    resumed: list[str] = []
    result = train(resume=run_id, echo=resumed.append)
    assert [line.split()[1] for line in resumed if line.startswith("epoch ")] == ["3/4", "4/4"]
    assert result.epochs_run == 4
    with tempfile.TemporaryDirectory() as folder:
        path = newest_whole_checkpoint(run_id, "checkpoint", Path(folder))
        optimizer = keras.models.load_model(path / "last.keras", safe_mode=True).optimizer
        assert int(optimizer.iterations) == 4 * 8  # 120 reviews in 8 batches an epoch, 4 epochs
        moments = [optimizer._momentums[0].numpy(), optimizer._velocities[0].numpy()]
        assert all(np.any(moment) for moment in moments)


def test_resume_errors_are_one_line(store):
    result = CliRunner().invoke(cli, ["train", "--resume", "0123456789abcdef0123456789abcdef"])
    assert result.exit_code == 2
    assert result.output.startswith(
        "classify: error: no run '0123456789abcdef0123456789abcdef' in sqlite:///"
    )
    result = CliRunner().invoke(cli, ["train", "--resume", "abc", "--set", "train.epochs=2"])
    assert result.exit_code == 2
    assert result.output == (
        "classify: error: --resume continues with the run's own config; drop --config and --set\n"
    )


def start_training(store, fixture_data_dir, *extra: str) -> subprocess.Popen:
    sets = [arg for item in [*overrides(fixture_data_dir), *extra] for arg in ("--set", item)]
    env = {**os.environ, "MLFLOW_TRACKING_URI": store, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "classifier", "train", *sets],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def read_until(process: subprocess.Popen, prefix: str) -> str:
    """The run id, read from the output up to the first line starting with ``prefix``."""
    run_id = ""
    for line in process.stdout:
        if line.startswith("run "):
            run_id = line.split()[1].rstrip(":")
        if line.startswith(prefix):
            return run_id
    raise AssertionError(f"no line starting with {prefix!r}: {process.communicate()[1][-2000:]}")


@pytest.mark.parametrize(
    ("sent", "at_line"),
    [(signal.SIGTERM, "epoch  1/"), (signal.SIGTERM, "epoch  2/"), (signal.SIGHUP, "epoch  2/")],
    ids=["sigterm-epoch-1", "sigterm-epoch-2", "sighup-epoch-2"],
)
def test_a_stop_signal_keeps_each_epoch_and_its_checkpoint_whole(
    store, fixture_data_dir, sent, at_line
):
    epochs = 4
    process = start_training(store, fixture_data_dir, f"train.epochs={epochs}")
    run_id = read_until(process, at_line)
    process.send_signal(sent)  # while the epoch's line is out and its checkpoint is written
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    mlflow.set_tracking_uri(store)
    assert MlflowClient().get_run(run_id).info.status == "KILLED"
    done = checkpoint_progress(run_id)["epoch"]
    assert done >= int(at_line.split()[1].rstrip("/"))
    assert metric_steps(run_id) == list(range(1, done + 1))  # the checkpoint's epochs, once
    assert (
        stderr.strip()
        .splitlines()[-1]
        .startswith(f"interrupted: run {run_id} marked KILLED, its last checkpoint is kept;")
    )

    result = train(resume=run_id, echo=lambda line: None)
    for name in ("val_accuracy", "train_loss", "epoch_time_s"):
        assert metric_steps(run_id, name) == list(range(1, epochs + 1)), name
    # Training time counts every epoch, those before the stop too.
    run = MlflowClient().get_run(run_id)
    epoch_times = MlflowClient().get_metric_history(run_id, "epoch_time_s")
    assert run.data.metrics["train_time_s"] == pytest.approx(sum(m.value for m in epoch_times))
    assert result.epochs_run == epochs


def test_a_stop_before_the_first_epoch_ends_says_there_is_no_checkpoint(store, fixture_data_dir):
    process = start_training(store, fixture_data_dir)
    run_id = read_until(process, "run ")
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted: run {run_id} marked KILLED, no epoch had ended, so it starts from the "
        f"beginning; continue with: classify train --resume {run_id}"
    )
    mlflow.set_tracking_uri(store)
    assert metric_steps(run_id) == []


def test_a_live_run_is_refused_and_a_killed_one_resumes(store, fixture_data_dir):
    process = start_training(store, fixture_data_dir, "train.epochs=3")
    run_id = read_until(process, "epoch  1/")
    mlflow.set_tracking_uri(store)
    try:
        with pytest.raises(
            RunBusy, match=rf"run {run_id} is still training \(process {process.pid} on "
        ):
            train(resume=run_id, echo=lambda line: None)
    finally:
        process.kill()  # SIGKILL: no handler runs, the run stays RUNNING
        process.communicate(timeout=60)
    assert MlflowClient().get_run(run_id).info.status == "RUNNING"
    result = train(resume=run_id, echo=lambda line: None)
    assert result.run_id == run_id and metric_steps(run_id) == [1, 2, 3]
    versions = MlflowClient().search_model_versions("name = 'imdb-resume-test'")
    assert [v.run_id for v in versions] == [run_id]  # registered once


def test_two_claims_on_one_run_and_stale_heartbeats(store):
    mlflow.set_tracking_uri(store)
    client = MlflowClient()
    experiment = client.create_experiment("claims")
    run_id = client.create_run(experiment).info.run_id
    first = claimed(run_id)
    first.__enter__()
    with pytest.raises(RunBusy, match="being resumed by another process"), claimed(run_id):
        pass
    first.__exit__(None, None, None)
    with claimed(run_id):  # released when the first block ended
        pass
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    for beat, live in [
        (f"{socket.gethostname()} {os.getpid()} {time.time()}", True),
        (f"{socket.gethostname()} {dead.stdout.strip()} {time.time()}", False),  # SIGKILLed
        (f"{socket.gethostname()} {os.getpid()} {time.time() - 3600}", False),  # stale
        (f"elsewhere 1 {time.time()}", True),  # another host, fresh
        ("garbled", False),  # a tag edited by hand: nobody can be shown to hold the run
    ]:
        client.set_tag(run_id, HEARTBEAT_TAG, beat)
        assert is_live(client.get_run(run_id)) is live, beat


def test_a_diverging_run_fails_and_registers_nothing(store, fixture_data_dir):
    from classifier.config.schema import load_config

    cfg = load_config(
        None, [*overrides(fixture_data_dir, epochs=3, batch_size=16), "train.learning_rate=1.0e+30"]
    )
    lines: list[str] = []
    with pytest.raises(TrainingDiverged, match=r"training diverged at epoch 1: .*nan"):
        train(cfg, echo=lines.append)
    run_id = lines[0].split()[1].rstrip(":")
    assert MlflowClient().get_run(run_id).info.status == "FAILED"
    assert MlflowClient().search_registered_models() == []


@pytest.fixture(scope="module")
def one_finished_run(fixture_data_dir, tmp_path_factory):
    """One 2-epoch run, trained once for the tests below: its temporary folder's parent, the
    names of the checkpoint files it logged in order, and its result."""
    from classifier.config.schema import load_config

    temporary = tmp_path_factory.mktemp("tempdir")
    logged: list[tuple[str, str]] = []
    real_log_artifact = mlflow.log_artifact

    def spy(local_path, artifact_path=None, **kwargs):
        if (artifact_path or "").startswith("checkpoint"):
            logged.append((artifact_path, Path(local_path).name))
        return real_log_artifact(local_path, artifact_path, **kwargs)

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_URI", uri)
        patch.setattr(tempfile, "tempdir", str(temporary))
        patch.setattr(mlflow, "log_artifact", spy)
        cfg = load_config(None, overrides(fixture_data_dir, epochs=2, batch_size=16))
        result = train(cfg, echo=lambda line: None)
    return uri, temporary, logged, result


def test_training_leaves_no_temporary_folder(one_finished_run):
    _, temporary, _, _ = one_finished_run
    assert list(temporary.glob("classify-train-*")) == []


def test_each_checkpoint_goes_to_its_own_slot_with_its_manifest_last(one_finished_run):
    """Epoch 1 into ``checkpoint/odd``, epoch 2 into ``checkpoint/even``, each ending with its
    manifest: a ``kill -9`` during one upload leaves the other slot whole."""
    _, _, logged, _ = one_finished_run
    files = ["best.weights.h5", "last.keras", "progress.json", "vocabulary.txt", "manifest.json"]
    assert logged == [("checkpoint/odd", name) for name in files] + [
        ("checkpoint/even", name) for name in files
    ]


def test_an_ended_run_keeps_no_heartbeat_tag(one_finished_run):
    # b2bae7f: every finished run kept its 'heartbeat' tag, a lease that meant nothing any more
    uri, _, _, result = one_finished_run
    run = MlflowClient(uri).get_run(result.run_id)
    assert run.info.status == "FINISHED"
    assert HEARTBEAT_TAG not in run.data.tags
