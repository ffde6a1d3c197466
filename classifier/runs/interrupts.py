"""Stopping a long job cleanly: Ctrl-C, ``kill`` (SIGTERM) and a closed terminal (SIGHUP) all
end it the same way, and a block of work that must stay whole (an epoch's checkpoint and its
metrics) holds every one of them back until it is done.

Example (in a command's main thread)::

    stop_on_signals()  # SIGTERM and SIGHUP now raise KeyboardInterrupt, as Ctrl-C does
    with deferred_interrupt():
        pass  # a signal arriving here is raised as KeyboardInterrupt after the block
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

#: The signals that stop a job: Ctrl-C, ``kill``/``timeout``/schedulers, a closed terminal.
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def stop_on_signals() -> None:
    """Make SIGTERM and SIGHUP raise ``KeyboardInterrupt`` like Ctrl-C, so that a run they stop
    ends KILLED (with its checkpoint) instead of staying RUNNING."""
    if threading.current_thread() is threading.main_thread():
        for number in STOP_SIGNALS:
            signal.signal(number, signal.default_int_handler)


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold back every stop signal until the block is done, then raise ``KeyboardInterrupt``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {
        number: signal.signal(number, lambda got, frame: received.append(got))
        for number in STOP_SIGNALS
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if received:
        raise KeyboardInterrupt
