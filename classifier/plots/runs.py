"""Figures of training runs and sweeps: curves, confusion matrix, reliability diagram, accuracy
per variant, a search's history and parameter importances."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from classifier.plots.canvas import save


def plot_training_curves(
    path: str | Path,
    history: dict[str, Sequence[float]],
    best_epoch: int | None = None,
    splits: Sequence[tuple[str, str]] = (("train", "training"), ("val", "validation")),
    metrics: Sequence[str] = ("loss", "accuracy"),
) -> Path:
    """Loss and accuracy per epoch, training and validation side by side.

    Args:
        path: PNG file to write.
        history: ``train_loss``, ``val_loss``, ``train_accuracy``, ``val_accuracy`` per epoch
            (``<split>_<metric>`` for other ``splits`` and ``metrics``).
        best_epoch: epoch (from 1) to mark with a vertical line.
        splits: ``(history prefix, legend label)`` of the two curves of each panel.
        metrics: one panel each (pretraining: ``loss`` and ``masked_accuracy``).

    Example:
        >>> plot_training_curves(tmp / "curves.png", {"train_loss": [0.6, 0.4],
        ...     "val_loss": [0.5, 0.45], "train_accuracy": [0.7, 0.8],
        ...     "val_accuracy": [0.75, 0.78]}, best_epoch=2).name
        'curves.png'
    """
    figure = Figure(figsize=(10, 4))
    for index, metric in enumerate(metrics):
        axes = figure.add_subplot(1, len(metrics), index + 1)
        for (split, label), style in zip(splits, ("-o", "-s"), strict=False):
            values = history.get(f"{split}_{metric}", [])
            epochs = np.arange(1, len(values) + 1)
            axes.plot(epochs, values, style, label=label)
        if best_epoch:
            axes.axvline(best_epoch, color="grey", linestyle="--", label=f"best epoch {best_epoch}")
        axes.set_xlabel("epoch")
        axes.set_title(metric.replace("_", " "))
        axes.grid(alpha=0.3)
        axes.legend()
    return save(figure, path)


def plot_confusion_matrix(
    path: str | Path, labels: Sequence[int], predicted: Sequence[int], names: Sequence[str]
) -> Path:
    """Confusion matrix with counts and row percentages (rows: true label, columns: predicted).

    The figure grows with the number of classes (two keep 4.5 x 4 inches), with smaller text past
    five classes and the column names slanted where they are long.

    Example:
        >>> plot_confusion_matrix(tmp / "cm.png", [0, 1, 1], [0, 1, 0], ["negative", "positive"]).name
        'cm.png'
        >>> plot_confusion_matrix(tmp / "cm5.png", [0, 4, 2], [1, 4, 2], ["very negative",
        ...     "negative", "neutral", "positive", "very positive"]).name
        'cm5.png'
    """
    labels, predicted = np.asarray(labels, int), np.asarray(predicted, int)
    size = len(names)
    counts = np.zeros((size, size), dtype=int)
    np.add.at(counts, (labels, predicted), 1)
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    more = max(size - 2, 0)
    figure = Figure(figsize=(4.5 + 0.8 * more, 4 + 0.7 * more))
    font = {"fontsize": 8} if size > 5 else {}
    axes = figure.add_subplot(1, 1, 1)
    image = axes.imshow(share, cmap="Blues", vmin=0, vmax=1)
    figure.colorbar(image, ax=axes, fraction=0.046)
    for row in range(size):
        for column in range(size):
            colour = "white" if share[row, column] > 0.5 else "black"
            text = f"{counts[row, column]:,}\n{share[row, column]:.1%}"
            axes.text(column, row, text, ha="center", va="center", color=colour, **font)
    slant = {"rotation": 30, "ha": "right"} if sum(map(len, names)) > 24 else {}
    axes.set_xticks(range(size), names, **slant, **font)
    axes.set_yticks(range(size), names, **font)
    axes.set_xlabel("predicted")
    axes.set_ylabel("true")
    axes.set_title(f"accuracy {np.trace(counts) / max(counts.sum(), 1):.3f}")
    return save(figure, path)


def plot_test_accuracy_by_variant(
    path: str | Path,
    labels: Sequence[str],
    means: Sequence[float],
    stds: Sequence[float],
    values: Sequence[Sequence[float]] | None = None,
) -> Path:
    """Bar chart of the mean test accuracy per variant, with ± std error bars over seeds.

    Args:
        path: PNG file to write.
        labels: one name per bar (the variants of a sweep).
        means: mean test accuracy per variant.
        stds: its standard deviation over seeds (0 for one seed).
        values: optional per-seed accuracies, drawn as dots on each bar.

    Example:
        >>> plot_test_accuracy_by_variant(tmp / "test_accuracy.png", ["attention", "encoder"],
        ...     [0.86, 0.87], [0.004, 0.002], values=[[0.855, 0.864], [0.868, 0.872]]).name
        'test_accuracy.png'
    """
    means, stds = np.asarray(means, dtype=float), np.asarray(stds, dtype=float)
    positions = np.arange(len(labels))
    figure = Figure(figsize=(max(6.0, 1.3 * len(labels) + 2), 4.5))
    axes = figure.add_subplot()
    colours = [f"C{i % 10}" for i in range(len(labels))]
    axes.bar(positions, means, yerr=stds, capsize=6, color=colours, alpha=0.8, zorder=2)
    for i, seeds in enumerate(values or []):
        axes.plot([positions[i]] * len(seeds), seeds, "o", color="black", markersize=3, zorder=3)
    for i, (mean, std) in enumerate(zip(means, stds, strict=True)):
        axes.annotate(
            f"{mean:.4f}\n± {std:.4f}",
            (positions[i], mean + std),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=8,
        )
    # Accuracies sit close together: start the axis a little below the lowest bar.
    low = min([*(means - stds), *[v for seeds in values or [] for v in seeds]], default=0.0)
    high = max([*(means + stds), *[v for seeds in values or [] for v in seeds]], default=1.0)
    margin = max(0.02, 0.1 * (high - low))
    axes.set_ylim(max(0.0, low - margin), min(1.05, high + 3 * margin))
    axes.set_xticks(positions, list(labels), rotation=20, ha="right")
    axes.set_ylabel("test accuracy (mean ± std over seeds)")
    axes.set_title("Test accuracy per variant")
    axes.grid(axis="y", alpha=0.3, zorder=0)
    return save(figure, path)


def plot_validation_accuracy_by_variant(
    path: str | Path, curves: dict[str, Sequence[Sequence[float]]]
) -> Path:
    """Validation accuracy per epoch, one line per variant (the mean over its seeds, with a
    ± std band where there are several).

    Args:
        path: PNG file to write.
        curves: variant -> one ``val_accuracy`` list per seed (epoch 1 first); seeds that stopped
            early count only for the epochs they ran.

    Example:
        >>> plot_validation_accuracy_by_variant(tmp / "val_accuracy.png",
        ...     {"attention": [[0.80, 0.84], [0.81, 0.85]], "encoder": [[0.82, 0.86, 0.87]]}).name
        'val_accuracy.png'
    """
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(9, 5))
    axes = figure.add_subplot()
    for i, (label, seeds) in enumerate(curves.items()):
        length = max((len(seed) for seed in seeds), default=0)
        if not length:
            continue
        table = np.full((len(seeds), length), np.nan)
        for row, seed in enumerate(seeds):
            table[row, : len(seed)] = seed
        mean = np.nanmean(table, axis=0)
        std = np.nanstd(table, axis=0)
        epochs = np.arange(1, length + 1)
        colour = f"C{i % 10}"
        axes.plot(epochs, mean, "-o", color=colour, markersize=3, label=label)
        if len(seeds) > 1:
            axes.fill_between(epochs, mean - std, mean + std, color=colour, alpha=0.15)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("epoch")
    axes.set_ylabel("validation accuracy (mean over seeds)")
    axes.set_title("Validation accuracy per epoch")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return save(figure, path)


def reliability_points(
    labels: Sequence[int], probabilities: np.ndarray, bins: int = 15
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """What :func:`plot_reliability_diagram` draws of one set of probabilities: per bin the mean
    predicted probability (x), what was observed (y), the number of reviews, and the ECE. Of
    P(positive), shape (N,), y is the fraction positive; of rows (N, K), bins of the top class
    probability and y the accuracy of the top class (top-label).

    Example:
        >>> rows = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
        >>> x, y, counts, ece = reliability_points([0, 2, 2], rows, bins=2)
        >>> x.round(2).tolist(), y.tolist(), counts.tolist(), round(ece, 4)
        ([0.4, 0.8], [1.0, 0.5], [1, 2], 0.4)
    """
    from classifier.evaluation.metrics import (
        calibration_bins,
        expected_calibration_error,
        top_label_bins,
    )

    labels, p = np.asarray(labels), np.asarray(probabilities, dtype=np.float64)
    binned = top_label_bins if p.ndim == 2 else calibration_bins
    confidence, observed, counts = binned(labels, p, bins)
    return confidence, observed, counts, expected_calibration_error(labels, p, bins)


def plot_reliability_diagram(
    path: str | Path, labels: Sequence[int], probabilities: dict[str, np.ndarray], bins: int = 15
) -> Path:
    """Reliability diagram: per bin of P(positive), the fraction of positive reviews against the
    mean predicted probability, one line per set of probabilities (with its ECE), the diagonal
    for perfect calibration, and the number of reviews per bin below. Rows of K class
    probabilities, shape (N, K), give the top-label diagram: the accuracy of the top class per
    bin of its probability (:func:`reliability_points`).

    Example:
        >>> p = np.array([0.1, 0.4, 0.8, 0.95])
        >>> plot_reliability_diagram(tmp / "reliability.png", [0, 1, 1, 1], {"model": p}).name
        'reliability.png'
        >>> rows = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
        >>> plot_reliability_diagram(tmp / "top.png", [0, 2, 2], {"model": rows}).name
        'top.png'
    """
    shapes = {np.ndim(p) for p in probabilities.values()}
    if len(shapes) > 1:
        raise ValueError("probabilities: all P(positive) (N,) or all class rows (N, K), not both")
    top_label = shapes == {2}
    figure = Figure(figsize=(6, 7))
    axes, counts_axes = figure.subplots(2, 1, height_ratios=(3, 1), sharex=True)
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", label="perfect calibration")
    for index, (name, p) in enumerate(probabilities.items()):
        confidence, observed, counts, ece = reliability_points(labels, p, bins)
        used = counts > 0
        label = f"{name} ({'top-label ' if top_label else ''}ECE {ece:.3f})"
        axes.plot(confidence[used], observed[used], "-o", label=label)
        edges = np.linspace(0, 1, bins + 1)
        width = 0.8 / bins / len(probabilities)
        counts_axes.bar(edges[:-1] + (index + 0.6) * width, counts, width=width, label=name)
    if top_label:
        axes.set_ylabel("accuracy")
        axes.set_title(f"Top-label reliability on the test split ({bins} bins)")
        counts_axes.set_xlabel("confidence (top class probability)")
    else:
        axes.set_ylabel("fraction of positive reviews")
        axes.set_title(f"Reliability of P(positive) on the test split ({bins} bins)")
        counts_axes.set_xlabel("predicted P(positive)")
    axes.legend(loc="upper left")
    counts_axes.set_ylabel("reviews")
    counts_axes.set_yscale("log")
    return save(figure, path)


def plot_optimization_history(
    path: str | Path, trials: Sequence[int], values: Sequence[float]
) -> Path:
    """A search's validation accuracy per trial, with the best so far as a step line.

    Example:
        >>> plot_optimization_history(tmp / "history.png", [1, 2, 3], [0.80, 0.84, 0.82]).name
        'history.png'
    """
    figure = Figure(figsize=(7, 4))
    axes = figure.add_subplot(1, 1, 1)
    axes.plot(trials, values, "o", label="trial")
    axes.step(
        trials,
        np.maximum.accumulate(np.asarray(values, dtype=float)),
        where="post",
        label="best so far",
    )
    axes.set_xlabel("trial")
    axes.set_ylabel("best validation accuracy")
    axes.set_title("Search: validation accuracy per trial")
    axes.legend(loc="lower right")
    axes.grid(alpha=0.3)
    return save(figure, path)


def plot_param_importances(path: str | Path, importances: dict[str, float]) -> Path:
    """How much each searched config key explains of the validation accuracy (fANOVA); with
    no importances (every trial scored the same) the figure says so.

    Example:
        >>> plot_param_importances(tmp / "imp.png", {"train.learning_rate": 0.8,
        ...     "model.dropout": 0.2}).name
        'imp.png'
    """
    names = list(importances)[::-1]
    figure = Figure(figsize=(7, 1.2 + 0.5 * max(len(names), 2)))
    axes = figure.add_subplot(1, 1, 1)
    if names:
        axes.barh(names, [importances[name] for name in names], color="tab:blue")
    else:
        axes.set_yticks([])
        axes.text(
            0.5,
            0.5,
            "every trial reached the same validation accuracy:\nno parameter explains anything yet",
            ha="center",
            va="center",
            transform=axes.transAxes,
        )
    axes.set_xlabel("importance for validation accuracy (fANOVA, sums to 1)")
    axes.set_xlim(0, 1)
    axes.set_title("Search: parameter importances")
    return save(figure, path)
