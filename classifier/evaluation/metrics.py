"""Metrics of a classifier from labels and class probabilities: loss, accuracy, F1 and ROC-AUC
(scikit-learn's); the expected calibration error and temperature scaling (ours, in NumPy; the roots
of their slopes by SciPy).

Two classes come as P(positive) (or log-odds), shape (N,); K classes as one row of class
probabilities (or logits) per example, shape (N, K).

Example:
    >>> classification_metrics(np.array([0, 1, 1]), np.array([0.2, 0.9, 0.4]))["test_accuracy"]
    0.6666666666666666
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np


def classification_metrics(
    labels: np.ndarray,
    probabilities: np.ndarray,
    class_names: Sequence[str] = ("negative", "positive"),
    prefix: str = "test_",
) -> dict[str, float]:
    """Loss (cross-entropy), accuracy, F1 and more of class probabilities, by scikit-learn.

    ``probabilities``: P(class 1), shape (N,), or rows of class probabilities, shape (N, K) (two
    columns are two classes: the second is P(class 1)). The keys, each after ``prefix``:

    - two classes: ``loss``, ``accuracy``, ``precision``, ``recall``, ``f1``, ``roc_auc`` (class 1
      is the positive one, predicted where P(class 1) >= 0.5; NaN with one class among the
      labels) and ``macro_f1``; ``class_names`` are not read.
    - K > 2: ``loss``, ``accuracy``, ``macro_f1`` and per class ``precision_<name>``,
      ``recall_<name>`` and ``f1_<name>`` (0 where undefined), the names of ``class_names``
      written by :func:`metric_key`; predicted: the most probable class.

    The loss is ``<prefix>loss`` (``test_loss``, ``val_loss``), and ``log_loss`` with no prefix.
    P(class 1) is clipped to [1e-7, 1 - 1e-7] first; K-class rows are scaled to sum to 1 (a float32
    softmax is a little off) and scikit-learn clips them to [eps, 1 - eps].

    Example:
        >>> classification_metrics(np.array([0, 1]), np.array([0.2, 0.9]))["test_accuracy"]
        1.0
        >>> p = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3]])
        >>> m = classification_metrics([0, 2, 2], p, ["bad", "so so", "good"], prefix="")
        >>> m["accuracy"], m["recall_good"], m["precision_so_so"], round(m["log_loss"], 4)
        (0.6666666666666666, 0.5, 0.0, 0.6905)
    """
    from sklearn import metrics  # a second to import: only where metrics are computed

    labels = np.asarray(labels).astype(int)
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim == 2 and p.shape[1] == 2:
        p = p[:, 1]
    if p.ndim == 1:
        p = np.clip(p, 1e-7, 1 - 1e-7)
        predicted = (p >= 0.5).astype(int)
        precision, recall, f1, _ = metrics.precision_recall_fscore_support(
            labels, predicted, labels=[0, 1], zero_division=0
        )
        scores = {
            "loss": metrics.log_loss(labels, np.stack([1 - p, p], axis=1), labels=[0, 1]),
            "accuracy": metrics.accuracy_score(labels, predicted),
            "precision": precision[1],
            "recall": recall[1],
            "f1": f1[1],
            "roc_auc": roc_auc(labels, p),
            "macro_f1": np.mean(f1),
        }
    else:
        classes = p.shape[1]
        names = [metric_key(name) for name in class_names]
        if len(set(names)) != classes:
            raise ValueError(f"{classes} classes need as many distinct names, not {names}")
        if labels.size and (labels.min() < 0 or labels.max() >= classes):
            raise ValueError(f"labels must lie in [0, {classes}): {np.unique(labels).tolist()}")
        p = p / p.sum(axis=1, keepdims=True)
        predicted = p.argmax(axis=1)
        every = list(range(classes))
        precision, recall, f1, _ = metrics.precision_recall_fscore_support(
            labels, predicted, labels=every, zero_division=0
        )
        scores = {
            "loss": metrics.log_loss(labels, p, labels=every),
            "accuracy": metrics.accuracy_score(labels, predicted),
            "macro_f1": np.mean(f1),
        }
        for metric, values in (("precision", precision), ("recall", recall), ("f1", f1)):
            scores |= {f"{metric}_{name}": value for name, value in zip(names, values, strict=True)}
    loss = f"{prefix}loss" if prefix else "log_loss"
    return {(loss if key == "loss" else prefix + key): float(v) for key, v in scores.items()}


def metric_key(name: str) -> str:
    """``name`` fit for an MLflow metric key: lower case, and every character but ASCII letters,
    digits, ``_``, ``-``, ``.`` and ``/`` (spaces too) written as ``_``.

    Example:
        >>> metric_key("very negative"), metric_key("5 stars!"), metric_key("Neutral/Mixed")
        ('very_negative', '5_stars_', 'neutral/mixed')
    """
    return re.sub(r"[^a-z0-9_\-./]", "_", name.lower())


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (scikit-learn's): P(score of a positive > score of a negative),
    ties count half; NaN where the labels hold one class only.

    Example:
        >>> roc_auc(np.array([0, 0, 1]), np.array([0.1, 0.5, 0.5])), roc_auc([1, 1], [0.2, 0.3])
        (0.75, nan)
    """
    from sklearn.metrics import roc_auc_score

    labels = np.asarray(labels).astype(bool)
    if labels.all() or not labels.any():
        return float("nan")
    return float(roc_auc_score(labels, np.asarray(scores)))


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


