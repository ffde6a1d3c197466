"""When a review is ``unknown``: the model has nothing to go on. No word of it is in the
vocabulary, or its known words together weigh next to nothing in the model itself.

A word's weight is its occlusion: how far the model's margin moves when that word is taken out
of the review (the margin of the predicted class, its log-probability minus the mean of the
others'; for two classes the log-odds). The total weight of a review is the sum of its known
words' weights, in nats. A review with :data:`EVIDENCE_WORDS` known words or more is always
judged (the occlusion is not computed); one with fewer is ``unknown`` when their total weight is
under :data:`MIN_EVIDENCE`. So ``Brilliant!`` (one word that moves the odds by a factor of 50)
gets its label, while ``the`` (which barely moves them) and ``xqzv blorf`` (no known word) stay
``unknown``. The occlusion runs through the model as it serves (the LiteRT bundle, no
TensorFlow), a review of n known words costing n more rows.

Example (``classifier.serving.predict.unknown_reviews`` does this for a model)::

    texts = ["Brilliant!", "xqzv blorf", long_review]
    known, _ = word_counts(model, texts)
    unknown(texts, probabilities, known, lambda batch: predict_probabilities(model, batch),
            tokenizer_of(model))  # array([False,  True, False])
"""

from __future__ import annotations

import numpy as np

from classifier.data.tokenizer import OOV_ID

#: A review with this many known words or more is judged on them (no occlusion computed).
EVIDENCE_WORDS = 8
#: The total weight (nats of margin) under which a review's known words are negligible.
MIN_EVIDENCE = 0.5
_FLOOR = 1e-12


def margin(probabilities: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per row, class ``c``'s margin: its log-probability minus the mean of the others' (for
    two classes, the log-odds of ``c``).

    Example:
        >>> margin(np.array([[0.2, 0.8], [0.5, 0.5]]), np.array([1, 0])).round(4).tolist()
        [1.3863, 0.0]
    """
    logs = np.log(np.clip(np.asarray(probabilities, dtype=np.float64), _FLOOR, 1.0))
    rows = np.arange(len(logs))
    chosen = logs[rows, c]
    others = (logs.sum(axis=1) - chosen) / max(logs.shape[1] - 1, 1)
    return chosen - others


def total_weight(predict, words: list[list[str]], known: list[list[bool]], classes: np.ndarray):
    """Per review (its ``words`` as the model reads them, which of them it knows, the class
    whose margin counts): the sum over its known words of how far taking the word out moves
    that margin. ``predict`` maps texts to probabilities (N, K)."""
    texts, owners, removed = [], [], []
    for index, (review, knows) in enumerate(zip(words, known, strict=True)):
        texts.append(" ".join(review))
        owners.append(index)
        removed.append(False)
        for position, is_known in enumerate(knows):
            if is_known:
                texts.append(" ".join(review[:position] + review[position + 1 :]))
                owners.append(index)
                removed.append(True)
    if not texts:
        return np.zeros(0)
    owners, removed = np.array(owners), np.array(removed)
    margins = margin(predict(texts), classes[owners])
    whole = np.zeros(len(words))
    whole[owners[~removed]] = margins[~removed]
    weights = np.abs(whole[owners[removed]] - margins[removed])
    return np.bincount(owners[removed], weights=weights, minlength=len(words))


def unknown(texts: list[str], probabilities: np.ndarray, known: np.ndarray, predict, tokenizer):
    """Which texts are ``unknown`` (a bool per text): no known word, or fewer than
    :data:`EVIDENCE_WORDS` known words of total weight under :data:`MIN_EVIDENCE`.
    ``probabilities`` are the model's for ``texts`` and ``known`` their known words
    (:func:`classifier.serving.predict.word_counts`); ``predict`` maps texts to the model's
    probabilities and ``tokenizer`` is the model's (:class:`classifier.data.tokenizer.Tokenizer`).
    """
    known, probabilities = np.asarray(known), np.asarray(probabilities)
    verdict = known == 0
    short = np.flatnonzero((known > 0) & (known < EVIDENCE_WORDS))
    if len(short) == 0:
        return verdict
    words, knows = [], []
    ids = tokenizer.encode([texts[index] for index in short])  # a misspelt word read as known
    for index, row in zip(short, ids, strict=True):
        kept = tokenizer.kept_words(texts[index])
        words.append(kept)
        knows.append((row[: len(kept)] > OOV_ID).tolist())
    classes = np.argmax(probabilities[short], axis=1)
    if probabilities.shape[1] == 2:
        classes[:] = 1  # the log-odds of positive: its size is the same for either class
    weight = total_weight(predict, words, knows, classes)
    verdict[short] = weight < MIN_EVIDENCE
    return verdict
