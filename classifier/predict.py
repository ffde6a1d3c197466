"""Classify review texts and files with a trained end-to-end model, and format the results.

:func:`predict_texts` runs the vectorizer first, then the classifier on batches of reviews of
similar length, each cut to its longest review. :func:`classify_files` reads the inputs
(:mod:`classifier.reviews`), predicts them chunk by chunk and prints table, JSON or CSV lines as
they come. Finding and loading the model is :mod:`classifier.registry`'s job.

Example (a trained model)::

    model = load_model("model.keras")  # classifier.registry
    predict_texts(model, ["A wonderful film.", "Dull and far too long."])  # [0.93, 0.08]
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import keras
import numpy as np
import tensorflow as tf

import classifier.data  # noqa: F401 - registers ReviewVectorizer and standardize_review
import classifier.layers  # noqa: F401 - registers the custom layers
from classifier.data import LABELS, VECTORIZE_BATCH, ReviewVectorizer
from classifier.errors import ModelError
from classifier.reviews import Reporter, Review, read_reviews, review_byte_limit

FORMATS = ("table", "json", "csv")
DEFAULT_BATCH_SIZE = 64  # on CPU, small batches of long reviews run fastest
#: Reviews predicted together (vectorized at once, sorted by length, cut into batches). The
#: first chunk of a stream is small so that results start early; each next one is twice as
#: large, up to ``MAX_CHUNK`` reviews or ``MAX_CHUNK_CHARS`` characters of text.
FIRST_CHUNK = 256
MAX_CHUNK = 4096
MAX_CHUNK_CHARS = 16 * 1024 * 1024
DEFAULT_THRESHOLD = 0.5


def predict_texts(
    model: keras.Model, texts: list[str], batch_size: int = DEFAULT_BATCH_SIZE
) -> list[float]:
    """Probability of ``positive`` for each text, in order, predicted in batches.

    A model that is a :class:`~classifier.data.ReviewVectorizer` followed by a classifier
    (what training saves) runs in two steps, ``MAX_CHUNK`` texts at a time: they are
    vectorized ``VECTORIZE_BATCH`` at a time, sorted by their number of tokens and cut into
    batches of ``batch_size``, each trimmed to its longest review; the classifier runs on
    those and the probabilities go back to input order. Padding is masked everywhere, so they
    are the end-to-end model's (within float rounding) for far less work: half the reviews
    are shorter than 175 words. Any other end-to-end model runs whole on batches of texts.
    Each step is one compiled ``tf.function`` per model, traced once for any batch shape: on
    CPU that is several times faster than eager calls.

    A model that is not a Keras model but has its own ``predict_texts(texts, batch_size)``
    (``classifier.fast_predict.BundleModel``, which needs no TensorFlow) predicts by itself.
    """
    if not isinstance(model, keras.Model) and hasattr(model, "predict_texts"):
        return model.predict_texts(texts, batch_size)
    predict = _predictor(model)
    probabilities: list[float] = []
    for start in range(0, len(texts), MAX_CHUNK):
        probabilities.extend(predict(texts[start : start + MAX_CHUNK], batch_size))
    return probabilities


def length_sorted_batches(lengths: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, int]]:
    """``(rows, width)`` per batch: ``batch_size`` rows at a time in order of length, and the
    longest length among them (at least 1, a model needs one column).

    Example:
        >>> [(rows.tolist(), width) for rows, width in length_sorted_batches(np.array([5, 0, 9, 2]), 2)]
        [([1, 3], 2), ([0, 2], 9)]
    """
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        yield rows, max(1, int(lengths[rows[-1]]))


def token_counts(token_ids: np.ndarray) -> np.ndarray:
    """Ids per row before the trailing padding (id 0) of a (B, T) array."""
    real = token_ids != 0
    last = token_ids.shape[1] - np.argmax(real[:, ::-1], axis=1)
    return np.where(real.any(axis=1), last, 0)


_PREDICTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _predictor(model: keras.Model) -> Callable[[list[str], int], list[float]]:
    """``(texts, batch_size) -> P(positive) per text``, cached while the model lives."""
    predict = _PREDICTORS.get(model)
    if predict is None:
        parts = _vectorizer_and_classifier(model)
        predict = _TwoSteps(*parts) if parts else _EndToEnd(model)
        _PREDICTORS[model] = predict
    return predict


def _vectorizer_and_classifier(model: keras.Model) -> tuple[ReviewVectorizer, keras.Model] | None:
    """The two parts of a model that is ``classifier(vectorizer(texts))``, else ``None``."""
    operations = getattr(model, "operations", None) or []  # a Functional model's graph
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
        classifier = any_length or classifier
        # The cache holds this object: it must not keep the model alive, only its parts.
        self.vectorize = tf.function(
            lambda texts: vectorizer(texts),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )
        self.classify = tf.function(
            lambda token_ids: classifier(token_ids, training=False)[:, 1],
            input_signature=[tf.TensorSpec([None, None], tf.int64)],
        )

    def __call__(self, texts: list[str], batch_size: int) -> list[float]:
        if not texts:
            return []
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
        probabilities = np.empty(len(texts), dtype=np.float32)
        for rows, width in batches:
            probabilities[rows] = self.classify(token_ids[rows, :width]).numpy()
        return probabilities.astype(float).tolist()


class _EndToEnd:
    """The whole model on batches of texts (any end-to-end model)."""

    def __init__(self, model: keras.Model):
        owner = weakref.ref(model)  # the cache must not keep the model alive

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def predict(texts):
            return owner()(texts, training=False)[:, 1]

        self.predict = predict

    def __call__(self, texts: list[str], batch_size: int) -> list[float]:
        probabilities: list[float] = []
        for start in range(0, len(texts), batch_size):
            batch = tf.constant(texts[start : start + batch_size], dtype=tf.string)
            probabilities.extend(self.predict(batch).numpy().astype(float).tolist())
        return probabilities


def vectorizer_of(model: keras.Model) -> ReviewVectorizer:
    """The :class:`~classifier.data.ReviewVectorizer` inside an end-to-end model."""
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


@dataclass(frozen=True)
class Prediction:
    """The predicted label of one review and its probability of ``positive``."""

    source: str
    label: str
    positive_probability: float


# --- classifying and printing ----------------------------------------------------------------


def classify(
    model: keras.Model,
    reviews: Iterable[Review],
    batch_size: int = DEFAULT_BATCH_SIZE,
    threshold: float = DEFAULT_THRESHOLD,
) -> Iterator[Prediction]:
    """Predict every review, ``batch_size`` per model call, in input order (lazily).

    Reviews are read and predicted a chunk at a time (:data:`FIRST_CHUNK`, then twice as many
    up to :data:`MAX_CHUNK`), so results stream out while memory stays bounded. A review is
    ``positive`` when its probability of positive is at least ``threshold``.
    """
    for chunk in _chunks(iter(reviews), max(FIRST_CHUNK, batch_size)):
        probabilities = predict_texts(model, [review.text for review in chunk], batch_size)
        for review, probability in zip(chunk, probabilities, strict=True):
            label = LABELS[1] if probability >= threshold else LABELS[0]
            yield Prediction(review.source, label, probability)


def _chunks(reviews: Iterator[Review], size: int) -> Iterator[list[Review]]:
    """Lists of ``size`` reviews, then twice as many each time up to ``MAX_CHUNK`` (or fewer,
    once they hold ``MAX_CHUNK_CHARS`` characters)."""
    while True:
        chunk: list[Review] = []
        chars = 0
        for review in reviews:
            chunk.append(review)
            chars += len(review.text)
            if len(chunk) >= size or chars >= MAX_CHUNK_CHARS:
                break
        if not chunk:
            return
        yield chunk
        size = max(size, min(2 * size, MAX_CHUNK))


def format_predictions(predictions: Iterable[Prediction], output_format: str) -> Iterator[str]:
    """Output lines (without newlines) of ``table``, ``json`` (an array) or ``csv``, streamed.

    The table puts the source last so that its columns stay aligned while rows stream out.
    """
    if output_format == "table":
        for index, p in enumerate(predictions):
            if index == 0:
                yield f"{'label':<8}  {'P(positive)':>11}  source"
            yield f"{p.label:<8}  {p.positive_probability:>11.4f}  {p.source}"
    elif output_format == "json":
        yield "["
        previous = None
        for p in predictions:
            if previous is not None:
                yield previous + ","
            previous = "  " + json.dumps(
                {
                    "source": p.source,
                    "label": p.label,
                    "positive_probability": round(p.positive_probability, 6),
                },
                ensure_ascii=False,
            )
        if previous is not None:
            yield previous
        yield "]"
    elif output_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        rows = ((p.source, p.label, f"{p.positive_probability:.6f}") for p in predictions)
        for row in itertools.chain([("source", "label", "positive_probability")], rows):
            writer.writerow(row)
            yield buffer.getvalue().removesuffix("\n")
            buffer.seek(0)
            buffer.truncate()
    else:
        raise ValueError(f"output_format must be one of {FORMATS}, got {output_format!r}")


def classify_files(
    model: keras.Model,
    paths: Iterable[str],
    *,
    per_line: bool = False,
    output_format: str = "table",
    threshold: float = DEFAULT_THRESHOLD,
    batch_size: int = DEFAULT_BATCH_SIZE,
    out: Callable[[str], None] = print,
    err: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    stdin: BinaryIO | None = None,
) -> int:
    """Classify every input and print the results; return how many inputs failed.

    Result lines go to ``out`` as they are predicted; one line per bad input (and per warning
    or note) goes to ``err``. A closed output pipe (``| head``) ends the work quietly.
    """
    reporter = Reporter(err)
    # A bundle (classifier.fast_predict.BundleModel) has sequence_length and truncate itself.
    vectorizer = vectorizer_of(model) if isinstance(model, keras.Model) else model
    reviews = read_reviews(
        paths,
        reporter,
        per_line=per_line,
        max_bytes=review_byte_limit(vectorizer.sequence_length),
        keep=vectorizer.truncate,
        stdin=stdin,
    )
    predictions = classify(model, reviews, batch_size=batch_size, threshold=threshold)
    try:
        for line in format_predictions(predictions, output_format):
            out(line)
    except BrokenPipeError:
        _silence_stdout()
    return reporter.failed


def _silence_stdout() -> None:
    """After the reader of stdout went away, keep Python from complaining at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
