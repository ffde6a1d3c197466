"""The sweep's work queue: an Optuna study in an RDB storage whose trials are the sweep's points.

Optuna does the coordination that several machines need: the first worker to create the study
launches the sweep (the MLflow parent run, and every point of a grid enqueued once as a WAITING
trial); every worker then takes WAITING trials one at a time (the storage's row lock makes each
trial one worker's), keeps a heartbeat on the trial it runs, and fails the trials of workers whose
heartbeat went stale, handing them back to the queue (``RetryHeartbeatStaleTrialCallback``).
MLflow is the record: each point is one child run of the parent, found again by its config hash,
so a retried point continues its child run from its last checkpoint.

A point's trial carries the user attributes ``point`` (its number), ``worker`` (``host pid``) and
``run_id`` (its MLflow child run); the study carries ``parent_run_id``, ``spec_hash``, ``kind``
(``grid`` or ``search``), ``points`` and, once every point is enqueued, ``launched``.

Example (a grid of 2 points in a throwaway storage)::

    storage = open_storage("sqlite:///sweeps.db")
    study, launched = launch(storage, "tiny-0123456789ab", "0123456789ab", "grid", 2,
                             make_parent=lambda: "f" * 32)
    counts(study)  # {'waiting': 2, 'running': 0, 'finished': 0, 'failed': 0}
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from classifier.errors import SweepError

#: How long a worker waits for another worker to finish launching the sweep.
LAUNCH_WAIT_S = 120.0


def launch(
    storage,
    study_name: str,
    digest: str,
    kind: str,
    points: int,
    make_parent: Callable[[], str],
    seed: int | None = None,
) -> tuple[object, bool]:
    """Create the sweep's study and launch it, or join the one another worker launched.

    The worker whose ``create_study`` succeeds makes the parent run (``make_parent``), enqueues
    ``points`` grid points (none for a search) and marks the study ``launched``; the others
    wait for that mark. Returns the study and whether this worker launched it.

    Raises:
        SweepError: the storage holds a different spec under this study name, or the launch
            did not finish within :data:`LAUNCH_WAIT_S` seconds.
    """
    import optuna

    sampler = optuna.samplers.TPESampler(seed=seed) if kind == "search" else None
    direction = "maximize"
    try:
        study = optuna.create_study(
            storage=storage, study_name=study_name, direction=direction, sampler=sampler
        )
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=study_name, storage=storage, sampler=sampler)
        _wait_for_launch(study, digest)
        return study, False
    study.set_user_attr("spec_hash", digest)
    study.set_user_attr("kind", kind)
    study.set_user_attr("points", points)
    study.set_user_attr("parent_run_id", make_parent())
    for number in range(1, points + 1) if kind == "grid" else ():
        study.enqueue_trial({"point": number}, user_attrs={"point": number})
    study.set_user_attr("launched", True)
    return study, True


def _wait_for_launch(study, digest: str) -> None:
    deadline = time.monotonic() + LAUNCH_WAIT_S
    while True:
        attrs = study.user_attrs
        if attrs.get("spec_hash", digest) != digest:
            raise SweepError(
                f"the sweep storage holds a different spec under the name {study.study_name!r} "
                f"(spec hash {attrs['spec_hash']}, this one {digest}); rename the spec or use "
                f"another --storage"
            )
        if attrs.get("launched"):
            return
        if time.monotonic() > deadline:
            raise SweepError(
                f"sweep {study.study_name!r} was created but its launch did not finish within "
                f"{LAUNCH_WAIT_S:.0f} s (its first worker died?); delete the study with "
                f"optuna delete-study --study-name {study.study_name} and start again"
            )
        time.sleep(1)


def find_study(storage, study_name: str):
    """The sweep's study, or None where no worker has launched it yet."""
    import optuna

    try:
        return optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        return None


# --------------------------------------------------------------------------- points and trials


@dataclass
class PointState:
    """Where one point of a sweep stands, from its trials (retries included)."""

    point: int
    state: str  # waiting, running, finished, failed
    worker: str = ""
    run_id: str = ""
    value: float | None = None
    attempts: int = 0


def point_states(study) -> dict[int, PointState]:
    """Each point's state: finished if one of its trials completed, else running, waiting or
    failed (a failure that was handed back or retried counts as its retry's state)."""
    from optuna.trial import TrialState

    order = {
        TrialState.COMPLETE: (4, "finished"),
        TrialState.RUNNING: (3, "running"),
        TrialState.WAITING: (2, "waiting"),
        TrialState.FAIL: (1, "failed"),
    }
    states: dict[int, PointState] = {}
    best: dict[int, int] = {}
    for trial in study.get_trials(deepcopy=False):
        point = trial.user_attrs.get("point")
        if point is None or trial.state not in order:
            continue  # a surplus trial that a race made and the objective pruned
        rank, name = order[trial.state]
        entry = states.setdefault(point, PointState(point, name))
        entry.attempts += 1
        if rank > best.get(point, 0):
            best[point] = rank
            entry.state = name
            entry.worker = trial.user_attrs.get("worker", "")
            entry.run_id = trial.user_attrs.get("run_id", entry.run_id)
            entry.value = trial.value if trial.state == TrialState.COMPLETE else None
    return states


def counts(study, planned: int | None = None) -> dict[str, int]:
    """How many points wait, run, finished and failed; a search's points not drawn yet wait.

    Example (a fresh grid of 2 points)::

        counts(study)  # {'waiting': 2, 'running': 0, 'finished': 0, 'failed': 0}
    """
    tally = {"waiting": 0, "running": 0, "finished": 0, "failed": 0}
    states = point_states(study)
    for entry in states.values():
        tally[entry.state] += 1
    if planned is not None:
        tally["waiting"] += max(0, planned - len(states))
    return tally


def worker_name() -> str:
    """``"<host> pid <pid>"``: how status names the worker that runs a point."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def retry(study, trial, count: bool = True) -> None:
    """Put a failed trial's point back in the queue, with its params and attributes. A
    counted retry adds the trial to the point's retry history (:func:`failures`); a point handed
    back by a stopped worker (``count=False``) keeps its history."""
    import optuna

    history = list(trial.system_attrs.get("retry_history", []))
    if count:
        history.append(trial.number)
    system = {"failed_trial": history[0], "retry_history": history} if history else {}
    study.add_trial(
        optuna.trial.create_trial(
            state=optuna.trial.TrialState.WAITING,
            params=trial.params,
            distributions=trial.distributions,
            user_attrs={k: v for k, v in trial.user_attrs.items() if k != "worker"},
            system_attrs=system,
        )
    )


def failures(trial) -> int:
    """How many times this trial's point has failed before (its retry history)."""
    return len(trial.system_attrs.get("retry_history", []))


@contextlib.contextmanager
def quiet_storage_errors() -> Iterator[None]:
    """Translate a storage that went away mid-sweep into one line."""
    import sqlalchemy.exc

    try:
        yield
    except sqlalchemy.exc.OperationalError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise SweepError(f"the sweep storage stopped answering: {reason}") from None
