"""``train.refit``: the same recipe again on every labelled review.

Model selection (the epoch count, early stopping) needs reviews held out of training: the
validation reviews. Once it is done, :func:`refit` trains a fresh model with the same seed on
the training and validation reviews together, for the chosen number of epochs, and that model
is the one evaluated on the test split and registered. The run is tagged ``refit=true`` and
logs ``data.refit_train_reviews``.

The refit model has no held-out labelled review left to fit its calibration on (the test
split chooses nothing). :class:`ChosenConfidence` carries it over instead: the model chosen
on the validation reviews is calibrated there (temperature and offset), its log-odds on the
last unlabelled reviews are kept, and the refit model gets the temperature and offset that
give it the same mean P(positive) and mean entropy on those reviews
(:func:`~classifier.evaluation.metrics.match_temperature_and_offset`). No label is read for that.
A user's labelled file has no unlabelled texts, and a model of more than two classes has no
single log-odds to match: there the refit model takes the chosen model's temperature (and
offset) as they are: the same recipe for the same number of epochs, on more texts.

Example (inside a training run, after the selection phase)::

    chosen = ChosenConfidence.of(cfg, model, vectorizer, data.validation, echo=print)
    model, vectorizer, data = refit(cfg, raw, epochs=9, history={}, echo=print)
    calibration = chosen.calibration_for(model, vectorizer, echo=print)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import keras
import mlflow
import numpy as np
import tensorflow as tf

from classifier.config.schema import Config
from classifier.data.batching import vectorize
from classifier.data.pipeline import (
    Datasets,
    RawSplits,
    ReviewVectorizer,
    build_vectorizer,
    load_last_unlabelled,
    make_datasets,
)
from classifier.errors import TrainingDiverged
from classifier.evaluation.calibration import (
    Calibration,
    calibrate,
    head_log_odds,
    num_classes,
)
from classifier.evaluation.metrics import match_temperature_and_offset
from classifier.pretraining.encoder_artifact import PretrainedEncoder
from classifier.runs.live import batch_progress, status
from classifier.runs.resume import log_missing_metrics
from classifier.training.build import new_model
from classifier.training.ngram_features import fit_inputs

REFIT_TAG = "refit"  # "true" on a run whose registered model was refit on all labelled reviews
#: The last this many unlabelled reviews (all, where the split holds fewer): where a refit
#: model's confidence is matched to the chosen model's. Neither model trains on them (a
#: pretrained encoder has read most of them as text, without labels).
CALIBRATION_REVIEWS = 5000


def refit(
    cfg: Config,
    raw: RawSplits,
    epochs: int,
    history: dict,
    echo: Callable[[str], None],
    encoder: PretrainedEncoder | None = None,
) -> tuple[keras.Model, ReviewVectorizer, Datasets]:
    """``train.refit``: a fresh model (same seed) trained on the training and validation
    reviews together for ``epochs`` (the best epoch count the validation reviews chose), with a
    vocabulary adapted on all of them (with ``encoder``, the fresh model starts from it again,
    with its vocabulary).

    Each epoch logs ``refit_train_loss``, ``refit_train_accuracy`` and ``refit_epoch_time_s``
    (steps from 1; a refit redone after ``--resume`` logs only the steps the store lacks, so
    each keeps one value) and appends them to ``history``. Returns ``(model, vectorizer,
    datasets)``; the datasets' validation split is no longer held out, so nothing may be chosen
    on it."""
    keras.utils.set_random_seed(cfg.train.seed)
    labelled = raw.train.concatenate(raw.validation)
    reviews = int(labelled.cardinality())
    status(echo, "refit: building the vocabulary and the model")
    vectorizer = encoder.vectorizer(cfg.data) if encoder else build_vectorizer(cfg.data, labelled)
    splits = RawSplits(labelled, raw.validation, raw.test, raw.labels)
    data = make_datasets(cfg.data, splits, vectorizer, seed=cfg.train.seed)
    model = new_model(cfg, data.train, encoder, len(raw.labels), vectorizer.get_vocabulary())
    mlflow.log_param("data.refit_train_reviews", reviews)
    mlflow.set_tag(REFIT_TAG, "true")
    echo(f"refit: a fresh model on all {reviews:,} labelled reviews for {epochs} epochs")
    trainer, train_batches, _ = fit_inputs(
        model, data.train, None, cfg.data, cfg.train.seed, cfg.train.lazy_adam
    )
    trainer.fit(
        train_batches,
        epochs=epochs,
        callbacks=[
            *batch_progress(echo, "refit", epochs, reviews, cfg.data.batch_size),
            RefitTracker(history, echo, epochs),
        ],
        shuffle=False,
        verbose=0,
    )
    return model, vectorizer, data


class RefitTracker(keras.callbacks.Callback):
    """Per refit epoch: a progress line and the refit's MLflow metrics (there is no
    validation, and no checkpoint: a stopped refit starts again on resume)."""

    def __init__(self, history: dict, echo: Callable[[str], None], epochs: int):
        super().__init__()
        self.history, self.echo, self.epochs, self._started = history, echo, epochs, 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        metrics = {
            "refit_train_loss": float(logs["loss"]),
            "refit_train_accuracy": float(logs["accuracy"]),
            "refit_epoch_time_s": time.perf_counter() - self._started,
        }
        TrainingDiverged.check(metrics, epoch + 1, phase="the refit")
        for name, value in metrics.items():
            self.history.setdefault(name, []).append(value)
        # A refit redone after a kill: the steps its first attempt logged keep their values.
        refit_history = {name: self.history[name] for name in metrics}
        log_missing_metrics(mlflow.active_run().info.run_id, refit_history)
        self.echo(
            f"refit {epoch + 1:>2}/{self.epochs}  loss {metrics['refit_train_loss']:.4f}  "
            f"acc {metrics['refit_train_accuracy']:.4f}  {metrics['refit_epoch_time_s']:.1f}s"
        )


@dataclass
class ChosenConfidence:
    """The model chosen on the validation reviews, calibrated there, as its calibrated
    log-odds on the last unlabelled reviews: what a refit model's calibration is matched to.
    Without unlabelled reviews (a labelled file, or more than two classes) the chosen
    calibration itself."""

    unlabelled: tf.data.Dataset | None  # (text, -1) pairs
    log_odds: np.ndarray | None  # the calibrated chosen model's, on ``unlabelled``
    batch_size: int
    chosen: Calibration | None = None

    @classmethod
    def of(
        cls,
        cfg: Config,
        model: keras.Model,
        vectorizer: ReviewVectorizer,
        validation: tf.data.Dataset,
        echo: Callable[[str], None],
    ) -> ChosenConfidence:
        """Calibrate ``model`` on ``validation`` (folded in) and read its log-odds on the last
        :data:`CALIBRATION_REVIEWS` unlabelled reviews."""
        status(echo, "calibrating the chosen model on the validation reviews")
        chosen = calibrate(model, validation)
        mlflow.log_metrics(
            {"chosen_temperature": chosen.temperature, "chosen_calibration_offset": chosen.offset}
        )
        if cfg.data.source is not None or num_classes(model) > 2:
            echo(
                f"calibration of the chosen model on the validation texts: T "
                f"{chosen.temperature:.2f}, offset {chosen.offset:+.2f}; the refit model takes it"
            )
            return cls(None, None, cfg.data.batch_size, chosen)
        unlabelled, count = load_last_unlabelled(cfg.data, CALIBRATION_REVIEWS)
        batch_size = cfg.data.batch_size
        log_odds, _ = head_log_odds(model, _batches(unlabelled, vectorizer, batch_size))
        mlflow.log_params({"data.refit_calibration_reviews": count})
        echo(
            f"calibration of the chosen model on the validation reviews: T {chosen.temperature:.2f}"
            f", offset {chosen.offset:+.2f}; its confidence on {count:,} unlabelled reviews kept"
        )
        return cls(unlabelled, log_odds, batch_size)

    def calibration_for(
        self, model: keras.Model, vectorizer: ReviewVectorizer, echo: Callable[[str], None]
    ) -> Calibration:
        """The temperature and offset that give the refit ``model`` (not yet calibrated) the
        chosen model's mean P(positive) and mean entropy on the same unlabelled reviews (the
        chosen model's own calibration where there are none)."""
        if self.unlabelled is None:
            return self.chosen
        log_odds, _ = head_log_odds(model, _batches(self.unlabelled, vectorizer, self.batch_size))
        calibration = Calibration(*match_temperature_and_offset(log_odds, self.log_odds))
        echo(
            f"calibration of the refit model, matched on the unlabelled reviews: "
            f"T {calibration.temperature:.2f}, offset {calibration.offset:+.2f}"
        )
        return calibration


def _batches(unlabelled, vectorizer, batch_size):
    """Unlabelled reviews as batches of similar length (only means are compared: the order of
    the reviews does not matter)."""
    return vectorize(unlabelled, vectorizer, batch_size, bucket_by_length=True)
