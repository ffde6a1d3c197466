"""Which process is training a run: a heartbeat tag that a live process keeps fresh, and claims
that let two processes agree on who trains (or resumes) a run.

While a run trains, :class:`Heartbeat` writes the tag ``heartbeat`` = ``"<host> <pid> <time>"``
every :data:`RUN_HEARTBEAT_S` seconds. A RUNNING run is *live* while that process is alive (same
host) and its heartbeat is younger than :data:`STALE_AFTER_S` (any host); a SIGKILLed run is
not live, so it stays resumable. MLflow has no compare-and-set, so a claim (:func:`claimed`) is a tag of its own that each
contender writes before reading all claims back: the earliest recent claim of a live process
wins, and every contender agrees on it because it compares the same data.

Example (inside a run)::

    with Heartbeat(run_id):
        pass  # training
    is_live(MlflowClient().get_run(run_id))  # False: the heartbeat stopped with the run
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import mlflow
from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from classifier.errors import ResumeError, RunBusy

HEARTBEAT_TAG = "heartbeat"
CLAIM_PREFIX = "claim."
RUN_HEARTBEAT_S = 15.0
STALE_AFTER_S = 4 * RUN_HEARTBEAT_S
#: A claim older than this is from an attempt that has ended; it no longer counts.
CLAIM_TTL_S = 60.0


def _stamp() -> str:
    return f"{socket.gethostname()} {os.getpid()} {time.time():.3f}"


class Heartbeat:
    """Keep the run's ``heartbeat`` tag fresh from a daemon thread while the block runs."""

    def __init__(self, run_id: str, interval: float = RUN_HEARTBEAT_S):
        self.run_id = run_id
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        MlflowClient().set_tag(self.run_id, HEARTBEAT_TAG, _stamp())
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _beat(self) -> None:
        client = MlflowClient()
        while not self._stop.wait(self.interval):
            try:
                client.set_tag(self.run_id, HEARTBEAT_TAG, _stamp())
            except Exception:  # noqa: BLE001 - a missed beat only makes the run look older
                continue


def drop_heartbeat(run_id: str) -> None:
    """Remove the ``heartbeat`` tag of a run that has ended (a record, not a live lease); a
    store that cannot be reached keeps it, which only makes the run look older."""
    with contextlib.suppress(Exception):  # already gone, or the store is away: nothing to undo
        MlflowClient().delete_tag(run_id, HEARTBEAT_TAG)


def holder(run: Run) -> str | None:
    """``"process PID on HOST, last heartbeat N s ago"`` when a live process trains the run."""
    if run.info.status != "RUNNING":
        return None
    beat = run.data.tags.get(HEARTBEAT_TAG, "").split()
    try:
        host, pid, stamp = beat[0], int(beat[1]), float(beat[2])
    except (IndexError, ValueError):  # none (a run from before heartbeats), or edited by hand
        return None
    age = time.time() - stamp
    if age > STALE_AFTER_S:
        return None
    if host == socket.gethostname() and not _alive(pid):
        return None
    return f"process {pid} on {host}, last heartbeat {age:.0f} s ago"


def is_live(run: Run) -> bool:
    """Whether a live process is training the run (see :func:`holder`)."""
    return holder(run) is not None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def claimed(run_id: str, client: MlflowClient | None = None) -> Iterator[None]:
    """Hold ``run_id`` for this process while the block runs (a resume), or raise.

    Every contender writes its own claim tag, then reads the run back: the earliest claim of
    the last :data:`CLAIM_TTL_S` seconds whose process is alive wins. A contender that reads
    before a later one writes sees only its own claim and wins; the later one then sees both
    and loses. The claim is removed when the block ends.

    Raises:
        ResumeError: no such run.
        RunBusy: a live process trains the run, or claimed it first.
    """
    client = client or MlflowClient()
    try:
        run = client.get_run(run_id)
    except MlflowException:
        raise ResumeError(f"no run {run_id!r} in {mlflow.get_tracking_uri()}") from None
    busy = holder(run)
    if busy:
        raise RunBusy(f"run {run_id} is still training ({busy}); wait for it, or stop it first")
    key = f"{CLAIM_PREFIX}{uuid.uuid4().hex}"
    mine = time.time_ns()
    client.set_tag(run_id, key, f"{mine} {socket.gethostname()} {os.getpid()}")
    try:
        contenders = []
        for name, value in client.get_run(run_id).data.tags.items():
            if not name.startswith(CLAIM_PREFIX) or len(value.split()) != 3:
                continue
            stamp, host, pid = value.split()
            recent = mine - int(stamp) < CLAIM_TTL_S * 1e9
            if name == key or (recent and (host != socket.gethostname() or _alive(int(pid)))):
                contenders.append((int(stamp), name))
        if min(contenders) != (mine, key):
            raise RunBusy(f"run {run_id} is being resumed by another process")
        yield
    finally:
        with contextlib.suppress(MlflowException):
            client.delete_tag(run_id, key)
