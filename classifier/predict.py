"""Load a trained end-to-end model and classify review texts and files.

A model is found from a ``--model`` value (:func:`load_model`): a ``.keras`` file, a folder
holding one (an MLflow model folder included), or an MLflow URI (``models:/NAME@ALIAS``,
``models:/NAME/VERSION``, ``models:/NAME@latest``, ``runs:/RUN_ID[/PATH]``); by default the
newest version of the registered ``imdb-sentiment`` in the configured tracking store. MLflow
models are loaded from their ``.keras`` file and run by Keras directly (batched, no pyfunc):
the vectorizer first, then the classifier on batches of reviews of similar length, each cut
to its longest review (:func:`predict_texts`).

Inputs (:func:`read_reviews`) are files or ``-`` (stdin): one review per file, or one per line.
Each input is read within a bounded number of bytes (long ones are cut at the end the model
keeps, with a note), bytes that are not UTF-8 are replaced (with a warning), and a bad input is
reported on one line without stopping the others. :func:`classify_files` ties it together.

Example:
    >>> model = load_keras_model("model.keras")
    >>> predict_texts(model, ["A wonderful film.", "Dull and far too long."])
    [0.93, 0.08]
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import stat
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import keras
import numpy as np
import tensorflow as tf

import classifier.data  # noqa: F401 - registers ReviewVectorizer and standardize_review
import classifier.layers  # noqa: F401 - registers the custom layers
from classifier.config import TrainConfig
from classifier.data import LABELS, VECTORIZE_BATCH, ReviewVectorizer
from classifier.errors import ModelError

DEFAULT_MODEL_NAME = TrainConfig().registered_model  # "imdb-sentiment"
LATEST = "latest"  # models:/NAME@latest and models:/NAME/latest: the highest version
KERAS_ARTIFACT = "model.keras"  # the run artefact logged by training
FORMATS = ("table", "json", "csv")
DEFAULT_BATCH_SIZE = 64  # on CPU, small batches of long reviews run fastest
#: Reviews predicted together (vectorized at once, sorted by length, cut into batches). The
#: first chunk of a stream is small so that results start early; each next one is twice as
#: large, up to ``MAX_CHUNK`` reviews or ``MAX_CHUNK_CHARS`` characters of text.
FIRST_CHUNK = 256
MAX_CHUNK = 4096
MAX_CHUNK_CHARS = 16 * 1024 * 1024
DEFAULT_THRESHOLD = 0.5
STDIN = "-"
STDIN_NAME = "<stdin>"
#: Bytes read per review: enough for ``sequence_length`` words with a wide margin.
MIN_REVIEW_BYTES = 64 * 1024
BYTES_PER_WORD = 64
_CHUNK = 1024 * 1024
_WHITESPACE = re.compile(rb"\s")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # a scheme; not a Windows drive letter


def load_keras_model(path: str | Path) -> keras.Model:
    """Load a ``.keras`` model with ``safe_mode`` on (no arbitrary code from the file)."""
    return keras.models.load_model(path, safe_mode=True)


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
    """
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


# --- finding and loading a model -------------------------------------------------------------


def load_model(spec: str | None = None) -> keras.Model:
    """Load the end-to-end model named by ``spec`` (a ``--model`` value), checked for shape.

    Args:
        spec: a ``.keras`` file, a folder holding one, an MLflow URI, or ``None`` for the newest
            version of the registered ``imdb-sentiment`` in the configured tracking store.

    Raises:
        ModelError: with one line saying what is wrong (and how to train a model when none is
            registered).
    """
    if spec is None:
        return _load_from_mlflow(f"models:/{DEFAULT_MODEL_NAME}@{LATEST}", default=True)
    path = Path(spec).expanduser()
    if path.exists():
        return _load_local(path, f"--model {spec}")
    if _URI.match(spec):  # models:/, runs:/ or any artifact URI MLflow can download
        return _load_from_mlflow(spec)
    raise ModelError(
        f"--model {spec}: no such file, and not an MLflow URI (models:/..., runs:/...)"
    )


def vectorizer_of(model: keras.Model) -> ReviewVectorizer:
    """The :class:`~classifier.data.ReviewVectorizer` inside an end-to-end model."""
    for layer in model.layers:
        if isinstance(layer, ReviewVectorizer):
            return layer
    raise ModelError(f"model {model.name!r} has no ReviewVectorizer layer")


