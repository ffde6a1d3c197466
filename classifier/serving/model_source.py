"""Finding the LiteRT bundle of a ``--model`` value without importing MLflow or TensorFlow, so
that ``classify predict`` can answer in well under a second.

- A folder holding ``bundle.json`` is a bundle; so is the ``bundle/`` folder beside a run's
  downloaded artefacts.
- The default model (the highest version of ``imdb-sentiment``), ``models:/NAME@ALIAS``,
  ``models:/NAME/VERSION``, ``models:/NAME@latest`` and ``runs:/RUN_ID`` are resolved in a local
  SQLite store by reading it directly, read-only: the alias or version to its run, the run to its
  artefact folder, where training logged ``bundle/``. The store is read on every call, so a
  moved alias or a new version shows at once; nothing is cached.

Anything else (a ``.keras`` file, a tracking server, a run without a bundle, a schema this module
does not know) gives ``None``, and the caller loads the Keras model through MLflow as before.

Example (a store in which training registered imdb-sentiment)::

    find_bundle(None)  # Path('.../mlruns/1/<run id>/artifacts/bundle')
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlparse

from classifier.config.schema import TrainConfig
from classifier.config.uris import model_uri
from classifier.runs.store_paths import sqlite_path, tracking_uri

DEFAULT_MODEL = TrainConfig().registered_model  # "imdb-sentiment"
MANIFEST = "bundle.json"
BUNDLE_DIR = "bundle"
_MODELS = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/]+)|/(?P<version>[^/]+))?$")
_RUNS = re.compile(r"^runs:/(?P<run>[0-9a-f]{32})/?$")


def find_bundle(spec: str | None) -> Path | None:
    """The bundle folder for a ``--model`` value, or ``None`` when only Keras can serve it."""
    parsed = model_uri(spec) if spec is not None else None
    if parsed is not None and parsed.kind == "path":
        return _local(Path(parsed.value).expanduser())
    database = sqlite_path(tracking_uri())
    if database is None or not database.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=2) as store:
            run_id = _run_of(store, spec)
            row = (
                run_id
                and store.execute(
                    "select artifact_uri from runs where run_uuid = ? and lifecycle_stage = 'active'",
                    (run_id,),
                ).fetchone()
            )
    except sqlite3.Error:  # locked, or a schema of another MLflow version: take the slow path
        return None
    return _artefact_bundle(row[0]) if row else None


def _local(path: Path) -> Path | None:
    for folder in (path, path / BUNDLE_DIR):
        if (folder / MANIFEST).is_file():
            return folder
    return None


def _run_of(store: sqlite3.Connection, spec: str | None) -> str | None:
    if spec is not None and (runs := _RUNS.match(spec)):
        return runs["run"]
    match = _MODELS.match(spec) if spec is not None else None
    if spec is not None and match is None:
        return None
    name = match["name"] if match else DEFAULT_MODEL
    alias, version = (match["alias"], match["version"]) if match else (None, None)
    if match and alias is None and version is None:
        return None  # models:/NAME alone: MLflow's own rules (stages, logged models) decide
    if alias and alias.lower() != "latest":
        found = store.execute(
            "select version from registered_model_aliases where name = ? and alias = ?",
            (name, alias),
        ).fetchone()
        if found is None:
            return None
        version = str(found[0])
    live = "name = ? and current_stage != 'Deleted_Internal' and status = 'READY'"
    if version is None or version.lower() == "latest":
        row = store.execute(
            f"select run_id from model_versions where {live} order by version desc limit 1",
            (name,),
        ).fetchone()
    elif version.isdigit():
        row = store.execute(
            f"select run_id from model_versions where {live} and version = ?", (name, int(version))
        ).fetchone()
    else:
        return None
    return row[0] if row else None


def _artefact_bundle(artifact_uri: str) -> Path | None:
    """``<artifact folder>/bundle`` when the artefacts are local files and it holds a bundle."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme not in ("", "file"):
        return None
    return _local(Path(unquote(parsed.path)) / BUNDLE_DIR)
