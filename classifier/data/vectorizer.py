"""Review text to token ids in TensorFlow: the standardization and the vectorizer every model
reads its input through (:class:`ReviewVectorizer`); ``classifier.data.tokenizer`` gives the same
ids without TensorFlow. Reviews are standardized by :func:`standardize_review`, or with
``data.sentences`` by :func:`standardize_sentences`, which keeps each sentence's end as a ``.``
token and each comma as ``,`` (:mod:`classifier.config.negation`), and with
``data.negation_phrases`` too by :func:`standardize_negation_phrases` ("far from" reads as "far
not"); with ``data.spelling`` a short input's misspelt words read as known ones
(:mod:`classifier.data.spelling`).

Example:
    >>> v = ReviewVectorizer(10, 3, "head", vocabulary=["not", "bad"])
    >>> v(tf.constant(["Not bad, not BAD at all!"])).numpy().tolist()
    [[2, 3, 2]]
"""

from __future__ import annotations

import re
import string
from typing import TYPE_CHECKING

import keras
import tensorflow as tf

from classifier.config.negation import (
    CLAUSE_END,
    FIRST_ID,
    NEGATION_PHRASE_PATTERNS,
    NEGATION_PHRASE_READING,
    SENTENCE_END,
    reserved_words,
)
from classifier.data.spelling import EDIT_LETTERS, MAX_LETTERS, SPELLED_WORD, check_spelling
from classifier.data.tokenizer import OOV_ID

if TYPE_CHECKING:
    from classifier.config.schema import DataConfig

_BREAK_TAG = r"<br\s*/?>"
_PUNCTUATION = "[" + re.escape(string.punctuation.replace("'", "")) + "]"
# Control characters and Unicode line/paragraph separators (IMDB has cp1252 leftovers such as
# \x85 and \x96): Keras saves the vocabulary one token per line and reads it back with
# str.splitlines(), so a token holding one of these would not survive a .keras round trip.
_CONTROL = r"[\x00-\x1f\x7f-\x9f\x{2028}\x{2029}]"
# A run of sentence-end marks, the spaces between them included, becomes one " . ".
_SENTENCE_END_RUN = r"[.!?;:][ .!?;:]*"
_COMMA_RUN = r",[ ,]*"  # then a run of commas, one " , "
_OTHER_PUNCTUATION = (
    "[" + re.escape(string.punctuation.translate(str.maketrans("", "", "'.,"))) + "]"
)
# How many strings _edits makes of a word: deleted, swapped, inserted and replaced letters at
# each of its positions after the first (MAX_LETTERS of them, its end included).
EDITS = MAX_LETTERS * (2 + 2 * len(EDIT_LETTERS))


@keras.saving.register_keras_serializable(package="classifier")
def standardize_review(text: tf.Tensor) -> tf.Tensor:
    """Lowercase, turn control characters and ``<br />`` into spaces, drop apostrophes and
    other punctuation.

    Example:
        >>> standardize_review(tf.constant("Don't miss it!<br />Great."))
        <tf.Tensor: ... numpy=b'dont miss it  great '>
    """
    text = tf.strings.lower(text)
    text = tf.strings.regex_replace(text, _CONTROL, " ")
    text = tf.strings.regex_replace(text, _BREAK_TAG, " ")
    text = tf.strings.regex_replace(text, "'", "")
    return tf.strings.regex_replace(text, _PUNCTUATION, " ")


@keras.saving.register_keras_serializable(package="classifier")
def standardize_sentences(text: tf.Tensor) -> tf.Tensor:
    """:func:`standardize_review`, but ``<br />`` and each run of ``. ! ? ; :`` (spaces between
    them included) become one sentence end, `` . ``, then each run of commas one `` , ``, which
    stay words of their own.

    Example:
        >>> standardize_sentences(tf.constant("Not bad... at ALL!<br />Great, really"))
        <tf.Tensor: ... numpy=b'not bad . at all . great , really'>
    """
    end = f" {SENTENCE_END} "
    text = tf.strings.lower(text)
    text = tf.strings.regex_replace(text, _CONTROL, " ")
    text = tf.strings.regex_replace(text, _BREAK_TAG, end)
    text = tf.strings.regex_replace(text, _SENTENCE_END_RUN, end)
    text = tf.strings.regex_replace(text, _COMMA_RUN, f" {CLAUSE_END} ")
    text = tf.strings.regex_replace(text, "'", "")
    return tf.strings.regex_replace(text, _OTHER_PUNCTUATION, " ")


@keras.saving.register_keras_serializable(package="classifier")
def standardize_negation_phrases(text: tf.Tensor) -> tf.Tensor:
    """:func:`standardize_sentences`, then the second word of each two-word negation
    (:data:`~classifier.config.negation.NEGATION_PHRASES`) becomes ``not``, so that a negation's
    scope follows it; the words keep their number and places.

    Example:
        >>> standardize_negation_phrases(tf.constant("Far from perfect, anything but dull"))
        <tf.Tensor: ... numpy=b'far not perfect , anything not dull'>
    """
    text = standardize_sentences(text)
    for pattern in NEGATION_PHRASE_PATTERNS:
        text = tf.strings.regex_replace(text, pattern, NEGATION_PHRASE_READING)
    return text


