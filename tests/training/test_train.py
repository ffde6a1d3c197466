"""A tiny end-to-end training run on fixture data, tracked in a temporary MLflow store."""

from __future__ import annotations

from pathlib import Path

import keras
import mlflow
import numpy as np
import pandas as pd
import pytest
import tensorflow_datasets as tfds
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.types.schema import AnyType

from classifier.config.schema import load_config
from classifier.config.variants import SOURCE_KEYS
from classifier.evaluation.metrics import classification_metrics, roc_auc
from classifier.training.train import train
from tests.conftest import fixture_data_overrides

EPOCHS = 4
REGISTERED = "imdb-sentiment-test"


def tiny_config(fixture_data_dir, *extra: str):
    return load_config(
        None,
        [
            *fixture_data_overrides(fixture_data_dir),
            "model.variant=encoder",
            "model.num_layers=1",
            f"train.epochs={EPOCHS}",
            "train.early_stopping_patience=null",
            "train.learning_rate=0.01",
            f"train.registered_model={REGISTERED}",
            "experiment=fixture-runs",
            *extra,
        ],
    )


@pytest.fixture(scope="module")
def finished(store, fixture_data_dir):
    lines: list[str] = []
    cfg = tiny_config(fixture_data_dir)
    result = train(cfg, echo=lines.append)
    return cfg, result, lines


def test_progress_lines_and_summary(finished):
    _, result, lines = finished
    assert lines[0].startswith(f"run {result.run_id}: encoder, ")
    assert "120 training / 40 validation reviews" in lines[0]
    epoch_lines = [line for line in lines if line.startswith("epoch ")]
    assert [line.split()[1] for line in epoch_lines] == [f"{i}/{EPOCHS}" for i in range(1, 5)]
    assert lines[-1].startswith("test accuracy ")
    assert lines[-1].endswith(f"run {result.run_id}, model {REGISTERED} v{result.model_version}")


def test_it_learns_the_fixture_task(finished):
    _, result, _ = finished
    assert result.test_metrics["test_accuracy"] >= 0.9
    assert result.test_metrics["test_roc_auc"] >= 0.95


def test_params_tags_and_metrics_are_logged(finished):
    cfg, result, _ = finished
    run = MlflowClient().get_run(result.run_id)
    assert run.info.status == "FINISHED"
    params = run.data.params
    # The keys the encoder uses, not the n-gram or pretraining ones (those stay in config.yaml).
    flat = cfg.flat()
    used = [
        key
        for key in flat
        if not key.startswith(("pretrain.", "model.")) and key not in SOURCE_KEYS
    ]
    used += ["model.variant", "model.num_layers", "model.position", "model.init_from"]
    for key in used:
        assert params[key] == str(flat[key]), key
    unused = ("model.ngram_buckets", "model.ngram_order", "model.l2", "pretrain.epochs")
    assert not set(unused) & set(params)
    assert not SOURCE_KEYS & set(params)  # a labelled file's keys: IMDB reads none of them
    assert params["data.class_names"] == '["negative", "positive"]'

    assert params["data.train_reviews"] == "120"
    assert params["data.validation_reviews"] == "40"
    assert params["data.test_reviews"] == "80"
    assert int(params["model.parameters"]) > 1000
    # Where the reviews came from, resolved: an absolute folder, the data set and its version.
    assert params["data.source_dir"] == str(Path(cfg.data.data_dir).resolve())
    assert params["data.tfds_dataset"] == "imdb_reviews/plain_text/1.0.0"
    assert params["data.tfds_package"] == tfds.__version__
    assert run.data.tags["variant"] == "encoder"
    assert len(run.data.tags["git_commit"]) >= 7
    assert run.data.tags["config_hash"] == cfg.config_hash()
    client = MlflowClient()
    for name in ("train_loss", "train_accuracy", "val_loss", "val_accuracy", "epoch_time_s"):
        history = client.get_metric_history(result.run_id, name)
        assert sorted(m.step for m in history) == list(range(1, EPOCHS + 1)), name
    val = {m.step: m.value for m in client.get_metric_history(result.run_id, "val_accuracy")}
    assert run.data.metrics["best_val_accuracy"] == max(val.values())
    assert val[int(run.data.metrics["best_epoch"])] == max(val.values())
    for name in ("test_loss", "test_accuracy", "test_precision", "test_recall", "test_f1"):
        assert run.data.metrics[name] == pytest.approx(result.test_metrics[name])
        assert 0.0 <= run.data.metrics[name] <= (10.0 if name == "test_loss" else 1.0)


