"""The streaming reader of a user's labelled texts: every format read back, line numbers, the
exact one-line error for each bad input, the class order and the stratified split."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from classifier.data import files, tables
from classifier.data.files import (
    FORMATS,
    Record,
    class_names,
    open_source,
    records,
    scan,
    source_format,
)
from classifier.data.folders import ClassFolders
from classifier.data.labelled import split_assignment
from classifier.data.named import TfdsSource
from classifier.data.sources import Source
from classifier.data.tables import Table
from classifier.data.treebank import Treebank
from classifier.errors import DataError, UserError
from tests.conftest import ROOT

BOM = b"\xef\xbb\xbf"


def write(path: Path, content: str | bytes) -> Path:
    """Write ``content`` to ``path`` exactly (no newline translation), making its folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def error_of(call, *args, **kwargs) -> str:
    """The message of the DataError that ``call`` raises (consuming a returned iterator)."""
    with pytest.raises(DataError) as caught:
        result = call(*args, **kwargs)
        if isinstance(result, Iterator):
            list(result)
    return str(caught.value)


def triples(path, **fields) -> list[tuple[str, str, str]]:
    return [(r.text, r.label, r.where) for r in records(path, **fields)]


# Formats and round trips.


def test_source_format_by_suffix_and_folder(tmp_path):
    for suffix, fmt in [*FORMATS.items(), (".CSV", "csv"), (".JsonL", "jsonl")]:
        assert source_format(write(tmp_path / f"a{suffix}", "")) == fmt
    assert source_format(tmp_path) == "folder"
    assert set(FORMATS.values()) == {"csv", "tsv", "jsonl", "parquet", "treebank"}


def test_each_kind_of_source_is_read_by_its_module(tmp_path):
    kinds = {
        write(tmp_path / "a.csv", ""): (Table, "csv"),
        write(tmp_path / "a.jsonl", ""): (Table, "jsonl"),
        write(tmp_path / "a.txt", ""): (Treebank, "treebank"),
        tmp_path: (ClassFolders, "folder"),
        "tfds:imdb_reviews:test": (TfdsSource, "tfds"),
    }
    for path, (kind, fmt) in kinds.items():
        source = open_source(path)
        assert (type(source), source.format) == (kind, fmt)
    assert open_source(tmp_path).name == f"{tmp_path}/"  # messages name a folder with its '/'


@dataclasses.dataclass(frozen=True)
class Listed(Source):
    """A kind of source made in the test: rows from a tuple."""

    items: tuple = ()

    def rows(self, text_field, label_field):
        return iter(self.items)


def test_a_new_kind_of_source_gets_the_checks_and_counts_above_it():
    rows = (("good", "pos", "item 1"), ("bad", " neg ", "item 2"), ("fine", "pos", "item 3"))
    listed = Listed("mem", "mem", "list", rows)
    assert open_source(listed) is listed
    assert scan(listed).counts == {"pos": 2, "neg": 1}
    assert [(r.text, r.label, r.where) for r in records(listed)] == [
        ("good", "pos", "item 1"), ("bad", "neg", "item 2"), ("fine", "pos", "item 3"),
    ]  # fmt: skip
    blank = Listed("mem", "mem", "list", (*rows, (" ", "pos", "item 4"), ("", "neg", "item 5")))
    assert error_of(scan, blank) == "mem: 2 rows have an empty text, the first at item 4"
    assert error_of(records, blank) == "mem: item 4 has an empty text"
    assert (
        error_of(files.column, listed, "extra")
        == "mem has no columns; 'extra' names a column of a file"
    )


def test_csv_round_trip_with_quoted_multiline_text(tmp_path):
    text = 'He said ""stop, now"", then left.\r\nLine two, with a comma.\r\n\r\nLast.'
    path = write(
        tmp_path / "reviews.csv",
        "id,text,label,stars\r\n"
        "1,Plain text, pos ,5\r\n"
        f'2,"{text}",neg,1\r\n'
        '3," padded ","pos",4\r\n',
    )
    assert triples(path) == [
        ("Plain text", "pos", "line 2"),
        (
            'He said "stop, now", then left.\r\nLine two, with a comma.\r\n\r\nLast.',
            "neg",
            "line 3",
        ),
        (" padded ", "pos", "line 7"),
    ]
    assert isinstance(next(records(path)), Record)


def test_csv_blank_lines_and_other_column_names(tmp_path):
    path = write(tmp_path / "r.csv", "\nreview, stars\n\ngood,5\n  \nbad,1")
    assert triples(path, text_field="review", label_field="stars") == [
        ("good", "5", "line 4"),
        ("bad", "1", "line 6"),
    ]


