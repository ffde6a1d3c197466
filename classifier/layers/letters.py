"""A word's letter n-grams, hashed into a bag's features: what ``nbow`` reads of a sentence's
words beside the words themselves (:class:`~classifier.layers.nb_ngrams.NaiveBayesNgrams`,
``letters``), so that a word's other forms ("terribly", "terrible") share what each taught.

Example:
    >>> letter_ngrams("bad")[:3]
    ['<ba', 'bad', 'ad>']
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np


def letter_ngrams(word: str) -> list[str]:
    """A word's letter 3-, 4- and 5-grams with its edges marked (fastText's ``<word>``), the
    3-grams first: a typo or another form of the word keeps most of them.

    Example:
        >>> letter_ngrams("bad")
        ['<ba', 'bad', 'ad>', '<bad', 'bad>', '<bad>']
    """
    edged = f"<{word}>"
    return [edged[i : i + n] for n in (3, 4, 5) for i in range(len(edged) - n + 1)]


def letter_table(
    vocabulary: Sequence[str], vocab_size: int, buckets: int, width: int
) -> np.ndarray:
    """(vocab_size, width) int32: each token id's first ``width`` letter n-grams
    (:func:`letter_ngrams`) as hashed features, ``vocab_size + crc32(gram) mod buckets``; 0
    past a word's last, and for padding, OOV and tokens without a letter or digit.

    Example:
        >>> letter_table(["", "[UNK]", ".", "bad"], 4, 100, 2).tolist()
        [[0, 0], [0, 0], [0, 0], [73, 75]]
    """
    table = np.zeros((vocab_size, width), dtype=np.int32)
    for index, word in enumerate(list(vocabulary)[2:vocab_size], 2):
        if any(character.isalnum() for character in word):
            grams = letter_ngrams(word)[:width]
            hashed = [vocab_size + zlib.crc32(gram.encode()) % buckets for gram in grams]
            table[index, : len(hashed)] = hashed
    return table
