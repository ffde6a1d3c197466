"""The ``classify`` command line: thin click commands that parse options and delegate.

Bad configs and missing data end in one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import click

from classifier.config import Config, ConfigError, load_config

#: Errors a user can fix; anything else is a bug and keeps its traceback.
USER_ERRORS: tuple[type[Exception], ...] = (ConfigError,)


class UserError(Exception):
    """A problem with the user's input, reported as one line with exit code 2."""


class ClassifyGroup(click.Group):
    """A click group that turns user errors into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (UserError, *USER_ERRORS, *_lazy_user_errors()) as error:
            click.echo(f"classify: error: {error}", err=True)
            ctx.exit(2)


def _lazy_user_errors() -> tuple[type[Exception], ...]:
    # Importing TensorFlow costs seconds; only look at modules that a command already imported.
    errors: tuple[type[Exception], ...] = ()
    if data := sys.modules.get("classifier.data"):
        errors += (data.DataNotFoundError,)
    if train := sys.modules.get("classifier.train"):
        errors += (train.ResumeError,)
    return errors


def config_options(command: Callable) -> Callable:
    """``--config``, ``--set`` and ``--data-dir``: shared by every command that reads a config."""
    command = click.option(
        "--data-dir",
        type=click.Path(file_okay=False),
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
        help="YAML config (default: the built-in defaults, as in configs/default.yaml).",
    )(command)


def resolve_config(
    config_path: str | None, overrides: tuple[str, ...], data_dir: str | None
) -> Config:
    """Load the config, apply ``--set`` overrides and ``--data-dir``."""
    config = load_config(config_path, overrides)
    if data_dir:
        config.data.data_dir = data_dir
    return config


@click.group(cls=ClassifyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="imdb-classifier")
def cli() -> None:
    """Train, compare and serve Transformer sentiment classifiers for IMDB reviews.

    \b
    Examples:
      classify data
      classify train --config configs/smoke.yaml
    """


@cli.command()
@config_options
def data(config_path: str | None, overrides: tuple[str, ...], data_dir: str | None) -> None:
    """Show the IMDB splits: sizes, label balance, review lengths and an example.

    \b
    Example:
      TFDS_DATA_DIR=../shared/tensorflow_datasets classify data
    """
    from classifier import data as imdb

    cfg = resolve_config(config_path, overrides, data_dir)
    click.echo(imdb.describe(cfg.data))


@cli.command()
@config_options
@click.option(
    "--resume",
    metavar="RUN_ID",
    help="Continue a KILLED or FAILED run from its last checkpoint (uses the run's own config).",
)
def train(
    config_path: str | None, overrides: tuple[str, ...], data_dir: str | None, resume: str | None
) -> None:
    """Train one classifier, evaluate it on the test split and log everything to MLflow.

    Prints a line per epoch and a summary with the test accuracy and the run id. The model is
    registered as train.registered_model (alias "newest"). Ctrl-C marks the run KILLED and keeps
    its checkpoint (exit code 130); --resume continues it.

    \b
    Examples:
      classify train --config configs/default.yaml
      classify train --config configs/smoke.yaml --set model.variant=mha --set train.epochs=5
      classify train --resume 3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d
    """
    from classifier.train import TrainingInterrupted, stop_on_sigterm
    from classifier.train import train as run_training

    if resume and (config_path or overrides):
        raise UserError("--resume continues with the run's own config; drop --config and --set")
    cfg = None if resume else resolve_config(config_path, overrides, data_dir)
    stop_on_sigterm()
    try:
        run_training(cfg, resume=resume, echo=click.echo)
    except TrainingInterrupted as interrupted:
        click.echo(str(interrupted), err=True)
        sys.exit(130)


def main() -> None:
    """Entry point of the ``classify`` console script."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    cli(prog_name="classify")
