"""``classify pretrain`` on the fixture reviews: tracked runs, the registered encoder, resume,
and fine-tuning from it with ``model.init_from``."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import mlflow
import numpy as np
import pytest
import tensorflow as tf
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from classifier.cli.main import cli
from classifier.config.schema import ConfigError, load_config
from classifier.errors import ModelError, ResumeError
from classifier.pretraining.encoder_artifact import INIT_FROM_TAG, load_encoder, pretrained_encoder
from classifier.pretraining.pretrain import PretrainingInterrupted, pretrain
from classifier.training.build import new_model
from classifier.training.train import train
from tests.conftest import VALIDATION_ONLY_WORD, fixture_data_overrides

pytestmark = pytest.mark.slow  # pretraining models built and run: 35 s of CPU besides its trainings

METRICS = ("train_loss", "train_masked_accuracy", "heldout_loss", "heldout_masked_accuracy")
ENCODER = "models:/imdb-encoder@newest"


def overrides(fixture_data_dir, *extra: str) -> list[str]:
    return [
        *fixture_data_overrides(fixture_data_dir),
        "model.variant=encoder",
        "model.num_layers=1",
        "pretrain.held_out=2",  # of the fixture's 10 unlabelled reviews
        "pretrain.epochs=2",
        *extra,
    ]


def steps(run_id: str, name: str) -> list[int]:
    return sorted(m.step for m in MlflowClient().get_metric_history(run_id, name))


@pytest.fixture(scope="module")
def pretrained(store, fixture_data_dir):
    """One MLM pretraining through ``classify pretrain``: (run id, its output)."""
    sets = [arg for item in overrides(fixture_data_dir) for arg in ("--set", item)]
    result = CliRunner().invoke(cli, ["pretrain", *sets], prog_name="classify")
    assert result.exit_code == 0, result.output
    run_id = result.output.split()[1].rstrip(":")
    mlflow.set_tracking_uri(store)
    return run_id, result.output


def test_a_pretraining_run_logs_every_epoch_and_registers_the_encoder(pretrained):
    run_id, output = pretrained
    lines = output.splitlines()
    assert lines[0] == (
        f"run {run_id}: pretraining (mlm), 8 unlabelled + 120 training reviews, 2 held out"
    )
    assert [line.split()[1] for line in lines[1:3]] == ["1/2", "2/2"]
    assert lines[-1].endswith(f"- run {run_id}, encoder imdb-encoder v1")
    client = MlflowClient()
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == "imdb-pretrain"
    for name in (*METRICS, "epoch_time_s"):
        assert steps(run_id, name) == [1, 2], name
    assert run.data.metrics["train_time_s"] > 0
    assert run.data.params["pretrain.objective"] == "mlm"
    assert run.data.params["pretrain.labelled_reviews"] == "120"
    assert "model.embed_dim" in run.data.params and "model.ngram_buckets" not in run.data.params
    assert run.data.tags["pretrain_objective"] == "mlm"
    assert run.data.tags["device"] == "CPU"  # the machine that pretrained it (GPU on a GPU)
    artefacts = {a.path for a in client.list_artifacts(run_id)}
    assert {"config.yaml", "vocabulary.txt", "training_curves.png", "checkpoint", "encoder"} <= (
        artefacts
    )
    encoder_files = {Path(a.path).name for a in client.list_artifacts(run_id, "encoder")}
    assert encoder_files == {"encoder.keras", "vocabulary.txt", "encoder.json"}
    version = client.get_model_version_by_alias("imdb-encoder", "newest")
    assert (str(version.version), version.run_id) == ("1", run_id)


def test_the_vocabulary_comes_from_the_pretraining_text_and_ends_with_mask(pretrained):
    encoder = load_encoder(ENCODER)
    vocabulary = encoder.vocabulary
    assert vocabulary[:2] == ["", "[UNK]"] and vocabulary[-1] == "[MASK]"
    assert "great" in vocabulary and "the" in vocabulary
    assert VALIDATION_ONLY_WORD not in vocabulary  # validation reviews are never read
    assert encoder.model.get_layer("embedding").vocab_size == 64  # data.vocab_size


def test_init_from_copies_the_encoder_weights_exactly(pretrained, fixture_data_dir):
    cfg = load_config(None, [*overrides(fixture_data_dir), f"model.init_from={ENCODER}"])
    encoder = pretrained_encoder(cfg)
    classifier = new_model(cfg, None, encoder)
    fresh = new_model(load_config(None, overrides(fixture_data_dir)), None)
    for name in ("embedding", "encoder"):
        ours, theirs = (
            classifier.get_layer(name).get_weights(),
            encoder.model.get_layer(name).get_weights(),
        )
        assert len(ours) == len(theirs) > 0
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True)), name
        assert not np.array_equal(fresh.get_layer(name).get_weights()[0], theirs[0])
    assert encoder.vectorizer(cfg.data).get_vocabulary() == encoder.vocabulary


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.embed_dim=32", f"model.embed_dim=32 but the encoder from {ENCODER} has 16"),
        ("model.num_layers=2", f"model.num_layers=2 but the encoder from {ENCODER} has 1"),
        ("data.vocab_size=128", f"data.vocab_size=128 but the encoder from {ENCODER} has 64"),
        ("model.position=learned", f"model.position=learned but the encoder from {ENCODER} has sinusoidal"),
        ("data.train_size=100", f"data.train_size=100 but the encoder from {ENCODER} has read the text of the first 120 training reviews: validation reviews among them"),
        ("data.sentences=true", f"data.sentences=true but the encoder from {ENCODER} was pretrained with false (its vocabulary is reused)"),
    ],
)  # fmt: skip
def test_init_from_refuses_other_sizes(pretrained, fixture_data_dir, override, message):
    cfg = load_config(None, [*overrides(fixture_data_dir), f"model.init_from={ENCODER}", override])
    with pytest.raises(ConfigError) as raised:
        pretrained_encoder(cfg)
    assert str(raised.value) == message


def test_init_from_errors_are_one_line(pretrained, fixture_data_dir, tmp_path):
    with pytest.raises(ModelError, match=r"^model.init_from=models:/nope@newest: no registered"):
        load_encoder("models:/nope@newest")
    with pytest.raises(
        ModelError, match=r"^model.init_from=models:/imdb-encoder/7: .* no version 7$"
    ):
        load_encoder("models:/imdb-encoder/7")
    with pytest.raises(ModelError, match=r": no encoder.keras with its vocabulary.txt there"):
        load_encoder(str(tmp_path))
    sets = overrides(fixture_data_dir, "model.embed_dim=32", f"model.init_from={ENCODER}")
    result = CliRunner().invoke(cli, ["train", *[a for s in sets for a in ("--set", s)]])
    assert result.exit_code == 2
    assert result.output == (
        f"classify: error: model.embed_dim=32 but the encoder from {ENCODER} has 16\n"
    )


def test_fine_tuning_from_the_encoder_runs_end_to_end(pretrained, fixture_data_dir):
    run_id, _ = pretrained
    cfg = load_config(
        None,
        [
            *overrides(fixture_data_dir),
            f"model.init_from={ENCODER}",
            "train.epochs=1",
            "train.registered_model=imdb-sentiment-init-from",
            "experiment=init-from-tests",
        ],
    )
    result = train(cfg, echo=lambda line: None)
    run = MlflowClient().get_run(result.run_id)
    assert run.data.tags[INIT_FROM_TAG] == run_id
    assert run.data.params["model.init_from"] == ENCODER
    logged = mlflow.artifacts.download_artifacts(f"runs:/{result.run_id}/vocabulary.txt")
    assert Path(logged).read_text().split("\n") == load_encoder(ENCODER).vocabulary
    assert 0.0 <= result.test_metrics["test_accuracy"] <= 1.0


def test_span_pretraining_registers_an_encoder_that_fine_tunes(pretrained, fixture_data_dir):
    lines: list[str] = []
    cfg = load_config(
        None,
        overrides(
            fixture_data_dir,
            "pretrain.objective=span",
            "pretrain.epochs=1",
            "pretrain.registered_model=imdb-encoder-span",
        ),
    )
    result = pretrain(cfg, echo=lines.append)
    assert lines[0].startswith(f"run {result.run_id}: pretraining (span)")
    assert all(steps(result.run_id, name) == [1] for name in METRICS)
    encoder = load_encoder("models:/imdb-encoder-span@newest")
    # 24 tokens a review at most: round(0.15 * 24) = 4 dropped, in round(4 / 3) = 1 span.
    assert encoder.vocabulary[-2:] == ["[START]", "[SPAN_0]"] and "great" in encoder.vocabulary
    fine_tune = load_config(
        None, [*overrides(fixture_data_dir), "model.init_from=models:/imdb-encoder-span/1"]
    )
    classifier = new_model(fine_tune, None, pretrained_encoder(fine_tune))
    ours = classifier.get_layer("encoder").get_weights()
    assert all(
        np.array_equal(a, b)
        for a, b in zip(ours, encoder.model.get_layer("encoder").get_weights(), strict=True)
    )


def test_long_epochs_print_progress_lines_between_the_epoch_lines(
    pretrained, fixture_data_dir, monkeypatch
):
    from classifier.pretraining.pretrain import PretrainTracker

    monkeypatch.setattr(PretrainTracker, "progress_every", 0.0)  # a line after every batch
    lines: list[str] = []
    pretrain(load_config(None, overrides(fixture_data_dir)), echo=lines.append)
    first = [line for line in lines if line.startswith("  epoch 1/2: batch ")]
    second = [line for line in lines if line.startswith("  epoch 2/2: batch ")]
    batches = len(first)
    assert batches > 1 and len(second) == batches
    assert first[0].startswith("  epoch 1/2: batch 1, loss ")
    assert second[-1].startswith(f"  epoch 2/2: batch {batches} of about {batches}, loss ")
    epoch_lines = [line for line in lines if line.startswith("epoch ")]
    assert lines.index(epoch_lines[0]) == batches + 1  # after the run line and epoch 1's lines


def test_a_stopped_pretraining_resumes_with_contiguous_metrics(pretrained, fixture_data_dir):
    cfg = load_config(
        None,
        overrides(
            fixture_data_dir,
            "pretrain.epochs=3",
            "pretrain.registered_model=imdb-encoder-resumed",
            "pretrain.experiment=pretrain-resume-tests",
        ),
    )
    lines: list[str] = []

    def echo(line: str) -> None:
        lines.append(line)
        if line.startswith("epoch  1/"):  # Ctrl-C while epoch 1 is being recorded
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(PretrainingInterrupted) as raised:
        pretrain(cfg, echo=echo)
    run_id = lines[0].split()[1].rstrip(":")
    assert str(raised.value) == (
        f"interrupted: run {run_id} marked KILLED, its last checkpoint is kept; "
        f"continue with: classify pretrain --resume {run_id}"
    )
    assert MlflowClient().get_run(run_id).info.status == "KILLED"
    progress = mlflow.artifacts.download_artifacts(f"runs:/{run_id}/checkpoint/odd/progress.json")
    assert json.loads(Path(progress).read_text())["epoch"] == 1
    assert all(steps(run_id, name) == [1] for name in METRICS)

    with pytest.raises(
        ResumeError, match=f"continue it with: classify pretrain --resume {run_id}$"
    ):
        train(resume=run_id)  # a pretraining run is not resumed as a training run
    resumed: list[str] = []
    result = pretrain(resume=run_id, echo=resumed.append)
    assert result.run_id == run_id and resumed[0].endswith("resuming after epoch 1")
    assert [line.split()[1] for line in resumed if line.startswith("epoch ")] == ["2/3", "3/3"]
    for name in (*METRICS, "epoch_time_s"):
        assert steps(run_id, name) == [1, 2, 3], name
    assert MlflowClient().get_run(run_id).info.status == "FINISHED"
    versions = MlflowClient().search_model_versions("name = 'imdb-encoder-resumed'")
    assert [v.run_id for v in versions] == [run_id]  # registered once


def test_more_held_out_reviews_than_the_copy_holds_is_one_line(store, fixture_data_dir):
    sets = [*fixture_data_overrides(fixture_data_dir), "model.num_layers=1"]  # held_out: 1,000
    result = CliRunner().invoke(cli, ["pretrain", *[a for s in sets for a in ("--set", s)]])
    assert result.exit_code == 2
    assert result.output.startswith(
        "classify: error: pretrain.held_out=1000 leaves no unlabelled review to pretrain on, of "
        "the 10 reviews of the unsupervised split in "
    )
    assert result.output.count("\n") == 1


def test_pretrain_command_errors_are_one_line(store):
    result = CliRunner().invoke(cli, ["pretrain", "--resume", "abc", "--set", "pretrain.epochs=2"])
    assert result.exit_code == 2
    assert result.output == (
        "classify: error: --resume continues with the run's own config; drop --config and --set\n"
    )
    result = CliRunner().invoke(cli, ["pretrain", "--set", "pretrain.objective=bert"])
    assert (result.exit_code, result.output) == (
        2,
        "classify: error: pretrain.objective='bert' is not one of mlm, span\n",
    )


def test_pipelines_mask_afresh_each_epoch_but_hold_out_fixed_masks(fixture_data_dir):
    from classifier.pretraining.data import (
        _with_seeds,
        load_texts,
        make_pretrain_datasets,
        pretrain_vectorizer,
    )

    cfg = load_config(None, overrides(fixture_data_dir))
    texts = load_texts(cfg)
    assert texts.sizes == {"unlabelled": 8, "labelled": 120, "held_out": 2}
    vectorizer = pretrain_vectorizer(cfg, texts.train)
    data = make_pretrain_datasets(cfg, texts, vectorizer)
    mask_id = len(vectorizer.get_vocabulary()) - 1

    def epoch(dataset) -> list[np.ndarray]:
        return [ids.numpy() for (ids, _), _, _ in dataset]

    first, second = epoch(data.train), epoch(data.train)
    assert sum(len(ids) for ids in first) == 128  # every pretraining review once per epoch
    assert sum(np.sum(ids == mask_id) for ids in first) > 0
    assert not all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    held = [epoch(data.held_out) for _ in range(2)]
    assert all(np.array_equal(a, b) for a, b in zip(*held, strict=True))
    # The mask seeds: new ones each pass for training, the same ones for the held-out reviews.
    for fresh in (True, False):
        seeds = _with_seeds(tf.data.Dataset.range(4), 1, fresh)
        passes = [[int(r) for _, r in seeds] for _ in range(2)]
        assert (passes[0] != passes[1]) is fresh


def test_a_resumed_pipeline_masks_afresh_instead_of_replaying_epoch_one(fixture_data_dir):
    from classifier.pretraining.data import load_texts, make_pretrain_datasets, pretrain_vectorizer

    cfg = load_config(None, overrides(fixture_data_dir))
    texts = load_texts(cfg)
    vectorizer = pretrain_vectorizer(cfg, texts.train)

    def first_pass(epochs_done: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        # A new process (here: a new pipeline) draws its first pass from the seed again.
        data = make_pretrain_datasets(cfg, texts, vectorizer, epochs_done=epochs_done)
        return tuple(
            [ids.numpy() for (ids, _), _, _ in split] for split in (data.train, data.held_out)
        )

    fresh, again, resumed = first_pass(0), first_pass(0), first_pass(2)
    same = [
        all(np.array_equal(a, b) for a, b in zip(*pair, strict=True))
        for pair in ((fresh[0], again[0]), (fresh[0], resumed[0]), (fresh[1], resumed[1]))
    ]
    # Fresh runs stay reproducible; after a resume the training masks are new, the held-out
    # reviews keep theirs, so that the held-out figures still compare across the resume.
    assert same == [True, False, True]


def test_an_encoder_name_registered_by_another_process_meanwhile_is_used(tmp_path, monkeypatch):
    """Two pretrainings that finish together both find no registered encoder; the second one's
    create fails with RESOURCE_ALREADY_EXISTS: it adds its version to the one the first made."""
    from classifier.pretraining.encoder_artifact import register_encoder
    from classifier.runs.tracking import configure_tracking, ensure_experiment

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    configure_tracking()
    experiment_id = ensure_experiment("registry")  # this store's own, whatever ran before
    run_ids = [MlflowClient().create_run(experiment_id).info.run_id for _ in range(2)]
    register_encoder(run_ids[0], "encoder")  # the other process, a moment earlier
    monkeypatch.setattr(MlflowClient, "search_registered_models", lambda self, **kwargs: [])
    version = register_encoder(run_ids[1], "encoder")
    assert (str(version.version), version.run_id) == ("2", run_ids[1])
    assert str(MlflowClient().get_model_version_by_alias("encoder", "newest").version) == "2"