@pytest.mark.parametrize("suffix", [".tsv", ".tab"])
def test_tsv_round_trip(tmp_path, suffix):
    path = write(tmp_path / f"r{suffix}", 'label\ttext\npos\ta, b\t c\nneg\t"quoted\ttab"\n')
    assert triples(path) == [("a, b", "pos", "line 2"), ("quoted\ttab", "neg", "line 3")]


def test_jsonl_round_trip_with_integer_labels(tmp_path):
    lines = [
        {"text": "great", "label": 5, "id": 1},
        {"text": "line\u2028separator and\nnewline", "label": " 1 "},
        {"label": 10, "text": "tenth"},
    ]
    body = "\n".join(json.dumps(line) for line in lines[:2]) + "\n\n  \n" + json.dumps(lines[2])
    path = write(tmp_path / "r.jsonl", body)
    assert triples(path) == [
        ("great", "5", "line 1"),
        ("line\u2028separator and\nnewline", "1", "line 2"),
        ("tenth", "10", "line 5"),
    ]
    assert triples(write(tmp_path / "r.ndjson", body)) == triples(path)


def test_parquet_round_trip_across_batches(tmp_path):
    n = 5000  # more than one batch of 4096
    table = pa.table(
        {"review": [f"text {i}" for i in range(n)], "stars": [i % 3 for i in range(n)]}
    )
    pq.write_table(table, tmp_path / "r.parquet", row_group_size=1000)
    got = list(records(tmp_path / "r.parquet", text_field="review", label_field="stars"))
    assert len(got) == n
    assert got[0] == Record("text 0", "0", "row 1")
    assert got[4999] == Record("text 4999", "1", "row 5000")
    pq.write_table(pa.table({"text": ["a", "b"], "label": [" neg", "pos"]}), tmp_path / "s.parquet")
    assert triples(tmp_path / "s.parquet") == [("a", "neg", "row 1"), ("b", "pos", "row 2")]


def test_folder_round_trip(tmp_path):
    root = tmp_path / "reviews"
    write(root / "pos" / "2.txt", "two")
    write(root / "pos" / "1.txt", BOM + b"one\nline two")
    write(root / "pos" / "sub" / "deep" / "0.txt", "deep")
    write(root / "pos" / "sub" / "3.txt", "three")
    write(root / "neg" / "9.md", "nine")
    write(root / "neg" / ".hidden.txt", "hidden")
    write(root / ".cache" / "x.txt", "hidden class")
    write(root / "neg" / ".git" / "y.txt", "hidden folder")
    write(root / ".DS_Store", "hidden file at the top")
    assert triples(root) == [
        ("nine", "neg", "neg/9.md"),
        ("one\nline two", "pos", "pos/1.txt"),
        ("two", "pos", "pos/2.txt"),
        ("three", "pos", "pos/sub/3.txt"),
        ("deep", "pos", "pos/sub/deep/0.txt"),
    ]


def test_bom_is_skipped(tmp_path):
    csv_path = write(tmp_path / "r.csv", BOM + b"text,label\nok,pos\n")
    assert triples(csv_path) == [("ok", "pos", "line 2")]
    jsonl_path = write(tmp_path / "r.jsonl", BOM + b'{"text": "ok", "label": "pos"}\n')
    assert triples(jsonl_path) == [("ok", "pos", "line 1")]


def test_records_are_streamed(tmp_path):
    path = write(tmp_path / "r.csv", b"text,label\na,pos\nb,neg\n\xff\n")  # the last line is bad
    stream = records(path)
    assert next(stream) == Record("a", "pos", "line 2")


