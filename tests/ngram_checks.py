"""The check every bag of n-grams that reads negation goes through: its NumPy twin
(:class:`~classifier.serving.explain_parts.NgramWeights`, what the bundle explains with) gives
the layer's features and values, and the word contributions sum to the layer's log-odds."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from classifier.explain.measures import word_contributions


def assert_twin_explains_the_layer(layer, twin, ids: np.ndarray) -> None:
    """``twin`` computes ``layer``'s features, values and features by position for one
    review's ``ids`` (1, T), and its word contributions add up to the layer's log-odds."""
    numpy = keras.ops.convert_to_numpy
    features, values = twin.feature_values(ids)
    np.testing.assert_array_equal(features, numpy(layer.feature_values(ids)[0]))
    np.testing.assert_allclose(values, numpy(layer.feature_values(ids)[1]), atol=1e-6)
    positions = twin.features(ids)[0]
    np.testing.assert_array_equal(positions, numpy(layer.features_by_position(ids))[0])
    probability, shares = word_contributions(twin, features[0], values[0], positions, ids.size)
    logits = numpy(layer(ids))[0]
    assert shares.sum() == pytest.approx(logits[1] - logits[0], abs=1e-5)
    assert probability == pytest.approx(1 / (1 + np.exp(logits[0] - logits[1])), abs=1e-6)
