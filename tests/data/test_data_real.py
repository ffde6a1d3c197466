"""The real IMDB data (marker ``large``): counts, balance, a deterministic disjoint split."""

from __future__ import annotations

import collections

import pytest
import tensorflow as tf

from classifier.config.schema import load_config
from classifier.data.pipeline import (
    build_vectorizer,
    load_raw_splits,
    review_lengths,
    standardize_review,
)

pytestmark = pytest.mark.large


@pytest.fixture(scope="module")
def cfg(imdb_data_dir):
    return load_config(None, [f"data.data_dir={imdb_data_dir}", "data.download=false"]).data


@pytest.fixture(scope="module")
def raw(cfg):
    return load_raw_splits(cfg)


def test_counts_and_label_balance(raw):
    _, train = review_lengths(raw.train)
    _, validation = review_lengths(raw.validation)
    _, test = review_lengths(raw.test)
    assert len(train) + len(validation) == 25_000 and len(test) == 25_000
    assert (len(train), len(validation)) == (15_000, 10_000)
    assert sum(train) + sum(validation) == 12_500  # the train split is 50/50
    assert sum(test) == 12_500
    assert abs(sum(train) / len(train) - 0.5) < 0.01  # and so is each portion
    assert abs(sum(validation) / len(validation) - 0.5) < 0.01


def test_first_review_is_the_public_one(raw):
    text, label = next(iter(raw.train))
    assert text.numpy().decode().startswith("This was an absolutely terrible movie.")
    assert int(label) == 0


def test_train_and_validation_are_disjoint_and_stable(cfg):
    def ids():
        splits = load_raw_splits(cfg, with_ids=True)
        return tuple(
            [tfds_id for batch in split.batch(4096) for tfds_id in batch["tfds_id"].numpy()]
            for split in (splits.train, splits.validation)
        )

    train, validation = ids()
    assert len(set(train)) == 15_000 and len(set(validation)) == 10_000
    assert not set(train) & set(validation)
    assert ids() == (train, validation)


def test_vocabulary_is_built_from_the_training_portion_only(cfg, raw):
    vocabulary = build_vectorizer(cfg, raw.train).get_vocabulary()[2:]  # without padding, OOV

    def counts(dataset):
        counter = collections.Counter()
        for texts, _ in dataset.batch(1024):
            for words in tf.strings.split(standardize_review(texts)).to_list():
                counter.update(w.decode() for w in words)  # split as TextVectorization does
        return counter

    train, validation = counts(raw.train), counts(raw.validation)
    # The vocabulary is the most frequent training words: every word above the cut-off count
    # is in it, and none below it.
    cutoff = min(train[word] for word in vocabulary)
    assert {w for w, c in train.items() if c > cutoff} <= set(vocabulary)
    assert all(train[word] >= cutoff for word in vocabulary)
    # Words that counting the validation reviews too would have brought in stay out.
    both = train + validation
    both_cutoff = sorted(both.values(), reverse=True)[len(vocabulary) - 1]
    leaked = {w for w, c in both.items() if c > both_cutoff and train[w] < cutoff}
    assert leaked, "expected words that only validation counts lift into the top words"
    assert not leaked & set(vocabulary)
