"""``classify evaluate``: a trained model's metrics on a labelled file of the user's, without
TensorFlow where the model has a LiteRT bundle.

The file is any source :mod:`classifier.data.files` reads (CSV, TSV, JSON Lines, Parquet, class
folders). Its labels are the model's class names, or their indices (``0`` to ``K - 1``); a label
the model does not know is one line naming it. The texts are streamed through the model a
chunk at a time; the metrics are the training run's (:mod:`classifier.evaluation.metrics`,
scikit-learn's where a library has them): accuracy, macro-F1, log loss, precision, recall and F1
per class, and the ECE. Every text gets the model's most likely class (``unknown``, which
``predict`` answers for a text whose words the vocabulary hardly knows, is counted but not
held out: a metric over the answered texts only would flatter the model). With ``by``, a column
of the file groups the texts, and each group gets its accuracy too (the behaviour suite's
``capability``: :mod:`classifier.evaluation.behaviour`).

Example (a registered model and a labelled file)::

    model = load_bundle("bundle")
    evaluation = evaluate_file(model, "reviews.csv")
    evaluation.metrics["accuracy"], evaluation.metrics["n"]  # 0.893, 1000.0
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from classifier import plots
from classifier.data import files
from classifier.data.relabel import label_pairs, relabelled
from classifier.errors import DataError
from classifier.evaluation.behaviour import accuracy_by_group
from classifier.evaluation.metrics import (
    classification_metrics,
    expected_calibration_error,
    metric_key,
)
from classifier.serving.predict import (
    DEFAULT_BATCH_SIZE,
    labels_of,
    predict_probabilities,
    unknown_reviews,
)

CHUNK = 4096  # texts predicted together
FORMATS = ("table", "json")
FIGURES = ("confusion_matrix.png", "reliability_diagram.png")


@dataclass(frozen=True)
class CheckedFile:
    """A labelled file read before any model is loaded: its scan (labels mapped by a label
    map, a dropped row's code -1) and, with ``by``, each kept row's value of that column."""

    scan: files.Scan
    by: str | None = None
    groups: tuple[str, ...] | None = None

    @property
    def kept(self) -> np.ndarray:
        """A bool per row of the file: evaluated (not dropped by the label map)."""
        return self.scan.codes >= 0


@dataclass
class Evaluation:
    """A model's answers on a labelled file: the true class ids, the class probabilities (N, K),
    how many texts ``predict`` would call ``unknown``, the metrics, and each text's group where
    a column (``by``) groups them."""

    source: str
    labels: tuple[str, ...]
    truth: np.ndarray
    probabilities: np.ndarray
    unknown: int
    metrics: dict[str, float] = field(default_factory=dict)
    by: str | None = None
    groups: tuple[str, ...] | None = None

    @property
    def scores(self) -> np.ndarray:
        """What the metrics score: P(positive) (N,) for two classes, else (N, K)."""
        return self.probabilities[:, -1] if len(self.labels) == 2 else self.probabilities

    @property
    def predicted(self) -> np.ndarray:
        """Each text's class id: positive where P(positive) >= 0.5 (two classes), else the
        most probable class."""
        if len(self.labels) == 2:
            return (self.scores >= 0.5).astype(np.int64)
        return self.probabilities.argmax(axis=1)

    def by_group(self) -> list[tuple[str, int, float]]:
        """``(group, texts, accuracy)`` per group, in order of first appearance (none without
        ``by``)."""
        if self.groups is None:
            return []
        return accuracy_by_group(self.groups, self.predicted == self.truth)


def check_file(
    source: str | Path,
    text_field: str = "text",
    label_field: str = "label",
    by: str | None = None,
    label_map: str | None = None,
) -> CheckedFile:
    """Read the labelled ``source`` before any model is loaded: every row checked and its
    labels counted (:func:`~classifier.data.files.scan`), mapped by ``label_map`` (as
    ``data.label_map`` writes it: ``0=negative, 1=negative, 2=``), and with ``by`` that
    column's values.

    Raises:
        DataError: as :func:`~classifier.data.files.scan`, for a label the map lacks, and for
            a file without rows (or none the map keeps) or without the column ``by``.
    """
    scan = files.scan(source, text_field, label_field)
    if label_map is not None:
        scan = relabelled(scan, dict(label_pairs(label_map)))
    if not np.any(scan.codes >= 0):
        after = " after its header" if scan.format in ("csv", "tsv") else ""
        kept = " that the label map keeps" if scan.rows else ""
        raise DataError(f"{source} has no rows{after}{kept}; there is nothing to evaluate")
    groups = None
    if by:
        groups = tuple(
            group
            for group, code in zip(files.column(source, by, text_field), scan.codes, strict=True)
            if code >= 0
        )
    return CheckedFile(scan, by, groups)


def label_ids(counts: dict[str, int], labels: tuple[str, ...], source: str) -> dict[str, int]:
    """The class id of each label of the file: a class name of the model, or its index.

    Example:
        >>> label_ids({"positive": 3, "negative": 2}, ("negative", "positive"), "a.csv")
        {'positive': 1, 'negative': 0}
        >>> label_ids({"1": 3, "0": 2}, ("negative", "positive"), "a.csv")
        {'1': 1, '0': 0}
    """
    ids = {label: index for index, label in enumerate(labels)}
    if all(label in ids for label in counts):
        return {label: ids[label] for label in counts}
    indices = {str(index): index for index in range(len(labels))}
    if all(label in indices for label in counts):
        return {label: indices[label] for label in counts}
    unknown = [label for label in counts if label not in ids]
    shown = ", ".join(repr(label) for label in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
    raise DataError(
        f"{source}: label{'s' if len(unknown) > 1 else ''} {shown} "
        f"{'are' if len(unknown) > 1 else 'is'} not a class of the model (its classes: "
        f"{', '.join(labels)}; or their indices 0 to {len(labels) - 1})"
    )


def evaluate_file(
    model,
    source: str | Path,
    text_field: str = "text",
    label_field: str = "label",
    batch_size: int = DEFAULT_BATCH_SIZE,
    checked: CheckedFile | None = None,
    by: str | None = None,
) -> Evaluation:
    """Predict every text of the labelled ``source`` with ``model`` and score the answers, with
    ``by`` per group of that column too (``checked``: the file's :func:`check_file`, where it
    was made already).

    Raises:
        DataError: one line naming the file: missing, malformed, not UTF-8, without rows, the
            text, label or ``by`` column, empty texts or labels, or a label the model does not
            know.
    """
    labels = labels_of(model)
    checked = checked or check_file(source, text_field, label_field, by)  # before predicting
    scan = checked.scan
    ids = label_ids({label: n for label, n in scan.counts.items() if n}, labels, str(source))
    kept = checked.kept
    truth = np.array([ids.get(label, -1) for label in scan.counts], np.int64)[scan.codes[kept]]
    chunks, unknown, texts = [], 0, []

    def flush() -> None:
        nonlocal unknown
        chunks.append(predict_probabilities(model, texts, batch_size))
        unknown += int(np.sum(unknown_reviews(model, texts, chunks[-1])[0]))
        texts.clear()

    for row, record in enumerate(files.records(source, text_field, label_field)):
        if not kept[row]:
            continue
        texts.append(record.text)
        if len(texts) == CHUNK:
            flush()
    if texts:
        flush()
    probabilities = np.concatenate(chunks)
    evaluation = Evaluation(
        str(source), labels, truth, probabilities, unknown, by=checked.by, groups=checked.groups
    )
    evaluation.metrics = {
        **classification_metrics(truth, evaluation.scores, labels, prefix=""),
        "ece": expected_calibration_error(truth, evaluation.scores),
        "n": float(len(truth)),
        "unknown_share": unknown / max(len(truth), 1),
    }
    return evaluation


def write_figures(evaluation: Evaluation, folder: Path) -> list[Path]:
    """The confusion matrix and the reliability diagram, as PNG files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    confusion, reliability = (folder / name for name in FIGURES)
    plots.plot_confusion_matrix(
        confusion, evaluation.truth, evaluation.predicted, evaluation.labels
    )
    plots.plot_reliability_diagram(reliability, evaluation.truth, {"model": evaluation.scores})
    return [confusion, reliability]


def format_evaluation(
    evaluation: Evaluation, output_format: str, model: str, extra: dict | None = None
) -> str:
    """The evaluation as a table for people or one JSON object (``extra``: more keys, such as
    the figures' paths and the MLflow run)."""
    m, labels = evaluation.metrics, evaluation.labels
    support = np.bincount(evaluation.truth, minlength=len(labels))
    per_class = {}
    for index, label in enumerate(labels):
        if len(labels) == 2:  # the binary keys are the positive class's; score each class
            scored = classification_metrics(
                evaluation.truth == index, evaluation.probabilities[:, index], prefix=""
            )
        else:
            scored = {
                kind: m[f"{kind}_{metric_key(label)}"] for kind in ("precision", "recall", "f1")
            }
        per_class[label] = {
            "precision": scored["precision"],
            "recall": scored["recall"],
            "f1": scored["f1"],
            "support": int(support[index]),
        }
    if output_format == "json":
        summary = {
            key: m[key] for key in ("accuracy", "macro_f1", "log_loss", "ece", "unknown_share")
        }
        document = {
            "model": model,
            "source": evaluation.source,
            "n": int(m["n"]),
            **summary,
            **({"roc_auc": m["roc_auc"]} if "roc_auc" in m else {}),
            "classes": per_class,
            **_groups_json(evaluation),
            **(extra or {}),
        }
        return json.dumps(document, ensure_ascii=False)
    if output_format != "table":
        raise ValueError(f"output_format must be one of {FORMATS}, got {output_format!r}")
    width = max(8, *(len(label) for label in labels))
    lines = [
        f"{model} on {evaluation.source}: {int(m['n']):,} texts, {len(labels)} classes",
        "",
        f"accuracy  {m['accuracy']:.4f}",
        f"macro-F1  {m['macro_f1']:.4f}",
        f"log loss  {m['log_loss']:.4f}",
        f"ECE       {m['ece']:.4f}",
        *([f"ROC-AUC   {m['roc_auc']:.4f}"] if "roc_auc" in m else []),
        f"unknown   {m['unknown_share']:.1%} ({evaluation.unknown:,} texts the model has "
        "nothing to go on; scored with their most likely class)",
        "",
        f"{'class':<{width}}  {'precision':>9}  {'recall':>6}  {'F1':>6}  {'texts':>7}",
    ]
    for label, row in per_class.items():
        lines.append(
            f"{label:<{width}}  {row['precision']:>9.4f}  {row['recall']:>6.4f}  "
            f"{row['f1']:>6.4f}  {row['support']:>7,}"
        )
    return "\n".join(lines + _groups_table(evaluation))


def _groups_json(evaluation: Evaluation) -> dict:
    """The JSON keys of the accuracy per group: ``by`` and ``groups`` (none without ``by``)."""
    if evaluation.by is None:
        return {}
    groups = {
        group: {"accuracy": accuracy, "texts": texts}
        for group, texts, accuracy in evaluation.by_group()
    }
    return {"by": evaluation.by, "groups": groups}


def _groups_table(evaluation: Evaluation) -> list[str]:
    """The table of the accuracy per group, after a blank line (none without ``by``)."""
    if evaluation.by is None:
        return []
    rows = [
        (group or "(empty)", texts, accuracy) for group, texts, accuracy in evaluation.by_group()
    ]
    width = max(len(evaluation.by), *(len(group) for group, _, _ in rows))
    lines = ["", f"{evaluation.by:<{width}}  {'accuracy':>8}  {'texts':>7}"]
    lines += [f"{group:<{width}}  {accuracy:>8.4f}  {texts:>7,}" for group, texts, accuracy in rows]
    return lines


def group_metrics(evaluation: Evaluation) -> dict[str, float]:
    """The accuracy per group as metric keys, ``accuracy_<by>_<group>`` (as
    :func:`~classifier.evaluation.metrics.metric_key` writes names).

    Example:
        >>> evaluation = Evaluation("f.csv", ("negative", "positive"), np.array([0, 1]),
        ...     np.array([[0.9, 0.1], [0.8, 0.2]]), 0, by="capability", groups=("names", "typos"))
        >>> group_metrics(evaluation)
        {'accuracy_capability_names': 1.0, 'accuracy_capability_typos': 0.0}
    """
    by = metric_key(evaluation.by or "")
    return {f"accuracy_{by}_{metric_key(group)}": acc for group, _, acc in evaluation.by_group()}


def log_evaluation(evaluation: Evaluation, version, figures: list[Path]) -> str:
    """Log the evaluation to MLflow against the registered model ``version``: a run in its
    training run's experiment (tagged with the model's name and version), the file as its
    ``evaluation`` dataset, the metrics (``eval_accuracy``, ...; with ``by``, per group:
    :func:`group_metrics`) linked to the model and the dataset, and the figures. Returns the
    run's id.

    ``mlflow.models.evaluate`` is not used: it scores a model's predicted labels (or one
    probability column), so it has no log loss or calibration for K classes, and it would
    predict the file a second time through the pyfunc model.
    """
    import mlflow
    from mlflow.tracking import MlflowClient

    from classifier.runs.datasets import file_dataset

    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    experiment_id = MlflowClient().get_run(version.run_id).info.experiment_id
    dataset = file_dataset(evaluation.source)
    tags = {
        "evaluation_of": f"{version.name}/{version.version}",
        "model_name": version.name,
        "model_version": str(version.version),
        "trained_by": version.run_id,
    }
    with mlflow.start_run(
        experiment_id=experiment_id, run_name=f"evaluate-{dataset.name}", tags=tags
    ) as run:
        mlflow.log_input(dataset, context="evaluation")
        scored = {**evaluation.metrics, **group_metrics(evaluation)}
        metrics = {f"eval_{key}": value for key, value in scored.items()}
        mlflow.log_metrics(metrics, model_id=getattr(version, "model_id", None), dataset=dataset)
        for figure in figures:
            mlflow.log_artifact(str(figure))
    return run.info.run_id
