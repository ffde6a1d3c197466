"""What each word of one review does to a classifier's answer, in numbers: the class to weigh
words towards (:func:`target_class`) and its margin (:func:`margin_direction`), a linear model's
exact word contributions (:func:`word_contributions`), a fused model's attention branch
(:func:`branch_margin`), any model's occlusion (:func:`word_occlusion`) and the attention a
token receives (:func:`attention_received`). :mod:`classifier.explain.explanation` draws them.

They take NumPy arrays, from a Keras model (:mod:`classifier.explain.keras_view`) or from a
bundle without TensorFlow (:mod:`classifier.explain.bundle_view`).

Example (a bag's weights, one review's ids)::

    features, values = weights.feature_values(ids[None, :])
    positions = weights.features(ids[None, :])[0]
    probability, shares = word_contributions(weights, features[0], values[0], positions, len(ids))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from classifier.errors import ModelError
from classifier.serving.evidence import margin
from classifier.serving.explain_parts import NgramWeights


def target_class(
    labels: tuple[str, ...], target: str | None, probabilities: np.ndarray | None = None
) -> int:
    """The index of the class a review's words are weighed towards: ``target`` (a class name
    or index), else the second of two classes (``positive``), else the most probable.

    Raises:
        ModelError: ``target`` is not one of ``labels``; the line names them.

    Example:
        >>> target_class(("negative", "positive"), None), target_class(("a", "b", "c"), "c")
        (1, 2)
    """
    if target is not None:
        if target in labels:
            return labels.index(target)
        if target.isdigit() and int(target) < len(labels):
            return int(target)
        raise ModelError(
            f"--class {target!r} is not a class of the model; its classes: " + ", ".join(labels)
        )
    if len(labels) == 2 or probabilities is None:
        return 1
    return int(np.argmax(probabilities))


def margin_direction(matrix: np.ndarray, c: int) -> np.ndarray:
    """The combination of a head's K columns (or K logits, the last axis) that gives class
    ``c``'s margin: its logit minus the mean logit of the other classes. For two classes that
    is the log-odds of ``c``; softmax's probabilities rank the classes as the margins do.

    Example:
        >>> margin_direction(np.array([1.0, 3.0, 8.0]), 2).item()  # 8 - (1 + 3) / 2
        6.0
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    others = np.delete(matrix, c, axis=-1)
    return matrix[..., c] - others.mean(axis=-1)


def word_occlusion(
    predict: Callable[[np.ndarray], np.ndarray],
    token_ids: np.ndarray,
    batch_size: int = 64,
    c: int = 1,
) -> tuple[float, np.ndarray]:
    """P(class ``c``) of one review's ids (no padding), and per word how far it moves class
    ``c``'s margin (:func:`margin_direction` of the log-probabilities; the log-odds of positive
    for two classes): the margin of the review minus that of the review without the word (the
    words after it move up one place). Positive: the word pushes towards class ``c``.
    ``predict`` maps token ids (B, W) to the model's probabilities (B, K).

    Example (a model that counts word 5, probabilities as a softmax of that count)::

        >>> count = lambda ids: np.stack([np.zeros(len(ids)), (ids == 5).sum(1)], 1)
        >>> softmax = lambda ids: np.exp(count(ids)) / np.exp(count(ids)).sum(1, keepdims=True)
        >>> word_occlusion(softmax, np.array([5, 7]))[1].round(6).tolist()
        [1.0, 0.0]
    """
    ids = np.asarray(token_ids, dtype=np.int64)
    n = len(ids)
    without = np.zeros((n, max(n - 1, 1)), dtype=np.int64)  # a one-word review: empty (padding)
    for i in range(n):
        without[i, : n - 1] = np.delete(ids, i)
    rows = np.concatenate([ids[None, :], np.pad(without, ((0, 0), (0, n - without.shape[1])))])
    probabilities = np.concatenate(
        [np.asarray(predict(rows[i : i + batch_size])) for i in range(0, len(rows), batch_size)]
    ).astype(np.float64)
    margins = margin(probabilities, np.full(len(probabilities), c))
    return float(np.clip(probabilities[0, c], 1e-12, 1.0)), margins[0] - margins[1:]


