"""A bag of n-grams that reads negation and contrast: the scope of each token equals a plain
left-to-right reading, in TensorFlow and in its NumPy twin; a negated n-gram counts minus
itself and adds its own feature; the word contributions still add up to the log-odds."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from classifier.config.negation import (
    CONCESSIONS,
    CONTRASTS,
    NEGATIONS,
    concession_ids,
    reserved_words,
    scope_ids,
)
from classifier.layers.nb_ngrams import NaiveBayesNgrams, class_feature_counts
from classifier.layers.negation_scope import negation_scope
from classifier.serving.explain_parts import NgramWeights, scope_of
from tests.layer_checks import run_layer_test
from tests.ngram_checks import assert_twin_explains_the_layer

WHERE = scope_ids()
END, COMMA, NOT, BUT = WHERE.end, WHERE.comma, WHERE.negations[0], WHERE.contrasts[0]
WORDS = {
    word: 40 + i
    for i, word in enumerate(["the", "film", "was", "bad", "good", "at", "all", "plot"])
}


def reading(
    ids: np.ndarray,
    words: int = 0,
    commas: bool = True,
    concessive: bool = False,
    opening: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The scope read word by word: a negation opens it, an end, a comma (with ``commas``) or
    a contrast word closes it (and, with ``words``, the word after that many); and, read
    backwards, whether a contrast word follows in the sentence; with ``concessive``, read
    forwards, whether the word is in a clause that a sentence's opening "although" or "though"
    concedes (up to a comma or the sentence's end); with ``opening``, read backwards, whether
    the sentence after the word's opens with a contrast word."""
    negation = set(range(*WHERE.negations))
    contrast = set(range(*WHERE.contrasts))
    negated, before = np.zeros(ids.shape, bool), np.zeros(ids.shape, bool)
    for row, review in enumerate(ids.tolist()):
        scope, since = False, 0
        for t, token in enumerate(review):
            since += 1
            if token == END or (commas and token == COMMA) or token in contrast:
                scope = False
            elif token in negation:
                scope, since = True, 0
            else:
                negated[row, t] = scope and (not words or since <= words)
        seen = False
        for t in reversed(range(len(review))):
            seen = seen and review[t] != END
            before[row, t] = seen
            seen = seen or review[t] in contrast
        conceding = False
        for t, token in enumerate(review):
            if token in (END, COMMA):
                conceding = False
            elif token in concession_ids() and (t == 0 or review[t - 1] == END):
                conceding = concessive
            else:
                before[row, t] |= conceding
        turned = False  # the next sentence opens with a contrast word
        for t in reversed(range(len(review))):
            if review[t] == END:
                turned = opening and t + 1 < len(review) and review[t + 1] in contrast
            else:
                before[row, t] |= turned
    return negated, before


def test_the_ids_are_those_of_the_reserved_words():
    assert reserved_words()[WHERE.end - 2] == "." and reserved_words()[COMMA - 2] == ","
    assert reserved_words()[NOT - 2] == "not" and reserved_words()[BUT - 2] == "but"
    assert WHERE.contrasts[1] - WHERE.contrasts[0] == len(CONTRASTS)
    assert WHERE.negations[1] - WHERE.negations[0] == len(NEGATIONS)
    assert len(set(reserved_words())) == len(reserved_words())
    assert [reserved_words()[i - 2] for i in concession_ids()] == list(CONCESSIONS)


