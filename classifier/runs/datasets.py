"""What a run was trained and evaluated on, as MLflow datasets: the UI's Dataset column.

A labelled file or folder is a dataset named after it, its source the absolute path, its digest
the SHA-256 of its bytes (a folder: of every text file's path and bytes), logged once per split
it gives (``train``, ``validation``, ``test``, or ``evaluation`` for ``classify evaluate``).
IMDB is the TFDS data set ``imdb_reviews`` with its version, its source the TFDS catalogue page,
its digest that of the split it is cut from (``train[:15000]``).

Example (inside a run)::

    mlflow.log_input(file_dataset("reviews.csv"), context="train")
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import mlflow
from mlflow.data.http_dataset_source import HTTPDatasetSource
from mlflow.data.meta_dataset import MetaDataset

from classifier.config.schema import DataConfig
from classifier.data import named
from classifier.runs.resume import file_sha256

TFDS_CATALOGUE = "https://www.tensorflow.org/datasets/catalog/"
DIGEST_LENGTH = 16  # hex digits: MLflow shows short digests


def file_digest(path: str | Path) -> str:
    """The SHA-256 (first :data:`DIGEST_LENGTH` hex digits) of a file's bytes, or of a folder's
    files: their relative paths and the SHA-256 of each, in sorted order."""
    path = Path(path)
    if path.is_file():
        return file_sha256(path)[:DIGEST_LENGTH]
    digest = hashlib.sha256()
    for item in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(f"{item.relative_to(path)}\0{file_sha256(item)}\n".encode())
    return digest.hexdigest()[:DIGEST_LENGTH]


def file_dataset(path: str | Path) -> MetaDataset:
    """A labelled file or folder as an MLflow dataset (named after it, digest of its bytes); a
    TFDS data set by name (``tfds:NAME:SPLIT``) as :func:`tfds_dataset`."""
    if named.is_named(path):
        name, variant = named.version(os.fspath(path))
        return tfds_dataset(name, variant, named.parse(os.fspath(path))[1])
    from mlflow.data.dataset_source_registry import resolve_dataset_source

    absolute = os.path.abspath(path)
    with warnings.catch_warnings():  # two registered sources read local paths alike
        warnings.simplefilter("ignore")
        source = resolve_dataset_source(absolute)
    name = Path(absolute).name if os.path.isdir(absolute) else Path(absolute).stem
    return MetaDataset(source=source, name=name, digest=file_digest(absolute))


def tfds_dataset(name: str, version: str, split: str) -> MetaDataset:
    """A TFDS split as an MLflow dataset (``imdb_reviews``, ``plain_text/1.0.0``,
    ``train[:15000]``)."""
    digest = hashlib.sha256(f"{name}/{version}/{split}".encode()).hexdigest()[:DIGEST_LENGTH]
    return MetaDataset(
        source=HTTPDatasetSource(TFDS_CATALOGUE + name), name=f"{name}/{version}", digest=digest
    )


def log_datasets(datasets: dict[str, MetaDataset]) -> None:
    """Log each dataset as an input of the active run, its split as the context."""
    for context, dataset in datasets.items():
        mlflow.log_input(dataset, context=context)


def run_datasets(cfg: DataConfig) -> dict[str, MetaDataset]:
    """The datasets of a training run's splits, by split name: the labelled files it reads
    (one file may give several splits), or the IMDB splits."""
    if cfg.source is None:
        from classifier.data.imdb import DATASET, dataset_variant, split_specs  # TFDS: slow

        version = dataset_variant()
        return {
            name: tfds_dataset(DATASET, version, split) for name, split in split_specs(cfg).items()
        }
    from classifier.data.labelled import split_files

    paths = {"train": cfg.source, **split_files(cfg)}
    by_path: dict[str, MetaDataset] = {}  # one file's digest once, whatever splits it gives
    for path in paths.values():
        path = path or cfg.source
        if path not in by_path:
            by_path[path] = file_dataset(path)
    return {name: by_path[path or cfg.source] for name, path in paths.items()}
