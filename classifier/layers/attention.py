"""Scaled dot-product attention and multi-head attention, written with ``keras.ops``.

Beside them, :class:`MaskedAttention`: ``keras.layers.Attention`` with cheaper masking.
"""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops

from classifier.layers.masks import causal_mask, combine_masks

__all__ = [
    "MaskedAttention",
    "MultiHeadAttention",
    "attention_weights",
    "scaled_dot_product_attention",
]

# Finite in float32, where the logits are masked; never used in float16 or bfloat16.
_MASKED_LOGIT = -1e9


def attention_weights(query: Any, key: Any, mask: Any | None = None) -> Any:
    """Attention weights softmax(Q K^T / sqrt(d_k)), computed in float32.

    Masked logits are replaced with ``ops.where`` (no ``mask * -1e9`` arithmetic, so no overflow
    in float16) and the softmax runs in float32. Masked keys then get exactly zero weight, and a
    query row whose keys are all masked gets all-zero weights (not NaN, not uniform).

    Args:
        query: tensor (..., T, d_k).
        key: tensor (..., S, d_k).
        mask: bool tensor broadcastable to (..., T, S), ``True`` = may attend; or ``None``.

    Returns:
        Float32 tensor (..., T, S); each row sums to 1 over its unmasked keys (or is all zero).

    Example:
        >>> q = k = keras.random.normal((1, 3, 8))
        >>> w = attention_weights(q, k, mask=causal_mask(3))  # (1, 3, 3)
        >>> ops.convert_to_numpy(w)[0, 0].tolist()  # the first query sees the first key only
        [1.0, 0.0, 0.0]
    """
    depth = query.shape[-1]
    if depth is None:
        scale = ops.rsqrt(ops.cast(ops.shape(query)[-1], "float32"))
    else:
        scale = 1.0 / math.sqrt(depth)
    scale = ops.cast(scale, query.dtype)
    # Scale before the product (as keras.layers.MultiHeadAttention does) to keep it small.
    logits = ops.matmul(ops.multiply(query, scale), ops.swapaxes(key, -1, -2))
    logits = ops.cast(logits, "float32")
    if mask is not None:
        mask = ops.cast(mask, "bool")
        logits = ops.where(mask, logits, _MASKED_LOGIT)
    # One fused softmax kernel, forward and backward; with a single key (step-by-step decoding)
    # the weight is 1 and ops.softmax would only warn.
    single_key = logits.shape[-1] == 1
    weights = ops.ones_like(logits) if single_key else ops.softmax(logits, axis=-1)
    if mask is None:
        return weights
    # Masked keys already weigh exactly 0 (exp(-1e9) underflows). Only a query row with no key
    # to attend would come out uniform: zero such rows with a (..., T, 1) factor.
    return weights * ops.cast(ops.any(mask, axis=-1, keepdims=True), weights.dtype)


def scaled_dot_product_attention(
    q: Any, k: Any, v: Any, mask: Any | None = None
) -> tuple[Any, Any]:
    """softmax(Q K^T / sqrt(d_k)) V, as in "Attention Is All You Need" (eq. 1).

    Safe in float16 and bfloat16: logits are masked with ``ops.where`` and normalised in float32.
    Masked keys get exactly zero weight; a fully masked query row gives a zero output.

    Args:
        q: queries (..., T, d_k).
        k: keys (..., S, d_k).
        v: values (..., S, d_v).
        mask: bool, broadcastable to (..., T, S), ``True`` = may attend; or ``None``.

    Returns:
        ``(output, weights)``: output (..., T, d_v) in the dtype of ``v``, weights (..., T, S) in
        the dtype of ``v``.

    Example:
        >>> q = k = v = keras.random.normal((2, 4, 8))
        >>> out, w = scaled_dot_product_attention(q, k, v, causal_mask(4))
        >>> tuple(out.shape), tuple(w.shape)
        ((2, 4, 8), (2, 4, 4))
    """
    weights = ops.cast(attention_weights(q, k, mask), v.dtype)
    return ops.matmul(weights, v), weights


