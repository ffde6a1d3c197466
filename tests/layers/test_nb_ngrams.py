"""The NB-weighted bag of word 1-3-grams equals NBSVM's features computed with scikit-learn and
NumPy: binary n-gram counts, log-count ratios from the training labels, L2-normalised, times a
weight matrix."""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops
from sklearn.feature_extraction.text import CountVectorizer

from classifier.layers.nb_ngrams import (
    NaiveBayesNgrams,
    class_feature_counts,
    log_count_ratios,
)
from classifier.layers.ngrams import ngram_features
from tests.layer_checks import run_layer_test

VOCAB, BUCKETS = 12, 1 << 20  # 12**3 < 2**20: no two n-grams share a bucket


def corpus(seed: int, reviews: int = 40, length: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Token ids with repeats, OOV (1) and tail padding (0), and a label per review."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, size=(reviews, length))
    for row, real in zip(ids, rng.integers(1, length + 1, size=reviews), strict=True):
        row[real:] = 0
    ids[0, :5] = [7, 8, 7, 8, 7]  # a word, a pair and a triple repeated
    return ids, rng.integers(0, 2, size=reviews)


def ngrams(ids_row, order: int = 3) -> list[str]:
    """The review's word n-grams as scikit-learn counts them: runs of real neighbours."""
    real = [str(int(i)) for i in ids_row if i > 0]
    return [
        " ".join(real[i : i + n]) for n in range(1, order + 1) for i in range(len(real) - n + 1)
    ]


def feature_id(name: str) -> int:
    code = 0
    for part in name.split():
        code = code * VOCAB + int(part)
    return code if " " not in name else VOCAB + code % BUCKETS


def reference(ids, labels, kernel, bias, alpha=1.0, order=3):
    """NBSVM on scikit-learn's binary counts: (logits (B, outputs), ratios per feature id)."""
    counts = CountVectorizer(analyzer=lambda row: ngrams(row, order), binary=True)
    x = counts.fit_transform(list(ids)).toarray().astype(np.float64)
    y = np.asarray(labels)
    p = alpha + x[y == 1].sum(axis=0)
    q = alpha + x[y == 0].sum(axis=0)
    # The layer's ratios are over all its vocab + buckets features, unseen ones included: their
    # alpha adds to |p| and |q| alike. Add them here too so that the two agree exactly.
    absent = VOCAB + BUCKETS - x.shape[1]
    ratio = np.log((p / (p.sum() + alpha * absent)) / (q / (q.sum() + alpha * absent)))
    scaled = x * ratio
    scaled /= np.maximum(np.linalg.norm(scaled, axis=1, keepdims=True), 1e-12)
    rows = np.array([kernel[feature_id(name)] for name in counts.get_feature_names_out()])
    by_id = {
        feature_id(name): r for name, r in zip(counts.get_feature_names_out(), ratio, strict=True)
    }
    return scaled @ rows + bias, by_id


def test_trigram_features_are_numbered_as_documented():
    ids = np.array([[3, 4, 5, 0, 0]])
    features = ops.convert_to_numpy(ngram_features(ids, VOCAB, BUCKETS, order=3))[0]
    unigrams, bigrams, trigrams = features[:5], features[5:9], features[9:]
    assert unigrams.tolist() == [3, 4, 5, 0, 0]
    assert bigrams.tolist() == [VOCAB + 3 * VOCAB + 4, VOCAB + 4 * VOCAB + 5, 0, 0]
    assert trigrams.tolist() == [VOCAB + (3 * VOCAB + 4) * VOCAB + 5, 0, 0]


def test_order_two_is_the_bow_layers_numbering():
    ids, _ = corpus(0)
    two = ngram_features(ids, VOCAB, BUCKETS, order=2)
    default = ngram_features(ids, VOCAB, BUCKETS)
    np.testing.assert_array_equal(ops.convert_to_numpy(two), ops.convert_to_numpy(default))


def test_log_count_ratios_equal_the_numpy_reference():
    ids, labels = corpus(1)
    negative, positive = class_feature_counts(
        [(ids[:25], labels[:25]), (ids[25:], labels[25:])], VOCAB, BUCKETS, 3
    )
    ratios = log_count_ratios(negative, positive)
    _, expected = reference(ids, labels, np.zeros((VOCAB + BUCKETS, 2)), np.zeros(2))
    got = {feature: float(ratios[feature]) for feature in expected}
    assert got == pytest.approx(expected, abs=1e-5)
    assert ratios[0] == 0.0  # padding


def test_the_layer_equals_nbsvm_features_times_its_kernel():
    ids, labels = corpus(2)
    rng = np.random.default_rng(3)
    layer = NaiveBayesNgrams(VOCAB, BUCKETS, outputs=2, order=3)
    layer.build(ids.shape)
    kernel = rng.normal(size=(VOCAB + BUCKETS, 2)).astype(np.float32)
    bias = np.array([0.3, -0.2], dtype=np.float32)
    layer.kernel.assign(kernel)
    layer.bias.assign(bias)
    layer.set_ratios(*class_feature_counts([(ids, labels)], VOCAB, BUCKETS, 3))
    expected, _ = reference(ids, labels, kernel.astype(np.float64), bias)
    np.testing.assert_allclose(ops.convert_to_numpy(layer(ids)), expected, rtol=1e-4, atol=1e-4)


def test_padding_and_repeats_leave_the_output_unchanged():
    ids, labels = corpus(4)
    layer = NaiveBayesNgrams(VOCAB, BUCKETS, outputs=2)
    layer.build(ids.shape)
    layer.kernel.assign(np.random.default_rng(5).normal(size=(VOCAB + BUCKETS, 2)))
    layer.set_ratios(*class_feature_counts([(ids, labels)], VOCAB, BUCKETS, 3))
    padded = np.pad(ids, [[0, 0], [0, 7]])
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer(padded)), ops.convert_to_numpy(layer(ids)), atol=1e-6
    )
    # "3 4 3 4" and "3 4 3 4 3 4" hold the same n-grams, only more often: binary features.
    twice, thrice = np.array([[3, 4, 3, 4, 0, 0]]), np.array([[3, 4, 3, 4, 3, 4]])
    assert set(ngrams(twice[0])) == set(ngrams(thrice[0]))
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer(twice)), ops.convert_to_numpy(layer(thrice)), atol=1e-6
    )


