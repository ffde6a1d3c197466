"""Training on a user's labelled CSV of three classes, end to end: the run learns, logs
scikit-learn's per-class metrics and the class names, registers a model whose bundle, ``classify
predict`` (table, JSON, CSV) and pyfunc model answer with those names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from classifier.config.schema import load_config
from classifier.serving.pyfunc import SentimentModel
from classifier.serving.registry import load_model
from classifier.training.train import train
from tests.conftest import ROOT
from tests.labelled_helpers import classify, labelled_overrides, labelled_rows, write_csv
from tests.model_helpers import assert_threads_get_what_each_gets_alone, mixed_length_texts

NAME = "three-classes"
LABELS = ["bad", "good", "okay"]


@pytest.fixture(scope="module")
def three_classes(store, tmp_path_factory):
    folder = tmp_path_factory.mktemp("labelled")
    train_csv = write_csv(folder / "train.csv", labelled_rows(300))
    test_csv = write_csv(folder / "test.csv", labelled_rows(60, seed=9))
    cfg = load_config(
        None,
        [
            *labelled_overrides(),
            f"data.source={train_csv}",
            f"data.test={test_csv}",
            "model.variant=nbow",
            "train.epochs=4",
            "train.learning_rate=0.05",
            f"train.registered_model={NAME}",
            "experiment=multiclass",
        ],
    )
    lines: list[str] = []
    return cfg, train(cfg, echo=lines.append), lines, folder


def test_it_learns_and_logs_per_class_metrics(three_classes):
    cfg, result, lines, _ = three_classes
    metrics = result.test_metrics
    assert metrics["test_accuracy"] >= 0.9
    assert metrics["test_macro_f1"] >= 0.9
    for name in LABELS:
        for kind in ("precision", "recall", "f1"):
            assert 0.0 <= metrics[f"test_{kind}_{name}"] <= 1.0
    assert 0.0 <= metrics["test_ece"] <= 1.0
    run = MlflowClient().get_run(result.run_id)
    assert json.loads(run.data.params["data.class_names"]) == LABELS
    assert run.data.params["data.train_reviews"] == "270"  # 300 less a stratified 10%
    assert run.data.params["data.validation_reviews"] == "30"
    assert run.data.params["data.test_reviews"] == "60"
    assert run.data.params["data.source_path"] == cfg.data.source
    assert "data.train_size" not in run.data.params  # IMDB's keys: not read
    assert run.data.metrics["test_macro_f1"] == pytest.approx(metrics["test_macro_f1"])
    summary = lines[-1]
    assert summary.startswith(f"test accuracy {metrics['test_accuracy']:.4f}  macro-F1 ")
    artifacts = {a.path for a in MlflowClient().list_artifacts(result.run_id)}
    assert {"confusion_matrix.png", "reliability_diagram.png", "bundle", "model.keras"} <= artifacts


def test_the_bundle_names_the_classes(three_classes):
    _, result, _, _ = three_classes
    folder = mlflow.artifacts.download_artifacts(run_id=result.run_id, artifact_path="bundle")
    manifest = json.loads((Path(folder) / "bundle.json").read_text())
    assert (manifest["labels"], manifest["num_classes"]) == (LABELS, 3)


def test_predict_names_the_class_and_gives_every_probability(three_classes):
    _, _, _, folder = three_classes
    (folder / "a.txt").write_text("a superb and brilliant film")
    (folder / "b.txt").write_text("dull plot and terrible acting, boring")
    # No known word. Whether a known word of no weight ("the") is unknown depends on how the
    # fixture's 4 epochs weigh it (a filler word, of 0.7 to 0.96 P(good) for 2 of 4 seeds);
    # tests/serving/test_predict.py checks that rule on models of known weights, 3 classes too.
    (folder / "c.txt").write_text("xqzv blorf")
    model = ["--model", f"models:/{NAME}@newest"]
    texts = [str(folder / name) for name in ("a.txt", "b.txt", "c.txt")]
    table = classify("predict", *model, *texts)
    assert (table.returncode, table.stderr) == (0, "")
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["label", "P(label)", "known", "source"]
    assert [row.split()[0] for row in rows] == ["good", "bad", "unknown"]
    listed = json.loads(classify("predict", *model, "--format", "json", *texts).stdout)
    assert [item["label"] for item in listed] == ["good", "bad", "unknown"]
    for item in listed:
        assert list(item["probabilities"]) == LABELS
        assert sum(item["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
    csv_lines = classify("predict", *model, "--format", "csv", texts[0]).stdout
    header, row = csv_lines.splitlines()
    assert header == "source,label,P(bad),P(good),P(okay),known_share"
    assert row.split(",")[1] == "good"


def test_the_pyfunc_model_gives_a_column_per_class(three_classes):
    model = mlflow.pyfunc.load_model(f"models:/{NAME}@newest")
    frame = model.predict(["a superb and brilliant film", "so boring and dull"])
    assert list(frame.columns) == [
        "label", "probability", "known_share", "P(bad)", "P(good)", "P(okay)",
    ]  # fmt: skip
    assert frame["label"].tolist() == ["good", "bad"]
    outputs = model.metadata.get_output_schema().input_names()
    assert outputs == list(frame.columns)


@pytest.mark.parametrize("artifact", ["bundle", "keras_model"])
def test_the_pyfunc_model_answers_threads_as_it_answers_each_alone(three_classes, artifact):
    _, result, _, _ = three_classes
    name = "bundle" if artifact == "bundle" else "model.keras"
    path = mlflow.artifacts.download_artifacts(f"runs:/{result.run_id}/{name}")
    model = SentimentModel()
    model.load_context(mlflow.pyfunc.PythonModelContext({artifact: path}, model_config={}))
    assert_threads_get_what_each_gets_alone(model, mixed_length_texts(64, seed=5))


def test_an_attention_variant_trains_and_calibrates_over_three_classes(store, tmp_path):
    path = write_csv(tmp_path / "reviews.csv", labelled_rows(300, seed=3))
    cfg = load_config(
        None,
        [
            *labelled_overrides(),
            f"data.source={path}",
            "model.variant=encoder",
            "model.num_layers=1",
            "train.epochs=6",
            "train.learning_rate=0.01",
            "train.refit=false",
            "train.registered_model=three-classes-encoder",
            "experiment=multiclass",
        ],
    )
    result = train(cfg, echo=lambda line: None)
    assert result.test_metrics["test_accuracy"] >= 0.6  # the majority class is a third
    run = MlflowClient().get_run(result.run_id)
    assert 0.1 - 1e-9 <= run.data.metrics["temperature"] <= 1100
    assert run.data.metrics["calibration_offset"] == 0.0  # K classes: temperature alone
    assert run.data.metrics["test_ece"] <= run.data.metrics["test_ece_uncalibrated"] + 0.05


# --- classify evaluate on the trained model ----------------------------------------------------


def test_evaluate_prints_the_metrics_and_logs_them_against_the_version(three_classes, tmp_path):
    _, result, _, folder = three_classes
    figures = tmp_path / "figures"
    done = classify(
        "evaluate", "--model", f"models:/{NAME}@newest", "--figures", str(figures),
        str(folder / "test.csv"),
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    version = MlflowClient().get_model_version_by_alias(NAME, "newest")
    assert lines[0] == f"{NAME} v{version.version} on {folder / 'test.csv'}: 60 texts, 3 classes"
    assert [line.split()[0] for line in lines[2:7]] == [
        "accuracy", "macro-F1", "log", "ECE", "unknown",
    ]  # fmt: skip
    table = lines[lines.index(next(line for line in lines if line.startswith("class"))) :]
    assert table[0].split() == ["class", "precision", "recall", "F1", "texts"]
    assert [row.split()[0] for row in table[1:4]] == LABELS
    assert [int(row.split()[-1]) for row in table[1:4]] == [20, 20, 20]
    assert sorted(path.name for path in figures.iterdir()) == [
        "confusion_matrix.png", "reliability_diagram.png",
    ]  # fmt: skip
    run_id = lines[-1].split("run ")[1].split(",")[0]
    assert lines[-1] == f"logged to MLflow: run {run_id}, against {NAME} v{version.version}"
    run = MlflowClient().get_run(run_id)
    assert run.data.tags["evaluation_of"] == f"{NAME}/{version.version}"
    assert run.info.experiment_id == MlflowClient().get_run(result.run_id).info.experiment_id
    accuracy = float(lines[2].split()[1])
    assert run.data.metrics["eval_accuracy"] == pytest.approx(accuracy, abs=1e-4)
    assert run.data.metrics["eval_n"] == 60
    (dataset,) = run.inputs.dataset_inputs
    assert (dataset.dataset.name, dataset.tags[0].value) == ("test", "evaluation")


def test_evaluate_json_and_integer_labels(three_classes, tmp_path):
    _, _, _, folder = three_classes
    rows = [(text, str(LABELS.index(label))) for text, label in labelled_rows(30, seed=4)]
    path = write_csv(tmp_path / "indices.csv", rows)
    done = classify(
        "evaluate", "--model", f"models:/{NAME}@newest", "--format", "json",
        "--figures", str(tmp_path / "f"), str(path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert {"accuracy", "macro_f1", "log_loss", "ece", "n"} <= set(document)
    assert document["n"] == 30 and document["accuracy"] >= 0.8
    assert list(document["classes"]) == LABELS
    assert document["classes"]["bad"]["support"] == 10


def test_evaluate_refuses_labels_the_model_lacks_in_one_line(three_classes, tmp_path):
    path = write_csv(tmp_path / "other.csv", [("a film", "bad"), ("a plot", "meh")] * 3)
    done = classify("evaluate", "--model", f"models:/{NAME}@newest", str(path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"classify: error: {path}: label 'meh' is not a class of the model (its classes: "
        "bad, good, okay; or their indices 0 to 2)\n"
    )
    assert not (ROOT / "other-evaluation").exists()


def test_evaluate_runs_without_tensorflow(three_classes, tmp_path):
    _, _, _, folder = three_classes
    probe = (
        "import sys, runpy; sys.argv = ['classify', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('classifier', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted({'tensorflow', 'keras'} & set(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "evaluate", "--model", f"models:/{NAME}@newest",
         "--figures", str(tmp_path / "f"), str(folder / "test.csv")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.stderr == "[]\n"
    assert done.stdout.startswith(f"{NAME} v")


def test_explain_weighs_words_towards_the_predicted_or_the_named_class(three_classes, tmp_path):
    review = tmp_path / "review.txt"
    review.write_text("a superb and brilliant film")
    model = f"models:/{NAME}@newest"
    done = classify("explain", "--model", model, "-o", str(tmp_path / "r.png"), str(review))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert re.fullmatch(
        rf"{tmp_path}/r\.png: good \(P\(good\) [01]\.\d{{4}}\), 5 tokens, word contributions in "
        r"the NB-weighted bag of word n-grams\n",
        done.stdout,
    ), done.stdout
    assert (tmp_path / "r.png").stat().st_size > 10_000
    named = classify("explain", "--model", model, "--class", "okay", "-o", str(tmp_path / "o.html"),
                     str(review))  # fmt: skip
    assert named.returncode == 0, named.stderr
    assert named.stdout.startswith(f"{tmp_path}/o.html: good (P(okay) 0.")
    page = (tmp_path / "o.html").read_text()
    assert "margin of okay" in page and "away from okay" in page
    wrong = classify("explain", "--model", model, "--class", "great", str(review))
    assert (wrong.returncode, wrong.stdout) == (2, "")
    assert wrong.stderr == (
        "classify: error: --class 'great' is not a class of the model; its classes: "
        "bad, good, okay\n"
    )


def test_a_words_contributions_sum_to_the_class_margin(three_classes):
    from classifier.explain.keras_view import word_contributions
    from classifier.explain.measures import margin_direction
    from classifier.serving.keras_engine import classifier_of, vectorizer_of

    model = load_model(f"models:/{NAME}@newest")
    classifier = classifier_of(model)
    ids = vectorizer_of(model)(np.array(["dull plot and terrible acting, boring"]))
    ids = np.asarray(ids)[0]
    ids = ids[: np.count_nonzero(ids)]
    probabilities = np.asarray(classifier(ids[None, :], training=False))[0].astype(np.float64)
    bag, head = classifier.get_layer("bag"), classifier.get_layer("head")
    for c in range(3):
        _, shares = word_contributions(classifier, ids, c)
        bias = np.asarray(bag.bias, np.float64) @ margin_direction(np.asarray(head.kernel), c)
        margin = shares.sum() + bias + margin_direction(np.asarray(head.bias), c)
        assert margin == pytest.approx(margin_direction(np.log(probabilities), c), abs=1e-4)
    bad = int(np.argmax(probabilities))
    assert LABELS[bad] == "bad" and word_contributions(classifier, ids, bad)[1].sum() > 0
