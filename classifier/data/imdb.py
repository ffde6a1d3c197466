"""Where the IMDB reviews come from: the prepared TFDS copy, found and checked before TFDS
touches it, a download only when one is allowed and the network answers, and ``tfds.load``.

The data directory is ``data.data_dir``, else ``$TFDS_DATA_DIR`` as it is now, else
``~/tensorflow_datasets``. A missing, partial or unreadable copy is one line
(:class:`~classifier.errors.DataNotFoundError`) naming the folder, within seconds; a failed
download removes what it made.

Example:
    >>> split_specs(DataConfig())
    {'train': 'train[:15000]', 'validation': 'train[15000:25000]', 'test': 'test'}
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import socket
import threading
import urllib.parse
from pathlib import Path

import tensorflow_datasets as tfds

from classifier.config.schema import DataConfig
from classifier.errors import ConfigError, DataNotFoundError

DATASET = "imdb_reviews"
SPLITS = ("train", "test", "unsupervised")  # every split of a prepared copy
DATASET_INFO = "dataset_info.json"  # in every prepared copy (TFDS renames the folder when done)
DOWNLOAD_URL = "http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"  # what TFDS fetches
ARCHIVE_STEM = "aclImdb"  # in the names of TFDS' download and extraction folders for it
NETWORK_TIMEOUT = 2.0  # seconds to wait for the download host before calling the network down


def split_specs(cfg: DataConfig) -> dict[str, str]:
    """TFDS split strings for training, validation and test.

    Example:
        >>> split_specs(DataConfig())
        {'train': 'train[:15000]', 'validation': 'train[15000:25000]', 'test': 'test'}
    """
    end = cfg.train_size + cfg.val_size
    test = "test" if cfg.test_size is None else f"test[:{cfg.test_size}]"
    return {
        "train": f"train[:{cfg.train_size}]",
        "validation": f"train[{cfg.train_size}:{end}]",
        "test": test,
    }


def resolve_data_dir(cfg: DataConfig) -> tuple[Path, str]:
    """The TFDS data directory to read, as an absolute path, and where that choice came from.

    ``cfg.data_dir`` (``--data-dir``), else ``$TFDS_DATA_DIR`` as it is now (TFDS itself reads
    it only once, when imported), else TFDS' default ``~/tensorflow_datasets``.
    """
    for chosen, origin in (
        (cfg.data_dir, "--data-dir"),
        (os.environ.get("TFDS_DATA_DIR"), "TFDS_DATA_DIR"),
        (os.path.join("~", "tensorflow_datasets"), "the TFDS default"),
    ):
        if chosen:
            return Path(os.path.abspath(os.path.expanduser(chosen))), origin
    raise AssertionError("unreachable: the TFDS default is never empty")


@functools.cache
def imdb_builder_cls() -> type:
    """TFDS's builder class of ``imdb_reviews``, imported alone. Looking the name up in TFDS's
    registry (``tfds.builder``, ``tfds.load``) first imports every data set's builder that TFDS
    ships: 0.3 s of the first load in each process, on 2 cores.

    Example:
        >>> imdb_builder_cls().name
        'imdb_reviews'
    """
    try:
        from tensorflow_datasets.datasets.imdb_reviews import imdb_reviews_dataset_builder
    except ImportError:  # another layout of TFDS: its registry finds the class
        return tfds.builder_cls(DATASET)
    return imdb_reviews_dataset_builder.Builder


@functools.cache
def dataset_variant() -> str:
    """The config and version ``tfds.load("imdb_reviews")`` reads: ``plain_text/1.0.0``."""
    builder_cls = imdb_builder_cls()
    configs = {config.name: config for config in builder_cls.BUILDER_CONFIGS}
    config = configs.get(builder_cls.DEFAULT_BUILDER_CONFIG_NAME, builder_cls.BUILDER_CONFIGS[0])
    return f"{config.name}/{config.version}"


def data_source(cfg: DataConfig) -> dict[str, str]:
    """Where the reviews come from, as MLflow params: the data directory read (absolute), the
    TFDS data set and its version, and the tensorflow-datasets package version; for a labelled
    file or folder (``data.source``), the absolute paths read.

    Its keys differ from the config's ``data.data_dir`` (empty when TFDS_DATA_DIR is used).

    Example:
        >>> data_source(DataConfig(data_dir="../shared/tensorflow_datasets"))  # in the project
        {'data.source_dir': '/.../shared/tensorflow_datasets',
         'data.tfds_dataset': 'imdb_reviews/plain_text/1.0.0', 'data.tfds_package': '4.9.10'}
    """
    if cfg.source is not None:  # a labelled file or folder: the paths read, absolute
        paths = {"source": cfg.source, "validation": cfg.validation, "test": cfg.test}
        return {
            f"data.{name}_path": os.path.abspath(path)
            for name, path in paths.items()
            if path is not None
        }
    return {
        "data.source_dir": str(resolve_data_dir(cfg)[0]),
        "data.tfds_dataset": f"{DATASET}/{dataset_variant()}",
        "data.tfds_package": tfds.__version__,
    }


def network_available(url: str = DOWNLOAD_URL, timeout: float = NETWORK_TIMEOUT) -> bool:
    """Whether the host of ``url`` accepts a TCP connection within about ``timeout`` seconds.

    Name resolution has no timeout of its own, so the attempt runs in a daemon thread that is
    abandoned after ``timeout`` seconds.
    """
    parts = urllib.parse.urlsplit(url)
    address = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    answer: list[bool] = []
    done = threading.Event()

    def connect() -> None:
        try:
            socket.create_connection(address, timeout=timeout).close()
            answer.append(True)
        except OSError:  # includes socket.gaierror: the name does not resolve
            answer.append(False)
        done.set()

    threading.Thread(target=connect, name="imdb-network-check", daemon=True).start()
    return done.wait(timeout) and answer[0]


def check_prepared(cfg: DataConfig) -> dict[str, int] | None:
    """Check the data directory for a complete prepared copy before TFDS looks for it.

    Returns the number of reviews in each split of that copy, or None when the copy is missing
    and TFDS may download it: ``cfg.download`` is set and the download host answers.

    Raises:
        DataNotFoundError: one line naming the folder looked in, when the data directory is
            not a readable folder, or the copy is incomplete, or missing and not downloadable.
    """
    data_dir, origin = resolve_data_dir(cfg)
    version_dir = data_dir / DATASET / dataset_variant()
    hint = (
        f"set TFDS_DATA_DIR or pass --data-dir to a folder holding a prepared copy "
        f"({DATASET}/{dataset_variant()}/{DATASET_INFO} and its data files)"
    )
    if data_dir.exists() and not data_dir.is_dir():
        raise DataNotFoundError(f"data directory {data_dir} ({origin}) is not a folder; {hint}")
    try:
        if data_dir.is_dir() and not os.access(data_dir, os.R_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "permission denied", str(data_dir))
        prepared = (version_dir / DATASET_INFO).is_file()
    except PermissionError as error:
        raise DataNotFoundError(
            f"cannot read {error.filename} (permission denied); {hint}"
        ) from None
    if not prepared:
        if not cfg.download:
            why = "download disabled (data.download=false)"
        elif not network_available():
            host = urllib.parse.urlsplit(DOWNLOAD_URL).hostname
            why = f"no network to download it ({host} not reachable within {NETWORK_TIMEOUT:g} s)"
        else:
            return None
        raise DataNotFoundError(
            f"IMDB data ({DATASET}) not found: looked in {version_dir} ({origin}); {why}; {hint}"
        )
    sizes, problem = _read_prepared(data_dir)
    if problem:
        raise DataNotFoundError(
            f"IMDB data in {version_dir} ({origin}) is incomplete or corrupt ({problem}); "
            f"prepare it again, or {hint}"
        )
    return sizes


def _read_prepared(data_dir: Path) -> tuple[dict[str, int], str]:
    """The split sizes of the prepared copy in ``data_dir`` and what is wrong with it ('' if
    nothing): metadata that cannot be read, a split or data file missing, empty or truncated."""
    try:
        info = imdb_builder_cls()(data_dir=str(data_dir)).info
        sizes = {name: info.splits[name].num_examples for name in SPLITS if name in info.splits}
        if len(sizes) < len(SPLITS):
            return sizes, f"no {', '.join(sorted(set(SPLITS) - set(sizes)))} split"
        for name in SPLITS:
            paths = [Path(path) for path in info.splits[name].filepaths]
            for path in paths:
                if not path.is_file() or path.stat().st_size == 0:
                    return sizes, f"{path.name} is {'empty' if path.is_file() else 'missing'}"
                if not os.access(path, os.R_OK):
                    return sizes, f"{path.name} cannot be read"
            # A TFRecord file holds each example's bytes plus 16 bytes of framing.
            tfrecord = info.file_format is None or info.file_format.value == "tfrecord"
            if (
                tfrecord
                and sum(path.stat().st_size for path in paths) < info.splits[name].num_bytes
            ):
                return sizes, f"the {name} data files are shorter than their metadata says"
        return sizes, ""
    except Exception as error:  # noqa: BLE001 - unreadable or invalid metadata
        cause = f"{type(error).__name__}: {_first_line(str(error), 80)}"
        return {}, f"its metadata cannot be read: {cause}"


def _first_line(text: str, limit: int = 160) -> str:
    """The first line of ``text``, cut at a word boundary to at most ``limit`` characters.

    Example:
        >>> _first_line("Dataset imdb_reviews not found in /data\\nmore", 30)
        'Dataset imdb_reviews not...'
    """
    line = (text.strip().splitlines() or [""])[0].strip()
    if len(line) <= limit:
        return line
    return line[: limit - 2].rsplit(" ", 1)[0].rstrip(" ,;:") + "..."


@contextlib.contextmanager
def _cleaned_up_on_failure(data_dir: Path):
    """Delete what a failed TFDS download created under ``data_dir`` (and the parents of
    ``data_dir`` it made), keeping everything that was there before."""
    top = data_dir
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    dataset_dirs = {data_dir / DATASET, data_dir / DATASET / dataset_variant().split("/")[0]}
    dataset_dirs.add(data_dir / "downloads" / DATASET)
    shared_dirs = [data_dir / "downloads", data_dir / "downloads" / "extracted"]
    before = {
        folder: set(os.listdir(folder)) if folder.is_dir() else None
        for folder in [top, data_dir, *sorted(dataset_dirs), *shared_dirs]
    }
    try:
        yield
    except BaseException:
        for folder, names in before.items():
            if names is None:  # made by the attempt (if it is there): removed whole
                shutil.rmtree(folder, ignore_errors=True)
                continue
            if not folder.is_dir():  # inside a folder removed above
                continue
            for name in set(os.listdir(folder)) - names:
                ours = folder in dataset_dirs or name in (DATASET, "downloads", "extracted")
                if ours or ARCHIVE_STEM in name:
                    target = folder / name
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target, ignore_errors=True)
                    else:
                        target.unlink(missing_ok=True)
        raise


def tfds_load(split: str | list[str], cfg: DataConfig, **kwargs):
    """``tfds.load("imdb_reviews", split=...)`` from :func:`resolve_data_dir`, after
    :func:`check_prepared`: TFDS downloads only when that is allowed and the network answers,
    and a failed download leaves nothing behind. As ``tfds.load`` does it (the builder,
    prepared if it is not, then ``as_dataset`` with ``kwargs``), with the builder made from
    :func:`imdb_builder_cls`.

    Raises:
        DataNotFoundError: with one line saying where to point ``TFDS_DATA_DIR``/``--data-dir``.
    """
    prepared = check_prepared(cfg) is not None
    data_dir = resolve_data_dir(cfg)[0]
    try:
        with contextlib.nullcontext() if prepared else _cleaned_up_on_failure(data_dir):
            builder = imdb_builder_cls()(data_dir=str(data_dir))
            if not prepared:  # check_prepared found no copy, and a download may run
                builder.download_and_prepare()
            return builder.as_dataset(split=split, **kwargs)
    except Exception as error:  # TFDS raises AssertionError, OSError or download errors
        how = "could not be read" if prepared else "not found and could not be downloaded"
        raise DataNotFoundError(
            f"IMDB data ({DATASET}) in {data_dir} {how}; set TFDS_DATA_DIR or pass --data-dir "
            f"to a folder holding a prepared copy ({type(error).__name__}: "
            f"{_first_line(str(error))})"
        ) from None


def imdb_splits(cfg: DataConfig, with_ids: bool = False) -> list:
    """IMDB's training, validation and test reviews (:func:`split_specs`) as TFDS datasets of
    ``(text, label)``, or with ``with_ids`` of feature dicts with a ``tfds_id`` per review; a
    DataNotFoundError or ConfigError (too few reviews) first where they cannot be read."""
    check_sizes(cfg, split_sizes(cfg))
    kwargs = (
        {"read_config": tfds.ReadConfig(add_tfds_id=True)} if with_ids else {"as_supervised": True}
    )
    return tfds_load(list(split_specs(cfg).values()), cfg, shuffle_files=False, **kwargs)


def split_sizes(cfg: DataConfig) -> dict[str, int]:
    """Number of reviews in every TFDS split (read from the prepared copy's metadata)."""
    sizes = check_prepared(cfg)
    if sizes is None:  # missing, and a download is allowed and possible
        tfds_load("train[:1]", cfg)
        sizes = check_prepared(cfg)
    return sizes


def check_sizes(cfg: DataConfig, sizes: dict[str, int]) -> None:
    """Refuse training, validation or test sizes that the prepared copy does not hold (TFDS
    would refuse the slice with an error that reads like missing data).

    Raises:
        ConfigError: naming the config key, the size asked for and the size available.
    """
    where = resolve_data_dir(cfg)[0] / DATASET / dataset_variant()
    if cfg.train_size + cfg.val_size > sizes["train"]:
        raise ConfigError(
            f"data.train_size={cfg.train_size} plus data.val_size={cfg.val_size} exceeds the "
            f"{sizes['train']:,} reviews of the train split in {where}"
        )
    if cfg.test_size is not None and cfg.test_size > sizes["test"]:
        raise ConfigError(
            f"data.test_size={cfg.test_size} exceeds the {sizes['test']:,} reviews of the test "
            f"split in {where}"
        )
