"""One training run, tracked in MLflow from the first epoch to the registered model.

The run logs the flattened config as params, train/validation loss and accuracy and the epoch
time per epoch (``step`` = epoch number, from 1), then restores the weights of the best
validation epoch, calibrates and evaluates (:mod:`classifier.training.finish`): test loss, accuracy,
precision, recall, F1, ROC-AUC and ECE. Artefacts: ``config.yaml``, ``vocabulary.txt``,
``training_curves.png``, ``confusion_matrix.png``, ``reliability_diagram.png``, ``model.keras``
(raw strings in), its LiteRT ``bundle/`` and the pyfunc model ``model``, registered under
``train.registered_model`` with the alias ``newest``.

After every epoch a checkpoint (model with optimizer state, best weights, progress) is logged
under ``checkpoint/``, then the epoch's metrics: one unit that no stop signal splits (Ctrl-C,
SIGTERM and SIGHUP wait for it). A stop marks the run KILLED and a crash marks it FAILED; both
keep the checkpoint, and ``train(..., resume=run_id)`` continues from it, logging any metric
of a checkpointed epoch that a hard kill (SIGKILL) kept from the store. A run that finishes
deletes it (nothing resumes a finished run) unless ``train.keep_checkpoint``. A run whose loss
becomes NaN or infinite stops, is marked FAILED and registers nothing. With ``model.init_from`` the
``encoder`` variant starts from a pretrained encoder and its vocabulary
(:mod:`classifier.pretraining.encoder_artifact`); the run is tagged with the pretraining run. While a run trains, a
heartbeat (:mod:`classifier.runs.leases`) tells other processes it is live: they cannot resume it.
With ``train.mixed_precision`` the models train in float16 (:mod:`classifier.runs.precision`) and the
one saved is float32; the run is tagged with the device (``CPU``, ``GPU``) that trained it.

Example (with the data at hand)::

    result = train(load_config("configs/smoke.yaml"))
    result.test_metrics["test_accuracy"]  # 0.78
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from classifier.config.schema import Config
from classifier.data.pipeline import (
    Datasets,
    RawSplits,
    ReviewVectorizer,
    build_vectorizer,
    load_raw_splits,
    make_datasets,
    resumed_seed,
)
from classifier.errors import TrainingDiverged
from classifier.models.classifier import build_classifier
from classifier.runs.datasets import log_datasets, run_datasets
from classifier.runs.interrupts import deferred_interrupt
from classifier.runs.lifecycle import (
    CHECKPOINT_DIR,
    CheckpointCallback,
    Progress,
    log_run_inputs,
    resume_state,
    run_workspace,
    tracked_run,
)
from classifier.runs.live import batch_progress, status
from classifier.runs.precision import as_float32, device_note, precision_policy
from classifier.runs.resume import PROGRESS_FILE, drop_checkpoint
from classifier.training.build import new_model
from classifier.training.finish import TrainedRun, finish_run
from classifier.training.ngram_features import fit_inputs
from classifier.training.refit import ChosenConfidence, refit
from classifier.training.transfer import starting_point


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
class TrainingProgress(Progress):
    """Where training stands, with the best validation epoch so far; saved with every
    checkpoint."""

    best_epoch: int = 0
    best_val_accuracy: float = -1.0


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
    with run_workspace("train", resume, echo) as workdir:
        cfg, checkpoint = resume_state(cfg, resume, workdir)
        with precision_policy(cfg.train.mixed_precision):  # the models built for training
            run = _start(cfg, checkpoint, workdir, echo)
            return _train(run, resume, tags, run_id)


@dataclass
class RunState:
    """One training run as it goes: its config and folder, its splits (texts and batches), the
    vectorizer, the model, where training stands, and the pretrained encoder it started from."""

    cfg: Config
    workdir: Path
    echo: Callable[[str], None]
    raw: RawSplits
    vectorizer: ReviewVectorizer
    progress: TrainingProgress
    seed: int  # of the training batches' order (a resumed run's own)
    data: Datasets
    model: keras.Model
    encoder: Any = None  # model.init_from's encoder, where the run starts from one
    best_weights: Path | None = None  # a resumed run's best epoch so far

    @property
    def sizes(self) -> dict[str, int]:
        splits = {"train": self.raw.train, "validation": self.raw.validation}
        return {
            name: int(split.cardinality())
            for name, split in {**splits, "test": self.raw.test}.items()
        }


def _start(cfg: Config, checkpoint: Path | None, workdir: Path, echo) -> RunState:
    """Seeds, data, vectorizer and model: fresh, or a checkpoint's (with its optimizer state).
    model.init_from: a pretrained encoder's weights and vocabulary (a resumed run has them in
    its checkpoint; only a refit starts from the encoder again)."""
    keras.utils.set_random_seed(cfg.train.seed)
    tf.config.experimental.enable_op_determinism()
    status(echo, "loading the reviews")
    raw = load_raw_splits(cfg.data)
    encoder = starting_point(cfg) if not checkpoint or cfg.train.refit else None
    if checkpoint:
        vocabulary = (checkpoint / "vocabulary.txt").read_text().split("\n")[2:]
        vectorizer = ReviewVectorizer.for_data(cfg.data, vocabulary)
    elif encoder:
        vectorizer = encoder.vectorizer(cfg.data)
    else:
        status(echo, "building the vocabulary")
        vectorizer = build_vectorizer(cfg.data, raw.train)
    progress = (
        TrainingProgress(**json.loads((checkpoint / PROGRESS_FILE).read_text()))
        if checkpoint
        else TrainingProgress()
    )
    seed = resumed_seed(cfg.train.seed, progress.epoch)  # not epoch 1's order again
    data = make_datasets(cfg.data, raw, vectorizer, seed=seed)
    if checkpoint:
        model = keras.models.load_model(checkpoint / "last.keras", safe_mode=True)
        best_weights = checkpoint / "best.weights.h5"
    else:
        status(echo, "building the model")
        model = new_model(cfg, data.train, encoder, len(raw.labels), vectorizer.get_vocabulary())
        best_weights = None
    return RunState(
        cfg, workdir, echo, raw, vectorizer, progress, seed, data, model, encoder, best_weights
    )


def _train(run: RunState, resume: str | None, tags, run_id: str | None) -> TrainResult:
    """Fit under a tracked MLflow run, then refit where configured and finish the run."""
    cfg, echo = run.cfg, run.echo
    with tracked_run(
        cfg.experiment, f"{cfg.model.variant}-seed{cfg.train.seed}", run.progress,
        lambda: _log_inputs(run), resume, run_id, tags,
    ) as run_id:  # fmt: skip
        sizes = run.sizes
        echo(
            f"run {run_id}: {cfg.model.variant}, {run.model.count_params():,} parameters, "
            f"{sizes['train']:,} training / {sizes['validation']:,} validation reviews"
            + (f", resuming after epoch {run.progress.epoch}" if resume else "")
            + device_note(cfg.train.mixed_precision)
        )
        _fit(run)
        result = _finish(run, run_id)
    if not cfg.train.keep_checkpoint and (kept := drop_checkpoint(run_id, CHECKPOINT_DIR)):
        echo(f"the finished run's checkpoint stays in its artefacts: {kept}")
    echo(_summary(cfg, result, len(run.raw.labels), run_id))
    return result


def _log_inputs(run: RunState) -> None:
    status(run.echo, "logging the run's inputs to MLflow")
    params = {f"data.{name}_reviews": size for name, size in run.sizes.items()}
    params["model.parameters"] = run.model.count_params()
    params["data.class_names"] = json.dumps(run.raw.labels, ensure_ascii=False)
    log_run_inputs(run.cfg, run.vectorizer, params, {"variant": run.cfg.model.variant})
    log_datasets(run_datasets(run.cfg.data))
    if run.encoder:
        run.encoder.log_lineage()


def _fit(run: RunState) -> None:
    """Fit, choosing the epoch on the validation reviews; the best epoch's weights stay."""
    cfg = run.cfg
    callback = EpochTracker(
        cfg, run.progress, run.vectorizer, run.workdir, run.echo, run.best_weights, run.model
    )
    epoch_bar = batch_progress(
        run.echo, "epoch", cfg.train.epochs, run.sizes["train"], cfg.data.batch_size
    )
    trainer, train_batches, validation_batches = fit_inputs(
        run.model, run.data.train, run.data.validation, cfg.data, run.seed, cfg.train.lazy_adam
    )
    trainer.fit(
        train_batches,
        validation_data=validation_batches,
        epochs=cfg.train.epochs,
        initial_epoch=run.progress.epoch,
        callbacks=[*epoch_bar, callback],
        shuffle=False,  # the training pipeline shuffles, seeded
        verbose=0,
    )
    callback.restore_best(run.model)


