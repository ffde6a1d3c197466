"""The one parser of the URIs a user gives: ``--model`` values and tracking stores.

Every command checks what it is given here, before anything slow is imported, so that a
scheme the project does not serve is one line naming the ones it does, never a traceback from
deep inside MLflow. Imports nothing beyond the standard library.

- A model (``--model``, ``model.init_from``): a local path (a ``.keras`` file, a folder holding one, a run's
  LiteRT bundle folder), ``models:/NAME``, ``models:/NAME@ALIAS``, ``models:/NAME/VERSION`` or
  ``runs:/RUN_ID[/PATH]``.
- A tracking store (``MLFLOW_TRACKING_URI``): ``sqlite:///PATH``, ``http(s)://HOST[:PORT]``
  (an ``mlflow server``), or a PostgreSQL database (``postgresql://`` with its driver, as
  ``mlflow server --backend-store-uri`` takes it).
- A sweep storage (``classify sweep --storage``, Optuna's RDB storage): ``sqlite:///PATH`` or
  ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE``.

Example:
    >>> model_uri("models:/imdb-sentiment@newest").kind
    'registered'
    >>> model_uri("review-model/").kind
    'path'
    >>> model_uri("http://host/model.keras")
    Traceback (most recent call last):
    ...
    classifier.errors.ModelError: --model 'http://host/model.keras': unsupported scheme 'http:'; give a local path, models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from classifier.errors import ConfigError, ModelError, SweepError, TrackingError

#: ``scheme:`` at the start of a value (a path such as ``my:model.keras`` has no slash after it).
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):(?=/)")
_MODELS = re.compile(
    r"^models:/(?P<name>[^/@\s]+)(?:@(?P<alias>[^/@\s]+)|/(?P<version>\d+|latest))?$"
)
_RUNS = re.compile(r"^runs:/(?P<run>[0-9a-f]{32})(?:/(?P<path>\S*))?$")
MODEL_FORMS = "a local path, models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID"
STORE_FORMS = "sqlite:///PATH, http(s)://HOST:PORT or postgresql://USER@HOST/DATABASE"
STORAGE_FORMS = "sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"


@dataclass(frozen=True)
class ModelURI:
    """A parsed ``--model`` value.

    Attributes:
        kind: ``"path"``, ``"registered"`` (``models:/``) or ``"run"`` (``runs:/``).
        value: the value as given.
    """

    kind: str
    value: str


def model_uri(value: str, option: str = "--model") -> ModelURI:
    """Parse a ``--model`` value; a scheme other than ``models:`` and ``runs:``, or one of those
    two malformed, is a :class:`~classifier.errors.ModelError` naming the supported forms."""
    if "\0" in value:
        raise ModelError(f"{option} {value!r}: a path cannot hold a NUL byte")
    scheme = _SCHEME.match(value) or re.match(r"^(?P<scheme>models|runs):", value)
    if scheme is None:
        return ModelURI("path", value)
    name = scheme["scheme"].lower()
    if name == "models" and _MODELS.match(value):
        return ModelURI("registered", value)
    if name == "runs" and _RUNS.match(value):
        return ModelURI("run", value)
    if name in ("models", "runs"):
        raise ModelError(f"{option} {value!r}: not a {name}:/ URI; give {MODEL_FORMS}")
    if name == "file":  # file:///abs/path is a local path too
        return ModelURI("path", urlsplit(value).path)
    raise ModelError(f"{option} {value!r}: unsupported scheme '{name}:'; give {MODEL_FORMS}")


def check_store_uri(uri: str, origin: str = "") -> str:
    """Check a tracking store URI's form (not whether it answers); return its scheme.

    Example:
        >>> check_store_uri("sqlite:////data/mlflow.db")
        'sqlite'
        >>> check_store_uri("postgresql+psycopg2://mlflow@127.0.0.1:5432/mlflow")
        'postgresql'
    """
    where = f"tracking store {uri}{origin}"
    if "\0" in uri or not uri.strip():
        raise TrackingError(f"{where}: not a URI; give {STORE_FORMS}")
    scheme = uri.partition(":")[0].lower() if ":" in uri else ""
    family = scheme.partition("+")[0]
    if family == "sqlite":
        if not uri.startswith("sqlite:///"):
            raise TrackingError(f"{where}: a SQLite store is sqlite:///PATH (three slashes)")
        return "sqlite"
    if family in ("http", "https", "postgresql"):
        try:
            parts = urlsplit(uri)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError as error:
            raise TrackingError(f"{where}: {error}") from None
        if not parts.hostname and family != "postgresql":  # postgresql:///db: a local socket
            raise TrackingError(f"{where}: no host; give {STORE_FORMS}")
        return family
    if family in ("", "file") or uri.startswith(("/", ".", "~")):
        raise TrackingError(
            f"{where}: MLflow's filesystem tracking backend (a folder of runs) is not "
            f"supported; give {STORE_FORMS}"
        )
    raise TrackingError(f"{where}: unsupported URI {uri!r}; give {STORE_FORMS}")


def check_init_from(value: str, variant: str) -> None:
    """Check ``model.init_from``'s form: a path or model URI of a pretrained encoder (for
    variant ``encoder``) or of a trained classifier (any variant; what it holds is checked
    when the run loads it).

    Example:
        >>> check_init_from("models:/imdb-encoder@newest", "encoder")  # fine: nothing happens
    """
    if not value.strip():
        raise ConfigError("model.init_from must not be empty (null: start from scratch)")
    try:
        model_uri(value, "model.init_from")
    except ModelError as error:
        raise ConfigError(str(error)) from None


def redacted(url: str) -> str:
    """A URL with its password replaced by ``***``, for messages and logs.

    Example:
        >>> redacted("postgresql://sweeper:secret@db:5432/optuna")
        'postgresql://sweeper:***@db:5432/optuna'
    """
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)[^@/\s]*@", r"\1***@", url)


def sweep_storage_url(value: str) -> str:
    """Check a sweep storage URL (Optuna's RDB storage) and return it in the form SQLAlchemy
    opens: a bare ``postgresql://`` gets the installed driver (``postgresql+psycopg2://``).

    Example:
        >>> sweep_storage_url("postgresql://optuna@127.0.0.1:5433/optuna")
        'postgresql+psycopg2://optuna@127.0.0.1:5433/optuna'
        >>> sweep_storage_url("redis://host")
        Traceback (most recent call last):
        ...
        classifier.errors.SweepError: --storage 'redis://host': unsupported scheme 'redis'; give sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE
    """
    where = f"--storage {redacted(value)!r}"
    if "\0" in value or not value.strip() or ":" not in value:
        raise SweepError(f"{where}: not a URL; give {STORAGE_FORMS}")
    scheme = value.partition(":")[0].lower()
    family, _, driver = scheme.partition("+")
    if family == "sqlite":
        if not value.startswith("sqlite:///") or value == "sqlite:///":
            raise SweepError(f"{where}: a SQLite storage is sqlite:///PATH (three slashes)")
        return value
    if family in ("postgresql", "postgres"):
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError as error:
            raise SweepError(f"{where}: {error}") from None
        if not parts.path.strip("/"):
            raise SweepError(f"{where}: no database name; give {STORAGE_FORMS}")
        if driver and driver != "psycopg2":
            raise SweepError(f"{where}: driver {driver!r} is not installed; use postgresql://")
        return "postgresql+psycopg2:" + value.partition(":")[2]
    raise SweepError(f"{where}: unsupported scheme {scheme!r}; give {STORAGE_FORMS}")
