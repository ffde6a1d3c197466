"""Corrupting token ids for self-pretraining: BERT's masked language model and T5's span
corruption. Both take what :class:`~classifier.data.vectorizer.ReviewVectorizer` gives: id 0 is
padding (only ever at the end of a review), id 1 is out-of-vocabulary, words follow, and the
reserved tokens of :func:`classifier.config.pretrain.reserved_tokens` end the vocabulary.

Example:
    >>> ids = tf.constant([[5, 6, 7, 8, 9, 10, 11, 12, 0, 0]], tf.int64)
    >>> masked, positions, labels, weights = mlm_mask(ids, [1, 2], mask_id=99, rate=0.25)
    >>> weights.numpy().tolist()  # 2 of the 8 real tokens are predicted; 3 slots for T = 10
    [[1.0, 1.0, 0.0]]
    >>> bool(tf.reduce_all(tf.gather(ids, positions, batch_dims=1)[:, :2] == labels[:, :2]))
    True
    >>> rng = np.random.default_rng(0)
    >>> inputs, targets = span_corrupt(np.arange(2, 22), rng, sentinels=[30, 31], mean_span_length=3)
    >>> restore_spans(inputs, targets, sentinels=[30, 31]).tolist() == list(range(2, 22))
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

#: Of the tokens chosen for prediction, the share replaced by the mask token and the share
#: replaced by a random word; the rest stay as they are (BERT, section 3.1).
MASK_SHARE = 0.8
RANDOM_SHARE = 0.1
FIRST_WORD_ID = 2  # after padding (0) and out-of-vocabulary (1)


def prediction_slots(length: int, rate: float) -> int:
    """Slots per review for predicted tokens in a batch padded to ``length``: ceil(rate * T).

    Example:
        >>> prediction_slots(256, 0.15)
        39
    """
    return max(1, math.ceil(rate * length))


def mlm_mask(
    token_ids, seed, mask_id: int, rate: float = 0.15, first_word_id: int = FIRST_WORD_ID
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """BERT masking of a batch of token ids (B, T), random but fixed by ``seed``.

    Each review with n real tokens has k = min(n, max(1, round(rate * n))) of them chosen,
    uniformly without repetition (padding is never chosen). A chosen token becomes ``mask_id``
    with probability 0.8, a random word id in [``first_word_id``, ``mask_id``) with 0.1, and
    stays with 0.1. The loss and accuracy are computed at the chosen positions only.

    Args:
        token_ids: int (B, T); 0 is padding.
        seed: two integers (a stateless seed).
        mask_id: the ``[MASK]`` id (the last of the vocabulary; the words come before it).
        rate: share of each review's real tokens to predict.
        first_word_id: the lowest id a random replacement takes.

    Returns:
        ``(masked_ids, positions, labels, weights)``: the corrupted ids (B, T); the chosen
        positions (B, P) with P = :func:`prediction_slots` (T, rate), int32; the original ids
        there (B, P); and weights (B, P), 1.0 for a chosen position and 0.0 for an unused slot
        (whose position and label are 0).
    """
    token_ids = tf.convert_to_tensor(token_ids)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)
    shape = tf.shape(token_ids)
    batch, length = shape[0], shape[1]
    real = tf.not_equal(token_ids, 0)
    counts = tf.reduce_sum(tf.cast(real, tf.int32), axis=1)
    wanted = tf.cast(tf.round(rate * tf.cast(counts, tf.float32)), tf.int32)
    chosen_count = tf.minimum(counts, tf.maximum(wanted, 1))
    slots = tf.maximum(1, tf.cast(tf.math.ceil(rate * tf.cast(length, tf.float32)), tf.int32))

    scores = tf.where(real, tf.random.stateless_uniform([batch, length], seeds[0]), 2.0)
    order = tf.argsort(scores, axis=1, stable=True)[:, :slots]  # real tokens first, at random
    chosen = tf.range(slots)[tf.newaxis, :] < chosen_count[:, tf.newaxis]
    positions = tf.where(chosen, order, 0)
    labels = tf.where(chosen, tf.gather(token_ids, order, batch_dims=1), 0)

    action = tf.random.stateless_uniform([batch, slots], seeds[1])
    random_words = tf.random.stateless_uniform(
        [batch, slots], seeds[2], minval=first_word_id, maxval=mask_id, dtype=token_ids.dtype
    )
    mask_ids = tf.fill([batch, slots], tf.cast(mask_id, token_ids.dtype))
    replaced = tf.where(
        action < MASK_SHARE,
        mask_ids,
        tf.where(action < MASK_SHARE + RANDOM_SHARE, random_words, labels),
    )
    rows = tf.broadcast_to(tf.range(batch)[:, tf.newaxis], [batch, slots])
    where = tf.boolean_mask(tf.stack([rows, order], axis=-1), chosen)
    masked = tf.tensor_scatter_nd_update(token_ids, where, tf.boolean_mask(replaced, chosen))
    return masked, positions, labels, tf.cast(chosen, tf.float32)


def _segments(rng: np.random.Generator, total: int, parts: int) -> np.ndarray:
    """``total`` items cut at random into ``parts`` non-empty runs; their lengths."""
    cuts = np.sort(rng.choice(np.arange(1, total), size=parts - 1, replace=False))
    return np.diff(np.concatenate([[0], cuts, [total]]))


def span_corrupt(
    token_ids: np.ndarray,
    rng: np.random.Generator,
    sentinels: Sequence[int],
    noise_density: float = 0.15,
    mean_span_length: float = 3.0,
) -> tuple[np.ndarray, np.ndarray]:
    """T5 span corruption of one review's token ids (no padding).

    round(n * noise_density) tokens (at least 1, at most n - 1) are dropped in
    round(noise / mean_span_length) spans (at least 1, at most ``len(sentinels)``), placed at
    random between kept runs (T5's ``random_spans_noise_mask``: the review starts with a kept
    run). In the input each span becomes its sentinel; the target lists every sentinel followed
    by the tokens it replaced. A review of fewer than 2 tokens is left whole, with no target.

    Returns:
        ``(inputs, targets)``, int64 arrays.
    """
    ids = np.asarray(token_ids, dtype=np.int64)
    n = len(ids)
    if n < 2:
        return ids, np.zeros(0, np.int64)
    noise = min(max(round(n * noise_density), 1), n - 1)
    spans = max(1, min(round(noise / mean_span_length), len(sentinels), noise, n - noise))
    dropped, kept = _segments(rng, noise, spans), _segments(rng, n - noise, spans)
    inputs, targets, start = [], [], 0
    for span in range(spans):
        inputs.extend(ids[start : start + kept[span]])
        start += kept[span]
        inputs.append(sentinels[span])
        targets.append(sentinels[span])
        targets.extend(ids[start : start + dropped[span]])
        start += dropped[span]
    return np.array(inputs, np.int64), np.array(targets, np.int64)


def restore_spans(inputs: np.ndarray, targets: np.ndarray, sentinels: Sequence[int]) -> np.ndarray:
    """The review that :func:`span_corrupt` corrupted: each sentinel of ``inputs`` replaced by
    the tokens that follow it in ``targets``."""
    marks = set(int(s) for s in sentinels)
    spans: dict[int, list[int]] = {}
    current = None
    for token in map(int, targets):
        if token in marks:
            current = spans.setdefault(token, [])
        elif current is not None:
            current.append(token)
    restored: list[int] = []
    for token in map(int, inputs):
        restored.extend(spans.get(token, []) if token in marks else [token])
    return np.array(restored, np.int64)


def span_batch(
    token_ids: np.ndarray,
    seed: int,
    start_id: int,
    sentinels: Sequence[int],
    noise_density: float,
    mean_span_length: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`span_corrupt` on every review of a batch (B, T), padded with 0.

    Returns:
        ``(source, decoder_inputs, labels, weights)``: the corrupted reviews (B, S); the
        targets shifted right behind ``start_id`` (B, L); the targets (B, L); and weights (B, L),
        1.0 at real target tokens.
    """
    rng = np.random.default_rng(abs(int(seed)))
    pairs = [
        span_corrupt(row[row != 0], rng, sentinels, noise_density, mean_span_length)
        for row in np.asarray(token_ids)
    ]
    width = max(1, max(len(inputs) for inputs, _ in pairs))
    target_width = max(1, max(len(targets) for _, targets in pairs))
    source = np.zeros((len(pairs), width), np.int64)
    labels = np.zeros((len(pairs), target_width), np.int64)
    decoder_inputs = np.zeros_like(labels)
    for row, (inputs, targets) in enumerate(pairs):
        source[row, : len(inputs)] = inputs
        labels[row, : len(targets)] = targets
        decoder_inputs[row, 0] = start_id
        decoder_inputs[row, 1 : len(targets)] = targets[:-1]
    return source, decoder_inputs, labels, (labels != 0).astype(np.float32)
