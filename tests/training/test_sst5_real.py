"""Real learning on real multi-class data (marker ``large``): SST-5's five classes, read from
``../shared/data/sst5`` as a user's CSV files, by a small ``nbow`` that must beat the majority
class clearly on ``dev.csv`` (its "test" split here: nothing in the run chooses on it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from classifier.config.schema import load_config
from classifier.training.train import train
from tests.conftest import ROOT

pytestmark = pytest.mark.large

SST5 = ROOT.parent / "shared" / "data" / "sst5"
LABELS = "very negative,negative,neutral,positive,very positive"


@pytest.fixture(scope="module")
def sst5() -> Path:
    if not (SST5 / "train.csv").is_file():
        message = f"SST-5 not found in {SST5}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return SST5


def test_a_small_nbow_beats_the_majority_class_on_sst5(store, sst5):
    cfg = load_config(
        None,
        [
            f"data.source={sst5 / 'train.csv'}",
            f"data.test={sst5 / 'dev.csv'}",
            f"data.labels={LABELS}",
            "data.vocab_size=20000",
            "data.sequence_length=64",
            "data.batch_size=64",
            "model.variant=nbow",
            "model.ngram_buckets=262144",
            "model.ngram_order=2",
            "model.l2=1e-6",
            "train.epochs=6",
            "train.learning_rate=0.01",
            "train.refit=false",
            "train.registered_model=sst5-test",
            "experiment=sst5-test",
        ],
    )
    result = train(cfg, echo=lambda line: None)
    run = MlflowClient().get_run(result.run_id)
    assert run.data.params["data.train_reviews"] == "7690"  # 8,544 less a stratified 10%
    assert run.data.params["data.test_reviews"] == "1101"
    majority = 289 / 1101  # 'negative' (0.262), dev.csv's largest class
    assert result.test_metrics["test_accuracy"] > majority + 0.08
    assert result.test_metrics["test_macro_f1"] > 0.25  # not one class for every sentence
