"""The ``classify`` command line: thin click commands that parse options and delegate.

Bad configs, missing data and an unusable tracking store end in one line on stderr and exit
code 2, never a traceback; both are checked before the slow imports (TensorFlow).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

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
    data_option,
    exit_130_when_interrupted,
    model_option,
    resolve_config,
    resumable_config,
    resume_option,
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
      classify train --data reviews.csv --set model.variant=nbow
      classify train --resume 3f2a9c0d1e6b4a7f8c5d2e1f0a9b8c7d

    With --data (data.source) it trains on your labelled texts, with as many classes as their
    labels name; validation and test are data.validation and data.test, or a stratified 10% of
    the file each (data.validation_fraction, data.test_fraction).
    """
    cfg = resumable_config(config_path, overrides, data_dir, resume, source)
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
@click.option(
    "--threshold",
    type=PROBABILITY,
    metavar="PROBABILITY",
    default=0.5,
    show_default=True,
    help="A review is positive when P(positive) >= this.",
)
@click.option(
    "--batch-size",
    metavar="COUNT",
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
    """Classify reviews in FILE... (- for stdin) as positive or negative, or into the classes
    of a model trained on your own labels.

    Prints per review its source (file, or file:line with --per-line), the label and the
    probability of positive (of the label, for more than two classes; JSON and CSV give every
    class's). A bad input gets one line on stderr and the others are still
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
    help="File to write (default, here: FILE's name + .contributions.png for n-gram models, "
    ".occlusion.png for attention models; .html with --format html).",
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
    metavar="PROBABILITY",
    default=0.5,
    show_default=True,
    help="Two classes: the review is positive when P(positive) >= this.",
)
@click.option(
    "--class",
    "target",
    metavar="NAME",
    help="Weigh the words towards this class (default: positive of two classes, else the "
    "predicted class). More than two classes: a word's push is on the class's margin, its "
    "logit minus the mean of the others'.",
)
def explain(
    file: str,
    model_spec: str | None,
    output: str | None,
    output_format: str | None,
    threshold: float,
    target: str | None,
) -> None:
    """Draw one review (FILE, or - for stdin), its label and each word's push towards a
    class: n-gram contributions (bow, nbow; nbow_attention beside its attention branch's
    attention), or occlusion beside the attention each word receives (attention models).

    \b
    Examples:
      classify explain review.txt                  # writes review.txt.contributions.png
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
    from classifier.explain.explanation import explain_file, summary, target_class
    from classifier.serving.keras_engine import labels_of

    if target is not None:
        target_class(labels_of(model), target)  # one line for a class the model lacks

    done = explain_file(
        model,
        file,
        output=output,
        output_format=output_format,
        threshold=threshold,
        err=terminal.err,
        stdin=stdin,
        target=target,
    )
    if done is None:
        sys.exit(1)
    terminal.out(summary(*done))


@cli.command()
@click.argument("file", metavar="FILE")
@model_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table, or one JSON object (accuracy, macro_f1, log_loss, ece, n, per class).",
)
@click.option(
    "--text-field",
    metavar="COLUMN",
    default="text",
    show_default=True,
    help="The column of the texts.",
)
@click.option(
    "--label-field",
    metavar="COLUMN",
    default="label",
    show_default=True,
    help="The column of the labels.",
)
@click.option(
    "--figures",
    "figures_dir",
    type=click.Path(file_okay=False),
    callback=checked,
    help="Folder for confusion_matrix.png and reliability_diagram.png "
    "[default: FILE's name + '-evaluation', here].",
)
@click.option(
    "--batch-size",
    metavar="COUNT",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Texts per model call.",
)
def evaluate(
    file: str,
    model_spec: str | None,
    output_format: str,
    text_field: str,
    label_field: str,
    figures_dir: str | None,
    batch_size: int,
) -> None:
    """Measure a model on your labelled FILE: accuracy, macro-F1, log loss, calibration.

    FILE is a CSV, TSV, JSON Lines or Parquet file with a text and a label column, or a folder
    with one sub-folder per class; its labels are the model's class names (or their indices).
    Prints the metrics and a row per class, writes the confusion matrix and the reliability
    diagram, and logs the evaluation to MLflow against the registered model version (a run in
    its experiment; a local model is not logged).

    \b
    Examples:
      classify evaluate my_reviews.csv
      classify evaluate --model models:/sst5-sentiment@newest --format json dev.csv
      classify evaluate --text-field review --label-field stars reviews.jsonl
    """
    from classifier.data.files import scan
    from classifier.serving.evaluation import evaluate_file, format_evaluation, write_figures
    from classifier.serving.model_source import find_bundle

    checked_file = scan(file, text_field, label_field)  # bad data: one line, before any model
    bundle = find_bundle(model_spec)
    if bundle is not None:
        from classifier.serving.litert_engine import load_bundle

        model = load_bundle(bundle)
    else:
        check_model(model_spec)
        model = keras_model(model_spec)
    evaluation = evaluate_file(model, file, text_field, label_field, batch_size, checked_file)
    folder = Path(figures_dir or f"{Path(file.rstrip('/')).stem}-evaluation")
    figures = write_figures(evaluation, folder)
    shown = model_spec or "the newest imdb-sentiment"
    logged = {}
    if model_spec is None or model_spec.startswith("models:"):
        from classifier.serving.evaluation import log_evaluation
        from classifier.serving.versions import registered_version

        version = registered_version(model_spec)
        if version is not None:
            shown = f"{version.name} v{version.version}"
            logged = {"mlflow_run": log_evaluation(evaluation, version, figures)}
    extra = {"figures": [str(path) for path in figures], **logged}
    terminal.out(format_evaluation(evaluation, output_format, shown, extra))
    if output_format == "table":
        terminal.out(f"\nfigures: {', '.join(extra['figures'])}")
        if logged:
            terminal.out(f"logged to MLflow: run {logged['mlflow_run']}, against {shown}")


cli.add_command(sweep)
cli.add_command(compare)


def main() -> None:
    """Entry point of the ``classify`` console script."""
    cli(prog_name="classify")
