"""Two readings of a labelled file beside its texts and labels: one more column
(:func:`classifier.data.files.column`, what `classify evaluate --by` groups by) and labels that
differ only in case (:func:`classifier.data.label_case.case_clash`), which `classify train` and
`classify data` note."""

from __future__ import annotations

import json

import pytest

from classifier.data.files import column
from classifier.data.label_case import case_clash
from classifier.errors import DataError
from tests.labelled_helpers import write_csv
from tests.model_helpers import run


def test_a_column_is_read_row_by_row_in_each_format(tmp_path):
    rows = [("a film", "pos", "names"), ("a plot", "neg", " typos "), ("it", "pos", "")]
    csv_path = write_csv(tmp_path / "a.csv", rows, ("text", "label", "capability"))
    assert column(csv_path, "capability") == ["names", "typos", ""]
    jsonl = tmp_path / "a.jsonl"
    keys = ("text", "label", "capability")
    lines = [json.dumps(dict(zip(keys, row, strict=True))) for row in rows]
    jsonl.write_text("\n".join(lines))
    assert column(jsonl, "capability") == ["names", "typos", ""]
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "a.parquet"
    table = {"text": [r[0] for r in rows], "label": [r[1] for r in rows], "n": [1, 2, 3]}
    pq.write_table(pa.table(table), parquet)
    assert column(parquet, "n") == ["1", "2", "3"]


def test_a_missing_column_names_the_columns_there(tmp_path):
    path = write_csv(tmp_path / "a.csv", [("a film", "pos")])
    with pytest.raises(DataError) as caught:
        column(path, "capability")
    assert str(caught.value) == f"{path} has no column 'capability' (its columns: text, label)"


@pytest.mark.parametrize(
    ("labels", "note"),
    [
        (["negative", "positive"], None),
        (
            ["Positive", "negative", "positive"],
            "f.csv: labels 'Positive' and 'positive' differ only in case; they are two classes",
        ),
        (
            ["POS", "neg", "Pos", "Neg", "pos"],
            "f.csv: labels 'POS', 'Pos' and 'pos'; 'neg' and 'Neg' differ only in case; each is "
            "a class of its own",
        ),
    ],
)
def test_labels_that_differ_only_in_case(labels, note):
    assert case_clash(labels, "f.csv") == note


def test_classify_data_notes_labels_that_differ_only_in_case(tmp_path):
    rows = [(f"text {i}", ("negative", "positive", "Positive")[i % 3]) for i in range(90)]
    path = write_csv(tmp_path / "cased.csv", rows)
    result = run("data", "--data", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"classify: note: {path}: labels 'Positive' and 'positive' differ only in case; they "
        "are two classes\n"
    )
