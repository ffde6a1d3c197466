"""Calibration: a temperature (never changing a label) and an offset (moving the threshold),
fitted on validation reviews and folded into the head; the expected calibration error by hand;
what a training run logs."""

from __future__ import annotations

import gc
import weakref

import keras
import mlflow
import numpy as np
import pytest
import tensorflow as tf
from mlflow.tracking import MlflowClient

from classifier.config.schema import ModelConfig, load_config
from classifier.data.pipeline import load_raw_splits
from classifier.evaluation.calibration import (
    Calibration,
    calibrate,
    fold_calibration,
    head_log_odds,
)
from classifier.evaluation.metrics import (
    calibration_bins,
    expected_calibration_error,
    fit_temperature,
    fit_temperature_and_offset,
    match_temperature_and_offset,
    mean_entropy,
    sigmoid,
)
from classifier.models.classifier import build_classifier
from classifier.serving.predict import predict_texts
from classifier.serving.registry import load_keras_model
from classifier.training.train import train
from tests.conftest import fixture_data_overrides
from tests.model_helpers import tensorflow_log


def nll(log_odds: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.logaddexp(0.0, -np.where(labels > 0, 1.0, -1.0) * log_odds)))


def test_ece_by_hand():
    labels = np.array([0, 0, 1, 1, 1])
    p = np.array([0.05, 0.35, 0.62, 0.97, 0.99])  # bins (15 over [0, 1]): 0, 5, 9, 14, 14
    confidence, positive, counts = calibration_bins(labels, p)
    assert counts.tolist() == [1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 2]
    expected = (0.05 + 0.35 + (1 - 0.62) + 2 * abs(1 - 0.98)) / 5
    assert expected_calibration_error(labels, p) == pytest.approx(expected)
    assert confidence[14] == pytest.approx(0.98) and positive[14] == 1.0
    assert expected_calibration_error(np.array([1, 0]), np.array([1.0, 0.0])) == 0.0


@pytest.mark.parametrize("temperature, offset", [(3.0, 0.5), (0.4, -1.2), (1.0, 0.0), (25.0, 2.0)])
def test_matching_a_reference_recovers_its_temperature_and_offset(temperature, offset):
    rng = np.random.default_rng(2)
    reference = rng.normal(0.3, 2.5, 3000)  # a calibrated model's log-odds, unlabelled reviews
    other = (reference - offset) * temperature  # another model: surer (or less), leaning
    t, b = match_temperature_and_offset(other, reference)
    assert (t, b) == (pytest.approx(temperature, rel=1e-6), pytest.approx(offset, abs=1e-6))


def test_matching_gives_the_reference_mean_and_entropy_for_a_different_model():
    rng = np.random.default_rng(3)
    reference = rng.normal(0.0, 2.0, 3000)
    other = 3 * reference + rng.normal(0.0, 2.0, 3000) - 1.0  # disagrees on single reviews
    t, b = match_temperature_and_offset(other, reference)
    matched = other / t + b
    assert np.mean(sigmoid(matched)) == pytest.approx(np.mean(sigmoid(reference)), abs=1e-9)
    assert mean_entropy(matched) == pytest.approx(mean_entropy(reference), abs=1e-9)
    # Fitting the reference's probabilities as soft labels would shrink this model's
    # confidence for the disagreement itself; matching does not: the spread stays.
    assert np.std(matched) == pytest.approx(np.std(reference), rel=0.1)


def test_fitted_temperature_minimises_the_loss():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 5000)
    log_odds = 4 * rng.normal(2 * labels - 1, 1.0)  # twice as confident as is honest (2x)
    temperature = fit_temperature(log_odds, labels)
    assert temperature == pytest.approx(2.0, rel=0.05)
    best = nll(log_odds / temperature, labels)
    for other in (temperature * 0.9, temperature * 1.1, 1.0):
        assert best <= nll(log_odds / other, labels)


def test_fitted_temperature_and_offset_minimise_the_loss():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 5000)
    honest = 2 * rng.normal(2 * labels - 1, 1.0)
    log_odds = 2 * honest - 1.0  # twice as confident as is honest, and leaning negative by 1
    temperature, offset = fit_temperature_and_offset(log_odds, labels)
    assert temperature == pytest.approx(2.0, rel=0.05)
    assert offset == pytest.approx(0.5, abs=0.1)  # -1 / T, undone
    best = nll(log_odds / temperature + offset, labels)
    for t, b in [
        (temperature * 1.05, offset),
        (temperature * 0.95, offset),
        (temperature, offset + 0.05),
        (temperature, offset - 0.05),
    ]:
        assert best < nll(log_odds / t + b, labels)
    # The offset can only help: the temperature alone is the special case offset 0.
    assert best < nll(log_odds / fit_temperature(log_odds, labels), labels)
    # No lean, no offset.
    assert fit_temperature_and_offset(honest, labels)[1] == pytest.approx(0.0, abs=0.1)


@pytest.fixture
def over_confident():
    """A small classifier with a sharp random head, and token-id batches with labels."""
    return over_confident_classifier()


