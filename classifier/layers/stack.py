"""What the Transformer's layers and stacks share, written once: their settings
(:class:`TransformerSettings`: width, heads, feed-forward width, dropout, pre- or post-LN,
activation, epsilon, attention dropout; stored, passed on and serialised) and, for a stack,
its N layers and the final LayerNorm that pre-LN needs (:class:`LayerStack`).
:mod:`classifier.layers.encoder` and :mod:`classifier.layers.decoder` build on them; each keeps
its own attribute names, which saved models' weights are filed under.

Example:
    >>> from classifier.layers.encoder import Encoder
    >>> encoder = Encoder(num_layers=2, d_model=8, num_heads=2, d_ff=16, norm_first=True)
    >>> encoder.settings()["d_ff"], [layer.name for layer in encoder.encoder_layers]
    (16, ['layer_0', 'layer_1'])
"""

from __future__ import annotations

from typing import Any

import keras

from classifier.layers.normalization import LayerNormalization


class TransformerSettings(keras.layers.Layer):
    """A layer with the Transformer's settings: stored as attributes, :meth:`settings` hands
    them to sublayers, :meth:`get_config` serialises them (the activation by name)."""

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
        super().__init__(**kwargs)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_ff = d_ff
        self.dropout = dropout
        self.norm_first = norm_first
        self.activation = keras.activations.get(activation)
        self.epsilon = epsilon
        self.attention_dropout = attention_dropout
        self.supports_masking = True

    def settings(self) -> dict[str, Any]:
        """The settings as keyword arguments of a layer of the same kind."""
        names = ("d_model", "num_heads", "d_ff", "dropout", "norm_first", "activation")
        return {name: getattr(self, name) for name in (*names, "epsilon", "attention_dropout")}

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(self.settings())
        config["activation"] = keras.activations.serialize(self.activation)
        return config


class LayerStack(TransformerSettings):
    """``num_layers`` layers of one kind with the same settings (:meth:`stacked`), and with
    ``norm_first`` a final LayerNorm after them (:meth:`final_norm_layer`)."""

    def __init__(self, num_layers: int, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}.")
        self.num_layers = num_layers

    def stacked(self, layer_class: type[keras.layers.Layer]) -> list[keras.layers.Layer]:
        """``num_layers`` new ``layer_class`` layers named ``layer_0``, ``layer_1``, ..."""
        return [
            layer_class(**self.settings(), name=f"layer_{i}", dtype=self.dtype_policy)
            for i in range(self.num_layers)
        ]

    def final_norm_layer(self) -> LayerNormalization | None:
        """The LayerNorm after a pre-LN stack; None for post-LN (each layer ends normalised)."""
        if not self.norm_first:
            return None
        return LayerNormalization(self.epsilon, name="final_norm", dtype=self.dtype_policy)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "num_layers": self.num_layers}
