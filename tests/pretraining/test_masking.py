"""Corruption for pretraining: BERT masking statistics, T5 span corruption round trips."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from classifier.pretraining.masking import (
    FIRST_WORD_ID,
    mlm_mask,
    prediction_slots,
    restore_spans,
    span_batch,
    span_corrupt,
)

MASK_ID = 500


@pytest.fixture(scope="module")
def batch():
    """4,000 reviews of 20 to 96 real tokens (ids 2..499), padded to 96, and their masking."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(20, 97, size=4000)
    ids = np.zeros((len(lengths), 96), np.int64)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(FIRST_WORD_ID, MASK_ID, size=length)
    masked, positions, labels, weights = (
        t.numpy() for t in mlm_mask(tf.constant(ids), [11, 3], mask_id=MASK_ID, rate=0.15)
    )
    return ids, lengths, masked, positions, labels, weights


def chosen_mask(ids, positions, weights) -> np.ndarray:
    """(B, T) True at the positions chosen for prediction."""
    chosen = np.zeros(ids.shape, bool)
    rows, slots = np.nonzero(weights)
    chosen[rows, positions[rows, slots]] = True
    assert chosen.sum() == weights.sum()  # no position chosen twice
    return chosen


def test_about_15_percent_of_the_real_tokens_are_chosen_and_never_padding(batch):
    ids, lengths, masked, positions, labels, weights = batch
    assert (
        positions.shape == labels.shape == weights.shape == (len(ids), prediction_slots(96, 0.15))
    )
    chosen = chosen_mask(ids, positions, weights)
    assert not np.any(chosen & (ids == 0))  # padding is never chosen
    assert np.all(masked[ids == 0] == 0)  # and stays padding
    assert chosen.sum() / lengths.sum() == pytest.approx(0.15, abs=0.005)
    per_review = chosen.sum(axis=1)
    assert np.all(per_review == np.maximum(1, np.round(0.15 * lengths)))
    # Labels are the original ids at the chosen positions; unused slots are 0 with weight 0.
    rows, slots = np.nonzero(weights)
    assert np.array_equal(labels[rows, slots], ids[rows, positions[rows, slots]])
    assert np.all(labels[weights == 0] == 0) and np.all(positions[weights == 0] == 0)


def test_chosen_tokens_are_80_percent_mask_10_random_10_kept(batch):
    ids, _, masked, positions, _, weights = batch
    chosen = chosen_mask(ids, positions, weights)
    assert np.array_equal(masked[~chosen], ids[~chosen])  # nothing else changes
    new, old = masked[chosen], ids[chosen]
    total = len(new)
    as_mask = np.mean(new == MASK_ID)
    kept = np.mean(new == old)
    random = (new != MASK_ID) & (new != old)
    assert as_mask == pytest.approx(0.8, abs=0.01)
    # A random word equals the original one time in 498: "kept" is 10% plus that.
    assert kept == pytest.approx(0.1 + 0.1 / 498, abs=0.01)
    assert random.mean() == pytest.approx(0.1, abs=0.01)
    assert np.all((new[random] >= FIRST_WORD_ID) & (new[random] < MASK_ID))
    assert total > 20_000


def test_the_seed_fixes_the_masks():
    ids = tf.constant(np.arange(2, 66).reshape(2, 32), tf.int64)
    first = [t.numpy() for t in mlm_mask(ids, [1, 2], MASK_ID)]
    again = [t.numpy() for t in mlm_mask(ids, [1, 2], MASK_ID)]
    other = [t.numpy() for t in mlm_mask(ids, [1, 3], MASK_ID)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not np.array_equal(first[1], other[1])


def test_span_corruption_round_trips():
    rng = np.random.default_rng(3)
    sentinels = list(range(900, 940))
    dropped = kept = 0
    for length in rng.integers(1, 200, size=500):
        review = rng.integers(FIRST_WORD_ID, 800, size=length)
        inputs, targets = span_corrupt(review, rng, sentinels, 0.15, 3.0)
        assert np.array_equal(restore_spans(inputs, targets, sentinels), review)
        spans = [token for token in inputs if token in sentinels]
        assert spans == sentinels[: len(spans)]  # one sentinel per span, in order
        assert [token for token in targets if token in sentinels] == spans
        if length >= 2:
            assert inputs[0] not in sentinels  # a kept run comes first, as in T5
            dropped += len(targets) - len(spans)
            kept += length
    assert dropped / kept == pytest.approx(0.15, abs=0.01)


def test_span_batches_shift_the_targets_behind_the_start_token():
    ids = np.zeros((3, 30), np.int64)
    ids[0, :30] = np.arange(2, 32)
    ids[1, :12] = np.arange(40, 52)
    ids[2, :1] = 7  # too short to corrupt: left whole, no target
    source, decoder_in, labels, weights = span_batch(ids, 5, 99, range(100, 110), 0.15, 3.0)
    for row in range(3):
        real = labels[row][weights[row] == 1]
        assert decoder_in[row, 0] == 99
        assert np.array_equal(decoder_in[row, 1 : len(real)], real[:-1])
        restored = restore_spans(source[row][source[row] != 0], real, range(100, 110))
        assert np.array_equal(restored, ids[row][ids[row] != 0])
    assert weights[2].sum() == 0 and np.array_equal(source[2, :1], [7])
