"""A TFDS text-classification data set by name as a labelled source: ``data.source`` (or
``data.validation``, ``data.test``, ``classify evaluate FILE``) written ``tfds:NAME`` or
``tfds:NAME:SPLIT``, with NAME as TFDS writes it (``ag_news_subset``, ``imdb_reviews/plain_text``)
and SPLIT any TFDS split (``train`` by default; slices too: ``test[:50%]``).

Its rows are the examples of that split, read in order: the text is the feature
``data.text_field``, the label the ``ClassLabel`` feature ``data.label_field`` by its name
(``pos``, ``neg``). So a TFDS data set goes through everything a labelled file does: the one
checking pass, the class order, the stratified validation share. Where the data set has its
own ``validation`` or ``test`` split and the config names no other, that split is the one used
(:func:`own_split`). TFDS reads ``$TFDS_DATA_DIR`` (else ``~/tensorflow_datasets``) and downloads
a data set that is not prepared there. TensorFlow is imported when such a source is read.

Example::

    rows = tfds_rows("tfds:imdb_reviews:test", "text", "label")
    next(rows)  # ("There are films that make careers. ...", "pos", "example 1")
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from classifier.data.sources import Row, Source
from classifier.errors import DataError, first_line

PREFIX = "tfds:"
# NAME (with /config and :version where given), then :SPLIT (which may hold ':' in a slice).
_SOURCE = re.compile(r"(?P<name>[^:\[\]]+(?::[0-9]+\.[0-9]+\.[0-9]+)?)(?::(?P<split>.+))?")


def is_named(source: object) -> bool:
    """Whether a source names a TFDS data set (``tfds:...``) rather than a file.

    Example:
        >>> is_named("tfds:ag_news_subset"), is_named("reviews.csv")
        (True, False)
    """
    return isinstance(source, str | os.PathLike) and os.fspath(source).startswith(PREFIX)


def parse(source: str) -> tuple[str, str]:
    """The TFDS name and split of ``tfds:NAME[:SPLIT]`` (a trailing ``:1.0.0`` is NAME's version).

    Example:
        >>> parse("tfds:imdb_reviews"), parse("tfds:imdb_reviews/plain_text:1.0.0:test[:10%]")
        (('imdb_reviews', 'train'), ('imdb_reviews/plain_text:1.0.0', 'test[:10%]'))
    """
    match = _SOURCE.fullmatch(source[len(PREFIX) :])
    if match is None:
        raise DataError(f"{source}: name a TFDS data set after 'tfds:' (tfds:ag_news_subset)")
    return match["name"], match["split"] or "train"


@dataclass(frozen=True)
class TfdsSource(Source):
    """A split of a TFDS data set (``format`` ``tfds``): its own validation and test splits
    and its ``ClassLabel``'s class order come with it."""

    def rows(self, text_field: str, label_field: str) -> Iterator[Row]:
        return tfds_rows(self.name, text_field, label_field)

    def own_split(self, split: str) -> str | None:
        return own_split(self.name, split)

    def class_order(self, label_field: str) -> list[str] | None:
        return class_order(self.name, label_field)


def tfds_rows(source: str, text_field: str, label_field: str) -> Iterator[tuple[str, str, str]]:
    """``(text, label name, "example N")`` of every example of the split, in order. The data
    set, the split and both features are checked at once (a DataError naming what is there)."""
    builder, split = _builder(source), parse(source)[1]
    features = builder.info.features
    for field, key in ((text_field, "text_field"), (label_field, "label_field")):
        if field not in features:
            raise DataError(
                f"{source} has no feature '{field}' (its features: {', '.join(sorted(features))}); "
                f"set data.{key}"
            )
    names = getattr(features[label_field], "names", None)
    if names is None:
        raise DataError(
            f"{source}: the feature '{label_field}' is not a ClassLabel (it is "
            f"{type(features[label_field]).__name__}); set data.label_field to the class feature"
        )
    try:
        dataset = builder.as_dataset(split=split, shuffle_files=False)
    except (ValueError, KeyError) as error:
        found = ", ".join(builder.info.splits)
        raise DataError(
            f"{source}: no split {split} ({first_line(error)}; its splits: {found})"
        ) from None
    return _examples(dataset, text_field, label_field, names)


def own_split(source: str, split: str) -> str | None:
    """``tfds:NAME:split`` where the data set of ``source`` has a split of that name, else None.

    Example::

        own_split("tfds:imdb_reviews", "test")  # 'tfds:imdb_reviews:test'
        own_split("tfds:imdb_reviews", "validation")  # None
    """
    name = parse(source)[0]
    return f"{PREFIX}{name}:{split}" if split in _builder(source).info.splits else None


def version(source: str) -> tuple[str, str]:
    """The data set's name and ``config/version`` as TFDS reads them, for the MLflow dataset.

    Example::

        version("tfds:imdb_reviews")  # ('imdb_reviews', 'plain_text/1.0.0')
    """
    info = _builder(source).info
    name, _, variant = info.full_name.partition("/")
    return name, variant


def _examples(dataset, text_field: str, label_field: str, names: list[str]):
    import tensorflow_datasets as tfds

    for number, example in enumerate(tfds.as_numpy(dataset), 1):
        text = example[text_field]
        yield (
            text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text),
            names[int(example[label_field])],
            f"example {number}",
        )


def class_order(source: str, label_field: str) -> list[str] | None:
    """The class names of the ``ClassLabel`` feature ``label_field`` in TFDS's order (None
    where there is no such feature: reading the rows says so).

    Example::

        class_order("tfds:imdb_reviews", "label")  # ['neg', 'pos']
    """
    features = _builder(source).info.features
    feature = features[label_field] if label_field in features else None  # noqa: SIM401 - no .get
    return list(feature.names) if hasattr(feature, "names") else None


def _builder(source: str):
    """The prepared TFDS builder of ``source``'s data set, in ``$TFDS_DATA_DIR`` as it is now
    (one per data set: its splits share it); a DataError names ``source``."""
    try:
        return _prepared(parse(source)[0], os.environ.get("TFDS_DATA_DIR") or None)
    except DataError as error:
        raise DataError(f"{source}: {error}") from None


@functools.lru_cache(maxsize=8)
def _prepared(name: str, data_dir: str | None):
    """The builder of ``name``, prepared now (downloaded) if TFDS knows the data set and
    ``data_dir`` lacks it. The CLI imports TensorFlow before, quietly."""
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except Exception:  # TFDS raises DatasetNotFoundError and kin: all say "no such data set"
        where = data_dir or os.path.join("~", "tensorflow_datasets")
        raise DataError(
            f"TFDS has no data set '{name}', neither registered nor prepared in "
            f"{where} (TFDS_DATA_DIR sets the folder)"
        ) from None
    if not builder.is_prepared():
        try:
            builder.download_and_prepare()
        except Exception as error:
            raise DataError(
                f"'{name}' is not prepared in {builder.data_dir} and its download "
                f"failed ({first_line(error)})"
            ) from None
    return builder
