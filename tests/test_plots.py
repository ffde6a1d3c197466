"""Plot helpers write real PNG files."""

import numpy as np

from classifier.plots import plot_attention_heads, plot_positional_encoding

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
