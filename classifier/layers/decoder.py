"""Transformer decoder: one layer (``DecoderLayer``) and a stack (``Decoder``)."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from classifier.layers.attention import MultiHeadAttention
from classifier.layers.checks import check_width
from classifier.layers.feed_forward import FeedForward
from classifier.layers.masks import attention_mask, causal_mask, combine_masks
from classifier.layers.normalization import LayerNormalization, residual_sublayer
from classifier.layers.stack import LayerStack, TransformerSettings

__all__ = ["Decoder", "DecoderLayer"]


def _decoder_masks(
    decoder_sequence: Any, decoder_padding_mask: Any | None, encoder_padding_mask: Any | None
) -> tuple[Any, Any | None]:
    """Self-attention mask (causal AND padding, (B, T, T)) and cross-attention mask (B, T, S)."""
    length = ops.shape(decoder_sequence)[-2]
    self_mask = combine_masks(
        causal_mask(length), attention_mask(decoder_padding_mask, decoder_padding_mask)
    )
    cross_mask = attention_mask(decoder_padding_mask, encoder_padding_mask)
    return self_mask, cross_mask


@keras.saving.register_keras_serializable(package="classifier")
class DecoderLayer(TransformerSettings):
    """One Transformer decoder layer: masked self-attention, cross-attention, feed-forward.

    Post-LN (default)::

        x = LayerNorm(x + Dropout(CausalSelfAttention(x)))
        x = LayerNorm(x + Dropout(CrossAttention(query=x, value=encoder_sequence)))
        x = LayerNorm(x + Dropout(FeedForward(x)))

    Pre-LN (``norm_first=True``) normalises each sublayer input instead. The self-attention is
    causal: the output at position t depends only on decoder inputs at positions <= t.

    Args:
        d_model: width d of the decoder inputs and outputs.
        num_heads: attention heads; must divide ``d_model``.
        d_ff: inner width of the feed-forward sublayer.
        dropout: dropout rate on each sublayer output (training only).
        norm_first: pre-LN instead of post-LN.
        activation: activation of the feed-forward sublayer.
        epsilon: epsilon of the layer normalizations.
        attention_dropout: dropout rate on the attention weights.
        **kwargs: base layer arguments.

    Call arguments:
        decoder_sequence: (B, T, d) embedded decoder inputs (shifted targets).
        encoder_sequence: (B, S, d_enc) encoder outputs.
        decoder_padding_mask: bool (B, T), ``True`` at real decoder tokens; defaults to the
            Keras mask of ``decoder_sequence``.
        encoder_padding_mask: bool (B, S), ``True`` at real source tokens; defaults to the Keras
            mask of ``encoder_sequence``.
        training: whether dropout is active.
        return_attention_scores: also return the attention weights.

    Returns:
        (B, T, d) tensor, or ``(output, self_weights, cross_weights)`` with self_weights
        (B, h, T, T) and cross_weights (B, h, T, S).

    Example:
        >>> layer = DecoderLayer(d_model=64, num_heads=4, d_ff=128)
        >>> target = keras.random.normal((2, 7, 64))  # embedded decoder inputs
        >>> source = keras.random.normal((2, 10, 64))  # encoder outputs
        >>> source_mask = ops.convert_to_tensor([[True] * 10, [True] * 6 + [False] * 4])
        >>> y, self_w, cross_w = layer(
        ...     target, source, encoder_padding_mask=source_mask, return_attention_scores=True
        ... )
        >>> tuple(y.shape), tuple(self_w.shape), tuple(cross_w.shape)
        ((2, 7, 64), (2, 4, 7, 7), (2, 4, 7, 10))

        No weight goes to future target positions, nor to padded source positions:

        >>> float(ops.max(self_w[:, :, 0, 1:])), float(ops.max(cross_w[1, :, :, 6:]))
        (0.0, 0.0)

    References:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.1.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: Any = "relu",
        epsilon: float = 1e-6,
        attention_dropout: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(
            d_model, num_heads, d_ff, dropout, norm_first, activation, epsilon,
            attention_dropout, **kwargs,
        )  # fmt: skip
        policy = self.dtype_policy
        self.self_attention = MultiHeadAttention(
            d_model, num_heads, dropout=attention_dropout, name="self_attention", dtype=policy
        )
        self.self_attention_dropout = keras.layers.Dropout(
            dropout, name="self_attention_dropout", dtype=policy
        )
        self.self_attention_norm = LayerNormalization(
            epsilon, name="self_attention_norm", dtype=policy
        )
        self.cross_attention = MultiHeadAttention(
            d_model, num_heads, dropout=attention_dropout, name="cross_attention", dtype=policy
        )
        self.cross_attention_dropout = keras.layers.Dropout(
            dropout, name="cross_attention_dropout", dtype=policy
        )
        self.cross_attention_norm = LayerNormalization(
            epsilon, name="cross_attention_norm", dtype=policy
        )
        self.feed_forward = FeedForward(
            d_model, d_ff, activation=self.activation, name="feed_forward", dtype=policy
        )
        self.feed_forward_dropout = keras.layers.Dropout(
            dropout, name="feed_forward_dropout", dtype=policy
        )
        self.feed_forward_norm = LayerNormalization(epsilon, name="feed_forward_norm", dtype=policy)

    def build(self, decoder_sequence_shape, encoder_sequence_shape):
        check_width(self, decoder_sequence_shape, self.d_model, what="decoder inputs")
        self.self_attention.build(decoder_sequence_shape, decoder_sequence_shape)
        self.self_attention_norm.build(decoder_sequence_shape)
        self.cross_attention.build(decoder_sequence_shape, encoder_sequence_shape)
        self.cross_attention_norm.build(decoder_sequence_shape)
        self.feed_forward.build(decoder_sequence_shape)
        self.feed_forward_norm.build(decoder_sequence_shape)

    def call(
        self,
        decoder_sequence,
        encoder_sequence,
        decoder_padding_mask=None,
        encoder_padding_mask=None,
        training=None,
        return_attention_scores=False,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
    ):
        if decoder_padding_mask is None:
            decoder_padding_mask = decoder_sequence_mask
        if encoder_padding_mask is None:
            encoder_padding_mask = encoder_sequence_mask
        self_mask, cross_mask = _decoder_masks(
            decoder_sequence, decoder_padding_mask, encoder_padding_mask
        )

        x, self_weights = residual_sublayer(
            decoder_sequence,
            self.self_attention_norm,
            self.self_attention_dropout,
            lambda h: self.self_attention(
                h, h, attention_mask=self_mask, training=training, return_attention_scores=True
            ),
            norm_first=self.norm_first,
            training=training,
        )
        x, cross_weights = residual_sublayer(
            x,
            self.cross_attention_norm,
            self.cross_attention_dropout,
            lambda h: self.cross_attention(
                h,
                encoder_sequence,
                attention_mask=cross_mask,
                training=training,
                return_attention_scores=True,
            ),
            norm_first=self.norm_first,
            training=training,
        )
        x, _ = residual_sublayer(
            x,
            self.feed_forward_norm,
            self.feed_forward_dropout,
            lambda h: (self.feed_forward(h), None),
            norm_first=self.norm_first,
            training=training,
        )
        if return_attention_scores:
            return x, self_weights, cross_weights
        return x