@keras.saving.register_keras_serializable(package="classifier")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention with separate Q, K and V projections.

    Projects queries, keys and values with their own dense layers (with bias), splits d_model into
    ``num_heads`` heads of size d_k = d_model / num_heads, applies
    :func:`scaled_dot_product_attention` per head, merges the heads and applies an output
    projection. Given the same weights it matches ``keras.layers.MultiHeadAttention(num_heads,
    key_dim=d_k)`` (whose kernels are ours reshaped to (d, h, d_k) and (h, d_k, d)).

    Args:
        d_model: model width; the output has this last dimension. Must be divisible by
            ``num_heads``.
        num_heads: number of attention heads h.
        dropout: dropout rate on the attention weights (training only).
        **kwargs: base layer arguments (``name``, ``dtype``, ...).

    Call arguments:
        query: (B, T, d_q) tensor.
        value: (B, S, d_v) tensor.
        key: (B, S, d_k) tensor; defaults to ``value``.
        attention_mask: bool (B, T, S) (or broadcastable), ``True`` = may attend; ``None``
            attends everywhere.
        training: whether dropout is active.
        return_attention_scores: also return the attention weights.
        use_causal_mask: also apply a look-ahead mask (query t sees keys <= t).

    Returns:
        (B, T, d_model) tensor, or ``(output, weights)`` with weights (B, h, T, S) when
        ``return_attention_scores`` is true.

    Example:
        >>> mha = MultiHeadAttention(d_model=64, num_heads=4)
        >>> x = keras.random.normal((2, 10, 64))
        >>> out, w = mha(x, x, return_attention_scores=True)
        >>> tuple(out.shape), tuple(w.shape)
        ((2, 10, 64), (2, 4, 10, 10))

    References:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.2.2.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model={d_model} must be divisible by num_heads={num_heads} "
                f"(d_model % num_heads = {d_model % num_heads})."
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.dropout = dropout
        self.depth = d_model // num_heads
        self.supports_masking = True

        def dense(name: str) -> keras.layers.Dense:
            return keras.layers.Dense(d_model, use_bias=True, name=name, dtype=self.dtype_policy)

        self.query_dense = dense("query")
        self.key_dense = dense("key")
        self.value_dense = dense("value")
        self.output_dense = dense("attention_output")
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout", dtype=self.dtype_policy)

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        self.query_dense.build(query_shape)
        self.key_dense.build(key_shape)
        self.value_dense.build(value_shape)
        self.output_dense.build(tuple(query_shape[:-1]) + (self.d_model,))

    def _split_heads(self, x: Any) -> Any:
        """(B, T, d_model) -> (B, h, T, d_k)."""
        x = ops.reshape(x, ops.shape(x)[:-1] + (self.num_heads, self.depth))
        return ops.swapaxes(x, -2, -3)

    def _merge_heads(self, x: Any) -> Any:
        """(B, h, T, d_k) -> (B, T, d_model)."""
        x = ops.swapaxes(x, -2, -3)
        return ops.reshape(x, ops.shape(x)[:-2] + (self.d_model,))

    def call(
        self,
        query,
        value,
        key=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        key = value if key is None else key
        q = self._split_heads(self.query_dense(query))
        k = self._split_heads(self.key_dense(key))
        v = self._split_heads(self.value_dense(value))

        mask = None
        if use_causal_mask:
            mask = causal_mask(ops.shape(query)[-2], ops.shape(key)[-2])
        mask = combine_masks(mask, attention_mask)
        if mask is not None:
            mask = ops.expand_dims(mask, -3)  # head axis: (B, 1, T, S)

        weights = ops.cast(attention_weights(q, k, mask), v.dtype)
        dropped = self.dropout_layer(weights, training=training)
        output = self.output_dense(self._merge_heads(ops.matmul(dropped, v)))
        if return_attention_scores:
            return output, weights
        return output

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {"d_model": self.d_model, "num_heads": self.num_heads, "dropout": self.dropout}
        )
        return config


@keras.saving.register_keras_serializable(package="classifier")
class MaskedAttention(keras.layers.Attention):
    """``keras.layers.Attention`` with its masks applied by arithmetic instead of ``ops.where``.

    The same layer, weights and outputs as ``keras.layers.Attention``: masked keys get
    ``score - 1e9`` (65504 in float16) before the softmax, and outputs at masked queries are 0.
    Keras writes both with ``ops.where`` on broadcast masks, whose forward and backward passes
    cost more on CPU than the attention itself at embedding width 16; here they are a subtraction
    of ``1e9 * (1 - mask)`` and a product with the query mask, which give the same (finite)
    values. In ``benchmarks/train_throughput.py`` the ``attention`` variant went from 0.92x to
    1.25x the unmasked reference's training throughput.

    Args:
        **kwargs: the arguments of ``keras.layers.Attention`` (``use_scale``, ``score_mode``,
            ``dropout``, ``name``, ...).

    Call arguments:
        inputs: ``[query, value]`` or ``[query, value, key]``, each (B, T, d) / (B, S, d).
        mask: ``[query_mask, value_mask]``, bool (B, T) and (B, S), ``True`` at real tokens.
        training, return_attention_scores, use_causal_mask: as ``keras.layers.Attention``.

    Returns:
        (B, T, d); with ``return_attention_scores`` also the weights (B, T, S).

    Example:
        >>> x = keras.ops.ones((2, 5, 16))
        >>> mask = keras.ops.convert_to_tensor([[True] * 5, [True, True, False, False, False]])
        >>> tuple(MaskedAttention()([x, x], mask=[mask, mask]).shape)
        (2, 5, 16)
    """

    def call(
        self,
        inputs,
        mask=None,
        training=False,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        self._validate_inputs(inputs=inputs, mask=mask)
        query_mask, value_mask = (mask[0], mask[1]) if mask else (None, None)
        result = super().call(
            inputs,
            mask=[None, value_mask],  # the query mask is applied below, by a product
            training=training,
            return_attention_scores=return_attention_scores,
            use_causal_mask=use_causal_mask,
        )
        output, weights = result if return_attention_scores else (result, None)
        if query_mask is not None:
            output = output * ops.expand_dims(ops.cast(query_mask, output.dtype), -1)
        return (output, weights) if return_attention_scores else output

    def _apply_scores(self, scores, value, scores_mask=None, training=False):
        if scores_mask is not None:
            if len(scores_mask.shape) == 2:  # (B, S): one row for every query
                scores_mask = ops.expand_dims(scores_mask, -2)
            max_value = 65504.0 if scores.dtype == "float16" else 1.0e9
            blocked = ops.cast(ops.logical_not(scores_mask), scores.dtype)
            scores = scores - ops.cast(max_value, scores.dtype) * blocked
        return super()._apply_scores(scores, value, None, training)
