"""The words that open and close a negation's scope, and the token ids they have in a
vocabulary built with ``data.sentences``.

With ``data.sentences: true`` the vectorizer keeps each sentence's end as a token of its own,
:data:`SENTENCE_END` (``.``, for ``. ! ? ; :`` and ``<br />``), and each clause's,
:data:`CLAUSE_END` (``,``), and puts the scope words at fixed ids right after padding (0) and
out-of-vocabulary (1): the sentence end at 2, the comma at 3, then :data:`NEGATIONS`, then
:data:`CONTRASTS`, then the other words by frequency. A bag of n-grams with ``model.negation``
finds them by id alone (:func:`scope_ids`), in TensorFlow and in NumPy.

The words are as standardization leaves them (lower case, apostrophes dropped: ``don't`` is
``dont``, and a treebank's split ``n't`` is ``nt``). A negation's scope runs from the word
after it to the end of its clause (a comma or the sentence's end) or a contrast word (Das &
Chen 2001; Pang et al. 2002: to the next punctuation); words before a contrast word in their
sentence are what the contrast turns away from.

Example:
    >>> scope_ids()
    ScopeIds(end=2, comma=3, negations=(4, 33), contrasts=(33, 40))
    >>> reserved_words()[:5]
    ['.', ',', 'not', 'no', 'never']
"""

from __future__ import annotations

from typing import NamedTuple

#: The token a sentence's end becomes.
SENTENCE_END = "."
#: The token a clause's end (a comma) becomes.
CLAUSE_END = ","

#: Words that open a negation's scope.
NEGATIONS = (
    "not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "hardly", "without",
    "cannot", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "cant", "couldnt",
    "wont", "wouldnt", "shouldnt", "havent", "hasnt", "hadnt", "aint", "mustnt", "nt",
)  # fmt: skip

#: Words that close a negation's scope and turn a sentence away from what came before them.
CONTRASTS = ("but", "however", "although", "though", "yet", "whereas", "except")
#: Contrast words that, opening a sentence, concede the clause after them ("Although A, B").
CONCESSIONS = ("although", "though")

#: Two words that negate what follows them ("anything but dull", "far from perfect", "nowhere
#: near as good"): with ``data.negation_phrases`` the second reads as ``not``, whose scope
#: follows it. Not reserved words: the vocabulary's ids stay as they are.
NEGATION_PHRASES = (("anything", "but"), ("far", "from"), ("nowhere", "near"))
#: Each of them as a regular expression (the same in TensorFlow's RE2 and Python's ``re``), and
#: what it is replaced by: its first word, its spaces, then ``not``.
NEGATION_PHRASE_PATTERNS = tuple(rf"\b({first} +){second}\b" for first, second in NEGATION_PHRASES)
NEGATION_PHRASE_READING = rf"\1{NEGATIONS[0]}"

#: The first id after padding (0) and out-of-vocabulary (1).
FIRST_ID = 2


class ScopeIds(NamedTuple):
    """The sentence end's and comma's ids, and the id ranges ``[start, stop)`` of negations and
    contrasts."""

    end: int
    comma: int
    negations: tuple[int, int]
    contrasts: tuple[int, int]


def reserved_words() -> list[str]:
    """The words at ids 2, 3, ... of a vocabulary built with ``data.sentences``, in order."""
    return [SENTENCE_END, CLAUSE_END, *NEGATIONS, *CONTRASTS]


def scope_ids() -> ScopeIds:
    """Where :func:`reserved_words` sit in such a vocabulary."""
    negations = FIRST_ID + 2
    contrasts = negations + len(NEGATIONS)
    return ScopeIds(
        FIRST_ID, FIRST_ID + 1, (negations, contrasts), (contrasts, contrasts + len(CONTRASTS))
    )


def concession_ids() -> tuple[int, ...]:
    """The ids of :data:`CONCESSIONS` in a vocabulary built with ``data.sentences``.

    Example:
        >>> concession_ids()
        (35, 36)
    """
    return tuple(reserved_words().index(word) + FIRST_ID for word in CONCESSIONS)
