"""The position-wise feed-forward sublayer."""

from __future__ import annotations

from typing import Any

import keras

__all__ = ["FeedForward"]


@keras.saving.register_keras_serializable(package="classifier")
class FeedForward(keras.layers.Layer):
    """Position-wise feed-forward network: ``Dense(d_ff, activation) -> Dense(d_model)``.

    Applied to every position separately and identically. Dropout and the residual connection
    belong to the enclosing layer (see :func:`~classifier.layers.normalization.residual_sublayer`).

    Args:
        d_model: input and output width d.
        d_ff: inner width (4 * d_model in the paper).
        activation: activation of the inner layer (name or callable known to Keras).
        **kwargs: base layer arguments.

    Call arguments:
        x: (B, T, d) tensor.

    Returns:
        (B, T, d) tensor (keeps the Keras mask of ``x``).

    Example:
        >>> ffn = FeedForward(d_model=64, d_ff=256)
        >>> y = ffn(keras.random.normal((2, 10, 64)))
        >>> tuple(y.shape)
        (2, 10, 64)

    References:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.3.
    """

    def __init__(self, d_model: int, d_ff: int, activation: Any = "relu", **kwargs: Any):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.d_ff = d_ff
        self.activation = keras.activations.get(activation)
        self.supports_masking = True
        self.inner_dense = keras.layers.Dense(
            d_ff, activation=self.activation, name="inner_dense", dtype=self.dtype_policy
        )
        self.output_dense = keras.layers.Dense(
            d_model, name="output_dense", dtype=self.dtype_policy
        )

    def build(self, input_shape):
        self.inner_dense.build(input_shape)
        self.output_dense.build(tuple(input_shape[:-1]) + (self.d_ff,))

    def call(self, x):
        return self.output_dense(self.inner_dense(x))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.d_model,)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "d_model": self.d_model,
                "d_ff": self.d_ff,
                "activation": keras.activations.serialize(self.activation),
            }
        )
        return config
