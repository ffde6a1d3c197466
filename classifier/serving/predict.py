"""Classify review texts and files with a trained end-to-end model, and format the results.

Serving predicts through one interface, :class:`Predictor`, that a LiteRT bundle
(:mod:`classifier.serving.litert_engine`) and a Keras model
(:mod:`classifier.serving.keras_engine`, imported only then: this module imports no TensorFlow)
both implement; :func:`predictor` gives a model's. :func:`predict_texts` predicts batches of
reviews of similar length, each cut to its longest review.
:func:`classify_files` reads the inputs (:mod:`classifier.serving.reviews`), predicts them chunk by chunk
and prints table, JSON or CSV lines as they come. Finding the model is
:mod:`classifier.serving.model_source`'s (bundles) and :mod:`classifier.serving.registry`'s (Keras) job.

Example (a trained model)::

    model = load_model("model.keras")  # classifier.serving.registry
    predict_texts(model, ["A wonderful film.", "Dull and far too long."])  # [0.93, 0.08]
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol, runtime_checkable

import numpy as np

from classifier.config.schema import LABELS
from classifier.data.tokenizer import OOV_ID, Tokenizer
from classifier.serving.reviews import Reporter, Review, read_reviews, review_byte_limit

FORMATS = ("table", "json", "csv")
DEFAULT_BATCH_SIZE = 64  # on CPU, small batches of long reviews run fastest
#: Reviews predicted together (vectorized at once, sorted by length, cut into batches). The
#: first chunk of a stream is small so that results start early; each next one is twice as
#: large, up to ``MAX_CHUNK`` reviews or ``MAX_CHUNK_CHARS`` characters of text.
FIRST_CHUNK = 256
MAX_CHUNK = 4096
MAX_CHUNK_CHARS = 16 * 1024 * 1024
DEFAULT_THRESHOLD = 0.5
#: The label of a review the model has nothing to go on (:mod:`classifier.serving.evidence`).
UNKNOWN = "unknown"


@runtime_checkable
class Predictor(Protocol):
    """What serving predicts with: a LiteRT bundle
    (:class:`~classifier.serving.litert_engine.BundleModel`, no TensorFlow) or a Keras model
    (:class:`~classifier.serving.keras_engine.KerasPredictor`). :func:`predictor` gives a
    model's."""

    #: The class names, in output order (IMDB's: ``negative``, ``positive``).
    labels: tuple[str, ...]
    #: How the model reads a review: its last (``tail``) or first (``head``) so many words.
    sequence_length: int
    truncate: str
    #: Texts to the model's own token ids, in plain Python.
    tokenizer: Tokenizer

    def predict_probabilities(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Class probabilities (N, K) of the texts, in order (column k: ``labels[k]``)."""
        ...


def predictor(model) -> Predictor:
    """``model`` as a :class:`Predictor`: a bundle (or any other predictor) is one; a Keras
    model gets its :class:`~classifier.serving.keras_engine.KerasPredictor`, made once
    (TensorFlow is imported then, not before)."""
    if isinstance(model, Predictor):
        return model
    from classifier.serving.keras_engine import predictor_of

    return predictor_of(model)


def predict_texts(model, texts: list[str], batch_size: int = DEFAULT_BATCH_SIZE) -> list[float]:
    """Probability of ``positive`` (the last of two classes) for each text, in order
    (:func:`predict_probabilities`)."""
    return predict_probabilities(model, texts, batch_size)[:, -1].tolist()


def predict_probabilities(
    model, texts: list[str], batch_size: int = DEFAULT_BATCH_SIZE
) -> np.ndarray:
    """Class probabilities (N, K) of the texts, in order (column k: ``labels_of(model)[k]``),
    predicted in batches of reviews of similar length (:mod:`classifier.serving.batching`) by
    the model's :class:`Predictor`."""
    return predictor(model).predict_probabilities(texts, batch_size)


def labels_of(model) -> tuple[str, ...]:
    """The model's class names, in output order (IMDB's: ``negative``, ``positive``)."""
    return tuple(predictor(model).labels)


@dataclass(frozen=True)
class Prediction:
    """The predicted label of one review, its probability of ``positive`` (two classes), the
    share of the words the model read that its vocabulary knows, and, for a model of more than
    two classes, every class's probability (``{name: probability}``; then
    ``positive_probability`` is NaN)."""

    source: str
    label: str
    positive_probability: float
    known_share: float = 1.0
    probabilities: dict[str, float] | None = None

    @property
    def table_probability(self) -> float:
        """What the table shows: P(positive), or the probability of the most likely class."""
        if self.probabilities is None:
            return self.positive_probability
        return max(self.probabilities.values(), default=float("nan"))


def label_of(
    probabilities: np.ndarray,
    labels: tuple[str, ...],
    unknown: bool = False,
    threshold: float = DEFAULT_THRESHOLD,
) -> str:
    """The label of one review from its class probabilities: ``unknown`` where the model has
    nothing to go on (:func:`unknown_reviews`); else, of two classes, the second (``positive``)
    when its probability is at least ``threshold``, of more the most likely.

    Example:
        >>> label_of(np.array([0.1, 0.9]), ("ham", "spam")), label_of(np.array([0.3, 0.7]), ("a", "b"), True)
        ('spam', 'unknown')
    """
    if unknown:
        return UNKNOWN
    if len(labels) > 2:
        return labels[int(np.argmax(probabilities))]
    return labels[1] if float(probabilities[-1]) >= threshold else labels[0]


def unknown_reviews(model, texts: list[str], probabilities: np.ndarray):
    """``(unknown, known, words)`` per text: whether the model has nothing to go on
    (:func:`classifier.serving.evidence.unknown`), and the counts of :func:`word_counts`."""
    from classifier.serving import evidence

    known, words = word_counts(model, texts)
    unknown = evidence.unknown(
        texts,
        probabilities,
        known,
        lambda batch: predict_probabilities(model, batch),
        tokenizer_of(model),
    )
    return unknown, known, words


def tokenizer_of(model) -> Tokenizer:
    """The pure-Python tokenizer of a model (its :class:`Predictor`'s): the model's own ids."""
    return predictor(model).tokenizer


def word_counts(model, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(known, words)`` per text: how many of the words the model reads (after truncation)
    its vocabulary knows, and how many it reads (:func:`tokenizer_of`)."""
    ids = tokenizer_of(model).encode(texts)
    return np.count_nonzero(ids > OOV_ID, axis=1), np.count_nonzero(ids, axis=1)


# --- classifying and printing ----------------------------------------------------------------


def classify(
    model,
    reviews: Iterable[Review],
    batch_size: int = DEFAULT_BATCH_SIZE,
    threshold: float = DEFAULT_THRESHOLD,
) -> Iterator[Prediction]:
    """Predict every review, ``batch_size`` per model call, in input order (lazily).

    Reviews are read and predicted a chunk at a time (:data:`FIRST_CHUNK`, then twice as many
    up to :data:`MAX_CHUNK`), so results stream out while memory stays bounded. A review is
    ``positive`` when its probability of positive is at least ``threshold``, ``unknown`` when
    the model has nothing to go on (:func:`unknown_reviews`).
    """
    labels = labels_of(model)
    for chunk in _chunks(iter(reviews), max(FIRST_CHUNK, batch_size)):
        texts = [review.text for review in chunk]
        probabilities = predict_probabilities(model, texts, batch_size)
        unknown, known, words = unknown_reviews(model, texts, probabilities)
        for review, row, u, k, n in zip(chunk, probabilities, unknown, known, words, strict=True):
            share = float(k) / max(int(n), 1)
            label = label_of(row, labels, bool(u), threshold)
            if len(labels) == 2:
                yield Prediction(review.source, label, float(row[-1]), share)
            else:
                by_class = dict(zip(labels, row.astype(float).tolist(), strict=True))
                yield Prediction(review.source, label, float("nan"), share, by_class)


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


def format_predictions(
    predictions: Iterable[Prediction], output_format: str, labels: tuple[str, ...] = LABELS
) -> Iterator[str]:
    """Output lines (without newlines) of ``table``, ``json`` (an array) or ``csv``, streamed.

    The table puts the source last so that its columns stay aligned while rows stream out, and
    shows probabilities to 4 decimals (``>0.9999`` and ``<0.0001`` past them); JSON and CSV give
    6 decimals, the share of known words 4, always (``null``/empty for a NaN probability).
    Two classes (``labels``): P(positive), the second class. More: the table shows the
    probability of the most likely class, JSON and CSV every class's.
    """
    several = len(labels) > 2
    if output_format == "table":
        width = max(8, *(len(label) for label in labels)) if several else 8
        title = "P(label)" if several else f"P({labels[-1]})"
        for index, p in enumerate(predictions):
            if index == 0:
                yield f"{'label':<{width}}  {title:>11}  {'known':>5}  source"
            known = f"{p.known_share:.0%}"
            shown = shown_probability(p.table_probability)
            yield f"{p.label:<{width}}  {shown:>11}  {known:>5}  {p.source}"
    elif output_format == "json":
        yield "["
        previous = None
        for p in predictions:
            if previous is not None:
                yield previous + ","
            # Numbers written with fixed decimals (json.dumps would give 1.0 and 1.5e-05).
            if several:
                each = ", ".join(
                    f"{json.dumps(name, ensure_ascii=False)}: {_fixed(value, 6) or 'null'}"
                    for name, value in (p.probabilities or {}).items()
                )
                probability = f'"probabilities": {{{each}}}'
            else:
                probability = (
                    f'"positive_probability": {_fixed(p.positive_probability, 6) or "null"}'
                )
            fields = (
                f'"source": {json.dumps(p.source, ensure_ascii=False)}',
                f'"label": {json.dumps(p.label, ensure_ascii=False)}',
                probability,
                f'"known_share": {_fixed(p.known_share, 4)}',
            )
            previous = "  {" + ", ".join(fields) + "}"
        if previous is not None:
            yield previous
        yield "]"
    elif output_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        if several:
            header = ("source", "label", *(f"P({name})" for name in labels), "known_share")
            rows = (
                (
                    p.source,
                    p.label,
                    *(_fixed((p.probabilities or {}).get(name, math.nan), 6) for name in labels),
                    _fixed(p.known_share, 4),
                )
                for p in predictions
            )
        else:
            header = ("source", "label", "positive_probability", "known_share")
            rows = (
                (p.source, p.label, _fixed(p.positive_probability, 6), _fixed(p.known_share, 4))
                for p in predictions
            )
        for row in itertools.chain([header], rows):
            writer.writerow(row)
            yield buffer.getvalue().removesuffix("\n")
            buffer.seek(0)
            buffer.truncate()
    else:
        raise ValueError(f"output_format must be one of {FORMATS}, got {output_format!r}")


def shown_probability(probability: float) -> str:
    """A probability as the table shows it: 4 decimals, ``>0.9999`` and ``<0.0001`` beyond.

    Example:
        >>> shown_probability(0.97341), shown_probability(0.99999), shown_probability(1e-6)
        ('0.9734', '>0.9999', '<0.0001')
    """
    if not math.isfinite(probability):
        return "nan"
    if probability >= 0.99995:
        return ">0.9999"
    if probability < 0.00005:
        return "<0.0001"
    return f"{probability:.4f}"


def _fixed(number: float, decimals: int) -> str:
    """``number`` with ``decimals`` decimals; '' for NaN (not JSON, not a probability)."""
    return f"{number:.{decimals}f}" if math.isfinite(number) else ""


def classify_files(
    model,
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
    reviews = read_reviews(
        paths,
        reporter,
        per_line=per_line,
        max_bytes=max_review_bytes(model),
        keep=predictor(model).truncate,
        stdin=stdin,
    )
    predictions = classify(model, reviews, batch_size=batch_size, threshold=threshold)
    try:
        for line in format_predictions(predictions, output_format, labels_of(model)):
            out(line)
    except BrokenPipeError:
        _silence_stdout()
    return reporter.failed


def max_review_bytes(model) -> int:
    """Bytes of one review read for ``model`` (:func:`~classifier.serving.reviews.review_byte_limit`
    of its sequence length): a file's longer review is cut to them, a request's refused."""
    return review_byte_limit(predictor(model).sequence_length)


def _silence_stdout() -> None:
    """After the reader of stdout went away, keep Python from complaining at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
