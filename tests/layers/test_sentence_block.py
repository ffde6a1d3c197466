"""A bag of n-grams that reads short inputs as sentences (``short_length``): their features in
a block of their own, a negation's scope to the sentence's end, and (``letters``) each word's
letter n-grams signed as the word is read; in TensorFlow and in its NumPy twin alike, and the
word contributions still add up to the log-odds."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from classifier.config.negation import reserved_words, scope_ids
from classifier.layers.letters import letter_ngrams, letter_table
from classifier.layers.nb_ngrams import NaiveBayesNgrams
from classifier.serving.explain_parts import NgramWeights
from tests.ngram_checks import assert_twin_explains_the_layer

WHERE = scope_ids()
END, COMMA, NOT, BUT = WHERE.end, WHERE.comma, WHERE.negations[0], WHERE.contrasts[0]
WORDS = ["the", "film", "was", "bad", "good", "at", "all", "plot"]
IDS = {word: 40 + i for i, word in enumerate(WORDS)}
VOCAB, BUCKETS = 60, 4096
#: The vectorizer's vocabulary: padding, OOV, the reserved words at their ids, the words above.
VOCABULARY = ["", "[UNK]", *reserved_words()]
VOCABULARY += [f"w{i}" for i in range(len(VOCABULARY), 40)] + WORDS
VOCABULARY += [f"x{i}" for i in range(len(VOCABULARY), VOCAB)]


def ids_of(text: str, length: int = 0) -> np.ndarray:
    table = {**IDS, ".": END, ",": COMMA, "not": NOT, "but": BUT}
    ids = [table[word] for word in text.split()]
    return np.array([ids + [0] * (length - len(ids))])


def bag(
    short_length: int = 6, letters: int = 0, negation: float = 1.0, buckets: int = BUCKETS,
    letter_weight: float = 1.0, own_negated_letters: bool = True,
    sentences_as_reviews: bool = False,
):  # fmt: skip
    layer = NaiveBayesNgrams(
        VOCAB, buckets, 2, order=2, negation=negation, contrast=0.25, max_length=16,
        negation_words=2, short_length=short_length, letters=letters, letter_weight=letter_weight,
        own_negated_letters=own_negated_letters, sentences_as_reviews=sentences_as_reviews,
    )  # fmt: skip
    layer.build((None, None))
    layer.scale.assign(np.ones(layer.scale.shape, dtype="float32"))
    layer.set_letters(VOCABULARY)
    return layer


def weights_of(layer: NaiveBayesNgrams, text: str, length: int = 0) -> dict[int, float]:
    features, weights = (ops.convert_to_numpy(a)[0] for a in layer.entries(ids_of(text, length)))
    return {int(f): float(w) for f, w in zip(features, weights, strict=True) if w}


def test_a_sentence_has_a_block_of_its_own():
    layer, block = bag(short_length=6), VOCAB + BUCKETS
    assert layer.feature_count == 2 * block and layer.kernel.shape[0] == 2 * block
    review = weights_of(layer, "the film was good . the plot")  # 7 ids: a review
    sentence = weights_of(layer, "the film was good")  # 4 ids: a sentence
    assert IDS["good"] in review and max(review) < block
    assert IDS["good"] + block in sentence and min(sentence) >= block
    # the padding does not count: the same sentence padded to 12 ids is still a sentence
    assert weights_of(layer, "the film was good", length=12) == sentence
    # without short_length every input is read as a review
    assert max(weights_of(bag(short_length=0), "the film was good")) < block


def test_a_sentences_negation_reaches_its_end_past_a_comma_and_the_word_limit():
    layer, block = bag(short_length=8), VOCAB + BUCKETS
    bad = IDS["bad"]
    # a sentence: "not" reaches "bad" past the comma and the two-word limit
    assert weights_of(layer, "not the film , bad")[bad + block] == -1.0
    # a review (8 ids or more): the comma ends the scope, as model.negation_words' clause
    assert weights_of(layer, "not the film , bad . the plot")[bad] == 1.0
    assert weights_of(layer, "not bad . the film was the plot")[bad] == -1.0
    # a contrast word or the sentence's end still ends a sentence's scope
    assert weights_of(layer, "not good but bad")[bad + block] == 1.0
    assert weights_of(layer, "not good but bad")[IDS["good"] + block] == -0.25
    assert weights_of(layer, "not good . bad")[bad + block] == 1.0


def test_a_sentence_read_as_a_review_too_adds_the_reviews_features_and_nothing_else():
    block, bad, film = VOCAB + BUCKETS, IDS["bad"], IDS["film"]
    own, shared = bag(short_length=8, letters=12), bag(8, 12, sentences_as_reviews=True)
    text = "not the film , bad"
    alone, both = weights_of(own, text), weights_of(shared, text)
    assert {f: w for f, w in both.items() if f >= block} == alone  # its own block as before
    as_review = {f: w for f, w in both.items() if f < block}
    # read as a review: the comma ends the scope (the sentence's own block reads "bad" negated)
    assert alone[bad + block] == -1.0 and as_review[bad] == 1.0 and as_review[film] == -1.0
    assert max(as_review) < VOCAB + BUCKETS and not set(as_review) & {
        int(f) for f in letter_table(VOCABULARY, VOCAB, BUCKETS, 12)[bad] if f
    }  # no letters in the reviews' block
    assert as_review == weights_of(bag(short_length=0), text)  # what a review's bag reads
    review = "the film was bad . the plot was good"
    assert weights_of(shared, review) == weights_of(own, review)  # a review as before
    assert NaiveBayesNgrams.from_config(shared.get_config()).sentences_as_reviews
    with pytest.raises(ValueError, match="sentences_as_reviews reads sentences"):
        NaiveBayesNgrams(60, 97, 2, sentences_as_reviews=True)


def test_letter_ngrams_are_the_words_edges_and_insides():
    assert letter_ngrams("bad") == ["<ba", "bad", "ad>", "<bad", "bad>", "<bad>"]
    table = letter_table(VOCABULARY, VOCAB, BUCKETS, 8)
    assert not table[:2].any() and not table[WHERE.end].any()  # padding, OOV, "."
    assert (table[IDS["bad"], :6] >= VOCAB).all() and not table[IDS["bad"], 6:].any()
    assert (table[IDS["plot"]] > 0).all()  # 9 of its letter n-grams: the first 8 kept


def test_a_sentences_words_add_their_letters_signed_as_the_word():
    layer, block = bag(short_length=8, letters=12), VOCAB + BUCKETS
    letters = {
        int(f) + block for f in letter_table(VOCABULARY, VOCAB, BUCKETS, 12)[IDS["bad"]] if f
    }
    plain = weights_of(layer, "the film was bad")
    assert letters <= set(plain) and all(plain[f] == 1.0 for f in letters)
    negated = weights_of(layer, "the film was not bad")
    assert all(negated[f] == -1.0 for f in letters)  # minus themselves, as "bad" is
    review = weights_of(layer, "the film was bad . the plot was good")
    assert not letters & set(review) and max(review) < block  # a review reads no letters


def test_a_letter_weight_scales_a_sentences_letters_and_nothing_else():
    block = VOCAB + BUCKETS
    plain = bag(short_length=8, letters=12)
    weighted = bag(short_length=8, letters=12, letter_weight=4)
    table = letter_table(VOCABULARY, VOCAB, BUCKETS, 12)

    def letters_of(*words: str, own: bool = False) -> set[int]:
        grams = np.array([f for word in words for f in table[IDS.get(word, NOT)] if f])
        if own:  # the negated letter n-grams' own features (``N:``), letters all the same
            grams = ops.convert_to_numpy(plain._own(grams))
        return {int(f) + block for f in grams}

    for text, sign in [("the film was bad", 1.0), ("the film was not bad", -1.0)]:
        before, after = weights_of(plain, text), weights_of(weighted, text)
        assert set(after) == set(before)
        assert all(after[f] == 4 * sign for f in letters_of("bad"))  # signed as "bad" is read
        letters = letters_of("the", "film", "was", "not", "bad")
        if sign < 0:
            assert all(after[f] == 4 for f in letters_of("bad", own=True))
            letters |= letters_of("bad", own=True)
        words = set(before) - letters
        assert words and all(after[f] == before[f] for f in words)  # the word n-grams as before
    review = "the film was bad . the plot was good"
    assert weights_of(weighted, review) == weights_of(plain, review)  # a review reads no letters
    assert weighted.get_config()["letter_weight"] == 4
    assert NaiveBayesNgrams.from_config(weighted.get_config()).letter_weight == 4


def test_negated_letters_without_features_of_their_own_count_minus_themselves_alone():
    block = VOCAB + BUCKETS
    owning, flipping = bag(short_length=8, letters=12), bag(8, 12, own_negated_letters=False)
    table = letter_table(VOCABULARY, VOCAB, BUCKETS, 12)
    letters = np.array([f for f in table[IDS["bad"]] if f])
    own = {int(f) + block for f in ops.convert_to_numpy(owning._own(letters))}
    text = "the film was not bad"
    with_own, without = weights_of(owning, text), weights_of(flipping, text)
    assert own <= set(with_own) and not own & set(without)  # no N: feature of bad's letters
    assert all(without[int(f) + block] == -1.0 for f in letters)  # still minus themselves
    assert without == {f: w for f, w in with_own.items() if f not in own}  # the rest as before
    with pytest.raises(ValueError, match="own_negated_letters"):
        bag(8, letters=0, own_negated_letters=False)


@pytest.mark.parametrize(
    ("letters", "negation", "letter_weight", "own_letters", "as_reviews"),
    [(0, 1.0, 1, True, False), (12, 1.0, 1, True, False), (12, 0.0, 1, True, False),
     (12, 1.0, 4, True, False), (12, 1.0, 4, False, False), (12, 1.0, 4, False, True),
     (0, 0.0, 1, True, True)],
)  # fmt: skip
def test_the_twin_and_the_word_contributions_agree_with_the_layer(
    letters, negation, letter_weight, own_letters, as_reviews
):
    rng = np.random.default_rng(letters)
    layer = bag(
        short_length=8, letters=letters, negation=negation, buckets=97, letter_weight=letter_weight,
        own_negated_letters=own_letters, sentences_as_reviews=as_reviews,
    )  # fmt: skip
    layer.scale.assign(rng.normal(0, 1, layer.scale.shape).astype("float32"))
    layer.kernel.assign(rng.normal(0, 1, layer.kernel.shape).astype("float32"))
    numpy = keras.ops.convert_to_numpy
    twin = NgramWeights(
        VOCAB, 97, 2, "ratio", numpy(layer.scale), numpy(layer.kernel), numpy(layer.bias),
        np.eye(2, dtype="float32"), np.zeros(2, "float32"), negation=negation, contrast=0.25,
        negation_words=2, short_length=8, letters=letters,
        letter_ids=numpy(layer.letter_ids) if letters else None, letter_weight=letter_weight,
        own_negated_letters=own_letters, sentences_as_reviews=as_reviews,
    )  # fmt: skip
    texts = ["the film was not bad , at all", "not good but the plot . bad at all good"]
    for text in texts + ["not the film , bad good"] * as_reviews:
        assert_twin_explains_the_layer(layer, twin, ids_of(text))


def test_letters_need_sentences_and_the_vocabulary():
    with pytest.raises(ValueError, match="short_length"):
        NaiveBayesNgrams(60, 97, 2, letters=4)
    with pytest.raises(ValueError, match="needs the vectorizer's vocabulary"):
        bag(letters=4).set_letters(())
    bag(letters=0).set_letters(())  # a bag without letters needs none
    for weight in (0.0, 2.0):  # above 0, and weighing letters there are
        with pytest.raises(ValueError, match="letter_weight"):
            NaiveBayesNgrams(
                60, 97, 2, short_length=8, letters=0 if weight else 4, letter_weight=weight
            )


def test_the_ratios_are_counted_after_the_letters_are_set_from_the_vocabulary():
    from classifier.config.schema import ModelConfig
    from classifier.models.classifier import build_classifier, set_log_count_ratios

    cfg = ModelConfig(
        variant="nbow", ngram_buckets=BUCKETS, negation=1.0, short_length=8, letters=12
    )
    classifier = build_classifier(cfg, VOCAB, 16)
    batches = [(ids_of("the film was not bad", 8), np.array([1])), (ids_of("bad"), np.array([0]))]
    set_log_count_ratios(classifier, batches, VOCABULARY)
    layer = classifier.get_layer("bag")
    table = letter_table(VOCABULARY, VOCAB, BUCKETS, 12)
    np.testing.assert_array_equal(ops.convert_to_numpy(layer.letter_ids), table)
    ratios, block = ops.convert_to_numpy(layer.ratio), VOCAB + BUCKETS
    film, bad = (block + int(table[IDS[word], 0]) for word in ("film", "bad"))  # "<fi", "<ba"
    assert ratios[film] > 0.5  # in the positive sentence alone
    assert abs(ratios[bad]) < 0.01  # in both (negated in the positive one: present all the same)
    assert ratios[IDS["film"]] == ratios[IDS["plot"]]  # no review: the reviews' block is unseen
    cfg.sentences_as_reviews = True  # ...unless a sentence is read as a review too
    classifier = build_classifier(cfg, VOCAB, 16)
    set_log_count_ratios(classifier, batches, VOCABULARY)
    ratios = ops.convert_to_numpy(classifier.get_layer("bag").ratio)
    assert ratios[IDS["film"]] > 0.5 and ratios[IDS["film"] + block] > 0.5


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["model.variant=attention", "model.short_length=30"],
         "model.short_length reads sentences in a block of nbow's and nbow_attention's n-grams; "
         "model.variant='attention' has none (set it to 0)"),
        (["model.variant=nbow", "model.letters=8"],
         "model.letters are read in sentences: set model.short_length too"),
        (["model.variant=nbow", "model.short_length=-1"],
         "model.short_length must not be negative, got -1"),
        (["model.variant=nbow", "model.short_length=30", "model.letter_weight=4"],
         "model.letter_weight weighs letter n-grams: above 0, with model.letters set; got 4.0"),
        (["model.variant=nbow", "model.short_length=30", "model.letters=8",
          "model.letter_weight=0"],
         "model.letter_weight weighs letter n-grams: above 0, with model.letters set; got 0.0"),
        (["model.variant=nbow", "model.short_length=30", "model.letters=8",
          "model.own_negated_letters=false"],
         "model.own_negated_letters=false is of negated letter n-grams: set model.letters and "
         "model.negation too"),
        (["model.variant=nbow", "model.concessive=true"],
         "model.concessive weighs a conceded clause as model.contrast weighs the words before "
         "'but': set model.contrast below 1 too"),
        (["model.variant=nbow", "model.opening_contrast=true"],
         "model.opening_contrast weighs the sentence before an opening 'But' as model.contrast "
         "weighs the words before 'but': set model.contrast below 1 too"),
        (["model.variant=nbow", "model.sentences_as_reviews=true"],
         "model.sentences_as_reviews reads a sentence's n-grams in the reviews' block as well "
         "as its own: set model.short_length too"),
    ],
)  # fmt: skip
def test_bad_sentence_settings_are_one_line(settings, message):
    from classifier.config.schema import load_config
    from classifier.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_config(None, settings)
    assert str(caught.value) == message
