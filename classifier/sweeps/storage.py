"""Where a sweep's work queue lives: Optuna's RDB storage, SQLite beside ``mlflow.db`` (one
machine) or a PostgreSQL server (many), opened with heartbeats on.

A new SQLite storage is created by one process at a time, and every SQLite transaction takes the
write lock first, so that two workers never take one point. A server storage waits while its
server is away (:func:`resilient`): one line when it goes, one when it is back, and a heartbeat
that beats on afterwards.

Heartbeats, the two kinds side by side (a point is an Optuna trial and an MLflow run):

| what beats | every | counts as dead after | where |
|---|---|---|---|
| a worker on its trial, in this storage | :data:`TRIAL_HEARTBEAT_S` (10 s; a third of a shorter ``--grace``) | :data:`GRACE_S` (75 s, ``--grace``): the trial is failed and handed to another worker | here |
| the process training a run, on its MLflow run | ``RUN_HEARTBEAT_S`` (15 s) | ``STALE_AFTER_S`` (60 s): the run may be resumed by another process | :mod:`classifier.runs.leases` |

``GRACE_S`` exceeds ``STALE_AFTER_S`` (checked when this module loads), so that the worker that
takes a failed trial over finds its child run free to resume.

Example::

    storage = open_storage("sqlite:///sweeps.db")  # created on first use
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from classifier.config.uris import redacted, sweep_storage_url
from classifier.errors import SweepError
from classifier.runs.leases import STALE_AFTER_S
from classifier.runs.outages import Outage, retrying
from classifier.runs.tracking import exclusive_lock

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

#: Seconds between a worker's heartbeats on the trial it runs.
TRIAL_HEARTBEAT_S = 10
#: A trial whose heartbeat is older than this is failed and handed back.
GRACE_S = 75.0
if not GRACE_S > STALE_AFTER_S:  # module docstring: the worker taking over must find the run free
    raise RuntimeError(f"GRACE_S {GRACE_S} must exceed the runs' STALE_AFTER_S {STALE_AFTER_S}")
STORAGE_FILE = "sweeps.db"


def heartbeat_interval(grace: float) -> int:
    """Seconds between a worker's heartbeats for a ``grace`` period: :data:`TRIAL_HEARTBEAT_S`, or a
    third of a shorter grace, so that a live point beats at least twice in each grace period
    (at least every second).

    Example:
        >>> heartbeat_interval(GRACE_S), heartbeat_interval(24), heartbeat_interval(2)
        (10, 8, 1)
    """
    return max(1, min(TRIAL_HEARTBEAT_S, int(grace / 3)))


def quiet_optuna() -> None:
    """Keep Optuna's own log lines and experimental-feature warnings off the terminal."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    optuna.logging.disable_propagation()
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    logging.getLogger("alembic").setLevel(logging.WARNING)


def default_storage(tracking_uri: str) -> str:
    """``sqlite:///`` beside a local ``mlflow.db`` (or in the current folder for a server).

    Example:
        >>> default_storage("sqlite:////work/mlflow.db")
        'sqlite:////work/sweeps.db'
    """
    if tracking_uri.startswith("sqlite:///"):
        folder = Path(tracking_uri.removeprefix("sqlite:///")).parent
    else:
        folder = Path.cwd()
    return f"sqlite:///{folder / STORAGE_FILE}"


def check_tracking_for(storage_url: str, tracking_uri: str) -> None:
    """A storage on a server needs a tracking store that other machines see as well.

    Raises:
        SweepError: the storage is PostgreSQL while runs would go to a local SQLite file.
    """
    if storage_url.startswith("postgresql") and tracking_uri.startswith("sqlite:"):
        raise SweepError(
            f"the sweep storage {redacted(storage_url)} is a server but the tracking store "
            f"{tracking_uri} is a local file that workers on other machines cannot see; set "
            f"MLFLOW_TRACKING_URI to the MLflow server (make server prints it)"
        )


def check_parent_kept(
    client: MlflowClient, parent_id: str, name: str, storage_url: str, tracking: str
) -> None:
    """A sweep continued from its storage logs under its parent run, which must be in this
    tracking store (``client``'s).

    Raises:
        SweepError: the store has no such run (deleted with its ``mlflow.db``, or another store).
    """
    from mlflow.exceptions import MlflowException

    try:
        client.get_run(parent_id)
    except MlflowException as error:
        if error.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
        raise SweepError(
            f"sweep {name}: the sweep storage {redacted(storage_url)} holds it with parent run "
            f"{parent_id}, which the tracking store {redacted(tracking)} does not have; set "
            f"MLFLOW_TRACKING_URI to the store it ran in, or start it afresh with another "
            f"--storage"
        ) from None


