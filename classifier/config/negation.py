"""The words that open and close a negation's scope, and the token ids they have in a
vocabulary built with ``data.sentences``.

With ``data.sentences: true`` the vectorizer keeps each sentence's end as a token of its own,
:data:`SENTENCE_END` (``.``, for ``. ! ? ; :`` and ``<br />``), and puts the scope words at fixed
ids right after padding (0) and out-of-vocabulary (1): the end at 2, then :data:`NEGATIONS`,
then :data:`CONTRASTS`, then the other words by frequency. A bag of n-grams with
``model.negation`` finds them by id alone (:func:`scope_ids`), in TensorFlow and in NumPy.

The words are as standardization leaves them (lower case, apostrophes dropped: ``don't`` is
``dont``). A negation's scope runs from the word after it to the sentence's end or a contrast
word (Das & Chen 2001; Pang et al. 2002); words before a contrast word in their sentence are
what the contrast turns away from.

Example:
    >>> scope_ids()
    ScopeIds(end=2, negations=(3, 31), contrasts=(31, 38))
    >>> reserved_words()[:4]
    ['.', 'not', 'no', 'never']
"""

from __future__ import annotations

from typing import NamedTuple

#: The token a sentence's end becomes.
SENTENCE_END = "."

#: Words that open a negation's scope.
NEGATIONS = (
    "not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "hardly", "without",
    "cannot", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "cant", "couldnt",
    "wont", "wouldnt", "shouldnt", "havent", "hasnt", "hadnt", "aint", "mustnt",
)  # fmt: skip

#: Words that close a negation's scope and turn a sentence away from what came before them.
CONTRASTS = ("but", "however", "although", "though", "yet", "whereas", "except")

#: The first id after padding (0) and out-of-vocabulary (1).
FIRST_ID = 2


class ScopeIds(NamedTuple):
    """The sentence end's id, and the id ranges ``[start, stop)`` of negations and contrasts."""

    end: int
    negations: tuple[int, int]
    contrasts: tuple[int, int]


def reserved_words() -> list[str]:
    """The words at ids 2, 3, ... of a vocabulary built with ``data.sentences``, in order."""
    return [SENTENCE_END, *NEGATIONS, *CONTRASTS]


def scope_ids() -> ScopeIds:
    """Where :func:`reserved_words` sit in such a vocabulary."""
    negations = FIRST_ID + 1
    contrasts = negations + len(NEGATIONS)
    return ScopeIds(FIRST_ID, (negations, contrasts), (contrasts, contrasts + len(CONTRASTS)))
