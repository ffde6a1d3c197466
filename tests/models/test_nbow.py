"""The ``nbow`` baseline through the whole pipeline on fixture data: its log-count ratios come
from the training reviews only, and it is trained, registered, predicted through its LiteRT
bundle (equal to Keras) and explained word by word."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from classifier.data.pipeline import load_raw_splits
from classifier.explain.explanation import explain_text
from classifier.explain.keras_view import word_contributions
from classifier.layers.nb_ngrams import class_feature_counts, log_count_ratios
from classifier.serving.keras_engine import classifier_of, vectorizer_of
from classifier.serving.predict import predict_texts
from tests.model_helpers import NEGATIVE, POSITIVE, run, train_bag_fixture

MODEL = "imdb-nbow-test"


@pytest.fixture(scope="module")
def nbow_run(store, fixture_data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nbow")
    return train_bag_fixture(fixture_data_dir, folder, "nbow", MODEL, "nbow-tests")


def test_nbow_learns_the_fixture_with_ratios_from_the_training_reviews(nbow_run):
    result, model, cfg = nbow_run
    assert result.test_metrics["test_accuracy"] >= 0.95  # the cue words decide every review
    bag = classifier_of(model).get_layer("bag")
    assert bag.order == 3
    ratio = np.asarray(bag.ratio)
    vectorizer = vectorizer_of(model)
    great, awful = np.asarray(vectorizer(np.array(["great awful"])))[0, :2]
    assert ratio[great] > 0 > ratio[awful]

    def ratios_of(split):
        batches = [
            (np.asarray(vectorizer(texts)), labels.numpy()) for texts, labels in split.batch(64)
        ]
        return log_count_ratios(*class_feature_counts(batches, bag.vocab_size, bag.buckets, 3))

    raw = load_raw_splits(cfg.data)
    np.testing.assert_allclose(ratio, ratios_of(raw.train), atol=1e-6)
    # ... and not from the validation reviews too (which would change them):
    assert not np.allclose(ratio, ratios_of(raw.train.concatenate(raw.validation)), atol=1e-6)


def test_nbow_bundle_equals_keras(nbow_run, tmp_path):
    _, model, _ = nbow_run
    reviews = tmp_path / "reviews.txt"
    texts = [POSITIVE, NEGATIVE, "the plot was great but the actor was awful and dull"]
    reviews.write_text("\n".join(texts) + "\n")
    done = run(
        "predict",
        "--model",
        f"models:/{MODEL}@newest",
        "--per-line",
        "--format",
        "json",
        str(reviews),
    )
    assert done.exit_code == 0, done.output
    rows = json.loads(done.stdout)
    assert [row["label"] for row in rows[:2]] == ["positive", "negative"]
    expected = predict_texts(model, texts)
    assert [row["positive_probability"] for row in rows] == pytest.approx(expected, abs=1e-5)


def test_nbow_contributions_add_up_to_the_log_odds(nbow_run):
    _, model, _ = nbow_run
    text = "a wonderful wonderful film, awful plot and a dull dull scene"
    explanation = explain_text(model, text)
    assert explanation.signed and explanation.layer == "the NB-weighted bag of word n-grams"
    shares = dict(zip(explanation.tokens, explanation.attention, strict=True))
    assert shares["wonderful"] > 0 > shares["awful"]
    ids = np.asarray(vectorizer_of(model)(np.array([text])))
    classifier = classifier_of(model)
    probability, contributions = word_contributions(classifier, ids[0, : np.count_nonzero(ids)])
    head_kernel, head_bias = (
        np.asarray(w, dtype=np.float64) for w in classifier.get_layer("head").weights
    )
    direction = head_kernel[:, 1] - head_kernel[:, 0]
    bag_bias = np.asarray(classifier.get_layer("bag").bias, dtype=np.float64) @ direction
    log_odds = math.log(probability / (1 - probability))
    assert contributions.sum() + bag_bias + head_bias[1] - head_bias[0] == pytest.approx(
        log_odds, abs=1e-4
    )
    assert probability == pytest.approx(predict_texts(model, [text])[0], abs=1e-5)
