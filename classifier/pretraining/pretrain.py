"""One pretraining run (``classify pretrain``), tracked in MLflow like a training run.

``pretrain.objective: mlm`` trains the ``encoder`` variant's stack (token embedding, positions,
:class:`~classifier.layers.Encoder`) as a masked language model with its output projection
tied to the token embedding (:class:`~classifier.models.pretraining.MaskedLanguageModel`);
``span`` trains the encoder-decoder :class:`~classifier.models.transformer.Transformer` on
T5 span corruption and keeps its encoder. The text is :mod:`classifier.pretraining.data`'s:
unlabelled reviews plus the training portion, never validation or test reviews.

The run (experiment ``pretrain.experiment``) logs the flattened config as params, per epoch
(``step`` = epoch) ``train_loss``, ``train_masked_accuracy``, ``heldout_loss``,
``heldout_masked_accuracy`` (loss and accuracy over the predicted tokens only) and
``epoch_time_s``, then ``train_time_s``; artefacts ``config.yaml``, ``vocabulary.txt``,
``training_curves.png``, the ``checkpoint/`` of the last epoch and the ``encoder/`` of
:mod:`classifier.pretraining.encoder_artifact`, registered as ``pretrain.registered_model`` with the alias
``newest``. Checkpoints, stop signals, ``--resume`` and heartbeats are the shared lifecycle of
:mod:`classifier.runs.lifecycle`, as in training.

Example (with the data at hand)::

    result = pretrain(load_config("configs/pretrain-smoke.yaml"))
    result.history["heldout_masked_accuracy"]  # per epoch
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import keras
import mlflow
import tensorflow as tf

from classifier import plots
from classifier.config.schema import Config
from classifier.errors import TrainingDiverged
from classifier.models.pretraining import (
    MaskedLanguageModel,
    build_encoder,
    encoder_of,
    span_transformer,
)
from classifier.pretraining.data import load_texts, make_pretrain_datasets, pretrain_vectorizer
from classifier.pretraining.encoder_artifact import ENCODER_DIR, register_encoder, write_encoder
from classifier.runs.interrupts import deferred_interrupt
from classifier.runs.lifecycle import (
    CheckpointCallback,
    Progress,
    TrainingInterrupted,
    built_for_fit,
    log_run_inputs,
    resume_state,
    run_workspace,
    tracked_run,
)
from classifier.runs.live import batch_progress, status
from classifier.runs.precision import as_float32, device_note, precision_policy
from classifier.runs.resume import PRETRAIN_TAG, PROGRESS_FILE

#: The model.* keys that shape the encoder (written into encoder.json).
ENCODER_KEYS = (
    "embed_dim",
    "num_heads",
    "ff_dim",
    "num_layers",
    "dropout",
    "position",
    "scale_embeddings",
    "norm_first",
)
#: What the curves show: (history prefix, legend label) and the metrics, one panel each.
CURVES = {
    "splits": (("train", "training"), ("heldout", "held-out reviews")),
    "metrics": ("loss", "masked_accuracy"),
}


class PretrainingInterrupted(TrainingInterrupted):
    """Pretraining was stopped (Ctrl-C, SIGTERM, SIGHUP); the run is KILLED, its checkpoint
    kept."""

    def __init__(self, run_id: str, epochs_done: int = 1):
        super().__init__(run_id, epochs_done, command="pretrain")


@dataclass
class PretrainResult:
    """What a finished pretraining produced."""

    run_id: str
    epochs_run: int
    model_version: str
    history: dict[str, list[float]] = field(default_factory=dict)


def pretrain(
    cfg: Config | None = None, resume: str | None = None, echo: Callable[[str], None] = print
) -> PretrainResult:
    """Pretrain, log and register one encoder.

    Args:
        cfg: the resolved config (ignored when resuming: the run's own config is used).
        resume: id of a KILLED or FAILED pretraining run to continue from its last checkpoint.
        echo: where progress lines go.

    Raises:
        PretrainingInterrupted: on Ctrl-C, SIGTERM or SIGHUP (the run is marked KILLED).
        RunBusy: ``resume`` names a run that another live process trains or resumes.
        TrainingDiverged: the loss became NaN or infinite (the run is marked FAILED).
    """
    with run_workspace("pretrain", resume, echo) as workdir:
        cfg, checkpoint = resume_state(cfg, resume, workdir, pretraining=True)
        with precision_policy(cfg.train.mixed_precision):  # the model built for pretraining
            return _pretrain_from(cfg, checkpoint, resume, echo, workdir)


def _pretrain_from(cfg, checkpoint, resume, echo, workdir: Path) -> PretrainResult:
    keras.utils.set_random_seed(cfg.train.seed)
    tf.config.experimental.enable_op_determinism()

    status(echo, "loading the reviews")
    texts = load_texts(cfg)
    if checkpoint:
        vocabulary = (checkpoint / "vocabulary.txt").read_bytes().decode("utf-8").split("\n")
        vectorizer = pretrain_vectorizer(cfg, vocabulary=vocabulary)
        model = keras.models.load_model(checkpoint / "last.keras", safe_mode=True)
        progress = Progress(**json.loads((checkpoint / PROGRESS_FILE).read_text()))
    else:
        status(echo, "building the vocabulary")
        vectorizer = pretrain_vectorizer(cfg, texts.train)
        model = new_pretraining_model(cfg)
        progress = Progress()
    data = make_pretrain_datasets(cfg, texts, vectorizer, epochs_done=progress.epoch)

    def log_inputs() -> None:
        params = {f"pretrain.{name}_reviews": size for name, size in texts.sizes.items()}
        log_run_inputs(
            cfg, vectorizer, params, {PRETRAIN_TAG: cfg.pretrain.objective}, pretraining=True
        )

    p = cfg.pretrain
    run_name = f"pretrain-{p.objective}-seed{cfg.train.seed}"
    interrupted = PretrainingInterrupted
    with tracked_run(
        p.experiment, run_name, progress, log_inputs, resume, None, None, interrupted
    ) as run_id:
        sizes = texts.sizes
        echo(
            f"run {run_id}: pretraining ({p.objective}), "
            f"{sizes['unlabelled']:,} unlabelled + {sizes['labelled']:,} training reviews, "
            f"{sizes['held_out']:,} held out"
            + (f", resuming after epoch {progress.epoch}" if resume else "")
            + device_note(cfg.train.mixed_precision)
        )
        tracker = PretrainTracker(cfg, progress, vectorizer, workdir, echo)
        reviews, batch = sizes["unlabelled"] + sizes["labelled"], cfg.data.batch_size
        built_for_fit(model, data.train).fit(
            data.train,
            validation_data=data.held_out,
            epochs=p.epochs,
            initial_epoch=progress.epoch,
            callbacks=[*batch_progress(echo, "epoch", p.epochs, reviews, batch), tracker],
            shuffle=False,  # the pipeline shuffles, seeded
            verbose=0,
        )
        with precision_policy(False):  # what is saved computes in float32
            version = _finish(cfg, model, vectorizer, progress, workdir, run_id)
    last = {name: values[-1] for name, values in progress.history.items() if values}
    echo(
        f"held-out masked-token accuracy {last.get('heldout_masked_accuracy', math.nan):.4f}  "
        f"loss {last.get('heldout_loss', math.nan):.4f} - run {run_id}, encoder "
        f"{p.registered_model} v{version.version}"
    )
    return PretrainResult(run_id, progress.epoch, str(version.version), progress.history)


def new_pretraining_model(cfg: Config) -> keras.Model:
    """A fresh compiled model for ``pretrain.objective``: a batch's loss is its mean
    cross-entropy over the predicted tokens (weight 1), and the accuracy is over them only.
    (Keras averages the batches' losses over an epoch by reviews, the accuracy by tokens.)"""
    size = (cfg.data.vocab_size, cfg.data.sequence_length)
    if cfg.pretrain.objective == "mlm":
        model = MaskedLanguageModel.from_model_config(cfg.model, *size)
    else:
        model = span_transformer(cfg.model, *size)
    model.compile(
        optimizer=keras.optimizers.Adam(cfg.pretrain.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"
        ),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="masked_accuracy")],
    )
    return model


