"""A labelled source's rows, checked once for every kind of source: :func:`open_source` picks
the kind for a path (a table file by its suffix, :data:`FORMATS`; class folders; ``tfds:NAME``;
the treebank's ``.txt`` trees: :mod:`classifier.data.sources`), :func:`records` yields its rows
checked, :func:`scan` checks and counts them all in one pass, and :func:`class_names` orders the
classes. Bad input is a :class:`~classifier.errors.DataError`, one line naming the file and the
line, row or text file. No TensorFlow (a TFDS source imports it when read).

Example:
    >>> class_names({"2": 40, "10": 7, "1": 12})
    ('1', '2', '10')
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classifier.data import folders, named, tables, treebank
from classifier.data.sources import Source
from classifier.errors import DataError

#: The file suffixes a source's format is told by (a folder is class folders, ``tfds:`` a TFDS
#: data set).
FORMATS: dict[str, str] = {**tables.SUFFIXES, **treebank.SUFFIXES}
_INTEGER = re.compile(r"[+-]?[0-9]+")
SourcePath = str | Path | Source


@dataclass(frozen=True)
class Record:
    """One labelled text and where it is: ``"line 12"`` (the line a CSV, TSV or JSON Lines
    record starts on), ``"row 12"`` (Parquet, from 1) or the text file's path in the folder
    (``"pos/123_9.txt"``). The label is stripped of surrounding whitespace; the text is not."""

    text: str
    label: str
    where: str


@dataclass(frozen=True, eq=False)
class Scan:
    """What one pass over a source found: its rows, the rows of each label (in order of first
    appearance) and each row's label as an index into ``list(counts)``."""

    path: Path
    format: str
    rows: int
    counts: dict[str, int]
    codes: np.ndarray  # (rows,) int32


def open_source(path: SourcePath, phrases: treebank.Phrases = False) -> Source:
    """The :class:`~classifier.data.sources.Source` that reads ``path``: ``tfds:NAME`` a TFDS
    data set, a folder class folders, else the kind its suffix names (:data:`FORMATS`); a
    Source itself as it is (every function here takes one).
    ``phrases``: a treebank's labelled phrases rather than its sentences (every tree's, or of
    the trees marked True). A DataError when the path does not exist or its suffix names no
    format.

    Example:
        >>> open_source("no/such/reviews.csv")
        Traceback (most recent call last):
        classifier.errors.DataError: data file no/such/reviews.csv not found
    """
    if isinstance(path, Source):
        return path
    raw, suffix = os.fspath(path), Path(path).suffix
    if named.is_named(raw):
        return named.TfdsSource(raw, raw, "tfds")
    if Path(path).is_dir():
        name = raw if raw.endswith(("/", os.sep)) else raw + "/"
        return folders.ClassFolders(raw, name, "folder")
    if not Path(path).exists():
        folder = raw.endswith(("/", os.sep)) or not suffix
        raise DataError(f"data {'folder' if folder else 'file'} {raw} not found")
    if suffix.lower() not in FORMATS:
        what = f"its suffix '{suffix}'" if suffix else "a name without a suffix"
        raise DataError(
            f"{raw}: cannot tell the format from {what}; use a file ending in "
            f"{', '.join(FORMATS)} (sentiment-treebank trees), or a folder with one sub-folder "
            "per class"
        )
    fmt = FORMATS[suffix.lower()]
    if fmt == "treebank":
        return treebank.Treebank(raw, raw, fmt, phrases)
    return tables.Table(raw, raw, fmt)


def source_format(path: SourcePath) -> str:
    """The format of a source (:func:`open_source`'s): ``csv``, ``tsv``, ``jsonl``,
    ``parquet``, ``treebank``, ``folder`` or ``tfds``.

    Example:
        >>> source_format("tfds:imdb_reviews")
        'tfds'
    """
    return open_source(path).format


def records(
    path: SourcePath,
    text_field: str = "text",
    label_field: str = "label",
    *,
    phrases: treebank.Phrases = False,
) -> Iterator[Record]:
    """Every record of the source in file order, streamed (a folder: class folders sorted, in
    each the files sorted, a folder's files before its sub-folders). A missing path or unknown
    suffix raises at once, anything else when it is reached: the first bad input.

    Example::

        for record in records("reviews.csv", text_field="review", label_field="stars"):
            print(record.where, record.label)  # line 2 5
    """
    source = open_source(path, phrases)
    rows, name = source.rows(text_field, label_field), source.name

    def checked() -> Iterator[Record]:
        for text, label, where in rows:
            if not text or text.isspace():
                raise DataError(f"{name}: {where} has an empty text")
            if not (label := (label or "").strip()):
                raise DataError(f"{name}: {where} has an empty label")
            yield Record(text, label, where)

    return checked()


