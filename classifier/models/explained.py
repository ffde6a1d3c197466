"""A model that shows what a classifier attends to: token ids to the attention weights of the
layer its variant explains, and, for a fused model, its attention branch's logits.

:func:`attention_model` wires it over the classifier's own graph and weights with
``keras.models.clone_model``, sharing every layer but the explained one, which is a
weight-identical copy called with ``return_attention_scores=True`` (Keras cannot give a second
output to a layer already called without it). Nothing is replayed by hand, so models saved
before this module existed are explained the same way. ``classify explain`` runs it in Keras,
and the bundle holds it as a LiteRT model (:func:`classifier.serving.bundle.write_bundle`).

Example (a trained ``encoder`` classifier)::

    model, layer = attention_model(classifier)  # layer: "encoder layer 2 of 2"
    weights = model(np.array([[12, 845, 7]]))[0]  # (1, h, 3, 3)
"""

from __future__ import annotations

import keras

from classifier.config import variants
from classifier.errors import ExplainError

#: The layer whose logits are a fused classifier's attention branch (``nbow_attention``).
BRANCH_LAYER = "attention_logits"


def attention_model(classifier: keras.Model) -> tuple[keras.Model, str]:
    """A model over ``classifier``'s graph and weights: token ids (B, T) to ``[weights (B, h,
    T, S)]`` of the layer its variant explains (the last of a stack), or ``[weights, branch
    logits (B, K)]`` where the classifier has a :data:`BRANCH_LAYER`; and that layer in words.

    Raises:
        ExplainError: the classifier is not one the variant registry knows, or lacks the layer.
    """
    variant = variants.variant_of_model(classifier.name)
    if variant is None:
        raise ExplainError(f"model {classifier.name!r} is not a classifier of a known variant")
    try:
        original = classifier.get_layer(variant.explained_layer)
    except ValueError:
        raise ExplainError(
            f"classifier {classifier.name!r} has no layer {variant.explained_layer!r} to explain"
        ) from None
    captured, branch = [], []

    def clone_function(layer):
        return type(layer).from_config(layer.get_config()) if layer is original else layer

    def call_function(layer, *args, **kwargs):
        if layer.name == BRANCH_LAYER:
            branch.append(layer(*args, **kwargs))
            return branch[-1]
        if layer.name != original.name or layer is original:
            return layer(*args, **kwargs)
        output, weights = layer(*args, return_attention_scores=True, **kwargs)
        layer.set_weights(original.get_weights())  # built by the call above
        captured.append(weights)
        return output

    (token_ids,) = classifier.inputs
    inputs = keras.Input(shape=(None,), dtype=token_ids.dtype, name="token_ids")
    clone = keras.models.clone_model(
        classifier, inputs, clone_function=clone_function, call_function=call_function
    )
    (weights,) = captured
    stacked = isinstance(weights, list | tuple)  # a stack: every layer's weights
    last = len(weights) if stacked else 1
    weights = weights[-1] if stacked else weights
    if len(weights.shape) == 3:  # one head: (B, T, S)
        weights = keras.ops.expand_dims(weights, 1)
    described = variant.explained_as.format(last=last)
    return keras.Model(inputs, [weights, *branch], name="attention_of_" + clone.name), described
