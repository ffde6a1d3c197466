"""A bag of word 1-2-grams with TF-IDF weights and a linear map: logistic regression on ids.

:class:`BagOfNgrams` takes the token ids every classifier takes (0 = padding, 1 = OOV) and
computes, per review, the scikit-learn ``TfidfVectorizer(ngram_range=(1, 2), binary=True)``
representation times a weight matrix:

- features: every unigram id ``u`` (``0 < u < vocab_size``) and every pair of neighbouring
  real tokens ``(a, b)`` hashed to ``vocab_size + (a * vocab_size + b) mod buckets``;
- a feature counts once however often it occurs (binary), times its inverse document
  frequency ``idf = ln((1 + n) / (1 + df)) + 1`` (scikit-learn's smooth idf) over the n training
  reviews (:func:`document_frequencies`, set with :meth:`BagOfNgrams.set_idf`);
- the vector is L2-normalised, then multiplied by ``kernel`` (features x outputs) plus ``bias``.

No dense (B, features) vector is ever built: the ids of a review are sorted, a feature is
present where it differs from its left neighbour, and the kernel rows are gathered. Every op
is a plain ``keras.ops`` one, so the layer exports to LiteRT like the attention variants.

Example:
    >>> layer = BagOfNgrams(vocab_size=10, buckets=16, outputs=2)
    >>> ids = np.array([[3, 4, 3, 0]])
    >>> ops.convert_to_numpy(sorted_features(ids, 10, 16)).tolist()  # (3 4): 10 + 34 % 16; (4 3): 10 + 43 % 16
    [[0, 0, 3, 3, 4, 12, 21]]
    >>> tuple(layer(ids).shape)
    (1, 2)
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops


def ngram_features(token_ids, vocab_size: int, buckets: int, order: int = 2):
    """(B, 2T - 1) feature ids of each review: its T unigrams, then its T - 1 hashed bigrams
    (``order`` 3: then its T - 2 hashed trigrams, in the same buckets); 0 where there is none
    (padding, or an n-gram that touches padding).

    An n-gram ``(a, b)`` is ``vocab_size + (a * vocab_size + b) mod buckets``, and ``(a, b, c)``
    is ``vocab_size + ((a * vocab_size + b) * vocab_size + c) mod buckets``."""
    ids = ops.cast(token_ids, "int64")
    parts, code, real = [ids], ids, ops.greater(ids, 0)
    for n in range(2, order + 1):
        # code/real of the n-grams ending at each position from n - 1 on
        code = code[:, :-1] * vocab_size + ids[:, n - 1 :]
        real = ops.logical_and(real[:, :-1], ops.greater(ids[:, n - 1 :], 0))
        hashed = vocab_size + ops.mod(code, buckets)
        parts.append(ops.where(real, hashed, ops.zeros_like(hashed)))
    return ops.concatenate(parts, axis=1)


def sorted_features(token_ids, vocab_size: int, buckets: int, order: int = 2):
    """:func:`ngram_features`, sorted ascending per review (padding zeros first)."""
    return ops.sort(ngram_features(token_ids, vocab_size, buckets, order), axis=-1)


def first_occurrences(features):
    """(B, F) 1.0 where a sorted feature is real and differs from its left neighbour, else 0."""
    previous = ops.pad(features[:, :-1], [[0, 0], [1, 0]])  # a 0 before the first
    keep = ops.logical_and(ops.not_equal(features, previous), ops.greater(features, 0))
    return ops.cast(keep, "float32")


def document_frequencies(id_batches, vocab_size: int, buckets: int) -> tuple[np.ndarray, int]:
    """In how many reviews each feature occurs, over batches of (B, T) token ids; and the number
    of reviews."""
    counts = np.zeros(vocab_size + buckets, dtype=np.int64)
    reviews = 0
    for ids in id_batches:
        features = sorted_features(ids, vocab_size, buckets)
        present = ops.convert_to_numpy(first_occurrences(features)) > 0
        counts += np.bincount(ops.convert_to_numpy(features)[present], minlength=counts.size)
        reviews += int(present.shape[0])
    return counts, reviews


def smooth_idf(frequencies: np.ndarray, reviews: int) -> np.ndarray:
    """scikit-learn's ``ln((1 + n) / (1 + df)) + 1``, 0 for feature 0 (padding).

    Example:
        >>> [round(float(x), 3) for x in smooth_idf(np.array([0, 1, 3]), 3)]
        [0.0, 1.693, 1.0]
    """
    idf = np.log((1.0 + reviews) / (1.0 + frequencies)) + 1.0
    idf[0] = 0.0
    return idf.astype(np.float32)


@keras.saving.register_keras_serializable(package="classifier")
class SquaredNorm(keras.regularizers.Regularizer):
    """``l2 * sum(x ** 2)``, Keras' ``L2`` regularizer, whose gradient ``2 * l2 * x`` is one
    pass over ``x``. Differentiating Keras' formula takes three (the upstream broadcast to
    ``x``'s shape, then two products), and over a bag's kernel of millions of rows, at every
    step, that was a quarter of an `nbow` step of 256 reviews (about 7 of 28 ms on 2 cores).
    The same value and, bit for bit, the same gradient: multiplying by 2 is exact.

    Example:
        >>> x = keras.Variable([[1.0, -2.0]])
        >>> float(SquaredNorm(0.5)(x))
        2.5
    """

    def __init__(self, l2: float):
        self.l2 = float(l2)

    def __call__(self, x):
        l2 = self.l2

        @ops.custom_gradient
        def penalty(x):
            def gradient(*args, upstream=None):
                if upstream is None:  # TensorFlow passes it positionally
                    (upstream,) = args
                return x * (2.0 * l2 * upstream)

            return l2 * ops.sum(ops.square(x)), gradient

        return penalty(ops.cast(x, x.dtype))  # a variable read as a tensor (no copy)

    def get_config(self) -> dict:
        return {"l2": self.l2}


@keras.saving.register_keras_serializable(package="classifier")
class BagOfNgrams(keras.layers.Layer):
    """Token ids (B, T) to ``normalize(tfidf(ids)) @ kernel + bias`` (B, outputs).

    Args:
        vocab_size: number of token ids (the vectorizer's vocabulary, padding and OOV included).
        buckets: number of hashed bigram features.
        outputs: columns of the linear map.
        l2: L2 penalty on the kernel (added to the loss, as logistic regression's ``1 / 2Cn``).
    """

    def __init__(self, vocab_size: int, buckets: int, outputs: int, l2: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.buckets, self.outputs, self.l2 = vocab_size, buckets, outputs, l2

    #: The longest n-gram, and the name of the per-feature scale (a subclass changes them).
    order = 2
    scale_name = "idf"

    @property
    def feature_count(self) -> int:
        """How many features the bag numbers (rows of its kernel): the unigrams, then the
        hashed n-grams."""
        return self.vocab_size + self.buckets

    def build(self, input_shape) -> None:
        features = self.feature_count
        self.scale = self.add_weight(
            shape=self.scale_shape(features),
            initializer="zeros",
            trainable=False,
            name=self.scale_name,
        )
        self.kernel = self.add_weight(
            shape=(features, self.outputs),
            initializer="zeros",  # a logistic regression starts at 0; the problem is convex
            regularizer=SquaredNorm(self.l2) if self.l2 else None,
            name="kernel",
        )
        self.bias = self.add_weight(shape=(self.outputs,), initializer="zeros", name="bias")

    def scale_shape(self, features: int) -> tuple[int, ...]:
        """The shape of the per-feature scale: one value per feature (a subclass may give one
        per feature and output)."""
        return (features,)

    @property
    def idf(self):
        """The inverse document frequency of each feature (0 for padding)."""
        return self.scale

    def set_idf(self, frequencies: np.ndarray, reviews: int) -> None:
        """Set the idf weights from document frequencies over ``reviews`` training reviews."""
        self.scale.assign(smooth_idf(frequencies, reviews))

    def feature_values(self, token_ids):
        """``(features (B, F), values (B, F))``: sorted feature ids and their normalised
        scaled value (TF-IDF here; 0 for repeats and padding); what :meth:`call` multiplies by
        the kernel. A scale of one value per feature and output gives values (B, F, outputs),
        each output's normalised on its own."""
        features, weights = self.entries(token_ids)
        return features, self.values_of(features, weights)

    def entries(self, token_ids):
        """``(features (B, F), weights (B, F))``: sorted feature ids, and the weight each
        review's first occurrence of a feature carries before scaling (1.0 here; 0 for repeats
        and padding). A subclass may weigh and sign them (:class:`~classifier.layers.nb_ngrams.
        NaiveBayesNgrams` with ``negation``)."""
        features = sorted_features(token_ids, self.vocab_size, self.buckets, self.order)
        return features, first_occurrences(features)

    def features_by_position(self, token_ids):
        """(B, F) feature ids in order of position (:func:`ngram_features`), for explanations."""
        return ngram_features(token_ids, self.vocab_size, self.buckets, self.order)

    def values_of(self, features, present):
        """The normalised scaled values of ``features`` (B, F) of :meth:`entries` weighted by
        its ``present`` (B, F) weights: what :meth:`feature_values` gives."""
        scales = ops.take(self.scale, features, axis=0)  # (B, F) or (B, F, outputs)
        if len(self.scale.shape) == 2:
            present = ops.expand_dims(present, -1)
        values = present * scales
        norm = ops.sqrt(ops.sum(ops.square(values), axis=1, keepdims=True))
        return values / ops.maximum(norm, 1e-12)

    def call(self, token_ids):
        features, values = self.feature_values(token_ids)
        rows = ops.take(self.kernel, features, axis=0)  # (B, F, outputs)
        if len(self.scale.shape) == 1:
            values = ops.expand_dims(values, -1)
        return ops.sum(rows * values, axis=1) + self.bias

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.outputs)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "buckets": self.buckets,
            "outputs": self.outputs,
            "l2": self.l2,
        }
