"""Where each token stands in its sentence, for a bag of n-grams that reads negation and
contrast (``nbow`` with ``model.negation`` or ``model.contrast``): from token ids alone, in a
vocabulary built with ``data.sentences`` (:mod:`classifier.config.negation` fixes the ids of the
sentence end ``.``, the negations and the contrast words).

- A token is **negated** when a negation stands before it in its clause with no contrast word
  between them: "it was **not** *bad at all* . great", "**never** *boring* , but long". The
  negation itself, the sentence end, the comma and a contrast word are not.
- A token stands **before a contrast** when a contrast word follows it in its sentence: "*the
  acting was poor* but the story was good"; with ``concessive``, also when it is in the clause
  after a sentence's opening "although" or "though": "although *the acting was poor* , the
  story was good"; with ``opening``, also when the next sentence opens with a contrast word:
  "*the acting was poor* . but the story was good".

Both are running maxima and minima along the review, computed by doubling (``log2(T)`` shifted
maxima of (B, T) integers: plain ``keras.ops`` that export to LiteRT); the NumPy twin, for
serving without TensorFlow, is :func:`classifier.serving.explain_parts.scope_of`.

Example (ids 2 ``.``, 3 ``,``, 4 ``not``, 33 ``but``; 40, 41, 42 other words):
    >>> ids = ops.array([[40, 4, 41, 42, 3, 41, 2, 41, 3, 33, 42]])
    >>> negated, before = negation_scope(ids, 11)
    >>> ops.convert_to_numpy(negated).astype(int).tolist()
    [[0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0]]
    >>> ops.convert_to_numpy(before).astype(int).tolist()
    [[0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0]]
"""

from __future__ import annotations

import functools
import math

from keras import ops

from classifier.config.negation import concession_ids, scope_ids

#: Beyond any position: where a token has nothing after it.
_FAR = 2**30


def _running(values, length: int, forward: bool, fill: int):
    """The running maximum (``forward``: over each position and those before it) or minimum
    (backward: over it and those after it) of (B, T) integers, T <= ``length``."""
    steps = max(1, math.ceil(math.log2(max(length, 2))))
    for k in (2**i for i in range(steps)):
        if forward:
            shifted = ops.pad(values, [[0, 0], [k, 0]], constant_values=fill)[:, :-k]
            values = ops.maximum(values, shifted)
        else:
            shifted = ops.pad(values, [[0, 0], [0, k]], constant_values=fill)[:, k:]
            values = ops.minimum(values, shifted)
    return values


def negation_scope(
    token_ids,
    length: int,
    words: int = 0,
    commas: bool = True,
    concessive: bool = False,
    opening: bool = False,
):
    """``(negated (B, T) bool, before_contrast (B, T) bool)`` of token ids (B, T), T <=
    ``length`` (what the module's docstring says); with ``words`` > 0, a scope holds at most
    that many words after its negation; with ``commas`` False, a comma does not end it (a
    scope to the sentence's end or a contrast word, as a sentence's reader uses); with
    ``concessive``, a clause conceded by a sentence's opening "although" stands before a
    contrast too; with ``opening``, so does a sentence whose next one opens with a contrast
    word ("But ...", "However, ...")."""
    ids = ops.cast(token_ids, "int32")
    where = scope_ids()
    position = ops.cumsum(ops.ones_like(ids), axis=1) - 1
    negation = ops.logical_and(ids >= where.negations[0], ids < where.negations[1])
    contrast = ops.logical_and(ids >= where.contrasts[0], ids < where.contrasts[1])
    end = ops.equal(ids, where.end)
    stop = ops.logical_or(end, contrast)
    if commas:
        stop = ops.logical_or(stop, ops.equal(ids, where.comma))
    last_negation = _running(ops.where(negation, position, -1), length, True, -1)
    last_stop = _running(ops.where(stop, position, -1), length, True, -1)
    negated = ops.logical_and(last_negation > last_stop, ops.logical_not(negation))
    if words:
        negated = ops.logical_and(negated, position - last_negation <= words)
    next_contrast = _running(ops.where(contrast, position, _FAR), length, False, _FAR)
    after = ops.pad(next_contrast, [[0, 0], [0, 1]], constant_values=_FAR)[:, 1:]
    next_end = _running(ops.where(end, position, _FAR), length, False, _FAR)
    before = after < next_end
    if concessive or opening:  # where a sentence's first word stands
        previous = ops.pad(ids, [[0, 0], [1, 0]], constant_values=where.end)[:, :-1]
        first = ops.equal(previous, where.end)
    if concessive:  # from an opening "although" to its clause's end (a comma or the sentence's)
        concession = functools.reduce(ops.logical_or, [ops.equal(ids, i) for i in concession_ids()])
        concession = ops.logical_and(concession, first)
        start = _running(ops.where(concession, position, -1), length, True, -1)
        breaks = ops.logical_or(end, ops.equal(ids, where.comma))
        last_break = _running(ops.where(breaks, position, -1), length, True, -1)
        before = ops.logical_or(before, ops.logical_and(start > last_break, position > start))
    if opening:  # a sentence whose end is followed by a contrast word ("... . but ...")
        opens = ops.logical_and(contrast, first)  # a sentence opening with a contrast word
        followed = ops.pad(opens, [[0, 0], [0, 1]], constant_values=False)[:, 1:]
        turned_end = _running(
            ops.where(ops.logical_and(end, followed), position, _FAR), length, False, _FAR
        )
        turned = ops.logical_and(ops.equal(turned_end, next_end), next_end < _FAR)
        before = ops.logical_or(before, ops.logical_and(turned, ops.logical_not(end)))
    return negated, before
