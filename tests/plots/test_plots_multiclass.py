"""Figures of K classes: a confusion matrix that stays readable up to ten classes, and the
top-label reliability diagram, down to the points it draws."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from classifier.evaluation.metrics import (
    calibration_bins,
    expected_calibration_error,
    softmax,
    top_label_bins,
)
from classifier.plots import plot_confusion_matrix, plot_reliability_diagram, runs
from classifier.plots.runs import reliability_points

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIVE = ["very negative", "negative", "neutral", "positive", "very positive"]


def png_size(path) -> tuple[int, int]:
    """(width, height) in pixels of a PNG file, from its header."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    assert len(data) > 1024
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def figures(monkeypatch):
    """The figures the plot functions save, in order."""
    saved = []

    def keep(figure, path, **kwargs):
        saved.append(figure)
        return save(figure, path, **kwargs)

    save = runs.save
    monkeypatch.setattr(runs, "save", keep)
    return saved


def predictions(classes: int, n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    logits = rng.normal(0.0, 1.0, (n, classes)) + 2.5 * np.eye(classes)[labels]
    return labels, softmax(logits)


def test_confusion_matrix_of_five_long_names_is_a_sensible_png(tmp_path, figures):
    labels, rows = predictions(5)
    path = plot_confusion_matrix(tmp_path / "cm5.png", labels, rows.argmax(axis=1), FIVE)
    width, height = png_size(path)
    two = plot_confusion_matrix(tmp_path / "cm2.png", [0, 1, 1], [0, 1, 0], FIVE[1:4:2])
    two_width, two_height = png_size(two)
    assert two_width < width < 1400 and two_height < height < 1400
    five, pair = figures
    assert tuple(pair.get_size_inches()) == (4.5, 4.0)  # two classes: the picture as it was
    assert tuple(five.get_size_inches()) == pytest.approx((6.9, 6.1))
    axes = five.axes[0]
    assert [tick.get_text() for tick in axes.get_xticklabels()] == FIVE
    assert {tick.get_rotation() for tick in axes.get_xticklabels()} == {30.0}  # long: slanted
    assert {tick.get_rotation() for tick in pair.axes[0].get_xticklabels()} == {0.0}
    counts = np.zeros((5, 5), int)
    np.add.at(counts, (labels, rows.argmax(axis=1)), 1)
    assert [text.get_text().split("\n")[0] for text in axes.texts] == [
        f"{count:,}" for count in counts.ravel()
    ]


def test_confusion_matrix_of_ten_classes_has_smaller_text(tmp_path, figures):
    labels, rows = predictions(10, n=2000)
    names = [f"class {i}" for i in range(10)]
    width, height = png_size(
        plot_confusion_matrix(tmp_path / "cm10.png", labels, rows.argmax(axis=1), names)
    )
    assert 700 < width < 1400 and 700 < height < 1400
    (figure,) = figures
    assert {text.get_fontsize() for text in figure.axes[0].texts} == {8.0}


def test_reliability_points_of_k_classes_are_the_top_label_bins():
    labels, rows = predictions(5, n=1000)
    x, y, counts, ece = reliability_points(labels, rows, bins=10)
    expected = top_label_bins(labels, rows, bins=10)
    for got, want in zip((x, y, counts), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert counts[:2].tolist() == [0, 0]  # the top of five classes is at least 0.2
    assert counts.sum() == 1000
    assert ece == expected_calibration_error(labels, rows, bins=10)


def test_reliability_points_by_hand():
    labels = np.array([0, 1, 2, 2])
    rows = np.array([[0.9, 0.05, 0.05], [0.7, 0.2, 0.1], [0.3, 0.3, 0.4], [0.1, 0.1, 0.8]])
    x, y, counts, ece = reliability_points(labels, rows, bins=4)
    # Tops 0.9 (right), 0.7 (wrong), 0.4 (right), 0.8 (right): bins 3, 2, 1, 3.
    assert counts.tolist() == [0, 1, 1, 2]
    assert x[1:].tolist() == pytest.approx([0.4, 0.7, 0.85])
    assert y[1:].tolist() == [1.0, 0.0, 1.0]
    assert ece == pytest.approx((0.6 + 0.7 + 2 * 0.15) / 4)
    # P(positive) is binned as before.
    p = np.array([0.1, 0.4, 0.8, 0.95])
    x, y, counts, ece = reliability_points([0, 1, 1, 1], p, bins=4)
    for got, want in zip(
        (x, y, counts), calibration_bins(np.array([0, 1, 1, 1]), p, 4), strict=True
    ):
        np.testing.assert_array_equal(got, want)
    assert ece == expected_calibration_error(np.array([0, 1, 1, 1]), p, 4)


def test_top_label_reliability_diagram_draws_those_points(tmp_path, figures):
    labels, rows = predictions(5)
    sharper = softmax(np.log(rows) * 3)
    path = plot_reliability_diagram(
        tmp_path / "reliability.png", labels, {"uncalibrated": sharper, "calibrated": rows}
    )
    width, height = png_size(path)
    assert 400 < width < 1000 and 500 < height < 1000
    (figure,) = figures
    axes, counts_axes = figure.axes
    assert axes.get_title() == "Top-label reliability on the test split (15 bins)"
    assert axes.get_ylabel() == "accuracy"
    assert counts_axes.get_xlabel() == "confidence (top class probability)"
    diagonal, *lines = axes.get_lines()
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert legend[0] == "perfect calibration"
    for line, text, (name, p) in zip(
        lines, legend[1:], {"uncalibrated": sharper, "calibrated": rows}.items(), strict=True
    ):
        x, y, counts, ece = reliability_points(labels, p, 15)
        np.testing.assert_array_equal(line.get_xdata(), x[counts > 0])
        np.testing.assert_array_equal(line.get_ydata(), y[counts > 0])
        assert text == f"{name} (top-label ECE {ece:.3f})"
    assert [bar.get_height() for bar in counts_axes.patches[:15]] == list(
        reliability_points(labels, sharper, 15)[2]
    )


def test_reliability_diagram_of_p_positive_is_as_it_was(tmp_path, figures):
    labels, rows = predictions(2)
    plot_reliability_diagram(tmp_path / "two.png", labels, {"model": rows[:, 1]})
    (figure,) = figures
    axes, counts_axes = figure.axes
    assert axes.get_title() == "Reliability of P(positive) on the test split (15 bins)"
    assert axes.get_ylabel() == "fraction of positive reviews"
    assert counts_axes.get_xlabel() == "predicted P(positive)"
    ece = expected_calibration_error(labels, rows[:, 1])
    assert axes.get_legend().get_texts()[1].get_text() == f"model (ECE {ece:.3f})"


def test_reliability_diagram_refuses_p_positive_and_rows_together(tmp_path):
    labels, rows = predictions(3)
    with pytest.raises(ValueError, match="not both"):
        plot_reliability_diagram(tmp_path / "r.png", labels, {"a": rows, "b": rows[:, 1]})