def test_reads_without_tensorflow():
    code = (
        "import sys, classifier.data.files; "
        "print(sorted(m for m in ('tensorflow', 'keras', 'pandas', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


# Scan: counting and checking in one pass.


def test_scan_counts_labels_in_order_of_first_appearance(tmp_path):
    path = write(tmp_path / "r.csv", "text,label\na,pos\nb,neg\nc,pos\nd,mid\ne,neg\n")
    found = scan(path)
    assert (found.path, found.format, found.rows) == (path, "csv", 5)
    assert found.counts == {"pos": 2, "neg": 2, "mid": 1}
    assert found.codes.dtype == np.int32
    assert found.codes.tolist() == [0, 1, 0, 2, 1]


def test_scan_does_not_hold_the_texts(tmp_path):
    path = tmp_path / "big.csv"
    filler = "word " * 30
    with path.open("w", newline="") as out:
        out.write("id,text,label\n")
        out.writelines(
            f"{i},review {i}: {filler},{'pos' if i % 3 else 'neg'}\n" for i in range(200_000)
        )
    size = path.stat().st_size
    started = time.perf_counter()
    tracemalloc.start()
    try:
        found = scan(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.rows == 200_000 and found.counts == {"neg": 66_667, "pos": 133_333}
    assert size > 30e6 and peak < size / 10, (size, peak)
    assert time.perf_counter() - started < 20


# Bad input: one line each, naming the file.


def test_missing_source(tmp_path):
    assert error_of(source_format, tmp_path / "reviews.csv") == (
        f"data file {tmp_path / 'reviews.csv'} not found"
    )
    assert error_of(records, f"{tmp_path}/reviews/") == f"data folder {tmp_path}/reviews/ not found"
    assert error_of(scan, tmp_path / "reviews") == f"data folder {tmp_path / 'reviews'} not found"


def test_unknown_suffix(tmp_path):
    path = write(tmp_path / "reviews.xlsx", "")
    taken = ".csv, .tsv, .tab, .jsonl, .ndjson, .parquet, .txt (sentiment-treebank trees)"
    assert error_of(records, path) == (
        f"{path}: cannot tell the format from its suffix '.xlsx'; use a file ending in "
        f"{taken}, or a folder with one sub-folder per class"
    )
    bare = write(tmp_path / "reviews", "")
    assert error_of(scan, bare) == (
        f"{bare}: cannot tell the format from a name without a suffix; use a file ending in "
        f"{taken}, or a folder with one sub-folder per class"
    )


def test_missing_column(tmp_path):
    path = write(tmp_path / "reviews.csv", "review,stars\ngood,5\n")
    assert error_of(scan, path) == (
        f"{path} has no column 'text' (its columns: review, stars); set data.text_field"
    )
    assert error_of(records, path, text_field="review") == (
        f"{path} has no column 'label' (its columns: review, stars); set data.label_field"
    )


def test_missing_jsonl_key(tmp_path):
    path = write(tmp_path / "r.jsonl", '\n{"review": "good", "stars": 5}\n')
    assert error_of(scan, path) == (
        f"{path} has no column 'text' (its columns: review, stars); set data.text_field"
    )
    later = write(tmp_path / "s.jsonl", '{"text": "a", "label": 1}\n{"text": "b"}\n')
    assert error_of(records, later) == (
        f"{later}: line 2 has no column 'label' (its columns: text); set data.label_field"
    )


def test_missing_parquet_column(tmp_path):
    pq.write_table(pa.table({"review": ["a"], "label": ["pos"]}), tmp_path / "r.parquet")
    path = tmp_path / "r.parquet"
    assert error_of(scan, path) == (
        f"{path} has no column 'text' (its columns: review, label); set data.text_field"
    )


def test_empty_texts_and_labels_are_counted(tmp_path):
    path = write(
        tmp_path / "r.csv",
        'text,label\na,pos\n" ",pos\nb,neg\n,neg\nc,pos\n\t\t,neg\nd,pos\n',
    )
    assert error_of(scan, path) == f"{path}: 3 rows have an empty text, the first at line 3"
    assert error_of(records, path) == f"{path}: line 3 has an empty text"
    one = write(tmp_path / "s.csv", "text,label\na,pos\nb, \nc\nd,neg\n")  # c: no label field
    assert error_of(scan, one) == f"{one}: 2 rows have an empty label, the first at line 3"
    assert error_of(records, one) == f"{one}: line 3 has an empty label"
    single = write(tmp_path / "t.jsonl", '{"text": "a", "label": null}\n{"text": "b", "label": 1}')
    assert error_of(scan, single) == f"{single}: 1 row has an empty label, at line 1"


def test_empty_texts_in_parquet_and_folders(tmp_path):
    table = pa.table({"text": ["a", None, ""], "label": [1, 2, 3]})
    pq.write_table(table, tmp_path / "r.parquet")
    path = tmp_path / "r.parquet"
    assert error_of(scan, path) == f"{path}: 2 rows have an empty text, the first at row 2"
    root = tmp_path / "texts"
    write(root / "pos" / "a.txt", "fine")
    write(root / "neg" / "b.txt", " \n")
    assert error_of(scan, root) == f"{root}/: 1 file has an empty text, at neg/b.txt"


def test_unclosed_quote(tmp_path):
    path = write(tmp_path / "r.csv", 'text,label\na,pos\nb,neg\n"never closed,pos\nc,neg\nd,pos\n')
    assert error_of(scan, path) == f"{path}: line 4: a quoted field is never closed"
    later = write(  # the record starts on line 2; its second quoted field opens on line 3
        tmp_path / "s.csv", 'text,label\n"two\nlines","x\n""y"", z\nmore\n'
    )
    assert error_of(records, later) == f"{later}: line 3: a quoted field is never closed"


def test_field_longer_than_the_limit(tmp_path, monkeypatch):
    path = write(tmp_path / "r.csv", 'text,label\na,pos\nb,"unclosed\n' + "x" * 80 + "\n")
    before = csv.field_size_limit()
    monkeypatch.setattr(tables, "FIELD_LIMIT", 50)
    csv.field_size_limit(50)
    try:
        message = error_of(scan, path)
    finally:
        csv.field_size_limit(before)
    assert (
        message
        == f"{path}: line 3: a field is longer than 50 characters (is a quote never closed?)"
    )


def test_other_csv_errors(tmp_path):
    path = write(tmp_path / "r.csv", 'text,label\na,pos\n"quoted"then,neg\n')
    assert error_of(scan, path) == f"{path}: line 3: ',' expected after '\"'"
    cr = write(tmp_path / "s.csv", "text,label\na\rb,pos\n")
    assert error_of(records, cr) == (
        f"{cr}: line 2: a carriage return (\\r) in an unquoted field; quote the field"
    )
    empty = write(tmp_path / "t.csv", "\n\n")
    assert error_of(scan, empty) == f"{empty} is empty; its first line must name the columns"


def test_not_utf8(tmp_path):
    path = write(tmp_path / "r.csv", b"text,label\na,pos\nb,neg\ncaf\xe9 ok,pos\n")
    assert error_of(scan, path) == f"{path} is not UTF-8: line 4 (byte 4 of the line)"
    bom = write(tmp_path / "r.jsonl", BOM + b'{"text": "\xff"}\n')
    assert error_of(records, bom) == f"{bom} is not UTF-8: line 1 (byte 14 of the line)"
    root = tmp_path / "texts"
    write(root / "pos" / "1.txt", "fine")
    write(root / "neg" / "sub" / "2.txt", b"first line\nsecond \x80 line")
    assert error_of(scan, root) == f"{root}/neg/sub/2.txt is not UTF-8: line 2 (byte 8 of the line)"


def test_jsonl_lines_that_are_not_objects(tmp_path):
    path = write(tmp_path / "r.jsonl", '{"text": "a", "label": 1}\n{"text": "b", \n')
    assert error_of(scan, path) == (
        f"{path}: line 2 is not a JSON object (Expecting property name enclosed in double "
        f"quotes at column 14)"  # the end of the line
    )
    value = write(tmp_path / "v.jsonl", '{"text": x, "label": 1}\n')
    assert error_of(records, value) == (
        f"{value}: line 1 is not a JSON object (Expecting value at column 10)"
    )
    array_line = write(tmp_path / "s.jsonl", '{"text": "a", "label": 1}\n\n["b", 1]\n')
    assert (
        error_of(records, array_line) == f"{array_line}: line 3 is not a JSON object but an array"
    )


@pytest.mark.parametrize(
    ("label", "shown"),
    [("true", "true is a boolean"), ("1.5", "1.5 is a number"), ('["a"]', '["a"] is an array'),
     ('{"a": 1}', '{"a": 1} is an object')],
)  # fmt: skip
def test_jsonl_labels_must_be_strings_or_integers(tmp_path, label, shown):
    path = write(
        tmp_path / "r.jsonl", f'{{"text": "a", "label": "x"}}\n{{"text": "b", "label": {label}}}\n'
    )
    assert error_of(scan, path) == f"{path}: line 2: label {shown}, not a string or integer"


def test_texts_must_be_strings(tmp_path):
    path = write(tmp_path / "r.jsonl", '{"text": 3, "label": "x"}\n')
    assert error_of(records, path) == f"{path}: line 1: the text is an integer, not a string"
    pq.write_table(pa.table({"text": ["a"], "label": [0.5]}), tmp_path / "r.parquet")
    parquet = tmp_path / "r.parquet"
    assert (
        error_of(scan, parquet)
        == f"{parquet}: row 1: label 0.5 is a number, not a string or integer"
    )


def test_not_a_parquet_file(tmp_path):
    path = write(tmp_path / "r.parquet", "text,label\na,pos\n")
    message = error_of(scan, path)
    assert message.startswith(f"{path} cannot be read as Parquet: ") and "\n" not in message


def test_folder_layout_errors(tmp_path):
    root = tmp_path / "reviews"
    write(root / "pos" / "1.txt", "good")
    write(root / "notes.txt", "loose")
    write(root / "README", "loose")
    assert error_of(scan, root) == (
        f"{root}/: 2 files are outside any class folder (e.g. README); put each text in a "
        f"folder named by its class"
    )
    (root / "README").unlink()
    assert error_of(records, f"{root}/") == (
        f"{root}/: 1 file is outside any class folder (e.g. notes.txt); put each text in a "
        f"folder named by its class"
    )
    flat = tmp_path / "flat"
    flat.mkdir()
    assert error_of(scan, flat) == (
        f"{flat}/ has no class folders; put each text in a folder named by its class"
    )
    (flat / "neg" / ".hidden").mkdir(parents=True)
    (flat / "pos").mkdir()
    write(flat / "neg" / ".x.txt", "hidden")
    assert error_of(scan, flat) == f"{flat}/: its class folders (neg, pos) hold no text files"


def test_errors_are_user_errors_on_one_line(tmp_path):
    path = write(tmp_path / "r.csv", 'text,label\n"a\nb\nc,pos\n')
    with pytest.raises(UserError) as caught:
        scan(path)
    assert "\n" not in str(caught.value) and caught.value.__cause__ is None


# The class order.


def test_class_names_order():
    assert class_names({"10": 1, "2": 1, "1": 1, "-3": 1}) == ("-3", "1", "2", "10")
    assert class_names(["pos", "neg", "Neutral"]) == ("Neutral", "neg", "pos")
    assert class_names(["10", "2", "x"]) == ("10", "2", "x")  # not all integers: as strings
    assert class_names({"pos": 3, "neg": 1}, "positive, neg ,pos") == ("positive", "neg", "pos")
    assert class_names(["b", "a"], "b,a,c") == ("b", "a", "c")  # a declared class may be empty


@pytest.mark.parametrize(
    ("labels", "declared", "message"),
    [
        (["pos"], None, "r.csv: every row has the label 'pos'; a classifier needs at least two "
                        "classes (is data.label_field the right column?)"),
        ([], None, "r.csv: no labels; a classifier needs at least two classes (is "
                   "data.label_field the right column?)"),
        (["pos", "maybe", "meh"], "neg,pos", "r.csv: label 'maybe' (and 1 more) is not in "
                                            "data.labels (neg,pos)"),
        (["pos", "maybe"], "neg, pos", "r.csv: label 'maybe' is not in data.labels (neg, pos)"),
        (["a"], "a, b, a", "data.labels='a, b, a' names 'a' twice"),
        (["a"], "a,,b", "data.labels='a,,b' has an empty class name"),
        (["a"], "a", "data.labels='a' names one class; a classifier needs at least two"),
    ],
)  # fmt: skip
def test_class_names_errors(labels, declared, message):
    with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
        class_names(labels, declared, where="r.csv")


def test_class_names_without_where():
    with pytest.raises(DataError, match="^every row has the label 'x'; "):
        class_names(["x"])


# The split.


def test_split_is_exact_per_class():
    codes = np.repeat(np.array([2, 0, 1], np.int32), [100, 37, 5])
    np.random.default_rng(7).shuffle(codes)
    assignment = split_assignment(codes, 0.1, 0.2, seed=3)
    assert assignment.dtype == np.uint8 and assignment.shape == codes.shape
    for code, n in ((2, 100), (0, 37), (1, 5)):
        got = np.bincount(assignment[codes == code], minlength=3).tolist()
        assert got == [n - round(0.1 * n) - round(0.2 * n), round(0.1 * n), round(0.2 * n)]
    assert np.bincount(split_assignment(codes, 0.0, 0.0)).tolist() == [142]


def test_split_is_deterministic_and_depends_on_the_seed():
    codes = np.arange(1000) % 4
    first = split_assignment(codes, 0.1, 0.1, seed=1)
    assert np.array_equal(first, split_assignment(codes.copy(), 0.1, 0.1, seed=1))
    assert not np.array_equal(first, split_assignment(codes, 0.1, 0.1, seed=2))


def test_split_keeps_a_training_row_in_every_class():
    codes = np.array([0] * 10 + [1, 1])
    message = (
        "r.csv: class 'pos' has 2 rows: 1 for validation and 1 for test leave none for "
        "training; add rows or lower data.validation_fraction or data.test_fraction"
    )
    with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
        split_assignment(codes, 0.3, 0.3, names=["neg", "pos"], where="r.csv")
    with pytest.raises(DataError, match=r"^class 1 has 2 rows: "):
        split_assignment(codes, 0.3, 0.3)
    with pytest.raises(ValueError, match="leave no training rows"):
        split_assignment(codes, 0.5, 0.5)