def top_label_bins(
    labels: np.ndarray, probabilities: np.ndarray, bins: int = CALIBRATION_BINS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Equal-width bins over [0, 1] of the top class probability of rows (N, K): per bin the mean
    top probability, the fraction of rows whose top class is the label (the accuracy) and the
    number of rows, as :func:`calibration_bins` (empty bins give NaN means).

    Example:
        >>> p = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8], [0.4, 0.3, 0.3]])
        >>> confidence, accuracy, counts = top_label_bins(np.array([0, 2, 2, 0]), p, bins=2)
        >>> confidence.round(2).tolist(), accuracy.round(2).tolist(), counts.tolist()
        ([0.4, 0.7], [1.0, 0.67], [1, 3])
    """
    p = np.asarray(probabilities, dtype=np.float64)
    correct = p.argmax(axis=1) == np.asarray(labels)
    return calibration_bins(correct, p.max(axis=1), bins)


def expected_calibration_error(
    labels: np.ndarray, probabilities: np.ndarray, bins: int = CALIBRATION_BINS
) -> float:
    """ECE: the mean over equal-width bins, weighted by their share of examples, of
    |observed - mean predicted probability| (0 is perfectly calibrated). Of P(positive), shape
    (N,): observed is the fraction positive (:func:`calibration_bins`); of rows (N, K), the
    top-label ECE (Guo et al. 2017): the accuracy of the top class in bins of its probability
    (:func:`top_label_bins`).

    Example:
        >>> labels, p = np.array([0, 1, 1, 0]), np.array([0.1, 0.9, 0.9, 0.9])
        >>> round(expected_calibration_error(labels, p), 4)  # (1 x 0.1 + 3 x |2/3 - 0.9|) / 4
        0.2
        >>> rows = np.stack([1 - p, p], axis=1)  # top 0.9 everywhere, right 3 times out of 4
        >>> round(expected_calibration_error(labels, rows), 4)  # |3/4 - 0.9|
        0.15
    """
    binned = top_label_bins if np.ndim(probabilities) == 2 else calibration_bins
    confidence, observed, counts = binned(labels, probabilities, bins)
    used = counts > 0
    gaps = np.abs(observed[used] - confidence[used])
    return float(np.sum(gaps * counts[used]) / np.sum(counts))


def fit_temperature(log_odds: np.ndarray, labels: np.ndarray) -> float:
    """The temperature T in [0.1, 1100] that minimises the cross-entropy of
    ``sigmoid(log_odds / T)``.

    The loss is convex in 1/T, so its slope in 1/T, ``mean((sigmoid(d / T) - y) * d)``, has
    one root in log(1/T) in [-7, ln 10] (or the loss is least at an end).
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
    y = _positives(labels)

    def slope(log_inverse: float) -> float:
        return _slope_in_inverse_t(d, y, d * np.exp(log_inverse))

    return float(np.exp(-_root(slope, *LOG_INVERSE_T)))


