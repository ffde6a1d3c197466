"""Layer normalization from scratch, and the residual sublayer connection around it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
from keras import ops

__all__ = ["LayerNormalization", "residual_sublayer"]


@keras.saving.register_keras_serializable(package="classifier")
class LayerNormalization(keras.layers.Layer):
    """Layer normalization over the last axis, written out.

    ``y = gamma * (x - mean) / sqrt(variance + epsilon) + beta`` with the mean and the (biased)
    variance over the last axis. Note ``sqrt(variance + epsilon)``, not ``std + epsilon``: this
    is what ``keras.layers.LayerNormalization`` computes, and it agrees with it to 1e-5.
    Statistics are computed in float32, so float16 inputs do not overflow.

    Args:
        epsilon: added to the variance for numerical stability.
        center: learn an offset ``beta``.
        scale: learn a gain ``gamma``.
        **kwargs: base layer arguments.

    Call arguments:
        x: (..., d) tensor.

    Returns:
        Tensor of the same shape and dtype (keeps the Keras mask of ``x``).

    Example:
        >>> y = LayerNormalization(epsilon=1e-6)(keras.random.normal((2, 10, 64)))
        >>> tuple(y.shape)
        (2, 10, 64)
        >>> mean, variance = ops.moments(y, axes=[-1])  # per position; gamma = 1, beta = 0 here
        >>> bool(ops.all(ops.abs(mean) < 1e-5)), bool(ops.all(ops.abs(variance - 1.0) < 1e-3))
        (True, True)

    References:
        Ba, Kiros and Hinton, "Layer Normalization", 2016.
    """

    def __init__(
        self, epsilon: float = 1e-6, center: bool = True, scale: bool = True, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.supports_masking = True

    def build(self, input_shape):
        dim = input_shape[-1]
        self.gamma = (
            self.add_weight(name="gamma", shape=(dim,), initializer="ones") if self.scale else None
        )
        self.beta = (
            self.add_weight(name="beta", shape=(dim,), initializer="zeros") if self.center else None
        )

    def call(self, x):
        x32 = ops.cast(x, "float32")
        mean = ops.mean(x32, axis=-1, keepdims=True)
        variance = ops.mean(ops.square(x32 - mean), axis=-1, keepdims=True)
        y = (x32 - mean) * ops.rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            y = y * ops.cast(self.gamma, "float32")
        if self.beta is not None:
            y = y + ops.cast(self.beta, "float32")
        return ops.cast(y, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"epsilon": self.epsilon, "center": self.center, "scale": self.scale})
        return config


def residual_sublayer(
    x: Any,
    norm: Callable[[Any], Any],
    dropout: keras.layers.Layer,
    fn: Callable[[Any], tuple[Any, Any]],
    *,
    norm_first: bool,
    training: bool | None = None,
) -> tuple[Any, Any]:
    """The residual connection around one sublayer of a Transformer layer, post-LN or pre-LN.

    Post-LN (the paper): ``norm(x + dropout(fn(x)))``. Pre-LN: ``x + dropout(fn(norm(x)))``.
    The encoder and decoder layers call it once per sublayer with sublayers they own, so their
    weights stay where they are.

    Args:
        x: (B, T, d) input of the sublayer, and the residual.
        norm: the sublayer's layer normalization.
        dropout: the dropout layer on the sublayer output.
        fn: the sublayer; maps (B, T, d) to ``(output, extra)``, output (B, T, d) and ``extra``
            anything (attention weights, or ``None``).
        norm_first: pre-LN instead of post-LN.
        training: whether dropout is active.

    Returns:
        ``(output, extra)``: output (B, T, d) and the ``extra`` of ``fn``.

    Example:
        >>> x = keras.random.normal((2, 10, 64))
        >>> norm, dropout = LayerNormalization(), keras.layers.Dropout(0.1)
        >>> dense = keras.layers.Dense(64)
        >>> y, _ = residual_sublayer(x, norm, dropout, lambda h: (dense(h), None), norm_first=False)
        >>> tuple(y.shape)
        (2, 10, 64)
        >>> bool(ops.all(y == norm(x + dense(x))))  # post-LN, no dropout outside training
        True

    References:
        Vaswani et al., "Attention Is All You Need", 2017, section 5.4 (``LayerNorm(x +
        Sublayer(x))``); Xiong et al., "On Layer Normalization in the Transformer
        Architecture", 2020 (pre-LN).
    """
    h = norm(x) if norm_first else x
    h, extra = fn(h)
    out = x + dropout(h, training=training)
    if not norm_first:
        out = norm(out)
    return out, extra
