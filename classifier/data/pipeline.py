"""Labelled texts as splits, and tf.data pipelines of their token ids.

:func:`load_raw_splits` is the one place a source becomes training, validation and test splits
of ``(text, label id)`` with their class names; everything downstream sees only those. The
embedded default is IMDB: the TFDS ``train`` split (25,000 reviews) is cut in order into
training and validation reviews (default 15,000 / 10,000, as in the reference experiments),
the ``test`` split (25,000) is only used for the final evaluation, never for model selection,
and ``unsupervised`` (50,000 unlabelled reviews) is reachable through :func:`load_unsupervised`.
Any other source (``data.source``, :mod:`classifier.data.sources`; ``tfds:imdb_reviews`` too) is
planned by :mod:`classifier.data.labelled` and streamed; the default keeps TFDS's reader and its
ordered cut, which the shipped results rest on. Batches: :mod:`classifier.data.batching`;
texts to ids: :class:`~classifier.data.vectorizer.ReviewVectorizer` (:func:`build_vectorizer`).

Example (with the data at hand: ``TFDS_DATA_DIR`` or ``data.data_dir``)::

    cfg = load_config("configs/smoke.yaml").data
    raw = load_raw_splits(cfg)
    vectorizer = build_vectorizer(cfg, raw.train)
    data = make_datasets(cfg, raw, vectorizer)
    ids, labels = next(iter(data.train))  # (batch, <= sequence_length) int64, (batch,) int64
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from classifier.config.schema import LABELS, DataConfig
from classifier.data.batching import VECTORIZE_BATCH, cache_file, vectorize
from classifier.data.extra import extra_line, extra_rows
from classifier.data.imdb import (
    DATASET,
    imdb_splits,
    resolve_data_dir,
    split_sizes,
    split_specs,
    tfds_load,
)
from classifier.data.labelled import Plan, plan_splits
from classifier.data.vectorizer import (
    ReviewVectorizer,
    standardize_review,
    standardize_sentences,
)
from classifier.errors import DataNotFoundError


@dataclass(frozen=True)
class RawSplits:
    """The three labelled splits as ``tf.data`` datasets of ``(text, label id)`` scalars, and
    the class names (index = label id; IMDB's are ``negative``, ``positive``)."""

    train: tf.data.Dataset
    validation: tf.data.Dataset
    test: tf.data.Dataset
    labels: tuple[str, ...] = LABELS


@dataclass(frozen=True)
class Datasets:
    """Batched, prefetched ``(token_ids, label)`` pipelines ready for ``model.fit``."""

    train: tf.data.Dataset
    validation: tf.data.Dataset
    test: tf.data.Dataset


def load_raw_splits(cfg: DataConfig, with_ids: bool = False) -> RawSplits:
    """Load training, validation and test texts as ``(text, label id)`` (or, from IMDB, dicts
    with ``tfds_id``).

    Args:
        cfg: the data config (the source; for IMDB the sizes and data directory).
        with_ids: yield TFDS feature dicts with a ``tfds_id`` per review instead of tuples
            (IMDB only).

    Raises:
        DataNotFoundError: no IMDB data. DataError: a labelled file that cannot be used.
    """
    if with_ids and (cfg.source is not None or cfg.extra is not None):
        raise ValueError("with_ids reads TFDS ids; a labelled file has none")
    if cfg.source is not None:
        raw = _file_splits(plan_splits(cfg))
    else:
        raw = RawSplits(*imdb_splits(cfg, with_ids))
    if cfg.extra is not None:  # more training rows (classifier.data.extra), shuffled in
        texts, codes = extra_rows(cfg, raw.labels)
        added = tf.data.Dataset.from_tensor_slices((tf.constant(texts, tf.string), codes))
        raw = dataclasses.replace(raw, train=raw.train.concatenate(added))
    return raw


def _file_splits(plan: Plan) -> RawSplits:
    """The planned splits of a labelled file, each streamed from disk on every pass."""

    def batches(name: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        # Batches from Python, one scalar at a time in TensorFlow: a generator's per-element
        # cost is that of a batch, about half the time of a CSV's first pass.
        examples = plan.examples(name)
        while chunk := list(itertools.islice(examples, VECTORIZE_BATCH)):
            texts, labels = zip(*chunk, strict=True)
            yield np.array(texts, dtype=object), np.array(labels, dtype=np.int64)

    def split(name: str) -> tf.data.Dataset:
        dataset = tf.data.Dataset.from_generator(
            lambda: batches(name),
            output_signature=(
                tf.TensorSpec((None,), tf.string, name="text"),
                tf.TensorSpec((None,), tf.int64, name="label"),
            ),
        ).unbatch()
        return dataset.apply(tf.data.experimental.assert_cardinality(plan.sizes[name]))

    return RawSplits(split("train"), split("validation"), split("test"), plan.labels)


def load_unsupervised(cfg: DataConfig) -> tf.data.Dataset:
    """The 50,000 unlabelled reviews (label -1), as a dataset of text scalars."""
    return tfds_load("unsupervised", cfg, as_supervised=True).map(lambda text, _: text)


def load_last_unlabelled(cfg: DataConfig, count: int) -> tuple[tf.data.Dataset, int]:
    """The last ``count`` unlabelled reviews (all of them where the split holds fewer), as
    ``(text, -1)`` pairs, and how many that is.

    Raises:
        DataNotFoundError: the prepared copy holds no unlabelled review.
    """
    count = min(count, split_sizes(cfg)["unsupervised"])
    if count < 1:  # "unsupervised[-0:]" would be the whole split
        raise DataNotFoundError(
            f"the unsupervised split in {resolve_data_dir(cfg)[0]} holds no review "
            "(a refit model's calibration needs unlabelled reviews)"
        )
    return tfds_load(f"unsupervised[-{count}:]", cfg, as_supervised=True), count


def texts_of(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """The review texts of a ``(text, label)`` dataset, batched for adapting or vectorizing."""
    return dataset.map(lambda text, _: text).batch(VECTORIZE_BATCH)


def build_vectorizer(cfg: DataConfig, train: tf.data.Dataset) -> ReviewVectorizer:
    """A :class:`ReviewVectorizer` whose vocabulary is adapted on ``train`` (text, label) only."""
    vectorizer = ReviewVectorizer.for_data(cfg)
    vectorizer.adapt(texts_of(train))
    return vectorizer


def make_datasets(
    cfg: DataConfig, raw: RawSplits, vectorizer: ReviewVectorizer, seed: int = 0
) -> Datasets:
    """Training (shuffled with ``seed``), validation and test pipelines of ``(ids, label)``.
    A labelled file's ids are cached on disk (:func:`cache_file`), IMDB's in memory."""
    bucket = cfg.bucket_by_length

    def pipeline(split: tf.data.Dataset, name: str, shuffle: int | None) -> tf.data.Dataset:
        cache = cache_file(name) if cfg.source is not None else ""
        return vectorize(split, vectorizer, cfg.batch_size, shuffle, bucket, cache)

    return Datasets(
        train=pipeline(raw.train, "train", seed),
        validation=pipeline(raw.validation, "validation", None),
        test=pipeline(raw.test, "test", None),
    )


def resumed_seed(seed: int, epochs_done: int) -> int:
    """The seed for the pipelines of a run that resumes after ``epochs_done`` epochs.

    tf.data draws each pass's shuffle order and random numbers from the seed alone, pass by
    pass, so a new process would replay epoch 1's order and masks as its first pass. A fresh
    run (``epochs_done`` 0) keeps ``seed``; a resumed one gets a seed of its own for each
    resume point. (Its passes differ from those an unbroken run would have made.)

    Example:
        >>> resumed_seed(42, 0)
        42
        >>> len({resumed_seed(42, 0), resumed_seed(42, 2), resumed_seed(42, 3)})
        3
    """
    if epochs_done == 0:
        return seed
    return int(np.random.SeedSequence([seed, epochs_done]).generate_state(1)[0])


def review_lengths(dataset: tf.data.Dataset, sentences: bool = False) -> tuple[list, list]:
    """Words per review (after :func:`standardize_review`, or :func:`standardize_sentences`
    with ``sentences``) and labels of a (text, label) dataset."""
    lengths: list[int] = []
    labels: list[int] = []
    standardize = standardize_sentences if sentences else standardize_review
    for texts, batch_labels in dataset.batch(VECTORIZE_BATCH):
        words = tf.strings.split(standardize(texts))
        lengths.extend(words.row_lengths().numpy().tolist())
        labels.extend(batch_labels.numpy().tolist())
    return lengths, labels


def describe(cfg: DataConfig) -> str:
    """A printable summary: split sizes, label balance, length percentiles, an example review."""
    sizes = split_sizes(cfg)
    raw = load_raw_splits(cfg)
    header = (
        f"{'split':<13}{'reviews':>9}{'negative':>10}{'positive':>10}"
        f"{'words p50':>11}{'p90':>7}{'p99':>7}{'max':>7}"
    )
    rows = [header]
    for name, dataset in (("train", raw.train), ("validation", raw.validation), ("test", raw.test)):
        lengths, labels = review_lengths(dataset, cfg.sentences)
        count, positive = len(labels), sum(labels)
        pct = np.percentile(lengths or [0], (50, 90, 99), method="nearest")  # as labelled.describe
        rows.append(
            f"{name:<13}{count:>9,}{count - positive:>10,}{positive:>10,}"
            f"{pct[0]:>11}{pct[1]:>7}{pct[2]:>7}{max(lengths, default=0):>7}"
        )
    rows.append(f"{'unsupervised':<13}{sizes['unsupervised']:>9,}  (unlabelled)")
    text, label = next(iter(raw.train))
    example = text.numpy().decode("utf-8")
    specs, added = split_specs(cfg), int(raw.train.cardinality()) - cfg.train_size
    return "\n".join(
        [
            f"IMDB reviews (TFDS {DATASET}); TFDS splits: "
            + ", ".join(f"{name} {size:,}" for name, size in sizes.items()),
            f"training = {specs['train']}, validation = {specs['validation']}, test = {specs['test']}",
            *([extra_line(cfg, added)] if cfg.extra else []),
            "",
            *rows,
            "",
            f"Example (first training review, {LABELS[int(label)]}):",
            f"  {example[:400]}{'...' if len(example) > 400 else ''}",
        ]
    )
