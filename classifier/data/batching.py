"""Token ids as ``tf.data`` batches: each review vectorized once and cached without its
padding (in memory, or on disk for a labelled file: :func:`cache_file`), shuffled with a seed,
and batched by length (:func:`vectorize`). :mod:`classifier.data.pipeline` builds the splits
and the vectorizer that these batches come from.

Example (``raw`` and ``vectorizer`` from :mod:`classifier.data.pipeline`)::

    batches = vectorize(raw.train, vectorizer, batch_size=64, shuffle_seed=1, bucket_by_length=True)
    ids, labels = next(iter(batches))  # (64, <= sequence_length) int64, (64,) int64
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol

import numpy as np
import tensorflow as tf

from classifier.data.labelled import shuffle_rows

VECTORIZE_BATCH = 1024
#: A map's function as written: tf.data traces each through AutoGraph, which rewrites Python
#: control flow on tensors from the function's source; these have none, and tracing them as
#: they are takes 0.14 s less of a run's start (3 splits, 2 cores).
as_written = tf.autograph.experimental.do_not_convert
AUTOTUNE = tf.data.AUTOTUNE


class Vectorizer(Protocol):
    """Texts (B,) to token ids (B, ``sequence_length``), padding after the ids: what
    :class:`classifier.data.vectorizer.ReviewVectorizer` is."""

    sequence_length: int

    def __call__(self, texts: tf.Tensor) -> tf.Tensor: ...


def vectorize(
    dataset: tf.data.Dataset,
    vectorizer: Vectorizer,
    batch_size: int,
    shuffle_seed: int | None = None,
    bucket_by_length: bool = False,
    cache_file: str = "",
) -> tf.data.Dataset:
    """Vectorize once, cache, optionally shuffle (seeded, reshuffled each epoch), batch, prefetch.

    The cache holds each review's ids without their padding, in chunks of
    :data:`VECTORIZE_BATCH` reviews: in memory (``cache_file`` empty), or in files of that
    prefix, so that a labelled file larger than memory trains in memory that does not grow with
    it (ids of 1,000,000 reviews take gigabytes; TensorFlow keeps a file cache's index, an entry
    per cached element, in memory).

    With ``bucket_by_length`` each batch holds reviews of similar length and is padded only to
    its longest review (at most ``sequence_length``) instead of to ``sequence_length``: the
    same model function (the padding is masked everywhere) at a fraction of the work, since
    half the reviews are shorter than 175 words. Batches keep ``batch_size`` reviews; their
    order stays deterministic for a given seed, so two passes over an unshuffled split agree.
    """
    ids = (
        dataset.batch(VECTORIZE_BATCH)
        .map(
            as_written(lambda text, label: _packed(vectorizer(text), label)),
            num_parallel_calls=AUTOTUNE,
        )
        .cache(cache_file)  # one entry per chunk: a file cache's index is held in memory
        .map(_unpacked)
        .unbatch()
        .map(as_written(lambda token_ids, label: (tf.identity(token_ids), label)))  # plain (T,)
    )
    if shuffle_seed is not None:  # a full shuffle of a training portion (pretraining: partial)
        rows = shuffle_rows(vectorizer.sequence_length)
        ids = ids.shuffle(rows, seed=shuffle_seed, reshuffle_each_iteration=True)
    if not bucket_by_length:
        length = vectorizer.sequence_length
        return ids.padded_batch(batch_size, ([length], [])).prefetch(tf.data.AUTOTUNE)
    # The counting pass also fills the cache, which the first epoch would do anyway.
    lengths = np.concatenate([batch.numpy() for batch in ids.map(_length).batch(4096)])
    boundaries = length_buckets(vectorizer.sequence_length)
    return by_length(ids, _length, lengths, boundaries, batch_size).prefetch(tf.data.AUTOTUNE)


def by_length(
    elements: tf.data.Dataset,
    length_of,
    lengths: np.ndarray,
    boundaries: list[int],
    batch_size: int,
) -> tf.data.Dataset:
    """``elements`` in batches of up to ``batch_size`` whose lengths (``length_of(element)``,
    ``lengths`` of them all, in any order) fall in one bucket of ``boundaries``, each padded to
    its longest. Each bucket yields ceil(elements in it / batch_size) batches, whatever the
    order; stating the count lets Keras know the epoch length (no "ran out of data" warning).

    Example:
        >>> numbers = tf.data.Dataset.range(5)
        >>> batches = by_length(numbers, lambda n: tf.cast(n, tf.int32), np.arange(5), [2], 2)
        >>> int(batches.cardinality()), sorted(b.numpy().tolist() for b in batches)
        (3, [[0, 1], [2, 3], [4]])
    """
    per_bucket = np.bincount(np.searchsorted(boundaries, lengths, side="right"))
    batches = int(np.sum(-(-per_bucket // batch_size)))
    return elements.bucket_by_sequence_length(
        length_of,  # the same length as ``lengths`` counts
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
    ).apply(tf.data.experimental.assert_cardinality(batches))


def length_buckets(sequence_length: int, buckets: int = 8) -> list[int]:
    """Upper bounds (exclusive) of equal-width length buckets below ``sequence_length``.

    Example:
        >>> length_buckets(256)
        [33, 65, 97, 129, 161, 193, 225]
    """
    width = max(1, sequence_length // buckets)
    return [bound + 1 for bound in range(width, sequence_length - width + 1, width)]


@as_written
def _length(token_ids: tf.Tensor, label: tf.Tensor) -> tf.Tensor:
    """The length of one trimmed review: what picks its bucket."""
    return tf.shape(token_ids)[0]


@as_written
def _packed(token_ids: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """A chunk of reviews (B, T) without their trailing padding (padding only ever follows the
    ids; a review keeps at least one id): every review's ids end to end, each one's length,
    and the labels."""
    lengths = tf.maximum(tf.math.count_nonzero(token_ids, axis=1), 1)
    ragged = tf.RaggedTensor.from_tensor(token_ids, lengths=lengths)
    return ragged.flat_values, ragged.row_lengths(), labels


@as_written
def _unpacked(values: tf.Tensor, lengths: tf.Tensor, labels: tf.Tensor):
    """:func:`_packed`'s chunk as ragged rows, to unbatch into one review each."""
    return tf.RaggedTensor.from_row_lengths(values, lengths), labels