def over_confident_classifier():
    keras.utils.set_random_seed(3)
    classifier = build_classifier(ModelConfig(variant="attention"), 40, 12)
    head = classifier.get_layer("head")
    head.set_weights([w * 40 for w in head.get_weights()])
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 40, (96, 12)).astype("int64")
    ids[ids == 0] = 1
    ids[:, 9:] = 0  # padding at the end
    labels = (ids[:, 0] % 2).astype("int64")
    return classifier, tf.data.Dataset.from_tensor_slices((ids, labels)).batch(32)


def test_folding_the_temperature_changes_no_label_and_lowers_the_loss(over_confident):
    classifier, dataset = over_confident
    ids = np.concatenate([x.numpy() for x, _ in dataset])
    before = keras.ops.convert_to_numpy(classifier(ids))[:, 1]
    log_odds, labels = head_log_odds(classifier, dataset)
    np.testing.assert_allclose(before, 1 / (1 + np.exp(-log_odds)), atol=1e-5)

    temperature = calibrate(classifier, dataset, offset=False).temperature
    after = keras.ops.convert_to_numpy(classifier(ids))[:, 1]
    assert temperature > 1  # the sharp head was over-confident
    assert ((after >= 0.5) == (before >= 0.5)).all()  # no label changes at 0.5
    np.testing.assert_allclose(after, 1 / (1 + np.exp(-log_odds / temperature)), atol=1e-5)
    assert nll(log_odds / temperature, labels) < nll(log_odds, labels)


def test_the_offset_moves_the_threshold_and_lowers_the_loss_further(over_confident):
    classifier, dataset = over_confident
    ids = np.concatenate([x.numpy() for x, _ in dataset])
    log_odds, labels = head_log_odds(classifier, dataset)

    calibration = calibrate(classifier, dataset)
    after = keras.ops.convert_to_numpy(classifier(ids))[:, 1]
    t, c = calibration.temperature, calibration.offset
    assert t > 1 and c != 0.0
    np.testing.assert_allclose(after, 1 / (1 + np.exp(-(log_odds / t + c))), atol=1e-5)
    np.testing.assert_allclose(calibration.undo(log_odds / t + c), log_odds, atol=1e-9)
    # Labels change only where the offset carries the scaled log-odds across 0.
    changed = (after >= 0.5) != (log_odds >= 0)
    assert np.all(np.abs(log_odds[changed] / t) <= abs(c) + 1e-6)
    alone = fit_temperature(log_odds, labels)
    assert nll(log_odds / t + c, labels) < nll(log_odds / alone, labels)


def test_folding_no_offset_is_the_temperature_alone(over_confident):
    classifier, dataset = over_confident
    log_odds, _ = head_log_odds(classifier, dataset)
    fold_calibration(classifier, Calibration(temperature=2.5))
    np.testing.assert_allclose(head_log_odds(classifier, dataset)[0], log_odds / 2.5, atol=1e-5)


def test_the_traced_head_inputs_keep_no_classifier_alive():
    """A sweep calibrates a new classifier every run: the traced function of each must go
    with it."""
    classifier, dataset = over_confident_classifier()
    head_log_odds(classifier, dataset)
    gone = weakref.ref(classifier)
    del classifier
    gc.collect()
    assert gone() is None


def test_evaluating_many_classifiers_in_one_process_prints_no_retracing_warning():
    """A sweep worker calibrates and evaluates one run's classifier after another; with a
    validation and a test split of one batch each, TensorFlow counted the tracings of their
    functions together and printed its "triggered tf.function retracing" warning."""
    with tensorflow_log() as seen:
        for _ in range(7):
            classifier, dataset = over_confident_classifier()
            one_batch = dataset.take(1)
            head_log_odds(classifier, one_batch)  # calibration's validation
            head_log_odds(classifier, one_batch)  # the test evaluation
    assert not [message for message in seen if "retracing" in message], seen


def test_a_run_logs_calibration(store, fixture_data_dir):
    cfg = load_config(
        None,
        [
            *fixture_data_overrides(fixture_data_dir),
            "model.variant=attention",
            "train.epochs=2",
            "train.learning_rate=0.01",
            "train.registered_model=imdb-calibration-test",
            "experiment=calibration-tests",
        ],
    )
    lines: list[str] = []
    result = train(cfg, echo=lines.append)
    metrics = MlflowClient().get_run(result.run_id).data.metrics
    assert metrics["temperature"] > 0 and "calibration_offset" in metrics
    assert 0 <= metrics["test_ece"] <= 1 and 0 <= metrics["test_ece_uncalibrated"] <= 1
    assert f"ECE {metrics['test_ece']:.4f}" in lines[-1]
    # The saved model is the calibrated one: its probabilities give the logged ECE and accuracy.
    local = mlflow.artifacts.download_artifacts(f"runs:/{result.run_id}/model.keras")
    test = list(load_raw_splits(cfg.data).test.as_numpy_iterator())
    texts, labels = [text.decode() for text, _ in test], [label for _, label in test]
    p = np.array(predict_texts(load_keras_model(local), texts))
    assert expected_calibration_error(np.array(labels), p) == pytest.approx(
        metrics["test_ece"], abs=1e-4
    )
    assert np.mean((p >= 0.5) == np.array(labels)) == pytest.approx(metrics["test_accuracy"])
