"""Options and helpers shared by the ``classify`` commands (:mod:`classifier.cli.main`): the group
that turns a :class:`~classifier.errors.UserError` into one line, the config options, and the
``--resume`` handling of the commands that train. Imports nothing heavy.

Example:
    >>> bool(RUN_ID.fullmatch("3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d"))
    True
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

import click

from classifier.cli.startup import import_tensorflow, reach_store
from classifier.cli.terminal import guarded
from classifier.config.schema import Config, TrainConfig, load_config
from classifier.config.uris import model_uri
from classifier.errors import UserError

RUN_ID = re.compile("[0-9a-f]{32}")  # an MLflow run id
#: What ``make train`` trains and ships, and what ``classify train --data FILE`` trains without
#: ``--config`` (a checkout's file: ``make install`` installs the package from it).
SHIPPED_RECIPE = Path(__file__).resolve().parents[2] / "configs" / "train.yaml"
NOT_A_RUN_ID = "{!r} is not an MLflow run id (32 lowercase hex digits)"


class ClassifyGroup(click.Group):
    """A click group whose every ending is at most two lines on stderr and an exit code
    (:func:`classifier.cli.terminal.guarded`): a :class:`~classifier.errors.UserError` is one
    line and exit 2, a bug one line and exit 1 (its traceback under ``-v``)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        def command():
            return super(ClassifyGroup, self).main(
                args, prog_name, complete_var, standalone_mode=False, **extra
            )

        if not standalone_mode:  # a caller that handles the endings itself
            return command()
        sys.exit(guarded(command))


class FiniteRange(click.FloatRange):
    """A float option that is finite and within its range; ``nan`` and ``inf`` are usage errors
    naming the range (click's own ``FloatRange`` lets ``nan`` through: no comparison fails).

    Example:
        >>> PROBABILITY.convert("0.25", None, None)
        0.25
    """

    name = "finite float range"

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number in {self._describe_range()}", param, ctx)
        return super().convert(number, param, ctx)


#: A probability threshold: a float in [0, 1].
PROBABILITY = FiniteRange(0.0, 1.0)