class PretrainTracker(CheckpointCallback):
    """Per epoch: a progress line, MLflow metrics and a checkpoint logged to ``checkpoint/``,
    as one unit that no stop signal splits. Within an epoch, a line at most every
    ``progress_every`` seconds (a full-data epoch takes minutes)."""

    progress_every = 60.0

    def __init__(self, cfg, progress, vectorizer, workdir, echo):
        super().__init__(progress, vectorizer, workdir, echo)
        self.cfg = cfg
        self._last_line = 0.0
        self._seen = 0  # batches of this epoch so far
        self._batches = 0  # of the last whole epoch: the "of about N" of the progress lines

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self._last_line = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        now = time.perf_counter()
        if now - self._last_line < self.progress_every:
            return
        self._last_line = now
        done = f"batch {batch + 1}" + (f" of about {self._batches}" if self._batches else "")
        loss = float((logs or {}).get("loss", math.nan))
        self.echo(
            f"  epoch {self.progress.epoch + 1}/{self.cfg.pretrain.epochs}: {done}, "
            f"loss {loss:.4f}, {self.seconds():.0f}s"
        )

    def on_epoch_end(self, epoch, logs=None):
        seconds = self.seconds()
        self._batches = self._seen
        number = epoch + 1
        metrics = {
            "train_loss": float(logs["loss"]),
            "train_masked_accuracy": float(logs["masked_accuracy"]),
            "heldout_loss": float(logs["val_loss"]),
            "heldout_masked_accuracy": float(logs["val_masked_accuracy"]),
            "epoch_time_s": seconds,
        }
        TrainingDiverged.check(
            metrics, number, phase="pretraining", learning_rate_key="pretrain.learning_rate"
        )
        with deferred_interrupt():  # a stop signal waits until checkpoint and metrics are whole
            self.record(metrics, number)
            self.echo(
                f"epoch {number:>2}/{self.cfg.pretrain.epochs}  loss {metrics['train_loss']:.4f}  "
                f"acc {metrics['train_masked_accuracy']:.4f}  held-out loss "
                f"{metrics['heldout_loss']:.4f}  acc {metrics['heldout_masked_accuracy']:.4f}  "
                f"{seconds:.1f}s"
            )
            self.checkpoint(metrics, number)