@pytest.mark.parametrize(
    ("length", "words", "commas", "concessive", "opening"),
    [(1, 0, True, False, False), (2, 0, True, False, False), (7, 0, True, False, False),
     (64, 0, True, False, False), (2500, 0, True, False, False), (64, 1, True, False, False),
     (64, 4, True, False, False), (2500, 4, True, False, False), (7, 0, False, False, False),
     (64, 0, False, False, False), (2500, 0, False, False, False), (2, 0, True, True, False),
     (64, 0, True, True, False), (2500, 4, True, True, False), (64, 0, False, True, False),
     (2, 0, True, False, True), (7, 0, True, False, True), (64, 4, True, True, True),
     (2500, 4, True, True, True), (64, 0, False, False, True)],
)  # fmt: skip
def test_the_scope_is_a_word_by_word_reading(length, words, commas, concessive, opening):
    rng = np.random.default_rng(length)
    # mostly words, often a negation, an end or a contrast word, padding at the end of some
    ids = rng.choice([*range(40, 60), END, COMMA, NOT, NOT + 11, BUT, BUT + 3, 1], size=(6, length))
    ids[1, length // 2 :] = 0
    if length > 3:
        ids[2] = 45
        ids[2, 0] = NOT  # a scope that runs to the very end of the longest review
        ids[3, 0] = BUT + 2  # "although" opening the first sentence
        ids[4, :3] = 45, END, BUT  # a second sentence opening with "but"
    negated, before = reading(ids, words, commas, concessive, opening)
    scope = negation_scope(ids, length, words, commas, concessive, opening)
    tf_negated, tf_before = (ops.convert_to_numpy(a) for a in scope)
    np.testing.assert_array_equal(tf_negated, negated)
    np.testing.assert_array_equal(tf_before, before)
    np_negated, np_before = scope_of(ids, words, commas, concessive, opening)
    np.testing.assert_array_equal(np_negated, negated)
    np.testing.assert_array_equal(np_before, before)
    if length > 3:
        assert negated[2, 1:].all() if not words else negated[2, 1 : words + 1].all()
        assert before[4, 0] == opening  # the sentence that the next one's "but" turns from


def ids_of(text: str) -> np.ndarray:
    table = {**WORDS, ".": END, ",": COMMA, "not": NOT, "but": BUT, "although": BUT + 2}
    return np.array([[table[word] for word in text.split()]])


def bag(
    negation: float = 1.0, contrast: float = 1.0, buckets: int = 4096, words: int = 0,
    concessive: bool = False, opening: bool = False,
) -> NaiveBayesNgrams:  # fmt: skip
    layer = NaiveBayesNgrams(
        60, buckets, 2, order=2, negation=negation, contrast=contrast, max_length=16,
        negation_words=words, concessive=concessive, opening_contrast=opening,
    )  # fmt: skip
    layer.build((None, None))
    layer.scale.assign(np.ones(layer.scale.shape, dtype="float32"))
    return layer


def weights_of(layer: NaiveBayesNgrams, text: str) -> dict[int, float]:
    features, weights = (ops.convert_to_numpy(a)[0] for a in layer.entries(ids_of(text)))
    return {int(f): float(w) for f, w in zip(features, weights, strict=True) if w}


def test_a_negated_ngram_counts_minus_itself_and_adds_its_own_feature():
    layer, bad, plain = bag(negation=0.5), WORDS["bad"], bag(negation=0.0)
    negated = weights_of(layer, "the film was not bad")
    assert negated[bad] == -0.5  # "bad": flipped by half
    assert weights_of(plain, "the film was not bad")[bad] == 1.0
    own = set(negated) - set(weights_of(plain, "the film was not bad"))
    assert len(own) == 2  # N:bad and N:(not bad)
    assert all(negated[f] == 1.0 for f in own)
    # once un-negated in the review, "bad" counts as itself
    assert weights_of(layer, "bad . not bad")[bad] == 1.0
    assert weights_of(layer, "not good but bad")[bad] == 1.0
    assert weights_of(layer, "not good , bad")[bad] == 1.0  # the comma ends the scope
    assert weights_of(bag(negation=0.5, words=2), "not the film bad")[bad] == 1.0  # 3 words on
    assert weights_of(bag(negation=0.5, words=3), "not the film bad")[bad] == -0.5


def test_ngrams_before_a_contrast_word_count_less():
    layer = bag(negation=0.0, contrast=0.25)
    weights = weights_of(layer, "the plot was bad but the film was good")
    assert weights[WORDS["bad"]] == 0.25 and weights[WORDS["good"]] == 1.0
    assert weights[WORDS["the"]] == 1.0  # after "but" too: its first occurrence in this order
    assert weights_of(layer, "bad . but good")[WORDS["bad"]] == 1.0  # another sentence
    assert weights_of(layer, "bad , but good")[WORDS["bad"]] == 0.25  # the same sentence


def test_a_clause_conceded_by_an_opening_although_counts_as_one_before_but():
    conceding = bag(negation=0.0, contrast=0.25, concessive=True)
    text = "although the plot was bad , the film was good"
    weights = weights_of(conceding, text)
    assert weights[WORDS["bad"]] == 0.25 and weights[WORDS["good"]] == 1.0
    assert weights_of(bag(negation=0.0, contrast=0.25), text)[WORDS["bad"]] == 1.0  # without
    assert weights_of(conceding, "good . although bad , good")[WORDS["bad"]] == 0.25
    assert weights_of(conceding, "good , although bad")[WORDS["bad"]] == 1.0  # not opening one
    with pytest.raises(ValueError, match="contrast < 1"):
        bag(contrast=1.0, concessive=True)


def test_a_sentence_that_the_next_ones_opening_but_turns_from_counts_as_one_before_but():
    turning = bag(negation=0.0, contrast=0.25, opening=True)
    weights = weights_of(turning, "the plot was bad . but the film was good")
    assert weights[WORDS["bad"]] == 0.25 and weights[WORDS["good"]] == 1.0
    assert weights_of(bag(negation=0.0, contrast=0.25), "bad . but good")[WORDS["bad"]] == 1.0
    assert weights_of(turning, "bad . good . but good")[WORDS["bad"]] == 1.0  # one sentence back
    assert weights_of(turning, "bad . good but good")[WORDS["bad"]] == 1.0  # not opening one
    with pytest.raises(ValueError, match="contrast < 1"):
        bag(contrast=1.0, opening=True)


def test_the_ratios_count_every_feature_a_review_holds():
    layer = bag()
    ids = np.pad(ids_of("not bad at all"), ((0, 0), (0, 3)))  # and padding
    counts = class_feature_counts([(ids, np.array([1]))], 60, 4096, 2, entries=layer.entries)
    assert counts[1].sum() == len(weights_of(layer, "not bad at all")) and counts[0].sum() == 0


@pytest.mark.parametrize(
    ("words", "concessive", "opening"), [(0, False, False), (2, False, False), (0, True, True)]
)
def test_the_word_contributions_add_up_with_negation(words, concessive, opening):
    rng = np.random.default_rng(0)
    layer = bag(
        negation=1.0, contrast=0.25, buckets=97, words=words, concessive=concessive,
        opening=opening,
    )  # fmt: skip
    layer.scale.assign(rng.normal(0, 1, layer.scale.shape).astype("float32"))
    layer.kernel.assign(rng.normal(0, 1, layer.kernel.shape).astype("float32"))
    numpy = keras.ops.convert_to_numpy
    twin = NgramWeights(
        60, 97, 2, "ratio", numpy(layer.scale), numpy(layer.kernel), numpy(layer.bias),
        np.eye(2, dtype="float32"), np.zeros(2, "float32"), negation=1.0, contrast=0.25,
        negation_words=words, concessive=concessive, opening_contrast=opening,
    )  # fmt: skip
    assert_twin_explains_the_layer(
        layer, twin, ids_of("the film was not bad at all but the plot was bad . good")
    )
    text = "although the film was not bad , at all the plot was bad . good"
    assert_twin_explains_the_layer(layer, twin, ids_of(text))
    assert_twin_explains_the_layer(layer, twin, ids_of("the film was not bad . but good"))


@pytest.mark.parametrize(
    ("sentences", "non_trainable"), [({}, 1), ({"short_length": 6, "letters": 4}, 2)]
)  # a bag that reads sentences and their letters holds its table of letter n-grams too
def test_the_layer_saves_and_loads(tmp_path, sentences, non_trainable):
    run_layer_test(
        NaiveBayesNgrams,
        init_kwargs={
            "vocab_size": 60,
            "buckets": 97,
            "outputs": 2,
            "order": 3,
            "negation": 0.5,
            "contrast": 0.25,
            "max_length": 12,
            **sentences,
        },  # fmt: skip
        input_data=np.array([[40, NOT, 41, 42, END, 43, BUT, 44, 0, 0, 0, 0]]),
        tmp_path=tmp_path,
        expected_output_shape=(1, 2),
        expected_num_trainable_weights=2,
        expected_num_non_trainable_weights=non_trainable,
    )


def test_negation_needs_the_longest_review():
    with pytest.raises(ValueError, match="max_length"):
        NaiveBayesNgrams(60, 97, 2, negation=1.0)


def test_the_largest_config_numbers_the_own_features_as_the_numpy_twin():
    vocab_size, buckets = 1_000_000, 100_000_000  # the largest the config takes
    layer = NaiveBayesNgrams(
        vocab_size, buckets, 2, order=3, negation=1.0, contrast=0.25, max_length=8
    )
    ids = np.array([[999_999, NOT, 999_998, 999_997, END, 999_996, BUT, 999_995]])
    features, weights = (ops.convert_to_numpy(a) for a in layer.entries(ids))
    twin = NgramWeights(
        vocab_size, buckets, 3, "ratio", np.ones(1), np.ones((1, 2)), np.zeros(2),
        np.eye(2), np.zeros(2), negation=1.0, contrast=0.25,
    )  # fmt: skip
    np.testing.assert_array_equal(
        ops.convert_to_numpy(layer.features_by_position(ids)), twin.features(ids)
    )
    own = set(twin.features(ids)[0, 21:]) - {0}
    assert own and own <= set(features[0][weights[0] != 0])
    assert all(vocab_size <= f < vocab_size + buckets for f in own)
