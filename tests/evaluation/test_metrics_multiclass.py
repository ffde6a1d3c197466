"""Metrics of K classes: scikit-learn's metrics (two classes exactly as the hand-written ones
were), MLflow-safe metric keys, the top-label ECE and temperature scaling of softmax logits."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from classifier.evaluation.metrics import (
    calibration_bins,
    classification_metrics,
    cross_entropy,
    expected_calibration_error,
    fit_temperature,
    fit_temperature_multiclass,
    metric_key,
    multiclass_cross_entropy,
    roc_auc,
    softmax,
    top_label_bins,
)

BINARY_KEYS = ["loss", "accuracy", "precision", "recall", "f1", "roc_auc"]
MLFLOW_KEY = re.compile(r"^[/\w.\- ]*$")  # what MLflow accepts as a metric name


def hand_written(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    """The two-class metrics as they were computed before scikit-learn's replaced them."""
    labels = np.asarray(labels).astype(int)
    p = np.clip(np.asarray(probabilities, dtype=np.float64), 1e-7, 1 - 1e-7)
    predicted = (p >= 0.5).astype(int)
    tp = int(np.sum((predicted == 1) & (labels == 1)))
    fp = int(np.sum((predicted == 1) & (labels == 0)))
    fn = int(np.sum((predicted == 0) & (labels == 1)))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    loss = -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    positives, negatives = int(labels.sum()), int((1 - labels).sum())
    if positives and negatives:
        order = np.argsort(p, kind="mergesort")
        ranks = np.empty(len(p))
        _, first, counts = np.unique(p[order], return_index=True, return_counts=True)
        ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
        auc = (ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives)
    else:
        auc = float("nan")
    values = [loss, np.mean(predicted == labels), precision, recall, f1, auc]
    return {f"test_{key}": float(value) for key, value in zip(BINARY_KEYS, values, strict=True)}


def _cases():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 500)
    yield "random", labels, rng.random(500)
    yield "informative", labels, 1 / (1 + np.exp(-rng.normal(2 * labels - 1, 1.5)))
    yield "sure, with ties", labels, rng.choice([0.0, 0.5, 1.0, 0.3], 500)
    yield "float32", labels, rng.random(500).astype(np.float32)
    yield "one class", np.ones(20, int), rng.random(20)
    yield "never positive", labels[:50], rng.random(50) * 0.4
    yield "all negative, none predicted", np.zeros(10, int), np.full(10, 0.1)


@pytest.mark.parametrize("name, labels, p", list(_cases()), ids=[c[0] for c in _cases()])
def test_two_classes_give_what_the_hand_written_metrics_gave(name, labels, p):
    metrics = classification_metrics(labels, p)
    expected = hand_written(labels, p)
    assert list(metrics) == [*expected, "test_macro_f1"]
    for key, value in expected.items():
        assert metrics[key] == pytest.approx(value, abs=1e-12, nan_ok=True), key
    # Macro F1: the mean of the F1 of each class as the positive one.
    predicted = np.clip(p.astype(np.float64), 1e-7, 1 - 1e-7) >= 0.5
    f1 = [_f1(labels == c, predicted == c) for c in (0, 1)]
    assert metrics["test_f1"] == pytest.approx(f1[1], abs=1e-12)
    assert metrics["test_macro_f1"] == pytest.approx(np.mean(f1), abs=1e-12)


def _f1(truth: np.ndarray, said: np.ndarray) -> float:
    tp, fp, fn = np.sum(truth & said), np.sum(~truth & said), np.sum(truth & ~said)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def test_two_columns_are_two_classes():
    rng = np.random.default_rng(1)
    labels, p = rng.integers(0, 2, 200), rng.random(200)
    assert classification_metrics(labels, np.stack([1 - p, p], axis=1)) == pytest.approx(
        classification_metrics(labels, p)
    )


def test_roc_auc_counts_ties_half_and_is_nan_with_one_class():
    assert roc_auc(np.array([0, 1]), np.array([0.5, 0.5])) == 0.5
    assert roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.6, 0.6, 0.9])) == 0.875
    assert np.isnan(roc_auc(np.array([0, 0]), np.array([0.1, 0.6])))


