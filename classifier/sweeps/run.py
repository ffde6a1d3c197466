"""Many training runs from one sweep spec, grouped under one MLflow parent run, handed out to
any number of workers by an Optuna study (:mod:`classifier.sweeps.queue`).

``classify sweep SPEC [--storage URL]`` launches the sweep if it is not launched yet (the parent
run; every grid point enqueued once) and then works on it until no point is left: it takes a
waiting point, trains it as a nested child run of the parent (or continues the point's child run
from its last checkpoint, when an earlier worker died or was stopped in it), and reports its best
validation accuracy to the study. The same command on several machines makes them workers of one
sweep. A point that fails by itself is retried up to ``max_retries`` times; a worker that dies is
noticed by its trial's stale heartbeat and its point is handed to another worker; Ctrl-C or
SIGTERM hands the worker's point back. The worker that sees the last point end logs the
comparison table (CSV and Markdown, :mod:`classifier.sweeps.compare`), a bar chart of test
accuracy per variant and a chart of validation accuracy per epoch on the parent, with the
metrics ``best_val_accuracy`` and ``best_test_accuracy`` and the tag ``best_point``: the group
with the highest mean validation accuracy (the test split never chooses). A ``search:`` spec's
parent also gets the best trial, the optimization history and the parameter importances.

Example (trains every point: minutes)::

    result = run_sweep(load_spec("configs/sweeps/quick.yaml"))
    print(format_comparison(result.rows, "markdown"))
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import mlflow
from mlflow.tracking import MlflowClient

from classifier.config.uris import redacted, sweep_storage_url
from classifier.errors import UserError, first_line
from classifier.runs.outages import watch_mlflow
from classifier.runs.tracking import (
    SPEC_HASH_TAG,
    configure_tracking,
    ensure_experiment,
    find_sweep_parent,
    git_commit,
    sweep_children,
)
from classifier.sweeps import queue
from classifier.sweeps.compare import ComparisonRow, compare_runs
from classifier.sweeps.points import train_point
from classifier.sweeps.spec import (
    SweepPoint,
    SweepSpec,
    expand,
    search_hash,
    search_point,
    spec_hash,
    spec_hashes,
)
from classifier.sweeps.storage import (
    GRACE_S,
    TRIAL_HEARTBEAT_S,
    check_parent_kept,
    check_tracking_for,
    default_storage,
    open_storage,
    taken_over,
)
from classifier.sweeps.summary import log_search, log_summary
from classifier.sweeps.table import format_comparison

#: How many times a point that fails by itself is tried again before it is shown as failed.
MAX_RETRIES = 2


class SweepInterrupted(Exception):
    """A worker was stopped (Ctrl-C, SIGTERM): its point is handed back, its child run KILLED."""

    def __init__(self, run_id: str, command: str, alone: bool):
        state = "marked KILLED" if alone else "goes on with the other workers"
        super().__init__(
            f"interrupted: sweep run {run_id} {state}, finished points are kept; "
            f"continue with: {command}"
        )
        self.run_id = run_id


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the parent run, the comparison and which points ran."""

    run_id: str
    rows: list[ComparisonRow]
    trained: list[int] = field(default_factory=list)
    resumed: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    best: ComparisonRow | None = None
    done: bool = False  # every point has ended (finished, or failed with no retry left)


@dataclass
class _Sweep:
    """One worker's view of the sweep it works on."""

    spec: SweepSpec
    points: list[SweepPoint]
    planned: int
    study: object
    parent_id: str
    experiment_id: str
    client: MlflowClient
    echo: Callable[[str], None]
    max_retries: int
    result: SweepResult

    def title(self, point: SweepPoint) -> str:
        return f"[{point.index}/{self.planned}] {point.name}"


# --------------------------------------------------------------------------- running


