"""Transformer encoder: one layer (``EncoderLayer``) and a stack (``Encoder``).

``TransformerBlock`` is the former name of ``EncoderLayer``, kept so that saved models load.
"""

from __future__ import annotations

from typing import Any

import keras

from classifier.layers.attention import MultiHeadAttention
from classifier.layers.checks import check_width
from classifier.layers.feed_forward import FeedForward
from classifier.layers.masks import attention_mask
from classifier.layers.normalization import LayerNormalization, residual_sublayer
from classifier.layers.stack import LayerStack, TransformerSettings

__all__ = ["Encoder", "EncoderLayer", "TransformerBlock"]


@keras.saving.register_keras_serializable(package="classifier")
class EncoderLayer(TransformerSettings):
    """One Transformer encoder layer: self-attention and feed-forward, each with a residual.

    Post-LN (the paper, default)::

        x = LayerNorm(x + Dropout(SelfAttention(x)))
        x = LayerNorm(x + Dropout(FeedForward(x)))

    Pre-LN (``norm_first=True``; more stable for deep stacks, needs a final LayerNorm, which
    :class:`Encoder` adds)::

        x = x + Dropout(SelfAttention(LayerNorm(x)))
        x = x + Dropout(FeedForward(LayerNorm(x)))

    Padded positions are excluded as keys and attend to nothing themselves (zero attention
    output), so appending padding leaves the outputs at real positions unchanged.

    Args:
        d_model: width d of inputs and outputs.
        num_heads: attention heads; must divide ``d_model``.
        d_ff: inner width of the feed-forward sublayer.
        dropout: dropout rate on each sublayer output (training only).
        norm_first: pre-LN instead of post-LN.
        activation: activation of the feed-forward sublayer.
        epsilon: epsilon of the layer normalizations.
        attention_dropout: dropout rate on the attention weights.
        **kwargs: base layer arguments.

    Call arguments:
        x: (B, T, d) embedded inputs.
        padding_mask: bool (B, T), ``True`` at real tokens. When ``None``, the Keras mask of
            ``x`` (e.g. from ``TokenAndPositionEmbedding(mask_zero=True)``) is used.
        training: whether dropout is active.
        return_attention_scores: also return the self-attention weights.

    Returns:
        (B, T, d) tensor, or ``(output, weights)`` with weights (B, h, T, T).

    Example:
        >>> layer = EncoderLayer(d_model=64, num_heads=4, d_ff=128)
        >>> x = keras.random.normal((2, 10, 64))  # embedded tokens
        >>> mask = keras.ops.convert_to_tensor([[True] * 10, [True] * 7 + [False] * 3])
        >>> y, weights = layer(x, padding_mask=mask, return_attention_scores=True)
        >>> tuple(y.shape), tuple(weights.shape)
        ((2, 10, 64), (2, 4, 10, 10))
        >>> float(keras.ops.max(weights[1, :, :, 7:]))  # padded keys get no attention
        0.0

    References:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.1; Xiong et al.,
        "On Layer Normalization in the Transformer Architecture", 2020 (pre-LN). The
        ``TransformerBlock`` of keras-io "Text classification with Transformer" computes the
        same post-LN steps with ``epsilon=1e-6`` (its ``embed_dim``, ``ff_dim`` and ``rate`` are
        ``d_model``, ``d_ff`` and ``dropout``) but ignores padding:
        https://keras.io/examples/nlp/text_classification_with_transformer/
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
        self.attention_dropout_layer = keras.layers.Dropout(
            dropout, name="attention_output_dropout", dtype=policy
        )
        self.attention_norm = LayerNormalization(epsilon, name="attention_norm", dtype=policy)
        self.feed_forward = FeedForward(
            d_model, d_ff, activation=self.activation, name="feed_forward", dtype=policy
        )
        self.feed_forward_dropout = keras.layers.Dropout(
            dropout, name="feed_forward_dropout", dtype=policy
        )
        self.feed_forward_norm = LayerNormalization(epsilon, name="feed_forward_norm", dtype=policy)

    def build(self, input_shape):
        check_width(self, input_shape, self.d_model)
        self.self_attention.build(input_shape, input_shape)
        self.attention_norm.build(input_shape)
        self.feed_forward.build(input_shape)
        self.feed_forward_norm.build(input_shape)

    def call(
        self,
        x,
        padding_mask=None,
        training=None,
        return_attention_scores=False,
        mask=None,
    ):
        if padding_mask is None:
            padding_mask = mask
        attn_mask = attention_mask(padding_mask, padding_mask)

        x, weights = residual_sublayer(
            x,
            self.attention_norm,
            self.attention_dropout_layer,
            lambda h: self.self_attention(
                h, h, attention_mask=attn_mask, training=training, return_attention_scores=True
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
            return x, weights
        return x


@keras.saving.register_keras_serializable(package="classifier")
class TransformerBlock(EncoderLayer):
    """:class:`EncoderLayer` under its former name, kept so that saved models still load.

    A model saved in Keras format names the class of each layer; models saved with this one name
    ``classifier>TransformerBlock``, which must stay registered for them to load. It adds nothing
    to :class:`EncoderLayer` (same arguments, sublayers, weights and outputs): new code should use
    :class:`EncoderLayer`.
    """


@keras.saving.register_keras_serializable(package="classifier")
class Encoder(LayerStack):
    """A stack of ``num_layers`` :class:`EncoderLayer` on embedded inputs.

    With ``norm_first=True`` a final layer normalization follows the stack (pre-LN needs it).

    Args:
        num_layers: number of encoder layers N.
        d_model: width d of inputs and outputs.
        num_heads: attention heads; must divide ``d_model``.
        d_ff: inner width of the feed-forward sublayers.
        dropout: dropout rate on each sublayer output.
        norm_first: pre-LN layers plus a final LayerNorm, instead of post-LN.
        activation: activation of the feed-forward sublayers.
        epsilon: epsilon of the layer normalizations.
        attention_dropout: dropout rate on the attention weights.
        **kwargs: base layer arguments.

    Call arguments:
        x: (B, T, d) embedded inputs (e.g. from :class:`TokenAndPositionEmbedding`).
        padding_mask: bool (B, T), ``True`` at real tokens; defaults to the Keras mask of ``x``.
        training: whether dropout is active.
        return_attention_scores: also return the attention weights of every layer.

    Returns:
        (B, T, d) tensor, or ``(output, weights)`` where ``weights`` is a list of N tensors
        (B, h, T, T), one per layer.

    Example:
        >>> from classifier.layers import TokenAndPositionEmbedding
        >>> token_ids = keras.ops.convert_to_tensor([[5, 8, 3, 0, 0], [4, 2, 7, 9, 6]])
        >>> embed = TokenAndPositionEmbedding(vocab_size=10, max_length=5, d_model=64)
        >>> x = embed(token_ids)  # carries the Keras mask token_ids != 0, used by the encoder
        >>> encoder = Encoder(num_layers=2, d_model=64, num_heads=4, d_ff=128)
        >>> y, weights = encoder(x, return_attention_scores=True)
        >>> tuple(y.shape), [tuple(w.shape) for w in weights]
        ((2, 5, 64), [(2, 4, 5, 5), (2, 4, 5, 5)])

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
        self.encoder_layers = self.stacked(EncoderLayer)
        self.final_norm = self.final_norm_layer()

    def build(self, input_shape):
        check_width(self, input_shape, self.d_model)
        for layer in self.encoder_layers:
            layer.build(input_shape)
        if self.final_norm is not None:
            self.final_norm.build(input_shape)

    def call(
        self,
        x,
        padding_mask=None,
        training=None,
        return_attention_scores=False,
        mask=None,
    ):
        if padding_mask is None:
            padding_mask = mask
        all_weights = []
        for layer in self.encoder_layers:
            x, weights = layer(
                x, padding_mask=padding_mask, training=training, return_attention_scores=True
            )
            all_weights.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)
        if return_attention_scores:
            return x, all_weights
        return x
