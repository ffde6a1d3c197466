"""The ``classify`` command line: thin click commands that parse options and delegate.

Bad configs, missing data and an unusable tracking store end in one line on stderr and exit
code 2, never a traceback; both are checked before the slow imports (TensorFlow).
"""

from __future__ import annotations

import os
import sys

import click

from classifier.cli import terminal
from classifier.cli.examining import evaluate, explain
from classifier.cli.options import (  # noqa: F401 - RUN_ID and friends were defined here
    NOT_A_RUN_ID,
    PROBABILITY,
    RUN_ID,
    SHIPPED_RECIPE,
    ClassifyGroup,
    FiniteRange,
    batch_size_option,
    checked,
    config_options,
    data_option,
    drop_extra,
    exit_130_when_interrupted,
    model_option,
    named_for_data,
    recipe_for_data,
    resolve_config,
    resumable_config,
    resume_option,
    threshold_option,
)
from classifier.cli.startup import check_model, import_tensorflow, keras_model
from classifier.cli.sweeping import compare, sweep
from classifier.config.schema import load_config
from classifier.errors import UserError


@click.group(cls=ClassifyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="imdb-classifier")
@click.option("-v", "--verbose", is_flag=True, help="Show TensorFlow's logs (CLASSIFY_VERBOSE=1).")
def cli(verbose: bool) -> None:
    """Train, compare and serve Transformer sentiment classifiers: IMDB reviews, or your own
    labelled texts with any number of classes.

    \b
    Examples:
      classify data
      classify train --config configs/smoke.yaml
    """
    if verbose or os.environ.get("CLASSIFY_VERBOSE", "").lower() not in ("", "0", "false"):
        os.environ["CLASSIFY_VERBOSE"] = "1"  # what import_tensorflow reads
    else:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # set before TensorFlow is imported


@cli.command()
@config_options
@data_option
def data(
    config_path: str | None, overrides: tuple[str, ...], data_dir: str | None, source: str | None
) -> None:
    """Show the splits: sizes, class balance, text lengths and examples.

    Without --data (or data.source) the IMDB reviews; with it your labelled texts, split as
    training would split them (read without TensorFlow).

    \b
    Examples:
      TFDS_DATA_DIR=../shared/tensorflow_datasets classify data
      classify data --data reviews.csv
      classify data --data reviews.csv --set data.validation=dev.csv --set data.test=test.csv
    """
    cfg = resolve_config(config_path, overrides, data_dir, source)
    if cfg.data.source is not None:
        from classifier.data.labelled import describe

        terminal.out(describe(cfg.data))
        return
    import_tensorflow()
    from classifier.data import pipeline as imdb

    terminal.out(imdb.describe(cfg.data))


@cli.command()
@config_options
@data_option
@resume_option
def train(
    config_path: str | None,
    overrides: tuple[str, ...],
    data_dir: str | None,
    source: str | None,
    resume: str | None,
) -> None:
    """Train one classifier, evaluate it on the test split and log everything to MLflow.

    Prints a line per epoch and a summary with the test accuracy and the run id. The model is
    registered as train.registered_model (alias "newest"). Ctrl-C marks the run KILLED and keeps
    its checkpoint (exit code 130); --resume continues it. With model.init_from the encoder
    variant starts from a pretrained encoder (classify pretrain) and its vocabulary.

    \b
    Examples:
      classify train --config configs/default.yaml
      classify train --config configs/smoke.yaml --set model.variant=mha --set train.epochs=5
      classify train --config configs/smoke.yaml --set model.init_from=models:/imdb-encoder@newest
      classify train --data reviews.csv --set train.registered_model=mine
      classify train --resume 3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d

    With --data (data.source) it trains on your labelled texts, with as many classes as their
    labels name; validation and test are data.validation and data.test, or a stratified 10% of
    the file each (data.validation_fraction, data.test_fraction). Without --config it trains
    the recipe make train ships (configs/train.yaml), unless --set model.variant picks one;
    without a name of its own the model is registered under the data's (reviews.csv:
    reviews-classifier), never as IMDB's imdb-sentiment, which classify predict serves.
    """
    recipe = recipe_for_data(config_path, overrides, source)
    cfg = resumable_config(recipe, overrides, data_dir, resume, source)
    if recipe != config_path:  # said once the config and the data are known to be good
        shown = f"{SHIPPED_RECIPE.parent.name}/{SHIPPED_RECIPE.name}"
        dropped = cfg is not None and drop_extra(cfg, overrides)
        terminal.err(
            f"classify: note: training the recipe make train ships ({shown})"
            + (" without its data.extra (IMDB's added texts)" if dropped else "")
            + "; --config or --set model.variant=... chooses another"
        )
    if cfg is not None and source and (name := named_for_data(cfg, overrides, source)):
        terminal.err(
            f"classify: note: registering the model as {name}, not as IMDB's model; "
            f"classify predict --model models:/{name}@newest uses it"
        )
    from classifier.training.train import train as run_training

    exit_130_when_interrupted(lambda: run_training(cfg, resume=resume, echo=terminal.Progress()))


