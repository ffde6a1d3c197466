"""A TFDS data set by name (``data.source=tfds:NAME``): planned, described, trained on and
logged like a labelled file, with its own test split and its ClassLabel's class order."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from classifier.config.schema import load_config
from classifier.data.labelled import plan_splits
from classifier.data.named import parse
from classifier.data.pipeline import load_raw_splits
from classifier.errors import DataError
from classifier.training.train import train
from tests.conftest import ROOT
from tests.labelled_helpers import labelled_overrides, labelled_rows
from tests.named_helpers import SIZES, STARS, prepare_tiny_reviews

TINY = ["data.text_field=review", "data.label_field=stars"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return prepare_tiny_reviews(tmp_path_factory.mktemp("tfds"))


@pytest.fixture
def tiny(tiny_dir, monkeypatch):
    monkeypatch.setenv("TFDS_DATA_DIR", str(tiny_dir))
    return tiny_dir


def test_names_and_splits_are_parsed():
    assert parse("tfds:ag_news_subset") == ("ag_news_subset", "train")
    assert parse("tfds:ag_news_subset:test") == ("ag_news_subset", "test")
    assert parse("tfds:imdb_reviews/plain_text:1.0.0") == ("imdb_reviews/plain_text:1.0.0", "train")
    with pytest.raises(DataError, match=r"^tfds:: name a TFDS data set after 'tfds:'"):
        parse("tfds:")


def test_its_own_test_split_a_stratified_validation_share_and_its_class_order(tiny):
    cfg = load_config(None, [*TINY, "data.source=tfds:tiny_reviews"]).data
    plan = plan_splits(cfg)
    assert plan.labels == tuple(STARS)  # the ClassLabel's order, not sorted
    assert plan.sizes == {"train": 270, "validation": 30, "test": SIZES["test"]}
    assert str(plan.parts["test"].path) == "tfds:tiny_reviews:test"
    raw = load_raw_splits(cfg)
    texts = [(t.numpy().decode(), STARS[int(y)]) for t, y in raw.test]
    assert sorted(texts) == sorted(labelled_rows(SIZES["test"], seed=9))  # every test example
    validation = [STARS[int(y)] for _, y in raw.validation]
    assert {label: validation.count(label) for label in STARS} == dict.fromkeys(STARS, 10)


def test_a_split_named_in_the_config_wins(tiny):
    cfg = load_config(
        None, [*TINY, "data.source=tfds:tiny_reviews:train[:150]", "data.test_fraction=0.2"]
    ).data
    cfg.test = "tfds:tiny_reviews:train[150:]"
    sizes = plan_splits(cfg).sizes
    assert (sizes["train"] + sizes["validation"], sizes["test"]) == (150, 150)
    assert 14 <= sizes["validation"] <= 16  # 10% of each class, rounded


@pytest.mark.parametrize(
    ("sets", "line"),
    [
        (
            ["data.source=tfds:no_such_reviews"],
            "tfds:no_such_reviews: TFDS has no data set 'no_such_reviews', neither registered "
            "nor prepared in {dir} (TFDS_DATA_DIR sets the folder)",
        ),
        (
            ["data.source=tfds:tiny_reviews", "data.label_field=stars"],
            "tfds:tiny_reviews has no feature 'text' (its features: review, stars, votes); "
            "set data.text_field",
        ),
        (
            ["data.source=tfds:tiny_reviews", "data.text_field=review", "data.label_field=votes"],
            "tfds:tiny_reviews: the feature 'votes' is not a ClassLabel (it is Scalar); set "
            "data.label_field to the class feature",
        ),
    ],
)
def test_bad_names_are_one_line_and_exit_2(tiny, sets, line):
    done = subprocess.run(
        [sys.executable, "-m", "classifier", "data", *(f"--set={s}" for s in sets)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**_env(), "TFDS_DATA_DIR": str(tiny)},
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"classify: error: {line.format(dir=tiny)}\n"


def test_an_unknown_split_names_the_splits(tiny):
    cfg = load_config(None, [*TINY, "data.source=tfds:tiny_reviews:dev"]).data
    with pytest.raises(DataError, match=r"^tfds:tiny_reviews:dev: no split dev \(.*its splits: "):
        plan_splits(cfg)


def test_classify_data_describes_it(tiny):
    done = subprocess.run(
        [sys.executable, "-m", "classifier", "data", "--data", "tfds:tiny_reviews", *_sets()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**_env(), "TFDS_DATA_DIR": str(tiny)},
    )
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == "Labelled texts (tfds), 3 classes: bad, okay, good"
    assert lines[1] == (
        "test = tfds:tiny_reviews:test; validation: 10% of tfds:tiny_reviews, stratified by class"
    )
    assert [line.split()[:2] for line in lines[4:7]] == [
        ["train", "270"], ["validation", "30"], ["test", "60"],
    ]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_run(tiny_dir, store):
    """An ``nbow`` run on ``tfds:tiny_reviews``, registered as ``tiny-reviews``."""
    cfg = load_config(
        None,
        [
            *labelled_overrides(),
            *TINY,
            "data.source=tfds:tiny_reviews",
            "model.variant=nbow",
            "train.epochs=3",
            "train.learning_rate=0.05",
            "train.refit=false",
            "experiment=named",
            "train.registered_model=tiny-reviews",
        ],
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TFDS_DATA_DIR", str(tiny_dir))
        return train(cfg, echo=lambda line: None)


def test_a_run_trains_on_it_and_logs_its_tfds_splits(tiny_run):
    result = tiny_run
    assert result.test_metrics["test_accuracy"] >= 0.9
    run = MlflowClient().get_run(result.run_id)
    assert run.data.params["data.class_names"] == '["bad", "okay", "good"]'
    inputs = {
        tag.value: dataset.dataset
        for dataset in run.inputs.dataset_inputs
        for tag in dataset.tags
        if tag.key == "mlflow.data.context"
    }
    # MLflow keeps one input per dataset: the validation share is train's (its first context).
    assert set(inputs) == {"train", "test"}
    assert {dataset.name for dataset in inputs.values()} == {"tiny_reviews/1.0.0"}
    assert inputs["train"].digest != inputs["test"].digest


def _sets() -> list[str]:
    return [f"--set={s}" for s in TINY]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "CLASSIFY_VERBOSE"}


def test_classify_evaluate_measures_a_model_on_a_tfds_split(tiny_run, tiny, store, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "classifier", "evaluate", "--model", "models:/tiny-reviews@newest",
         "--text-field", "review", "--label-field", "stars", "--format", "json",
         "tfds:tiny_reviews:test"],
        cwd=tmp_path, capture_output=True, text=True,
        env={**_env(), "TFDS_DATA_DIR": str(tiny), "MLFLOW_TRACKING_URI": store},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    document = json.loads(done.stdout)
    assert document["n"] == SIZES["test"] and document["accuracy"] >= 0.9
    assert (tmp_path / "tfds-tiny_reviews-test-evaluation").is_dir()
