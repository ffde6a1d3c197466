"""Finding, loading and logging models in MLflow, and the pyfunc wrapper that serves them.

A model is found from a ``--model`` value (:func:`load_model`): a ``.keras`` file, a folder
holding one (an MLflow model folder included), or an MLflow URI (``models:/NAME@ALIAS``,
``models:/NAME/VERSION``, ``models:/NAME@latest``, ``runs:/RUN_ID[/PATH]``); by default the
newest version of the registered ``imdb-sentiment`` in the configured tracking store. MLflow
models are loaded from their ``.keras`` file (``safe_mode`` on) and run by Keras directly.
Training logs a model with :func:`log_pyfunc_model`: the :class:`SentimentModel` pyfunc
wrapper, registered, with the alias ``newest`` moved to it.

Example (a store with a registered model)::

    model = load_model("models:/imdb-sentiment@newest")
    predict_texts(model, ["A wonderful film."])  # [0.93]
"""

from __future__ import annotations

import importlib.metadata
import os
import tempfile
from pathlib import Path

import keras
import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.logging_utils import disable_logging, enable_logging

import classifier.layers  # noqa: F401 - registers the custom layers that saved models name
from classifier.data.vectorizer import ReviewVectorizer
from classifier.errors import ModelError, first_line
from classifier.runs.tracking import (
    MODEL_ALIAS,
    PACKAGE_DIR,
    configure_tracking,
)
from classifier.serving.keras_engine import load_keras_model
from classifier.serving.model_source import (
    KERAS_ARTIFACT,
    keras_file,
    local_keras_model,
    refuse_missing_store,
)
from classifier.serving.pyfunc import SentimentModel
from classifier.serving.versions import (  # noqa: F401 - DEFAULT_MODEL_NAME: imported from here
    DEFAULT_MODEL_NAME,
    LATEST,
    find_version,
    is_version_ref,
    model_parts,
)


def load_model(spec: str | None = None) -> keras.Model:
    """Load the end-to-end model named by ``spec`` (a ``--model`` value), checked for shape.

    Args:
        spec: a ``.keras`` file, a folder holding one, an MLflow URI, or ``None`` for the newest
            version of the registered ``imdb-sentiment`` in the configured tracking store.

    Raises:
        ModelError: with one line saying what is wrong (and how to train a model when none is
            registered).
    """
    if spec is None:
        return _load_from_mlflow(f"models:/{DEFAULT_MODEL_NAME}@{LATEST}", default=True)
    path = local_keras_model(spec)  # a path that cannot hold a model: ModelError
    if path is None:  # models:/ or runs:/
        return _load_from_mlflow(spec)
    return _load_local(path, f"--model {spec}")


def _load_local(path: Path, shown: str) -> keras.Model:
    path = keras_file(path, shown)
    try:
        model = load_keras_model(path)
    except Exception as error:  # noqa: BLE001 - Keras raises many kinds for a bad file
        raise ModelError(f"{shown}: not a loadable Keras model ({first_line(error)})") from None
    _check_end_to_end(model, shown)
    return model


def _check_end_to_end(model, shown: str) -> None:
    inputs = getattr(model, "inputs", None) or []
    is_text = len(inputs) == 1 and "string" in str(inputs[0].dtype)
    has_vectorizer = any(isinstance(layer, ReviewVectorizer) for layer in model.layers)
    classes = tuple(model.outputs[0].shape)[-1] if model.outputs else None
    if not (is_text and has_vectorizer and isinstance(classes, int) and classes >= 2):
        raise ModelError(
            f"{shown}: a Keras model, but not an end-to-end review classifier "
            "(raw strings in, class probabilities out; the model.keras of a training run)"
        )


