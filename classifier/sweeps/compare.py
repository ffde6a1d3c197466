"""The comparison table: finished training runs grouped into rows (one per variant and
settings, averaged over seeds) and their labels (:mod:`classifier.sweeps.table` formats them).

Rows come from a sweep's children (``compare(sweep_id=...)``) or from every finished run of an
experiment, sweep parents excluded (``compare(experiment=...)``). Which sizes a row shows is
asked of the variant registry.

Example (``classify compare --experiment imdb-sweeps`` does this)::

    rows = compare(experiment="imdb-sweeps")
    print(format_comparison(rows, "table"))  # classifier.sweeps.table
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mlflow
import numpy as np
from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from classifier.config import variants
from classifier.config.schema import Config
from classifier.errors import SweepError
from classifier.runs.tracking import (
    POINT_TAG,
    SPEC_HASH_TAG,
    configure_tracking,
    metric_history,
    sweep_children,
)

#: Keys that do not make a different variant: runs that differ only here are averaged.
NOT_GROUPED = ("train.seed", "data.data_dir")
#: Every config key with its default as MLflow logs it; a run that predates a key had the default.
DEFAULT_PARAMS = {key: str(value) for key, value in Config().flat().items()}
CONFIG_KEYS = tuple(DEFAULT_PARAMS)


@dataclass
class ComparisonRow:
    """One group of runs that differ only in the seed (and data directory)."""

    variant: str
    seeds: list[int]
    key_params: str
    best_val_accuracy: float  # mean over seeds
    test_accuracy_mean: float
    test_accuracy_std: float  # population std (ddof=0): 0 for one seed
    epochs: float  # mean number of epochs run
    train_time_s: float  # mean
    parameters: int | None
    test_ece: float = math.nan  # mean expected calibration error (NaN: runs from before ECE)
    test_macro_f1_mean: float = math.nan  # NaN: runs from before macro-F1 was logged
    test_macro_f1_std: float = math.nan
    vs_baseline: float = math.nan  # test accuracy minus the bow baseline's, in points
    behaviour_overall: float = math.nan  # mean behaviour suite accuracy (NaN: none logged)
    run_ids: list[str] = field(default_factory=list)
    test_accuracies: list[float] = field(default_factory=list)
    val_accuracy_curves: list[list[float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The row as the JSON format prints it (separate mean and std)."""
        return {
            "variant": self.variant,
            "seeds": self.seeds,
            "key_params": self.key_params,
            "best_val_accuracy": self.best_val_accuracy,
            "test_accuracy_mean": self.test_accuracy_mean,
            "test_accuracy_std": self.test_accuracy_std,
            "test_macro_f1_mean": _none_if_nan(self.test_macro_f1_mean),
            "test_macro_f1_std": _none_if_nan(self.test_macro_f1_std),
            "test_ece": None if math.isnan(self.test_ece) else self.test_ece,
            "test_accuracy_vs_bow": None if math.isnan(self.vs_baseline) else self.vs_baseline,
            "behaviour_overall": _none_if_nan(self.behaviour_overall),
            "epochs": self.epochs,
            "train_time_s": self.train_time_s,
            "parameters": self.parameters,
            "run_ids": self.run_ids,
        }


def compare(experiment: str | None = None, sweep_id: str | None = None) -> list[ComparisonRow]:
    """The comparison rows of a sweep (its finished children) or of an experiment (its
    finished runs, sweep parents excluded), read from the MLflow store.

    Raises:
        SweepError: no such run or experiment, or no finished runs in it.

    Example (an MLflow store with that experiment)::

        rows = compare(experiment="imdb-sweeps")
        rows[0].test_accuracy_mean  # 0.9182
    """
    uri = configure_tracking()
    client = MlflowClient()
    if sweep_id:
        try:
            parent = client.get_run(sweep_id)
        except MlflowException:
            raise SweepError(f"no run {sweep_id!r} in {uri}") from None
        if SPEC_HASH_TAG not in parent.data.tags:
            raise SweepError(f"run {sweep_id} is not a sweep's parent run")
        rows = compare_runs(sweep_children(sweep_id), client, by_point=True)
        if not rows:
            raise SweepError(f"sweep run {sweep_id} has no finished child runs yet")
        return rows
    name = experiment or Config().experiment
    found = client.get_experiment_by_name(name)
    if found is None:
        raise SweepError(f"no experiment {name!r} in {uri}")
    runs = mlflow.search_runs(
        experiment_ids=[found.experiment_id],
        filter_string="attributes.status = 'FINISHED'",
        output_format="list",
    )
    runs = [run for run in runs if SPEC_HASH_TAG not in run.data.tags]
    rows = compare_runs(runs, client)
    if not rows:
        raise SweepError(f"no finished runs in experiment {name!r}")
    return rows