def test_artifacts_and_registered_model(finished):
    _, result, _ = finished
    client = MlflowClient()
    names = {a.path for a in client.list_artifacts(result.run_id)}
    assert {
        "config.yaml",
        "vocabulary.txt",
        "training_curves.png",
        "confusion_matrix.png",
        "reliability_diagram.png",
        "model.keras",
    } <= names
    assert "checkpoint" not in names  # nothing resumes a finished run: its checkpoint is deleted
    vocabulary = mlflow.artifacts.load_text(f"runs:/{result.run_id}/vocabulary.txt").split("\n")
    assert vocabulary[:2] == ["", "[UNK]"] and "great" in vocabulary
    version = client.get_model_version_by_alias(REGISTERED, "newest")
    assert version.run_id == result.run_id and str(version.version) == result.model_version
    # What the registry's version page shows, to compare versions without opening their runs.
    run = client.get_run(result.run_id)
    accuracy = f"{run.data.metrics['test_accuracy']:.4f}"
    assert version.tags["variant"] == run.data.params["model.variant"]
    assert version.tags["test_accuracy"] == accuracy
    assert version.tags["config_hash"] == run.data.tags["config_hash"]
    assert version.description.startswith(f"{version.tags['variant']}: test accuracy {accuracy}")
    kind = client.get_experiment(run.info.experiment_id).tags["mlflow.experimentKind"]
    assert kind == "custom_model_development"  # the UI opens the runs view, not GenAI's


def test_pyfunc_model_predicts_a_list_of_strings(finished):
    model = mlflow.pyfunc.load_model(f"models:/{REGISTERED}@newest")
    out = model.predict(["a great and wonderful film, superb", "awful, boring and dull. a waste"])
    assert isinstance(out, pd.DataFrame)
    assert out["label"].tolist() == ["positive", "negative"]
    probabilities = out["positive_probability"].to_numpy()
    assert probabilities[0] > 0.5 > probabilities[1]
    # Any JSON value reaches the model as sent, which refuses what is not a review itself
    # (a string column would have MLflow make "None" of null first).
    assert isinstance(model.metadata.get_input_schema().input_types()[0], AnyType)
    with pytest.raises(MlflowException) as refused:
        model.predict(["a great film", None])
    assert refused.value.message == "row 2: null, not a text"


def test_a_second_run_gets_a_new_version_and_the_alias(store, fixture_data_dir, finished):
    _, first, _ = finished
    cfg = tiny_config(fixture_data_dir, "train.epochs=1", "model.variant=block")
    second = train(cfg, echo=lambda line: None)
    assert int(second.model_version) == int(first.model_version) + 1
    newest = MlflowClient().get_model_version_by_alias(REGISTERED, "newest")
    assert newest.run_id == second.run_id


def test_early_stopping_keeps_the_best_epoch(store, fixture_data_dir):
    cfg = tiny_config(fixture_data_dir, "train.epochs=8", "train.early_stopping_patience=1")
    lines: list[str] = []
    result = train(cfg, echo=lines.append)
    assert "early stopping: no better validation accuracy for 1 epoch" in lines
    assert result.epochs_run == result.best_epoch + 1 < 8
    history = result.history["val_accuracy"]
    assert max(history) == history[result.best_epoch - 1]