def checked(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A usage error for an empty value (what a script passes for an unset variable)."""
    if value is not None and not value.strip():
        raise click.BadParameter("must not be empty")
    return value


def config_options(command: Callable) -> Callable:
    """``--config``, ``--set`` and ``--data-dir``: shared by every command that reads a config."""
    command = click.option(
        "--data-dir",
        type=click.Path(file_okay=False),
        callback=checked,
        help="TFDS data directory (default: $TFDS_DATA_DIR, else ~/tensorflow_datasets).",
    )(command)
    command = click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="KEY=VALUE",
        help="Override a config value, e.g. --set model.num_heads=4 (repeatable).",
    )(command)
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        callback=checked,
        help="YAML config (default: the built-in defaults, as in configs/default.yaml).",
    )(command)


def threshold_option(help_text: str) -> Callable:
    """``--threshold``: the probability of positive from which a two-class review is
    positive (predict and explain)."""
    return click.option(
        "--threshold",
        type=PROBABILITY,
        metavar="PROBABILITY",
        default=0.5,
        show_default=True,
        help=help_text,
    )


def batch_size_option(help_text: str) -> Callable:
    """``--batch-size``: texts per model call (predict and evaluate)."""
    return click.option(
        "--batch-size",
        metavar="COUNT",
        type=click.IntRange(min=1),
        default=64,
        show_default=True,
        help=help_text,
    )


def data_option(command: Callable) -> Callable:
    """``--data``: a labelled file or folder to use instead of IMDB (``data.source``)."""
    return click.option(
        "--data",
        "source",
        metavar="PATH",
        callback=checked,
        help="Your labelled texts instead of IMDB: a CSV, TSV, JSON Lines or Parquet file with "
        "'text' and 'label' columns, a folder with one sub-folder per class, a TFDS data set "
        "by name, tfds:NAME[:SPLIT], or a .txt of sentiment-treebank trees (data.source; --set "
        "data.text_field=... names other columns or features, data.label_map=... maps labels, "
        "data.phrases=true trains on a treebank's phrases).",
    )(command)


def resolve_config(
    config_path: str | None,
    overrides: tuple[str, ...],
    data_dir: str | None,
    source: str | None = None,
) -> Config:
    """Load the config, apply ``--set`` overrides, ``--data-dir`` and ``--data``; a labelled
    file or folder is checked (read once, without TensorFlow) before anything else starts."""
    config = load_config(config_path, overrides, {"data.source": source} if source else None)
    if data_dir:
        config.data.data_dir = data_dir
    if config.data.source is not None:
        from classifier.data.labelled import plan_splits
        from classifier.data.named import is_named

        if any(map(is_named, (config.data.source, config.data.validation, config.data.test))):
            from classifier.cli.startup import import_tensorflow

            import_tensorflow()  # TFDS reads a named data set: without TensorFlow's lines
        from classifier.cli import terminal
        from classifier.data.label_case import case_clash
        from classifier.data.labelled import ordered_by_class, shuffle_rows

        window = shuffle_rows(config.data.sequence_length)
        plan = plan_splits(config.data)
        for note in (ordered_by_class(plan, window), case_clash(plan.labels, config.data.source)):
            if note:
                terminal.err(f"classify: note: {note}")
    return config


def checked_model(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A ``--model`` value of a form the project serves (:func:`classifier.config.uris.model_uri`),
    checked before anything is imported."""
    value = checked(ctx, param, value)
    if value is not None:
        model_uri(value)
    return value


def model_option(command: Callable) -> Callable:
    """``--model``: a saved model, a run's LiteRT bundle or an MLflow model URI; shared by the
    commands that use a trained model (predict, explain, evaluate)."""
    return click.option(
        "--model",
        "model_spec",
        metavar="PATH|URI",
        callback=checked_model,
        help="A .keras file (or a folder holding one), a run's LiteRT bundle folder, or an MLflow "
        "URI: models:/NAME@ALIAS, models:/NAME/VERSION, models:/NAME@latest, runs:/RUN_ID. "
        "Default: the newest version of the registered imdb-sentiment in the tracking store "
        "($MLFLOW_TRACKING_URI, else mlflow.db in the project root).",
    )(command)


def resume_option(command: Callable) -> Callable:
    """``--resume RUN_ID``: shared by the commands that train (train, pretrain)."""
    return click.option(
        "--resume",
        metavar="RUN_ID",
        help="Continue a KILLED or FAILED run from its last checkpoint (uses the run's own "
        "config).",
    )(command)


def recipe_for_data(
    config_path: str | None, overrides: tuple[str, ...], source: str | None
) -> str | None:
    """The config of ``classify train --data FILE``: ``config_path`` where given; without it the
    shipped recipe (:data:`SHIPPED_RECIPE`), unless ``--set model.variant=...`` picks a variant,
    which trains on the built-in defaults as on IMDB.

    Example::

        recipe_for_data(None, (), "reviews.csv")  # '/.../configs/train.yaml'
        recipe_for_data(None, ("model.variant=mha",), "reviews.csv")  # None: the defaults
    """
    if config_path is not None or source is None or _sets(overrides, "model.variant"):
        return config_path
    if not SHIPPED_RECIPE.is_file():
        raise UserError(
            f"--data without --config trains the shipped recipe, {SHIPPED_RECIPE}, which this "
            "installation lacks; pass --config (or --set model.variant=...)"
        )
    return str(SHIPPED_RECIPE)


def drop_extra(cfg: Config, overrides: tuple[str, ...]) -> bool:
    """Leave out the shipped recipe's ``data.extra`` (the treebank's phrases, labelled as IMDB's
    classes) from a run on the user's own data, unless ``--set data.extra=...`` asks for it:
    whether there was one."""
    if cfg.data.extra is None or _sets(overrides, "data.extra"):
        return False
    cfg.data.extra = cfg.data.extra_label_map = None
    return True


def named_for_data(cfg: Config, overrides: tuple[str, ...], source: str) -> str | None:
    """Give a run of ``classify train --data SOURCE`` a registered name of its own when
    ``train.registered_model`` is left at IMDB's (``imdb-sentiment``, which ``classify predict``
    serves by default): :func:`model_name_for_data`. Returns the name given, or None."""
    default = cfg.train.registered_model == TrainConfig().registered_model
    if _sets(overrides, "train.registered_model") or not default:
        return None
    cfg.train.registered_model = model_name_for_data(source)
    return cfg.train.registered_model


def model_name_for_data(source: str) -> str:
    """The registered name of a model trained on ``source`` when none is set: the file's or
    folder's name (a TFDS data set's), and ``-classifier``.

    Example:
        >>> model_name_for_data("data/reviews.csv"), model_name_for_data("tfds:ag_news_subset")
        ('reviews-classifier', 'ag_news_subset-classifier')
        >>> model_name_for_data("my reviews/")  # a folder of class folders
        'my-reviews-classifier'
    """
    from classifier.data.named import is_named

    if is_named(source):
        name = source.split(":")[1]
    else:
        path = Path(source.rstrip("/"))
        name = path.stem if path.suffix else path.name
    return (re.sub(r"[\s/:?]+", "-", name).strip("-.") or "data") + "-classifier"


def _sets(overrides: tuple[str, ...], key: str) -> bool:
    """Whether a ``--set key=value`` among ``overrides`` sets ``key``."""
    return any(item.partition("=")[0].strip() == key for item in overrides)


def resumable_config(
    config_path: str | None,
    overrides: tuple[str, ...],
    data_dir: str | None,
    resume: str | None,
    source: str | None = None,
) -> Config | None:
    """The config of a new run, or None to resume ``resume`` with its own; then check the store,
    import TensorFlow and let SIGTERM and SIGHUP stop the run as Ctrl-C does."""
    if resume and (config_path or overrides or source):
        given = "--config, --set and --data" if source else "--config and --set"
        raise UserError(f"--resume continues with the run's own config; drop {given}")
    if resume is not None and not RUN_ID.fullmatch(resume):  # '': a script's unset variable
        raise click.BadParameter(NOT_A_RUN_ID.format(resume), param_hint="'--resume'")
    cfg = None if resume else resolve_config(config_path, overrides, data_dir, source)
    reach_store(absent=resume and f"no run {resume!r}")
    import_tensorflow()
    from classifier.runs.interrupts import stop_on_signals

    stop_on_signals()
    return cfg


def exit_130_when_interrupted(run: Callable[[], object]) -> None:
    """Call ``run``; a stopped run prints how to resume it and exits with code 130."""
    from classifier.runs.lifecycle import TrainingInterrupted

    try:
        run()
    except TrainingInterrupted as interrupted:
        click.echo(str(interrupted), err=True)
        sys.exit(130)
