"""MLflow tracking: where runs go (URIs), experiments, the tags that tie runs together and the
queries that find them again. Imports nothing from the package but :mod:`classifier.errors` and the URI parser
(:mod:`classifier.config.uris`).

By default every run lands in one SQLite store, ``<project root>/mlflow.db``, with artefacts in
``<project root>/mlruns/``, whatever the working directory; ``MLFLOW_TRACKING_URI`` overrides it
(for example ``http://127.0.0.1:5000`` for an ``mlflow server``). :func:`configure_tracking`
checks the store before anything is trained: a server must answer ``GET /health`` within
seconds, and a SQLite store is created (or migrated) under a lock, once, so that processes
started together do not race in MLflow's migrations.

Example (creates the store if need be)::

    uri = configure_tracking()
    experiment_id = ensure_experiment("imdb-classifier")
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import mlflow
from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from classifier.config.uris import check_store_uri, redacted
from classifier.errors import TrackingError, first_line
from classifier.runs.store_paths import (  # noqa: F401 - tracking_uri and friends live there
    PACKAGE_DIR,
    default_tracking_uri,
    project_root,
    sqlite_path,
    tracking_origin,
    tracking_uri,
)

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; the store is then created unlocked
    fcntl = None


# MLflow tags of sweep runs.
SPEC_HASH_TAG = "sweep_spec_hash"  # parent: hash of the resolved point list
PARENT_TAG = "sweep_parent"  # child: the parent's run id
POINT_TAG = "sweep_point"  # child: the point's number, from 1
LABEL_TAG = "sweep_label"  # child: the point's group label, e.g. "encoder (position=learned)"
MODEL_ALIAS = "newest"  # alias of the newest registered version ("latest" is reserved by MLflow)
CONFIG_HASH_TAG = "config_hash"  # every training run: Config.config_hash() of its config

HEALTH_TIMEOUT = 3.0  # seconds a tracking server has to answer GET /health


def configure_tracking(absent: str | None = None) -> str:
    """Point MLflow (tracking and model registry) at :func:`tracking_uri`, check that the store
    answers, and return the URI. For a lookup, ``absent`` is what is missing when a local store
    does not exist yet (``"no run 'ID'"``): then ``"<absent> in <URI>"`` is raised and nothing is
    created.

    An ``http(s)`` server must answer ``GET /health`` within :data:`HEALTH_TIMEOUT` seconds. A
    SQLite store is opened once under an exclusive lock on ``<db>.lock`` beside it, so that
    MLflow creates or migrates a fresh database in one process only; other stores are opened
    once, so that a bad URI fails here.

    Raises:
        TrackingError: one line naming the URI (unreachable server, unknown scheme, missing
            folder, unwritable folder, not a database, ...).
    """
    uri = tracking_uri()
    path = sqlite_path(uri)
    if check_store_uri(uri, _origin()) in ("http", "https"):
        check_server(uri)
    elif path is None:
        _open_store(uri)  # another database, a bare path, an unknown scheme
    else:
        if not path.parent.is_dir():
            raise TrackingError(
                f"tracking store {uri}{_origin()}: folder {path.parent} does not exist"
            )
        if absent and not path.exists():
            raise TrackingError(f"{absent} in {uri}")
        with exclusive_lock(path.with_name(path.name + ".lock")) as locked:
            if not locked and not path.exists():
                raise TrackingError(
                    f"tracking store {uri}{_origin()}: cannot create it, folder {path.parent} "
                    "is not writable"
                )
            _open_store(uri)
    mlflow.set_tracking_uri(uri)  # only once the store answers
    mlflow.set_registry_uri(uri)
    return uri


def _origin() -> str:
    return tracking_origin()


def check_server(uri: str, timeout: float = HEALTH_TIMEOUT) -> None:
    """Raise :class:`TrackingError` unless the MLflow server at ``uri`` answers ``GET /health``
    with 200 ``OK`` within ``timeout`` seconds (no retries; MLflow's own requests would retry
    for minutes) and takes this process's credentials (``MLFLOW_TRACKING_USERNAME`` and
    ``MLFLOW_TRACKING_PASSWORD``, where it asks for them). Uses MLflow's HTTP settings: TLS,
    credentials, proxies."""
    from mlflow.tracking._tracking_service.utils import get_default_host_creds

    creds = get_default_host_creds(uri)
    where = f"the MLflow tracking server {redacted(uri)}{_origin()}"
    answer = _ask(creds, "/health", where, timeout)
    if answer.status_code != 200 or answer.text.strip() != "OK":
        status = f"{answer.status_code} {answer.reason}".strip()
        raise TrackingError(
            f"{where} answered GET /health with {status}, not 200 OK: is it an MLflow server?"
        )
    # /health answers anyone: a request that needs a login tells whether this one is taken.
    answer = _ask(creds, "/api/2.0/mlflow/experiments/search?max_results=1", where, timeout)
    if answer.status_code == 401 and not creds.username:
        raise TrackingError(
            f"{where} asks for a login: set MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD (make server prints them)"
        )
    if answer.status_code == 401:
        raise TrackingError(
            f"{where} refused user {creds.username!r}: wrong or missing MLFLOW_TRACKING_PASSWORD"
        )
    if answer.status_code == 403:
        raise TrackingError(f"{where}: user {creds.username!r} may not read experiments")


def _ask(creds, endpoint: str, where: str, timeout: float):
    """GET ``endpoint`` once; a connection that fails is one line (:class:`TrackingError`)."""
    from mlflow.utils.rest_utils import http_request

    try:
        return http_request(
            creds, endpoint, "GET", max_retries=0, timeout=timeout, raise_on_status=False
        )
    except MlflowException as error:  # MLflow wraps what requests raised
        text = str(error).lower()
        reasons = {
            "connection refused": "connection refused",
            "timed out": f"no answer within {timeout:g} s",
            "name or service not known": "unknown host",
            "nodename nor servname": "unknown host",
            "certificate verify failed": (
                "its TLS certificate is not trusted (set MLFLOW_TRACKING_SERVER_CERT_PATH to "
                "the certificate make server made: SERVER_DIR/worker/ca.pem)"
            ),
        }
        reason = next((short for key, short in reasons.items() if key in text), first_line(error))
        raise TrackingError(f"cannot reach {where}: {reason}") from None


@contextlib.contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created if needed); yields False when the
    file cannot be created (a read-only folder: nobody can create a store there either).

    Example:
        >>> with exclusive_lock(Path("/tmp/demo.db.lock")) as locked:
        ...     locked
        True
    """
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield False
        return
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield True
    finally:
        os.close(descriptor)  # releases the lock


