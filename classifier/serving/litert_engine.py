"""Classify reviews without TensorFlow: a LiteRT model bundle, run by ``ai_edge_litert``.

A bundle is a folder that :func:`classifier.serving.bundle.write_bundle` writes at training time from an
end-to-end Keras model:

| file                  | what                                                                   |
|-----------------------|------------------------------------------------------------------------|
| ``classifier.tflite`` | the classifier as a LiteRT flatbuffer: token ids (B, T) int64 to class |
|                       | probabilities (B, 2) float32, for any B and any T <= sequence_length   |
| ``vocabulary.txt``    | the tokens by id, one per line, as ``ReviewVectorizer.get_vocabulary()`` |
| ``bundle.json``       | format and version, sequence_length, truncate, standardization and     |
|                       | spelling (``data.spelling``; format 2), the labels, the model's name   |
|                       | and variant, each file's size and SHA-256, and what ``classify         |
|                       | explain`` reads (``"explain"``)                                         |
| ``ngrams.npz``,       | for ``classify explain``: the weights of a bag of n-grams, and the      |
| ``attention.tflite``  | attention weights as a LiteRT model (:mod:`~classifier.serving.explain_parts`) |

:func:`load_bundle` checks it and returns a :class:`BundleModel`, which tokenizes with
:class:`classifier.data.tokenizer.Tokenizer` (exactly ``ReviewVectorizer``'s ids) and predicts as
``classifier.serving.predict.predict_texts`` does with a Keras model: ``MAX_CHUNK`` texts at a time are
tokenized, sorted by their number of tokens and cut into batches of ``batch_size``, each trimmed
to its longest review; the probabilities go back to input order. Padding is masked in every
variant, so the numbers are the Keras model's (within 1e-5; ``tests/test_bundle*.py``).

This module imports only the standard library, NumPy, ``ai_edge_litert`` and the TensorFlow-free
``classifier.data.tokenizer`` and ``classifier.errors``: in a fresh process, importing it, loading the
default model's bundle (10,000 words, 256 tokens) and classifying one review answers in 0.17 s
(exits at 0.2 s), against 5.2 to 6.3 s for a bare ``import tensorflow`` and 6.1 to 6.9 s for
``classify predict --model model.keras`` (``benchmarks/predict_throughput.py``, 2 busy cores).
After start-up it classifies the 25,000 test reviews as fast as the Keras path or faster
(4,436 against 3,086 reviews/s in one run, 4,586 against 4,647 in another), on one core.

**An interpreter per thread at work, each resized per batch.** A call borrows an idle
interpreter of the model, or makes one when every one is busy, so that no two threads ever share
one (``mlflow models serve`` predicts from several threads at once; LiteRT's ``invoke`` lets go of
the GIL, so they run in parallel). An interpreter is resized only when a batch's shape differs
from its previous one's. What was measured for each choice (a pool against one interpreter, resizing
against fixed widths, XNNPACK, LiteRT's own threads): docs/serving.md, "The LiteRT engine".

Example (a run's bundle)::

    model = load_bundle("mlruns/1/<run id>/artifacts/bundle")
    model.predict_texts(["A wonderful film.", "Dull and far too long."])  # [0.93, 0.08]
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from classifier.data.tokenizer import TRUNCATE_SIDES, Tokenizer
from classifier.errors import ModelError, first_line
from classifier.serving.batching import in_chunks, length_sorted_batches
from classifier.serving.interpreters import ResizedInterpreter

BUNDLE_FORMAT = "imdb-classifier-litert-bundle"
#: The newest format this module reads and writes: 2 adds ``"spelling"`` (the tokenizer's, as
#: ``ReviewVectorizer``'s), 3 the explain parts' ``"opening_contrast"`` (a reader of 2 would
#: explain such a bag without it), 4 :data:`NEGATION_PHRASES_STANDARDIZATION`; a bundle is
#: written in the oldest version that holds it.
FORMAT_VERSION = 4
#: The standardization that :func:`classifier.data.tokenizer.standardize` reproduces: that of
#: ``classifier.data.vectorizer.standardize_review`` (ASCII lower-casing, control characters and
#: ``<br />`` to spaces, apostrophes dropped, other ASCII punctuation to spaces). A change to
#: either bumps it.
STANDARDIZATION = "imdb-review-v1"
#: The same with ``data.sentences`` (``standardize_sentences``): sentence ends kept as ``.``.
SENTENCES_STANDARDIZATION = STANDARDIZATION + "-sentences"
#: The same with ``data.negation_phrases`` (``standardize_negation_phrases``): "far not".
NEGATION_PHRASES_STANDARDIZATION = SENTENCES_STANDARDIZATION + "-negation-phrases"
#: Each standardization by what it keeps: (sentences, negation_phrases).
STANDARDIZATIONS = {
    STANDARDIZATION: (False, False),
    SENTENCES_STANDARDIZATION: (True, False),
    NEGATION_PHRASES_STANDARDIZATION: (True, True),
}
#: The folder a run logs its bundle under (``runs:/RUN_ID/bundle``), and the bundle's manifest.
BUNDLE_DIR = "bundle"
MANIFEST = "bundle.json"
MODEL_FILE = "classifier.tflite"
VOCABULARY_FILE = "vocabulary.txt"
DEFAULT_BATCH_SIZE = (
    64  # as classifier.serving.predict: on CPU, small batches of long reviews run fastest
)


@dataclass(frozen=True)
class BundleInfo:
    """What ``bundle.json`` says about the model (see the module docstring)."""

    sequence_length: int
    truncate: str
    labels: tuple[str, ...]
    model_name: str
    variant: str | None
    #: ``bundle.json``'s ``"files"`` (name: bytes and SHA-256) and ``"explain"`` entries: what
    #: :mod:`classifier.serving.explain_parts` reads (``None``: written before them).
    files: dict = field(default_factory=dict)
    explain: dict | None = None
    #: Standardized with sentence ends (:data:`SENTENCES_STANDARDIZATION`).
    sentences: bool = False
    #: Inputs of fewer words read a misspelt word as a known one (``Tokenizer``'s ``spelling``).
    spelling: int = 0
    #: "far from" read as "far not" (:data:`NEGATION_PHRASES_STANDARDIZATION`).
    negation_phrases: bool = False


class BundleModel:
    """An end-to-end review classifier from a bundle: texts in, class probabilities out, no
    TensorFlow.

    It stands where ``classifier.serving.predict`` takes a Keras model: :meth:`predict_texts` is
    ``predict_texts(model, texts, batch_size)``, and :attr:`sequence_length` and
    :attr:`truncate` (also on :attr:`tokenizer`) are what ``vectorizer_of(model)`` gives.
    Several threads may predict with one ``BundleModel`` at once: each call borrows an
    interpreter of its own (module docstring).

    Args:
        info: the bundle's description.
        tokenizer: review strings to token ids.
        model_content: the LiteRT flatbuffer.
        num_threads: threads of the LiteRT interpreter (``None``: its default).

    Example (a bundle folder)::

        model = load_bundle("bundle")
        model.predict_ids(np.array([[5, 7, 2, 0]])).shape  # (1, 2)
    """

    def __init__(
        self,
        info: BundleInfo,
        tokenizer: Tokenizer,
        model_content: bytes,
        num_threads: int | None = None,
        folder: Path | None = None,
    ):
        self.info = info
        self.folder = folder  # where it was loaded from (None: built in memory)
        self.tokenizer = tokenizer
        self.name = info.model_name
        self.variant = info.variant
        self.labels = info.labels
        self.sequence_length = info.sequence_length
        self.truncate = info.truncate
        self._content = model_content
        self._num_threads = num_threads
        self._lock = threading.Lock()
        self._idle = [ResizedInterpreter(model_content, num_threads)]
        self._made = list(self._idle)  # every interpreter, idle or lent

    def __repr__(self) -> str:
        return (
            f"BundleModel({self.name!r}, sequence_length={self.sequence_length}, "
            f"truncate={self.truncate!r}, vocabulary={len(self.tokenizer.vocabulary):,})"
        )

    @property
    def resizes(self) -> int:
        """How often its interpreters were resized, all together (for benchmarks)."""
        return sum(interpreter.resizes for interpreter in self._made)

    @property
    def interpreters(self) -> int:
        """How many interpreters it has made: the most threads that predicted at once."""
        return len(self._made)

    def predict_ids(self, token_ids: np.ndarray) -> np.ndarray:
        """Class probabilities (B, num_classes) float32 of token ids (B, W), W <= sequence_length.

        Safe to call from several threads at once: each call runs on an interpreter of its own
        (module docstring).
        """
        token_ids = np.ascontiguousarray(token_ids, dtype=np.int64)
        if token_ids.ndim != 2 or not 1 <= token_ids.shape[1] <= self.sequence_length:
            raise ValueError(
                f"token ids must have shape (B, W) with 1 <= W <= {self.sequence_length}, got "
                f"{token_ids.shape}"
            )
        with self._lock:
            interpreter = self._idle.pop() if self._idle else None
        if interpreter is None:
            interpreter = ResizedInterpreter(self._content, self._num_threads)
            with self._lock:
                self._made.append(interpreter)
        try:
            return interpreter.run(token_ids)
        finally:
            with self._lock:
                self._idle.append(interpreter)

    def predict_texts(
        self, texts: Sequence[str | bytes], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> list[float]:
        """Probability of the last label (``positive`` of two) for each text, in order."""
        return self.predict_probabilities(texts, batch_size)[:, -1].tolist()

    def predict_probabilities(
        self, texts: Sequence[str | bytes], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> np.ndarray:
        """Class probabilities (N, K) of the texts, in order (column k: ``labels[k]``).

        ``MAX_CHUNK`` texts at a time are tokenized, sorted by their number of tokens and cut
        into batches of ``batch_size``, each trimmed to its longest review (as
        ``classifier.serving.predict.predict_texts`` does with a Keras model).
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        return in_chunks(self._predict_chunk, texts, batch_size, len(self.labels))

    def _predict_chunk(self, texts: Sequence[str | bytes], batch_size: int) -> np.ndarray:
        token_ids = self.tokenizer.encode(texts)
        lengths = np.count_nonzero(token_ids, axis=1)  # no word has id 0 (padding)
        probabilities = np.empty((len(texts), len(self.labels)), dtype=np.float32)
        for rows, width in length_sorted_batches(lengths, batch_size):
            probabilities[rows] = self.predict_ids(token_ids[rows, :width])
        return probabilities


