"""The full encoder-decoder Transformer, with greedy decoding."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from classifier.layers.decoder import Decoder
from classifier.layers.encoder import Encoder
from classifier.layers.masks import padding_mask
from classifier.layers.positional import TokenAndPositionEmbedding

__all__ = ["Transformer"]


@keras.saving.register_keras_serializable(package="classifier")
class Transformer(keras.Model):
    """Encoder-decoder Transformer with a final projection to the target vocabulary.

    ``source -> embed (* sqrt(d), + positions) -> dropout -> Encoder`` and
    ``shifted target -> embed -> dropout -> Decoder(cross-attending to the encoder) -> Dense``.
    Token id 0 is padding in both vocabularies; padding masks are computed from the ids.

    Args:
        num_layers: encoder layers and decoder layers (N each).
        d_model: model width d.
        num_heads: attention heads; must divide ``d_model``.
        d_ff: inner width of the feed-forward sublayers.
        source_vocab_size: size of the source vocabulary.
        target_vocab_size: size of the target vocabulary (output classes).
        max_length: longest source or target sequence.
        dropout: dropout rate on embeddings and on every sublayer output.
        norm_first: pre-LN instead of post-LN.
        position: "sinusoidal" (paper), "learned" or None.
        scale_embeddings: multiply token embeddings by sqrt(d_model), as the paper does.
        activation: activation of the feed-forward sublayers.
        epsilon: epsilon of the layer normalizations.
        **kwargs: base model arguments (``name``, ...).

    Call arguments:
        inputs: a pair ``(source_ids, target_ids)`` of int tensors (B, S) and (B, T);
            ``target_ids`` are the targets shifted right (starting with the start token).
        training: whether dropout is active.

    Returns:
        float32 logits (B, T, target_vocab_size).

    Example:
        >>> model = Transformer(2, 64, 4, 128, source_vocab_size=20, target_vocab_size=20,
        ...                     max_length=16)
        >>> source_ids = ops.convert_to_tensor([[5, 9, 3, 0], [7, 2, 8, 4]])  # 0 = padding
        >>> target_in = ops.convert_to_tensor([[1, 3, 9], [1, 4, 8]])  # 1 = start token
        >>> tuple(model((source_ids, target_in)).shape)
        (2, 3, 20)
        >>> model.generate(source_ids, start_id=1, max_new_tokens=10).shape
        (2, 10)

    References:
        Vaswani et al., "Attention Is All You Need", 2017; TensorFlow tutorial "Neural machine
        translation with a Transformer and Keras".
    """

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        source_vocab_size: int,
        target_vocab_size: int,
        max_length: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        position: str | None = "sinusoidal",
        activation: Any = "relu",
        epsilon: float = 1e-6,
        scale_embeddings: bool = True,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.num_layers = num_layers
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_ff = d_ff
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.max_length = max_length
        self.dropout = dropout
        self.norm_first = norm_first
        self.position = position
        self.activation = keras.activations.get(activation)
        self.epsilon = epsilon
        self.scale_embeddings = scale_embeddings

        policy = self.dtype_policy
        common = {
            "d_model": d_model,
            "num_heads": num_heads,
            "d_ff": d_ff,
            "dropout": dropout,
            "norm_first": norm_first,
            "activation": self.activation,
            "epsilon": epsilon,
            "dtype": policy,
        }
        self.source_embedding = TokenAndPositionEmbedding(
            source_vocab_size,
            max_length,
            d_model,
            position=position,
            scale=scale_embeddings,
            name="source_embedding",
            dtype=policy,
        )
        self.target_embedding = TokenAndPositionEmbedding(
            target_vocab_size,
            max_length,
            d_model,
            position=position,
            scale=scale_embeddings,
            name="target_embedding",
            dtype=policy,
        )
        self.source_dropout = keras.layers.Dropout(dropout, name="source_dropout", dtype=policy)
        self.target_dropout = keras.layers.Dropout(dropout, name="target_dropout", dtype=policy)
        self.encoder = Encoder(num_layers, name="encoder", **common)
        self.decoder = Decoder(num_layers, name="decoder", **common)
        self.final_layer = keras.layers.Dense(target_vocab_size, name="logits", dtype=policy)

    def build(self, input_shape):
        source_shape, target_shape = (tuple(shape) for shape in input_shape)
        self.source_embedding.build(source_shape)
        self.target_embedding.build(target_shape)
        encoded_shape = source_shape + (self.d_model,)
        decoded_shape = target_shape + (self.d_model,)
        self.encoder.build(encoded_shape)
        self.decoder.build(decoded_shape, encoded_shape)
        self.final_layer.build(decoded_shape)
        self.built = True

    def encode(self, source_ids: Any, training: bool | None = None) -> tuple[Any, Any]:
        """Encode source ids (B, S); returns (encoder outputs (B, S, d), padding mask (B, S))."""
        source_mask = padding_mask(source_ids)
        x = self.source_dropout(self.source_embedding(source_ids), training=training)
        return self.encoder(x, padding_mask=source_mask, training=training), source_mask

    def decode(
        self,
        target_ids: Any,
        encoder_outputs: Any,
        source_mask: Any,
        training: bool | None = None,
        return_attention_scores: bool = False,
    ) -> Any:
        """Logits (B, T, V) for target ids (B, T) given the encoded source.

        With ``return_attention_scores``: ``(logits, self_weights, cross_weights)``, lists of
        per-layer (B, h, T, T) and (B, h, T, S) tensors.
        """
        x = self.target_dropout(self.target_embedding(target_ids), training=training)
        x, self_weights, cross_weights = self.decoder(
            x,
            encoder_outputs,
            decoder_padding_mask=padding_mask(target_ids),
            encoder_padding_mask=source_mask,
            training=training,
            return_attention_scores=True,
        )
        logits = ops.cast(self.final_layer(x), "float32")
        if return_attention_scores:
            return logits, self_weights, cross_weights
        return logits

    def call(self, inputs, training=None):
        source_ids, target_ids = inputs
        encoder_outputs, source_mask = self.encode(source_ids, training=training)
        return self.decode(target_ids, encoder_outputs, source_mask, training=training)

    def generate(
        self,
        source_ids: Any,
        start_id: int,
        max_new_tokens: int | None = None,
        end_id: int | None = None,
        pad_id: int = 0,
    ) -> Any:
        """Greedy decoding: repeatedly append the most likely next token.

        The source is encoded once; each step re-runs the decoder on the tokens so far.

        Args:
            source_ids: int (B, S) source token ids.
            start_id: the start token that begins every target.
            max_new_tokens: tokens to generate; defaults to ``max_length``.
            end_id: optional end token; after it a sequence is filled with ``pad_id`` and
                decoding stops early once every sequence has ended.
            pad_id: filler after ``end_id``.

        Returns:
            int32 NumPy array (B, L) of generated ids, the start token excluded; L is
            ``max_new_tokens``, or fewer when every sequence produced ``end_id`` early.
        """
        max_new_tokens = self.max_length if max_new_tokens is None else max_new_tokens
        if max_new_tokens > self.max_length:
            raise ValueError(
                f"max_new_tokens={max_new_tokens} exceeds max_length={self.max_length}."
            )
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        batch = ops.shape(source_ids)[0]
        encoder_outputs, source_mask = self.encode(source_ids, training=False)
        tokens = ops.full((batch, 1), start_id, dtype="int32")
        finished = ops.zeros((batch,), dtype="bool")
        for _ in range(max_new_tokens):
            logits = self.decode(tokens, encoder_outputs, source_mask, training=False)
            next_ids = ops.cast(ops.argmax(logits[:, -1, :], axis=-1), "int32")
            if end_id is not None:
                next_ids = ops.where(finished, pad_id, next_ids)
                finished = ops.logical_or(finished, ops.equal(next_ids, end_id))
            tokens = ops.concatenate([tokens, ops.expand_dims(next_ids, -1)], axis=1)
            if end_id is not None and bool(ops.all(finished)):
                break
        return ops.convert_to_numpy(tokens[:, 1:])

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                "d_model": self.d_model,
                "num_heads": self.num_heads,
                "d_ff": self.d_ff,
                "source_vocab_size": self.source_vocab_size,
                "target_vocab_size": self.target_vocab_size,
                "max_length": self.max_length,
                "dropout": self.dropout,
                "norm_first": self.norm_first,
                "position": self.position,
                "activation": keras.activations.serialize(self.activation),
                "epsilon": self.epsilon,
                "scale_embeddings": self.scale_embeddings,
            }
        )
        return config
