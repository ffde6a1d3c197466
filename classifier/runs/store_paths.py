"""Where the tracking store is, without importing MLflow: the URI (``MLFLOW_TRACKING_URI``, else
``mlflow.db`` in the project root) and, for SQLite, the database file. Used by
:mod:`classifier.runs.tracking` and by the fast prediction path, which reads the store directly.

Example:
    >>> sqlite_path("sqlite:////data/mlflow.db")
    PosixPath('/data/mlflow.db')
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # classifier/


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


def tracking_origin() -> str:
    """`` (MLFLOW_TRACKING_URI)`` when the URI came from that variable, for messages."""
    return " (MLFLOW_TRACKING_URI)" if os.environ.get("MLFLOW_TRACKING_URI") else ""


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (relative to the working directory when the
    URI is), or None for another scheme or an in-memory database."""
    if not uri.startswith("sqlite:///"):
        return None
    path = unquote(uri.removeprefix("sqlite:///").partition("?")[0])
    return Path(path) if path and path != ":memory:" else None


def missing_local_store(uri: str | None = None) -> bool:
    """True when the store is a SQLite file that does not exist yet: it holds nothing, and a
    lookup must not create it."""
    path = sqlite_path(uri or tracking_uri())
    return path is not None and not path.exists()
