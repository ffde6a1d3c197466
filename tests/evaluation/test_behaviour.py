"""The behaviour suite: its size, balance and two disjoint parts, the checked-in CSV files it
writes, and its metrics (accuracy per capability and per group)."""

from __future__ import annotations

import csv
import hashlib
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from classifier.evaluation.behaviour import (
    CAPABILITIES,
    COLUMNS,
    LABELS,
    PER_CAPABILITY,
    Row,
    accuracy_by_group,
    behaviour_metrics,
    main,
    suite,
    suite_classes,
    suite_digest,
    typo,
)
from classifier.evaluation.behaviour_parts import PARTS

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "data" / "behaviour"
#: The negations test one label each: their label is what they test.
ONE_LABEL = {"negated_positive": "negative", "negated_negative": "positive"}


@pytest.fixture(scope="module")
def parts() -> dict[str, list[Row]]:
    return {part: suite(part) for part in PARTS}


def test_every_capability_has_its_sentences_half_of_each_label(parts):
    assert PER_CAPABILITY == {"dev": 200, "test": 100}
    for part, rows in parts.items():
        size = PER_CAPABILITY[part]
        counts = Counter((row.capability, row.label) for row in rows)
        for capability in CAPABILITIES:
            if capability in ONE_LABEL:
                expected = {ONE_LABEL[capability]: size}
            else:
                expected = dict.fromkeys(LABELS, size // 2)
            found = {
                label: counts[capability, label] for label in LABELS if counts[capability, label]
            }
            assert found == expected, capability
        assert Counter(row.label for row in rows) == dict.fromkeys(LABELS, 5 * size)
        assert [row.capability for row in rows[::size]] == list(CAPABILITIES)


def test_no_sentence_twice_and_the_parts_share_none(parts):
    dev, test = ({row.text for row in rows} for rows in parts.values())
    assert len(dev) == len(parts["dev"]) and len(test) == len(parts["test"])
    assert dev & test == set()


def test_the_parts_share_no_word_list_but_the_films_and_no_template():
    dev, test = PARTS["dev"], PARTS["test"]
    assert dev["words"]["work"] == test["words"]["work"]
    words = {
        name: {word for key, values in part["words"].items() if key != "work" for word in values}
        for name, part in PARTS.items()
    }
    assert words["dev"] & words["test"] == set()
    templates = {
        name: {text for found in part["templates"].values() for _, text in found}
        for name, part in PARTS.items()
    }
    assert templates["dev"] & templates["test"] == set()


def test_a_part_is_the_same_on_every_call(parts):
    assert suite("dev") == parts["dev"]
    with pytest.raises(ValueError, match="part must be one of dev, test"):
        suite("train")


def test_sentences_read_as_written(parts):
    for row in (row for rows in parts.values() for row in rows):
        assert row.text[0].isupper() and row.text[-1] in ".!", row.text
        assert not re.search(r"\b[Aa] [aeiou]", row.text), row.text  # "an" before a vowel
        assert "{" not in row.text and "  " not in row.text, row.text


def test_typos_misspell_one_sentiment_word_of_a_vocabulary_sentence(parts):
    for name, rows in parts.items():
        words = PARTS[name]["words"]
        sentiment = {
            word
            for key in ("adj", "verbed", "noun")
            for polarity in ("pos", "neg")
            for phrase in words[f"{key}_{polarity}"]
            for word in phrase.split()
        }
        vocabulary = [row for row in rows if row.capability == "vocabulary"]
        known = {word for row in vocabulary for word in re.findall(r"[\w'-]+", row.text)}
        for row in (row for row in rows if row.capability == "typos"):
            (misspelt,) = set(re.findall(r"[\w'-]+", row.text)) - known
            assert any(sorted(misspelt) == sorted(word) for word in sentiment), row


def test_typo_swaps_two_letters_of_the_longest_word_but_the_first():
    rng = random.Random(0)
    for phrase in ("waste of time", "bad", "first-rate", "joy to watch"):
        misspelt = typo(phrase, rng)
        assert misspelt != phrase and sorted(misspelt) == sorted(phrase)
        assert misspelt[0] == phrase[0]
    with pytest.raises(ValueError, match="no two neighbouring letters"):
        typo("ok", rng)


def test_the_checked_in_files_are_the_generators_output(tmp_path):
    main([str(tmp_path)])
    for part in PARTS:
        written = (tmp_path / f"{part}.csv").read_bytes()
        assert (FOLDER / f"{part}.csv").read_bytes() == written, (
            f"data/behaviour/{part}.csv is not what the generator writes: run "
            "python -m classifier.evaluation.behaviour data/behaviour"
        )
        with (tmp_path / f"{part}.csv").open(newline="", encoding="utf-8") as file:
            table = list(csv.reader(file))
        assert tuple(table[0]) == COLUMNS
        assert [Row(*row) for row in table[1:]] == suite(part)


def test_the_digest_is_that_of_the_parts_rows_as_checked_in():
    for part in PARTS:
        with (FOLDER / f"{part}.csv").open(encoding="utf-8", newline="") as file:
            rows = list(csv.reader(file))[1:]
        text = "\n".join("\t".join(row) for row in rows)
        assert suite_digest(part) == hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    assert suite_digest("dev") != suite_digest("test")


def test_accuracy_per_group_in_order_of_first_appearance():
    assert accuracy_by_group(["b", "a", "b", "b"], [True, True, False, True]) == [
        ("b", 3, pytest.approx(2 / 3)),
        ("a", 1, 1.0),
    ]
    assert accuracy_by_group([], []) == []


def test_metrics_per_capability_and_their_mean(parts):
    rows = parts["dev"]
    always_negative = behaviour_metrics(rows, ["negative"] * len(rows))
    assert list(always_negative) == [f"behaviour_{c}" for c in CAPABILITIES] + ["behaviour_overall"]
    assert always_negative["behaviour_negated_positive"] == 1.0
    assert always_negative["behaviour_negated_negative"] == 0.0
    assert always_negative["behaviour_vocabulary"] == 0.5
    assert always_negative["behaviour_overall"] == pytest.approx(0.5)
    gold = behaviour_metrics(rows, [row.label for row in rows])
    assert set(gold.values()) == {1.0}


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (("negative", "positive"), {"negative": 0, "positive": 1}),
        (("pos", "neg"), {"negative": 1, "positive": 0}),
        (("NEGATIVE", "Positive"), {"negative": 0, "positive": 1}),
        (("bad", "good"), None),
        (("negative", "neutral", "positive"), None),
        (("neg", "negative"), None),
    ],
)
def test_which_models_the_suite_scores(names, expected):
    assert suite_classes(names) == expected
