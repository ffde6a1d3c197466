"""Sinusoidal table (golden values), learned positions, token-plus-position embedding."""

import math

import numpy as np
import pytest
from keras import ops

from classifier.layers import (
    PositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenAndPositionEmbedding,
    sinusoidal_position_encoding,
)
from tests.layer_checks import run_layer_test


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def test_sinusoidal_golden_values():
    d = 8
    table = _np(sinusoidal_position_encoding(10, d))
    assert table.shape == (10, d)
    # Hand-computed from PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...).
    golden = {
        (0, 0): 0.0,
        (0, 1): 1.0,
        (1, 0): math.sin(1.0),
        (1, 1): math.cos(1.0),
        (5, 2): math.sin(5 / 10000 ** (2 / d)),
        (5, 3): math.cos(5 / 10000 ** (2 / d)),
        (7, 6): math.sin(7 / 10000 ** (6 / d)),
        (9, 7): math.cos(9 / 10000 ** (6 / d)),
        (3, 4): math.sin(3 / 10000 ** (4 / d)),
    }
    for (pos, dim), value in golden.items():
        assert table[pos, dim] == pytest.approx(value, abs=1e-6), (pos, dim)


def test_sinusoidal_matches_closed_form_everywhere():
    length, d = 50, 16
    pos = np.arange(length)[:, None]
    i = np.arange(d)[None, :]
    angles = pos / np.power(10000.0, (2 * (i // 2)) / d)
    expected = np.where(i % 2 == 0, np.sin(angles), np.cos(angles))
    np.testing.assert_allclose(_np(sinusoidal_position_encoding(length, d)), expected, atol=1e-5)


def test_sinusoidal_layer(tmp_path):
    x = np.zeros((2, 6, 8), dtype="float32")
    run_layer_test(
        SinusoidalPositionalEncoding,
        {"max_wavelength": 10000.0},
        x,
        tmp_path=tmp_path,
        expected_output_shape=(2, 6, 8),
    )
    out = _np(SinusoidalPositionalEncoding()(x))
    np.testing.assert_allclose(out[1], _np(sinusoidal_position_encoding(6, 8)), atol=1e-7)


def test_learned_positional_embedding(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32")
    layer = run_layer_test(
        PositionalEmbedding,
        {"max_length": 7, "initializer": "random_normal"},
        x,
        tmp_path=tmp_path,
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=1,
        expected_num_params=7 * 8,
    )
    np.testing.assert_array_equal(_np(layer(x))[0], _np(layer.position_embeddings)[:5])
    with pytest.raises(ValueError, match="max_length=7"):
        layer(np.zeros((1, 8, 8), dtype="float32"))


@pytest.mark.parametrize(("position", "weights"), [("learned", 2), ("sinusoidal", 1), (None, 1)])
def test_token_and_position_embedding(tmp_path, position, weights):
    ids = np.array([[3, 4, 5, 0, 0], [6, 7, 8, 9, 2]])
    layer = run_layer_test(
        TokenAndPositionEmbedding,
        {"vocab_size": 12, "max_length": 6, "d_model": 8, "position": position, "scale": True},
        ids,
        tmp_path=tmp_path,
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=weights,
    )
    np.testing.assert_array_equal(_np(layer.compute_mask(ids)), ids != 0)
    tokens = _np(layer.token_embedding(ids)) * math.sqrt(8)
    out = _np(layer(ids))
    if position is None:
        np.testing.assert_allclose(out, tokens, atol=1e-6)
    elif position == "sinusoidal":
        np.testing.assert_allclose(
            out - tokens,
            np.broadcast_to(_np(sinusoidal_position_encoding(5, 8)), out.shape),
            atol=1e-5,
        )


def test_token_and_position_embedding_options():
    ids = np.array([[3, 0]])
    unscaled = TokenAndPositionEmbedding(5, 4, 8, position=None, mask_zero=False)
    np.testing.assert_array_equal(_np(unscaled(ids)), _np(unscaled.token_embedding(ids)))
    assert unscaled.compute_mask(ids) is None
    with pytest.raises(ValueError, match="position"):
        TokenAndPositionEmbedding(5, 4, 8, position="rotary")
