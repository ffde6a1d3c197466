"""Metrics of a binary classifier from labels and P(positive): accuracy, F1, ROC-AUC, loss.

Example:
    >>> classification_metrics(np.array([0, 1, 1]), np.array([0.2, 0.9, 0.4]))["test_accuracy"]
    0.6666666666666666
"""

from __future__ import annotations

import numpy as np


def classification_metrics(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    """Test loss (cross-entropy), accuracy, precision, recall, F1 and ROC-AUC of P(positive).

    Example:
        >>> classification_metrics(np.array([0, 1]), np.array([0.2, 0.9]))["test_accuracy"]
        1.0
    """
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
    return {
        "test_loss": float(loss),
        "test_accuracy": float(np.mean(predicted == labels)),
        "test_precision": precision,
        "test_recall": recall,
        "test_f1": f1,
        "test_roc_auc": roc_auc(labels, p),
    }


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties count half."""
    labels = np.asarray(labels).astype(bool)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = np.asarray(scores)[order]
    # Average ranks over ties.
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    average = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(average, counts)
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


CALIBRATION_BINS = 15


def sigmoid(log_odds: np.ndarray) -> np.ndarray:
    """P(positive) from log-odds, without overflow for large ones.

    Example:
        >>> sigmoid(np.array([-1000.0, 0.0, 1000.0])).tolist()
        [0.0, 0.5, 1.0]
    """
    return np.exp(-np.logaddexp(0.0, -np.asarray(log_odds, dtype=np.float64)))


def calibration_bins(
    labels: np.ndarray, probabilities: np.ndarray, bins: int = CALIBRATION_BINS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Equal-width bins of P(positive) over [0, 1]: per bin the mean predicted probability,
    the fraction of positive labels and the number of reviews (empty bins give NaN means).

    Example:
        >>> confidence, positive, counts = calibration_bins(np.array([0, 1, 1]),
        ...     np.array([0.1, 0.8, 0.9]), bins=2)
        >>> confidence.round(2).tolist(), positive.tolist(), counts.tolist()
        ([0.1, 0.85], [0.0, 1.0], [1, 2])
    """
    labels = np.asarray(labels, dtype=np.float64)
    p = np.asarray(probabilities, dtype=np.float64)
    index = np.minimum((p * bins).astype(int), bins - 1)
    counts = np.bincount(index, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.bincount(index, weights=p, minlength=bins) / counts
        positive = np.bincount(index, weights=labels, minlength=bins) / counts
    return confidence, positive, counts


def expected_calibration_error(
    labels: np.ndarray, probabilities: np.ndarray, bins: int = CALIBRATION_BINS
) -> float:
    """ECE of P(positive): the mean over equal-width bins, weighted by their share of reviews,
    of |fraction positive - mean predicted probability| (0 is perfectly calibrated).

    Example:
        >>> labels, p = np.array([0, 1, 1, 0]), np.array([0.1, 0.9, 0.9, 0.9])
        >>> round(expected_calibration_error(labels, p), 4)  # (1 x 0.1 + 3 x |2/3 - 0.9|) / 4
        0.2
    """
    confidence, positive, counts = calibration_bins(labels, probabilities, bins)
    used = counts > 0
    gaps = np.abs(positive[used] - confidence[used])
    return float(np.sum(gaps * counts[used]) / np.sum(counts))


def fit_temperature(log_odds: np.ndarray, labels: np.ndarray) -> float:
    """The temperature T in [0.1, 1100] that minimises the cross-entropy of
    ``sigmoid(log_odds / T)``.

    The loss is convex in 1/T, so a golden-section search over log(1/T) in [-7, ln 10] finds it.
    Dividing by T > 0 keeps every log-odds' sign: no predicted label changes. T > 1 softens an
    over-confident model, T < 1 sharpens an under-confident one (a strongly regularised
    logistic regression); T is never below 0.1, because on reviews that a model separates
    perfectly the loss falls without end as T goes to 0.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> labels = rng.integers(0, 2, 2000)
        >>> honest = rng.normal(2 * labels - 1, 1.0) * 2  # log-odds of a calibrated model
        >>> round(fit_temperature(honest * 3, labels))  # three times too confident
        3
        >>> round(fit_temperature(honest / 4, labels), 2)  # four times too timid: about 1/4
        0.24
        >>> round(fit_temperature(np.array([-5.0, 5.0]), np.array([0, 1])), 3)  # separable
        0.1
    """
    d = np.asarray(log_odds, dtype=np.float64)
    y = _signs(labels)

    def loss(log_inverse: float) -> float:
        return _log_loss(y, d * np.exp(log_inverse))

    return float(np.exp(-_golden_minimum(loss, *LOG_INVERSE_T)))


def fit_temperature_and_offset(log_odds: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """``(T, b)`` minimising the cross-entropy of ``sigmoid(log_odds / T + b)``: Platt scaling
    with the slope written as a temperature; T in [0.1, 1100] as in :func:`fit_temperature`, the
    offset b in [-10, 10].

    Where T only scales a model's confidence, b moves its decision threshold: a model that says
    positive too rarely (mean P(positive) below the share of positive reviews) gets b > 0, and
    the reviews whose log-odds lie between 0 and -b * T change label. The loss is jointly convex
    in (1/T, b), so a golden-section search over log(1/T) of the best b for each (found by a
    golden-section search too) finds it.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> labels = rng.integers(0, 2, 4000)
        >>> honest = rng.normal(2 * labels - 1, 1.0) * 2  # log-odds of a calibrated model
        >>> t, b = fit_temperature_and_offset(honest * 3 - 1.5, labels)  # sure, and too negative
        >>> round(t), round(b, 1)
        (3, 0.5)
    """
    d = np.asarray(log_odds, dtype=np.float64)
    y = _signs(labels)

    def best_offset(log_inverse: float) -> float:
        scaled = d * np.exp(log_inverse)
        return _golden_minimum(lambda b: _log_loss(y, scaled + b), *OFFSET, steps=60)

    def loss(log_inverse: float) -> float:
        return _log_loss(y, d * np.exp(log_inverse) + best_offset(log_inverse))

    log_inverse = _golden_minimum(loss, *LOG_INVERSE_T, steps=60)
    return float(np.exp(-log_inverse)), float(best_offset(log_inverse))


def match_temperature_and_offset(
    log_odds: np.ndarray, reference: np.ndarray
) -> tuple[float, float]:
    """``(T, b)`` such that ``sigmoid(log_odds / T + b)`` has the mean and the mean binary
    entropy of ``sigmoid(reference)``, both log-odds on the same (unlabelled) reviews: a
    calibration found without labels, by matching a calibrated model's confidence.

    The mean fixes the lean (for each T, b is the one offset giving that mean) and the mean
    entropy the spread (it falls as 1/T grows). Every target is reachable: a mean entropy is
    never above the entropy of the mean. Unlike fitting the cross-entropy against the
    reference as soft labels, this leaves T unbiased where the two models disagree on single
    reviews. T and b keep the ranges of :func:`fit_temperature_and_offset`.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> honest = rng.normal(0.0, 3.0, 4000)  # log-odds of a calibrated model
        >>> t, b = match_temperature_and_offset(honest * 3 - 1.5, honest)
        >>> round(t, 3), round(b, 3)
        (3.0, 0.5)
    """
    d = np.asarray(log_odds, dtype=np.float64)
    target_mean = float(np.mean(sigmoid(reference)))
    target_entropy = mean_entropy(reference)

    def offset_for(log_inverse: float) -> float:
        scaled = d * np.exp(log_inverse)
        return _golden_minimum(
            lambda b: (np.mean(sigmoid(scaled + b)) - target_mean) ** 2, *OFFSET, steps=80
        )

    def entropy_gap(log_inverse: float) -> float:
        calibrated = d * np.exp(log_inverse) + offset_for(log_inverse)
        return (mean_entropy(calibrated) - target_entropy) ** 2

    log_inverse = _golden_minimum(entropy_gap, *LOG_INVERSE_T, steps=80)
    return float(np.exp(-log_inverse)), float(offset_for(log_inverse))


def mean_entropy(log_odds: np.ndarray) -> float:
    """Mean binary entropy (nats) of ``sigmoid(log_odds)``, exact in the tails.

    Example:
        >>> round(mean_entropy(np.array([0.0, 1000.0])), 4)  # ln 2 and 0
        0.3466
    """
    z = np.asarray(log_odds, dtype=np.float64)
    # H = p * softplus(-z) + (1 - p) * softplus(z), with p = sigmoid(z)
    p = sigmoid(z)
    return float(np.mean(p * np.logaddexp(0.0, -z) + (1.0 - p) * np.logaddexp(0.0, z)))


LOG_INVERSE_T = (-7.0, float(np.log(10.0)))  # log(1 / T): T from 0.1 to e^7 (about 1100)
OFFSET = (-10.0, 10.0)  # the offset b, in log-odds


def cross_entropy(log_odds: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy of ``sigmoid(log_odds)`` against 0/1 labels.

    Example:
        >>> round(cross_entropy(np.array([0.0, 0.0]), np.array([0, 1])), 4)  # ln 2
        0.6931
    """
    return _log_loss(_signs(labels), np.asarray(log_odds, dtype=np.float64))


def _signs(labels: np.ndarray) -> np.ndarray:
    """Labels written as +1 (positive) / -1."""
    return np.where(np.asarray(labels) > 0, 1.0, -1.0)


def _log_loss(signs: np.ndarray, log_odds: np.ndarray) -> float:
    """Mean cross-entropy of ``sigmoid(log_odds)`` against labels written as +1 / -1."""
    return float(np.mean(np.logaddexp(0.0, -signs * log_odds)))


def _golden_minimum(loss, low: float, high: float, steps: int = 100) -> float:
    """The minimum of a unimodal ``loss`` on [low, high], by golden-section search."""
    golden = (np.sqrt(5) - 1) / 2
    for _ in range(steps):
        a, b = high - golden * (high - low), low + golden * (high - low)
        if loss(a) < loss(b):
            high = b
        else:
            low = a
    return (low + high) / 2
