"""``train.refit``: after the validation reviews choose the epoch count, a fresh model is
trained on training and validation reviews together and is the one evaluated and registered."""

from __future__ import annotations

from mlflow.tracking import MlflowClient

from classifier.compare import compare
from classifier.config import load_config
from classifier.keras_predict import vectorizer_of
from classifier.registry import load_model
from classifier.train import train
from tests.conftest import VALIDATION_ONLY_WORD, fixture_data_overrides

EXPERIMENT = "refit-tests"


def test_refit_trains_on_train_and_validation_and_logs_both_phases(store, fixture_data_dir):
    overrides = [
        *fixture_data_overrides(fixture_data_dir),
        "model.variant=attention",
        "train.epochs=3",
        "train.early_stopping_patience=null",
        "train.learning_rate=0.01",
        "train.refit=true",
        "train.registered_model=imdb-refit-test",
        f"experiment={EXPERIMENT}",
    ]
    lines: list[str] = []
    result = train(load_config(None, overrides), echo=lines.append)
    run = MlflowClient().get_run(result.run_id)
    params, tags = run.data.params, run.data.tags
    assert (params["data.train_reviews"], params["data.validation_reviews"]) == ("120", "40")
    assert params["data.refit_train_reviews"] == "160"
    assert params["train.refit"] == "True" and tags["refit"] == "true"
    client = MlflowClient()
    # Phase 1: three epochs with validation; phase 2: the best epoch count, no validation.
    assert [m.step for m in client.get_metric_history(result.run_id, "val_accuracy")] == [1, 2, 3]
    refit_steps = [m.step for m in client.get_metric_history(result.run_id, "refit_train_loss")]
    assert refit_steps == list(range(1, result.best_epoch + 1))
    assert (
        f"refit: a fresh model on all 160 labelled reviews for {result.best_epoch} epochs" in lines
    )
    # The registered model's vocabulary was adapted on the validation reviews too.
    model = load_model("models:/imdb-refit-test@newest")
    assert VALIDATION_ONLY_WORD in vectorizer_of(model).get_vocabulary()
    # Only the temperature carries over to the refit model: an offset is particular to the
    # weights it was fitted on.
    assert run.data.metrics["temperature"] > 0
    assert run.data.metrics["calibration_offset"] == 0.0
    (row,) = compare(experiment=EXPERIMENT)
    assert row.key_params.endswith("refit")


def test_without_refit_the_validation_reviews_stay_out(store, fixture_data_dir):
    overrides = [
        *fixture_data_overrides(fixture_data_dir),
        "model.variant=attention",
        "train.epochs=1",
        "train.registered_model=imdb-norefit-test",
        "experiment=norefit-tests",
    ]
    result = train(load_config(None, overrides), echo=lambda line: None)
    run = MlflowClient().get_run(result.run_id)
    assert "data.refit_train_reviews" not in run.data.params and "refit" not in run.data.tags
    model = load_model("models:/imdb-norefit-test@newest")
    assert VALIDATION_ONLY_WORD not in vectorizer_of(model).get_vocabulary()
