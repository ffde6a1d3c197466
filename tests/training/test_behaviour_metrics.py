"""The behaviour suite scored at the end of a two-class run: predicted from token ids by the
calibrated head in the suite's own order, as the saved end-to-end model predicts it, and logged
as ``behaviour_*`` metrics that `classify compare` reads."""

from __future__ import annotations

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from classifier.config.schema import DataConfig, ModelConfig, load_config
from classifier.data.vectorizer import ReviewVectorizer
from classifier.evaluation.behaviour import CAPABILITIES, suite, suite_classes, suite_digest
from classifier.models.classifier import build_classifier, build_end_to_end
from classifier.serving.predict import predict_probabilities
from classifier.sweeps.compare import compare_runs
from classifier.training.behaviour import SCORED_PART, behaviour_metrics_of, suite_predictions
from classifier.training.train import train
from tests.conftest import fixture_data_overrides
from tests.serving.test_bundle import spread

SEQUENCE_LENGTH = 32


@pytest.fixture(scope="module")
def suite_model():
    """A small attention classifier whose vocabulary is every word of the scored part, with
    random weights that spread its answers, and its vectorizer."""
    words = sorted({word for row in suite(SCORED_PART) for word in row.text.lower().split()})
    vectorizer = ReviewVectorizer(len(words) + 2, SEQUENCE_LENGTH, "tail", words)
    cfg = ModelConfig(variant="attention", embed_dim=8, num_heads=2, ff_dim=8, num_layers=1)
    classifier = build_classifier(cfg, len(words) + 2, SEQUENCE_LENGTH, 2)
    spread(build_end_to_end(vectorizer, classifier, ("negative", "positive")), seed=5)
    return classifier, vectorizer


@pytest.mark.parametrize("labels", [("negative", "positive"), ("pos", "neg")])
def test_the_suite_is_predicted_as_the_saved_model_predicts_it(suite_model, labels):
    classifier, vectorizer = suite_model
    data = DataConfig(batch_size=16, bucket_by_length=True, sequence_length=SEQUENCE_LENGTH)
    predicted = suite_predictions(classifier, vectorizer, labels, data)
    end_to_end = build_end_to_end(vectorizer, classifier, labels)
    texts = [row.text for row in suite(SCORED_PART)]
    positive = predict_probabilities(end_to_end, texts, 64)[:, suite_classes(labels)["positive"]]
    clear = np.abs(positive - 0.5) > 1e-4  # float32 against the head's float64
    assert clear.mean() > 0.9
    expected = np.where(positive >= 0.5, "positive", "negative")
    assert np.array(predicted)[clear].tolist() == expected[clear].tolist()
    assert len(set(predicted)) == 2


def test_a_model_of_other_classes_is_not_scored(suite_model):
    classifier, vectorizer = suite_model
    assert behaviour_metrics_of(classifier, vectorizer, ("bad", "good"), DataConfig()) == {}
    assert suite_predictions(classifier, vectorizer, ("a", "b", "c"), DataConfig()) is None


@pytest.mark.slow
def test_a_two_class_run_logs_the_suites_accuracy_per_capability(store, fixture_data_dir):
    cfg = load_config(
        None,
        [
            *fixture_data_overrides(fixture_data_dir),
            "model.variant=nbow",
            "model.ngram_buckets=4096",
            "train.epochs=2",
            "train.learning_rate=0.05",
            "train.registered_model=behaviour-test",
            "experiment=behaviour",
        ],
    )
    result = train(cfg, echo=lambda line: None)
    run = MlflowClient().get_run(result.run_id)
    logged = {k: v for k, v in run.data.metrics.items() if k.startswith("behaviour_")}
    assert set(logged) == {f"behaviour_{c}" for c in CAPABILITIES} | {"behaviour_overall"}
    assert all(0.0 <= value <= 1.0 for value in logged.values())
    per_capability = [logged[f"behaviour_{c}"] for c in CAPABILITIES]
    assert logged["behaviour_overall"] == pytest.approx(np.mean(per_capability))
    assert run.data.tags["behaviour_suite"] == f"dev {suite_digest('dev')}"
    (row,) = compare_runs([run])
    assert row.behaviour_overall == pytest.approx(logged["behaviour_overall"])
    assert row.to_json()["behaviour_overall"] == pytest.approx(logged["behaviour_overall"])