def review_byte_limit(model: keras.Model) -> int:
    """How many bytes of one review are read: enough for the model's ``sequence_length``."""
    return max(MIN_REVIEW_BYTES, BYTES_PER_WORD * vectorizer_of(model).sequence_length)


def _load_local(path: Path, shown: str) -> keras.Model:
    if path.is_dir():
        candidates = [path / KERAS_ARTIFACT, *sorted(path.glob("*.keras"))]
        candidates += sorted((path / "artifacts").glob("*.keras"))  # an MLflow pyfunc folder
        found = [candidate for candidate in candidates if candidate.is_file()]
        if not found:
            raise ModelError(f"{shown}: a folder without a .keras model in it")
        path = found[0]
    try:
        model = load_keras_model(path)
    except Exception as error:  # noqa: BLE001 - Keras raises many kinds for a bad file
        raise ModelError(f"{shown}: not a loadable Keras model ({_first_line(error)})") from None
    _check_end_to_end(model, shown)
    return model


def _check_end_to_end(model, shown: str) -> None:
    inputs = getattr(model, "inputs", None) or []
    is_text = len(inputs) == 1 and "string" in str(inputs[0].dtype)
    has_vectorizer = any(isinstance(layer, ReviewVectorizer) for layer in model.layers)
    if not (is_text and has_vectorizer and tuple(model.outputs[0].shape)[-1:] == (2,)):
        raise ModelError(
            f"{shown}: a Keras model, but not an end-to-end review classifier "
            "(raw strings in, two class probabilities out; the model.keras of a training run)"
        )


def _load_from_mlflow(uri: str, default: bool = False) -> keras.Model:
    import mlflow
    from mlflow.exceptions import MlflowException

    from classifier.tracking import configure_tracking

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    store = configure_tracking()
    with tempfile.TemporaryDirectory(prefix="classify-model-") as workdir:
        try:
            if uri.startswith("models:"):
                local = _download_registered(uri, store, Path(workdir), default)
            elif (
                uri.startswith("runs:")
                and len(uri.removeprefix("runs:/").strip("/").split("/")) == 1
            ):
                run_id = uri.removeprefix("runs:/").strip("/")
                local = mlflow.artifacts.download_artifacts(
                    run_id=run_id, artifact_path=KERAS_ARTIFACT, dst_path=workdir
                )
            else:
                local = mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=workdir)
        except ModelError:
            raise
        except (MlflowException, OSError) as error:
            raise ModelError(
                f"--model {uri}: cannot get it from {store} ({_first_line(error)})"
            ) from None
        return _load_local(Path(local), f"model {uri}" if default else f"--model {uri}")


def _download_registered(uri: str, store: str, workdir: Path, default: bool) -> str:
    """Download the ``.keras`` file of a registered model version (``models:/...``)."""
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    body = uri.removeprefix("models:").lstrip("/")
    name, alias, ref = body, None, None
    if "/" in body:
        name, ref = body.split("/", 1)
    elif "@" in body:
        name, alias = body.rsplit("@", 1)
    client = MlflowClient()
    if (alias is None and ref is None) or (ref is not None and not _is_version_ref(ref)):
        # A logged-model id (models:/m-...) or a stage: let MLflow resolve it.
        return mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(workdir))
    versions = client.search_model_versions(f"name = '{name}'")
    if not versions:
        where = f"no registered model {name!r} in {store}"
        if default:
            raise ModelError(
                f"no model found: {where}; train one with `classify train` (for a quick one: "
                "classify train --config configs/smoke.yaml --set train.registered_model="
                f"{DEFAULT_MODEL_NAME}), or pass --model PATH|URI"
            )
        raise ModelError(f"--model {uri}: {where}; `classify train` registers one")
    wanted = (alias or ref).lower()
    if wanted == LATEST:
        version = max(versions, key=lambda v: int(v.version))
    elif ref is not None:
        matches = [v for v in versions if str(v.version) == ref]
        if not matches:
            numbers = ", ".join(sorted((str(v.version) for v in versions), key=int))
            raise ModelError(f"--model {uri}: {name} has no version {ref} (it has {numbers})")
        version = matches[0]
    else:
        try:
            version = client.get_model_version_by_alias(name, alias)
        except MlflowException:
            raise ModelError(
                f"--model {uri}: {name} has no alias {alias!r} (use @{LATEST} for its newest "
                "version)"
            ) from None
    try:  # the run's model.keras: a single file, no pyfunc wrapper
        return mlflow.artifacts.download_artifacts(
            run_id=version.run_id, artifact_path=KERAS_ARTIFACT, dst_path=str(workdir / "run")
        )
    except (MlflowException, OSError):  # else the pyfunc model's artifacts/*.keras
        return mlflow.artifacts.download_artifacts(
            artifact_uri=f"models:/{name}/{version.version}", dst_path=str(workdir / "model")
        )


