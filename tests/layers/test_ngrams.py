"""The bag of word 1-2-grams is scikit-learn's binary TF-IDF times a weight matrix."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops
from sklearn.feature_extraction.text import TfidfVectorizer

from classifier.layers.ngrams import (
    BagOfNgrams,
    SquaredNorm,
    document_frequencies,
    first_occurrences,
    sorted_features,
)

VOCAB, BUCKETS = 40, 4096  # 40 * 39 + 39 < 4096: no two word pairs share a bucket


def corpus(seed: int, reviews: int = 30, length: int = 14) -> np.ndarray:
    """Token ids with repeats, OOV (1) and tail padding (0), as the vectorizer gives them."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, size=(reviews, length))
    for row, real in zip(ids, rng.integers(1, length + 1, size=reviews), strict=True):
        row[real:] = 0
    ids[0, :4] = [7, 7, 7, 7]  # a word and a pair repeated
    return ids


def analyzer(ids_row) -> list[str]:
    """The same features, as words scikit-learn counts: ids and pairs of real neighbours."""
    real = [int(i) for i in ids_row if i > 0]
    return [str(i) for i in real] + [f"{a} {b}" for a, b in zip(real, real[1:], strict=False)]


def feature_id(name: str) -> int:
    parts = [int(part) for part in name.split()]
    return parts[0] if len(parts) == 1 else VOCAB + (parts[0] * VOCAB + parts[1]) % BUCKETS


def test_the_bag_is_sklearns_binary_tfidf_times_the_kernel():
    train = corpus(0)
    tfidf = TfidfVectorizer(analyzer=analyzer, binary=True, norm="l2", smooth_idf=True)
    tfidf.fit(list(train))
    bag = BagOfNgrams(VOCAB, BUCKETS, outputs=2)
    bag.build((None, None))
    bag.set_idf(*document_frequencies([train[:10], train[10:]], VOCAB, BUCKETS))
    rng = np.random.default_rng(2)
    kernel = rng.normal(size=(VOCAB + BUCKETS, 2)).astype("float32")
    bias = np.array([0.3, -0.2], dtype="float32")
    bag.kernel.assign(kernel)
    bag.bias.assign(bias)
    rows = [feature_id(name) for name in tfidf.get_feature_names_out()]
    np.testing.assert_allclose(ops.convert_to_numpy(bag.idf)[rows], tfidf.idf_, rtol=1e-6)
    expected = tfidf.transform(list(train)).toarray() @ kernel[rows] + bias
    np.testing.assert_allclose(ops.convert_to_numpy(bag(train)), expected, atol=1e-5)


def test_a_feature_counts_once_per_review_and_padding_never():
    ids = np.array([[5, 6, 5, 6, 0, 0], [0, 0, 0, 0, 0, 0]])
    features = ops.convert_to_numpy(sorted_features(ids, 10, 100))
    present = ops.convert_to_numpy(first_occurrences(sorted_features(ids, 10, 100)))
    pair_56, pair_65 = 10 + 56 % 100, 10 + 65 % 100
    assert sorted(features[0][present[0] > 0].tolist()) == [5, 6, pair_56, pair_65]
    assert present[1].sum() == 0
    counts, reviews = document_frequencies([ids], 10, 100)
    assert reviews == 2
    assert counts[[5, 6, pair_56, pair_65]].tolist() == [1, 1, 1, 1] and counts.sum() == 4


def test_an_empty_review_gives_the_bias():
    bag = BagOfNgrams(10, 16, outputs=2)
    bag.build((None, None))
    bag.bias.assign([1.0, 2.0])
    assert ops.convert_to_numpy(bag(np.zeros((1, 5), dtype="int64"))).tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize("l2", [0.0, 1e-3])
def test_the_l2_penalty_is_a_loss_on_the_kernel(l2):
    bag = BagOfNgrams(10, 16, outputs=2, l2=l2)
    bag.build((None, None))
    bag.kernel.assign(np.ones((26, 2), dtype="float32"))
    losses = [float(ops.convert_to_numpy(loss)) for loss in bag.losses]
    assert sum(losses) == pytest.approx(l2 * 52)
    assert BagOfNgrams.from_config(bag.get_config()).get_config() == bag.get_config()


@pytest.mark.parametrize("traced", [False, True])
def test_the_kernels_penalty_is_keras_l2_in_value_and_gradient_bit_for_bit(traced):
    kernel = keras.Variable(np.random.default_rng(0).normal(0, 1, (1000, 3)).astype("float32"))
    upstream = tf.constant(0.37)

    def value_and_gradient(regularizer):
        with tf.GradientTape() as tape:
            loss = upstream * regularizer(kernel)
        return loss, tape.gradient(loss, kernel.value)

    if traced:
        value_and_gradient = tf.function(value_and_gradient)
    ours = value_and_gradient(SquaredNorm(1e-3))
    keras_l2 = value_and_gradient(keras.regularizers.L2(1e-3))
    for got, want in zip(ours, keras_l2, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    layer = BagOfNgrams(vocab_size=10, buckets=16, outputs=2, l2=1e-3)
    layer.build((None, None))
    assert isinstance(layer.kernel.regularizer, SquaredNorm) and layer.kernel.regularizer.l2 == 1e-3
