"""Finding the LiteRT bundle of a ``--model`` value without importing MLflow or TensorFlow, so
that ``classify predict`` can answer in well under a second.

- A folder holding ``bundle.json`` is a bundle; so is the ``bundle/`` folder beside a run's
  downloaded artefacts.
- The default model (the highest version of ``imdb-sentiment``), ``models:/NAME@ALIAS``,
  ``models:/NAME/VERSION``, ``models:/NAME@latest`` and ``runs:/RUN_ID`` are resolved in a local
  SQLite store by reading it directly, read-only: the alias or version to its run, the run to its
  artefact folder, where training logged ``bundle/``. The store is read on every call, so a
  moved alias or a new version shows at once; nothing is cached. MLflow's client would take
  15 times longer than the whole answer (docs/benchmarks.md, "The registry read without MLflow").

Anything else (a ``.keras`` file, a tracking server, a run without a bundle, a schema this module
does not know) gives ``None``, and the caller loads the Keras model through MLflow as before.
What cannot hold a model is refused here too, before TensorFlow loads
(:func:`local_keras_model`, :func:`refuse_missing_store`).

Example (a store in which training registered imdb-sentiment)::

    find_bundle(None)  # Path('.../mlruns/1/<run id>/artifacts/bundle')
"""

from __future__ import annotations

import re
import sqlite3
import zipfile
from pathlib import Path
from typing import NoReturn
from urllib.parse import unquote, urlparse

from classifier.config.schema import TrainConfig
from classifier.config.uris import model_uri
from classifier.errors import ModelError
from classifier.runs.store_paths import missing_local_store, sqlite_path, tracking_uri
from classifier.serving.litert_engine import BUNDLE_DIR, MANIFEST

DEFAULT_MODEL_NAME = TrainConfig().registered_model  # "imdb-sentiment"
KERAS_ARTIFACT = "model.keras"  # the run artefact logged by training
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"  # Keras' legacy .h5 format
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


def local_keras_model(spec: str) -> Path | None:
    """The Keras file a local ``--model`` names, found without TensorFlow: ``None`` when
    ``spec`` is an MLflow URI; a :class:`ModelError` (one line) when the path cannot hold a
    model: missing, a folder without a ``.keras`` file, or a file that is neither a ``.keras``
    zip archive nor HDF5. Commands check it before they load TensorFlow (seconds).

    Example::

        local_keras_model("models:/imdb-sentiment@newest")  # None: MLflow resolves it
    """
    parsed = model_uri(spec)  # a scheme the project does not serve: ModelError
    if parsed.kind != "path":
        return None
    path = Path(parsed.value).expanduser()
    shown = f"--model {spec}"
    try:
        exists = path.exists()
    except OSError as error:  # a name too long, a loop of links
        raise ModelError(f"{shown}: cannot read it ({error.strerror or error})") from None
    if not exists:
        raise ModelError(f"{shown}: no such file, and not an MLflow URI (models:/..., runs:/...)")
    return keras_file(path, shown)


def names_a_run(spec: str | None) -> bool:
    """Whether ``--model`` names a run's model in the tracking store: the default model
    (``None``), ``models:/...`` or ``runs:/...`` (not a path).

    Example:
        >>> names_a_run(None), names_a_run("runs:/0123"), names_a_run("model.keras")
        (True, True, False)
    """
    return spec is None or spec.startswith(("models:", "runs:"))


def refuse_missing_store(spec: str | None) -> None:
    """A model lookup (``spec`` ``None``, the default model; ``models:/``, ``runs:/``) in a local
    SQLite store that does not exist finds nothing, and opening the store would create it: say
    so (:class:`ModelError`), without MLflow."""
    if names_a_run(spec) and missing_local_store():
        no_model(spec, f"the tracking store {tracking_uri()} does not exist")


def no_model(spec: str | None, where: str) -> NoReturn:
    """Raise the :class:`ModelError` for a model that is not there (``spec`` ``None``: the
    default model), saying how to train one."""
    if spec is None:
        raise ModelError(
            f"no model found: {where}; train one with `classify train` (for a quick one: "
            "classify train --config configs/smoke.yaml --set train.registered_model="
            f"{DEFAULT_MODEL_NAME}), or pass --model PATH|URI"
        )
    raise ModelError(f"--model {spec}: {where}; `classify train` registers one")


def keras_file(path: Path, shown: str) -> Path:
    """``path``, or the ``.keras`` file in the folder ``path``, checked to be a Keras archive
    (zip, or legacy HDF5) by its first bytes; else a :class:`ModelError` that starts with
    ``shown``."""
    if path.is_dir():
        candidates = [path / KERAS_ARTIFACT, *sorted(path.glob("*.keras"))]
        candidates += sorted((path / "artifacts").glob("*.keras"))  # an MLflow pyfunc folder
        found = [candidate for candidate in candidates if candidate.is_file()]
        if not found:
            raise ModelError(f"{shown}: a folder without a .keras model in it")
        path = found[0]
    if not path.is_file():  # a FIFO or a device: reading it could block or never end
        raise ModelError(f"{shown}: not a regular file")
    try:
        with path.open("rb") as file:
            is_hdf5 = file.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE
        is_model = is_hdf5 or zipfile.is_zipfile(path)
    except OSError as error:
        raise ModelError(f"{shown}: cannot read it ({error.strerror or error})") from None
    if not is_model:
        raise ModelError(
            f"{shown}: not a loadable Keras model (neither a .keras zip archive nor HDF5)"
        )
    return path


def _local(path: Path) -> Path | None:
    for folder in (path, path / BUNDLE_DIR):
        try:
            if (folder / MANIFEST).is_file():
                return folder
        except OSError:  # a name too long: no bundle; local_keras_model says why
            return None
    return None


def _run_of(store: sqlite3.Connection, spec: str | None) -> str | None:
    if spec is not None and (runs := _RUNS.match(spec)):
        return runs["run"]
    match = _MODELS.match(spec) if spec is not None else None
    if spec is not None and match is None:
        return None
    name = match["name"] if match else DEFAULT_MODEL_NAME
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
