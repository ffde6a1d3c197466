"""The end of a training run: calibrate on the validation reviews, evaluate once on the test
split, score the behaviour suite (two classes: :mod:`classifier.training.behaviour`), draw the
figures, save the model (``.keras`` and its LiteRT bundle) and register it.

Example (at the end of ``classify train``)::

    metrics, version = finish_run(TrainedRun(cfg, model, vectorizer, data, progress, workdir))
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keras
import mlflow
from mlflow.tracking import MlflowClient

from classifier import plots
from classifier.config.schema import LABELS
from classifier.errors import ModelError
from classifier.evaluation.calibration import (
    Calibration,
    calibrate,
    fold_calibration,
    head_logits,
)
from classifier.evaluation.metrics import (
    classification_metrics,
    expected_calibration_error,
    sigmoid,
    softmax,
)
from classifier.models.classifier import build_end_to_end
from classifier.runs.interrupts import deferred_interrupt
from classifier.runs.live import status
from classifier.runs.tracking import MODEL_ALIAS, version_of_run
from classifier.serving.bundle import write_bundle
from classifier.serving.litert_engine import BUNDLE_DIR
from classifier.serving.registry import log_pyfunc_model
from classifier.training.behaviour import behaviour_metrics_of, suite_tag

EXAMPLE_REVIEWS = [
    "One of the best films I have seen in years: moving, funny and beautifully shot.",
    "A dull, predictable plot and wooden acting. I wanted my two hours back.",
]


@dataclass
class TrainedRun:
    """A training run at its end: its config, the trained model of the classes ``labels`` with
    its vectorizer and batches (``data``: train, validation, test), how training went
    (``progress``), its folder, and where the steps are named on a terminal's status line
    (``echo``, :func:`classifier.runs.live.status`)."""

    cfg: Any
    model: keras.Model
    vectorizer: Any
    data: Any
    progress: Any
    workdir: Path
    labels: tuple[str, ...] = LABELS
    echo: Callable[[str], None] | None = None


def finish_run(run: TrainedRun, calibration: Calibration | None = None):
    """Calibrate, evaluate, log and register the run's model; return ``(test metrics,
    registered ModelVersion)``.

    ``calibration``: fold this one instead of fitting it on ``data.validation`` (a refit model,
    trained on the validation reviews, gets one matched to the chosen model's confidence:
    :class:`classifier.training.refit.ChosenConfidence`).
    """
    cfg, model, vectorizer, data = run.cfg, run.model, run.vectorizer, run.data
    progress, workdir, labels, echo = run.progress, run.workdir, run.labels, run.echo
    if calibration is None:
        status(echo, "calibrating on the validation reviews")
        calibration = calibrate(model, data.validation)  # fitted on validation, folded in
    else:
        fold_calibration(model, calibration)
    status(echo, "evaluating on the test reviews")
    logits, truth = head_logits(model, data.test)  # of the head with the calibration in
    if len(labels) == 2:  # P(positive), from the log-odds: exact in the tails
        log_odds = logits[:, 1] - logits[:, 0]
        probabilities = sigmoid(log_odds)  # what the saved (calibrated) model gives
        uncalibrated = sigmoid(calibration.undo(log_odds))
        predicted = probabilities >= 0.5
    else:
        probabilities = softmax(logits)
        uncalibrated = softmax(logits * calibration.temperature)
        predicted = probabilities.argmax(axis=1)
    metrics = classification_metrics(truth, probabilities, labels)
    metrics["test_ece"] = expected_calibration_error(truth, probabilities)
    metrics["test_ece_uncalibrated"] = expected_calibration_error(truth, uncalibrated)
    mlflow.log_metrics(metrics)
    status(echo, "scoring the behaviour suite")
    if behaviour := behaviour_metrics_of(model, vectorizer, labels, cfg.data):
        mlflow.log_metrics(behaviour)
        mlflow.set_tags(suite_tag())
    mlflow.log_metrics(
        {
            "best_epoch": progress.best_epoch,
            "best_val_accuracy": progress.best_val_accuracy,
            "temperature": calibration.temperature,
            "calibration_offset": calibration.offset,
        }
    )

    status(echo, "drawing the figures")
    figures = {
        "training_curves.png": lambda path: plots.plot_training_curves(
            path, progress.history, best_epoch=progress.best_epoch
        ),
        "confusion_matrix.png": lambda path: plots.plot_confusion_matrix(
            path, truth, predicted, labels
        ),
        "reliability_diagram.png": lambda path: plots.plot_reliability_diagram(
            path, truth, {"uncalibrated": uncalibrated, _calibrated(calibration): probabilities}
        ),
    }
    for name, draw in figures.items():
        mlflow.log_artifact(str(draw(workdir / name)))

    status(echo, "saving the model and its LiteRT bundle")
    end_to_end = build_end_to_end(vectorizer, model, labels)
    keras_path = workdir / "model.keras"
    end_to_end.save(keras_path)
    bundle = _write_bundle(end_to_end, workdir / BUNDLE_DIR)
    status(echo, "logging the model to MLflow and registering it")
    with deferred_interrupt():  # registered once, whole, or not at all
        mlflow.log_artifact(str(keras_path))
        if bundle is not None:  # what `classify predict` runs without TensorFlow
            mlflow.log_artifacts(str(bundle), BUNDLE_DIR)
        name, run_id = cfg.train.registered_model, mlflow.active_run().info.run_id
        version = version_of_run(name, run_id)  # registered before a kill: kept, not repeated
        if version is None:
            version = log_pyfunc_model(
                keras_path, name, EXAMPLE_REVIEWS, bundle=bundle, labels=labels
            )
        else:
            MlflowClient().set_registered_model_alias(name, MODEL_ALIAS, version.version)
        # The time of every epoch, across resumes (epoch_time_s includes validation).
        times = [
            *progress.history.get("epoch_time_s", []),
            *progress.history.get("refit_epoch_time_s", []),
        ]
        mlflow.log_metric("train_time_s", float(sum(times)))
        describe_version(version, cfg, metrics, progress.best_val_accuracy)
    return metrics, version


def describe_version(version, cfg, metrics: dict[str, float], best_val_accuracy: float) -> None:
    """Tag the registered model version with what a reader of the registry compares versions
    by (variant, test accuracy and ECE, best validation accuracy, config hash) and give it a
    one-line description.

    Example (after training registered ``version``)::

        MlflowClient().get_model_version("imdb-sentiment", "3").tags["variant"]  # 'nbow'
    """
    client = MlflowClient()
    tags = {
        "variant": cfg.model.variant,
        "test_accuracy": f"{metrics['test_accuracy']:.4f}",
        "test_ece": f"{metrics['test_ece']:.4f}",
        "best_val_accuracy": f"{best_val_accuracy:.4f}",
        "refit": str(bool(cfg.train.refit)).lower(),
        "config_hash": cfg.config_hash(),
    }
    for key, value in tags.items():
        client.set_model_version_tag(version.name, version.version, key, value)
    client.update_model_version(
        version.name,
        version.version,
        description=(
            f"{cfg.model.variant}: test accuracy {tags['test_accuracy']}, test ECE "
            f"{tags['test_ece']}, best validation accuracy {tags['best_val_accuracy']} "
            f"(run {version.run_id})"
        ),
    )


def _calibrated(calibration: Calibration) -> str:
    """The reliability diagram's name for the calibrated probabilities."""
    if calibration.offset == 0.0:
        return f"T = {calibration.temperature:.2f}"
    return f"T = {calibration.temperature:.2f}, offset {calibration.offset:+.2f}"


def _write_bundle(end_to_end: keras.Model, folder: Path) -> Path | None:
    """The LiteRT bundle of the model, or ``None`` (with a warning) when it cannot be made:
    prediction then runs the Keras model, as for models trained before bundles."""
    try:
        return write_bundle(end_to_end, folder)
    except ModelError as error:
        warnings.warn(
            f"no inference bundle for this run ({error}); predict uses Keras", stacklevel=2
        )
        return None