def _open_store(uri: str) -> None:
    """One cheap query, which makes MLflow create or migrate the database when needed."""
    from sqlalchemy.exc import SQLAlchemyError  # what a database that is not one raises

    mlflow_logger = logging.getLogger("mlflow")
    level = mlflow_logger.level
    mlflow_logger.setLevel(logging.WARNING)  # not "Creating initial MLflow database tables..."
    try:
        MlflowClient(uri).search_experiments(max_results=1)
    except (MlflowException, SQLAlchemyError, OSError) as error:
        raise TrackingError(f"tracking store {uri}{_origin()}: {first_line(error)}") from None
    finally:
        mlflow_logger.setLevel(level)


#: The experiment tag that makes the MLflow UI open an experiment on its model-training view
#: (runs table and charts), not the GenAI view (traces, an assistant panel) it guesses otherwise.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"


def ensure_experiment(name: str) -> str:
    """Create the experiment if needed and make it active; return its id. The experiment is
    tagged as model training, so that the MLflow UI opens it on the runs view.

    A new experiment in a local SQLite store keeps its artefacts beside the database
    (``mlruns/`` next to ``mlflow.db``), not relative to the current directory. Processes that
    start together (the workers of a sweep) may all find no experiment: one creates it, and
    the others use the one it created.
    """
    client = MlflowClient()
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        location = None
        path = sqlite_path(mlflow.get_tracking_uri())
        if path is not None:
            location = (path.resolve().parent / "mlruns").as_uri()
        try:
            experiment_id = client.create_experiment(
                name, artifact_location=location, tags={EXPERIMENT_KIND_TAG: MODEL_TRAINING}
            )
        except MlflowException as error:
            experiment = client.get_experiment_by_name(name)  # another process was first
            if error.error_code != "RESOURCE_ALREADY_EXISTS" or experiment is None:
                raise
    if experiment is not None:
        experiment_id = experiment.experiment_id
        if experiment.tags.get(EXPERIMENT_KIND_TAG) != MODEL_TRAINING:
            client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, MODEL_TRAINING)
    mlflow.set_experiment(experiment_id=experiment_id)
    return experiment_id


def git_commit() -> str:
    """The checkout's commit hash (with ``-dirty`` when it has local changes), or ``unknown``."""
    try:
        root = project_root()
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return f"{commit}-dirty" if dirty else commit
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def find_sweep_parent(experiment_id: str, digest: str, earliest: bool = False) -> str | None:
    """The newest (or the earliest) sweep parent run with this spec hash, or None."""
    runs = mlflow.search_runs(
        experiment_ids=[experiment_id],
        filter_string=f"tags.{SPEC_HASH_TAG} = '{digest}'",
        output_format="list",
    )
    if not runs:
        return None
    order = sorted(runs, key=lambda run: (run.info.start_time, run.info.run_id))
    return (order[0] if earliest else order[-1]).info.run_id


def sweep_children(parent_run_id: str, finished_only: bool = True) -> list[Run]:
    """The child runs of a sweep's parent run (only the FINISHED ones by default), newest first."""
    parent = MlflowClient().get_run(parent_run_id)
    status = " and attributes.status = 'FINISHED'" if finished_only else ""
    return mlflow.search_runs(
        experiment_ids=[parent.info.experiment_id],
        filter_string=f"tags.{PARENT_TAG} = '{parent_run_id}'{status}",
        order_by=["attributes.start_time DESC"],
        output_format="list",
    )


def metric_history(client: MlflowClient, run_id: str, key: str) -> list[float]:
    """A metric's values in step order (the last value logged at a step wins)."""
    by_step = {metric.step: metric.value for metric in client.get_metric_history(run_id, key)}
    return [by_step[step] for step in sorted(by_step)]


def version_of_run(name: str, run_id: str):
    """The version of registered model ``name`` that run ``run_id`` registered, or None: a run
    resumed after a kill that fell between its registration and its end registers nothing new.

    Example (in a store where run ``abc`` registered version 1)::

        version_of_run("imdb-sentiment", "abc").version  # '1'
    """
    versions = MlflowClient().search_model_versions(f"name = '{name}' and run_id = '{run_id}'")
    return min(versions, key=lambda version: int(version.version)) if versions else None
