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
    data = sys.modules.get("classifier.data")
    return (data.DataNotFoundError,) if data else ()


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


def main() -> None:
    """Entry point of the ``classify`` console script."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    cli(prog_name="classify")
