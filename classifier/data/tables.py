"""A table file as a labelled source: CSV, TSV (``.tsv``, ``.tab``), JSON Lines (``.jsonl``,
``.ndjson``) or Parquet, its suffix naming the format (:data:`SUFFIXES`). The text and the label
are columns (``data.text_field``, ``data.label_field``), read streamed: a record's ``where`` is
the line it starts on (``line 12``) or, in Parquet, its row (``row 12``, from 1). pyarrow is
imported only to read Parquet.

Bad input is one line naming the file and the line: a missing column (naming those there are),
a quote never closed, a JSON line that is not an object, a label that is neither a string nor
an integer.

Example::

    rows = Table("reviews.csv", "reviews.csv", "csv").rows("review", "stars")
    next(rows)  # ('A quiet film ...', '4', 'line 2')
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from classifier.data.sources import Row, Source, lines
from classifier.errors import DataError, first_line

SUFFIXES: dict[str, str] = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl",
                            ".ndjson": "jsonl", ".parquet": "parquet"}  # fmt: skip
FIELD_LIMIT = 1 << 24  # characters in one CSV field (csv's default, 131,072, cuts long reviews)
_KINDS = {bool: "a boolean", int: "an integer", float: "a number", list: "an array",
          dict: "an object"}  # fmt: skip


@dataclass(frozen=True)
class Table(Source):
    """A CSV, TSV, JSON Lines or Parquet file (``format``: ``csv``, ``tsv``, ``jsonl``,
    ``parquet``)."""

    columns = True

    def rows(self, text_field: str, label_field: str) -> Iterator[Row]:
        path, name = Path(self.path), self.name
        if self.format == "jsonl":
            return _jsonl_rows(path, name, text_field, label_field)
        if self.format == "parquet":
            return _parquet_rows(path, name, text_field, label_field)
        delimiter = "\t" if self.format == "tsv" else ","
        return _delimited_rows(path, name, text_field, label_field, delimiter)


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
    reader = csv.reader(lines(path, name), delimiter=delimiter, strict=True)
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
    for number, line in enumerate(islice(lines(path, name), stop), 1):
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


def _jsonl_rows(path: Path, name: str, text: str, label: str) -> Iterator[Row]:
    first = True
    for number, line in enumerate(lines(path, name), 1):
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


def _parquet_rows(path: Path, name: str, text: str, label: str) -> Iterator[Row]:
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
