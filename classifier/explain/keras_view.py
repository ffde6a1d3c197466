"""What ``classify explain`` reads of a Keras model (TensorFlow loaded): ids from its vectorizer,
probabilities from its classifier, a bag's features and values from its ``bag`` layer, and the
attention from :func:`classifier.models.explained.attention_model`. The bundle's twin, without
TensorFlow, is :mod:`classifier.explain.bundle_view`; both give NumPy arrays to
:mod:`classifier.explain.measures`.

Example (a trained ``nbow`` classifier and one review's ids, no padding)::

    probability, shares = word_contributions(classifier, np.array([12, 845, 7]))
"""

from __future__ import annotations

from functools import cached_property

import keras
import numpy as np
import tensorflow as tf

from classifier.config import variants
from classifier.explain import measures
from classifier.models.explained import attention_model
from classifier.serving.bundle import ngram_weights_of
from classifier.serving.explain_parts import NgramWeights
from classifier.serving.keras_engine import (
    classifier_of,
    labels_of,
    tokenizer_twin,
    vectorizer_of,
)


def ngram_values(classifier: keras.Model, token_ids: np.ndarray):
    """``(features (F,), values (F,) or (F, outputs), positions (F',))`` of one review's ids
    (T,) in the classifier's ``bag``: sorted feature ids and their normalised values
    (``BagOfNgrams.feature_values``), and the feature ids in order of position."""
    bag, ids = classifier.get_layer("bag"), np.asarray(token_ids, dtype=np.int64)[None, :]
    features, values = (keras.ops.convert_to_numpy(a)[0] for a in bag.feature_values(ids))
    positions = bag.features_by_position(ids)
    return features, values, keras.ops.convert_to_numpy(positions)[0]


def word_contributions(
    classifier: keras.Model, token_ids: np.ndarray, c: int = 1
) -> tuple[float, np.ndarray]:
    """:func:`classifier.explain.measures.word_contributions` of a Keras classifier with a bag
    of n-grams, for one review's ids (no padding)."""
    features, values, positions = ngram_values(classifier, token_ids)
    weights = ngram_weights_of(classifier)
    return measures.word_contributions(weights, features, values, positions, len(token_ids), c)


def attention_outputs(explainer: keras.Model, token_ids: np.ndarray):
    """``(weights (h, T, S), branch logits (K,) or None)`` of one review's ids (T,), from the
    model :func:`~classifier.models.explained.attention_model` built."""
    outputs = explainer(np.asarray(token_ids, dtype=np.int64)[None, :], training=False)
    outputs = [keras.ops.convert_to_numpy(output)[0] for output in _as_list(outputs)]
    return outputs[0], outputs[1] if len(outputs) > 1 else None


def branch_log_odds(classifier: keras.Model, token_ids: np.ndarray, c: int = 1) -> float:
    """What the attention branch of a fused Keras classifier (``nbow_attention``) adds to class
    ``c``'s margin for one review's ids (:func:`classifier.explain.measures.branch_margin`)."""
    _, branch = attention_outputs(attention_model(classifier)[0], token_ids)
    head_kernel = keras.ops.convert_to_numpy(classifier.get_layer("head").kernel)
    return measures.branch_margin(branch, head_kernel, c)


def _as_list(outputs) -> list:
    return list(outputs) if isinstance(outputs, list | tuple) else [outputs]


class KerasView:
    """An end-to-end Keras model (``model.keras``) as :mod:`classifier.explain.explanation`
    reads it; see :class:`classifier.explain.explanation.ModelView`."""

    def __init__(self, model: keras.Model):
        self.vectorizer = vectorizer_of(model)
        self.classifier = classifier_of(model)
        self.labels = labels_of(model)
        self.tokenizer = tokenizer_twin(self.vectorizer)
        self.variant = variants.variant_of_model(self.classifier.name)
        self.explains = self.variant.explains if self.variant is not None else "attention"

    @cached_property
    def _explainer(self) -> tuple[keras.Model, str]:
        return attention_model(self.classifier)  # ExplainError for an unknown classifier

    @property
    def layer(self) -> str:
        if self.explains == "contributions":
            return self.variant.explained_as
        return self._explainer[1]

    def encode(self, text: str) -> np.ndarray:
        return keras.ops.convert_to_numpy(self.vectorizer(tf.constant([text], dtype=tf.string)))[0]

    def probabilities(self, token_ids: np.ndarray) -> np.ndarray:
        return keras.ops.convert_to_numpy(self.classifier(token_ids, training=False))

    @cached_property
    def ngram_weights(self) -> NgramWeights:
        return ngram_weights_of(self.classifier)

    def ngram_values(self, token_ids: np.ndarray):
        return ngram_values(self.classifier, token_ids)

    def attention(self, token_ids: np.ndarray):
        return attention_outputs(self._explainer[0], token_ids)
