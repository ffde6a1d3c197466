"""Classify review texts and files with a trained end-to-end model, and format the results.

:func:`predict_texts` predicts batches of reviews of similar length, each cut to its longest
review, with a LiteRT bundle (:mod:`classifier.serving.litert_engine`) or a Keras model
(:mod:`classifier.serving.keras_engine`, imported only then: this module imports no TensorFlow).
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
from typing import BinaryIO

from classifier.config.schema import LABELS
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


def predict_texts(model, texts: list[str], batch_size: int = DEFAULT_BATCH_SIZE) -> list[float]:
    """Probability of ``positive`` for each text, in order, predicted in batches of reviews of
    similar length (:mod:`classifier.serving.batching`).

    A LiteRT bundle (:class:`classifier.serving.litert_engine.BundleModel`) predicts by itself, with no
    TensorFlow; a Keras end-to-end model goes through :mod:`classifier.serving.keras_engine`, which
    imports TensorFlow when first needed.
    """
    if hasattr(model, "predict_texts"):
        return model.predict_texts(texts, batch_size)
    from classifier.serving import keras_engine as keras_predict

    return keras_predict.predict_texts(model, texts, batch_size)


@dataclass(frozen=True)
class Prediction:
    """The predicted label of one review and its probability of ``positive``."""

    source: str
    label: str
    positive_probability: float


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
                    # NaN (a diverged model saved before such runs failed) is not JSON: null.
                    "positive_probability": round(p.positive_probability, 6)
                    if math.isfinite(p.positive_probability)
                    else None,
                },
                ensure_ascii=False,
                allow_nan=False,
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
    vectorizer = model if hasattr(model, "predict_texts") else _vectorizer(model)
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


def _vectorizer(model):
    """The Keras model's vectorizer (a bundle has ``sequence_length`` and ``truncate`` itself)."""
    from classifier.serving.keras_engine import vectorizer_of

    return vectorizer_of(model)


def _silence_stdout() -> None:
    """After the reader of stdout went away, keep Python from complaining at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