def _is_version_ref(ref: str) -> bool:
    return ref.isdigit() or ref.lower() == LATEST


def _first_line(error: BaseException) -> str:
    """The gist of an error on one line: its first line (and the next when it ends in ':')."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    line = " ".join(lines[:2]) if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return line if len(line) <= 300 else line[:297] + "..."


# --- reading reviews -------------------------------------------------------------------------


@dataclass(frozen=True)
class Review:
    """One review to classify and where it came from (``file`` or ``file:line``)."""

    source: str
    text: str


@dataclass(frozen=True)
class Prediction:
    """The predicted label of one review and its probability of ``positive``."""

    source: str
    label: str
    positive_probability: float


class Reporter:
    """Prints one line per problem (``classify: SOURCE: ...``) and counts failed inputs."""

    def __init__(self, echo: Callable[[str], None]):
        self.echo = echo
        self.failed = 0

    def error(self, source: str, message: str) -> None:
        """An input that could not be classified."""
        self.failed += 1
        self.echo(f"classify: {source}: {message}")

    def warning(self, source: str, message: str) -> None:
        """An input that was classified, but not exactly as given."""
        self.echo(f"classify: {source}: warning: {message}")

    def note(self, source: str, message: str) -> None:
        """Something worth knowing about an input that was classified."""
        self.echo(f"classify: {source}: note: {message}")


def read_reviews(
    paths: Iterable[str],
    reporter: Reporter,
    *,
    per_line: bool = False,
    max_bytes: int = MIN_REVIEW_BYTES,
    keep: str = "tail",
    stdin: BinaryIO | None = None,
) -> Iterator[Review]:
    """Yield the reviews of every input, lazily, reporting bad inputs and going on.

    Args:
        paths: files, or ``-`` for stdin.
        reporter: receives one line per missing, unreadable or empty input, per non-UTF-8
            input (a warning; its bytes are replaced with U+FFFD) and per truncated review.
        per_line: each non-blank line is a review (sources ``file:line``); else each file is one.
        max_bytes: at most this many bytes of a review are kept (memory stays bounded).
        keep: which end of a longer review to keep, ``"tail"`` or ``"head"`` (as the model's
            ``truncate``).
        stdin: the binary stream that ``-`` reads (default: ``sys.stdin.buffer``).
    """
    for path in paths:
        name = STDIN_NAME if path == STDIN else path
        stream = _open(path, name, reporter, stdin)
        if stream is None:
            continue
        try:
            if per_line:
                yield from _line_reviews(stream, name, reporter, max_bytes, keep)
            else:
                review = _file_review(stream, name, reporter, max_bytes, keep)
                if review is not None:
                    yield review
        except OSError as error:
            reporter.error(name, f"read error ({error.strerror or error})")
        finally:
            if path != STDIN:
                stream.close()


def _open(path: str, name: str, reporter: Reporter, stdin: BinaryIO | None) -> BinaryIO | None:
    if path == STDIN:
        return stdin if stdin is not None else sys.stdin.buffer
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(path)
        return open_binary(path)
    except FileNotFoundError:
        reporter.error(name, "no such file")
    except IsADirectoryError:
        reporter.error(name, "is a directory")
    except PermissionError:
        reporter.error(name, "permission denied")
    except OSError as error:
        reporter.error(name, f"cannot open ({error.strerror or error})")
    return None


def open_binary(path: str) -> BinaryIO:
    """Open ``path`` for reading bytes (a seam for tests)."""
    return open(path, "rb")  # noqa: SIM115 - closed by read_reviews


def _file_review(stream, name, reporter, max_bytes, keep) -> Review | None:
    data, size, truncated = _read_bounded(stream, max_bytes, keep)
    if truncated:
        data = _trim_cut(data, keep)
        _note_truncated(reporter, name, size, max_bytes, keep)
    text = _decode(data, name, reporter)
    if not text.strip():
        reporter.error(name, "empty review (no text, or only whitespace)")
        return None
    return Review(name, text)


def _read_bounded(stream: BinaryIO, max_bytes: int, keep: str) -> tuple[bytes, int | None, bool]:
    """At most ``max_bytes`` bytes from the kept end; also the size (when known), truncated."""
    size = None
    try:
        info = os.fstat(stream.fileno())
        if stat.S_ISREG(info.st_mode):
            size = info.st_size
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
    if size is not None and size > max_bytes:
        if keep == "tail":
            stream.seek(size - max_bytes)
        return stream.read(max_bytes), size, True
    if keep == "head" or size is not None:
        data = stream.read(max_bytes)
        return data, size, bool(stream.read(1))
    # A stream of unknown size, keeping the tail: a rolling window of the last max_bytes.
    window = bytearray()
    total = 0
    while chunk := stream.read(_CHUNK):
        total += len(chunk)
        window += chunk
        if len(window) > 2 * max_bytes:
            del window[:-max_bytes]
    return bytes(window[-max_bytes:]), total, total > max_bytes


def _line_reviews(stream, name, reporter, max_bytes, keep) -> Iterator[Review]:
    found = False
    warned = False
    for number, data, truncated in _bounded_lines(stream, max_bytes, keep):
        source = f"{name}:{number}"
        if not data.strip():
            continue  # blank lines separate nothing and are skipped
        found = True
        if truncated:
            data = _trim_cut(data, keep)
            _note_truncated(reporter, source, None, max_bytes, keep)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            if not warned:  # once per file
                warned = True
                reporter.warning(
                    source,
                    "not valid UTF-8; undecodable bytes replaced with U+FFFD "
                    "(warned once per file)",
                )
        yield Review(source, text.removeprefix("\ufeff"))
    if not found:
        reporter.error(name, "empty (no non-blank line to classify)")


def _bounded_lines(
    stream: BinaryIO, max_bytes: int, keep: str
) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, at most max_bytes of the line, truncated)``; memory stays bounded."""
    for number in itertools.count(1):
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) <= max_bytes or line.endswith(b"\n"):
            yield number, line.rstrip(b"\r\n"), False
            continue
        if keep == "head":
            while (rest := stream.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass
            yield number, line[:max_bytes], True
            continue
        window = bytearray(line)
        while rest := stream.readline(_CHUNK):
            window += rest
            if len(window) > 2 * max_bytes:
                del window[:-max_bytes]
            if rest.endswith(b"\n"):
                break
        yield number, bytes(window.rstrip(b"\r\n")[-max_bytes:]), True


def _trim_cut(data: bytes, keep: str) -> bytes:
    """Drop the partial word (and any partial UTF-8 character) at the end that was cut."""
    if keep == "head":
        spaces = [match.start() for match in _WHITESPACE.finditer(data, max(0, len(data) - 200))]
        if spaces:
            return data[: spaces[-1]]
        cut = len(data)
        while cut > len(data) - 4 and cut > 0 and data[cut - 1] & 0xC0 == 0x80:
            cut -= 1
        if cut > 0 and data[cut - 1] >= 0xC0:
            cut -= 1  # the lead byte of a character whose continuation was cut
        return data[:cut]
    space = _WHITESPACE.search(data, 0, 200)
    if space:
        return data[space.end() :]
    start = 0
    while start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def _note_truncated(reporter, source, size, max_bytes, keep) -> None:
    end = "last" if keep == "tail" else "first"
    how_big = f"{size:,} bytes" if size is not None else f"longer than {max_bytes:,} bytes"
    reporter.note(
        source,
        f"{how_big}; classified from its {end} {max_bytes:,} bytes "
        f"(the model keeps the {end} words of a long review)",
    )


def _decode(data: bytes, source: str, reporter: Reporter) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        reporter.warning(source, "not valid UTF-8; undecodable bytes replaced with U+FFFD")
    return text.removeprefix("\ufeff")


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
    vectorizer = vectorizer_of(model)
    reviews = read_reviews(
        paths,
        reporter,
        per_line=per_line,
        max_bytes=review_byte_limit(model),
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