def test_early_stopping_min_delta_decides_the_epoch_kept_and_the_stop(store, fixture_data_dir):
    # 0.9 above the best: after epoch 1 no epoch of a fixture run can be better
    cfg = tiny_config(
        fixture_data_dir,
        "train.epochs=8",
        "train.early_stopping_patience=2",
        "train.early_stopping_min_delta=0.9",
    )
    lines: list[str] = []
    result = train(cfg, echo=lines.append)
    assert "early stopping: no validation accuracy better by more than 0.9 for 2 epochs" in lines
    assert (result.best_epoch, result.epochs_run) == (1, 3)
    assert [line.endswith("*") for line in lines if line.startswith("epoch ")] == [
        True,
        False,
        False,
    ]


def test_weight_decay_and_clipping_reach_the_optimizer(store, fixture_data_dir):
    cfg = tiny_config(
        fixture_data_dir,
        "train.epochs=1",
        "train.weight_decay=0.05",
        "train.clipnorm=0.5",
        "train.keep_checkpoint=true",  # where the optimizer is saved
    )
    result = train(cfg, echo=lambda line: None)
    path = mlflow.artifacts.download_artifacts(f"runs:/{result.run_id}/checkpoint/odd/last.keras")
    optimizer = keras.models.load_model(path, safe_mode=True).optimizer
    assert type(optimizer) is keras.optimizers.AdamW
    assert (optimizer.weight_decay, optimizer.clipnorm) == (0.05, 0.5)
    params = MlflowClient().get_run(result.run_id).data.params
    assert (params["train.weight_decay"], params["train.clipnorm"]) == ("0.05", "0.5")


def test_classification_metrics_by_hand():
    labels = np.array([1, 1, 0, 0, 1])
    probabilities = np.array([0.9, 0.4, 0.2, 0.6, 0.8])
    metrics = classification_metrics(labels, probabilities)
    assert metrics["test_accuracy"] == pytest.approx(3 / 5)
    assert metrics["test_precision"] == pytest.approx(2 / 3)
    assert metrics["test_recall"] == pytest.approx(2 / 3)
    assert metrics["test_f1"] == pytest.approx(2 / 3)
    # 6 positive/negative pairs; ordered correctly: (0.9>0.2,0.6), (0.4>0.2), (0.8>0.2,0.6) = 5
    assert metrics["test_roc_auc"] == pytest.approx(5 / 6)
    expected_loss = -np.mean(np.log([0.9, 0.4, 0.8, 0.4, 0.8]))  # p of the true class
    assert metrics["test_loss"] == pytest.approx(expected_loss)
    assert roc_auc(np.array([0, 1]), np.array([0.5, 0.5])) == 0.5


def test_cli_train_prints_epochs_and_summary(store, fixture_data_dir, tmp_path):
    from click.testing import CliRunner

    from classifier.cli.main import cli

    config = tmp_path / "tiny.yaml"
    config.write_text(
        "extends: {}\ntrain:\n  epochs: 2\n".format(Path("configs/smoke.yaml").resolve())
    )
    sets = [*fixture_data_overrides(fixture_data_dir), f"train.registered_model={REGISTERED}"]
    args = ["train", "--config", str(config), *[a for s in sets for a in ("--set", s)]]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert [line.split()[1] for line in lines if line.startswith("epoch ")] == ["1/2", "2/2"]
    assert lines[-1].startswith("test accuracy ")
    run_id = lines[-1].split(" - run ")[1].split(",")[0]
    run = MlflowClient().get_run(run_id)
    assert run.data.params["experiment"] == "imdb-smoke"
    assert run.data.params["train.epochs"] == "2"


def test_same_config_and_seed_give_the_same_metrics(finished):
    cfg, first, _ = finished  # the module's run, trained again with the same config and seed
    second = train(cfg, echo=lambda line: None)
    assert first.run_id != second.run_id
    for name, values in first.history.items():
        if name != "epoch_time_s":
            np.testing.assert_allclose(second.history[name], values, atol=1e-3, err_msg=name)
    for name, value in first.test_metrics.items():
        assert second.test_metrics[name] == pytest.approx(value, abs=1e-3), name
