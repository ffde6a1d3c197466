"""A misspelt word read as the word it most likely is: the vectorizer's ``spelling`` rule.

In an input of fewer than ``data.spelling`` words (a typed sentence, a treebank phrase), a word
of :data:`MIN_LETTERS` to :data:`MAX_LETTERS` letters ``a-z`` that is not in the vocabulary
reads as the most frequent vocabulary word (the lowest id) one edit away: one letter deleted,
inserted or replaced, or two neighbouring letters swapped (Damerau's four single errors; the
candidates of Norvig's spelling corrector, with its prior of word frequency), the first letter
kept. A word with no such neighbour stays out of vocabulary, and longer inputs (reviews) keep
their ids: a review has room to say a thing twice, a sentence hangs on each word.

The first letter is kept because people seldom mistype it (Pollock and Zamora 1984 found it
wrong in about 7% of misspellings), while a rare real word the vocabulary lacks is often one
first-letter edit from a frequent one: edits anywhere read SST-2's "knot" as "not", "hastier" as
"nastier" and "tweak" as "weak" (docs/results.md, "Misspelt words").

This module is the rule in plain Python (the tokenizer's, which serves without TensorFlow);
``ReviewVectorizer`` computes the same candidates with TensorFlow's string ops, and tests check
that both give the same ids.

Example:
    >>> ids = {b"wonderful": 5, b"wonder": 9, b"awful": 7}
    >>> nearest(b"wonedrful", ids), nearest(b"awfull", ids), nearest(b"zzzzz", ids)
    (5, 7, None)
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MIN_LETTERS = 4  # shorter words have too many neighbours to guess among ("bda": bad, bud, ...)
MAX_LETTERS = 20  # the width of the candidates TensorFlow makes; longer words are left alone
EDIT_LETTERS = b"abcdefghijklmnopqrstuvwxyz"
SPELLED_WORD = f"[a-z]{{{MIN_LETTERS},{MAX_LETTERS}}}"  # a word the rule corrects (RE2 and re)

_SPELLED_WORD = re.compile(SPELLED_WORD.encode("ascii"))


def check_spelling(spelling: int, sequence_length: int) -> None:
    """A ValueError unless ``spelling`` (a count of words) is 0 to ``sequence_length``: the
    tokenizer and the vectorizer count a short input's words among the ids they keep.

    Example:
        >>> check_spelling(300, 256)
        Traceback (most recent call last):
        ValueError: spelling must be 0 to sequence_length 256, got 300
    """
    if not 0 <= spelling <= sequence_length:
        raise ValueError(f"spelling must be 0 to sequence_length {sequence_length}, got {spelling}")


def edits(word: bytes) -> set[bytes]:
    """Every string within one edit of ``word`` that keeps its first letter: a letter deleted,
    a letter of ``a-z`` inserted or put in place of one (itself included), or two neighbouring
    letters swapped.

    Example:
        >>> sorted(edits(b"ab"))[:4], b"good" in edits(b"godo"), b"not" in edits(b"knot")
        ([b'a', b'aa', b'aab', b'ab'], True, False)
    """
    found = set()
    for i in range(1, len(word) + 1):
        head, rest = word[:i], word[i:]
        if rest:
            found.add(head + rest[1:])
        if len(rest) > 1:
            found.add(head + rest[1:2] + rest[:1] + rest[2:])
        for letter in EDIT_LETTERS:
            found.add(head + bytes((letter,)) + rest)
            if rest:
                found.add(head + bytes((letter,)) + rest[1:])
    return found


def nearest(word: bytes, ids: Mapping[bytes, int]) -> int | None:
    """The lowest id of the vocabulary words (``ids``: word to id) within one edit of ``word``
    (:func:`edits`) where ``word`` is one the rule corrects (:data:`SPELLED_WORD`), else None.
    Padding and OOV are never near: an edit of a word of letters is letters.

    Example:
        >>> nearest(b"godo", {b"good": 12, b"god": 40}), nearest(b"bda", {b"bad": 9})
        (12, None)
    """
    if not _SPELLED_WORD.fullmatch(word):
        return None
    return min(
        (found for near in edits(word) if (found := ids.get(near)) is not None), default=None
    )
