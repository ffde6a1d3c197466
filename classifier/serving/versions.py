"""Which registered model version a ``--model`` value names, through MLflow's client and
without Keras or TensorFlow (``classify evaluate`` logs against it; :mod:`classifier.serving.registry`
downloads it).

Example (a store with a registered model)::

    registered_version("models:/imdb-sentiment@newest").version  # '3'
"""

from __future__ import annotations

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from classifier.errors import ModelError
from classifier.runs.tracking import configure_tracking
from classifier.serving.model_source import DEFAULT_MODEL_NAME, no_model

LATEST = "latest"  # models:/NAME@latest and models:/NAME/latest: the highest version


def registered_version(spec: str | None):
    """The registered ``ModelVersion`` a ``--model`` value names (``None``: the default
    model's newest), or ``None`` for a local path or a ``runs:/`` URI.

    Raises:
        ModelError: no such model, version or alias (one line).
    """
    uri = f"models:/{DEFAULT_MODEL_NAME}@{LATEST}" if spec is None else spec
    if not uri.startswith("models:"):
        return None
    name, alias, ref = model_parts(uri)
    if (alias is None and ref is None) or (ref is not None and not is_version_ref(ref)):
        return None  # a logged-model id (models:/m-...): not a registered version
    return find_version(uri, name, alias, ref, configure_tracking(), spec is None)


def model_parts(uri: str) -> tuple[str, str | None, str | None]:
    """``(name, alias, version)`` of ``models:/NAME@ALIAS`` or ``models:/NAME/VERSION``."""
    body = uri.removeprefix("models:").lstrip("/")
    name, alias, ref = body, None, None
    if "/" in body:
        name, ref = body.split("/", 1)
    elif "@" in body:
        name, alias = body.rsplit("@", 1)
    return name, alias, ref


def find_version(uri: str, name: str, alias, ref, store: str, default: bool):
    """The ``ModelVersion`` of ``name`` at ``alias`` or version ``ref`` (``latest``: newest)."""
    client = MlflowClient()
    versions = client.search_model_versions(f"name = '{name}'")
    if not versions:
        no_model(None if default else uri, f"no registered model {name!r} in {store}")
    wanted = (alias or ref).lower()
    if wanted == LATEST:
        version = max(versions, key=lambda v: int(v.version))
    elif ref is not None:
        matches = [v for v in versions if str(v.version) == ref]
        if not matches:
            numbers = ", ".join(sorted((str(v.version) for v in versions), key=int))
            raise ModelError(f"--model {uri}: {name} has no version {ref} (it has {numbers})")
        version = matches[0]
    else:
        try:
            version = client.get_model_version_by_alias(name, alias)
        except MlflowException:
            raise ModelError(
                f"--model {uri}: {name} has no alias {alias!r} (use @{LATEST} for its newest "
                "version)"
            ) from None
    return version


def is_version_ref(ref: str) -> bool:
    return ref.isdigit() or ref.lower() == LATEST
