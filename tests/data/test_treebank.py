"""The sentiment treebank as a labelled source: its trees read as sentences or distinct
phrases, the label map (renamed, merged, dropped labels) on any source, the phrase split that
keeps validation sentences' trees out of training, and one line for each bad file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from classifier.config.schema import load_config
from classifier.data.files import records, scan, source_format
from classifier.data.labelled import describe, plan_splits
from classifier.errors import ConfigError, DataError
from tests.conftest import ROOT

SST5 = ROOT.parent / "shared" / "data" / "sst5"
SST2 = "0=negative, 1=negative, 2=, 3=positive, 4=positive"
TREES = [
    "(3 (2 It) (3 (2 's) (3 (3 good) (2 .))))",
    "(1 (2 Not) (1 (2 too) (1 -LRB-bad-RRB-)))",
    "(0 (2 The) (0 (0 worst) (2 \\/ film)))",
    "(4 (2 A) (4 (4 great) (2 film)))",
    "(2 (2 The) (2 film))",
    "(3 (2 It) (3 (3 good)))",
]


def write_trees(path: Path, trees: list[str] = TREES) -> Path:
    path.write_text("\n".join(trees) + "\n", encoding="utf-8")
    return path


def plan(source: Path, *settings: str):
    return plan_splits(load_config(None, [f"data.source={source}", *settings]).data)


def test_sentences_are_the_roots_with_escapes_undone(tmp_path):
    path = write_trees(tmp_path / "train.txt")
    assert source_format(path) == "treebank"
    assert [(r.text, r.label, r.where) for r in records(path)][:3] == [
        ("It 's good .", "3", "line 1"),
        ("Not too (bad)", "1", "line 2"),
        ("The worst / film", "0", "line 3"),
    ]
    assert scan(path).counts == {"3": 2, "1": 1, "0": 1, "4": 1, "2": 1}


def test_phrases_are_every_labelled_node_once_in_file_order(tmp_path):
    path = write_trees(tmp_path / "train.txt")
    texts = [(r.text, r.label) for r in records(path, phrases=True)]
    assert texts[:7] == [
        ("It 's good .", "3"), ("It", "2"), ("'s good .", "3"), ("'s", "2"),
        ("good .", "3"), ("good", "3"), (".", "2"),
    ]  # fmt: skip
    assert len(texts) == len(set(text for text, _ in texts))  # "good", "The", "film" once
    keep = [False, True, False, False, False, False]  # the second tree's phrases only
    assert [r.text for r in records(path, phrases=keep)] == [
        "Not too (bad)", "Not", "too (bad)", "too", "(bad)",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("(3 (2 good)\n", "t.txt: line 1: unbalanced parentheses (1 left open)"),
        ("(3 (2 good)))\n", "t.txt: line 1: unbalanced parentheses (a ')' closes nothing)"),
        ("(2 ok)\n(7 (2 bad))\n", "t.txt: line 2: label '7' is outside 0-4"),
        ("((2 bad))\n", "t.txt: line 1: a node without a label"),
        ("(2 ok) (3 fine)\n", "t.txt: line 1: more than one tree on the line"),
        ("plain text\n", "t.txt: line 1: 'plain' outside any tree"),
        ("\n\n", "t.txt is empty; a treebank file holds one PTB tree a line"),
        ("", "t.txt is empty; a treebank file holds one PTB tree a line"),
    ],
)
def test_a_bad_treebank_file_is_one_line(tmp_path, monkeypatch, content, message):
    monkeypatch.chdir(tmp_path)
    Path("t.txt").write_text(content)
    with pytest.raises(DataError) as caught:
        scan("t.txt")
    assert str(caught.value) == message


def test_a_label_map_merges_renames_and_drops_labels(tmp_path):
    path = write_trees(tmp_path / "train.txt")
    test = write_trees(tmp_path / "dev.txt", TREES[:4])
    found = plan(path, f"data.label_map={SST2}", f"data.test={test}", f"data.validation={test}")
    assert found.labels == ("negative", "positive")
    assert found.sizes == {"train": 5, "validation": 4, "test": 4}  # "The film" (2) dropped
    assert list(found.examples("train")) == [
        ("It 's good .", 1), ("Not too (bad)", 0), ("The worst / film", 0),
        ("A great film", 1), ("It good", 1),
    ]  # fmt: skip


def test_the_classes_come_in_the_label_maps_order(tmp_path):
    path = write_trees(tmp_path / "train.txt")
    five = "0=very negative, 1=negative, 2=neutral, 3=positive, 4=very positive"
    assert plan(path, f"data.label_map={five}").labels == (
        "very negative", "negative", "neutral", "positive", "very positive",
    )  # fmt: skip
    assert plan(path, f"data.label_map={five}", "data.labels=negative,neutral,positive,"
                "very negative,very positive").labels[0] == "negative"  # fmt: skip


def test_a_label_the_map_lacks_is_one_line(tmp_path):
    path = write_trees(tmp_path / "train.txt")
    with pytest.raises(DataError) as caught:
        plan(path, "data.label_map=0=negative, 1=negative, 3=positive, 4=positive")
    assert str(caught.value) == (
        f"{path}: label '2' is not in data.label_map; map it to a class, or drop its rows with '2='"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0=neg, 1", "data.label_map='0=neg, 1' entry '1' has no '=' (write label=class, or "
         "label= to drop it)"),
        ("0=a, 0=b", "data.label_map='0=a, 0=b' maps '0' twice"),
        ("=a, 1=b", "data.label_map='=a, 1=b' has an entry without a label"),
        ("0=a, 1=a, 2=", "data.label_map='0=a, 1=a, 2=' leaves fewer than two classes; a "
         "classifier needs two"),
    ],
)  # fmt: skip
def test_a_bad_label_map_is_one_line(tmp_path, value, message):
    with pytest.raises(ConfigError) as caught:
        load_config(None, [f"data.source={tmp_path / 'a.csv'}", f"data.label_map={value}"])
    assert str(caught.value) == message


def test_phrases_need_a_treebank_source(tmp_path):
    with pytest.raises(ConfigError, match="data.phrases is set but data.source is not a treebank"):
        load_config(None, [f"data.source={tmp_path / 'a.csv'}", "data.phrases=true"])


def test_phrase_training_leaves_out_the_trees_of_carved_sentences(tmp_path):
    trees = [f"(3 (2 Film{i}) (3 good{i}))" for i in range(10)]
    trees += [f"(1 (2 Film{i}) (1 bad{i}))" for i in range(10, 20)]
    path = write_trees(tmp_path / "train.txt", trees)
    test = write_trees(tmp_path / "dev.txt", trees[:2])
    found = plan(path, "data.phrases=true", "data.validation_fraction=0.2", f"data.test={test}")
    validation = [text for text, _ in found.examples("validation")]
    training = [text for text, _ in found.examples("train")]
    assert len(validation) == 4 and found.sizes["train"] == len(training) == 16 * 3
    for sentence in validation:  # its words are in no training phrase
        assert not any(word in phrase.split() for word in sentence.split() for phrase in training)
    sentences = plan(path, "data.validation_fraction=0.2", f"data.test={test}")
    assert [text for text, _ in sentences.examples("validation")] == validation  # same carve


def test_describe_says_where_the_phrases_come_from(tmp_path):
    path = write_trees(tmp_path / "train.txt")
    test = write_trees(tmp_path / "dev.txt", TREES[:4])
    cfg = load_config(
        None,
        [f"data.source={path}", f"data.test={test}", "data.phrases=true",
         f"data.label_map={SST2}", "data.validation_fraction=0.2"],
    ).data  # fmt: skip
    lines = describe(cfg).splitlines()
    assert lines[:2] == [
        "Labelled texts (treebank), 2 classes: negative, positive",
        f"train = every labelled phrase of 80% of {path}'s trees, each once; test = {test}; "
        f"validation: 20% of {path}'s trees, stratified by class",
    ]


@pytest.mark.large
def test_the_treebank_files_hold_the_csv_sentences_and_the_phrases_the_readme_counts():
    if not (SST5 / "trees" / "train.txt").is_file():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"SST-5 trees not found in {SST5}")
        pytest.skip(f"SST-5 trees not found in {SST5}")
    names = ["very negative", "negative", "neutral", "positive", "very positive"]
    for split in ("train", "dev"):
        csv = list(records(SST5 / f"{split}.csv"))
        trees = list(records(SST5 / "trees" / f"{split}.txt"))
        assert [(r.text, names[int(r.label)]) for r in trees] == [(r.text, r.label) for r in csv]
    phrases = scan(SST5 / "trees" / "train.txt", phrases=True)
    assert phrases.rows == 159_274
    assert phrases.rows - phrases.counts["2"] == 77_616  # the README's non-neutral phrases


def test_a_label_map_that_leaves_one_class_says_so_as_one_class_does(tmp_path):
    path = write_trees(tmp_path / "train.txt", ["(3 (2 good))", "(4 (2 great))", "(2 (2 ok))"])
    with pytest.raises(DataError) as caught:
        plan(path, "data.label_map=3=positive, 4=positive, 2=, 0=negative")
    assert str(caught.value) == (
        f"{path}: every row has the label 'positive'; a classifier needs at least two classes "
        "(is data.label_field the right column?)"
    )