def word_contributions(
    weights: NgramWeights,
    features: np.ndarray,
    values: np.ndarray,
    positions: np.ndarray,
    length: int,
    c: int = 1,
) -> tuple[float, np.ndarray]:
    """The sigmoid of class ``c``'s margin (for two classes, P(``c``)) of a bag-of-n-grams
    classifier (``bow``, ``nbow``) for one review, and each word's contribution to that margin
    (the log-odds of positive for two classes, :func:`margin_direction`). Of a fused
    classifier (``nbow_attention``): the contributions of its n-gram branch (layer ``bag``), and
    the sigmoid of that branch's margin alone.

    Args:
        weights: the bag's and the head's weights.
        features, values: the review's sorted feature ids (F,) and their normalised values (F,)
            or (F, outputs) (:meth:`~classifier.serving.explain_parts.NgramWeights.feature_values`).
        positions: its feature ids in order of position: the n unigrams, then the n - 1 bigrams,
            and so on (:meth:`~classifier.serving.explain_parts.NgramWeights.features`), then
            for a bag with ``letters`` each of the first ``short_length`` words' letter n-grams
            (0 for a review), then for a bag with ``sentences_as_reviews`` the n-grams again (0
            for a review); for a bag with negation, then as many again: the negated ones' own
            features, or 0.
        length: its number of words n.

    A feature f (a word, or n neighbouring words) adds ``(value_f * k_f) . d`` to the margin,
    where ``value_f`` is its normalised value (TF-IDF, or NB-scaled; for more than two classes
    one per output, each class's one-vs-rest ratio), ``k_f`` its kernel row and ``d`` the
    head's margin direction (the temperature included). A word receives its
    unigram's share and 1/n of each n-gram's it is in, split evenly over repeats (a feature
    counts once). So the contributions sum to the log-odds minus the bias (the calibration's
    offset is in the bias): nothing is lost or invented.
    """
    direction = margin_direction(weights.head_kernel, c)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:  # one value per feature (two classes), else one per output (K NB ratios)
        values = values[:, None]
    rows = np.asarray(weights.kernel[features], dtype=np.float64)  # (F, outputs): its rows only
    added = (values * rows) @ direction
    per_feature = {  # first occurrences only: a repeat's values are 0
        int(f): float(c) for f, c, v in zip(features, added, values.any(axis=1), strict=True) if v
    }
    order, unsorted = weights.order, np.asarray(positions).tolist()
    spans, offset = [], 0  # spans: (feature, first word, n)
    width = weights.letters  # each of a sentence's first short_length words' letter n-grams
    lettered = min(length, weights.short_length) * width
    grams = sum(max(length - n + 1, 0) for n in range(1, order + 1))
    copies = 2 if weights.sentences_as_reviews else 1  # a sentence's n-grams in both blocks
    per_part = grams * copies + lettered

    def ngrams() -> None:
        nonlocal offset
        for n in range(1, order + 1):
            count = max(length - n + 1, 0)
            spans.extend((f, start, n) for start, f in enumerate(unsorted[offset : offset + count]))
            offset += count

    for _ in range(len(unsorted) // max(per_part, 1)):  # with negation: two parts
        ngrams()
        part = unsorted[offset : offset + lettered]
        spans += [(f, k // width, 1) for k, f in enumerate(part)]  # a letter n-gram: its word's
        offset += lettered
        if copies == 2:
            ngrams()
    times = Counter(f for f, _, _ in spans)
    shares = np.zeros(length)
    for feature, start, n in spans:
        shares[start : start + n] += per_feature.get(feature, 0.0) / times[feature] / n
    bias = np.asarray(weights.bias, dtype=np.float64) @ direction
    margin = float(shares.sum() + bias + margin_direction(weights.head_bias, c))
    return float(1 / (1 + np.exp(-margin))), shares


def branch_margin(logits: np.ndarray, head_kernel: np.ndarray, c: int = 1) -> float:
    """What one branch of a fused classifier (``nbow_attention``) adds to class ``c``'s margin
    (the log-odds of positive for two classes): its logits (K,) through the head's margin
    direction (the temperature included). The n-gram branch's word contributions
    (:func:`word_contributions`), its bias, the head's bias and this sum to the model's margin.

    Example:
        >>> branch_margin(np.array([0.5, 2.0]), np.eye(2))
        1.5
    """
    logits = np.asarray(logits, dtype=np.float64)
    return float(logits @ margin_direction(np.asarray(head_kernel, dtype=np.float64), c))


def attention_received(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Attention each key receives: the mean over heads, then over real query positions.

    Args:
        weights: (h, T, S) or (T, S) attention weights of one sequence (rows: queries).
        mask: (T,) bool, ``True`` at real tokens (queries and keys share it).

    Returns:
        (S,) float array, 0 at padding; it sums to 1 when every real row sums to 1.

    Example:
        >>> attention_received(np.array([[[0.5, 0.5], [1.0, 0.0]]]), np.array([True, True]))
        array([0.75, 0.25])
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 3:
        weights = weights.mean(axis=0)
    mask = np.asarray(mask, dtype=bool)
    received = weights[mask].mean(axis=0) if mask.any() else np.zeros(weights.shape[-1])
    return np.where(mask, received, 0.0)
