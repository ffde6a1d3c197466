"""Binary word n-grams weighted by their Naive-Bayes log-count ratio, then a linear map: NBSVM
with a logistic regression (Wang & Manning 2012; trigrams as Mesnil et al. 2014).

:class:`NaiveBayesNgrams` takes the token ids every classifier takes (0 = padding, 1 = OOV):

- features: unigrams, hashed bigrams and (``order`` 3) hashed trigrams, as
  :func:`~classifier.layers.ngrams.ngram_features` numbers them; a feature counts once however
  often it occurs (binary);
- each present feature is scaled by its log-count ratio ``r = log((p / |p|_1) / (q / |q|_1))``,
  with ``p = alpha + `` the number of positive training reviews holding it and ``q`` the same
  over the negative ones (:func:`log_count_ratios`, set with :meth:`NaiveBayesNgrams.set_ratios`);
- the scaled vector is L2-normalised, multiplied by ``kernel`` (features x outputs), plus ``bias``.

With more than two classes (``outputs`` K > 2) each class k has its own ratios, of class k
against the rest (:func:`one_vs_rest_ratios`): ``scale`` is (features, K), and logit k is
``normalize(r_k * binary(ngrams)) . kernel[:, k] + bias[k]``.

The ratios are learnt from the training reviews' labels before training (the ``prepare`` step
of the variant), never from validation or test reviews. Everything else is
:class:`~classifier.layers.ngrams.BagOfNgrams`'s: no dense (B, features) vector is built.

Example:
    >>> layer = NaiveBayesNgrams(vocab_size=10, buckets=16, outputs=2)
    >>> tuple(layer(np.array([[3, 4, 5, 0]])).shape)
    (1, 2)
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from classifier.layers.ngrams import BagOfNgrams, first_occurrences, sorted_features


def class_feature_counts(
    batches, vocab_size: int, buckets: int, order: int, classes: int = 2
) -> np.ndarray:
    """``(classes, features)``: in how many reviews of each class each feature occurs, over
    ``(token_ids (B, T), labels (B,))`` batches. For two classes the rows unpack as
    ``negative, positive`` (label 1 = positive)."""
    counts = np.zeros((classes, vocab_size + buckets), dtype=np.int64)
    for ids, labels in batches:
        features = ops.convert_to_numpy(sorted_features(ids, vocab_size, buckets, order))
        present = ops.convert_to_numpy(first_occurrences(features)) > 0
        rows = np.broadcast_to(np.asarray(labels).reshape(-1, 1), features.shape)
        np.add.at(counts, (rows[present], features[present]), 1)
    return counts


def one_vs_rest_ratios(counts: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """``(features, classes)``: column k is :func:`log_count_ratios` of class k against all the
    other classes together (Wang & Manning's NBSVM for several classes).

    Example:
        >>> counts = np.array([[0, 3, 0, 0], [0, 0, 3, 0], [0, 0, 0, 3]])
        >>> [round(float(r), 3) for r in one_vs_rest_ratios(counts)[1]]  # only in class 0
        [1.743, -1.03, -1.03]
    """
    total = counts.sum(axis=0)
    return np.stack(
        [log_count_ratios(total - counts[k], counts[k], alpha) for k in range(len(counts))],
        axis=1,
    )


def log_count_ratios(negative: np.ndarray, positive: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """``r = log((p / |p|_1) / (q / |q|_1))`` with ``p = alpha + positive``, ``q = alpha +
    negative``; 0 for feature 0 (padding).

    Example:
        >>> [round(float(x), 3) for x in log_count_ratios(np.array([0, 3, 0]), np.array([0, 0, 3]))]
        [0.0, -1.386, 1.386]
    """
    p = alpha + positive.astype(np.float64)
    q = alpha + negative.astype(np.float64)
    ratios = np.log((p / p.sum()) / (q / q.sum()))
    ratios[0] = 0.0
    return ratios.astype(np.float32)


@keras.saving.register_keras_serializable(package="classifier")
class NaiveBayesNgrams(BagOfNgrams):
    """Token ids (B, T) to ``normalize(r * binary(ngrams(ids))) @ kernel + bias`` (B, outputs):
    :class:`BagOfNgrams` with log-count ratios in place of idf weights, and trigrams.

    Args:
        vocab_size: number of token ids (the vectorizer's vocabulary, padding and OOV included).
        buckets: number of hashed n-gram features (bigrams and trigrams share them).
        outputs: columns of the linear map.
        order: the longest n-gram (1, 2 or 3).
        l2: L2 penalty on the kernel (added to the loss, as logistic regression's ``1 / 2Cn``).
    """

    scale_name = "ratio"

    def __init__(
        self, vocab_size: int, buckets: int, outputs: int, order: int = 3, l2: float = 0.0, **kwargs
    ):
        if order not in (1, 2, 3):
            raise ValueError(f"order must be 1, 2 or 3, got {order}")
        super().__init__(vocab_size, buckets, outputs, l2=l2, **kwargs)
        self.order = order

    def scale_shape(self, features: int) -> tuple[int, ...]:
        return (features,) if self.outputs <= 2 else (features, self.outputs)

    @property
    def ratio(self):
        """The log-count ratio of each feature (0 for padding): (features,) for two classes,
        (features, outputs) one-vs-rest for more."""
        return self.scale

    def set_ratios(self, *counts: np.ndarray, alpha: float = 1.0) -> None:
        """Set the log-count ratios from per-class document frequencies of the training
        reviews, one array per class (two classes: ``negative, positive``)."""
        if self.outputs > 2:
            self.scale.assign(one_vs_rest_ratios(np.stack(counts), alpha))
        else:
            negative, positive = counts
            self.scale.assign(log_count_ratios(negative, positive, alpha))

    def get_config(self) -> dict:
        return {**super().get_config(), "order": self.order}