def run_sweep(
    spec: SweepSpec,
    echo: Callable[[str], None] = print,
    storage: str | None = None,
    grace: float = GRACE_S,
    max_retries: int = MAX_RETRIES,
) -> SweepResult:
    """Launch the sweep if needed, then work on it until no point is left.

    Args:
        spec: the sweep spec (a grid of points, or a ``search:``).
        echo: where progress lines go.
        storage: the Optuna storage URL shared by the workers; default SQLite beside
            ``mlflow.db`` (:func:`classifier.sweeps.storage.default_storage`).
        grace: seconds without a heartbeat after which another worker takes a point over.
        max_retries: how often a point that fails by itself is tried again.

    Raises:
        SweepInterrupted: on Ctrl-C or SIGTERM (the point is handed back).
        SweepError: a bad or unreachable storage, one holding another spec under this name, or
            one continuing a sweep whose parent run this tracking store does not have.

    Example (trains every point of a fresh sweep)::

        result = run_sweep(load_spec("configs/sweeps/quick.yaml"))
        len(result.trained) + len(result.resumed) + len(result.skipped)  # 6
    """
    from classifier.runs.lifecycle import TrainingInterrupted, quiet_libraries

    points = expand(spec)
    planned = spec.search.trials if spec.search else len(points)
    digest = search_hash(spec) if spec.search else spec_hash(points)
    tracking = configure_tracking()
    quiet_libraries()
    storage_url = storage or default_storage(tracking)
    check_tracking_for(sweep_storage_url(storage_url), tracking)
    watch_mlflow(tracking, echo)  # a server's outages: one line each
    rdb = open_storage(storage_url, grace, echo)
    experiment = (points[0].config if points else search_point(spec, 0, {}).config).experiment
    experiment_id = ensure_experiment(experiment)
    client = MlflowClient()

    found: list[bool] = []

    def make_parent() -> str:
        run_id, existed = _parent_run(spec, points, digest, experiment_id, client, storage_url)
        found.append(existed)
        return run_id

    with queue.quiet_storage_errors():
        study, launched = queue.launch(
            rdb,
            f"{spec.name}-{digest}",
            digest,
            "search" if spec.search else "grid",
            planned,
            make_parent,
            seed=spec.search.seed if spec.search else None,
        )
    parent_id = study.user_attrs["parent_run_id"]
    if not launched:
        check_parent_kept(client, parent_id, spec.name, storage_url, tracking)
    result = SweepResult(run_id=parent_id, rows=[])
    sweep = _Sweep(
        spec, points, planned, study, parent_id, experiment_id, client, echo, max_retries, result
    )
    tally = queue.counts(study, planned)
    echo(
        f"sweep {spec.name}: {planned} points, parent run {parent_id} in experiment "
        f"{experiment}" + (" (continuing)" if not launched or any(found) else "")
    )
    if not tally["waiting"] and not tally["running"]:
        echo(
            f"sweep {spec.name}: finished already ({tally['finished']} of {planned} points "
            f"finished, {tally['failed']} failed); nothing left to do"
        )
    command = f"classify sweep {spec.path}" + (
        f" --storage {redacted(storage_url)}" if storage else ""
    )
    try:
        with queue.quiet_storage_errors():
            _work(sweep)
    except (TrainingInterrupted, KeyboardInterrupt):
        alone = not queue.counts(study, planned)["running"]
        if alone:
            client.set_terminated(parent_id, status="KILLED")
        raise SweepInterrupted(parent_id, command, alone) from None
    result.rows = compare_runs(sweep_children(parent_id), client, by_point=True)
    result.done = True
    with mlflow.start_run(run_id=parent_id):
        result.best = log_summary(result.rows, client)
        if spec.search:
            log_search(study)
    if result.rows:
        echo(format_comparison(result.rows, "table"))
    if result.best:
        best = result.best
        echo(
            f"best: {best.variant} (mean val_accuracy {best.best_val_accuracy:.4f}, "
            f"test_accuracy {best.test_accuracy_mean:.4f} ± {best.test_accuracy_std:.4f}) - "
            f"sweep run {parent_id}; trained {len(result.trained)}, resumed "
            f"{len(result.resumed)}, skipped {len(result.skipped)}"
            + (f", failed {len(result.failed)}" if result.failed else "")
        )
    return result


def _work(sweep: _Sweep) -> None:
    """Take points until none waits; wait while other workers still run some (one of them may
    die, and its point come back)."""
    import optuna

    said_waiting = False
    while True:
        tally = queue.counts(sweep.study, sweep.planned)
        if tally["waiting"]:
            _run_one(sweep)
            continue
        if not tally["running"]:
            return
        if not said_waiting:
            sweep.echo(f"waiting for {tally['running']} point(s) running on other workers")
            said_waiting = True
        time.sleep(TRIAL_HEARTBEAT_S)
        optuna.storages.fail_stale_trials(sweep.study)


def _run_one(sweep: _Sweep) -> None:
    """Take one waiting point and run it as an Optuna trial; a failure is retried or shown."""
    import optuna

    from classifier.runs.lifecycle import TrainingInterrupted

    taken: dict[str, object] = {}

    def objective(trial: optuna.Trial) -> float:
        point = _point_of(sweep, trial)
        taken["number"], taken["point"], taken["id"] = trial.number, point, trial._trial_id
        trial.set_user_attr("worker", queue.worker_name())
        return train_point(sweep, point, trial)

    try:
        sweep.study.optimize(objective, n_trials=1, catch=())
    except (TrainingInterrupted, KeyboardInterrupt):
        if taken.get("id") in taken_over:  # not a stop: the point went to another worker
            sweep.echo(
                f"left {sweep.title(taken['point'])} to another worker: the sweep storage was "
                "away for longer than the grace period, and the point was handed on"
            )
            return
        if "number" in taken:
            queue.retry(sweep.study, _trial(sweep, taken["number"]), count=False)  # hand back
        raise
    except optuna.exceptions.TrialPruned:
        return
    except Exception as error:  # noqa: BLE001 - a point that fails is retried or shown failed
        if "number" not in taken:
            raise
        trial, point = _trial(sweep, taken["number"]), taken["point"]
        reason = _failure(error)
        done = queue.failures(trial)
        if done < sweep.max_retries:
            queue.retry(sweep.study, trial)
            sweep.echo(
                f"failed {sweep.title(point)}: {reason}; tried again later "
                f"(retry {done + 1} of {sweep.max_retries})"
            )
        else:
            sweep.result.failed.append(point.index)
            sweep.echo(f"failed {sweep.title(point)}: {reason}; no retry left")


