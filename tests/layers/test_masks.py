"""Masks: one polarity (True = may attend) and the tutorial converters."""

import numpy as np
from keras import ops

from classifier.layers import masks


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def test_padding_mask_marks_real_tokens():
    ids = np.array([[5, 7, 0, 0], [1, 2, 3, 0]])
    np.testing.assert_array_equal(_np(masks.padding_mask(ids)), ids != 0)
    assert _np(masks.padding_mask(ids)).dtype == bool
    np.testing.assert_array_equal(_np(masks.padding_mask(ids, pad_id=1)), ids != 1)


def test_causal_mask_is_lower_triangular():
    mask = _np(masks.causal_mask(4))
    assert mask.shape == (1, 4, 4)
    np.testing.assert_array_equal(mask[0], np.tril(np.ones((4, 4), dtype=bool)))
    # Rectangular: the T queries align with the last T of S keys (as in Keras' causal mask).
    rect = _np(masks.causal_mask(2, 4))[0]
    np.testing.assert_array_equal(rect, [[True, True, True, False], [True, True, True, True]])


def test_attention_mask_and_combination():
    ids = np.array([[5, 7, 0]])
    pad = masks.padding_mask(ids)
    full = _np(masks.attention_mask(pad, pad))
    expected = np.array([[[1, 1, 0], [1, 1, 0], [0, 0, 0]]], dtype=bool)
    np.testing.assert_array_equal(full, expected)
    keys_only = _np(masks.attention_mask(None, pad))
    assert keys_only.shape == (1, 1, 3)
    assert masks.attention_mask(None, None) is None

    combined = _np(masks.combine_masks(masks.causal_mask(3), None, masks.attention_mask(pad, pad)))
    np.testing.assert_array_equal(combined, expected & np.tril(np.ones((3, 3), dtype=bool)))
    assert masks.combine_masks(None, None) is None


def test_tutorial_mask_round_trip_both_polarities():
    # Tutorial form: 1.0 = masked (create_padding_mask gives (B, 1, 1, S)).
    ids = np.array([[5, 7, 0, 0]])
    tutorial = (ids == 0).astype("float32")[:, None, None, :]
    keras_mask = _np(masks.to_keras_mask(tutorial))
    assert keras_mask.dtype == bool
    np.testing.assert_array_equal(keras_mask[:, 0, 0], _np(masks.padding_mask(ids)))
    np.testing.assert_array_equal(_np(masks.to_tutorial_mask(keras_mask)), tutorial)

    # Look-ahead: the tutorial's 1 - band_part(ones, -1, 0) is the complement of causal_mask.
    look_ahead = 1.0 - np.tril(np.ones((4, 4), dtype="float32"))
    np.testing.assert_array_equal(
        _np(masks.to_keras_mask(look_ahead)), _np(masks.causal_mask(4))[0]
    )

    # Keras -> tutorial -> Keras.
    random_mask = np.random.default_rng(0).random((2, 3, 5)) > 0.5
    back = _np(masks.to_keras_mask(masks.to_tutorial_mask(random_mask)))
    np.testing.assert_array_equal(back, random_mask)
    assert _np(masks.to_tutorial_mask(random_mask, dtype="float16")).dtype == np.float16
