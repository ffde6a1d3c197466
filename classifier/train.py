"""One training run, tracked in MLflow from the first epoch to the registered model.

The run logs the flattened config as params, train/validation loss and accuracy and the epoch
time per epoch (``step`` = epoch number, from 1), then restores the weights of the best
validation epoch, calibrates and evaluates (:mod:`classifier.finish`): test loss, accuracy,
precision, recall, F1, ROC-AUC and ECE. Artefacts: ``config.yaml``, ``vocabulary.txt``,
``training_curves.png``, ``confusion_matrix.png``, ``reliability_diagram.png``, ``model.keras``
(raw strings in), its LiteRT ``bundle/`` and the pyfunc model ``model``, registered under
``train.registered_model`` with the alias ``newest``.

After every epoch a checkpoint (model with optimizer state, best weights, progress) is logged
under ``checkpoint/``, then the epoch's metrics: one unit that no stop signal splits (Ctrl-C,
SIGTERM and SIGHUP wait for it). A stop marks the run KILLED and a crash marks it FAILED; both
keep the checkpoint, and ``train(..., resume=run_id)`` continues from it, logging any metric
of a checkpointed epoch that a hard kill (SIGKILL) kept from the store. A run whose loss
becomes NaN or infinite stops, is marked FAILED and registers nothing. With ``model.init_from`` the
``encoder`` variant starts from a pretrained encoder and its vocabulary
(:mod:`classifier.encoder_artifact`); the run is tagged with the pretraining run. While a run trains, a
heartbeat (:mod:`classifier.leases`) tells other processes it is live: they cannot resume it.
With ``train.mixed_precision`` the models train in float16 (:mod:`classifier.precision`) and the
one saved is float32; the run is tagged with the device (``CPU``, ``GPU``) that trained it.

Example (with the data at hand)::

    result = train(load_config("configs/smoke.yaml"))
    result.test_metrics["test_accuracy"]  # 0.78
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import keras
import mlflow
import tensorflow as tf
import yaml

from classifier.config import Config
from classifier.data import (
    ReviewVectorizer,
    build_vectorizer,
    load_raw_splits,
    make_datasets,
    resumed_seed,
)
from classifier.encoder_artifact import pretrained_encoder
from classifier.errors import TrainingDiverged
from classifier.finish import finish_run
from classifier.imdb_source import data_source
from classifier.interrupts import deferred_interrupt
from classifier.leases import Heartbeat, claimed
from classifier.models.classifier import build_classifier
from classifier.precision import as_float32, device_note, precision_policy, training_device
from classifier.refit import ChosenConfidence, new_model, refit
from classifier.resume import (
    PROGRESS_FILE,
    load_resume_state,
    log_checkpoint,
    log_missing_metrics,
)
from classifier.tracking import CONFIG_HASH_TAG, configure_tracking, ensure_experiment, git_commit

CHECKPOINT_DIR = "checkpoint"


class TrainingInterrupted(Exception):
    """Training was stopped (Ctrl-C, SIGTERM, SIGHUP); the run is KILLED, its checkpoint kept."""

    def __init__(self, run_id: str, epochs_done: int = 1, command: str = "train"):
        kept = (
            "its last checkpoint is kept"
            if epochs_done
            else "no epoch had ended, so it starts from the beginning"
        )
        super().__init__(
            f"interrupted: run {run_id} marked KILLED, {kept}; "
            f"continue with: classify {command} --resume {run_id}"
        )
        self.run_id = run_id


@dataclass
class TrainResult:
    """What a finished run produced."""

    run_id: str
    test_metrics: dict[str, float]
    best_epoch: int
    epochs_run: int
    model_version: str
    history: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class Progress:
    """Where training stands; saved with every checkpoint."""

    epoch: int = 0  # completed epochs
    best_epoch: int = 0
    best_val_accuracy: float = -1.0
    history: dict[str, list[float]] = field(default_factory=dict)


def train(
    cfg: Config | None = None,
    resume: str | None = None,
    echo: Callable[[str], None] = print,
    tags: dict[str, str] | None = None,
    run_id: str | None = None,
) -> TrainResult:
    """Train, evaluate, log and register one model.

    Started while another MLflow run is active (a sweep's parent run), the run is its child.

    Args:
        cfg: the resolved config (ignored when resuming: the run's own config is used).
        resume: id of a KILLED or FAILED run (or a RUNNING one whose process died) to continue
            from its last checkpoint.
        echo: where progress lines go.
        tags: extra MLflow tags for a new run (a sweep tags its children).
        run_id: an empty run made for this training (a sweep claims its points so), instead
            of a new one.

    Raises:
        TrainingInterrupted: on Ctrl-C, SIGTERM or SIGHUP (the run is marked KILLED).
        RunBusy: ``resume`` names a run that another live process trains or resumes.
        TrainingDiverged: the loss became NaN or infinite (the run is marked FAILED).
    """
    configure_tracking()
    quiet_libraries()
    held = claimed(resume) if resume else contextlib.nullcontext()
    with tempfile.TemporaryDirectory(prefix="classify-train-") as folder, held:
        return _train(cfg, resume, echo, tags, run_id, Path(folder))


def _train(cfg, resume, echo, tags, run_id, workdir: Path) -> TrainResult:
    if resume:
        cfg, checkpoint = load_resume_state(resume, workdir, CHECKPOINT_DIR)
    elif cfg is None:
        raise ValueError("train() needs a config or a run to resume")
    else:
        checkpoint = None
    with precision_policy(cfg.train.mixed_precision):  # the models built for training
        return _train_from(cfg, checkpoint, resume, echo, tags, run_id, workdir)


def _train_from(cfg, checkpoint, resume, echo, tags, run_id, workdir: Path) -> TrainResult:
    keras.utils.set_random_seed(cfg.train.seed)
    tf.config.experimental.enable_op_determinism()

    raw = load_raw_splits(cfg.data)
    # model.init_from: a pretrained encoder's weights and vocabulary (a resumed run has them in
    # its checkpoint; only a refit starts from the encoder again).
    encoder = pretrained_encoder(cfg) if not checkpoint or cfg.train.refit else None
    if checkpoint:
        vocabulary = (checkpoint / "vocabulary.txt").read_text().split("\n")[2:]
        vectorizer = ReviewVectorizer(
            cfg.data.vocab_size, cfg.data.sequence_length, cfg.data.truncate, vocabulary
        )
    elif encoder:
        vectorizer = encoder.vectorizer(cfg.data)
    else:
        vectorizer = build_vectorizer(cfg.data, raw.train)
    progress = (
        Progress(**json.loads((checkpoint / PROGRESS_FILE).read_text()))
        if checkpoint
        else Progress()
    )
    seed = resumed_seed(cfg.train.seed, progress.epoch)  # not epoch 1's order again
    data = make_datasets(cfg.data, raw, vectorizer, seed=seed)
    sizes = {name: int(split.cardinality()) for name, split in vars(raw).items()}

    if checkpoint:
        model = keras.models.load_model(checkpoint / "last.keras", safe_mode=True)
        best_weights = checkpoint / "best.weights.h5"
    else:
        model = new_model(cfg, data.train, encoder)
        best_weights = None

    ensure_experiment(cfg.experiment)
    run_name = f"{cfg.model.variant}-seed{cfg.train.seed}"
    nested = mlflow.active_run() is not None
    existing = resume or run_id
    new_run = {} if existing else {"run_name": run_name, "tags": tags}
    with (
        mlflow.start_run(run_id=existing, nested=nested, **new_run) as run,
        Heartbeat(run.info.run_id),
    ):
        run_id = run.info.run_id
        try:
            if resume:
                log_missing_metrics(run_id, progress.history)
            else:
                _log_run_inputs(cfg, model, sizes, vectorizer)
                if encoder:
                    encoder.log_lineage()
            echo(
                f"run {run_id}: {cfg.model.variant}, {model.count_params():,} parameters, "
                f"{sizes['train']:,} training / {sizes['validation']:,} validation reviews"
                + (f", resuming after epoch {progress.epoch}" if resume else "")
                + device_note(cfg.train.mixed_precision)
            )
            callback = EpochTracker(cfg, progress, vectorizer, workdir, echo, best_weights)
            model.fit(
                data.train,
                validation_data=data.validation,
                epochs=cfg.train.epochs,
                initial_epoch=progress.epoch,
                callbacks=[callback],
                shuffle=False,  # the training pipeline shuffles, seeded
                verbose=0,
            )
            callback.restore_best(model)
            chosen = calibration = None
            if cfg.train.refit:  # the chosen model's calibrated confidence, carried over
                chosen = ChosenConfidence.of(cfg, model, vectorizer, data.validation, echo)
                model, vectorizer, data = refit(
                    cfg, raw, progress.best_epoch, progress.history, echo, encoder
                )
            with precision_policy(False):  # what is evaluated and saved computes in float32
                shape = (cfg.data.vocab_size, cfg.data.sequence_length)
                model = as_float32(model, lambda: build_classifier(cfg.model, *shape))
                if chosen:
                    calibration = chosen.calibration_for(model, vectorizer, echo)
                result = _evaluate_and_log(
                    cfg, model, vectorizer, data, progress, workdir, run_id, calibration
                )
        except KeyboardInterrupt:
            mlflow.end_run(status="KILLED")
            raise TrainingInterrupted(run_id, progress.epoch) from None
    m = result.test_metrics
    echo(
        f"test accuracy {m['test_accuracy']:.4f}  F1 {m['test_f1']:.4f}  "
        f"ROC-AUC {m['test_roc_auc']:.4f}  ECE {m['test_ece']:.4f}  (best epoch {result.best_epoch} of "
        f"{result.epochs_run}) - run {run_id}, model {cfg.train.registered_model} "
        f"v{result.model_version}"
    )
    return result


def quiet_libraries() -> None:
    """Silence library chatter that says nothing to a user of this tool."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    # Keras warns when an epoch ends exactly at the end of a finite tf.data pipeline.
    warnings.filterwarnings("ignore", message="Your input ran out of data")


class EpochTracker(keras.callbacks.Callback):
    """Per epoch: a progress line, MLflow metrics, best-weights tracking, early stopping and a
    checkpoint logged to the run's ``checkpoint/`` artefacts."""

    def __init__(self, cfg, progress, vectorizer, workdir, echo, best_weights=None):
        super().__init__()
        self.cfg = cfg
        self.progress = progress
        self.echo = echo
        self.dir = workdir / CHECKPOINT_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "vocabulary.txt").write_text("\n".join(vectorizer.get_vocabulary()))
        self.best_path = self.dir / "best.weights.h5"
        if best_weights is not None and Path(best_weights) != self.best_path:
            self.best_path.write_bytes(Path(best_weights).read_bytes())
        self._started = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self._started
        number = epoch + 1
        metrics = {
            "train_loss": float(logs["loss"]),
            "train_accuracy": float(logs["accuracy"]),
            "val_loss": float(logs["val_loss"]),
            "val_accuracy": float(logs["val_accuracy"]),
            "epoch_time_s": seconds,
        }
        TrainingDiverged.check(metrics, number)
        with deferred_interrupt():  # a stop signal waits until checkpoint and metrics are whole
            progress = self.progress
            for name, value in metrics.items():
                progress.history.setdefault(name, []).append(value)
            improved = metrics["val_accuracy"] > progress.best_val_accuracy
            if improved:
                progress.best_val_accuracy, progress.best_epoch = metrics["val_accuracy"], number
                self.model.save_weights(self.best_path)
            progress.epoch = number
            self.echo(
                f"epoch {number:>2}/{self.cfg.train.epochs}  loss {metrics['train_loss']:.4f}  "
                f"acc {metrics['train_accuracy']:.4f}  val_loss {metrics['val_loss']:.4f}  "
                f"val_acc {metrics['val_accuracy']:.4f}  {seconds:.1f}s"
                + ("  *" if improved else "")
            )
            self.model.save(self.dir / "last.keras")
            (self.dir / PROGRESS_FILE).write_text(json.dumps(vars(progress)))
            log_checkpoint(self.dir, CHECKPOINT_DIR)
            mlflow.log_metrics(metrics, step=number)
        patience = self.cfg.train.early_stopping_patience
        if patience is not None and number - progress.best_epoch >= patience:
            epochs = f"{patience} epoch{'s' if patience > 1 else ''}"
            self.echo(f"early stopping: no better validation accuracy for {epochs}")
            self.model.stop_training = True

    def restore_best(self, model: keras.Model) -> None:
        """Load the weights of the best validation epoch into ``model``."""
        if self.best_path.is_file():
            model.load_weights(self.best_path)


def _log_run_inputs(cfg: Config, model: keras.Model, sizes: dict[str, int], vectorizer) -> None:
    mlflow.log_params(cfg.flat())
    mlflow.log_params(data_source(cfg.data))  # where the reviews were read, whatever the config
    mlflow.log_params({f"data.{name}_reviews": size for name, size in sizes.items()})
    mlflow.log_param("model.parameters", model.count_params())
    mlflow.set_tags(
        {
            "variant": cfg.model.variant,
            "git_commit": git_commit(),
            CONFIG_HASH_TAG: cfg.config_hash(),
            "device": training_device(),
        }
    )
    mlflow.log_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False), "config.yaml")
    mlflow.log_text("\n".join(vectorizer.get_vocabulary()), "vocabulary.txt")


def _evaluate_and_log(
    cfg, model, vectorizer, data, progress, workdir, run_id, calibration
) -> TrainResult:
    metrics, version = finish_run(cfg, model, vectorizer, data, progress, workdir, calibration)
    return TrainResult(
        run_id=run_id,
        test_metrics=metrics,
        best_epoch=progress.best_epoch,
        epochs_run=progress.epoch,
        model_version=str(version.version),
        history=progress.history,
    )
