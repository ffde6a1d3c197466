"""A fresh classifier, and ``train.refit``: the same recipe again on every labelled review.

Model selection (the epoch count, early stopping) needs reviews held out of training: the
validation reviews. Once it is done, :func:`refit` trains a fresh model with the same seed on
the training and validation reviews together, for the chosen number of epochs, and that model
is the one evaluated on the test split and registered. The run is tagged ``refit=true`` and
logs ``data.refit_train_reviews``.

Example (inside a training run, after the selection phase)::

    model, vectorizer, data = refit(cfg, raw, epochs=9, history={}, echo=print)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import keras
import mlflow
import tensorflow as tf

from classifier.config import Config
from classifier.data import Datasets, RawSplits, ReviewVectorizer, build_vectorizer, make_datasets
from classifier.encoder_artifact import PretrainedEncoder
from classifier.errors import TrainingDiverged
from classifier.models import variants
from classifier.models.classifier import build_classifier

REFIT_TAG = "refit"  # "true" on a run whose registered model was refit on all labelled reviews


def new_model(
    cfg: Config, train_batches: tf.data.Dataset, encoder: PretrainedEncoder | None = None
) -> keras.Model:
    """A fresh compiled classifier; a variant that learns from the training reviews before
    training (``bow``: its idf weights) does so from ``train_batches``. With ``encoder``
    (``model.init_from``) its embedding and encoder start from the pretrained weights."""
    model = build_classifier(cfg.model, cfg.data.vocab_size, cfg.data.sequence_length)
    if encoder is not None:
        encoder.copy_into(model)
    if prepare := variants.get(cfg.model.variant).prepare_function():
        prepare(model, train_batches)
    model.compile(
        optimizer=keras.optimizers.Adam(cfg.train.learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


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
    (steps from 1; a refit redone after ``--resume`` logs them again from step 1) and appends
    them to ``history``. Returns ``(model, vectorizer, datasets)``; the datasets' validation
    split is no longer held out, so nothing may be chosen on it."""
    keras.utils.set_random_seed(cfg.train.seed)
    labelled = raw.train.concatenate(raw.validation)
    reviews = int(labelled.cardinality())
    vectorizer = encoder.vectorizer(cfg.data) if encoder else build_vectorizer(cfg.data, labelled)
    splits = RawSplits(train=labelled, validation=raw.validation, test=raw.test)
    data = make_datasets(cfg.data, splits, vectorizer, seed=cfg.train.seed)
    model = new_model(cfg, data.train, encoder)
    mlflow.log_param("data.refit_train_reviews", reviews)
    mlflow.set_tag(REFIT_TAG, "true")
    echo(f"refit: a fresh model on all {reviews:,} labelled reviews for {epochs} epochs")
    model.fit(
        data.train,
        epochs=epochs,
        callbacks=[RefitTracker(history, echo, epochs)],
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
        mlflow.log_metrics(metrics, step=epoch + 1)
        self.echo(
            f"refit {epoch + 1:>2}/{self.epochs}  loss {metrics['refit_train_loss']:.4f}  "
            f"acc {metrics['refit_train_accuracy']:.4f}  {metrics['refit_epoch_time_s']:.1f}s"
        )