def test_an_order_outside_one_to_three_is_refused():
    with pytest.raises(ValueError, match="order must be 1, 2 or 3, got 4"):
        NaiveBayesNgrams(VOCAB, BUCKETS, outputs=2, order=4)


def test_the_shared_layer_checks(tmp_path):
    ids, _ = corpus(6, reviews=4)
    run_layer_test(
        NaiveBayesNgrams,
        {"vocab_size": VOCAB, "buckets": 64, "outputs": 2, "order": 3, "l2": 1e-4},
        ids,
        tmp_path=tmp_path,
        expected_output_shape=(4, 2),
        expected_num_trainable_weights=2,
        expected_num_non_trainable_weights=1,
        expected_num_params=(VOCAB + 64) * 3 + 2,
    )


def test_three_classes_are_one_vs_rest_nbsvm_per_column():
    """Wang & Manning for several classes: column k is the binary NBSVM of class k against the
    other classes, with its own ratios and its own normalisation."""
    ids, _ = corpus(4, reviews=60)
    labels = np.random.default_rng(5).integers(0, 3, size=len(ids))
    rng = np.random.default_rng(6)
    layer = NaiveBayesNgrams(VOCAB, BUCKETS, outputs=3, order=3)
    layer.build(ids.shape)
    kernel = rng.normal(size=(VOCAB + BUCKETS, 3)).astype(np.float32)
    bias = np.array([0.3, -0.2, 0.1], dtype=np.float32)
    layer.kernel.assign(kernel)
    layer.bias.assign(bias)
    counts = class_feature_counts(
        [(ids[:30], labels[:30]), (ids[30:], labels[30:])], VOCAB, BUCKETS, 3, 3
    )
    assert counts.shape == (3, VOCAB + BUCKETS)
    layer.set_ratios(*counts)
    assert tuple(layer.ratio.shape) == (VOCAB + BUCKETS, 3)
    got = ops.convert_to_numpy(layer(ids))
    for k in range(3):
        column = kernel[:, k : k + 1].astype(np.float64)
        expected, ratios = reference(ids, (labels == k).astype(int), column, bias[k : k + 1])
        np.testing.assert_allclose(got[:, k : k + 1], expected, rtol=1e-4, atol=1e-4)
        layer_ratios = ops.convert_to_numpy(layer.ratio)[:, k]
        assert {f: float(layer_ratios[f]) for f in ratios} == pytest.approx(ratios, abs=1e-5)


def test_two_classes_keep_one_ratio_per_feature():
    layer = NaiveBayesNgrams(VOCAB, 64, outputs=2)
    layer.build((1, 4))
    assert tuple(layer.ratio.shape) == (VOCAB + 64,)
