"""A user's labelled texts, streamed from disk: a CSV, TSV, JSON Lines or Parquet file (its
suffix names the format, :data:`FORMATS`) or a folder laid out as Keras'
``text_dataset_from_directory`` reads it (one sub-folder per class). It owns reading them
(:func:`records`), the one checking and counting pass (:func:`scan`), and the class order
(:func:`class_names`).
Bad input is a :class:`~classifier.errors.DataError`, one line naming the file and the line, row
or text file. No TensorFlow; pyarrow only to read Parquet, imported then. A TFDS data set by
name (``tfds:NAME``) is read through :mod:`classifier.data.named`, with TensorFlow; a ``.txt``
file of the sentiment treebank's trees through :mod:`classifier.data.treebank`.

Example:
    >>> class_names({"2": 40, "10": 7, "1": 12})
    ('1', '2', '10')
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import re
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from classifier.data import named, treebank
from classifier.errors import DataError, first_line

FORMATS: dict[str, str] = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl",
                           ".ndjson": "jsonl", ".parquet": "parquet",
                           treebank.SUFFIX: "treebank"}  # fmt: skip
FIELD_LIMIT = 1 << 24  # characters in one CSV field (csv's default, 131,072, cuts long reviews)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_KINDS = {bool: "a boolean", int: "an integer", float: "a number", list: "an array",
          dict: "an object"}  # fmt: skip
Source = str | Path
Row = tuple[str | None, str | None, str]  # text, label (None: missing), where
Phrases = bool | Sequence[bool]  # a treebank's phrases: none, all, or of the trees marked True


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


def source_format(path: Source) -> str:
    """The format of a source: ``csv``, ``tsv``, ``jsonl``, ``parquet``, ``treebank`` (PTB
    trees, ``.txt``), ``folder`` or ``tfds`` (a TFDS data set by name,
    :mod:`classifier.data.named`); a DataError when the path does not exist or its suffix
    names no format.

    Example:
        >>> source_format("no/such/reviews.csv")
        Traceback (most recent call last):
        classifier.errors.DataError: data file no/such/reviews.csv not found
    """
    raw, suffix = os.fspath(path), Path(path).suffix
    if named.is_named(raw):
        return "tfds"
    if Path(path).is_dir():
        return "folder"
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
    return FORMATS[suffix.lower()]


def records(
    path: Source, text_field: str = "text", label_field: str = "label", *, phrases: Phrases = False
) -> Iterator[Record]:
    """Every record of the source in file order, streamed (a folder: class folders sorted, in
    each the files sorted, a folder's files before its sub-folders). A missing path or unknown
    suffix raises at once, anything else when it is reached: the first bad input.

    Example::

        for record in records("reviews.csv", text_field="review", label_field="stars"):
            print(record.where, record.label)  # line 2 5
    """
    rows, name = _rows(path, text_field, label_field, phrases), _name(path)

    def checked() -> Iterator[Record]:
        for text, label, where in rows:
            if not text or text.isspace():
                raise DataError(f"{name}: {where} has an empty text")
            if not (label := (label or "").strip()):
                raise DataError(f"{name}: {where} has an empty label")
            yield Record(text, label, where)

    return checked()


def scan(
    path: Source, text_field: str = "text", label_field: str = "label", *, phrases: Phrases = False
) -> Scan:
    """Check every row in one streaming pass and count the labels; texts are not kept (memory
    grows by four bytes a row). Errors as :func:`records`, except that empty texts (then empty
    labels) are counted over the whole source: ``3 rows have an empty text, the first at ...``.

    Example::

        found = scan("reviews.csv")
        found.rows, found.counts  # (1200, {'positive': 640, 'negative': 560})
    """
    fmt, rows = source_format(path), _rows(path, text_field, label_field, phrases)
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
    unit = "file" if fmt == "folder" else "row"
    for what, (count, first) in empty.items():
        if count:
            many = f"{count:,} {unit}s have" if count > 1 else f"1 {unit} has"
            at = "the first at" if count > 1 else "at"
            raise DataError(f"{_name(path)}: {many} an empty {what}, {at} {first}")
    found = np.array(codes, dtype=np.int32)
    return Scan(Path(path), fmt, len(found), counts, found)


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


def column(path: Source, field: str, text_field: str = "text") -> list[str]:
    """One more column, ``field``, of a file's rows as :func:`records` yields them, stripped
    (``''`` where missing): what ``classify evaluate --by`` groups by. A DataError for a source
    without columns (class folders, TFDS) or without that column, naming the columns it has."""
    if source_format(path) not in ("csv", "tsv", "jsonl", "parquet"):
        raise DataError(f"{_name(path)} has no columns; {field!r} names a column of a file")
    try:
        return [(value or "").strip() for _, value, _ in _rows(path, text_field, field)]
    except DataError as error:  # the missing column's hint is data.label_field's
        raise DataError(str(error).replace("; set data.label_field", "")) from None


def _name(path: Source) -> str:
    """The source as messages name it: as given, a folder with a trailing '/'."""
    raw = os.fspath(path)
    return (
        raw
        if named.is_named(raw) or not Path(path).is_dir() or raw.endswith(("/", os.sep))
        else raw + "/"
    )


def _rows(path: Source, text: str, label: str, phrases: Phrases = False) -> Iterator[Row]:
    """The source's rows, not yet checked for emptiness; its format is checked now.
    ``phrases``: every labelled phrase of a treebank file, not only its sentences."""
    fmt, name = source_format(path), _name(path)
    if fmt == "tfds":
        return named.tfds_rows(name, text, label)
    path = Path(path)
    if fmt == "treebank":
        return treebank.rows(path, name, phrases)
    read = {"folder": _folder_rows, "jsonl": _jsonl_rows, "parquet": _parquet_rows}.get(fmt)
    return (read or _delimited_rows)(path, name, text, label, "\t" if fmt == "tsv" else ",")


def _lines(path: Path, name: str) -> Iterator[str]:
    """The file's lines, decoded as UTF-8 one by one (a leading BOM skipped), endings kept."""
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


def _columns(columns: Sequence[str], text: str, label: str, where: str) -> tuple[int, int]:
    """Where the text and label columns are (their first occurrence)."""
    for field, key in ((text, "text_field"), (label, "label_field")):
        if field not in columns:
            found = ", ".join(columns) or "none"
            raise DataError(
                f"{where} has no column '{field}' (its columns: {found}); set data.{key}"
            )
    return list(columns).index(text), list(columns).index(label)


def _delimited_rows(path: Path, name: str, text: str, label: str, delimiter: str) -> Iterator[Row]:
    csv.field_size_limit(max(csv.field_size_limit(), FIELD_LIMIT))
    reader = csv.reader(_lines(path, name), delimiter=delimiter, strict=True)
    columns: tuple[int, int] | None = None
    while True:
        start = reader.line_num + 1  # the line this record starts on
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise _csv_error(path, name, delimiter, start, reader.line_num, str(error)) from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # a blank line
        if columns is None:
            columns = _columns([column.strip() for column in row], text, label, name)
            continue
        row += [None] * (max(columns) + 1 - len(row))  # a short row: its text or label missing
        yield row[columns[0]], row[columns[1]], f"line {start}"
    if columns is None:
        raise DataError(f"{name} is empty; its first line must name the columns")


def _csv_error(path: Path, name: str, sep: str, start: int, line: int, message: str) -> DataError:
    """One line for what ``csv.reader`` refused in the record that starts on line ``start``."""
    too_long = message.startswith("field larger than field limit")
    if too_long or message == "unexpected end of data":
        line = _open_quote(path, name, sep, start, line) or start
        limit = f"a field is longer than {csv.field_size_limit():,} characters (is a quote "
        message = limit + "never closed?)" if too_long else "a quoted field is never closed"
    elif message.startswith("new-line character seen in unquoted field"):
        message = "a carriage return (\\r) in an unquoted field; quote the field"
    return DataError(f"{name}: line {line}: {message}")


def _open_quote(path: Path, name: str, delimiter: str, start: int, stop: int) -> int | None:
    """The line that opened the quoted field still open at the end of line ``stop``, reading
    the record from line ``start`` as ``csv`` does (None: no quoted field is open)."""
    special = re.compile(f'["\r\n{re.escape(delimiter)}]')
    state, opened = "start", None  # at a field's start, in a plain field, quoted, after a quote
    for number, line in enumerate(islice(_lines(path, name), stop), 1):
        position = 0
        for match in special.finditer(line) if number >= start else ():
            if match.start() > position and state == "start":
                state = "plain"
            char, position = match.group(), match.end()
            if state == "quoted" or (state == "after" and char == '"'):
                state = "after" if state == "quoted" and char == '"' else "quoted"
            elif state == "start" and char == '"':
                state, opened = "quoted", number
            elif char != '"':
                state = "start"
    return opened if state == "quoted" else None


def _jsonl_rows(path: Path, name: str, text: str, label: str, _: str) -> Iterator[Row]:
    first = True
    for number, line in enumerate(_lines(path, name), 1):
        if not line or line.isspace():
            continue
        where = f"line {number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            why = f"{error.msg} at column {min(error.pos, len(line.rstrip())) + 1}"
            raise DataError(f"{name}: {where} is not a JSON object ({why})") from None
        if not isinstance(value, dict):
            raise DataError(f"{name}: {where} is not a JSON object but {_kind(value)}")
        _columns(list(value), text, label, name if first else f"{name}: {where}")
        first = False
        yield _text(value[text], name, where), _label(value[label], name, where), where


def _parquet_rows(path: Path, name: str, text: str, label: str, _: str) -> Iterator[Row]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"reading {name} needs pyarrow (pip install pyarrow)") from None
    try:
        file, done = pq.ParquetFile(path), 0
        _columns(file.schema_arrow.names, text, label, name)
        for batch in file.iter_batches(4096, columns=list(dict.fromkeys([text, label]))):
            texts, labels = batch.column(text).to_pylist(), batch.column(label).to_pylist()
            for number, (value, tag) in enumerate(zip(texts, labels, strict=True), done + 1):
                where = f"row {number}"
                yield _text(value, name, where), _label(tag, name, where), where
            done += len(texts)
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        if isinstance(error, DataError):
            raise
        raise DataError(f"{name} cannot be read as Parquet: {first_line(error)}") from None


