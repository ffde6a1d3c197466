"""MLflow tracking: where runs go (URIs), experiments, the tags that tie runs together and the
queries that find them again. Imports nothing from the package.

By default every run lands in one SQLite store, ``<project root>/mlflow.db``, with artefacts in
``<project root>/mlruns/``, whatever the working directory; ``MLFLOW_TRACKING_URI`` overrides it
(for example ``http://127.0.0.1:5000`` for an ``mlflow server``).

Example (creates the store if need be)::

    uri = configure_tracking()
    experiment_id = ensure_experiment("imdb-classifier")
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import mlflow
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

PACKAGE_DIR = Path(__file__).resolve().parent

# MLflow tags of sweep runs.
SPEC_HASH_TAG = "sweep_spec_hash"  # parent: hash of the resolved point list
PARENT_TAG = "sweep_parent"  # child: the parent's run id
POINT_TAG = "sweep_point"  # child: the point's number, from 1
LABEL_TAG = "sweep_label"  # child: the point's group label, e.g. "encoder (position=learned)"
CONFIG_HASH_TAG = "config_hash"  # every training run: Config.config_hash() of its config


def project_root() -> Path:
    """The checkout holding ``pyproject.toml`` (editable installs), else the working directory."""
    root = PACKAGE_DIR.parent
    return root if (root / "pyproject.toml").is_file() else Path.cwd()


def default_tracking_uri() -> str:
    """``sqlite:////abs/path/mlflow.db`` in the project root."""
    return f"sqlite:///{project_root() / 'mlflow.db'}"


def tracking_uri() -> str:
    """``MLFLOW_TRACKING_URI`` when set, else :func:`default_tracking_uri`."""
    return os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()


def configure_tracking() -> str:
    """Point MLflow (tracking and model registry) at :func:`tracking_uri`; return the URI."""
    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    return uri


def ensure_experiment(name: str) -> str:
    """Create the experiment if needed and make it active; return its id.

    A new experiment in a local SQLite store keeps its artefacts beside the database
    (``mlruns/`` next to ``mlflow.db``), not relative to the current directory.
    """
    client = MlflowClient()
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        location = None
        uri = mlflow.get_tracking_uri()
        if uri.startswith("sqlite:///"):
            location = (Path(uri.removeprefix("sqlite:///")).parent / "mlruns").as_uri()
        experiment_id = client.create_experiment(name, artifact_location=location)
    else:
        experiment_id = experiment.experiment_id
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
