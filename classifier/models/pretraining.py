"""Pretraining models: the encoder that fine-tuning takes, a masked language model on top of
it (BERT), and the encoder-decoder :class:`~classifier.models.transformer.Transformer` for
span corruption (T5).

The encoder is built by the ``encoder`` variant's own builder
(:func:`~classifier.models.classifier.encoder_stack`): a ``TokenAndPositionEmbedding`` named
``embedding`` and an ``Encoder`` named ``encoder``, the layers that ``model.init_from`` copies
into a classifier.

Example:
    >>> from classifier.config.schema import ModelConfig
    >>> cfg = ModelConfig(variant="encoder", num_layers=1)
    >>> mlm = MaskedLanguageModel.from_model_config(cfg, vocab_size=100, sequence_length=8)
    >>> logits = mlm((np.array([[5, 99, 2, 0]]), np.array([[1, 0]])))
    >>> tuple(logits.shape)  # (B, P, V): only at the positions to predict
    (1, 2, 100)
    >>> mlm.output_embeddings is mlm.encoder.get_layer("embedding").token_embedding.embeddings
    True
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np  # noqa: F401 - used by the docstring example

from classifier.config.schema import ModelConfig
from classifier.layers import MaskedLMHead, padding_mask
from classifier.models.classifier import encoder_stack
from classifier.models.transformer import Transformer

ENCODER_NAME = "imdb_encoder"


def build_encoder(cfg: ModelConfig, vocab_size: int, sequence_length: int) -> keras.Model:
    """Token ids (B, T) to hidden states (B, T, d): the ``encoder`` variant's stack, unpooled."""
    token_ids = keras.Input(shape=(None,), dtype="int64", name="token_ids")
    hidden = encoder_stack(cfg, token_ids, padding_mask(token_ids), vocab_size, sequence_length)
    return keras.Model(token_ids, hidden, name=ENCODER_NAME)


@keras.saving.register_keras_serializable(package="classifier")
class MaskedLanguageModel(keras.Model):
    """The encoder plus a :class:`~classifier.layers.MaskedLMHead` tied to its token embedding.

    Args:
        vocab_size: token ids V, the reserved ``[MASK]`` included.
        sequence_length: longest sequence T (size of a learned position table).
        embed_dim, num_heads, ff_dim, num_layers, dropout, position, scale_embeddings,
            norm_first: the ``model.*`` keys of the ``encoder`` variant.
        **kwargs: base model arguments.

    Call arguments:
        inputs: ``(token_ids, positions)``: corrupted ids (B, T) and the positions to
            predict (B, P).
        training: whether dropout is active.

    Returns:
        float32 logits (B, P, V).
    """

    def __init__(
        self,
        vocab_size: int,
        sequence_length: int,
        embed_dim: int,
        num_heads: int,
        ff_dim: int,
        num_layers: int,
        dropout: float = 0.1,
        position: str = "sinusoidal",
        scale_embeddings: bool = False,
        norm_first: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.sequence_length = sequence_length
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.position = position
        self.scale_embeddings = scale_embeddings
        self.norm_first = norm_first
        self.encoder = build_encoder(self.model_config(), vocab_size, sequence_length)
        self.head = MaskedLMHead(vocab_size, embed_dim, name="mlm_head", dtype=self.dtype_policy)

    @classmethod
    def from_model_config(
        cls, cfg: ModelConfig, vocab_size: int, sequence_length: int
    ) -> MaskedLanguageModel:
        """The model for the ``model.*`` sizes of a config."""
        return cls(
            vocab_size,
            sequence_length,
            cfg.embed_dim,
            cfg.num_heads,
            cfg.ff_dim,
            cfg.num_layers,
            dropout=cfg.dropout,
            position=cfg.position,
            scale_embeddings=cfg.scale_embeddings,
            norm_first=cfg.norm_first,
            name="imdb_mlm",
        )

    def model_config(self) -> ModelConfig:
        """The ``encoder`` variant's ``model.*`` settings this model was built with."""
        return ModelConfig(
            variant="encoder",
            embed_dim=self.embed_dim,
            num_heads=self.num_heads,
            ff_dim=self.ff_dim,
            num_layers=self.num_layers,
            dropout=self.dropout,
            position=self.position,
            scale_embeddings=self.scale_embeddings,
            norm_first=self.norm_first,
        )

    @property
    def output_embeddings(self) -> keras.Variable:
        """The tied output projection: the token embedding table (V, d) itself."""
        return self.encoder.get_layer("embedding").token_embedding.embeddings

    def build(self, input_shape):
        token_shape = tuple(input_shape[0])
        self.head.build(token_shape + (self.embed_dim,))
        self.built = True

    def call(self, inputs, training=None):
        token_ids, positions = inputs
        hidden = self.encoder(token_ids, training=training)
        return self.head(hidden, positions, self.output_embeddings)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "sequence_length": self.sequence_length,
                "embed_dim": self.embed_dim,
                "num_heads": self.num_heads,
                "ff_dim": self.ff_dim,
                "num_layers": self.num_layers,
                "dropout": self.dropout,
                "position": self.position,
                "scale_embeddings": self.scale_embeddings,
                "norm_first": self.norm_first,
            }
        )
        return config


def span_transformer(cfg: ModelConfig, vocab_size: int, sequence_length: int) -> Transformer:
    """The encoder-decoder Transformer of span corruption, its encoder sized as the ``encoder``
    variant's (one vocabulary for source and target, sentinels included)."""
    return Transformer(
        cfg.num_layers,
        cfg.embed_dim,
        cfg.num_heads,
        cfg.ff_dim,
        source_vocab_size=vocab_size,
        target_vocab_size=vocab_size,
        max_length=sequence_length,
        dropout=cfg.dropout,
        norm_first=cfg.norm_first,
        position=cfg.position,
        scale_embeddings=cfg.scale_embeddings,
        name="imdb_span_transformer",
    )


def encoder_of(model: keras.Model, cfg: ModelConfig, sequence_length: int) -> keras.Model:
    """The pretrained encoder of a :class:`MaskedLanguageModel` or of a span
    :class:`Transformer` (its source embedding and encoder, copied into the variant's stack)."""
    if isinstance(model, MaskedLanguageModel):
        return model.encoder
    encoder = build_encoder(cfg, model.source_vocab_size, sequence_length)
    encoder.get_layer("embedding").set_weights(model.source_embedding.get_weights())
    encoder.get_layer("encoder").set_weights(model.encoder.get_weights())
    return encoder
