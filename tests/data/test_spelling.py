"""The spelling rule (``data.spelling``): in a short input, a misspelt word reads as the most
frequent known word one edit away, with the same ids from TensorFlow (``ReviewVectorizer``) and
from plain Python (``Tokenizer``)."""

from __future__ import annotations

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from classifier.config.negation import reserved_words
from classifier.config.schema import load_config
from classifier.data.spelling import MAX_LETTERS, edits, nearest
from classifier.data.tokenizer import Tokenizer
from classifier.data.vectorizer import ReviewVectorizer
from classifier.errors import ConfigError
from tests.conftest import ROOT

# By frequency, as adapt orders them: "good" before "gold" and "goad".
WORDS = [
    "the", "was", "film", "not", "good", "plot", "gold", "wonderful", "awful", "dull", "goad",
    "wonder", "terrible", "actors", "a" * MAX_LETTERS, "b" * (MAX_LETTERS + 1), "g00d", "café",
]  # fmt: skip
SPELLING = 6


def engines(spelling: int = SPELLING, length: int = 8, truncate: str = "tail", sentences=False):
    """The vectorizer of WORDS with ``spelling`` and its TensorFlow-free tokenizer (with
    ``sentences``, the reserved words first, as ``adapt`` puts them)."""
    words = WORDS
    if sentences:
        words = reserved_words() + [word for word in WORDS if word not in reserved_words()]
    vectorizer = ReviewVectorizer(
        len(words) + 2, length, truncate, words, sentences=sentences, spelling=spelling
    )
    tokenizer = Tokenizer(vectorizer.get_vocabulary(), length, truncate, sentences, spelling)
    return vectorizer, tokenizer


def read(texts: list[str], **options) -> list[list[str]]:
    """The words each engine reads ``texts`` as (ids back to words), checked equal."""
    vectorizer, tokenizer = engines(**options)
    ids = vectorizer(tf.constant(texts)).numpy()
    np.testing.assert_array_equal(ids, tokenizer.encode(texts))
    vocabulary = vectorizer.get_vocabulary()
    return [[vocabulary[i] for i in row if i] for row in ids]


def test_each_kind_of_single_edit_reads_as_the_word():
    typed = ["wonderfl", "wonderfull", "wondarful", "wonedrful", "Wonedrful!", "WONDEFRUL"]
    assert read([f"{word} film" for word in typed]) == [["wonderful", "film"]] * len(typed)


def test_the_most_frequent_word_one_edit_away_wins():
    # "goud" is one letter from "good" and from "gold"; "good" is the more frequent
    assert read(["goud", "gold", "godl", "goda"]) == [["good"], ["gold"], ["gold"], ["goad"]]
    assert nearest(b"goud", {b"gold": 6, b"good": 4}) == 4
    assert nearest(b"goud", {b"gold": 4, b"good": 6}) == 4


def test_what_the_rule_leaves_alone():
    texts = [
        "teh film",  # three letters: too short to guess ("the" is one swap away)
        "wonderfulll film",  # two edits away
        "g0od film",  # a digit: not a word of letters
        "góod film",  # a letter outside a-z
        "a" * (MAX_LETTERS + 1) + " film",  # too long to correct...
        "b" * (MAX_LETTERS + 2) + " film",  # ...even one edit from a known word
        "a" * (MAX_LETTERS - 1) + " film",  # the longest known one is reached
        "xyzzy film",  # nothing near
    ]
    assert read(texts) == [
        ["[UNK]", "film"],
        ["[UNK]", "film"],
        ["[UNK]", "film"],
        ["[UNK]", "film"],
        ["[UNK]", "film"],
        ["[UNK]", "film"],
        ["a" * MAX_LETTERS, "film"],
        ["[UNK]", "film"],
    ]


def test_only_inputs_of_fewer_words_than_spelling_are_corrected():
    short = "the plot was not wonedrful"  # 5 words
    long = short + " film"  # 6 words: a review keeps its ids
    assert read([short, long]) == [
        ["the", "plot", "was", "not", "wonderful"],
        ["the", "plot", "was", "not", "[UNK]", "film"],
    ]
    assert read([short], spelling=0) == [["the", "plot", "was", "not", "[UNK]"]]


