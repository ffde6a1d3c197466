"""More labelled texts for training only (``data.extra``): a treebank adds its distinct
labelled phrases, a table its rows, labels mapped to the source's classes; validation and test
stay the source's own; bad input is one line."""

from __future__ import annotations

import pytest

from classifier.config.schema import load_config
from classifier.data.extra import extra_rows
from classifier.data.labelled import describe
from classifier.errors import ConfigError, DataError
from tests.data.test_treebank import SST2, write_trees
from tests.labelled_helpers import write_csv

LABELS = ("negative", "positive")


def config(source, extra, *settings: str):
    return load_config(None, [f"data.source={source}", f"data.extra={extra}", *settings]).data


def source_csv(tmp_path):
    rows = [(f"review {i} {'good' if i % 2 else 'bad'}", LABELS[i % 2]) for i in range(40)]
    return write_csv(tmp_path / "reviews.csv", rows)


def test_a_treebank_adds_its_distinct_non_neutral_phrases_as_the_sources_classes(tmp_path):
    trees = write_trees(tmp_path / "train.txt")
    texts, codes = extra_rows(
        config(source_csv(tmp_path), trees, f"data.extra_label_map={SST2}"), LABELS
    )
    assert texts[:4] == ["It 's good .", "'s good .", "good .", "good"]  # "It", "'s": neutral
    assert codes[:4].tolist() == [1, 1, 1, 1]
    assert ("Not too (bad)", 0) in zip(texts, codes.tolist(), strict=True)
    assert "The film" not in texts and len(texts) == len(set(texts))


def test_rows_mapped_to_every_class_join_once_per_class(tmp_path):
    """``2=*``: a neutral phrase is added once as each class, a target spread evenly over the
    classes (what it holds leans no way); the polar phrases are added as before."""
    trees = write_trees(tmp_path / "train.txt")
    spread = SST2.replace("2=", "2=*")
    plain = extra_rows(config(source_csv(tmp_path), trees, f"data.extra_label_map={SST2}"), LABELS)
    texts, codes = extra_rows(
        config(source_csv(tmp_path), trees, f"data.extra_label_map={spread}"), LABELS
    )
    rows = list(zip(texts, codes.tolist(), strict=True))
    assert [row for row in rows if row[0] == "The film"] == [("The film", 0), ("The film", 1)]
    assert [row for row in rows if row[0] == "It"] == [("It", 0), ("It", 1)]
    assert [row for row in rows if row[0] in plain[0]] == list(
        zip(plain[0], plain[1].tolist(), strict=True)
    )
    neutral = {text for text in texts if text not in plain[0]}
    assert len(texts) == len(plain[0]) + 2 * len(neutral) and "The" in neutral


def test_every_class_is_for_added_rows_only():
    spread = SST2.replace("2=", "2=*")
    with pytest.raises(ConfigError) as caught:
        load_config(None, ["data.source=trees/train.txt", f"data.label_map={spread}"])
    assert str(caught.value) == (
        f"data.label_map='{spread}' maps '2' to every class (*), which only "
        "data.extra_label_map can (training rows that lean no way)"
    )
    with pytest.raises(ConfigError, match="leaves fewer than two classes"):
        load_config(None, ["data.extra=x.txt", "data.extra_label_map=0=a, 2=*"])


def test_a_tables_rows_are_added_as_they_are(tmp_path):
    extra = write_csv(tmp_path / "more.csv", [("quite good", "positive"), ("dull", "negative")])
    texts, codes = extra_rows(config(source_csv(tmp_path), extra), LABELS)
    assert texts == ["quite good", "dull"] and codes.tolist() == [1, 0]


@pytest.mark.parametrize(
    ("rows", "label_map", "message"),
    [
        ([("fine", "3"), ("meh", "7")], "3=positive, 1=negative",
         "more.csv: line 3: label '7' is not in data.extra_label_map; map it to a class, or drop "
         "its rows with '7='"),
        ([("fine", "great")], None,
         "more.csv: line 2: class 'great' is not one of the training classes (negative, "
         "positive); map it with data.extra_label_map"),
        ([("meh", "2")], "2=, 3=positive, 1=negative",
         "more.csv: no row left to add to training (data.extra_label_map drops all)"),
    ],
)  # fmt: skip
def test_bad_extra_rows_are_one_line(tmp_path, rows, label_map, message):
    extra = write_csv(tmp_path / "more.csv", rows)
    settings = [f"data.extra_label_map={label_map}"] if label_map else []
    with pytest.raises(DataError) as caught:
        extra_rows(config(source_csv(tmp_path), extra, *settings), LABELS)
    assert str(caught.value) == message.replace("more.csv", str(extra))


def test_a_missing_extra_file_is_one_line_that_says_how_to_do_without(tmp_path):
    with pytest.raises(DataError) as caught:
        extra_rows(config(source_csv(tmp_path), tmp_path / "no" / "trees.txt"), LABELS)
    assert str(caught.value) == (
        f"data.extra: {tmp_path / 'no' / 'trees.txt'} not found (the added training texts); put it "
        "there, or set data.extra and data.extra_label_map to null to train without them"
    )


def test_a_label_map_for_extra_needs_extra():
    with pytest.raises(ConfigError, match="data.extra_label_map is set but data.extra is not"):
        load_config(None, [f"data.extra_label_map={SST2}"])
    with pytest.raises(ConfigError, match="data.extra_label_map='0=a' leaves fewer than two"):
        load_config(None, ["data.extra=x.txt", "data.extra_label_map=0=a"])


def test_training_holds_the_extra_rows_and_validation_and_test_do_not(tmp_path):
    from classifier.data.pipeline import load_raw_splits

    source, trees = source_csv(tmp_path), write_trees(tmp_path / "train.txt")
    plain = load_raw_splits(load_config(None, [f"data.source={source}"]).data)
    cfg = config(source, trees, f"data.extra_label_map={SST2}")
    raw = load_raw_splits(cfg)
    added, _ = extra_rows(cfg, LABELS)

    def texts(split):
        return [text.decode() for text, _ in split.as_numpy_iterator()]

    assert texts(raw.train) == texts(plain.train) + added
    assert int(raw.train.cardinality()) == len(texts(plain.train)) + len(added)
    assert texts(raw.validation) == texts(plain.validation)
    assert texts(raw.test) == texts(plain.test)
    labels = [int(label) for _, label in raw.train.as_numpy_iterator()][-len(added) :]
    assert labels == extra_rows(cfg, LABELS)[1].tolist()


def test_describe_counts_the_extra_rows(tmp_path):
    source, trees = source_csv(tmp_path), write_trees(tmp_path / "train.txt")
    lines = describe(config(source, trees, f"data.extra_label_map={SST2}")).splitlines()
    count = len(extra_rows(config(source, trees, f"data.extra_label_map={SST2}"), LABELS)[0])
    assert lines[2] == (
        f"train adds {count:,} rows of {trees} (its trees' labelled phrases that "
        "data.extra_label_map keeps, each once)"
    )
    assert count == 14  # the six trees' non-neutral phrases, each once
    spread = f"data.extra_label_map={SST2.replace('2=', '2=*')}"
    lines = describe(config(source, trees, spread)).splitlines()
    count = len(extra_rows(config(source, trees, spread), LABELS)[0])
    assert lines[2] == (
        f"train adds {count:,} rows of {trees} (its trees' labelled phrases that "
        "data.extra_label_map keeps, each once; those it maps to * once per class)"
    )