@keras.saving.register_keras_serializable(package="classifier")
class ReviewVectorizer(keras.layers.Layer):
    """Raw review strings to fixed-length token ids, keeping the head or the tail of long reviews.

    Wraps ``keras.layers.TextVectorization`` (vocabulary, :func:`standardize_review`) and cuts
    each review to ``sequence_length`` ids: ``truncate="head"`` keeps the first ids,
    ``"tail"`` the last ones (as Keras' pre-tokenized IMDB does). Id 0 is padding, 1 is
    out-of-vocabulary; padding always goes at the end. With ``sentences`` it standardizes with
    :func:`standardize_sentences`, and ``adapt`` puts ``reserved_words()`` at ids 2, 3, ...
    (``classifier.config.negation.scope_ids``), the adapted words after them; with
    ``negation_phrases`` as well, by :func:`standardize_negation_phrases`. With
    ``spelling``, an input of fewer words reads a misspelt word as the vocabulary word it most
    likely is (:mod:`classifier.data.spelling`).

    Args:
        vocab_size: vocabulary size, padding and OOV included.
        sequence_length: number of ids per review (T).
        truncate: ``"head"`` or ``"tail"``.
        vocabulary: optional word list (without padding and OOV) instead of ``adapt``, taken
            as it is.
        sentences: keep sentence ends as ``.`` and the reserved words at fixed ids.
        spelling: inputs of fewer words than this have their out-of-vocabulary words of
            letters corrected (:func:`~classifier.data.spelling.nearest`); 0: none are. At
            most ``sequence_length``.
        negation_phrases: with ``sentences``, read "far from", "anything but" and "nowhere
            near" as "far not", "anything not", "nowhere not".

    Call arguments:
        texts: string tensor of shape (B,).

    Returns:
        int64 tensor of shape (B, T).

    Example:
        >>> v = ReviewVectorizer(100, 4, "tail")
        >>> v.adapt(tf.data.Dataset.from_tensor_slices(["a b c d e f"]).batch(1))
        >>> v(tf.constant(["a b c d e f"])).shape
        TensorShape([1, 4])
        >>> s = ReviewVectorizer(100, 4, "head", sentences=True)
        >>> s.adapt(tf.data.Dataset.from_tensor_slices(["Not bad, bad!"]).batch(1))
        >>> s.get_vocabulary()[:5], s(tf.constant(["Not bad, bad!"])).numpy().tolist()
        (['', '[UNK]', '.', ',', 'not'], [[4, 40, 3, 40]])
        >>> t = ReviewVectorizer(10, 4, vocabulary=["awful", "film"], spelling=4)
        >>> t(tf.constant(["Aweful film", "an aweful film , aweful"])).numpy().tolist()
        [[2, 3, 0, 0], [1, 1, 3, 1]]
    """

    def __init__(
        self,
        vocab_size: int,
        sequence_length: int,
        truncate: str = "tail",
        vocabulary: list[str] | None = None,
        sentences: bool = False,
        spelling: int = 0,
        negation_phrases: bool = False,
        **kwargs,
    ):
        # Strings in, ids out: no float math, so no mixed-precision policy (as saved, too).
        super().__init__(**{"dtype": "float32", **kwargs})
        if truncate not in ("head", "tail"):
            raise ValueError(f"truncate must be 'head' or 'tail', got {truncate!r}")
        if sentences and vocab_size < (least := FIRST_ID + len(reserved_words())):
            raise ValueError(
                f"vocab_size must be at least {least} with sentences, got {vocab_size}"
            )
        if negation_phrases and not sentences:
            raise ValueError("negation_phrases standardizes sentences: set sentences too")
        check_spelling(spelling, sequence_length)
        self.vocab_size = vocab_size
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.sentences = sentences
        self.spelling = spelling
        self.negation_phrases = negation_phrases
        if negation_phrases:
            self.standardize = standardize_negation_phrases
        else:
            self.standardize = standardize_sentences if sentences else standardize_review
        self.text_vectorization = keras.layers.TextVectorization(
            max_tokens=vocab_size,
            standardize=self.standardize,
            output_mode="int",
            name="text_vectorization",
        )
        if vocabulary is not None:
            # set_vocabulary fills the lookup table now; the constructor argument would leave
            # it uninitialised when the layer is first called symbolically.
            self.text_vectorization.set_vocabulary(vocabulary)

    @classmethod
    def for_data(cls, data: DataConfig, vocabulary: list[str] | None = None) -> ReviewVectorizer:
        """The vectorizer that ``data`` (a ``DataConfig``) describes, with ``vocabulary`` (the
        words after padding and OOV) or none yet (``adapt`` then).

        Example:
            >>> from classifier.config.schema import DataConfig
            >>> ReviewVectorizer.for_data(DataConfig(sequence_length=4), ["good"]).sequence_length
            4
        """
        return cls(
            data.vocab_size,
            data.sequence_length,
            data.truncate,
            vocabulary,
            sentences=data.sentences,
            spelling=data.spelling,
            negation_phrases=data.negation_phrases,
        )

    def adapt(self, texts: tf.data.Dataset) -> None:
        """Build the vocabulary from a dataset of string batches (with ``sentences``, the
        reserved words first, then the adapted words without them, cut to ``vocab_size``:
        ``set_vocabulary`` takes the words without padding and OOV)."""
        self.text_vectorization.adapt(texts)
        if self.sentences:
            reserved = reserved_words()
            skip = set(reserved)
            words = reserved + [w for w in self.get_vocabulary()[FIRST_ID:] if w not in skip]
            self.text_vectorization.set_vocabulary(words[: self.vocab_size - FIRST_ID])

    def get_vocabulary(self) -> list[str]:
        """The vocabulary, index = token id ('' is padding, '[UNK]' is OOV)."""
        return [str(token) for token in self.text_vectorization.get_vocabulary()]

    def build(self, input_shape=None):
        # The lookup table is the only state; it is filled by ``adapt`` or ``vocabulary``.
        self.built = True

    def call(self, texts):
        ids = self.text_vectorization(texts)
        ragged = tf.RaggedTensor.from_tensor(ids, padding=0)  # no word's id is 0
        if self.spelling:
            ragged = self._spelt(texts, ragged)
        length = self.sequence_length
        kept = ragged[:, :length] if self.truncate == "head" else ragged[:, -length:]
        return kept.to_tensor(default_value=0, shape=[None, length])

    def _spelt(self, texts, ragged):
        """``ragged`` ids (B, None) with each misspelt word of a short input corrected: the
        lowest id among the known words within one edit of it, as
        :func:`~classifier.data.spelling.nearest` computes. Only the short inputs are split
        again (a review's row of ids is as long as its words)."""
        rows = tf.where(ragged.row_lengths() < self.spelling)[:, 0]
        # TextVectorization's split: the same words as the short rows' ids
        words = tf.strings.split(self.standardize(tf.gather(texts, rows))).flat_values
        short = tf.gather(ragged, rows)
        # each short word's place among all the ids: its row's start plus its place in the row
        within = tf.range(tf.size(words, tf.int64)) - tf.gather(
            short.row_starts(), short.value_rowids()
        )
        places = tf.gather(ragged.row_starts(), tf.gather(rows, short.value_rowids())) + within
        unknown = short.flat_values == OOV_ID
        spelt = tf.strings.regex_full_match(words, SPELLED_WORD)
        where = tf.where(unknown & spelt)
        edits = _edits(tf.gather_nd(words, where))  # (N, EDITS): one word each
        near = tf.reshape(self.text_vectorization(tf.reshape(edits, [-1])), [-1, EDITS])
        none = tf.constant(self.vocab_size, near.dtype)
        best = tf.reduce_min(tf.where(near > OOV_ID, near, none), axis=1)
        best = tf.where(best == none, tf.constant(OOV_ID, near.dtype), best)
        ids = tf.tensor_scatter_nd_update(
            ragged.flat_values, tf.gather_nd(places, where)[:, None], best
        )
        return ragged.with_flat_values(ids)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.sequence_length)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            sequence_length=self.sequence_length,
            truncate=self.truncate,
            sentences=self.sentences,
            spelling=self.spelling,
            negation_phrases=self.negation_phrases,
        )
        return config


