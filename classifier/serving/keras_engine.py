"""Predicting with a Keras end-to-end model (:class:`KerasPredictor`): the vectorizer first, then
the classifier on batches of reviews of similar length (:mod:`classifier.serving.batching`), each
step one compiled ``tf.function`` per model, traced once for any batch shape (on CPU several
times faster than eager calls). ``classifier.serving.predict`` uses it for every model that is not
a LiteRT bundle.

Example (a trained model)::

    model = classifier.serving.registry.load_model("model.keras")
    predictor_of(model).predict_probabilities(["A wonderful film."], 64)  # [[0.07, 0.93]]
"""

from __future__ import annotations

import functools
import threading
import weakref
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import classifier.layers  # noqa: F401 - registers the custom layers
import classifier.models.optimizers  # noqa: F401 - the optimizer a saved classifier names
from classifier.config.schema import LABELS
from classifier.data.batching import VECTORIZE_BATCH
from classifier.data.tokenizer import Tokenizer
from classifier.data.vectorizer import ReviewVectorizer
from classifier.errors import ModelError
from classifier.evaluation.traced import traced_once
from classifier.layers import ClassNames
from classifier.serving.batching import in_chunks, length_sorted_batches, token_counts


def load_keras_model(path: str | Path) -> keras.Model:
    """Load a ``.keras`` model with ``safe_mode`` on (no arbitrary code from the file)."""
    return keras.models.load_model(path, safe_mode=True)


