"""Progress within long steps, on one updating line of the terminal.

A run's ``echo`` writes its lines (an epoch, a summary). When ``echo`` also has a
``status(text)`` method (the CLI's :class:`classifier.cli.terminal.Progress` has one, and shows it
only on a terminal), :func:`status` names the step under way (loading the reviews, building the
vocabulary, evaluating, registering) and :class:`BatchProgress` counts the batches of each epoch
with the time left. Where output is not a terminal (CI logs, a pipe, tests) nothing is shown and
no batch-level callback is added.

Example:
    >>> lines = []
    >>> status(lines.append, "loading the reviews")  # a plain callable has no status line
    >>> lines
    []
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import keras

#: Seconds between two updates of the line (a terminal redrawn every batch flickers).
REFRESH_S = 0.25


def status(echo: Callable[[str], None] | None, text: str) -> None:
    """Show ``text`` on ``echo``'s updating line, if it has one (None: nowhere)."""
    show = getattr(echo, "status", None)
    if show is not None:
        show(text)


def is_live(echo: Callable[[str], None]) -> bool:
    """Whether ``echo`` shows an updating line (a terminal)."""
    return bool(getattr(echo, "live", False))


def batch_progress(
    echo: Callable[[str], None], label: str, epochs: int, reviews: int, batch_size: int
) -> list[keras.callbacks.Callback]:
    """``[BatchProgress(...)]`` where ``echo`` shows an updating line, else ``[]``: the callback
    to put first in ``model.fit``'s list."""
    if not is_live(echo):
        return []
    return [BatchProgress(echo, label, epochs, math.ceil(reviews / batch_size))]


class BatchProgress(keras.callbacks.Callback):
    """Within each epoch: ``epoch 3/20  batch 120/235  (51%)  14s left`` on the updating line,
    then ``validating`` while the validation reviews are scored.

    The first epoch's batch count is estimated as reviews / batch size (batches of similar
    length can number a few more); later epochs use the count the epoch before had.
    """

    def __init__(self, echo: Callable[[str], None], label: str, epochs: int, batches: int):
        super().__init__()
        self.echo, self.label, self.epochs, self.batches = echo, label, epochs, batches
        self._epoch = self._done = 0
        self._started = self._shown = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._done = epoch + 1, 0
        self._started, self._shown = time.perf_counter(), 0.0  # the first batch is shown

    def on_train_batch_end(self, batch, logs=None):
        self._done = batch + 1
        now = time.perf_counter()
        if now - self._shown >= REFRESH_S:
            self._shown = now
            status(self.echo, self.line(now - self._started))

    def on_test_begin(self, logs=None):
        status(self.echo, f"{self.label} {self._epoch:>2}/{self.epochs}  validating")

    def on_epoch_end(self, epoch, logs=None):
        self.batches = max(self._done, 1)  # the next epoch has as many

    def line(self, elapsed: float) -> str:
        """The updating line after ``elapsed`` seconds of this epoch.

        Example:
            >>> bar = BatchProgress(print, "epoch", 20, batches=200)
            >>> bar._epoch, bar._done = 3, 50
            >>> bar.line(10.0)
            'epoch  3/20  batch 50/200  (25%)  30s left'
        """
        total = max(self.batches, self._done)
        left = elapsed / self._done * (total - self._done) if self._done else 0.0
        share = 100 * self._done // total
        return (
            f"{self.label} {self._epoch:>2}/{self.epochs}  batch {self._done}/{total}  "
            f"({share}%)  {left:.0f}s left"
        )
