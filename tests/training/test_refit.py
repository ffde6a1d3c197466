"""``train.refit``: after the validation reviews choose the epoch count, a fresh model is
trained on training and validation reviews together and is the one evaluated and registered."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from classifier.config.schema import load_config
from classifier.data.batching import vectorize
from classifier.data.pipeline import ReviewVectorizer, load_last_unlabelled
from classifier.evaluation.calibration import Calibration, head_log_odds
from classifier.evaluation.metrics import mean_entropy, sigmoid
from classifier.runs.resume import newest_whole_checkpoint
from classifier.serving.keras_engine import vectorizer_of
from classifier.serving.registry import load_model
from classifier.sweeps.compare import compare
from classifier.training import ngram_features
from classifier.training.train import train
from tests.conftest import VALIDATION_ONLY_WORD, fixture_data_overrides

EXPERIMENT = "refit-tests"


def refit_config(fixture_data_dir, registered_model: str, experiment: str):
    """Three epochs of attention on the fixture data, then the refit."""
    return load_config(
        None,
        [
            *fixture_data_overrides(fixture_data_dir),
            "model.variant=attention",
            "train.epochs=3",
            "train.early_stopping_patience=null",
            "train.learning_rate=0.01",
            "train.refit=true",
            f"train.registered_model={registered_model}",
            f"experiment={experiment}",
        ],
    )


@pytest.fixture(scope="module")
def refit_run(store, fixture_data_dir):
    """One refit run in the module's store, shared by the tests that read it:
    ``(config, TrainResult, its printed lines)``."""
    lines: list[str] = []
    cfg = refit_config(fixture_data_dir, "imdb-refit-test", EXPERIMENT)
    cfg.train.keep_checkpoint = True  # the chosen model, before the refit, is read from it
    return cfg, train(cfg, echo=lines.append), lines


def test_refit_trains_on_train_and_validation_and_logs_both_phases(refit_run):
    _, result, lines = refit_run
    run = MlflowClient().get_run(result.run_id)
    params, tags = run.data.params, run.data.tags
    assert (params["data.train_reviews"], params["data.validation_reviews"]) == ("120", "40")
    assert params["data.refit_train_reviews"] == "160"
    assert params["train.refit"] == "True" and tags["refit"] == "true"
    client = MlflowClient()
    # Phase 1: three epochs with validation; phase 2: the best epoch count, no validation.
    assert [m.step for m in client.get_metric_history(result.run_id, "val_accuracy")] == [1, 2, 3]
    refit_steps = [m.step for m in client.get_metric_history(result.run_id, "refit_train_loss")]
    assert refit_steps == list(range(1, result.best_epoch + 1))
    assert (
        f"refit: a fresh model on all 160 labelled reviews for {result.best_epoch} epochs" in lines
    )
    # The registered model's vocabulary was adapted on the validation reviews too.
    model = load_model("models:/imdb-refit-test@newest")
    assert VALIDATION_ONLY_WORD in vectorizer_of(model).get_vocabulary()
    assert params["data.refit_calibration_reviews"] == "10"  # the fixture's unlabelled reviews
    (row,) = compare(experiment=EXPERIMENT)
    assert row.key_params.endswith("refit")


def test_the_refit_model_has_the_chosen_models_calibrated_confidence(refit_run, tmp_path):
    """No labelled review is left to calibrate a refit model on: it gets the temperature and
    offset that give it the calibrated chosen model's mean P(positive) and mean entropy on the
    unlabelled reviews."""
    cfg, result, lines = refit_run
    metrics = MlflowClient().get_run(result.run_id).data.metrics
    unlabelled, _ = load_last_unlabelled(cfg.data, 10)

    # The chosen model: the best epoch's weights, with the calibration fitted on validation.
    checkpoint = newest_whole_checkpoint(result.run_id, "checkpoint", tmp_path)
    chosen = keras.models.load_model(checkpoint / "last.keras", safe_mode=True)
    chosen.load_weights(checkpoint / "best.weights.h5")
    vocabulary = (checkpoint / "vocabulary.txt").read_text().split("\n")[2:]
    chosen_vectorizer = ReviewVectorizer(64, 24, cfg.data.truncate, vocabulary)
    calibration = Calibration(metrics["chosen_temperature"], metrics["chosen_calibration_offset"])
    reference, _ = head_log_odds(chosen, vectorize(unlabelled, chosen_vectorizer, 16))
    reference = calibration.apply(reference)

    # The registered refit model (its calibration folded in) on the same reviews.
    refit_model = load_model("models:/imdb-refit-test@newest")
    refit_classifier = refit_model.layers[-1]
    log_odds, _ = head_log_odds(refit_classifier, vectorize(unlabelled, refit_model.layers[1], 16))

    assert np.mean(sigmoid(log_odds)) == pytest.approx(np.mean(sigmoid(reference)), abs=1e-6)
    assert mean_entropy(log_odds) == pytest.approx(mean_entropy(reference), abs=1e-6)
    assert metrics["temperature"] != metrics["chosen_temperature"]  # not a copy: matched
    t, offset = metrics["temperature"], metrics["calibration_offset"]
    assert (
        f"calibration of the refit model, matched on the unlabelled reviews: T {t:.2f}, "
        f"offset {offset:+.2f}" in lines
    )


def test_without_refit_the_validation_reviews_stay_out(store, fixture_data_dir):
    overrides = [
        *fixture_data_overrides(fixture_data_dir),
        "model.variant=attention",
        "train.epochs=1",
        "train.registered_model=imdb-norefit-test",
        "experiment=norefit-tests",
    ]
    result = train(load_config(None, overrides), echo=lambda line: None)
    run = MlflowClient().get_run(result.run_id)
    assert "data.refit_train_reviews" not in run.data.params and "refit" not in run.data.tags
    model = load_model("models:/imdb-norefit-test@newest")
    assert VALIDATION_ONLY_WORD not in vectorizer_of(model).get_vocabulary()


def test_bows_recipe_trains_and_refits_with_lazy_adam(store, fixture_data_dir, monkeypatch):
    views = []  # both phases train a lazy view

    class Recorded(ngram_features.NgramView):
        def __init__(self, classifier, lazy=False):
            super().__init__(classifier, lazy)
            views.append(lazy)

    monkeypatch.setattr(ngram_features, "NgramView", Recorded)
    cfg = load_config(
        "configs/variants/bow.yaml",
        [
            *fixture_data_overrides(fixture_data_dir),
            "train.epochs=3",
            "train.early_stopping_patience=null",
            "train.learning_rate=0.05",
            "train.refit=true",
            "train.registered_model=imdb-refit-lazy-test",
            "experiment=refit-lazy-tests",
        ],
    )
    assert cfg.train.lazy_adam
    result = train(cfg, echo=lambda line: None)
    assert views == [True, True]
    client = MlflowClient()
    assert client.get_run(result.run_id).data.params["train.lazy_adam"] == "True"
    losses = [m.value for m in client.get_metric_history(result.run_id, "refit_train_loss")]
    assert len(losses) == result.best_epoch and losses == sorted(losses, reverse=True)
    assert result.test_metrics["test_accuracy"] >= 0.9  # the fixture's cue words, learnt
