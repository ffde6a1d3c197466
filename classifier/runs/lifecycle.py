"""The lifecycle every tracked run shares, ``classify train`` and ``classify pretrain`` alike.

- :func:`run_workspace`: the tracking store configured, library chatter silenced, a resumed run
  claimed (no second process may resume it) and a scratch folder for the run's files.
- :func:`resume_state`: a resumed run's own config and its last checkpoint.
- :func:`tracked_run`: the MLflow run started (or reopened) with its heartbeat; a new run logs its
  inputs, a resumed one the metrics a hard kill kept from the store; a stop signal (Ctrl-C,
  SIGTERM, SIGHUP) marks it KILLED and raises :class:`TrainingInterrupted`.
- :func:`built_for_fit`: a compiled model's optimizer and metrics built before ``fit``, so
  that its training step is traced once.
- :class:`CheckpointCallback`: times each epoch and logs its checkpoint, then its metrics, as one
  unit that no stop signal splits.

Example (the skeleton of a run; ``train`` and ``pretrain`` fill it in)::

    with run_workspace("train", resume) as workdir:
        cfg, checkpoint = resume_state(cfg, resume, workdir)
        ...  # data, vectorizer, model, progress
        with tracked_run(cfg.experiment, "attention-seed1", progress, log_inputs, resume) as run_id:
            model.fit(data.train, callbacks=[tracker])  # tracker: a CheckpointCallback
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import keras
import mlflow
import yaml

from classifier.config.schema import Config
from classifier.config.variants import used_params
from classifier.data.imdb import data_source
from classifier.runs.leases import Heartbeat, claimed, drop_heartbeat
from classifier.runs.outages import watch_mlflow
from classifier.runs.precision import training_device
from classifier.runs.resume import (
    PROGRESS_FILE,
    load_resume_state,
    log_checkpoint,
    log_missing_metrics,
)
from classifier.runs.tracking import (
    CONFIG_HASH_TAG,
    configure_tracking,
    ensure_experiment,
    git_commit,
)

CHECKPOINT_DIR = "checkpoint"  # the run's artefact folder holding its last checkpoint


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
class Progress:
    """Where a run stands: the completed epochs and each metric per epoch; saved with every
    checkpoint (a run adds its own fields)."""

    epoch: int = 0  # completed epochs
    history: dict[str, list[float]] = field(default_factory=dict)


def quiet_libraries() -> None:
    """Silence library chatter that says nothing to a user of this tool."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    # A server's runs end with MLflow's "View run ... at: URL" lines on stdout.
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    # Keras warns when an epoch ends exactly at the end of a finite tf.data pipeline.
    warnings.filterwarnings("ignore", message="Your input ran out of data")
    tensorflow = logging.getLogger("tensorflow")
    if os.environ.get("CLASSIFY_VERBOSE") != "1" and _not_retracing not in tensorflow.filters:
        tensorflow.addFilter(_not_retracing)


def _not_retracing(record: logging.LogRecord) -> bool:
    """False for TensorFlow's "N out of the last M calls to <function ...> triggered
    tf.function retracing" warning. TensorFlow counts tracings by a function's code over every
    model: Keras' training step is one function per model, so a process that trains model
    after model on small data (a sweep worker's points, an epoch of one or two steps) met it
    although each model's step was traced once. ``classify -v`` shows it."""
    return "triggered tf.function retracing" not in record.getMessage()


def built_for_fit(model: keras.Model, train) -> keras.Model:
    """The compiled ``model`` with its optimizer's and compiled metrics' variables created from
    the shapes of the batches of ``train`` (a ``tf.data.Dataset``), as Keras does before ``fit``
    under a distribution strategy (``Model._symbolic_build``, private but unchanged across Keras
    3). Without one, Keras creates them inside the first training step's trace, and TensorFlow
    then traces the step a second time (a ``tf.function`` that created variables is traced
    again): 0.9 s of an encoder's fixture run on 2 cores.

    Example::

        built_for_fit(model, data.train).fit(data.train)  # the step traced once
    """
    model._symbolic_build(data_batch=train.element_spec)
    return model