@cli.command()
@config_options
@resume_option
def pretrain(
    config_path: str | None, overrides: tuple[str, ...], data_dir: str | None, resume: str | None
) -> None:
    """Pretrain the encoder on unlabelled reviews plus the training portion, and register it.

    pretrain.objective: mlm (masked language model, BERT's masking) or span (T5 span
    corruption with the encoder-decoder Transformer). Prints a line per epoch with the loss and
    accuracy on the masked tokens (training, held-out reviews). The encoder is registered as
    pretrain.registered_model (alias "newest"); model.init_from fine-tunes from it. Ctrl-C marks
    the run KILLED and keeps its checkpoint (exit code 130); --resume continues it.

    \b
    Examples:
      classify pretrain --config configs/pretrain.yaml
      classify pretrain --config configs/pretrain-smoke.yaml --set pretrain.objective=span
      classify pretrain --resume 3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d
    """
    if resume is None and load_config(config_path, overrides).data.source is not None:
        raise UserError(
            "classify pretrain reads IMDB's unlabelled reviews; data.source (your labelled "
            "texts) is for classify train"
        )
    cfg = resumable_config(config_path, overrides, data_dir, resume)
    from classifier.pretraining.pretrain import pretrain as run_pretraining

    exit_130_when_interrupted(lambda: run_pretraining(cfg, resume=resume, echo=terminal.Progress()))


@cli.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@model_option
@click.option(
    "--per-line", is_flag=True, help="Each non-blank line is a review (default: each file is one)."
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="Output format.",
)
@threshold_option("A review is positive when P(positive) >= this.")
@batch_size_option("Reviews per model call.")
def predict(
    files: tuple[str, ...],
    model_spec: str | None,
    per_line: bool,
    output_format: str,
    threshold: float,
    batch_size: int,
) -> None:
    """Classify reviews in FILE... (- for stdin) as positive or negative, or into the classes
    of a model trained on your own labels.

    Prints per review its source (file, or file:line with --per-line), the label and the
    probability of positive (of the label, for more than two classes; JSON and CSV give every
    class's). The label is unknown when the model has nothing to go on: no word it knows, or
    fewer than 8 known words whose occlusion moves its answer by less than 0.5 nats in all. A
    bad input gets one line on stderr and the others are still classified; the exit code is
    then 1 (2 for a usage error or no usable model).

    \b
    Examples:
      classify predict review.txt other.txt
      classify predict --per-line --format csv reviews.txt > predictions.csv
      echo "A wonderful film." | classify predict --model models:/imdb-sentiment@newest -
    """
    from classifier.serving.model_source import find_bundle

    bundle = find_bundle(model_spec)  # the run's LiteRT bundle: no TensorFlow, no MLflow
    if bundle is not None:
        from classifier.serving.litert_engine import load_bundle

        model = load_bundle(bundle)
    else:
        check_model(model_spec)
        model = keras_model(model_spec)
    from classifier.serving.predict import classify_files

    failed = classify_files(
        model,
        files,
        per_line=per_line,
        output_format=output_format,
        threshold=threshold,
        batch_size=batch_size,
        out=terminal.out,
        err=terminal.err,
        stdin=terminal.stdin_binary(),
    )
    sys.exit(1 if failed else 0)


cli.add_command(explain)
cli.add_command(evaluate)
cli.add_command(sweep)
cli.add_command(compare)


def main() -> None:
    """Entry point of the ``classify`` console script."""
    cli(prog_name="classify")
