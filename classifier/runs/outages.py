"""Servers that go away and come back: one line when one stops answering, one when it is back,
and no traceback or library warning in between.

MLflow's client retries a request for minutes (urllib3, with backoff) and logs a warning for
every retry; Optuna's storage raises at the first dropped connection, and its heartbeat thread
dies of it. Here:

- :class:`Outage` says once that a server is unreachable and once that it is back;
- :func:`watch_mlflow` turns urllib3's retry warnings into an :class:`Outage` of the MLflow
  server (MLflow keeps retrying as before) and the first answer after them into "back";
- :func:`retrying` wraps a call so that it waits (and says so, once) while a server is away.

Example:
    >>> lines = []
    >>> outage = Outage("the test server", lines.append)
    >>> outage.down("connection refused"); outage.down("connection refused"); outage.up()
    >>> lines[0]
    'the test server is unreachable (connection refused); retrying until it is back'
    >>> lines[1].startswith("the test server is back after ")
    True
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from classifier.config.uris import redacted

T = TypeVar("T")

#: How long a call waits for a server to come back before it gives up (and raises).
PATIENCE_S = 600.0
#: Seconds between two tries of a call while its server is away.
RETRY_EVERY_S = 2.0


class Outage:
    """Whether a server is away, said once when it goes and once when it is back (thread-safe:
    a heartbeat thread and the main thread may both notice)."""

    def __init__(self, what: str, echo: Callable[[str], None]):
        self.what, self.echo = what, echo
        self._since: float | None = None
        self._lock = threading.Lock()

    @property
    def away(self) -> bool:
        return self._since is not None

    def down(self, reason: str) -> None:
        with self._lock:
            if self._since is not None:
                return
            self._since = time.monotonic()
        self.echo(f"{self.what} is unreachable ({reason}); retrying until it is back")

    def up(self) -> None:
        with self._lock:
            if self._since is None:
                return
            seconds, self._since = time.monotonic() - self._since, None
        self.echo(f"{self.what} is back after {seconds:.0f} s")


def retrying(
    call: Callable[..., T],
    outage: Outage,
    transient: Callable[[BaseException], str | None],
    patience: float | None = None,
) -> Callable[..., T]:
    """``call``, tried again every :data:`RETRY_EVERY_S` seconds while ``transient(error)``
    names a reason (the server is away), for at most ``patience`` seconds (default
    :data:`PATIENCE_S`); the outage is said once and its end once. Any other error, or the last
    one, is raised."""

    @functools.wraps(call)
    def wrapper(*args, **kwargs):
        limit = PATIENCE_S if patience is None else patience
        deadline = None
        while True:
            try:
                value = call(*args, **kwargs)
            except Exception as error:
                reason = transient(error)
                if reason is None:
                    raise
                deadline = deadline or time.monotonic() + limit
                if time.monotonic() > deadline:
                    raise
                outage.down(reason)
                time.sleep(RETRY_EVERY_S)
                continue
            outage.up()
            return value

    return wrapper


class _Urllib3Filter(logging.Filter):
    """On urllib3's loggers: a retry counted (at the failure itself, before the backoff sleep;
    its "Retrying" warning comes after the sleep, when the server may be back) means the server
    is away, an answer (any status under 500) that it is back; every record is kept off the
    terminal."""

    def __init__(self, outage: Outage):
        super().__init__()
        self.outage = outage

    def filter(self, record: logging.LogRecord) -> bool:
        message, args = str(record.msg), record.args
        if message.startswith("Incremented Retry") and isinstance(args, tuple) and len(args) == 2:
            history = getattr(args[1], "history", ())
            last = history[-1] if history else None
            if last is not None and last.status is not None:
                self.outage.down(f"it answered {last.status}")
            else:
                self.outage.down(_short_reason(repr(getattr(last, "error", ""))))
        elif self.outage.away and isinstance(args, tuple) and len(args) == 8:
            status = args[6]  # '%s://%s:%s "%s %s %s" %s %s': the response line
            if isinstance(status, int) and status < 500:
                self.outage.up()
        return False


def _short_reason(text: str) -> str:
    reasons = {
        "refused": "connection refused",
        "timed out": "no answer",
        "reset": "connection reset",
        "aborted": "connection reset",
        "name or service not known": "unknown host",
    }
    lowered = text.lower()
    return next((short for key, short in reasons.items() if key in lowered), "no connection")


_watched: dict[str, _Urllib3Filter] = {}
#: urllib3's loggers of retries and of answers.
LOGGERS = ("urllib3.util.retry", "urllib3.connectionpool")


def watch_mlflow(tracking_uri: str, echo: Callable[[str], None]) -> Outage | None:
    """Report the MLflow server at ``tracking_uri`` going away and coming back on ``echo``,
    instead of urllib3's retry warnings; None for a local store (no server to lose). Calling it
    again changes the server and where its lines go."""
    if tracking_uri.startswith("sqlite:"):
        return None
    outage = Outage(f"the MLflow server {redacted(tracking_uri)}", echo)
    if "filter" in _watched:
        _watched["filter"].outage = outage
        return outage
    _watched["filter"] = _Urllib3Filter(outage)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.addFilter(_watched["filter"])
        logger.setLevel(logging.DEBUG)  # the records that tell a retry and an answer
    return outage
