"""``classify explain`` and ``classify evaluate``: what a trained model does with one review,
and how well it does on a labelled file. Registered on the ``classify`` group by
:mod:`classifier.cli.main`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from classifier.cli import terminal
from classifier.cli.options import batch_size_option, checked, model_option, threshold_option
from classifier.cli.startup import check_model, import_tensorflow, keras_model


@click.command()
@click.argument("file")
@model_option
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
@threshold_option("Two classes: the review is positive when P(positive) >= this.")
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
    from classifier.serving.model_source import find_bundle, names_a_run
    from classifier.serving.reviews import STDIN, STDIN_NAME, input_problem

    bundle = find_bundle(model_spec)  # the run's LiteRT bundle: no TensorFlow, no MLflow
    if bundle is None:
        check_model(model_spec)  # model first, then the input, as predict does; both at once
    stdin = terminal.stdin_binary() if file == STDIN else None
    if problem := input_problem(file, stdin):  # at once, not after TensorFlow has loaded
        terminal.err(f"classify: {STDIN_NAME if file == STDIN else file}: {problem}")
        sys.exit(1)
    model = None
    if bundle is not None:
        from classifier.serving.explain_parts import has_explain_parts
        from classifier.serving.litert_engine import load_bundle

        model = load_bundle(bundle)
        if not has_explain_parts(model) and names_a_run(model_spec):
            # A run logged before bundles held explain parts: its Keras model (a bundle folder
            # given as a path has none beside it).
            model = None
    if model is None:
        terminal.Progress().status("loading TensorFlow and the model")  # seconds; on a terminal
        model = keras_model(model_spec)
    from classifier.explain.explanation import explain_file, summary, view_of
    from classifier.explain.measures import target_class

    view = view_of(model)
    if target is not None:
        target_class(view.labels, target)  # one line for a class the model lacks

    done = explain_file(
        view,
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


@click.command()
@click.argument("file", metavar="FILE")
@model_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table, or one JSON object (accuracy, macro_f1, log_loss, ece, n, per class; per "
    "group with --by).",
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
    "--label-map",
    metavar="MAP",
    help="Map FILE's labels to the model's classes first, as data.label_map does: "
    "'0=negative, 1=negative, 2=, 3=positive, 4=positive' (a label mapped to nothing: its "
    "rows are left out).",
)
@click.option(
    "--by",
    metavar="COLUMN",
    callback=checked,
    help="Also the accuracy per value of this column of FILE, in order of first appearance "
    "(the behaviour suite's files: capability).",
)
@click.option(
    "--figures",
    "figures_dir",
    type=click.Path(file_okay=False),
    callback=checked,
    help="Folder for confusion_matrix.png and reliability_diagram.png "
    "[default: FILE's name + '-evaluation', here].",
)
@batch_size_option("Texts per model call.")
def evaluate(
    file: str,
    model_spec: str | None,
    output_format: str,
    text_field: str,
    label_field: str,
    label_map: str | None,
    by: str | None,
    figures_dir: str | None,
    batch_size: int,
) -> None:
    """Measure a model on your labelled FILE: accuracy, macro-F1, log loss, calibration.

    FILE is a CSV, TSV, JSON Lines or Parquet file with a text and a label column, a folder
    with one sub-folder per class, or a TFDS split by name (tfds:NAME:SPLIT); its labels are
    the model's class names (or their indices).
    Prints the metrics and a row per class (and per group of the column --by names), writes
    the confusion matrix and the reliability diagram, and logs the evaluation to MLflow
    against the registered model version (a run in its experiment; a local model is not
    logged).

    \b
    Examples:
      classify evaluate my_reviews.csv
      classify evaluate --model models:/sst5-sentiment@newest --format json dev.csv
      classify evaluate --text-field review --label-field stars reviews.jsonl
      classify evaluate --by capability data/behaviour/test.csv
      classify evaluate --model models:/sst2-sentiment@newest trees/dev.txt \\
          --label-map '0=negative, 1=negative, 2=, 3=positive, 4=positive'
    """
    from classifier.data.label_case import case_clash
    from classifier.data.named import is_named
    from classifier.serving.evaluation import (
        check_file,
        evaluate_file,
        format_evaluation,
        write_figures,
    )
    from classifier.serving.model_source import find_bundle

    if is_named(file):  # tfds:NAME:SPLIT: TFDS reads it, with TensorFlow (its lines silenced)
        import_tensorflow()
    checked_file = check_file(file, text_field, label_field, by, label_map)  # bad: one line
    if note := case_clash(checked_file.scan.counts, file):
        terminal.err(f"classify: note: {note}")
    bundle = find_bundle(model_spec)
    if bundle is not None:
        from classifier.serving.litert_engine import load_bundle

        model = load_bundle(bundle)
    else:
        check_model(model_spec)
        model = keras_model(model_spec)
    evaluation = evaluate_file(model, file, text_field, label_field, batch_size, checked_file)
    stem = file.replace(":", "-").replace("/", "-") if is_named(file) else Path(file).stem
    folder = Path(figures_dir or f"{stem}-evaluation")
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
