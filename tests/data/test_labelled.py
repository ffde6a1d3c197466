"""A user's labelled file planned as splits: the class order, the stratified share of one file
or a file per split, labels validation or test have that training lacks, and `classify data`
describing it without TensorFlow."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from classifier.config.schema import DataConfig, load_config
from classifier.data.labelled import SPLIT_SEED, plan_splits
from classifier.errors import ConfigError, DataError
from tests.conftest import ROOT
from tests.labelled_helpers import classify, labelled_rows, write_csv


def test_one_file_is_split_stratified_and_alike_for_every_run(tmp_path):
    path = write_csv(tmp_path / "reviews.csv", labelled_rows(300))
    plan = plan_splits(DataConfig(source=str(path)))
    assert plan.labels == ("bad", "good", "okay")  # sorted names
    assert plan.sizes == {"train": 240, "validation": 30, "test": 30}
    for name in ("validation", "test"):
        assert plan.parts[name].counts == (10, 10, 10)
    rows = {name: list(plan.examples(name)) for name in plan.parts}
    texts = [text for split in rows.values() for text, _ in split]
    assert len(set(texts)) == len(texts) == 300  # every row in exactly one split
    assert plan_splits(DataConfig(source=str(path))).parts["test"].rows.tolist() == (
        plan.parts["test"].rows.tolist()
    )
    assert SPLIT_SEED == 0
    ids = dict(zip(plan.labels, range(3), strict=True))
    expected = {text: ids[label] for text, label in labelled_rows(300)}
    assert all(expected[text] == label for split in rows.values() for text, label in split)


def test_a_file_per_split_and_a_declared_class_order(tmp_path):
    train = write_csv(tmp_path / "train.csv", labelled_rows(60))
    dev = write_csv(tmp_path / "dev.csv", labelled_rows(9, seed=1))
    test = write_csv(tmp_path / "test.csv", labelled_rows(6, seed=2))
    cfg = DataConfig(
        source=str(train), validation=str(dev), test=str(test), labels="bad, okay, good"
    )
    plan = plan_splits(cfg)
    assert plan.labels == ("bad", "okay", "good")
    assert plan.sizes == {"train": 60, "validation": 9, "test": 6}
    assert all(part.rows is None for part in plan.parts.values())
    assert [label for _, label in plan.examples("test")] == [0, 1, 2, 0, 1, 2]


def test_integer_labels_in_numeric_order(tmp_path):
    rows = [(f"text {i}", str(stars)) for i, stars in enumerate([1, 2, 10, 5] * 10)]
    plan = plan_splits(DataConfig(source=str(write_csv(tmp_path / "stars.csv", rows))))
    assert plan.labels == ("1", "2", "5", "10")


def test_a_label_that_training_lacks_is_one_line(tmp_path):
    train = write_csv(tmp_path / "train.csv", labelled_rows(30))
    dev = write_csv(tmp_path / "dev.csv", [*labelled_rows(3), ("so so", "meh")])
    with pytest.raises(DataError) as caught:
        plan_splits(DataConfig(source=str(train), validation=str(dev)))
    assert str(caught.value) == (
        f"{dev}: the validation texts have label 'meh' that the training texts ({train}) "
        "lack; the classes are bad, good, okay"
    )


def test_one_class_only_is_one_line(tmp_path):
    path = write_csv(tmp_path / "one.csv", [(f"text {i}", "pos") for i in range(20)])
    with pytest.raises(DataError, match="every row has the label 'pos'"):
        plan_splits(DataConfig(source=str(path)))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["data.validation=dev.csv"], "data.validation is set without data.source"),
        (
            ["data.source=a.csv", "data.validation_fraction=0.5", "data.test_fraction=0.5"],
            "data.validation_fraction=0.5 plus data.test_fraction=0.5 leaves no training rows",
        ),
        (["data.source=a.csv", "data.test_fraction=0"], "data.test_fraction is 0 and data.test"),
        (["data.source= "], "data.source must not be empty"),
    ],
)
def test_source_keys_are_checked_with_the_config(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


def test_classify_data_describes_a_file_without_tensorflow(tmp_path):
    path = write_csv(tmp_path / "reviews.csv", labelled_rows(300))
    probe = (
        "import sys, runpy; sys.argv = ['classify', 'data', '--data', sys.argv[1]]\n"
        "try:\n    runpy.run_module('classifier', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('tensorflow' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.stderr == "False\n"
    lines = done.stdout.splitlines()
    assert lines[0] == "Labelled texts (csv), 3 classes: bad, good, okay"
    assert lines[1] == (f"train, validation, test: 80%, 10%, 10% of {path}, stratified by class")
    header, train, validation, test = lines[3:7]
    assert header.split() == [
        "split", "texts", "bad", "good", "okay", "words", "p50", "p90", "p99", "max",
    ]  # fmt: skip
    assert train.split()[:8] == ["train", "240", "80", "(33%)", "80", "(33%)", "80", "(33%)"]
    assert validation.split()[:2] == ["validation", "30"] and test.split()[:2] == ["test", "30"]
    examples = lines[lines.index("An example of each class (training texts):") + 1 :]
    assert [line.split(":")[0].strip() for line in examples] == ["bad", "good", "okay"]


@pytest.mark.parametrize(
    "make, line",
    [
        (lambda tmp: tmp / "absent.csv", "data file {tmp}/absent.csv not found"),
        (
            lambda tmp: write_csv(tmp / "cols.csv", labelled_rows(9), ("review", "label")),
            "{tmp}/cols.csv has no column 'text' (its columns: review, label); set data.text_field",
        ),
        (
            lambda tmp: write_csv(tmp / "one.csv", [("a b", "pos")] * 9),
            "{tmp}/one.csv: every row has the label 'pos'; a classifier needs at least two "
            "classes (is data.label_field the right column?)",
        ),
    ],
)
def test_bad_data_is_one_line_and_exit_2_before_tensorflow(tmp_path, make, line):
    path = make(tmp_path)
    for command in ("data", "train"):
        done = classify(command, "--data", str(path))
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr == f"classify: error: {line.format(tmp=tmp_path)}\n"


def test_the_stratified_assignment_is_exact_per_class(tmp_path):
    path = write_csv(tmp_path / "r.csv", labelled_rows(90))
    plan = plan_splits(DataConfig(source=str(path), validation_fraction=0.2, test_fraction=0.1))
    counts = {name: np.array(part.counts) for name, part in plan.parts.items()}
    assert counts["validation"].tolist() == [6, 6, 6]
    assert counts["test"].tolist() == [3, 3, 3]
    assert counts["train"].tolist() == [21, 21, 21]


def test_pretrain_refuses_a_labelled_source_in_one_line(tmp_path):
    path = write_csv(tmp_path / "reviews.csv", labelled_rows(30))
    done = classify("pretrain", "--set", f"data.source={path}")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "classify: error: classify pretrain reads IMDB's unlabelled reviews; data.source (your "
        "labelled texts) is for classify train\n"
    )


def test_a_file_in_runs_of_one_class_longer_than_the_shuffle_gets_a_note(tmp_path):
    import random

    rows = [(f"text {i}", "neg" if i < 30_000 else "pos") for i in range(60_000)]
    sorted_csv = write_csv(tmp_path / "sorted.csv", rows)
    random.Random(0).shuffle(rows)
    shuffled_csv = write_csv(tmp_path / "shuffled.csv", rows)
    done = subprocess.run(
        [sys.executable, "-m", "classifier", "data", "--data", str(sorted_csv)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stderr == (
        f"classify: note: {sorted_csv}: its training rows come in runs of one class (training "
        "rows 1 to 25,000 are 96% one class, all of them 50%); training shuffles 25,000 rows at "
        "a time, so shuffle the file first (shuf, or sort -R)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "classifier", "data", "--data", str(shuffled_csv)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