class KerasPredictor:
    """A Keras end-to-end model as a :class:`classifier.serving.predict.Predictor`: its labels,
    how it reads a review (``sequence_length``, ``truncate``, a pure-Python ``tokenizer`` of the
    same ids) and :meth:`predict_probabilities`. :func:`predictor_of` makes one per model; it
    holds the model's parts, not the model, so that the cache lets the model go.
    """

    def __init__(self, model: keras.Model):
        self.labels = labels_of(model)
        try:
            self._vectorizer, self._no_vectorizer = vectorizer_of(model), None
        except ModelError as error:  # it predicts, but cannot say how it reads a review
            self._vectorizer, self._no_vectorizer = None, error
        parts = _vectorizer_and_classifier(model)
        self._predict = _TwoSteps(*parts) if parts else _EndToEnd(model)

    @property
    def sequence_length(self) -> int:
        return self._reading().sequence_length

    @property
    def truncate(self) -> str:
        return self._reading().truncate

    @functools.cached_property
    def tokenizer(self) -> Tokenizer:
        return tokenizer_twin(self._reading())

    def _reading(self) -> ReviewVectorizer:
        """The vectorizer: how the model reads a review (:func:`vectorizer_of`'s error if none)."""
        if self._vectorizer is None:
            raise self._no_vectorizer
        return self._vectorizer

    def predict_probabilities(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Class probabilities (N, K) of the texts, in order, predicted in batches.

        A model that is a :class:`~classifier.data.vectorizer.ReviewVectorizer` followed by a
        classifier (what training saves) runs in two steps, ``MAX_CHUNK`` texts at a time: they
        are vectorized ``VECTORIZE_BATCH`` at a time, sorted by their number of tokens and cut
        into batches of ``batch_size``, each trimmed to its longest review; the classifier runs
        on those and the probabilities go back to input order. Padding is masked everywhere, so
        they are the end-to-end model's (within float rounding) for far less work: half the
        reviews are shorter than 175 words. Any other end-to-end model runs whole on batches of
        texts.
        """
        return in_chunks(self._predict, texts, batch_size, len(self.labels))


def labels_of(model: keras.Model) -> tuple[str, ...]:
    """The class names of an end-to-end model: its :class:`~classifier.layers.ClassNames`
    layer's, else IMDB's (``negative``, ``positive``)."""
    for layer in model.layers:
        if isinstance(layer, ClassNames):
            return layer.labels
    return LABELS


_PREDICTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PREDICTORS_MADE = threading.Lock()


def predictor_of(model: keras.Model) -> KerasPredictor:
    """The model's :class:`KerasPredictor`, made once and kept while the model lives.

    Threads may predict at once (a ``tf.function`` may be called from several); the first of
    them makes the predictor, the others wait for it rather than trace their own.
    """
    with _PREDICTORS_MADE:
        predictor = _PREDICTORS.get(model)
        if predictor is None:
            predictor = _PREDICTORS[model] = KerasPredictor(model)
    return predictor


def _vectorizer_and_classifier(model: keras.Model) -> tuple[ReviewVectorizer, keras.Model] | None:
    """The two parts of a model that is ``classifier(vectorizer(texts))`` (then, maybe, its
    :class:`~classifier.layers.ClassNames`), else ``None``."""
    operations = getattr(model, "operations", None) or []  # a Functional model's graph
    if len(operations) == 4 and isinstance(operations[-1], ClassNames):
        operations = operations[:3]
    if len(operations) != 3:
        return None
    _, vectorizer, classifier = operations  # in graph order: inputs first, outputs last
    if not (isinstance(vectorizer, ReviewVectorizer) and isinstance(classifier, keras.Model)):
        return None
    if len(classifier.inputs) != 1 or len(classifier.outputs) != 1:
        return None
    return vectorizer, classifier


def _any_length(classifier: keras.Model) -> keras.Model | None:
    """The classifier on token ids of any length T, or ``None`` when it needs its own T.

    Models saved before the classifiers took any length have an input of shape
    ``(sequence_length,)``; their layers take any length, so the same layers (weights and all)
    are wired to an input of shape ``(None,)``.
    """
    (token_ids,) = classifier.inputs
    if tuple(token_ids.shape)[1:] == (None,):
        return classifier
    try:
        return keras.models.clone_model(
            classifier,
            input_tensors=keras.Input(shape=(None,), dtype=token_ids.dtype, name="token_ids"),
            clone_function=lambda layer: layer,  # share, do not copy
        )
    except Exception:  # noqa: BLE001 - a layer that needs a fixed length: pad to it
        return None


class _TwoSteps:
    """Vectorize texts, then classify batches of similar lengths trimmed to their longest."""

    def __init__(self, vectorizer: ReviewVectorizer, classifier: keras.Model):
        any_length = _any_length(classifier)
        self.trim = any_length is not None
        self.classes = int(classifier.outputs[0].shape[-1])
        classifier = any_length or classifier
        # The cache holds this object: it must not keep the model alive, only its parts.
        self.vectorize = traced_once(lambda texts: vectorizer(texts), tf.string, 1)
        self.classify = traced_once(
            lambda token_ids: classifier(token_ids, training=False), tf.int64, 2
        )

    def __call__(self, texts: list[str], batch_size: int) -> np.ndarray:
        token_ids = np.concatenate(
            [
                self.vectorize(
                    tf.constant(texts[start : start + VECTORIZE_BATCH], tf.string)
                ).numpy()
                for start in range(0, len(texts), VECTORIZE_BATCH)
            ]
        )
        if self.trim:
            batches = length_sorted_batches(token_counts(token_ids), batch_size)
        else:
            full = token_ids.shape[1]
            batches = (
                (np.arange(start, min(start + batch_size, len(texts))), full)
                for start in range(0, len(texts), batch_size)
            )
        probabilities = np.empty((len(texts), self.classes), dtype=np.float32)
        for rows, width in batches:
            probabilities[rows] = self.classify(token_ids[rows, :width]).numpy()
        return probabilities


class _EndToEnd:
    """The whole model on batches of texts (any end-to-end model)."""

    def __init__(self, model: keras.Model):
        owner = weakref.ref(model)  # the cache must not keep the model alive
        self.predict = traced_once(lambda texts: owner()(texts, training=False), tf.string, 1)

    def __call__(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.concatenate(
            [
                self.predict(tf.constant(texts[start : start + batch_size], tf.string)).numpy()
                for start in range(0, len(texts), batch_size)
            ]
        )


def tokenizer_twin(vectorizer: ReviewVectorizer) -> Tokenizer:
    """The pure-Python :class:`~classifier.data.tokenizer.Tokenizer` that gives ``vectorizer``'s
    ids: its vocabulary, length, truncated end, standardization and spelling."""
    return Tokenizer(
        vectorizer.get_vocabulary(),
        vectorizer.sequence_length,
        vectorizer.truncate,
        sentences=vectorizer.sentences,
        spelling=vectorizer.spelling,
        negation_phrases=vectorizer.negation_phrases,
    )


def vectorizer_of(model: keras.Model) -> ReviewVectorizer:
    """The :class:`~classifier.data.vectorizer.ReviewVectorizer` inside an end-to-end model."""
    for layer in model.layers:
        if isinstance(layer, ReviewVectorizer):
            return layer
    raise ModelError(f"model {model.name!r} has no ReviewVectorizer layer")


def classifier_of(model: keras.Model) -> keras.Model:
    """The classifier (token ids to probabilities) inside an end-to-end model."""
    parts = _vectorizer_and_classifier(model)
    if parts is None:
        raise ModelError(f"model {model.name!r} is not a vectorizer followed by a classifier")
    return parts[1]