def cache_file(name: str) -> str:
    """A new file prefix for one split's cached ids, in a folder of this process's own under
    the temporary directory (``TMPDIR``), removed when the process ends. A process that was
    killed cannot remove its folder: the next one to make its own removes it
    (:func:`remove_orphans`).

    Example::

        cache_file("train")  # '/tmp/classify-ids-4242-k2j4_x/train-1' (process 4242)
    """
    return str(_cache_folder() / f"{name}-{next(_cache_numbers)}")


CACHE_PREFIX = "classify-ids-"  # then the process id, a dash and mkdtemp's letters
_cache_numbers = itertools.count(1)  # each prefix new: two caches never share files


@functools.cache
def _cache_folder() -> Path:
    remove_orphans(Path(tempfile.gettempdir()))
    folder = Path(tempfile.mkdtemp(prefix=f"{CACHE_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def remove_orphans(temporary: Path) -> list[Path]:
    """Remove the id-cache folders in ``temporary`` whose process has ended (killed, so its
    exit did not remove them: a labelled file's ids can take gigabytes); those it removed.
    Folders of live processes, of another user's, and without a process id stay.

    Example:
        >>> remove_orphans(Path("/no/such/folder"))
        []
    """
    removed = []
    for folder in temporary.glob(f"{CACHE_PREFIX}*-*"):
        pid = folder.name.removeprefix(CACHE_PREFIX).split("-", 1)[0]
        try:
            mine = folder.stat().st_uid == os.getuid()
        except OSError:  # removed meanwhile by another process doing the same
            continue
        if pid.isdigit() and mine and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True