def _load_from_mlflow(uri: str, default: bool = False) -> keras.Model:
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    refuse_missing_store(None if default else uri)
    store = configure_tracking()
    with tempfile.TemporaryDirectory(prefix="classify-model-") as workdir:
        try:
            if uri.startswith("models:"):
                local = _download_registered(uri, store, Path(workdir), default)
            elif (
                uri.startswith("runs:")
                and len(uri.removeprefix("runs:/").strip("/").split("/")) == 1
            ):
                run_id = uri.removeprefix("runs:/").strip("/")
                local = mlflow.artifacts.download_artifacts(
                    run_id=run_id, artifact_path=KERAS_ARTIFACT, dst_path=workdir
                )
            else:
                local = mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=workdir)
        except ModelError:
            raise
        except (MlflowException, OSError) as error:
            raise ModelError(
                f"--model {uri}: cannot get it from {store} ({first_line(error)})"
            ) from None
        return _load_local(Path(local), f"model {uri}" if default else f"--model {uri}")


def _download_registered(uri: str, store: str, workdir: Path, default: bool) -> str:
    """Download the ``.keras`` file of a registered model version (``models:/...``)."""
    name, alias, ref = model_parts(uri)
    if (alias is None and ref is None) or (ref is not None and not is_version_ref(ref)):
        # A logged-model id (models:/m-...) or a stage: let MLflow resolve it.
        return mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(workdir))
    version = find_version(uri, name, alias, ref, store, default)
    try:  # the run's model.keras: a single file, no pyfunc wrapper
        return mlflow.artifacts.download_artifacts(
            run_id=version.run_id, artifact_path=KERAS_ARTIFACT, dst_path=str(workdir / "run")
        )
    except (MlflowException, OSError):  # else the pyfunc model's artifacts/*.keras
        return mlflow.artifacts.download_artifacts(
            artifact_uri=f"models:/{name}/{version.version}", dst_path=str(workdir / "model")
        )


def runtime_requirements() -> list[str]:
    """Pinned requirements of the pyfunc model: the TensorFlow build installed, Keras, MLflow,
    LiteRT."""
    pins = []
    names = (
        "tensorflow-cpu",
        "tensorflow",
        "keras",
        "tensorflow-datasets",
        "mlflow",
        "ai-edge-litert",
    )
    for name in names:
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return pins


def pyfunc_signature(labels: tuple[str, ...]):
    """The ``ModelSignature`` of the pyfunc model of a classifier of ``labels``: one input
    column of any JSON value, the outputs of :class:`~classifier.serving.pyfunc.SentimentModel`
    (for more than two ``labels``, a probability column per class).

    Example:
        >>> pyfunc_signature(("negative", "positive")).outputs.input_names()
        ['label', 'positive_probability', 'known_share']
    """
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema
    from mlflow.types.schema import AnyType

    if len(labels) == 2:
        outputs = [ColSpec("double", "positive_probability")]
    else:
        outputs = [ColSpec("double", "probability")]
    outputs.append(ColSpec("double", "known_share"))
    if len(labels) > 2:
        outputs += [ColSpec("double", f"P({name})") for name in labels]
    return ModelSignature(
        # A list of reviews, each value passed on as the client sent it: a "string" column
        # would have MLflow turn null into "None" and 42 into "42" before the model could
        # refuse them (SentimentModel.predict checks every row).
        inputs=Schema([ColSpec(AnyType())]),
        outputs=Schema([ColSpec("string", "label"), *outputs]),
    )


def log_pyfunc_model(
    keras_path: Path,
    registered_name: str,
    example: list[str],
    bundle: Path | None = None,
    labels: tuple[str, ...] = ("negative", "positive"),
):
    """Log the end-to-end model as an MLflow pyfunc model (:func:`pyfunc_signature`), register
    it, move the alias to it.

    Returns:
        the ``ModelVersion`` that was registered.
    """
    # MLflow prints 'Registered model ... Created version ...' itself; the caller reports it.
    disable_logging()
    try:
        info = mlflow.pyfunc.log_model(
            name="model",
            python_model=SentimentModel(),
            artifacts={
                "keras_model": str(keras_path),
                **({"bundle": str(bundle)} if bundle is not None else {}),
            },
            code_paths=[str(PACKAGE_DIR)],
            pip_requirements=runtime_requirements(),
            signature=pyfunc_signature(labels),
            input_example=example,
            registered_model_name=registered_name,
        )
    finally:
        enable_logging()
    client = MlflowClient()
    version = client.get_model_version(registered_name, info.registered_model_version)
    client.set_registered_model_alias(registered_name, MODEL_ALIAS, version.version)
    return version
