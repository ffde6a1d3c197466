"""The ``bow`` baseline through the whole pipeline on fixture data: trained, tracked,
registered, predicted (its LiteRT bundle), explained word by word and compared."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from classifier.explain.explanation import explain_text
from classifier.explain.keras_view import word_contributions
from classifier.serving.keras_engine import classifier_of, vectorizer_of
from classifier.serving.model_source import find_bundle
from classifier.serving.predict import predict_texts
from classifier.sweeps.compare import compare
from tests.model_helpers import NEGATIVE, POSITIVE, run, train_bag_fixture

EXPERIMENT = "bow-tests"
MODEL = "imdb-bow-test"


@pytest.fixture(scope="module")
def bow_run(store, fixture_data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bow")
    result, model, _ = train_bag_fixture(fixture_data_dir, folder, "bow", MODEL, EXPERIMENT)
    return result, model


def test_bow_learns_the_fixture_and_logs_like_any_variant(bow_run):
    result, model = bow_run
    assert result.test_metrics["test_accuracy"] >= 0.95  # the cue words decide every review
    params = MlflowClient().get_run(result.run_id).data.params
    assert params["model.variant"] == "bow" and params["model.ngram_buckets"] == "4096"
    # idf from the 120 training reviews: a word in every review has the smallest, 1.
    idf = np.asarray(classifier_of(model).get_layer("bag").idf)
    assert idf[0] == 0 and idf[1:].min() >= 1.0 and idf.max() == pytest.approx(math.log(121) + 1)


def test_bow_predicts_through_its_bundle(bow_run, tmp_path):
    _, model = bow_run
    assert find_bundle(f"models:/{MODEL}@newest") is not None  # predict takes the fast path
    reviews = tmp_path / "reviews.txt"
    reviews.write_text(f"{POSITIVE}\n{NEGATIVE}\n")
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
    assert [row["label"] for row in rows] == ["positive", "negative"]
    expected = predict_texts(model, [POSITIVE, NEGATIVE])  # the Keras model
    assert [row["positive_probability"] for row in rows] == pytest.approx(expected, abs=1e-5)


def test_bow_explains_each_word_by_its_contribution(bow_run):
    _, model = bow_run
    text = "a wonderful wonderful film, awful plot"
    explanation = explain_text(model, text)
    assert explanation.signed and explanation.heads == 0
    assert explanation.layer == "the bag of word 1-2-grams"
    assert explanation.probability == pytest.approx(predict_texts(model, [text])[0], abs=1e-5)
    shares = dict(zip(explanation.tokens, explanation.attention, strict=True))
    assert shares["wonderful"] > 0 > shares["awful"]
    # The contributions and the bias add up to the model's log-odds: nothing lost or invented.
    ids = np.asarray(vectorizer_of(model)(np.array([text])))
    count = int(np.count_nonzero(ids))
    classifier = classifier_of(model)
    probability, contributions = word_contributions(classifier, ids[0, :count])
    bag = classifier.get_layer("bag")
    head_kernel, head_bias = (
        np.asarray(w, dtype=np.float64) for w in classifier.get_layer("head").weights
    )
    direction = head_kernel[:, 1] - head_kernel[:, 0]
    bias = np.asarray(bag.bias, dtype=np.float64) @ direction + head_bias[1] - head_bias[0]
    log_odds = math.log(probability / (1 - probability))
    assert contributions.sum() + bias == pytest.approx(log_odds, abs=1e-4)
    assert probability == pytest.approx(explanation.probability, abs=1e-6)
    np.testing.assert_allclose(explanation.attention, contributions)


def test_bow_explain_command_and_compare_row(bow_run, tmp_path):
    result, _ = bow_run
    review = tmp_path / "review.txt"
    review.write_text("A wonderful film.")
    page = tmp_path / "review.html"
    done = run(
        "explain", "--model", f"runs:/{result.run_id}/model.keras", str(review), "-o", str(page)
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.strip().endswith("word contributions in the bag of word 1-2-grams")
    assert "Words that weigh most" in page.read_text()
    (row,) = compare(experiment=EXPERIMENT)
    assert row.variant == "bow" and row.run_ids == [result.run_id]
    assert row.key_params == "pos=none"
