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

**Negation and contrast** (``negation`` > 0 or ``contrast`` < 1; ids of a vocabulary built with
``data.sentences``). An n-gram whose last word is negated (:mod:`classifier.layers.
negation_scope`) counts ``-negation`` times in place of once, "not bad" reading as the opposite
of "bad", and adds a feature of its own (its hashed slot permuted, the ``N:`` n-gram of Das &
Chen 2001) for what the flip gets wrong; an n-gram whose last word stands before a contrast word
in its sentence (or, with ``opening_contrast``, in a sentence that the next one's opening "But"
turns from) counts ``contrast`` times. A feature present both ways in one review takes its
first in this order: plain, plain before a contrast, negated, negated before a contrast.

**Sentences** (``short_length`` > 0). An input of fewer token ids (a typed sentence, a phrase)
puts its features in a block of their own after the reviews' (``feature_count`` doubles): its
n-grams learn NB ratios and weights apart from those of reviews, and a negation's scope runs to
the sentence's end or a contrast word (a comma and ``negation_words`` do not end it). With
``letters``, each of its words adds its letter 3-5-grams
(:func:`~classifier.layers.letters.letter_ngrams`, hashed into the block by a table of the
vocabulary's words, :meth:`NaiveBayesNgrams.set_letters`), read as the word is: minus themselves
in a negation's scope; ``letter_weight`` scales their values against the word n-grams' before
the row is normalised.

Example:
    >>> layer = NaiveBayesNgrams(vocab_size=10, buckets=16, outputs=2)
    >>> tuple(layer(np.array([[3, 4, 5, 0]])).shape)
    (1, 2)
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from classifier.layers.letters import letter_table
from classifier.layers.negation_scope import negation_scope
from classifier.layers.ngrams import (
    BagOfNgrams,
    first_occurrences,
    ngram_features,
    sorted_features,
)


def class_feature_counts(
    batches, vocab_size: int, buckets: int, order: int, classes: int = 2, entries=None,
    features: int = 0,
) -> np.ndarray:  # fmt: skip
    """``(classes, features)``: in how many reviews of each class each feature occurs, over
    ``(token_ids (B, T), labels (B,))`` batches. For two classes the rows unpack as
    ``negative, positive`` (label 1 = positive). ``entries``: a bag's
    :meth:`~classifier.layers.ngrams.BagOfNgrams.entries`, for a bag that reads negation;
    ``features``: its ``feature_count`` where more than ``vocab_size + buckets``."""
    counts = np.zeros((classes, max(features, vocab_size + buckets)), dtype=np.int64)
    for ids, labels in batches:
        if entries is None:
            features = sorted_features(ids, vocab_size, buckets, order)
            weights = first_occurrences(features)
        else:
            features, weights = entries(ids)
        features = ops.convert_to_numpy(features)
        present = ops.convert_to_numpy(weights) != 0
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
        negation: how many times minus itself a negated n-gram counts (0: no negation scope).
        contrast: how much an n-gram before a contrast word counts (1: as any other).
        max_length: the longest review (T), which the negation scope needs.
        negation_words: the most words a negation's scope holds (0: to its clause's end).
        short_length: inputs of fewer token ids than this are read as sentences (0: none is):
            their features fill a block of their own after the reviews' (``feature_count``
            doubles), with a negation's scope to the sentence's end or a contrast word.
        letters: with ``short_length``, each word of a sentence adds up to this many letter
            3-5-grams (:func:`~classifier.layers.letters.letter_ngrams`), read as its unigram
            is (0: none); the table is set from the vocabulary by :meth:`set_letters`.
        letter_weight: with ``letters``, what a letter n-gram counts against a word n-gram's 1
            (its NB-scaled value times this, before the row is normalised): above 1, a
            sentence leans on its words' letters, which carry a word's sentiment into its
            negation and to words the phrases seldom hold.
        own_negated_letters: with ``letters`` and ``negation``, whether a negated letter n-gram
            adds a feature of its own, as a negated word n-gram does (False: it counts minus
            itself alone; shared by many words, such a feature learns the label of negated
            words in general, in the data mostly negated positives).
        concessive: with ``contrast``, the clause after a sentence's opening "although" or
            "though" counts ``contrast`` times too, as the words before a "but" do.
        opening_contrast: with ``contrast``, a sentence whose next one opens with a contrast
            word ("... . But ...", "...; however, ...") counts ``contrast`` times too.
        sentences_as_reviews: with ``short_length``, a sentence's word n-grams count in the
            reviews' block as well, read as a review's (scope: the clause): the reviews' weights,
            learnt from far more text, beside its own block's (Daumé's shared copy of features).
    """

    scale_name = "ratio"

    def __init__(
        self,
        vocab_size: int,
        buckets: int,
        outputs: int,
        order: int = 3,
        l2: float = 0.0,
        negation: float = 0.0,
        contrast: float = 1.0,
        max_length: int = 0,
        negation_words: int = 0,
        short_length: int = 0,
        letters: int = 0,
        letter_weight: float = 1.0,
        own_negated_letters: bool = True,
        concessive: bool = False,
        sentences_as_reviews: bool = False,
        opening_contrast: bool = False,
        **kwargs,
    ):
        if order not in (1, 2, 3):
            raise ValueError(f"order must be 1, 2 or 3, got {order}")
        super().__init__(vocab_size, buckets, outputs, l2=l2, **kwargs)
        self.order = order
        self.negation, self.contrast, self.max_length = negation, contrast, max_length
        self.negation_words = negation_words
        self.short_length, self.letters = short_length, letters
        self.letter_weight, self.own_negated_letters = letter_weight, own_negated_letters
        self.concessive, self.sentences_as_reviews = concessive, sentences_as_reviews
        self.opening_contrast = opening_contrast
        if self.reads_scope and max_length < 1:
            raise ValueError("negation or contrast needs max_length, the longest review")
        if letters and not short_length:
            raise ValueError("letters are read in sentences: they need short_length")
        if letter_weight <= 0 or (letter_weight != 1 and not letters):
            raise ValueError(f"letter_weight {letter_weight} weighs letters: > 0, with letters")
        if not own_negated_letters and not (letters and negation > 0):
            raise ValueError("own_negated_letters=False is of negated letters: letters, negation")
        if concessive and contrast == 1:
            raise ValueError("concessive weighs a conceded clause as contrast does: contrast < 1")
        if opening_contrast and contrast == 1:
            raise ValueError("opening_contrast weighs a sentence as contrast does: contrast < 1")
        if sentences_as_reviews and not short_length:
            raise ValueError("sentences_as_reviews reads sentences: it needs short_length")

    @property
    def feature_count(self) -> int:
        """The reviews' block of features, and with ``short_length`` the sentences' after it."""
        return super().feature_count * (2 if self.short_length else 1)

    def build(self, input_shape) -> None:
        super().build(input_shape)
        if self.letters:
            self.letter_ids = self.add_weight(
                shape=(self.vocab_size, self.letters),
                initializer="zeros",
                dtype="int32",
                trainable=False,
                name="letter_ids",
            )

    def set_letters(self, vocabulary: Sequence[str]) -> None:
        """Set each token id's letter n-gram features from the vectorizer's ``vocabulary``
        (``get_vocabulary()``: padding and OOV first); nothing for a bag without letters. A
        ValueError for a bag with letters and no vocabulary (its letters would all be 0)."""
        if self.letters and len(vocabulary) < 3:
            raise ValueError("a bag that reads letters needs the vectorizer's vocabulary")
        if self.letters:
            table = letter_table(vocabulary, self.vocab_size, self.buckets, self.letters)
            self.letter_ids.assign(table)

    @property
    def reads_scope(self) -> bool:
        """Whether the bag weighs n-grams by negation or contrast."""
        return self.negation > 0 or self.contrast != 1

    def entries(self, token_ids):
        if not self.reads_scope and not self.short_length:
            return super().entries(token_ids)
        plain, negated, before, lettered, block = self._by_position(token_ids)
        # Keys of int32 (LiteRT divides no int64): below 8 * 2 * (1e6 + 1e8), the largest
        # config's features in both blocks. Each feature's key holds, low bit first, whether it
        # stands before a contrast word, whether it is negated, and (with a letter_weight)
        # whether it is a letter n-gram.
        step = 8 if self.letter_weight != 1 else 4
        negated32, before32 = ops.cast(negated, "int32"), ops.cast(before, "int32")
        flags = before32 + (ops.cast(lettered, "int32") * 4 if step == 8 else 0)
        placed = ops.cast(self._placed(plain, block), "int32")
        keys = ops.where(plain > 0, placed * step + negated32 * 2 + flags, 0)
        if self.negation > 0:
            # numbered in int64 (31 x a slot can pass int32), then placed in its word's block
            own = ops.cast(self._placed(self._own(plain), block), "int32")
            flipped = ops.where(self._owned(negated, lettered), own * step + flags, 0)
            keys = ops.concatenate([keys, flipped], axis=1)
        keys = ops.sort(keys, axis=-1)
        features = ops.cast(keys // step, "int64")
        sign = ops.where(ops.mod(keys // 2, 2) > 0, -self.negation, 1.0)
        weight = ops.where(ops.mod(keys, 2) > 0, self.contrast, 1.0)
        if step == 8:
            weight = weight * ops.where(ops.mod(keys // 4, 2) > 0, self.letter_weight, 1.0)
        return features, first_occurrences(features) * sign * weight

    def features_by_position(self, token_ids):
        if self.negation == 0 and not self.short_length:
            return super().features_by_position(token_ids)
        plain, negated, _, lettered, block = self._by_position(token_ids)
        placed = self._placed(plain, block)
        if self.negation > 0:
            own = self._placed(self._own(plain), block)
            placed = ops.concatenate([placed, ops.where(self._owned(negated, lettered), own, 0)], 1)
        return placed

    def _owned(self, negated, lettered):
        """Where a negated feature adds its own: every one, or (``own_negated_letters``
        False) the word n-grams alone."""
        if self.own_negated_letters:
            return negated > 0
        return ops.logical_and(negated > 0, lettered == 0)

    def _by_position(self, token_ids):
        """(B, F) features by position, numbered within their block (the n-grams, then with
        ``letters`` each of a sentence's first ``short_length`` words' letter n-grams, then
        with ``sentences_as_reviews`` a sentence's n-grams again, read as a review's), 0/1
        (int64) where a real one's last word is negated, where it stands before a contrast
        word and where it is a letter n-gram; and (B, F) bool where it is in the sentences'
        block (all False without ``short_length``)."""
        ids = ops.cast(token_ids, "int64")
        words = ngram_features(ids, self.vocab_size, self.buckets, self.order)
        sentence = ops.sum(ops.cast(ids > 0, "int32"), axis=1, keepdims=True) < self.short_length
        if self.reads_scope:
            negated, before = negation_scope(
                ids,
                self.max_length,
                self.negation_words,
                concessive=self.concessive,
                opening=self.opening_contrast,
            )
            as_review = ops.cast(negated, "int64") * int(self.negation > 0)
            if self.short_length:  # a sentence's scope runs to its end or a contrast word
                whole = negation_scope(ids, self.max_length, commas=False)[0]
                negated = ops.where(sentence, whole, negated)
            negated = ops.cast(negated, "int64") * int(self.negation > 0)
            before = ops.cast(before, "int64")
        else:
            negated = before = as_review = ops.zeros_like(ids)
        flags = [
            ops.concatenate([flag[:, n:] for n in range(self.order)], axis=1)
            for flag in (negated, before)
        ]
        plain, words_before = words, flags[1]
        lettered = ops.zeros_like(plain)
        if self.letters:
            head = ids[:, : self.short_length]
            grams = ops.take(self.letter_ids, ops.cast(head, "int32"), axis=0)  # (B, S, G)
            grams = ops.where(ops.expand_dims(sentence, -1), ops.cast(grams, "int64"), 0)
            flat = (ops.shape(grams)[0], -1)
            for i, flag in enumerate((negated, before)):
                spread = ops.broadcast_to(
                    ops.expand_dims(flag[:, : self.short_length], -1), ops.shape(grams)
                )
                flags[i] = ops.concatenate([flags[i], ops.reshape(spread, flat)], axis=1)
            plain = ops.concatenate([plain, ops.reshape(grams, flat)], axis=1)
            lettered = ops.concatenate([lettered, ops.ones_like(ops.reshape(grams, flat))], axis=1)
        block = ops.broadcast_to(sentence, ops.shape(plain))
        if self.sentences_as_reviews:  # a sentence's n-grams again, in the reviews' block
            plain = ops.concatenate([plain, ops.where(sentence, words, 0)], axis=1)
            as_review = ops.concatenate([as_review[:, n:] for n in range(self.order)], axis=1)
            flags[0] = ops.concatenate([flags[0], as_review], axis=1)  # the clause's scope
            flags[1] = ops.concatenate([flags[1], words_before], axis=1)
            lettered = ops.concatenate([lettered, ops.zeros_like(words)], axis=1)
            block = ops.concatenate([block, ops.zeros_like(words, dtype="bool")], axis=1)
        flags = [ops.where(plain > 0, flag, 0) for flag in (*flags, lettered)]
        return plain, *flags, block

    def _placed(self, features, block):
        """``features`` numbered within their block, numbered in the bag: those in the
        sentences' ``block`` (B, F) after the reviews' block."""
        if not self.short_length:
            return features
        after = ops.logical_and(block, features > 0)
        return ops.where(after, features + self.vocab_size + self.buckets, features)

    def _own(self, features):
        """The ``N:`` feature of each n-gram feature: its hashed slot permuted (the unigrams'
        and the longer n-grams' by different permutations)."""
        unigram = features < self.vocab_size
        slot = ops.where(unigram, features * 31 + 17, (features - self.vocab_size) * 31 + 29)
        return self.vocab_size + ops.mod(slot, self.buckets)

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
        return {
            **super().get_config(),
            "order": self.order,
            "negation": self.negation,
            "contrast": self.contrast,
            "max_length": self.max_length,
            "negation_words": self.negation_words,
            "short_length": self.short_length,
            "letters": self.letters,
            "letter_weight": self.letter_weight,
            "own_negated_letters": self.own_negated_letters,
            "concessive": self.concessive,
            "sentences_as_reviews": self.sentences_as_reviews,
            "opening_contrast": self.opening_contrast,
        }
