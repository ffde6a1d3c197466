"""Masked mean pooling: padding never changes the pooled vector."""

import numpy as np
from keras import ops

from classifier.layers import MaskedGlobalAveragePooling1D
from tests.layer_checks import run_layer_test


def test_masked_pooling(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=bool)
    run_layer_test(
        MaskedGlobalAveragePooling1D,
        {},
        {"x": x, "mask": mask},
        tmp_path=tmp_path,
        expected_output_shape=(3, 4),
    )
    pooled = ops.convert_to_numpy(MaskedGlobalAveragePooling1D()(x, mask=mask))
    np.testing.assert_allclose(pooled[0], x[0, :2].mean(0), atol=1e-6)
    np.testing.assert_allclose(pooled[1], x[1].mean(0), atol=1e-6)
    np.testing.assert_array_equal(pooled[2], 0.0)  # all padding: zeros, not NaN
    unmasked = ops.convert_to_numpy(MaskedGlobalAveragePooling1D()(x))
    np.testing.assert_allclose(unmasked, x.mean(1), atol=1e-6)