def fit_temperature_multiclass(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature T in [0.1, 1100] that minimises the cross-entropy of
    ``softmax(logits / T)``, logits of shape (N, K): :func:`fit_temperature` for K classes
    (convex in 1/T too; no predicted class changes).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> honest = rng.normal(0.0, 2.0, (3000, 4))  # logits of a calibrated model
        >>> labels = np.array([rng.choice(4, p=row) for row in softmax(honest)])
        >>> round(fit_temperature_multiclass(honest * 3, labels))  # three times too confident
        3
    """
    z = np.asarray(logits, dtype=np.float64)
    true = z[np.arange(len(z)), np.asarray(labels).astype(int)]

    def slope(log_inverse: float) -> float:  # of the cross-entropy in 1/T
        expected = np.sum(softmax(z * np.exp(log_inverse)) * z, axis=-1)
        return float(np.mean(expected - true))

    return float(np.exp(-_root(slope, *LOG_INVERSE_T)))


def fit_temperature_and_offset(log_odds: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """``(T, b)`` minimising the cross-entropy of ``sigmoid(log_odds / T + b)``: Platt scaling
    with the slope written as a temperature; T in [0.1, 1100] as in :func:`fit_temperature`, the
    offset b in [-10, 10].

    Where T only scales a model's confidence, b moves its decision threshold: a model that says
    positive too rarely (mean P(positive) below the share of positive reviews) gets b > 0, and
    the reviews whose log-odds lie between 0 and -b * T change label. The loss is jointly convex
    in (1/T, b): for each T the best b is where the mean P(positive) is the share of positive
    reviews, and the loss at that b is convex in 1/T, so the root of its slope in log(1/T) finds
    T as in :func:`fit_temperature`.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> labels = rng.integers(0, 2, 4000)
        >>> honest = rng.normal(2 * labels - 1, 1.0) * 2  # log-odds of a calibrated model
        >>> t, b = fit_temperature_and_offset(honest * 3 - 1.5, labels)  # sure, and too negative
        >>> round(t), round(b, 1)
        (3, 0.5)
    """
    d = np.asarray(log_odds, dtype=np.float64)
    y = _positives(labels)
    share = float(np.mean(y))

    def best_offset(log_inverse: float) -> float:
        scaled = d * np.exp(log_inverse)
        return _root(lambda b: float(np.mean(sigmoid(scaled + b))) - share, *OFFSET)

    def slope(log_inverse: float) -> float:  # at the best b (whose own slope is 0)
        return _slope_in_inverse_t(d, y, d * np.exp(log_inverse) + best_offset(log_inverse))

    log_inverse = _root(slope, *LOG_INVERSE_T)
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
        return _root(lambda b: np.mean(sigmoid(scaled + b)) - target_mean, *OFFSET)

    def entropy_gap(log_inverse: float) -> float:
        calibrated = d * np.exp(log_inverse) + offset_for(log_inverse)
        return mean_entropy(calibrated) - target_entropy

    log_inverse = _root(entropy_gap, *LOG_INVERSE_T)
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
    signs = 2.0 * _positives(labels) - 1.0  # +1 positive, -1 negative
    return float(np.mean(np.logaddexp(0.0, -signs * np.asarray(log_odds, dtype=np.float64))))


def softmax(logits: np.ndarray) -> np.ndarray:
    """Class probabilities from logits (classes on the last axis), without overflow.

    Example:
        >>> softmax(np.array([[0.0, 0.0], [1000.0, 0.0]])).tolist()
        [[0.5, 0.5], [1.0, 0.0]]
    """
    return np.exp(_log_softmax(logits))


def multiclass_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy of ``softmax(logits)`` (N, K) against labels in [0, K).

    Example:
        >>> round(multiclass_cross_entropy(np.zeros((2, 3)), np.array([0, 2])), 4)  # ln 3
        1.0986
    """
    rows = _log_softmax(logits)
    picked = np.take_along_axis(rows, np.asarray(labels).astype(int)[:, None], axis=1)
    return float(-np.mean(picked))


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """``log(softmax(logits))`` as ``logits - logsumexp(logits)``, the largest taken out first."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def _positives(labels: np.ndarray) -> np.ndarray:
    """Labels as 1.0 (positive) and 0.0."""
    return (np.asarray(labels) > 0).astype(np.float64)


def _slope_in_inverse_t(d: np.ndarray, y: np.ndarray, log_odds: np.ndarray) -> float:
    """The slope in 1/T of the mean cross-entropy of ``sigmoid(log_odds = d / T + b)``."""
    return float(np.mean((sigmoid(log_odds) - y) * d))


def _root(gap, low: float, high: float) -> float:
    """Where the increasing or decreasing ``gap`` is 0 on [low, high] (SciPy's Brent root
    finder, to 1e-12), or the end where it is closest to 0 when it keeps one sign there: for
    the slope of a convex loss, where the loss is least."""
    from scipy.optimize import brentq  # SciPy comes with scikit-learn

    at_low, at_high = gap(low), gap(high)
    if at_low * at_high > 0:
        return low if abs(at_low) < abs(at_high) else high
    return float(brentq(gap, low, high, xtol=1e-12))
