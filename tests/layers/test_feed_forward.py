"""Position-wise feed-forward sublayer."""

import numpy as np
from keras import ops

from classifier.layers import FeedForward
from tests.layer_checks import run_layer_test


def test_feed_forward(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32")
    layer = run_layer_test(
        FeedForward,
        {"d_model": 8, "d_ff": 16, "activation": "gelu"},
        x,
        tmp_path=tmp_path,
        expected_output_shape=(2, 5, 8),
        expected_num_trainable_weights=4,
        expected_num_params=(8 * 16 + 16) + (16 * 8 + 8),
    )
    # Position-wise: each position is transformed independently and identically.
    single = ops.convert_to_numpy(layer(x[:, 2:3]))
    np.testing.assert_allclose(ops.convert_to_numpy(layer(x))[:, 2:3], single, atol=1e-6)