def compare_runs(
    runs: Iterable[Run], client: MlflowClient | None = None, by_point: bool = False
) -> list[ComparisonRow]:
    """Group finished training runs by config (all keys but the seed and the data directory)
    and average each group over its seeds.

    Args:
        runs: MLflow runs; those without ``model.variant`` or ``test_accuracy`` are ignored.
        client: reads the per-epoch ``val_accuracy`` histories.
        by_point: order groups by the sweep's point numbers (else by start time).

    Example (a sweep's parent run id)::

        rows = compare_runs(sweep_children(parent_run_id), by_point=True)
        rows[0].variant, rows[0].seeds  # ('attention', [1, 2, 3])
    """
    client = client or MlflowClient()
    usable = [
        run
        for run in runs
        if "model.variant" in run.data.params and "test_accuracy" in run.data.metrics
    ]

    def order(run: Run) -> tuple[float, float]:
        point = run.data.tags.get(POINT_TAG, "")
        return (int(point) if by_point and point.isdigit() else 0, run.info.start_time or 0)

    groups: dict[tuple, list[Run]] = {}
    for run in sorted(usable, key=order):
        groups.setdefault(group_key(run.data.params), []).append(run)
    labels = group_labels(list(groups))
    rows = []
    for key, members in groups.items():
        members.sort(key=lambda run: _seed(run.data.params))
        histories = [metric_history(client, run.info.run_id, "val_accuracy") for run in members]
        test = [run.data.metrics["test_accuracy"] for run in members]
        macro_f1 = [run.data.metrics.get("test_macro_f1", math.nan) for run in members]
        epochs = [
            len(history) or run.data.metrics.get("best_epoch", 0)
            for run, history in zip(members, histories, strict=True)
        ]
        parameters = members[0].data.params.get("model.parameters")
        rows.append(
            ComparisonRow(
                variant=labels[key],
                seeds=[_seed(run.data.params) for run in members],
                key_params=key_params(members[0].data.params),
                best_val_accuracy=_mean(
                    run.data.metrics.get("best_val_accuracy") for run in members
                ),
                test_accuracy_mean=float(np.mean(test)),
                test_accuracy_std=float(np.std(test)),
                epochs=float(np.mean(epochs)),
                train_time_s=_mean(run.data.metrics.get("train_time_s") for run in members),
                test_ece=_mean(run.data.metrics.get("test_ece") for run in members),
                behaviour_overall=_mean(
                    run.data.metrics.get("behaviour_overall") for run in members
                ),
                test_macro_f1_mean=float(np.mean(macro_f1)),
                test_macro_f1_std=float(np.std(macro_f1)),
                parameters=int(parameters) if parameters and parameters.isdigit() else None,
                run_ids=[run.info.run_id for run in members],
                test_accuracies=test,
                val_accuracy_curves=histories,
            )
        )
    against_baseline(rows)
    return rows


def against_baseline(rows: list[ComparisonRow]) -> None:
    """Set every row's test accuracy difference to the bag-of-n-grams baseline, in points: of the
    ``bow`` and ``nbow`` groups, the one with the best validation accuracy (never the test)."""
    baselines = [row for row in rows if row.variant.split(" ")[0] in BASELINES]
    if not baselines:
        return
    baseline = max(baselines, key=lambda row: row.best_val_accuracy)
    for row in rows:
        row.vs_baseline = 100 * (row.test_accuracy_mean - baseline.test_accuracy_mean)


def group_key(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What makes runs one group: every config param except the seed and the data directory
    (a key the run did not log counts with its default value).

    Example:
        >>> dict(group_key({"model.variant": "mha", "train.seed": "1"}))["model.variant"]
        'mha'
    """
    return tuple(
        (key, str(params.get(key, DEFAULT_PARAMS[key])))
        for key in CONFIG_KEYS
        if key not in NOT_GROUPED
    )


def group_labels(keys: Sequence[tuple[tuple[str, str], ...]]) -> dict[tuple, str]:
    """A label per group: the variant, plus the keys that tell groups of one variant apart.

    Example:
        >>> a = group_key({"model.variant": "encoder", "model.position": "sinusoidal"})
        >>> b = group_key({"model.variant": "encoder", "model.position": "learned"})
        >>> group_labels([a, b])[b]
        'encoder (position=learned)'
    """
    by_variant: dict[str, list[tuple]] = {}
    for key in dict.fromkeys(keys):
        by_variant.setdefault(dict(key).get("model.variant", "?"), []).append(key)
    labels = {}
    for variant, members in by_variant.items():
        values = [dict(member) for member in members]
        varying = [k for k in CONFIG_KEYS if len({v.get(k) for v in values}) > 1]
        short = {k: k.rsplit(".", 1)[-1] for k in varying}
        if len(set(short.values())) < len(short):
            short = {k: k for k in varying}
        for member, value in zip(members, values, strict=True):
            extra = ", ".join(f"{short[k]}={value.get(k)}" for k in varying)
            labels[member] = f"{variant} ({extra})" if extra else variant
    return labels


def key_params(params: Mapping[str, Any]) -> str:
    """The sizes that matter for the run's variant, e.g. ``d=16 h=2 ff=64 L=2 pos=sinusoidal``.

    Example:
        >>> key_params({"model.variant": "mha", "model.embed_dim": "16", "model.num_heads": "2"})
        'd=16 h=2 pos=none'
    """
    try:
        variant = variants.get(str(params.get("model.variant")))
    except KeyError:  # a run of a variant that no longer exists: show what it logged
        variant = None
    keys = variant.keys if variant else tuple(params)
    sizes = variants.SIZE_KEYS
    parts = [f"{short}={params[key]}" for key, short in sizes if key in keys and key in params]
    position = variant.position if variant and variant.position else params.get("model.position")
    if position is not None:
        parts.append(f"pos={position}")
    if "model.norm_first" in keys and str(params.get("model.norm_first")) == "True":
        parts.append("pre-LN")
    if str(params.get("train.refit")) == "True":  # trained again on train + validation
        parts.append("refit")
    return " ".join(parts)


#: The classical models every variant is measured against (the column "vs bow"): the
#: strongest bag of n-grams by validation accuracy.
BASELINES = ("bow", "nbow")


def params_of(config: Config) -> dict[str, str]:
    """A config as the params MLflow logs for it (every value a string)."""
    return {key: str(value) for key, value in config.flat().items()}


def _seed(params: Mapping[str, Any]) -> int:
    try:
        return int(params.get("train.seed", 0))
    except ValueError:
        return 0


def _mean(values: Iterable[float | None]) -> float:
    present = [value for value in values if value is not None]
    return float(np.mean(present)) if present else float("nan")


def _none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else value
