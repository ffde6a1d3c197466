"""The ``classify`` command line: thin click commands that parse options and delegate.

Bad configs, missing data and an unusable tracking store end in one line on stderr and exit
code 2, never a traceback; both are checked before the slow imports (TensorFlow).
"""

from __future__ import annotations

import os
import sys

import click

from classifier.cli import terminal
from classifier.cli.options import (  # noqa: F401 - RUN_ID and friends were defined here
    NOT_A_RUN_ID,
    PROBABILITY,
    RUN_ID,
    ClassifyGroup,
    FiniteRange,
    checked,
    config_options,
    exit_130_when_interrupted,
    model_option,
    resolve_config,
    resumable_config,
    resume_option,
)
from classifier.cli.startup import check_model, import_tensorflow, keras_model, reach_store
from classifier.config.schema import Config
from classifier.errors import UserError


@click.group(cls=ClassifyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="imdb-classifier")
@click.option("-v", "--verbose", is_flag=True, help="Show TensorFlow's logs (CLASSIFY_VERBOSE=1).")
def cli(verbose: bool) -> None:
    """Train, compare and serve Transformer sentiment classifiers for IMDB reviews.

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
def data(config_path: str | None, overrides: tuple[str, ...], data_dir: str | None) -> None:
    """Show the IMDB splits: sizes, label balance, review lengths and an example.

    \b
    Example:
      TFDS_DATA_DIR=../shared/tensorflow_datasets classify data
    """
    cfg = resolve_config(config_path, overrides, data_dir)
    import_tensorflow()
    from classifier.data import pipeline as imdb

    terminal.out(imdb.describe(cfg.data))


@cli.command()
@config_options
@resume_option
def train(
    config_path: str | None, overrides: tuple[str, ...], data_dir: str | None, resume: str | None
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
      classify train --resume 3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d
    """
    cfg = resumable_config(config_path, overrides, data_dir, resume)
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
@click.option(
    "--threshold",
    type=PROBABILITY,
    default=0.5,
    show_default=True,
    help="A review is positive when P(positive) >= this.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Reviews per model call.",
)
def predict(
    files: tuple[str, ...],
    model_spec: str | None,
    per_line: bool,
    output_format: str,
    threshold: float,
    batch_size: int,
) -> None:
    """Classify reviews in FILE... (- for stdin) as positive or negative.

    Prints per review its source (file, or file:line with --per-line), the label and the
    probability of positive. A bad input gets one line on stderr and the others are still
    classified; the exit code is then 1 (2 for a usage error or no usable model).

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


@cli.command()
@click.argument("file")
@model_option(bundle=False)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    callback=checked,
    help="File to write (default: FILE's name + .attention.png or .html, here).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["png", "html"]),
    help="png, or a self-contained html page (default: from --output's extension, else png).",
)
@click.option(
    "--threshold",
    type=PROBABILITY,
    default=0.5,
    show_default=True,
    help="The review is positive when P(positive) >= this.",
)
def explain(
    file: str,
    model_spec: str | None,
    output: str | None,
    output_format: str | None,
    threshold: float,
) -> None:
    """Draw one review (FILE, or - for stdin), its label and each word's push on it: n-gram
    contributions (bow, nbow; nbow_attention beside its attention branch's attention), or
    occlusion beside the attention each word receives (attention models).

    \b
    Examples:
      classify explain review.txt                  # writes review.txt.attention.png
      classify explain review.txt -o review.html   # a self-contained HTML page
      sed -n 3p reviews.txt | classify explain - -o third.png
    """
    from classifier.serving.reviews import STDIN, STDIN_NAME, input_problem

    check_model(model_spec)  # model first, then the input, as predict does; both at once
    stdin = terminal.stdin_binary() if file == STDIN else None
    if problem := input_problem(file, stdin):  # at once, not after TensorFlow has loaded
        terminal.err(f"classify: {STDIN_NAME if file == STDIN else file}: {problem}")
        sys.exit(1)
    terminal.Progress().status("loading TensorFlow and the model")  # seconds; on a terminal
    model = keras_model(model_spec)
    from classifier.explain.explanation import explain_file, summary

    done = explain_file(
        model,
        file,
        output=output,
        output_format=output_format,
        threshold=threshold,
        err=terminal.err,
        stdin=stdin,
    )
    if done is None:
        sys.exit(1)
    terminal.out(summary(*done))


@cli.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False))
@click.option(
    "--dry-run",
    is_flag=True,
    help="List the numbered points (label, overrides, config hash) and exit; nothing is logged.",
)
@click.option(
    "--storage",
    metavar="URL",
    callback=checked,
    help="The Optuna storage the workers share: postgresql://USER@HOST:PORT/DATABASE (make "
    "server prints one) or sqlite:///PATH [default: sweeps.db beside mlflow.db].",
)
@click.option(
    "--status",
    "show_status",
    is_flag=True,
    help="Print the points waiting, running (on which worker), finished and failed, and exit.",
)
@click.option(
    "--retries",
    type=click.IntRange(0, 100),
    default=2,
    show_default=True,
    help="How often a point that fails by itself (a diverging run) is tried again.",
)
@click.option(
    "--grace",
    type=FiniteRange(3.0, 3600.0),
    default=75.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds without a heartbeat after which a worker's point goes to another worker.",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 1024),
    metavar="N",
    help="TensorFlow threads of this worker [default: one per core]; with several workers on "
    "one machine, cores divided by workers.",
)
def sweep(
    spec_path: str,
    dry_run: bool,
    storage: str | None,
    show_status: bool,
    retries: int,
    grace: float,
    threads: int | None,
) -> None:
    """Train every point of a sweep spec as nested MLflow runs under one parent run.

    SPEC is a YAML file naming a base config, overrides, and points and a grid, or a search
    (see configs/sweeps/). The command launches the sweep if it is not launched yet, then works
    on it until no point is left; the same command on several machines (with one --storage and
    MLFLOW_TRACKING_URI on one MLflow server) makes them workers of one sweep. A worker that
    dies hands its point to another one; Ctrl-C hands it back (exit code 130); running the
    command again continues. The parent run gets the comparison table (CSV, Markdown), a
    test-accuracy bar chart and a validation-accuracy chart.

    \b
    Examples:
      classify sweep configs/sweeps/variants.yaml --dry-run
      classify sweep configs/sweeps/quick.yaml
      classify sweep configs/sweeps/quick.yaml --status
      classify sweep configs/sweeps/search.yaml --storage postgresql://optuna@127.0.0.1:5433/optuna
      classify sweep configs/sweeps/quick.yaml --threads 1  # one of 2 workers on 2 cores
    """
    from classifier.config.uris import sweep_storage_url
    from classifier.sweeps import spec as sweep_spec
    from classifier.sweeps.listing import describe_points

    spec = sweep_spec.load_spec(spec_path)
    points = sweep_spec.expand(spec)
    if dry_run:
        terminal.out(describe_points(spec, points))
        return
    if storage is not None:
        sweep_storage_url(storage)  # a malformed URL is one line before anything is imported
    reach_store()
    if show_status:
        from classifier.sweeps.status import sweep_status

        terminal.out(sweep_status(spec, storage))
        return
    import_tensorflow(threads)
    from classifier.runs.interrupts import stop_on_signals
    from classifier.sweeps import run as sweeps

    stop_on_signals()
    try:
        sweeps.run_sweep(
            spec, echo=terminal.Progress(), storage=storage, grace=grace, max_retries=retries
        )
    except sweeps.SweepInterrupted as interrupted:
        click.echo(str(interrupted), err=True)
        sys.exit(130)


@cli.command()
@click.option(
    "--experiment",
    metavar="NAME",
    callback=checked,
    help="Compare the finished runs of this experiment, sweep parents excluded "
    "(default: imdb-classifier).",
)
@click.option("--sweep", "sweep_id", metavar="RUN_ID", help="Compare the children of this sweep.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "markdown", "csv", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
def compare(experiment: str | None, sweep_id: str | None, output_format: str) -> None:
    """Print the comparison table of finished runs from MLflow: one row per variant.

    Runs that differ only in the seed form one row: variant, seeds, key params, best validation
    accuracy (mean), test accuracy (mean ± std), epochs, training time and parameter count.

    \b
    Examples:
      classify compare --sweep 3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d
      classify compare --experiment imdb-sweeps --format markdown
    """
    if experiment and sweep_id:
        raise UserError("give --experiment or --sweep, not both")
    if sweep_id is not None and not RUN_ID.fullmatch(sweep_id):
        raise click.BadParameter(NOT_A_RUN_ID.format(sweep_id), param_hint="'--sweep'")
    name = experiment or Config().experiment
    reach_store(absent=f"no run {sweep_id!r}" if sweep_id else f"no experiment {name!r}")
    from classifier.sweeps import compare as comparison

    rows = comparison.compare(experiment=experiment, sweep_id=sweep_id)
    terminal.out(comparison.format_comparison(rows, output_format))


def main() -> None:
    """Entry point of the ``classify`` console script."""
    cli(prog_name="classify")
