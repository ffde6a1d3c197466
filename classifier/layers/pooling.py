"""Mask-aware pooling over the sequence axis."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

__all__ = ["MaskedGlobalAveragePooling1D"]


@keras.saving.register_keras_serializable(package="classifier")
class MaskedGlobalAveragePooling1D(keras.layers.Layer):
    """Mean over the positions where the mask is ``True``.

    ``sum_t mask[b, t] * x[b, t] / max(sum_t mask[b, t], 1)``, accumulated in float32; a fully
    padded sequence pools to zeros. Without a mask it is the plain mean over T. Padding therefore
    never changes the pooled vector.

    Args:
        **kwargs: base layer arguments.

    Call arguments:
        x: (B, T, d) tensor.
        mask: bool (B, T), ``True`` at real positions; by default the Keras mask of ``x``.

    Returns:
        (B, d) tensor (no Keras mask).

    Example:
        >>> x = ops.convert_to_tensor([[[1.0], [3.0], [100.0]]])  # (1, 3, 1)
        >>> mask = ops.convert_to_tensor([[True, True, False]])  # the last position is padding
        >>> ops.convert_to_numpy(MaskedGlobalAveragePooling1D()(x, mask=mask)).tolist()
        [[2.0]]

        After an embedding that masks id 0, the mask comes with the inputs:

        >>> from classifier.layers import EncoderLayer, TokenAndPositionEmbedding
        >>> token_ids = ops.convert_to_tensor([[5, 8, 3, 0, 0], [4, 2, 7, 9, 6]])
        >>> x = TokenAndPositionEmbedding(1000, 64, 32)(token_ids)
        >>> pooled = MaskedGlobalAveragePooling1D()(EncoderLayer(32, 2, 64)(x))
        >>> tuple(pooled.shape)
        (2, 32)

    References:
        ``keras.layers.GlobalAveragePooling1D`` (same result, explicit max(count, 1) guard).
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, x, mask=None):
        x32 = ops.cast(x, "float32")
        if mask is None:
            return ops.cast(ops.mean(x32, axis=-2), self.compute_dtype)
        weights = ops.expand_dims(ops.cast(mask, "float32"), -1)
        total = ops.sum(x32 * weights, axis=-2)
        count = ops.maximum(ops.sum(weights, axis=-2), 1.0)
        return ops.cast(total / count, self.compute_dtype)

    def compute_mask(self, x, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-2]) + (input_shape[-1],)