def test_k_classes_by_hand():
    labels = np.array([0, 0, 1, 2, 2, 2])
    p = np.array(
        [
            [0.7, 0.2, 0.1],  # 0, right
            [0.2, 0.5, 0.3],  # 1, wrong
            [0.1, 0.8, 0.1],  # 1, right
            [0.1, 0.1, 0.8],  # 2, right
            [0.6, 0.2, 0.2],  # 0, wrong
            [0.3, 0.3, 0.4],  # 2, right
        ]
    )
    metrics = classification_metrics(labels, p, ["very negative", "Neutral", "5 stars!"])
    f1 = {"very_negative": 2 * 0.5 * 0.5, "neutral": 2 * 0.5 * 1 / 1.5, "5_stars_": 0.8}
    assert metrics == pytest.approx(
        {
            "test_loss": -np.mean(np.log([0.7, 0.2, 0.8, 0.8, 0.2, 0.4])),
            "test_accuracy": 4 / 6,
            "test_macro_f1": np.mean(list(f1.values())),
            "test_precision_very_negative": 1 / 2,
            "test_precision_neutral": 1 / 2,
            "test_precision_5_stars_": 1.0,
            "test_recall_very_negative": 1 / 2,
            "test_recall_neutral": 1.0,
            "test_recall_5_stars_": 2 / 3,
            **{f"test_f1_{name}": value for name, value in f1.items()},
        }
    )
    assert all(MLFLOW_KEY.match(key) for key in metrics)


def test_a_class_never_predicted_nor_seen_scores_zero_without_warnings():
    labels = np.array([0, 1, 1, 0])
    logits = np.array([[3.0, 0, -2, -2], [0, 2, -2, -2], [1, 0, -2, -2], [2, 1, -2, -2]])
    rows = softmax(logits).astype(np.float32)  # rows sum to 1 only to float32's precision
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metrics = classification_metrics(labels, rows, ["a", "b", "c", "d"])
    assert metrics["test_precision_c"] == metrics["test_recall_d"] == metrics["test_f1_d"] == 0.0
    assert metrics["test_accuracy"] == 0.75
    assert metrics["test_loss"] == pytest.approx(multiclass_cross_entropy(logits, labels), 1e-6)


def test_prefixes():
    labels, p = np.array([0, 1, 2]), np.eye(3) * 0.8 + 0.2 / 3
    plain = classification_metrics(labels, p, ["a", "b", "c"], prefix="")
    assert {"log_loss", "accuracy", "macro_f1", "precision_a", "recall_b", "f1_c"} <= set(plain)
    assert "loss" not in plain
    validation = classification_metrics(labels, p, ["a", "b", "c"], prefix="val_")
    assert validation["val_loss"] == plain["log_loss"] == pytest.approx(-np.log(0.8 + 0.2 / 3))
    two = classification_metrics(np.array([0, 1]), np.array([0.2, 0.9]), prefix="")
    assert list(two) == [
        "log_loss", "accuracy", "precision", "recall", "f1", "roc_auc", "macro_f1"
    ]  # fmt: skip


def test_metric_key():
    assert metric_key("very negative") == "very_negative"
    assert metric_key("5 stars!") == "5_stars_"
    assert metric_key("Mixed/neutral-ish 2.0") == "mixed/neutral-ish_2.0"
    assert metric_key("très négatif") == "tr_s_n_gatif"


@pytest.mark.parametrize(
    "names, labels",
    [
        (("negative", "positive"), [0, 1, 2]),  # the default names are two
        (("a", "b", "c", "d"), [0, 1, 2]),
        (("Very bad", "very bad", "good"), [0, 1, 2]),  # one key twice
        (("a", "b", "c"), [0, 1, 3]),
    ],
)
def test_k_classes_need_one_distinct_name_each_and_labels_in_range(names, labels):
    with pytest.raises(ValueError):
        classification_metrics(np.array(labels), np.full((3, 3), 1 / 3), names)


# --- the top-label expected calibration error --------------------------------------------------


def independent_top_label_ece(labels: np.ndarray, rows: np.ndarray, bins: int) -> float:
    top, correct = rows.max(axis=1), rows.argmax(axis=1) == labels
    total = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = (top >= low) & ((top < high) if b < bins - 1 else (top <= high))
        if inside.any():
            total += inside.sum() * abs(correct[inside].mean() - top[inside].mean())
    return total / len(labels)


