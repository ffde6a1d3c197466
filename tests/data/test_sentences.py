"""``data.sentences``: sentence ends kept as ``.`` tokens, the reserved words at fixed ids after
``adapt``, and the vectorizer's config and ``.keras`` round trips."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from classifier.config.negation import reserved_words, scope_ids
from classifier.config.schema import load_config
from classifier.data.pipeline import (
    ReviewVectorizer,
    build_vectorizer,
    load_raw_splits,
    review_lengths,
    standardize_review,
    standardize_sentences,
    texts_of,
)
from classifier.data.tokenizer import Tokenizer

RESERVED = len(reserved_words())  # 38: ids 2 to 39
TEXTS = ["Not great. But awful!", "The film... was dull; the plot: a waste?! <br />Loved it"]


@pytest.fixture
def cfg(fixture_overrides):
    return load_config(None, [*fixture_overrides, "data.sentences=true"]).data


def test_sentence_ends_become_one_dot_each_and_commas_one_comma():
    out = standardize_sentences(tf.constant(["Not bad... at ALL!<br />Great; really", "a'b:c"]))
    assert out.numpy().tolist() == [b"not bad . at all . great . really", b"ab . c"]
    commas = standardize_sentences(tf.constant(["Good,, bad , ,ugly,.end"])).numpy()[0]
    assert commas.split() == [b"good", b",", b"bad", b",", b"ugly", b",", b".", b"end"]
    breaks = standardize_sentences(tf.constant(["End.<br /><br /> ! Start", "x<br>y"]))
    assert [row.split() for row in breaks.numpy().tolist()] == [
        [b"end", b".", b"start"],
        [b"x", b".", b"y"],
    ]
    plain = standardize_review(tf.constant(["Not bad... at ALL!"])).numpy()[0]
    assert plain.split() == [b"not", b"bad", b"at", b"all"]


def test_adapt_puts_the_reserved_words_first_then_the_adapted_ones(cfg):
    raw = load_raw_splits(cfg)
    vectorizer = build_vectorizer(cfg, raw.train)
    assert vectorizer.sentences and cfg.vocab_size == 64
    vocabulary = vectorizer.get_vocabulary()
    assert vocabulary[:2] == ["", "[UNK]"] and vocabulary[2 : 2 + RESERVED] == reserved_words()
    scope = scope_ids()
    assert vocabulary[scope.end] == "." and vocabulary[scope.negations[0]] == "not"
    assert vocabulary[scope.contrasts[0]] == "but"
    # The rest: the words a plain adapt with the same standardization finds, reserved ones out.
    plain = keras.layers.TextVectorization(max_tokens=64, standardize=standardize_sentences)
    plain.adapt(texts_of(raw.train))
    others = [word for word in plain.get_vocabulary()[2:] if word not in reserved_words()]
    assert vocabulary[2 + RESERVED :] == others and len(set(vocabulary)) == 2 + RESERVED + 24
    assert "great" in vocabulary and "not" not in plain.get_vocabulary()  # reserved all the same
    great, awful = vocabulary.index("great"), vocabulary.index("awful")
    ids = vectorizer(tf.constant(TEXTS[:1])).numpy()
    assert ids.tolist() == [[4, great, 2, 33, awful, 2] + [0] * 18]  # not great . but awful .
    tokenizer = Tokenizer(vocabulary, cfg.sequence_length, cfg.truncate, sentences=True)
    texts = [text.numpy() for text, _ in raw.test] + TEXTS
    np.testing.assert_array_equal(tokenizer.encode(texts), vectorizer(tf.constant(texts)).numpy())


def test_a_small_vocabulary_keeps_the_reserved_words_and_the_most_frequent_others():
    texts = tf.data.Dataset.from_tensor_slices(["b b b. c c. d", "b c!"]).batch(2)
    vectorizer = ReviewVectorizer(2 + RESERVED + 2, 8, "head", sentences=True)
    vectorizer.adapt(texts)
    assert vectorizer.get_vocabulary()[2:] == [*reserved_words(), "b", "c"]
    assert vectorizer(tf.constant(["d b. not"])).numpy()[0, :4].tolist() == [1, 40, 2, 4]
    with pytest.raises(ValueError, match="vocab_size must be at least 40 with sentences, got 39"):
        ReviewVectorizer(39, 8, sentences=True)


def test_config_round_trip_and_a_config_saved_before_sentences():
    vectorizer = ReviewVectorizer(50, 6, "head", ["good", "."], sentences=True)
    config = vectorizer.get_config()
    assert config["sentences"] is True
    again = ReviewVectorizer.from_config(config)
    again.text_vectorization.set_vocabulary(["good", "."])
    assert again.sentences is True and again.get_config() == config
    assert again(tf.constant(["Good!good"])).numpy()[0, :3].tolist() == [2, 3, 2]
    del config["sentences"]  # as a model saved before data.sentences
    older = ReviewVectorizer.from_config(config)
    older.text_vectorization.set_vocabulary(["good", "."])
    assert older.sentences is False
    assert older(tf.constant(["Good!good"])).numpy()[0, :3].tolist() == [2, 2, 0]


def test_a_sentences_vectorizer_saves_and_loads_in_keras_format(cfg, tmp_path):
    vectorizer = build_vectorizer(cfg, load_raw_splits(cfg).train)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, vectorizer(inputs))
    model.save(tmp_path / "v.keras")
    loaded = keras.models.load_model(tmp_path / "v.keras", safe_mode=True)
    (twin,) = [layer for layer in loaded.layers if isinstance(layer, ReviewVectorizer)]
    assert twin.sentences is True and twin.get_vocabulary() == vectorizer.get_vocabulary()
    texts = tf.constant(TEXTS)
    np.testing.assert_array_equal(loaded(texts).numpy(), model(texts).numpy())
    assert (loaded(texts).numpy() == 2).sum() == 6


def test_the_data_config_builds_the_vectorizer_it_describes(fixture_overrides):
    settings = ["data.sentences=true", "data.spelling=5", "data.negation_phrases=true"]
    data = load_config(None, [*fixture_overrides, *settings]).data
    vectorizer = ReviewVectorizer.for_data(data, [*reserved_words(), "far", "dull"])
    config = vectorizer.get_config()
    assert (config["vocab_size"], config["sequence_length"], config["truncate"]) == (
        data.vocab_size, data.sequence_length, data.truncate
    )  # fmt: skip
    assert (config["sentences"], config["spelling"], config["negation_phrases"]) == (True, 5, True)
    far, dull = RESERVED + 2, RESERVED + 3  # "not" is at 4, "from" unknown
    assert vectorizer(tf.constant(["Far from dull"])).numpy()[0, :3].tolist() == [far, 4, dull]


def test_review_lengths_count_sentence_ends_with_sentences():
    dataset = tf.data.Dataset.from_tensor_slices((["A b. C!", "x"], [1, 0]))
    assert review_lengths(dataset) == ([3, 1], [1, 0])
    assert review_lengths(dataset, sentences=True) == ([5, 1], [1, 0])


def test_describe_counts_the_words_a_sentences_model_reads(tmp_path):
    from classifier.data.labelled import describe

    path = tmp_path / "tiny.csv"
    rows = ['"Good. Very good, really!",pos', '"Good. Very good, really!",neg'] * 4
    path.write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    settings = [f"data.source={path}", "data.validation_fraction=0.25", "data.test_fraction=0.25"]
    longest = {}
    for sentences in ("false", "true"):
        cfg = load_config(None, [*settings, f"data.sentences={sentences}"]).data
        train = next(line for line in describe(cfg).splitlines() if line.split()[:1] == ["train"])
        longest[sentences] = int(train.split()[-1])  # the max column
    assert longest == {"false": 4, "true": 7}  # good . very good , really .
