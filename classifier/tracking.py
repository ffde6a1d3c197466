"""MLflow set-up and logging helpers: where runs go, the per-epoch callback, the pyfunc model.

By default every run lands in one SQLite store, ``<project root>/mlflow.db``, with artefacts in
``<project root>/mlruns/``, whatever the working directory; ``MLFLOW_TRACKING_URI`` overrides it
(for example ``http://127.0.0.1:5000`` for an ``mlflow server``).

Example:
    >>> uri = configure_tracking()
    >>> experiment_id = ensure_experiment("imdb-classifier")
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from mlflow.tracking import MlflowClient
from mlflow.utils.logging_utils import disable_logging, enable_logging

PACKAGE_DIR = Path(__file__).resolve().parent
MODEL_ALIAS = "newest"  # alias of the newest registered version ("latest" is reserved by MLflow)


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


def runtime_requirements() -> list[str]:
    """Pinned requirements of the pyfunc model: the TensorFlow build installed, Keras, MLflow."""
    pins = []
    for name in ("tensorflow-cpu", "tensorflow", "keras", "tensorflow-datasets", "mlflow"):
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return pins


class SentimentModel(mlflow.pyfunc.PythonModel):
    """MLflow pyfunc wrapper of the end-to-end ``.keras`` model (raw strings in).

    ``predict`` takes a list of review strings (or a one-column DataFrame) and returns a
    DataFrame with ``label`` ("negative"/"positive") and ``positive_probability``.
    """

    def load_context(self, context) -> None:
        from classifier.predict import load_keras_model

        self._model = load_keras_model(context.artifacts["keras_model"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_model", None)  # never pickle the Keras model; it is loaded from the artefact
        return state

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        # The signature (one string column) makes MLflow hand over a DataFrame, also for a
        # plain list of strings; the type hint tells MLflow not to infer another signature.
        from classifier.predict import predict_texts

        texts = model_input.iloc[:, 0].astype(str).tolist()
        probabilities = predict_texts(self._model, texts)
        return pd.DataFrame(
            {
                "label": ["positive" if p >= 0.5 else "negative" for p in probabilities],
                "positive_probability": probabilities,
            }
        )


def log_pyfunc_model(keras_path: Path, registered_name: str, example: list[str]):
    """Log the end-to-end model as an MLflow pyfunc model, register it, move the alias to it.

    Returns:
        the ``ModelVersion`` that was registered.
    """
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema

    signature = ModelSignature(
        inputs=Schema([ColSpec("string")]),  # a list of review strings
        outputs=Schema([ColSpec("string", "label"), ColSpec("double", "positive_probability")]),
    )
    # MLflow prints 'Registered model ... Created version ...' itself; the caller reports it.
    disable_logging()
    try:
        info = mlflow.pyfunc.log_model(
            name="model",
            python_model=SentimentModel(),
            artifacts={"keras_model": str(keras_path)},
            code_paths=[str(PACKAGE_DIR)],
            pip_requirements=runtime_requirements(),
            signature=signature,
            input_example=example,
            registered_model_name=registered_name,
        )
    finally:
        enable_logging()
    client = MlflowClient()
    version = client.get_model_version(registered_name, info.registered_model_version)
    client.set_registered_model_alias(registered_name, MODEL_ALIAS, version.version)
    return version
