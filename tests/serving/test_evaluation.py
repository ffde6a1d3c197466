"""`classify evaluate`'s scoring: the labels of a file mapped to the model's classes, and a
two-class model's metrics equal to scikit-learn's on its own probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, log_loss

from classifier.errors import DataError
from classifier.serving.evaluation import evaluate_file, format_evaluation, label_ids
from classifier.serving.predict import predict_probabilities
from tests.labelled_helpers import write_csv
from tests.model_helpers import untrained


def test_labels_are_class_names_or_indices():
    labels = ("negative", "positive")
    assert label_ids({"positive": 1, "negative": 1}, labels, "f") == {"positive": 1, "negative": 0}
    assert label_ids({"0": 1, "1": 1}, labels, "f") == {"0": 0, "1": 1}
    with pytest.raises(DataError) as caught:
        label_ids({"pos": 1, "neg": 2}, labels, "f.csv")
    assert str(caught.value) == (
        "f.csv: labels 'pos', 'neg' are not a class of the model (its classes: negative, "
        "positive; or their indices 0 to 1)"
    )


def test_a_two_class_model_is_scored_as_scikit_learn_scores_its_probabilities(tmp_path):
    model = untrained("attention")
    from tests.serving.test_bundle import spread

    spread(model, seed=2)
    rng = np.random.default_rng(0)
    words = ["great", "awful", "film", "the", "plot", "wonderful", "dull"]
    texts = [" ".join(rng.choice(words, size=rng.integers(1, 9))) for _ in range(200)]
    labels = rng.choice(["negative", "positive"], size=200)
    path = write_csv(tmp_path / "reviews.csv", list(zip(texts, labels, strict=True)))
    evaluation = evaluate_file(model, path, batch_size=7)
    probabilities = predict_probabilities(model, texts, 64)
    truth = (labels == "positive").astype(int)
    m = evaluation.metrics
    assert m["n"] == 200
    assert m["accuracy"] == pytest.approx(accuracy_score(truth, probabilities[:, 1] >= 0.5))
    assert m["macro_f1"] == pytest.approx(
        f1_score(truth, probabilities[:, 1] >= 0.5, average="macro")
    )
    rows = probabilities / probabilities.sum(axis=1, keepdims=True)
    assert m["log_loss"] == pytest.approx(log_loss(truth, rows), abs=1e-5)
    text = format_evaluation(evaluation, "table", "model.keras")
    assert text.splitlines()[0] == f"model.keras on {path}: 200 texts, 2 classes"
    assert "ROC-AUC" in text