@keras.saving.register_keras_serializable(package="classifier")
class Decoder(LayerStack):
    """A stack of ``num_layers`` :class:`DecoderLayer` on embedded decoder inputs.

    With ``norm_first=True`` a final layer normalization follows the stack.

    Args:
        num_layers: number of decoder layers N.
        d_model: width d of the decoder inputs and outputs.
        num_heads: attention heads; must divide ``d_model``.
        d_ff: inner width of the feed-forward sublayers.
        dropout: dropout rate on each sublayer output.
        norm_first: pre-LN layers plus a final LayerNorm, instead of post-LN.
        activation: activation of the feed-forward sublayers.
        epsilon: epsilon of the layer normalizations.
        attention_dropout: dropout rate on the attention weights.
        **kwargs: base layer arguments.

    Call arguments:
        decoder_sequence: (B, T, d) embedded decoder inputs.
        encoder_sequence: (B, S, d_enc) encoder outputs.
        decoder_padding_mask: bool (B, T), ``True`` at real tokens; defaults to the Keras mask
            of ``decoder_sequence``.
        encoder_padding_mask: bool (B, S), ``True`` at real tokens; defaults to the Keras mask
            of ``encoder_sequence``.
        training: whether dropout is active.
        return_attention_scores: also return the attention weights of every layer.

    Returns:
        (B, T, d) tensor, or ``(output, self_weights, cross_weights)`` where ``self_weights``
        is a list of N tensors (B, h, T, T) and ``cross_weights`` a list of N tensors
        (B, h, T, S).

    Example:
        >>> decoder = Decoder(num_layers=2, d_model=64, num_heads=4, d_ff=128)
        >>> target, source = keras.random.normal((2, 7, 64)), keras.random.normal((2, 10, 64))
        >>> y, self_w, cross_w = decoder(target, source, return_attention_scores=True)
        >>> tuple(y.shape), [tuple(w.shape) for w in cross_w]
        ((2, 7, 64), [(2, 4, 7, 10), (2, 4, 7, 10)])

    References:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.1.
    """

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: Any = "relu",
        epsilon: float = 1e-6,
        attention_dropout: float = 0.0,
        **kwargs: Any,
    ):
        super().__init__(
            num_layers, d_model, num_heads, d_ff, dropout, norm_first, activation, epsilon,
            attention_dropout, **kwargs,
        )  # fmt: skip
        self.decoder_layers = self.stacked(DecoderLayer)
        self.final_norm = self.final_norm_layer()

    def build(self, decoder_sequence_shape, encoder_sequence_shape):
        check_width(self, decoder_sequence_shape, self.d_model, what="decoder inputs")
        for layer in self.decoder_layers:
            layer.build(decoder_sequence_shape, encoder_sequence_shape)
        if self.final_norm is not None:
            self.final_norm.build(decoder_sequence_shape)

    def call(
        self,
        decoder_sequence,
        encoder_sequence,
        decoder_padding_mask=None,
        encoder_padding_mask=None,
        training=None,
        return_attention_scores=False,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
    ):
        if decoder_padding_mask is None:
            decoder_padding_mask = decoder_sequence_mask
        if encoder_padding_mask is None:
            encoder_padding_mask = encoder_sequence_mask
        x = decoder_sequence
        self_weights, cross_weights = [], []
        for layer in self.decoder_layers:
            x, self_w, cross_w = layer(
                x,
                encoder_sequence,
                decoder_padding_mask=decoder_padding_mask,
                encoder_padding_mask=encoder_padding_mask,
                training=training,
                return_attention_scores=True,
            )
            self_weights.append(self_w)
            cross_weights.append(cross_w)
        if self.final_norm is not None:
            x = self.final_norm(x)
        if return_attention_scores:
            return x, self_weights, cross_weights
        return x
