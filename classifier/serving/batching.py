"""How reviews are batched for prediction, by the Keras and the LiteRT paths alike: a chunk of
texts at a time, sorted by their number of tokens, cut into batches each trimmed to its longest
review (padding is masked in every variant, so this changes the work, not the numbers).

Example:
    >>> [(rows.tolist(), width) for rows, width in length_sorted_batches(np.array([5, 0, 9, 2]), 2)]
    [([1, 3], 2), ([0, 2], 9)]
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

#: Texts tokenized at once: (4096, 256) int64 ids are 8 MB.
MAX_CHUNK = 4096


def in_chunks(
    predict: Callable[[Sequence, int], np.ndarray], texts: Sequence, batch_size: int, classes: int
) -> np.ndarray:
    """``predict(chunk, batch_size)`` on ``MAX_CHUNK`` texts at a time, the class
    probabilities (N, ``classes``) float64 back in input order (both engines chunk so).

    Example:
        >>> in_chunks(lambda chunk, _: np.ones((len(chunk), 2)), ["a", "b"], 64, 2).shape
        (2, 2)
    """
    chunks = [
        predict(texts[start : start + MAX_CHUNK], batch_size)
        for start in range(0, len(texts), MAX_CHUNK)
    ]
    if not chunks:
        return np.zeros((0, classes))
    return np.concatenate(chunks).astype(np.float64)


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


class Together:
    """Calls ``work(items)`` for the items of every caller waiting, in one call: concurrent
    callers are served together (as a database commits the transactions waiting on its log
    together), with no timer, so a lone caller waits for nothing.

    A caller queues its items and takes the run lock; if a run that started meanwhile has
    already done its items it returns them, else it runs ``work`` on everything queued and
    hands each waiting caller its share. ``work`` maps a list of items to a sequence of results,
    one per item, in order.

    Example:
        >>> double = Together(lambda items: [2 * item for item in items])
        >>> double([1, 2, 3])
        [2, 4, 6]
    """

    def __init__(self, work: Callable[[list], Sequence]):
        self._work = work
        self._queue: list[_Share] = []
        self._queued = threading.Lock()
        self._running = threading.Lock()

    def __call__(self, items: list) -> list:
        share = _Share(items)
        with self._queued:
            self._queue.append(share)
        with self._running:
            if not share.done:
                with self._queued:
                    shares, self._queue = self._queue, []
                self._run(shares)
        if share.error is not None:
            raise share.error
        return share.results

    def _run(self, shares: list[_Share]) -> None:
        try:
            results = list(self._work([item for share in shares for item in share.items]))
        except Exception as error:  # noqa: BLE001 - each caller gets it, raised in its thread
            for share in shares:
                share.error, share.done = error, True
            return
        start = 0
        for share in shares:
            share.results = results[start : start + len(share.items)]
            share.done = True
            start += len(share.items)


class _Share:
    """One caller's items in :class:`Together`, and what became of them."""

    def __init__(self, items: list):
        self.items = items
        self.results: list = []
        self.error: Exception | None = None
        self.done = False