def _finish(run: RunState, run_id: str) -> TrainResult:
    """Refit on all labelled reviews where configured, then calibrate, evaluate, save and
    register (in float32)."""
    cfg, model, vectorizer, data = run.cfg, run.model, run.vectorizer, run.data
    chosen = calibration = None
    if cfg.train.refit:  # the chosen model's calibrated confidence, carried over
        chosen = ChosenConfidence.of(cfg, model, vectorizer, data.validation, run.echo)
        model, vectorizer, data = refit(
            cfg, run.raw, run.progress.best_epoch, run.progress.history, run.echo, run.encoder
        )
    with precision_policy(False):  # what is evaluated and saved computes in float32
        shape = (cfg.data.vocab_size, cfg.data.sequence_length, len(run.raw.labels))
        model = as_float32(model, lambda: build_classifier(cfg.model, *shape))
        if chosen:
            calibration = chosen.calibration_for(model, vectorizer, run.echo)
        trained = TrainedRun(
            cfg, model, vectorizer, data, run.progress, run.workdir, run.raw.labels, run.echo
        )
        return _evaluate_and_log(trained, run_id, calibration)


def _summary(cfg: Config, result: TrainResult, classes: int, run_id: str) -> str:
    """The run's last line: test scores, best epoch, run and registered version."""
    m = result.test_metrics
    scores = (
        f"F1 {m['test_f1']:.4f}  ROC-AUC {m['test_roc_auc']:.4f}"
        if classes == 2
        else f"macro-F1 {m['test_macro_f1']:.4f}"
    )
    return (
        f"test accuracy {m['test_accuracy']:.4f}  {scores}  "
        f"ECE {m['test_ece']:.4f}  (best epoch {result.best_epoch} of "
        f"{result.epochs_run}) - run {run_id}, model {cfg.train.registered_model} "
        f"v{result.model_version}"
    )