# --- reading a bundle --------------------------------------------------------------------------


def is_bundle(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a ``bundle.json`` (checked further when loaded)."""
    return (Path(path) / MANIFEST).is_file()


def load_bundle(path: str | Path, num_threads: int | None = None) -> BundleModel:
    """Load and check the bundle in folder ``path`` (or its ``bundle.json``).

    Raises:
        ModelError: one line naming the bundle and what is wrong with it: missing, not a bundle,
            a newer format, a file missing or changed since it was written (size or SHA-256), or
            a model LiteRT cannot run.
    """
    folder = Path(path).expanduser()
    if folder.name == MANIFEST and folder.is_file():
        folder = folder.parent
    shown = f"model bundle {folder}"
    if not folder.exists():
        raise ModelError(f"{shown}: no such folder")
    if not folder.is_dir():
        raise ModelError(f"{shown}: not a folder (a bundle is a folder holding {MANIFEST})")
    manifest = _read_manifest(folder, shown)
    info = _info(manifest, shown)
    contents = {name: read_checked(folder, name, info.files, shown) for name in _FILES}
    try:
        vocabulary = contents[VOCABULARY_FILE].decode("utf-8").split("\n")
        tokenizer = Tokenizer(
            vocabulary,
            info.sequence_length,
            info.truncate,
            info.sentences,
            info.spelling,
            info.negation_phrases,
        )
    except (UnicodeDecodeError, ValueError) as error:
        raise ModelError(f"{shown}: bad {VOCABULARY_FILE} ({first_line(error)})") from None
    if len(vocabulary) != manifest.get("vocab_size"):
        raise ModelError(
            f"{shown}: {VOCABULARY_FILE} has {len(vocabulary)} tokens, {MANIFEST} says "
            f"{manifest.get('vocab_size')}"
        )
    try:
        model = BundleModel(
            info, tokenizer, contents[MODEL_FILE], num_threads=num_threads, folder=folder
        )
    except (ValueError, RuntimeError) as error:  # what LiteRT raises for a bad flatbuffer
        raise ModelError(
            f"{shown}: {MODEL_FILE} is not a LiteRT model ({first_line(error)})"
        ) from None
    _check_signature(model, len(info.labels), shown)
    return model


_FILES = (MODEL_FILE, VOCABULARY_FILE)


def _read_manifest(folder: Path, shown: str) -> dict:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{shown}: not a model bundle (no {MANIFEST} in it)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelError(f"{shown}: unreadable {MANIFEST} ({first_line(error)})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise ModelError(f"{shown}: {MANIFEST} is not that of a {BUNDLE_FORMAT}")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ModelError(
            f"{shown}: format version {version!r}; this classify reads up to {FORMAT_VERSION} "
            "(update imdb-classifier, or export the bundle again)"
        )
    return manifest


def _info(manifest: dict, shown: str) -> BundleInfo:
    standardization = manifest.get("standardization")
    if standardization not in STANDARDIZATIONS:
        raise ModelError(
            f"{shown}: standardization {standardization!r}; this tokenizer implements "
            + ", ".join(map(repr, STANDARDIZATIONS))
        )
    sentences, negation_phrases = STANDARDIZATIONS[standardization]
    try:
        labels = tuple(str(label) for label in manifest["labels"])
        info = BundleInfo(
            sequence_length=int(manifest["sequence_length"]),
            truncate=str(manifest["truncate"]),
            labels=labels,
            model_name=str(manifest.get("model_name", "")),
            variant=manifest.get("variant"),
            files=dict(manifest.get("files") or {}),
            explain=manifest.get("explain") or None,
            sentences=sentences,
            spelling=int(manifest.get("spelling", 0)),
            negation_phrases=negation_phrases,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ModelError(f"{shown}: {MANIFEST} lacks or mangles {first_line(error)}") from None
    if (
        info.sequence_length < 1
        or info.truncate not in TRUNCATE_SIDES
        or not 0 <= info.spelling <= info.sequence_length
        or len(labels) < 2
        or manifest.get("num_classes") != len(labels)
    ):
        raise ModelError(
            f"{shown}: {MANIFEST} has impossible values (sequence_length "
            f"{info.sequence_length}, truncate {info.truncate!r}, spelling {info.spelling}, "
            f"labels {list(labels)}, "
            f"num_classes {manifest.get('num_classes')!r})"
        )
    return info


def read_checked(folder: Path, name: str, files: dict, shown: str) -> bytes:
    """The bytes of file ``name`` of the bundle in ``folder``, as ``files`` (``bundle.json``'s
    entry) records them.

    Raises:
        ModelError: one line: the file is missing, unreadable, or changed since it was written.
    """
    expected = files.get(name) or {}
    try:
        content = (folder / name).read_bytes()
    except FileNotFoundError:
        raise ModelError(f"{shown}: {name} is missing") from None
    except OSError as error:
        raise ModelError(f"{shown}: cannot read {name} ({first_line(error)})") from None
    if len(content) != expected.get("bytes") or file_digest(content) != expected.get("sha256"):
        raise ModelError(
            f"{shown}: {name} changed since the bundle was written ({len(content):,} bytes, "
            f"{MANIFEST} says {expected.get('bytes')!r}; or its SHA-256 differs): export it again"
        )
    return content


def _check_signature(model: BundleModel, num_classes: int, shown: str) -> None:
    (inputs,) = model._idle[0].interpreter.get_input_details()
    (outputs,) = model._idle[0].interpreter.get_output_details()
    if (
        len(inputs["shape_signature"]) != 2
        or inputs["dtype"] != np.int64
        or len(outputs["shape_signature"]) != 2
        or int(outputs["shape_signature"][-1]) != num_classes
    ):
        raise ModelError(
            f"{shown}: {MODEL_FILE} does not map token ids (B, T) int64 to {num_classes} class "
            f"probabilities (it takes {inputs['shape_signature'].tolist()} {inputs['dtype']})"
        )


def file_digest(content: bytes) -> str:
    """The SHA-256 of a file's bytes, as ``bundle.json`` records it."""
    return hashlib.sha256(content).hexdigest()