def _finish(cfg: Config, model, vectorizer, progress, workdir: Path, run_id: str):
    """Draw the curves, write the encoder and register it; return the ``ModelVersion``."""
    size = (cfg.data.vocab_size, cfg.data.sequence_length)
    encoder = encoder_of(model, cfg.model, cfg.data.sequence_length)
    encoder = as_float32(encoder, lambda: build_encoder(cfg.model, *size))  # what is saved
    info = {
        "objective": cfg.pretrain.objective,
        "epochs": progress.epoch,
        "vocab_size": cfg.data.vocab_size,
        "sequence_length": cfg.data.sequence_length,
        "truncate": cfg.data.truncate,
        "train_size": cfg.data.train_size,  # fine-tuning with fewer would validate on read text
        "model": {key: getattr(cfg.model, key) for key in ENCODER_KEYS},
        "run_id": run_id,
    }
    folder = write_encoder(encoder, vectorizer.get_vocabulary(), workdir / ENCODER_DIR, info)
    curves = plots.plot_training_curves(workdir / "training_curves.png", progress.history, **CURVES)
    with deferred_interrupt():  # registered once, whole, or not at all
        mlflow.log_artifact(str(curves))
        mlflow.log_artifacts(str(folder), ENCODER_DIR)
        version = register_encoder(run_id, cfg.pretrain.registered_model)
        mlflow.log_metric("train_time_s", float(sum(progress.history.get("epoch_time_s", []))))
    return version
