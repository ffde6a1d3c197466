"""Position signals: the fixed sinusoidal table, learned position embeddings, and both combined
with a token embedding."""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops

__all__ = [
    "POSITION_KINDS",
    "PositionalEmbedding",
    "SinusoidalPositionalEncoding",
    "TokenAndPositionEmbedding",
    "sinusoidal_position_encoding",
]

POSITION_KINDS = ("sinusoidal", "learned", None)


def sinusoidal_position_encoding(
    length: Any, d_model: int, max_wavelength: float = 10000.0, dtype: str = "float32"
) -> Any:
    """The fixed sinusoidal table of "Attention Is All You Need" (section 3.5).

    ``PE[pos, 2i] = sin(pos / max_wavelength^(2i / d_model))`` and
    ``PE[pos, 2i + 1] = cos(pos / max_wavelength^(2i / d_model))``: sines on even dimensions and
    cosines on odd ones, interleaved (not concatenated as in some tutorials).

    Args:
        length: number of positions T (int or scalar tensor).
        d_model: encoding width d.
        max_wavelength: the base, 10000 in the paper.
        dtype: dtype of the result (computed in float32).

    Returns:
        Tensor (T, d).

    Example:
        >>> table = sinusoidal_position_encoding(50, 16)
        >>> tuple(table.shape)
        (50, 16)
        >>> [round(v, 4) for v in ops.convert_to_numpy(table[1, :2]).tolist()]  # sin(1), cos(1)
        [0.8415, 0.5403]
    """
    positions = ops.cast(ops.arange(length), "float32")
    dims = ops.arange(d_model)
    exponents = ops.cast(2 * (dims // 2), "float32") / float(d_model)
    inverse_timescales = ops.exp(-math.log(max_wavelength) * exponents)
    angles = ops.expand_dims(positions, -1) * ops.expand_dims(inverse_timescales, 0)
    is_even = ops.expand_dims(ops.equal(dims % 2, 0), 0)
    table = ops.where(is_even, ops.sin(angles), ops.cos(angles))
    return ops.cast(table, dtype)


@keras.saving.register_keras_serializable(package="classifier")
class SinusoidalPositionalEncoding(keras.layers.Layer):
    """Fixed sinusoidal position encoding (no weights).

    Returns the encoding only, broadcast to the shape of its input, as keras-hub's
    ``SinePositionEncoding`` does: add it to the token embeddings yourself (or use
    :class:`TokenAndPositionEmbedding`). Works for any sequence length.

    Args:
        max_wavelength: the base of the geometric progression of wavelengths (10000).
        **kwargs: base layer arguments.

    Call arguments:
        inputs: (B, T, d) tensor; only its shape is used.

    Returns:
        (B, T, d) tensor: ``PE[t, 2i] = sin(t / 10000^(2i/d))``, ``PE[t, 2i+1] = cos(...)``.

    Example:
        >>> x = keras.random.normal((2, 10, 16))
        >>> x = x + SinusoidalPositionalEncoding()(x)
        >>> tuple(x.shape)
        (2, 10, 16)

    References:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.5.
    """

    def __init__(self, max_wavelength: float = 10000.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.max_wavelength = max_wavelength
        self.supports_masking = True

    def call(self, inputs):
        shape = ops.shape(inputs)
        table = sinusoidal_position_encoding(
            shape[-2], inputs.shape[-1], self.max_wavelength, dtype=self.compute_dtype
        )
        return ops.broadcast_to(table, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config


@keras.saving.register_keras_serializable(package="classifier")
class PositionalEmbedding(keras.layers.Layer):
    """Learned absolute position embeddings, as in BERT.

    One trainable vector per position up to ``max_length``. Returns the embeddings only,
    broadcast to the shape of its input (keras-hub's ``PositionEmbedding``).

    Args:
        max_length: the largest sequence length supported.
        initializer: initializer of the (max_length, d) table.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: (B, T, d) tensor with T <= max_length; only its shape is used.

    Returns:
        (B, T, d) tensor: rows 0..T-1 of the table.

    Example:
        >>> x = keras.random.normal((2, 10, 16))
        >>> x = x + PositionalEmbedding(max_length=128)(x)
        >>> tuple(x.shape)
        (2, 10, 16)

    References:
        Devlin et al., "BERT", 2019, section 3 (position embeddings).
    """

    def __init__(self, max_length: int, initializer: Any = "glorot_uniform", **kwargs: Any):
        super().__init__(**kwargs)
        if max_length < 1:
            raise ValueError(f"max_length must be positive, got {max_length}.")
        self.max_length = max_length
        self.initializer = keras.initializers.get(initializer)
        self.supports_masking = True

    def build(self, input_shape):
        self.position_embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, input_shape[-1]),
            initializer=self.initializer,
            trainable=True,
        )

    def call(self, inputs):
        length = inputs.shape[-2]
        if length is not None and length > self.max_length:
            raise ValueError(
                f"Sequence length {length} exceeds max_length={self.max_length} of layer "
                f"'{self.name}'."
            )
        shape = ops.shape(inputs)
        table = ops.cast(self.position_embeddings, self.compute_dtype)
        table = ops.slice(table, (0, 0), (shape[-2], inputs.shape[-1]))
        return ops.broadcast_to(table, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "max_length": self.max_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="classifier")
class TokenAndPositionEmbedding(keras.layers.Layer):
    """Token embedding plus a position signal, with an optional sqrt(d_model) scale.

    ``output = token_embedding(ids) * (sqrt(d_model) if scale else 1) + position(...)``.
    The paper scales the token embeddings by sqrt(d_model) before adding the sinusoidal table;
    the keras-io examples do not scale and use learned positions.

    Args:
        vocab_size: number of token ids (id 0 is padding when ``mask_zero``).
        max_length: the largest sequence length (size of the learned table; for "sinusoidal"
            and None it only documents the intended limit).
        d_model: embedding width d.
        position: "learned" (:class:`PositionalEmbedding`), "sinusoidal"
            (:class:`SinusoidalPositionalEncoding`) or None (no position signal).
        scale: multiply token embeddings by sqrt(d_model).
        mask_zero: produce a Keras padding mask (True = real token, id 0 = padding).
        embeddings_initializer: initializer of the token table.
        **kwargs: base layer arguments.

    Call arguments:
        token_ids: int tensor (B, T).

    Returns:
        (B, T, d) float tensor; with ``mask_zero`` it carries a (B, T) bool Keras mask.

    Example:
        >>> embed = TokenAndPositionEmbedding(20000, 256, 64, position="sinusoidal", scale=True)
        >>> token_ids = ops.convert_to_tensor([[12, 7, 431, 0], [5, 9, 2, 88]])
        >>> x = embed(token_ids)
        >>> tuple(x.shape)
        (2, 4, 64)
        >>> ops.convert_to_numpy(embed.compute_mask(token_ids)).tolist()
        [[True, True, True, False], [True, True, True, True]]

    References:
        Vaswani et al., 2017, sections 3.4-3.5; keras-io "Text classification with
        Transformer" (TokenAndPositionEmbedding); Devlin et al., "BERT", 2019.
    """

    def __init__(
        self,
        vocab_size: int,
        max_length: int,
        d_model: int,
        position: str | None = "learned",
        scale: bool = False,
        mask_zero: bool = True,
        embeddings_initializer: Any = "uniform",
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if position not in POSITION_KINDS:
            raise ValueError(f"position must be one of {POSITION_KINDS}, got {position!r}.")
        self.vocab_size = vocab_size
        self.max_length = max_length
        self.d_model = d_model
        self.position = position
        self.scale = scale
        self.mask_zero = mask_zero
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.supports_masking = mask_zero

        self.token_embedding = keras.layers.Embedding(
            vocab_size,
            d_model,
            embeddings_initializer=self.embeddings_initializer,
            mask_zero=mask_zero,
            name="token_embedding",
            dtype=self.dtype_policy,
        )
        if position == "learned":
            self.position_embedding = PositionalEmbedding(
                max_length, name="position_embedding", dtype=self.dtype_policy
            )
        elif position == "sinusoidal":
            self.position_embedding = SinusoidalPositionalEncoding(
                name="position_embedding", dtype=self.dtype_policy
            )
        else:
            self.position_embedding = None

    def build(self, input_shape):
        self.token_embedding.build(input_shape)
        if self.position_embedding is not None:
            self.position_embedding.build(tuple(input_shape) + (self.d_model,))

    def call(self, token_ids):
        x = self.token_embedding(token_ids)
        if self.scale:
            x = x * ops.cast(math.sqrt(self.d_model), x.dtype)
        if self.position_embedding is not None:
            x = x + self.position_embedding(x)
        return x

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.d_model,)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "max_length": self.max_length,
                "d_model": self.d_model,
                "position": self.position,
                "scale": self.scale,
                "mask_zero": self.mask_zero,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
            }
        )
        return config