class EpochTracker(CheckpointCallback):
    """Per epoch: a progress line, MLflow metrics, best-weights tracking, early stopping and a
    checkpoint logged to the run's ``checkpoint/`` artefacts."""

    def __init__(self, cfg, progress, vectorizer, workdir, echo, best_weights=None, saved=None):
        super().__init__(progress, vectorizer, workdir, echo, saved)
        self.cfg = cfg
        self.best_path = self.dir / "best.weights.h5"
        if best_weights is not None and Path(best_weights) != self.best_path:
            self.best_path.write_bytes(Path(best_weights).read_bytes())

    def on_epoch_end(self, epoch, logs=None):
        seconds = self.seconds()
        number = epoch + 1
        metrics = {
            "train_loss": float(logs["loss"]),
            "train_accuracy": float(logs["accuracy"]),
            "val_loss": float(logs["val_loss"]),
            "val_accuracy": float(logs["val_accuracy"]),
            "epoch_time_s": seconds,
        }
        TrainingDiverged.check(metrics, number)
        progress = self.progress
        with deferred_interrupt():  # a stop signal waits until checkpoint and metrics are whole
            margin = self.cfg.train.early_stopping_min_delta
            improved = metrics["val_accuracy"] > progress.best_val_accuracy + margin
            self.record(metrics, number)
            if improved:
                progress.best_val_accuracy, progress.best_epoch = metrics["val_accuracy"], number
                self.saved.save_weights(self.best_path)
            self.echo(
                f"epoch {number:>2}/{self.cfg.train.epochs}  loss {metrics['train_loss']:.4f}  "
                f"acc {metrics['train_accuracy']:.4f}  val_loss {metrics['val_loss']:.4f}  "
                f"val_acc {metrics['val_accuracy']:.4f}  {seconds:.1f}s"
                + ("  *" if improved else "")
            )
            self.checkpoint(metrics, number)
        patience = self.cfg.train.early_stopping_patience
        if patience is not None and number - progress.best_epoch >= patience:
            epochs = f"{patience} epoch{'s' if patience > 1 else ''}"
            margin = self.cfg.train.early_stopping_min_delta
            better = (
                f"validation accuracy better by more than {margin:g}"
                if margin
                else "better validation accuracy"
            )
            self.echo(f"early stopping: no {better} for {epochs}")
            self.model.stop_training = True

    def restore_best(self, model: keras.Model) -> None:
        """Load the weights of the best validation epoch into ``model``."""
        if self.best_path.is_file():
            model.load_weights(self.best_path)


def _evaluate_and_log(run: TrainedRun, run_id: str, calibration=None) -> TrainResult:
    metrics, version = finish_run(run, calibration)
    return TrainResult(
        run_id=run_id,
        test_metrics=metrics,
        best_epoch=run.progress.best_epoch,
        epochs_run=run.progress.epoch,
        model_version=str(version.version),
        history=run.progress.history,
    )