def scan(
    path: SourcePath,
    text_field: str = "text",
    label_field: str = "label",
    *,
    phrases: treebank.Phrases = False,
) -> Scan:
    """Check every row in one streaming pass and count the labels; texts are not kept (memory
    grows by four bytes a row). Errors as :func:`records`, except that empty texts (then empty
    labels) are counted over the whole source: ``3 rows have an empty text, the first at ...``.

    Example::

        found = scan("reviews.csv")
        found.rows, found.counts  # (1200, {'positive': 640, 'negative': 560})
    """
    source = open_source(path, phrases)
    rows = source.rows(text_field, label_field)
    counts, index, codes = {}, {}, array("i")
    empty = {"text": [0, ""], "label": [0, ""]}
    for text, label, where in rows:
        label = (label or "").strip()
        for what, bad in (("text", not text or text.isspace()), ("label", not label)):
            if bad:
                empty[what] = [empty[what][0] + 1, empty[what][1] or where]
        if label:
            counts[label] = counts.get(label, 0) + 1
            codes.append(index.setdefault(label, len(index)))
    unit = "file" if source.format == "folder" else "row"
    for what, (count, first) in empty.items():
        if count:
            many = f"{count:,} {unit}s have" if count > 1 else f"1 {unit} has"
            at = "the first at" if count > 1 else "at"
            raise DataError(f"{source.name}: {many} an empty {what}, {at} {first}")
    found = np.array(codes, dtype=np.int32)
    return Scan(Path(source.path), source.format, len(found), counts, found)


def class_names(
    counts: Mapping[str, int] | Iterable[str], declared: str | None = None, where: str = ""
) -> tuple[str, ...]:
    """The class order: ``declared`` (``data.labels``, comma-separated) when given, else the
    labels in numeric order when all are integers, else sorted. A DataError for fewer than two
    classes, a label not declared, a declared name empty or repeated; ``where`` names the source.

    Example:
        >>> class_names(["pos", "neg"]), class_names(["pos", "neg"], declared="pos, neg")
        (('neg', 'pos'), ('pos', 'neg'))
    """
    labels, prefix = list(dict.fromkeys(counts)), f"{where}: " if where else ""
    if declared is not None:
        names = tuple(name.strip() for name in declared.split(","))
        repeated = [name for i, name in enumerate(names) if name in names[:i]]
        problem = (
            "has an empty class name" if not all(names)
            else f"names '{repeated[0]}' twice" if repeated
            else "names one class; a classifier needs at least two" if len(names) < 2
            else ""
        )  # fmt: skip
        if problem:
            raise DataError(f"data.labels='{declared}' {problem}")
        if unknown := [label for label in labels if label not in names]:
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise DataError(
                f"{prefix}label '{unknown[0]}'{more} is not in data.labels ({declared})"
            )
        return names
    numeric = labels and all(_INTEGER.fullmatch(label) for label in labels)
    labels.sort(key=(lambda label: (int(label), label)) if numeric else None)
    if len(labels) < 2:
        found = f"every row has the label '{labels[0]}'" if labels else "no labels"
        hint = "a classifier needs at least two classes (is data.label_field the right column?)"
        raise DataError(f"{prefix}{found}; {hint}")
    return tuple(labels)


def column(path: SourcePath, field: str, text_field: str = "text") -> list[str]:
    """One more column, ``field``, of a file's rows as :func:`records` yields them, stripped
    (``''`` where missing): what ``classify evaluate --by`` groups by. A DataError for a source
    without columns (class folders, TFDS) or without that column, naming the columns it has."""
    source = open_source(path)
    if not source.columns:
        raise DataError(f"{source.name} has no columns; {field!r} names a column of a file")
    try:
        return [(value or "").strip() for _, value, _ in source.rows(text_field, field)]
    except DataError as error:  # the missing column's hint is data.label_field's
        raise DataError(str(error).replace("; set data.label_field", "")) from None