def _edits(words: tf.Tensor) -> tf.Tensor:
    """(N, EDITS) strings: each of the (N,) words of at most ``MAX_LETTERS`` letters within one
    edit that keeps its first letter (a letter deleted, inserted or replaced, two neighbours
    swapped), as :func:`~classifier.data.spelling.edits` gives them, with repeats and the word
    itself. Edits at a position past a word's end are edits at its end, or the word."""
    width = MAX_LETTERS + 1
    end = tf.strings.length(words)[:, None]
    at = tf.minimum(tf.range(1, width)[None, :], end)  # (N, width - 1): positions 1 to the end
    after, second = tf.minimum(at + 1, end), tf.minimum(at + 2, end)
    both = tf.broadcast_to(words[:, None], tf.shape(at))

    def piece(start, size):
        return tf.strings.substr(both, start, tf.broadcast_to(size, tf.shape(start)))

    head, rest, tail = piece(tf.zeros_like(at), at), piece(at, width), piece(after, width)
    swapped = head + piece(after, 1) + piece(at, 1) + piece(second, width)
    letters = tf.constant([bytes((letter,)) for letter in EDIT_LETTERS])[None, None, :]
    inserted = head[..., None] + letters + rest[..., None]
    replaced = head[..., None] + letters + tail[..., None]
    rows = (tf.shape(words)[0], -1)
    return tf.concat(
        [head + tail, swapped, tf.reshape(inserted, rows), tf.reshape(replaced, rows)], axis=1
    )
