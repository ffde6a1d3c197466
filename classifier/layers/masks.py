"""Attention masks with one polarity: ``True`` means "may attend" (the Keras convention).

Every mask in this package is boolean and ``True`` where a query may look at a key, exactly like
the ``attention_mask`` of ``keras.layers.MultiHeadAttention``. The TensorFlow Transformer tutorial
uses the opposite, float form (``1.0`` = masked, added as ``mask * -1e9`` to the logits);
:func:`to_keras_mask` and :func:`to_tutorial_mask` convert between the two, and nothing else in
the package uses the tutorial form.

Shapes use B (batch), T (query length) and S (key length).
"""

from __future__ import annotations

from typing import Any

from keras import ops

__all__ = [
    "attention_mask",
    "causal_mask",
    "combine_masks",
    "padding_mask",
    "to_keras_mask",
    "to_tutorial_mask",
]


def padding_mask(token_ids: Any, pad_id: int = 0) -> Any:
    """Boolean padding mask from token ids.

    Args:
        token_ids: integer tensor (B, S) of token ids.
        pad_id: the id used for padding.

    Returns:
        Bool tensor (B, S), ``True`` at real tokens and ``False`` at padding.

    Example:
        >>> ops.convert_to_numpy(padding_mask([[5, 7, 0]])).tolist()
        [[True, True, False]]
    """
    token_ids = ops.convert_to_tensor(token_ids)
    return ops.not_equal(token_ids, ops.cast(pad_id, token_ids.dtype))


def causal_mask(length: Any, key_length: Any | None = None) -> Any:
    """Look-ahead (causal) mask: query ``i`` may attend to keys ``j <= i``.

    Args:
        length: query length T (a Python int or a scalar tensor).
        key_length: key length S; defaults to ``length``. When S > T the queries are aligned
            with the last T keys, as in ``keras.layers.MultiHeadAttention(use_causal_mask=True)``
            with a cache; when S == T this is the usual lower-triangular mask.

    Returns:
        Bool tensor (1, T, S), lower-triangular, broadcastable against (B, T, S).

    Example:
        >>> ops.convert_to_numpy(causal_mask(3)[0]).tolist()
        [[True, False, False],
         [True, True, False],
         [True, True, True]]
    """
    if key_length is None:
        key_length = length
    row = ops.expand_dims(ops.arange(length), -1) + (key_length - length)
    col = ops.expand_dims(ops.arange(key_length), 0)
    return ops.expand_dims(ops.greater_equal(row, col), 0)


def combine_masks(*masks: Any) -> Any | None:
    """Logical AND of boolean masks, broadcasting; ``None`` entries are skipped.

    Args:
        *masks: bool tensors (or ``None``) broadcastable to one shape, e.g. a (1, T, T)
            causal mask and a (B, T, T) padding mask.

    Returns:
        The broadcast bool conjunction, or ``None`` when every mask is ``None``.

    Example:
        >>> ids = [[5, 7, 9, 0]]
        >>> mask = combine_masks(causal_mask(4), attention_mask(None, padding_mask(ids)))
        >>> ops.convert_to_numpy(mask[0]).tolist()  # (1, 4, 4): causal, and not the padding
        [[True, False, False, False],
         [True, True, False, False],
         [True, True, True, False],
         [True, True, True, False]]
    """
    combined = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        combined = mask if combined is None else ops.logical_and(combined, mask)
    return combined


def attention_mask(query_mask: Any | None, key_mask: Any | None) -> Any | None:
    """Attention mask from per-token masks of the queries and of the keys.

    ``mask[b, t, s]`` is ``True`` when query ``t`` and key ``s`` of sequence ``b`` are both real
    tokens. A padded query therefore attends to nothing; attention layers in this package give
    it a zero output rather than NaN.

    Args:
        query_mask: bool (B, T), ``True`` at real query tokens, or ``None`` (every query real).
        key_mask: bool (B, S), ``True`` at real key tokens, or ``None`` (every key real).

    Returns:
        Bool tensor (B, T, S); (B, 1, S) when ``query_mask`` is ``None`` and (B, T, 1) when
        ``key_mask`` is ``None`` (both broadcast against (B, T, S)); ``None`` when both are
        ``None``.

    Example:
        >>> ids = [[5, 7, 0]]
        >>> mask = attention_mask(padding_mask(ids), padding_mask(ids))  # (1, 3, 3)
        >>> ops.convert_to_numpy(mask[0]).tolist()  # the padded query attends to nothing
        [[True, True, False],
         [True, True, False],
         [False, False, False]]
    """
    if query_mask is None and key_mask is None:
        return None
    if query_mask is None:
        return ops.expand_dims(ops.cast(key_mask, "bool"), -2)
    if key_mask is None:
        return ops.expand_dims(ops.cast(query_mask, "bool"), -1)
    return ops.logical_and(
        ops.expand_dims(ops.cast(query_mask, "bool"), -1),
        ops.expand_dims(ops.cast(key_mask, "bool"), -2),
    )


def to_keras_mask(tutorial_mask: Any) -> Any:
    """Convert a tutorial mask (float, ``1.0`` = masked) to a Keras mask (bool, True = attend).

    Args:
        tutorial_mask: float or int tensor of any shape, e.g. (B, 1, 1, S) from the TensorFlow
            tutorial's ``create_padding_mask`` or (T, T) from ``create_look_ahead_mask``.

    Returns:
        Bool tensor of the same shape, ``True`` where the tutorial mask is 0.

    Example:
        >>> ops.convert_to_numpy(to_keras_mask([[0.0, 1.0]])).tolist()
        [[True, False]]
    """
    tutorial_mask = ops.convert_to_tensor(tutorial_mask)
    if tutorial_mask.dtype == "bool":
        return ops.logical_not(tutorial_mask)
    return ops.less(ops.cast(tutorial_mask, "float32"), 0.5)


def to_tutorial_mask(keras_mask: Any, dtype: str = "float32") -> Any:
    """Convert a Keras mask (bool, True = attend) to a tutorial mask (``1.0`` = masked).

    Args:
        keras_mask: bool tensor of any shape.
        dtype: float dtype of the result.

    Returns:
        Tensor of ``dtype`` and the same shape: ``1.0`` where ``keras_mask`` is ``False``.

    Example:
        >>> ops.convert_to_numpy(to_tutorial_mask([[True, False]])).tolist()
        [[0.0, 1.0]]
    """
    keras_mask = ops.cast(ops.convert_to_tensor(keras_mask), "bool")
    return ops.cast(ops.logical_not(keras_mask), dtype)