def open_storage(url: str, grace: float = GRACE_S, echo: Callable[[str], None] | None = None):
    """Open (and on first use create) Optuna's RDB storage at ``url`` with heartbeats on.

    With ``echo``, a server storage that stops answering later is waited for
    (:func:`resilient`): one line on ``echo`` when it goes, one when it is back.

    Raises:
        SweepError: a malformed URL, or a database that cannot be reached or opened.
    """
    import optuna
    import sqlalchemy.exc

    url = sweep_storage_url(url)
    quiet_optuna()
    if url.startswith("sqlite:///"):
        folder = Path(url.removeprefix("sqlite:///")).parent
        if not folder.is_dir():
            raise SweepError(f"--storage {url}: folder {folder} does not exist")
        engine = {"connect_args": {"timeout": 60}}
    else:
        engine = {"pool_pre_ping": True, "connect_args": {"connect_timeout": 10}}
    interval = heartbeat_interval(grace)
    for attempt in range(3):  # workers creating a server's tables at once: one wins, others retry
        try:
            with _creating(url):
                storage = optuna.storages.RDBStorage(
                    url,
                    engine_kwargs=engine,
                    heartbeat_interval=interval,
                    grace_period=int(grace),
                    heartbeat_stale_trial_callback=(
                        optuna.storages.RetryHeartbeatStaleTrialCallback()
                    ),
                )
            if url.startswith("sqlite:"):
                _lock_on_begin(storage.engine)
            elif echo is not None:
                resilient(storage, Outage(f"the sweep storage {redacted(url)}", echo))
            return storage
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError):
            if attempt == 2:
                raise
            time.sleep(1 + attempt)
        except (sqlalchemy.exc.SQLAlchemyError, OSError) as error:
            reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
            raise SweepError(f"--storage {redacted(url)}: cannot open it: {reason}") from None
    raise AssertionError("unreachable")


def resilient(storage, outage: Outage) -> None:
    """Make every call of ``storage`` (an ``RDBStorage``) wait while its server is away.

    Optuna raises at the first dropped connection, in the main thread and in the heartbeat
    thread alike, where it ends the heartbeat for good (its thread dies): the worker trained on
    while its point looked dead to the others. Here each call is tried again every few seconds
    for up to :data:`~classifier.runs.outages.PATIENCE_S` seconds, with one line when the
    server goes and one when it is back; a heartbeat that cannot be recorded is skipped, so that
    its thread beats on (at its interval) once the server is back.

    The first heartbeat recorded after missed ones also checks that the trial is still this
    worker's: one away for longer than the grace period may have been handed to another worker,
    and then this worker stops training it (:data:`taken_over`, and a ``KeyboardInterrupt`` in the main
    thread that the sweep turns into "left to the other worker").
    """
    import _thread

    for name in dir(type(storage)):
        method = getattr(storage, name)
        if not name.startswith("_") and callable(method) and name != "record_heartbeat":
            setattr(storage, name, retrying(method, outage, _storage_away))
    beat, get_trial, missed = storage.record_heartbeat, storage.get_trial, set()

    def record_heartbeat(trial_id: int) -> None:
        try:
            beat(trial_id)
        except Exception as error:
            reason = _storage_away(error)
            if reason is None:
                raise
            outage.down(reason)
            missed.add(trial_id)  # skipped: the thread beats again after its interval
            return
        outage.up()
        if trial_id in missed:
            missed.discard(trial_id)
            if get_trial(trial_id).state.name != "RUNNING":
                taken_over.add(trial_id)
                _thread.interrupt_main()

    storage.record_heartbeat = record_heartbeat


#: Trial ids that another worker took over while the storage was away (:func:`resilient`).
taken_over: set[int] = set()


def _storage_away(error: BaseException) -> str | None:
    """A short reason where ``error`` means the database server is away, else None."""
    import optuna
    import sqlalchemy.exc

    if isinstance(error, optuna.exceptions.StorageInternalError):
        error = error.__cause__ or error
    if isinstance(error, sqlalchemy.exc.OperationalError | sqlalchemy.exc.InterfaceError):
        text = str(getattr(error, "orig", None) or error).lower()
        reasons = {
            "refused": "connection refused",
            "terminating connection": "the server shut down",
            "closed": "the connection closed",
            "starting up": "the server is starting up",
            "shutting down": "the server is shutting down",
            "timeout": "no answer",
        }
        return next((short for key, short in reasons.items() if key in text), "no connection")
    if isinstance(error, sqlalchemy.exc.DBAPIError) and error.connection_invalidated:
        return "the connection was lost"
    return None


@contextlib.contextmanager
def _creating(url: str) -> Iterator[None]:
    """Let one process at a time create a SQLite storage's tables (a no-op for a server).

    Optuna creates its tables and stamps Alembic's version table outside one transaction, so
    two workers opening a new ``sweeps.db`` at once failed with SQLite's "table studies already
    exists" (seen in CI). An exclusive lock on ``sweeps.db.lock`` beside it, as for MLflow's
    store, orders the creation; the second worker then finds the tables made.
    """
    path = url.removeprefix("sqlite:///")
    if path in (url, ":memory:"):  # a server, or a database that only this process sees
        yield
        return
    with exclusive_lock(Path(path + ".lock")):  # an unwritable folder: no lock, nothing to make
        yield


def _lock_on_begin(engine) -> None:
    """Make every SQLite transaction take the write lock first (``BEGIN IMMEDIATE``).

    Optuna takes a waiting trial by reading its row ``FOR UPDATE`` and setting it RUNNING.
    SQLite has no row locks, and Python's sqlite3 runs that read outside any transaction, so two
    workers could both read WAITING and both take the point (seen in CI: one point trained
    twice). Under ``BEGIN IMMEDIATE`` the second worker's read waits for the first one's commit
    and sees RUNNING. The SQLAlchemy recipe for SQLite's locking; pooled connections opened
    before the listeners are dropped.
    """
    from sqlalchemy import event

    def autocommit_driver(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy, not the driver, begins

    def begin_immediate(connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    event.listen(engine, "connect", autocommit_driver)
    event.listen(engine, "begin", begin_immediate)
    engine.dispose()