@pytest.mark.parametrize("bins", [5, 15])
def test_top_label_ece_of_two_classes_by_numpy(bins):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 1000)
    p = 1 / (1 + np.exp(-3 * rng.normal(2 * labels - 1, 1.0)))
    rows = np.stack([1 - p, p], axis=1)
    expected = independent_top_label_ece(labels, rows, bins)
    assert expected > 0.01
    assert expected_calibration_error(labels, rows, bins) == pytest.approx(expected, abs=1e-12)


def test_top_label_ece_by_hand():
    labels = np.array([0, 1, 2, 1, 0])
    rows = np.array(
        [
            [0.9, 0.05, 0.05],  # top 0.9, right
            [0.5, 0.3, 0.2],  # top 0.5, wrong
            [0.2, 0.2, 0.6],  # top 0.6, right
            [0.05, 0.05, 0.9],  # top 0.9, wrong
            [0.4, 0.35, 0.25],  # top 0.4, right
        ]
    )
    # 5 bins of 0.2: 0.4 -> 2, 0.5 and 0.6 -> 2 and 3, 0.9 twice -> 4.
    confidence, accuracy, counts = top_label_bins(labels, rows, bins=5)
    assert counts.tolist() == [0, 0, 2, 1, 2]
    assert confidence[2:].tolist() == pytest.approx([0.45, 0.6, 0.9])
    assert accuracy[2:].tolist() == [0.5, 1.0, 0.5]
    expected = (2 * 0.05 + 1 * 0.4 + 2 * 0.4) / 5
    assert expected_calibration_error(labels, rows, bins=5) == pytest.approx(expected)
    assert independent_top_label_ece(labels, rows, 5) == pytest.approx(expected)


def test_ece_of_p_positive_is_unchanged():
    labels, p = np.array([0, 0, 1, 1, 1]), np.array([0.05, 0.35, 0.62, 0.97, 0.99])
    confidence, positive, counts = calibration_bins(labels, p)
    used = counts > 0
    expected = np.sum(np.abs(positive - confidence)[used] * counts[used]) / 5
    assert expected_calibration_error(labels, p) == pytest.approx(expected, abs=1e-15)
    assert expected_calibration_error(labels, p) == pytest.approx(0.164)


# --- softmax, its cross-entropy and temperature scaling ----------------------------------------


def test_softmax_and_cross_entropy_are_stable_and_two_classes_are_the_sigmoid():
    d = np.array([-800.0, -3.0, 0.0, 2.5, 800.0])
    labels = np.array([0, 1, 1, 0, 1])
    logits = np.stack([np.zeros_like(d), d], axis=1)
    assert softmax(logits)[:, 1] == pytest.approx(1 / (1 + np.exp(-np.clip(d, -700, 700))))
    assert np.all(np.isfinite(softmax(logits * 10)))
    assert multiclass_cross_entropy(logits, labels) == pytest.approx(cross_entropy(d, labels))
    assert multiclass_cross_entropy(logits + 1e4, labels) == pytest.approx(cross_entropy(d, labels))


def calibrated(seed: int, n: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits of a calibrated model and labels drawn from its softmax."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, (n, classes))
    cumulative = softmax(logits).cumsum(axis=1)
    labels = np.minimum((rng.random((n, 1)) > cumulative).sum(axis=1), classes - 1)
    return logits, labels


@pytest.mark.parametrize("temperature", [3.0, 0.5])
def test_temperature_of_k_classes_recovers_the_overconfidence(temperature):
    logits, labels = calibrated(4, 6000, 5)
    fitted = fit_temperature_multiclass(logits * temperature, labels)
    assert fitted == pytest.approx(temperature, rel=0.05)
    scaled = logits * temperature / fitted
    assert multiclass_cross_entropy(scaled, labels) < multiclass_cross_entropy(
        logits * temperature, labels
    )
    assert np.array_equal(scaled.argmax(axis=1), logits.argmax(axis=1))  # no label changes


@pytest.mark.parametrize("scale", [3.0, 0.25, 1.0])
def test_temperature_of_two_classes_is_the_binary_one(scale):
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, 2000)
    d = rng.normal(2 * labels - 1, 1.0) * 2 * scale
    logits = np.stack([np.zeros_like(d), d], axis=1)
    assert fit_temperature_multiclass(logits, labels) == pytest.approx(
        fit_temperature(d, labels), abs=1e-6
    )


def test_temperature_of_separable_classes_stops_at_its_lower_bound():
    logits = np.array([[5.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 5.0]])
    assert fit_temperature_multiclass(logits, np.array([0, 1, 2])) == pytest.approx(0.1, abs=1e-3)