@contextlib.contextmanager
def run_workspace(
    command: str, resume: str | None, echo: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """Configure tracking, claim ``resume`` (raising ``RunBusy`` where another live process
    holds it) and yield a scratch folder that is removed afterwards. With a tracking server,
    its outages are one line each on ``echo`` (:func:`~classifier.runs.outages.watch_mlflow`)."""
    uri = configure_tracking()
    quiet_libraries()
    if echo is not None:
        watch_mlflow(uri, echo)
    held = claimed(resume) if resume else contextlib.nullcontext()
    with tempfile.TemporaryDirectory(prefix=f"classify-{command}-") as folder, held:
        yield Path(folder)


def resume_state(
    cfg: Config | None, resume: str | None, workdir: Path, pretraining: bool = False
) -> tuple[Config, Path | None]:
    """The config to run and the checkpoint folder to start from: ``cfg`` and None for a new
    run; the resumed run's own config and last checkpoint (None when no epoch had ended)."""
    if resume:
        return load_resume_state(resume, workdir, CHECKPOINT_DIR, pretraining=pretraining)
    if cfg is None:
        raise ValueError("a run needs a config or a run to resume")
    return cfg, None


@contextlib.contextmanager
def tracked_run(
    experiment: str,
    run_name: str,
    progress: Progress,
    log_inputs: Callable[[], None],
    resume: str | None = None,
    run_id: str | None = None,
    tags: dict[str, str] | None = None,
    interrupted: Callable[[str, int], Exception] = TrainingInterrupted,
) -> Iterator[str]:
    """Start the run (``resume`` or ``run_id`` reopen one; inside an active run it is a child)
    with its heartbeat and yield its id. A new run calls ``log_inputs``; a resumed one logs the
    metrics of checkpointed epochs that the store lacks. A stop signal inside marks the run
    KILLED and raises ``interrupted(run_id, progress.epoch)``. Once the run has ended its
    ``heartbeat`` tag is removed (a SIGKILLed process leaves it, stale, as its trace)."""
    ensure_experiment(experiment)
    nested = mlflow.active_run() is not None
    existing = resume or run_id
    new_run = {} if existing else {"run_name": run_name, "tags": tags}
    try:
        with (
            mlflow.start_run(run_id=existing, nested=nested, **new_run) as run,
            Heartbeat(run.info.run_id),
        ):
            run_id = run.info.run_id
            try:
                if resume:
                    log_missing_metrics(run_id, progress.history)
                else:
                    log_inputs()
                yield run_id
            except KeyboardInterrupt:
                mlflow.end_run(status="KILLED")
                raise interrupted(run_id, progress.epoch) from None
    finally:  # the run has ended (FINISHED, FAILED, KILLED): its heartbeat is no lease now
        if run_id:
            drop_heartbeat(run_id)


def log_run_inputs(
    cfg: Config,
    vectorizer,
    params: dict[str, object],
    tags: dict[str, str],
    pretraining: bool = False,
) -> None:
    """What every new run records first: the whole config as ``config.yaml`` (first, so that a
    run killed after it can be resumed), the config keys the run uses
    (:func:`~classifier.config.variants.used_params`) and where the reviews were read as params,
    plus ``params``; the git commit, config hash and device as tags, plus ``tags``; and
    ``vocabulary.txt``."""
    mlflow.log_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False), "config.yaml")
    mlflow.log_params(used_params(cfg.flat(), pretraining))
    mlflow.log_params(data_source(cfg.data))  # where the reviews were read, whatever the config
    mlflow.log_params(params)
    mlflow.set_tags(
        {
            **tags,
            "git_commit": git_commit(),
            CONFIG_HASH_TAG: cfg.config_hash(),
            "device": training_device(),
        }
    )
    mlflow.log_text("\n".join(vectorizer.get_vocabulary()), "vocabulary.txt")


class CheckpointCallback(keras.callbacks.Callback):
    """The part of an epoch's end that every run shares. A subclass's ``on_epoch_end`` builds
    the epoch's metrics, then inside ``deferred_interrupt()`` calls :meth:`record` and
    :meth:`checkpoint`, so that a stop signal waits until checkpoint and metrics are whole.

    The checkpoint folder holds ``vocabulary.txt``, ``last.keras`` (model and optimizer state)
    and ``progress.json``, plus what a subclass writes there (best weights); it is logged into
    one of two slots with its manifest last (:func:`~classifier.runs.resume.log_checkpoint`).
    ``saved`` is the model that a checkpoint saves, where ``model.fit`` trains a view of it
    (:mod:`classifier.training.ngram_features`); by default the model being fit.
    """

    def __init__(
        self,
        progress: Progress,
        vectorizer,
        workdir: Path,
        echo: Callable[[str], None],
        saved: keras.Model | None = None,
    ):
        super().__init__()
        self.progress, self.echo, self._saved = progress, echo, saved
        self.dir = workdir / CHECKPOINT_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        vocabulary = "\n".join(vectorizer.get_vocabulary())
        (self.dir / "vocabulary.txt").write_bytes(vocabulary.encode("utf-8"))
        self._started = 0.0

    @property
    def saved(self) -> keras.Model:
        """The model a checkpoint saves."""
        return self._saved if self._saved is not None else self.model

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()

    def seconds(self) -> float:
        """Seconds since this epoch began."""
        return time.perf_counter() - self._started

    def record(self, metrics: dict[str, float], number: int) -> None:
        """Append the epoch's metrics to the history; ``number`` epochs are now complete."""
        for name, value in metrics.items():
            self.progress.history.setdefault(name, []).append(value)
        self.progress.epoch = number

    def checkpoint(self, metrics: dict[str, float], number: int) -> None:
        """Save and log the checkpoint, then log the epoch's metrics (step = ``number``)."""
        self.saved.save(self.dir / "last.keras")
        (self.dir / PROGRESS_FILE).write_text(json.dumps(vars(self.progress)))
        log_checkpoint(self.dir, CHECKPOINT_DIR, number)
        mlflow.log_metrics(metrics, step=number)
