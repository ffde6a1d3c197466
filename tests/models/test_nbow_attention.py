"""The fused ``nbow_attention`` variant on fixture data: its log-odds is the n-gram branch's plus
the attention branch's, that branch reads the first words only, and the trained model is
served by its LiteRT bundle (equal to Keras) and explained with both branches in one figure."""

from __future__ import annotations

import json
import math

import keras
import numpy as np
import pytest

from classifier.config.schema import ModelConfig
from classifier.explain.explanation import explain_text
from classifier.explain.keras_view import branch_log_odds, word_contributions
from classifier.models import classifier as builders
from classifier.serving.keras_engine import classifier_of, vectorizer_of
from classifier.serving.predict import predict_texts
from tests.model_helpers import NEGATIVE, PNG_MAGIC, POSITIVE, run, train_bag_fixture

MODEL = "imdb-nbow-attention-test"
VOCAB = 40


def log_odds(probabilities: np.ndarray) -> np.ndarray:
    probabilities = np.asarray(probabilities, dtype=np.float64)
    return np.log(probabilities[:, 1]) - np.log(probabilities[:, 0])


def spread(model: keras.Model, seed: int = 0) -> keras.Model:
    """Random weights of a visible size everywhere (the untrained bag and head are zero or the
    identity, which would make every check below pass trivially)."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if weight.dtype.startswith("float"):
            weight.assign(rng.normal(0.0, 0.5, weight.shape).astype(weight.dtype))
    return model


def fused(sequence_length: int = 12) -> keras.Model:
    cfg = ModelConfig(variant="nbow_attention", embed_dim=8, ngram_buckets=64)
    return spread(builders.build_classifier(cfg, VOCAB, sequence_length))


def test_the_log_odds_is_the_sum_of_the_two_branches():
    model = fused()
    ids = np.random.default_rng(1).integers(2, VOCAB, size=(4, 12))
    ids[1, 7:] = 0  # a padded review
    ngram = keras.Model(model.input, model.get_layer("bag").output)(ids).numpy()
    attention = keras.Model(model.input, model.get_layer("attention_logits").output)(ids).numpy()
    head_kernel, head_bias = (w.numpy().astype(np.float64) for w in model.get_layer("head").weights)
    expected = (ngram + attention) @ head_kernel + head_bias  # the head: a softmax of this
    np.testing.assert_allclose(
        log_odds(model(ids).numpy()), expected[:, 1] - expected[:, 0], rtol=0, atol=1e-4
    )
    # Both branches count: neither gives the model's log-odds alone.
    for branch in (ngram, attention):
        alone = branch @ head_kernel + head_bias
        assert np.abs(log_odds(model(ids).numpy()) - (alone[:, 1] - alone[:, 0])).max() > 0.1


def test_the_attention_branch_reads_the_first_words_only(monkeypatch):
    monkeypatch.setattr(builders, "READER_LENGTH", 5)
    model = fused()
    reader = keras.Model(model.input, model.get_layer("attention_logits").output)
    ids = np.random.default_rng(2).integers(2, VOCAB, size=(2, 12))
    changed = ids.copy()
    changed[:, 5:] = np.random.default_rng(3).integers(2, VOCAB, size=(2, 7))
    np.testing.assert_allclose(reader(ids).numpy(), reader(changed).numpy(), atol=1e-6)
    changed[:, 4] = (ids[:, 4] + 1 - 2) % (VOCAB - 2) + 2  # a word it reads
    assert np.abs(reader(ids).numpy() - reader(changed).numpy()).max() > 1e-4
    # The n-gram branch reads the whole review.
    model_changed = model(np.where(np.arange(12) >= 5, changed, ids)).numpy()
    assert np.abs(model(ids).numpy() - model_changed).max() > 1e-4


@pytest.fixture(scope="module")
def fused_run(store, fixture_data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("nbow_attention")
    result, model, _ = train_bag_fixture(
        fixture_data_dir, folder, "nbow_attention", MODEL, "nbow-attention-tests",
        "model.embed_dim=8",
    )  # fmt: skip
    return result, model


def test_the_fused_model_learns_and_its_bundle_equals_keras(fused_run, tmp_path):
    result, model = fused_run
    assert result.test_metrics["test_accuracy"] >= 0.95  # the cue words decide every review
    reviews = tmp_path / "reviews.txt"
    texts = [POSITIVE, NEGATIVE, "the plot was great but the actor was awful and dull"]
    reviews.write_text("\n".join(texts) + "\n")
    done = run(
        "predict", "--model", f"models:/{MODEL}@newest", "--per-line", "--format", "json",
        str(reviews),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    rows = json.loads(done.stdout)
    assert [row["label"] for row in rows[:2]] == ["positive", "negative"]
    expected = predict_texts(model, texts)
    assert [row["positive_probability"] for row in rows] == pytest.approx(expected, abs=1e-5)


def test_explain_shows_the_ngram_contributions_and_the_attention_that_add_up(fused_run, tmp_path):
    _, model = fused_run
    text = "a wonderful wonderful film, awful plot and a dull dull scene"
    explanation = explain_text(model, text)
    assert explanation.signed and explanation.weights is not None
    assert explanation.weights.sum() == pytest.approx(1.0, abs=1e-5)
    shares = dict(zip(explanation.tokens, explanation.attention, strict=True))
    assert shares["wonderful"] > 0 > shares["awful"]
    # The word contributions, the biases and the attention branch add up to the model's log-odds.
    classifier = classifier_of(model)
    ids = np.asarray(vectorizer_of(model)(np.array([text])))[0]
    ids = ids[: np.count_nonzero(ids)]
    _, contributions = word_contributions(classifier, ids)
    np.testing.assert_allclose(contributions, explanation.attention, atol=1e-9)
    head_kernel, head_bias = (
        np.asarray(w, dtype=np.float64) for w in classifier.get_layer("head").weights
    )
    direction = head_kernel[:, 1] - head_kernel[:, 0]
    bag_bias = np.asarray(classifier.get_layer("bag").bias, dtype=np.float64) @ direction
    attention = branch_log_odds(classifier, ids)
    assert attention == explanation.branch_log_odds
    probability = predict_texts(model, [text])[0]
    assert explanation.probability == pytest.approx(probability, abs=1e-5)
    assert contributions.sum() + bag_bias + head_bias[1] - head_bias[0] + attention == (
        pytest.approx(math.log(probability / (1 - probability)), abs=1e-4)
    )
    # One figure, through the CLI.
    review = tmp_path / "review.txt"
    review.write_text(text)
    target = tmp_path / "review.png"
    done = run("explain", "--model", f"models:/{MODEL}@newest", str(review), "-o", str(target))
    assert done.exit_code == 0, done.output
    assert target.read_bytes()[:8] == PNG_MAGIC
    assert done.stdout == (
        f"{target}: {explanation.label} (P(positive) {explanation.probability:.4f}), "
        f"{len(explanation.tokens)} tokens, n-gram contributions, attention branch "
        f"{attention:+.2f} log-odds, and attention of "
        "the attention branch's layer 2 of 2\n"
    )
