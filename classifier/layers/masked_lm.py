"""The output head of a masked language model, tied to the token embedding."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from classifier.layers.checks import check_width
from classifier.layers.normalization import LayerNormalization

__all__ = ["MaskedLMHead"]


@keras.saving.register_keras_serializable(package="classifier")
class MaskedLMHead(keras.layers.Layer):
    """Token logits at chosen positions, with the output projection tied to the embedding.

    ``logits = LayerNorm(Dense(gather(hidden, positions))) @ embeddings^T + bias``: the hidden
    states are gathered at the positions to predict before anything else, so the transform,
    the projection and the softmax over the vocabulary cost P positions, not T. The projection
    has no kernel of its own: it is the token embedding table, passed in at call time (so a
    saved model holds it once, and its gradient reaches the embedding from both uses). The
    head's own weights are the transform (dense kernel and bias, norm gain and offset) and one
    output bias per token.

    Args:
        vocab_size: number of token ids V (rows of the embedding table).
        d_model: width d of the hidden states (columns of the embedding table).
        activation: activation of the transform.
        epsilon: epsilon of the layer normalization.
        **kwargs: base layer arguments.

    Call arguments:
        hidden: (B, T, d) encoder outputs.
        positions: int (B, P) positions to predict (unused slots may hold any valid position;
            weight them out in the loss).
        embeddings: (V, d) the token embedding table to project onto.

    Returns:
        float32 logits (B, P, V).

    Example:
        >>> head = MaskedLMHead(vocab_size=50, d_model=16)
        >>> hidden = keras.random.normal((2, 7, 16))
        >>> table = keras.random.normal((50, 16))
        >>> logits = head(hidden, ops.convert_to_tensor([[1, 4], [0, 0]]), table)
        >>> tuple(logits.shape), [tuple(w.shape) for w in head.weights if len(w.shape) == 2]
        ((2, 2, 50), [(16, 16)])

    References:
        Devlin et al., "BERT", 2019 (appendix A.1); Press and Wolf, "Using the Output Embedding
        to Improve Language Models", 2017; keras-hub ``MaskedLMHead``.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        activation: Any = "gelu",
        epsilon: float = 1e-6,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.activation = keras.activations.get(activation)
        self.epsilon = epsilon
        policy = self.dtype_policy
        self.transform = keras.layers.Dense(
            d_model, activation=self.activation, name="transform", dtype=policy
        )
        self.norm = LayerNormalization(epsilon, name="transform_norm", dtype=policy)

    def build(self, input_shape):
        check_width(self, input_shape, self.d_model)
        self.transform.build(input_shape)
        self.norm.build(input_shape)
        self.bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros"
        )

    def call(self, hidden, positions, embeddings):
        width = ops.shape(hidden)[-1]
        index = ops.expand_dims(ops.cast(positions, "int32"), -1)
        index = ops.broadcast_to(index, (ops.shape(index)[0], ops.shape(index)[1], width))
        x = ops.take_along_axis(hidden, index, axis=1)  # (B, P, d)
        x = self.norm(self.transform(x))
        table = ops.cast(embeddings, x.dtype)
        logits = ops.matmul(x, ops.transpose(table)) + ops.cast(self.bias, x.dtype)
        return ops.cast(logits, "float32")

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "d_model": self.d_model,
                "activation": keras.activations.serialize(self.activation),
                "epsilon": self.epsilon,
            }
        )
        return config