def test_edits_are_every_string_one_edit_away_that_keeps_the_first_letter():
    word = b"abc"
    expected = {word[:i] + word[i + 1 :] for i in (1, 2)}  # deleted
    expected |= {b"acb"}  # swapped
    for letter in b"abcdefghijklmnopqrstuvwxyz":
        expected |= {word[:i] + bytes((letter,)) + word[i:] for i in (1, 2, 3)}  # inserted
        expected |= {word[:i] + bytes((letter,)) + word[i + 1 :] for i in (1, 2)}  # replaced
    assert edits(word) == expected


def test_the_first_letter_is_kept():
    known = {b"not": 2, b"weak": 3, b"jumps": 4, b"plot": 5}
    typed = [b"knot", b"tweak", b"pumps", b"plto", b"lpot"]  # only "plto" keeps it
    assert [nearest(word, known) for word in typed] == [None, None, None, 5, None]
    assert read(["knot film", "lpot"]) == [["[UNK]", "film"], ["[UNK]"]]


def _typed(rng: random.Random, word: str) -> str:
    """``word`` with up to two random edits, maybe capitalised."""
    for _ in range(rng.choice((0, 1, 1, 2))):
        i = rng.randrange(len(word) + 1)
        letter = rng.choice("abcdefghijklmnopqrstuvwxyz")
        word = rng.choice(
            (
                word[:i] + word[i + 1 :],
                word[:i] + letter + word[i:],
                word[:i] + letter + word[i + 1 :],
                word[:i] + word[i + 1 : i + 2] + word[i : i + 1] + word[i + 2 :],
            )
        )
    return word.upper() if rng.random() < 0.1 else word


def _fuzz() -> list[str]:
    rng = random.Random(0)
    pieces = WORDS + ["x", "ab", "qwertyuiop", "naïve", "...", ",", "!", "<br />", "don't"]
    texts = []
    for _ in range(400):
        words = [_typed(rng, rng.choice(pieces)) for _ in range(rng.randint(0, SPELLING + 2))]
        texts.append(" ".join(words) + rng.choice(("", ".", "!", " ,")))
    return texts


FUZZ = _fuzz()


@pytest.mark.parametrize("sentences", [False, True])
@pytest.mark.parametrize(("length", "truncate"), [(8, "tail"), (SPELLING, "head"), (64, "tail")])
def test_tensorflow_and_plain_python_give_the_same_ids(length, truncate, sentences):
    vectorizer, tokenizer = engines(SPELLING, length, truncate, sentences)
    expected = vectorizer(tf.constant(FUZZ)).numpy()
    np.testing.assert_array_equal(tokenizer.encode(FUZZ), expected)
    plain = engines(0, length, truncate, sentences)[0](tf.constant(FUZZ)).numpy()
    assert np.count_nonzero(plain != expected) > 100  # the rule was at work


def test_the_vectorizer_keeps_its_spelling_through_a_keras_file(tmp_path):
    vectorizer = engines()[0]
    texts = keras.Input(shape=(), dtype="string")
    model = keras.Model(texts, vectorizer(texts))
    model.save(tmp_path / "vectorizer.keras")
    loaded = keras.models.load_model(tmp_path / "vectorizer.keras")
    assert loaded.layers[-1].get_config()["spelling"] == SPELLING
    inputs = tf.constant(FUZZ[:50])
    np.testing.assert_array_equal(loaded(inputs).numpy(), vectorizer(inputs).numpy())


@pytest.mark.parametrize("spelling", [-1, 9])
def test_a_spelling_past_the_sequence_length_is_refused(spelling):
    with pytest.raises(ValueError, match="spelling must be 0 to sequence_length 8"):
        engines(spelling)
    with pytest.raises(ValueError, match="spelling must be 0 to sequence_length 8"):
        Tokenizer(["", "[UNK]"], 8, spelling=spelling)
    overrides = ["data.sequence_length=8", f"data.spelling={spelling}"]
    with pytest.raises(ConfigError, match=r"^data.spelling counts an input's words: 0 to "):
        load_config(ROOT / "configs/default.yaml", overrides)
