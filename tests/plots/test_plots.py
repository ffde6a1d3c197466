"""Plot helpers write real PNG files."""

import numpy as np

from classifier.plots import (
    plot_attention_heads,
    plot_confusion_matrix,
    plot_positional_encoding,
    plot_training_curves,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 1024


def test_plot_positional_encoding(tmp_path):
    path = plot_positional_encoding(tmp_path / "figures" / "pe.png", length=64, d_model=32)
    assert path == tmp_path / "figures" / "pe.png"
    _assert_png(path)


def test_plot_attention_heads(tmp_path):
    rng = np.random.default_rng(0)
    weights = rng.random((1, 3, 4, 5))
    weights /= weights.sum(-1, keepdims=True)
    path = plot_attention_heads(
        tmp_path / "attention.png", weights, ["a", "b", "c", "d"], ["<s>", "w", "x", "y", "z"]
    )
    _assert_png(path)
    # A single head (T, S) also works.
    _assert_png(
        plot_attention_heads(tmp_path / "one.png", weights[0, 0], list("abcd"), list("vwxyz"))
    )


def test_plot_training_curves(tmp_path):
    history = {
        "train_loss": [0.6, 0.4, 0.3],
        "val_loss": [0.5, 0.45, 0.47],
        "train_accuracy": [0.7, 0.8, 0.9],
        "val_accuracy": [0.75, 0.8, 0.79],
    }
    _assert_png(plot_training_curves(tmp_path / "curves.png", history, best_epoch=2))


def test_plot_confusion_matrix(tmp_path):
    path = plot_confusion_matrix(
        tmp_path / "cm.png", [0, 0, 1, 1, 1], [0, 1, 1, 1, 0], ["negative", "positive"]
    )
    _assert_png(path)
