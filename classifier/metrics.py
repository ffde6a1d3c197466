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
