"""What every kind of labelled source is: a :class:`Source` reads its rows as ``(text, label,
where)`` and says what it knows of its splits and classes; nothing else. Checking and counting
the rows (:mod:`classifier.data.files`), splitting them and naming the classes
(:mod:`classifier.data.labelled`) and caching the scans are done once, above every kind.

The kinds, one module each: a table file (CSV, TSV, JSON Lines, Parquet:
:mod:`~classifier.data.tables`), class folders (:mod:`~classifier.data.folders`), a TFDS data
set by name (:mod:`~classifier.data.named`) and the sentiment treebank's trees
(:mod:`~classifier.data.treebank`); :func:`classifier.data.files.open_source` picks one for a
path. A new kind is a module with a subclass of :class:`Source` and a line in
:func:`~classifier.data.files.open_source`.

Example:
    >>> source = Source("reviews.csv", "reviews.csv", "csv")
    >>> source.own_split("test"), source.class_order("label")
    (None, None)
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from classifier.errors import DataError

Row = tuple[str | None, str | None, str]  # text, label (None: missing), where


@dataclass(frozen=True)
class Source:
    """One labelled source: ``path`` as given, ``name`` as messages name it, its ``format``.
    Subclasses read the rows; the defaults say the source has no splits or class order of its
    own and no columns beyond text and label."""

    path: str | Path
    name: str
    format: str
    #: Whether rows have named columns that ``classify evaluate --by`` can group by.
    columns = False

    def rows(self, text_field: str, label_field: str) -> Iterator[Row]:
        """``(text, label, where)`` of every row in order, not yet checked for emptiness:
        ``where`` is what a message names (``line 12``, ``row 3``, ``pos/1.txt``). Bad input is
        a DataError when it is reached."""
        raise NotImplementedError

    def own_split(self, split: str) -> str | None:
        """The source of a whole ``split`` (``validation``, ``test``) this source has of its own
        (a TFDS data set's ``test``), else None: a share of the rows is carved instead."""
        del split
        return None

    def class_order(self, label_field: str) -> list[str] | None:
        """The classes in the order the source declares them (a TFDS ``ClassLabel``), else None."""
        del label_field
        return None


def lines(path: Path, name: str) -> Iterator[str]:
    """The file's lines, decoded as UTF-8 one by one (a leading BOM skipped), endings kept; a
    DataError names ``name`` and the line that is not UTF-8."""
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as error:
        raise DataError(f"cannot read {name}: {error.strerror}") from None
    with file:
        for number, raw in enumerate(file, 1):
            skip = 3 if number == 1 and raw.startswith(codecs.BOM_UTF8) else 0
            try:
                yield (raw[skip:] if skip else raw).decode("utf-8")
            except UnicodeDecodeError as error:
                at = f"line {number} (byte {error.start + skip + 1} of the line)"
                raise DataError(f"{name} is not UTF-8: {at}") from None