def _failure(error: Exception) -> str:
    """Why a point failed, on one line. An artefact the MLflow server could not store (its
    disk full, say) is named with its path; the server's log has the cause.

    Example:
        >>> _failure(RuntimeError("API request to http://h:5000/api/2.0/mlflow-artifacts/"
        ...     "artifacts/1/0a1b/artifacts/checkpoint/odd/last.keras failed with exception "
        ...     "HTTPConnectionPool(...): Max retries exceeded (Caused by ResponseError('too many "
        ...     "500 error responses'))"))
        'the MLflow server answered 500 when storing checkpoint/odd/last.keras (is its artefact disk full? its log says); the checkpoint before it is kept'
    """
    if isinstance(error, UserError):
        return first_line(error)
    text = str(error)
    stored = re.search(r"/mlflow-artifacts/artifacts/[^ ]*?/artifacts/([^ ]+)", text)
    status = re.search(r"too many (\d{3}) error responses|error code (\d{3})", text)
    if stored and status:
        kept = "; the checkpoint before it is kept" if stored.group(1).startswith("checkp") else ""
        return (
            f"the MLflow server answered {status.group(1) or status.group(2)} when storing "
            f"{stored.group(1)} (is its artefact disk full? its log says){kept}"
        )
    return f"{type(error).__name__}: {first_line(error)}"


def _trial(sweep: _Sweep, number: int):
    return next(t for t in sweep.study.get_trials(deepcopy=False) if t.number == number)


def _point_of(sweep: _Sweep, trial) -> SweepPoint:
    """The point a trial runs: a grid point by its number; a search draws (or, retried, keeps)
    its values. A trial that a race made beyond the planned points is pruned."""
    import optuna

    number = trial.user_attrs.get("point")
    if sweep.spec.search is None:
        if number is None:
            raise optuna.TrialPruned("no point waits")
        return sweep.points[number - 1]
    if number is None:
        if len(queue.point_states(sweep.study)) >= sweep.planned:
            raise optuna.TrialPruned("every trial is drawn")
        number = trial.number + 1
        trial.set_user_attr("point", number)
    values = {key: _suggest(trial, key, bounds) for key, bounds in sweep.spec.search.space.items()}
    return search_point(sweep.spec, number, values)


def _suggest(trial, key: str, bounds):
    if isinstance(bounds, list):
        return trial.suggest_categorical(key, bounds)
    if isinstance(bounds["low"], int) and isinstance(bounds["high"], int):
        return trial.suggest_int(key, bounds["low"], bounds["high"], log=bounds["log"])
    return trial.suggest_float(key, bounds["low"], bounds["high"], log=bounds["log"])


def _parent_run(
    spec: SweepSpec,
    points: list[SweepPoint],
    digest: str,
    experiment_id: str,
    client: MlflowClient,
    storage_url: str,
) -> tuple[str, bool]:
    """The sweep's parent run and whether it existed: one made before for the same spec (its
    hash tag, a sweep from before the Optuna queue included) is continued."""
    digests = spec_hashes(points) if points else (digest,)
    found = (find_sweep_parent(experiment_id, each) for each in digests)
    previous = next((parent for parent in found if parent), None)
    if previous is not None:
        return previous, True
    tags = {
        SPEC_HASH_TAG: digest,
        "sweep_name": spec.name,
        "git_commit": git_commit(),
        "sweep_storage": redacted(storage_url),
    }
    run_id = client.create_run(experiment_id, run_name=spec.name, tags=tags).info.run_id
    params = {
        "sweep.spec": str(spec.path),
        "sweep.base": str(spec.base),
        "sweep.points": spec.search.trials if spec.search else len(points),
    }
    if spec.search:
        params["sweep.search"] = json.dumps(spec.search.space)
    else:
        params["sweep.grid"] = json.dumps(spec.grid)
    for key, value in params.items():
        client.log_param(run_id, key, value)
    client.log_text(run_id, spec.path.read_text(), "sweep.yaml")
    return run_id, False
