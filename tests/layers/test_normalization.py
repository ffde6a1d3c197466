"""From-scratch LayerNormalization (parity with Keras) and the residual sublayer connection."""

import keras
import numpy as np
import pytest
from keras import ops

from classifier.layers import LayerNormalization
from classifier.layers.normalization import residual_sublayer
from tests.layer_checks import run_layer_test

RNG = np.random.default_rng(0)


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def test_layer_normalization_checks(tmp_path):
    run_layer_test(
        LayerNormalization,
        {"epsilon": 1e-5, "center": True, "scale": True},
        RNG.standard_normal((2, 5, 8)).astype("float32"),
        tmp_path=tmp_path,
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=2,
        expected_num_params=16,
    )


@pytest.mark.parametrize("epsilon", [1e-6, 1e-3])
def test_layer_normalization_parity_with_keras(epsilon):
    # Rows with small variances, where "std + epsilon" and "sqrt(var + epsilon)" differ by far
    # more than 1e-5. (No large offset: Keras computes x * inv - mean * inv, which cancels.)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((4, 6, 16)) * rng.uniform(0.01, 3.0, (4, 6, 1))).astype("float32")
    ours = LayerNormalization(epsilon=epsilon)
    theirs = keras.layers.LayerNormalization(epsilon=epsilon)
    ours.build(x.shape)
    theirs.build(x.shape)
    gamma = rng.standard_normal(16).astype("float32")
    beta = rng.standard_normal(16).astype("float32")
    ours.set_weights([gamma, beta])
    theirs.set_weights([gamma, beta])
    diff = float(np.max(np.abs(_np(ours(x)) - _np(theirs(x)))))
    print(f"LayerNormalization parity (epsilon={epsilon}): {diff:.2e}")
    assert diff < 1e-5


def test_layer_normalization_float16_is_finite():
    x = (RNG.standard_normal((2, 3, 8)) * 300.0).astype("float16")
    y = _np(LayerNormalization(dtype="float16")(x))
    assert y.dtype == np.float16 and np.all(np.isfinite(y))


@pytest.mark.parametrize("norm_first", [False, True])
def test_residual_sublayer(norm_first):
    x = RNG.standard_normal((2, 5, 8)).astype("float32")
    norm = LayerNormalization()
    norm.build(x.shape)
    norm.set_weights([RNG.standard_normal(8).astype("float32") for _ in range(2)])
    dropout = keras.layers.Dropout(0.5, seed=1)
    seen = []

    def fn(h):
        seen.append(_np(h))
        return 2.0 * h + 1.0, "extra"

    out, extra = residual_sublayer(x, norm, dropout, fn, norm_first=norm_first, training=False)
    assert extra == "extra"
    if norm_first:  # x + dropout(fn(norm(x)))
        np.testing.assert_array_equal(seen[0], _np(norm(x)))
        expected = x + (2.0 * _np(norm(x)) + 1.0)
    else:  # norm(x + dropout(fn(x)))
        np.testing.assert_array_equal(seen[0], x)
        expected = _np(norm(x + (2.0 * x + 1.0)))
    np.testing.assert_allclose(_np(out), expected, atol=1e-5)
    # Dropout (on the sublayer output) is active in training only.
    trained, _ = residual_sublayer(x, norm, dropout, fn, norm_first=norm_first, training=True)
    assert np.max(np.abs(_np(trained) - _np(out))) > 0.1
