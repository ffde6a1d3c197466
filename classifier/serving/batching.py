"""How reviews are batched for prediction, by the Keras and the LiteRT paths alike: a chunk of
texts at a time, sorted by their number of tokens, cut into batches each trimmed to its longest
review (padding is masked in every variant, so this changes the work, not the numbers).

Example:
    >>> [(rows.tolist(), width) for rows, width in length_sorted_batches(np.array([5, 0, 9, 2]), 2)]
    [([1, 3], 2), ([0, 2], 9)]
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Texts tokenized at once: (4096, 256) int64 ids are 8 MB.
MAX_CHUNK = 4096


def length_sorted_batches(lengths: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, int]]:
    """``(rows, width)`` per batch: ``batch_size`` rows at a time in order of length, and the
    longest length among them (at least 1, a model needs one column).
    """
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        yield rows, max(1, int(lengths[rows[-1]]))


def token_counts(token_ids: np.ndarray) -> np.ndarray:
    """Ids per row before the trailing padding (id 0) of a (B, T) array.

    Example:
        >>> token_counts(np.array([[4, 5, 0], [0, 0, 0], [7, 0, 0]])).tolist()
        [2, 0, 1]
    """
    real = token_ids != 0
    last = token_ids.shape[1] - np.argmax(real[:, ::-1], axis=1)
    return np.where(real.any(axis=1), last, 0)