def _kind(value: object) -> str:
    return _KINDS.get(type(value), f"a {type(value).__name__}")


def _text(value: object, name: str, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise DataError(f"{name}: {where}: the text is {_kind(value)}, not a string")


def _label(value: object, name: str, where: str) -> str | None:
    """A JSON or Parquet label as text: a string, or an integer's decimal digits."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    shown = json.dumps(value, default=str, ensure_ascii=False)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise DataError(f"{name}: {where}: label {shown} is {_kind(value)}, not a string or integer")


def _folder_rows(root: Path, name: str, *_: str) -> Iterator[Row]:
    """Keras' layout: each class folder's files, recursively; hidden ('.') entries skipped."""
    try:
        entries = sorted((e for e in os.scandir(root) if e.name[0] != "."), key=lambda e: e.name)
    except OSError as error:
        raise DataError(f"cannot read {name}: {error.strerror}") from None
    if loose := [entry.name for entry in entries if entry.is_file()]:
        many = f"{len(loose)} files are" if len(loose) > 1 else "1 file is"
        raise DataError(
            f"{name}: {many} outside any class folder (e.g. {loose[0]}); put each text in a "
            f"folder named by its class"
        )
    if not (classes := [entry.name for entry in entries if entry.is_dir()]):
        raise DataError(
            f"{name} has no class folders; put each text in a folder named by its class"
        )
    found = False
    for label in classes:
        for directory, folders, files in os.walk(root / label):
            folders[:] = sorted(folder for folder in folders if folder[0] != ".")
            for path in (Path(directory, file) for file in sorted(files) if file[0] != "."):
                if path.is_file():
                    found, where = True, path.relative_to(root).as_posix()
                    yield "".join(_lines(path, f"{name}{where}")), label, where
    if not found:
        raise DataError(f"{name}: its class folders ({', '.join(classes)}) hold no text files")
