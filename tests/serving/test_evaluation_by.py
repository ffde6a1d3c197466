"""`classify evaluate --by COLUMN`: the accuracy per group of a column of the file (the
behaviour suite's capability), and two kinds of bad input met on the way: a file with a header
and no rows (one line, exit code 2, not an internal error) and labels that differ only in case
(a note naming them)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from classifier.errors import DataError
from classifier.serving.evaluation import check_file, evaluate_file, format_evaluation
from tests.labelled_helpers import write_csv
from tests.model_helpers import run, untrained
from tests.serving.test_bundle import spread

ROWS = [
    ("a great film", "positive", "vocabulary"),
    ("the plot was dull", "negative", "vocabulary"),
    ("not a wonderful film", "negative", "negated_positive"),
    ("the plot was great", "positive", "names"),
    ("awful", "negative", "negated_positive"),
]
HEADER = ("text", "label", "capability")


@pytest.fixture(scope="module")
def model():
    return spread(untrained("attention"), seed=3)


@pytest.fixture(scope="module")
def saved(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "model.keras"
    model.save(path)
    return path


def test_accuracy_per_group_in_order_of_first_appearance(model, tmp_path):
    path = write_csv(tmp_path / "suite.csv", ROWS, HEADER)
    evaluation = evaluate_file(model, path, by="capability")
    right = evaluation.predicted == evaluation.truth
    assert evaluation.groups == tuple(row[2] for row in ROWS)
    assert evaluation.by_group() == [
        ("vocabulary", 2, np.mean(right[:2])),
        ("negated_positive", 2, np.mean(right[[2, 4]])),
        ("names", 1, float(right[3])),
    ]
    table = format_evaluation(evaluation, "table", "model.keras").splitlines()
    assert table[-5:] == [
        "",
        "capability        accuracy    texts",
        f"vocabulary          {np.mean(right[:2]):.4f}        2",
        f"negated_positive    {np.mean(right[[2, 4]]):.4f}        2",
        f"names               {float(right[3]):.4f}        1",
    ]
    document = json.loads(format_evaluation(evaluation, "json", "model.keras"))
    assert document["by"] == "capability"
    assert list(document["groups"]) == ["vocabulary", "negated_positive", "names"]
    assert document["groups"]["names"] == {"accuracy": float(right[3]), "texts": 1}


def test_without_by_there_is_no_group_table(model, tmp_path):
    path = write_csv(tmp_path / "suite.csv", ROWS, HEADER)
    evaluation = evaluate_file(model, path)
    assert evaluation.by_group() == []
    assert format_evaluation(evaluation, "table", "m").splitlines()[-1].startswith("positive ")
    assert "groups" not in json.loads(format_evaluation(evaluation, "json", "m"))


def test_a_file_without_rows_is_one_line(tmp_path):
    header_only = write_csv(tmp_path / "empty.csv", [], HEADER)
    with pytest.raises(DataError) as caught:
        check_file(header_only)
    assert str(caught.value) == (
        f"{header_only} has no rows after its header; there is nothing to evaluate"
    )
    blank = tmp_path / "empty.jsonl"
    blank.write_text("\n")
    with pytest.raises(DataError) as caught:
        check_file(blank)
    assert str(caught.value) == f"{blank} has no rows; there is nothing to evaluate"


def test_cli_a_file_with_a_header_and_no_rows(saved, tmp_path):
    header_only = write_csv(tmp_path / "empty.csv", [], ("text", "label"))
    result = run(
        "evaluate", "--model", str(saved), "--figures", str(tmp_path / "f"), str(header_only)
    )
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"classify: error: {header_only} has no rows after its header; there is nothing to "
        "evaluate\n"
    )


def test_cli_by_prints_the_table_under_the_overall_figures(saved, tmp_path):
    path = write_csv(tmp_path / "suite.csv", ROWS, HEADER)
    result = run(
        "evaluate", "--model", str(saved), "--by", "capability",
        "--figures", str(tmp_path / "f"), str(path),
    )  # fmt: skip
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    lines = result.stdout.splitlines()
    at = lines.index("capability        accuracy    texts")
    assert lines.index("accuracy  " + lines[2].split()[1]) == 2 < at
    assert [line.split()[0] for line in lines[at + 1 : at + 4]] == [
        "vocabulary", "negated_positive", "names",
    ]  # fmt: skip
    assert [int(line.split()[-1]) for line in lines[at + 1 : at + 4]] == [2, 2, 1]
    assert lines[at + 4] == "" and lines[at + 5].startswith("figures: ")


def test_cli_by_a_column_the_file_lacks(saved, tmp_path):
    path = write_csv(tmp_path / "plain.csv", [row[:2] for row in ROWS], ("text", "label"))
    result = run("evaluate", "--model", str(saved), "--by", "capability", str(path))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"classify: error: {path} has no column 'capability' (its columns: text, label)\n"
    )


def test_cli_by_on_a_folder_of_class_folders(saved, tmp_path):
    for label in ("negative", "positive"):
        (tmp_path / "reviews" / label).mkdir(parents=True)
        (tmp_path / "reviews" / label / "1.txt").write_text("a film")
    folder = tmp_path / "reviews"
    result = run("evaluate", "--model", str(saved), "--by", "capability", str(folder))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"classify: error: {folder}/ has no columns; 'capability' names a column of a file\n"
    )


def test_cli_labels_that_differ_only_in_case_get_a_note(saved, tmp_path):
    rows = [("a great film", "positive"), ("a dull film", "negative"), ("fine", "Positive")]
    path = write_csv(tmp_path / "cased.csv", rows)
    result = run("evaluate", "--model", str(saved), "--figures", str(tmp_path / "f"), str(path))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"classify: note: {path}: labels 'positive' and 'Positive' differ only in case; they "
        "are two classes\n"
        f"classify: error: {path}: label 'Positive' is not a class of the model (its classes: "
        "negative, positive; or their indices 0 to 1)\n"
    )


def test_a_label_map_scores_a_five_class_file_against_two_classes(model, tmp_path):
    stars = [("a great film", "4", "a"), ("the plot was dull", "0", "b"),
             ("an ordinary film", "2", "c"), ("a good film", "3", "d")]  # fmt: skip
    path = write_csv(tmp_path / "stars.csv", stars, HEADER)
    checked = check_file(path, by="capability", label_map="0=negative, 1=negative, 2=, "
                         "3=positive, 4=positive")  # fmt: skip
    evaluation = evaluate_file(model, path, checked=checked)
    plain = write_csv(tmp_path / "kept.csv", [
        ("a great film", "positive", "a"), ("the plot was dull", "negative", "b"),
        ("a good film", "positive", "d"),
    ], HEADER)  # fmt: skip
    expected = evaluate_file(model, plain, by="capability")
    assert evaluation.truth.tolist() == [1, 0, 1] and evaluation.groups == ("a", "b", "d")
    np.testing.assert_allclose(evaluation.probabilities, expected.probabilities, atol=1e-6)
    assert evaluation.metrics == expected.metrics


def test_a_file_the_label_map_empties_is_one_line(tmp_path):
    path = write_csv(tmp_path / "neutral.csv", [("an ordinary film", "2", "c")], HEADER)
    with pytest.raises(DataError) as caught:
        check_file(path, label_map="2=, 0=negative, 4=positive")
    assert str(caught.value) == (
        f"{path} has no rows after its header that the label map keeps; there is nothing to "
        "evaluate"
    )
